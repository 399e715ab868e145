//! Test doubles for `kruise daemon`: a fake API server (one node's NodeImage served by list and a
//! streaming watch, a status subresource that enforces resourceVersion pins, Secrets, Events) and
//! an in-memory image runtime scripted per image. Shared by tests/daemon*.rs.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use kruise::apis::imagepulljob::SandboxConfig;
use kruise::core::imagepuller::auth::Credential;
use kruise::core::imagepuller::policy::PullFailure;
use kruise::daemon::runtime::ImageRuntime;
use serde_json::{Value, json};
use tokio::sync::broadcast;

/// What the fake API server holds and saw.
#[derive(Default)]
pub struct ApiState {
    pub node_image: Option<Value>,
    pub rv: u64,
    /// Every watch event so far: (resourceVersion, event JSON).
    pub history: Vec<(u64, Value)>,
    pub secrets: BTreeMap<(String, String), Value>,
    /// (when, status) of every status PUT that succeeded.
    pub status_writes: Vec<(Instant, Value)>,
    /// Status PUTs refused with 409.
    pub conflicts: usize,
    /// NodeImage list or watch requests without the node's field selector.
    pub unselected: Vec<String>,
    /// Events recorded: (reason, note).
    pub events: Vec<(String, String)>,
}

/// The fake API server.
#[derive(Clone)]
pub struct FakeApi {
    pub state: Arc<Mutex<ApiState>>,
    live: broadcast::Sender<(u64, Value)>,
    node: String,
}

type Body = BoxBody<Bytes, Infallible>;

fn full(code: u16, v: &Value) -> hyper::Response<Body> {
    hyper::Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(v.to_string())).boxed())
        .unwrap()
}

fn status(code: u16, reason: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": code, "message": reason})
}

impl FakeApi {
    pub fn new(node: &str) -> Self {
        let (live, _) = broadcast::channel(1024);
        FakeApi { state: Arc::default(), live, node: node.into() }
    }

    /// Creates or replaces the NodeImage (as the manager would), bumping its resourceVersion.
    pub fn put_node_image(&self, mut obj: Value) {
        let mut s = self.state.lock().unwrap();
        s.rv += 1;
        let rv = s.rv;
        let kind = if s.node_image.is_some() { "MODIFIED" } else { "ADDED" };
        obj["metadata"]["resourceVersion"] = json!(rv.to_string());
        obj["metadata"]["uid"] = json!("ni-uid");
        if let Some(old) = &s.node_image
            && obj.get("status").is_none()
        {
            obj["status"] = old["status"].clone();
        }
        s.node_image = Some(obj.clone());
        let ev = json!({"type": kind, "object": obj});
        s.history.push((rv, ev.clone()));
        let _ = self.live.send((rv, ev));
    }

    pub fn node_image(&self) -> Value {
        self.state.lock().unwrap().node_image.clone().unwrap()
    }

    pub fn add_secret(&self, namespace: &str, name: &str, secret: Value) {
        self.state.lock().unwrap().secrets.insert((namespace.into(), name.into()), secret);
    }

    /// A kube client talking to this fake.
    pub fn client(&self) -> kube::Client {
        let api = self.clone();
        let svc = tower::service_fn(move |req: hyper::Request<kube::client::Body>| {
            let api = api.clone();
            async move { Ok::<_, Infallible>(api.answer(req).await) }
        });
        kube::Client::new(svc, "default")
    }

    async fn answer(&self, req: hyper::Request<kube::client::Body>) -> hyper::Response<Body> {
        let (parts, body) = req.into_parts();
        let bytes = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let path = parts.uri.path().to_string();
        let query = parts.uri.query().unwrap_or("").to_string();
        let method = parts.method.as_str().to_string();
        let nodeimages = "/apis/apps.kruise.io/v1beta1/nodeimages";
        let own = format!("{nodeimages}/{}", self.node);
        if method == "GET" && path == nodeimages {
            let selector = format!("fieldSelector=metadata.name%3D{}", self.node);
            if !query.split('&').any(|q| q == selector) {
                self.state.lock().unwrap().unselected.push(query.clone());
            }
            if query.contains("watch=true") {
                return self.watch(&query);
            }
            let s = self.state.lock().unwrap();
            let items: Vec<Value> = s.node_image.iter().cloned().collect();
            return full(
                200,
                &json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "NodeImageList",
                    "metadata": {"resourceVersion": s.rv.to_string()}, "items": items}),
            );
        }
        if method == "GET" && path == own {
            return match self.state.lock().unwrap().node_image.clone() {
                Some(o) => full(200, &o),
                None => full(404, &status(404, "NotFound")),
            };
        }
        if method == "PUT" && path == format!("{own}/status") {
            let mut s = self.state.lock().unwrap();
            let Some(current) = s.node_image.clone() else { return full(404, &status(404, "NotFound")) };
            if body["metadata"]["resourceVersion"] != current["metadata"]["resourceVersion"] {
                s.conflicts += 1;
                return full(409, &status(409, "Conflict"));
            }
            s.rv += 1;
            let rv = s.rv;
            let mut updated = current;
            updated["status"] = body["status"].clone();
            updated["metadata"]["resourceVersion"] = json!(rv.to_string());
            s.node_image = Some(updated.clone());
            s.status_writes.push((Instant::now(), body["status"].clone()));
            let ev = json!({"type": "MODIFIED", "object": updated});
            s.history.push((rv, ev.clone()));
            let _ = self.live.send((rv, ev));
            return full(200, &updated);
        }
        if method == "GET" && path.starts_with("/api/v1/namespaces/") && path.contains("/secrets/") {
            let parts: Vec<&str> = path.split('/').collect();
            let key = (parts[4].to_string(), parts[6].to_string());
            return match self.state.lock().unwrap().secrets.get(&key) {
                Some(s) => full(200, s),
                None => full(404, &status(404, "NotFound")),
            };
        }
        if method == "POST" && path.ends_with("/events") {
            self.state
                .lock()
                .unwrap()
                .events
                .push((body["reason"].as_str().unwrap_or("").into(), body["note"].as_str().unwrap_or("").into()));
            return full(201, &body);
        }
        if method == "PATCH" && path.contains("/events/") {
            return full(200, &body);
        }
        full(404, &status(404, &format!("fake API: no route for {method} {path}")))
    }

    fn watch(&self, query: &str) -> hyper::Response<Body> {
        let from: u64 =
            query.split('&').find_map(|q| q.strip_prefix("resourceVersion=")).and_then(|v| v.parse().ok()).unwrap_or(0);
        let (backlog, rx) = {
            let s = self.state.lock().unwrap();
            let backlog: Vec<(u64, Value)> = s.history.iter().filter(|(rv, _)| *rv > from).cloned().collect();
            (backlog, self.live.subscribe())
        };
        let last = backlog.last().map(|(rv, _)| *rv).unwrap_or(from);
        let live = tokio_stream_from(rx).filter(move |(rv, _)| futures::future::ready(*rv > last));
        let events = futures::stream::iter(backlog)
            .chain(live)
            .map(|(_, ev)| Ok::<_, Infallible>(Frame::data(Bytes::from(format!("{ev}\n")))));
        hyper::Response::builder()
            .status(200)
            .header("content-type", "application/json")
            .body(BodyExt::boxed(StreamBody::new(events)))
            .unwrap()
    }

    /// The NodeImage's status now.
    pub fn status(&self) -> Value {
        self.node_image()["status"].clone()
    }

    /// Waits until `f(status)` holds (10s at most); returns the status.
    pub async fn until(&self, what: &str, f: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.status();
            if f(&s) {
                return s;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}; status: {s:#}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn tokio_stream_from(rx: broadcast::Receiver<(u64, Value)>) -> impl futures::Stream<Item = (u64, Value)> + Send {
    futures::stream::unfold(rx, |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(v) => return Some((v, rx)),
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    })
}

/// How the fake runtime answers a pull of one image ref.
#[derive(Clone, Debug)]
pub enum Behaviour {
    Succeed { delay: Duration },
    NotFound,
    RequireAuth { username: String, password: String },
}

#[derive(Default)]
struct RuntimeState {
    script: BTreeMap<String, Behaviour>,
    images: BTreeMap<String, String>,
    now: usize,
    max: usize,
    pulls: Vec<(String, Option<String>)>,
}

/// An in-memory image runtime.
#[derive(Clone, Default)]
pub struct MemRuntime {
    state: Arc<Mutex<RuntimeState>>,
}

impl MemRuntime {
    pub fn script(&self, image: &str, b: Behaviour) {
        self.state.lock().unwrap().script.insert(image.into(), b);
    }
    pub fn max_concurrent_pulls(&self) -> usize {
        self.state.lock().unwrap().max
    }
    /// (image, user) of every pull.
    pub fn pulls(&self) -> Vec<(String, Option<String>)> {
        self.state.lock().unwrap().pulls.clone()
    }
    pub fn id_of(image: &str) -> String {
        format!("sha256:{}", image.bytes().map(|b| format!("{b:02x}")).collect::<String>())
    }
}

impl ImageRuntime for MemRuntime {
    async fn pull(
        &self,
        image: &str,
        auth: Option<&Credential>,
        _sandbox: Option<&SandboxConfig>,
    ) -> Result<String, PullFailure> {
        let behaviour = {
            let mut s = self.state.lock().unwrap();
            s.now += 1;
            s.max = s.max.max(s.now);
            s.pulls.push((image.into(), auth.map(|a| a.username.clone())));
            s.script.get(image).cloned().unwrap_or(Behaviour::Succeed { delay: Duration::ZERO })
        };
        let result = match behaviour {
            Behaviour::Succeed { delay } => {
                tokio::time::sleep(delay).await;
                Ok(())
            }
            Behaviour::NotFound => Err(PullFailure::NotFound {
                message: format!(
                    "rpc error: code = NotFound desc = failed to resolve reference \"{image}\": not found"
                ),
            }),
            Behaviour::RequireAuth { username, password } => match auth {
                Some(a) if a.username == username && a.password == password => Ok(()),
                _ => Err(PullFailure::Auth {
                    message: "rpc error: code = Unknown desc = failed to authorize: 401 Unauthorized".into(),
                }),
            },
        };
        let mut s = self.state.lock().unwrap();
        s.now -= 1;
        result.map(|()| {
            let id = Self::id_of(image);
            s.images.insert(image.into(), id.clone());
            id
        })
    }

    async fn image_id(&self, image: &str) -> Result<Option<String>, PullFailure> {
        Ok(self.state.lock().unwrap().images.get(image).cloned())
    }

    fn describe(&self) -> Result<String, String> {
        Ok("memory runtime".into())
    }
}
