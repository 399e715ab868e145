//! One writer per NodeImage for the ImagePullJob controller (issue 29, write contention at scale):
//! a job round hands its wishes ([`Intent`]) for the NodeImages it picked to [`Writer::submit`];
//! each NodeImage has at most one write in flight, and every wish queued meanwhile goes into its
//! next write, merged by [`crate::core::imagepulljob::coalesce::merge`] into one JSON patch pinned
//! to the version it was computed from. On a 409 the writer reads the NodeImage from the API and
//! merges again (the daemon's status writes move the version too), so jobs no longer race each
//! other for the same object: with one patch per job and NodeImage, 50 jobs × 200 nodes spent
//! most patches on conflicts.
//!
//! The base of a write is the newer of the cache's copy and the object the writer's last patch
//! returned (kept only until the cache shows that version, so it does not double the memory of
//! the NodeImage cache). Writes to different NodeImages go side by side, at most
//! [`CONCURRENT_WRITES`] at once. Each submitter learns the resourceVersion the write returned
//! (its expectation: the job is not planned again before the cache shows it, which keeps
//! `parallelism` counted atomically across rounds), that nothing was needed, or the failure.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams};
use tokio::sync::{Semaphore, oneshot};

use super::ReconcileError;
use super::informers::{Change, Informer};
use crate::apis::nodeimage::v1beta1::NodeImage;
use crate::core::expectations::resource_version_newer;
use crate::core::imagepulljob::coalesce::{Intent, merge};
use crate::metrics::{ControllerWriteLabels, Metrics};

/// NodeImage writes in flight at once (all NodeImages together).
pub const CONCURRENT_WRITES: usize = 32;
/// Attempts of one merged write (each after a 409 reads the NodeImage again).
const ATTEMPTS: usize = 8;

/// What a submitted intent came to.
#[derive(Debug)]
pub enum Outcome {
    /// The NodeImage already had what the job wants, at this version (which the cache may not
    /// show yet).
    Unchanged(String),
    /// Written; the NodeImage's version after the write.
    At(String),
}

/// Why a submitted intent was not written (an API error, kept cloneable for every submitter of
/// a merged write).
#[derive(Clone, Debug)]
pub struct Failed {
    pub what: String,
    pub code: Option<u16>,
    pub message: String,
}

impl Failed {
    fn api(what: String, e: &kube::Error) -> Failed {
        let code = match e {
            kube::Error::Api(s) => Some(s.code),
            _ => None,
        };
        Failed { what, code, message: e.to_string() }
    }
}

impl From<Failed> for ReconcileError {
    fn from(f: Failed) -> Self {
        ReconcileError::Api { what: f.what, code: f.code, message: f.message }
    }
}

type Reply = oneshot::Sender<Result<Outcome, Failed>>;

#[derive(Default)]
struct NodeQueue {
    waiting: Vec<(Intent, Reply)>,
    /// A task is writing this NodeImage (it takes `waiting` when its write is done).
    busy: bool,
}

struct Inner {
    api: Api<NodeImage>,
    cache: Informer<NodeImage>,
    metrics: Metrics,
    controller: &'static str,
    field_manager: String,
    queues: Mutex<HashMap<String, NodeQueue>>,
    /// Per NodeImage: what the last write returned, until the cache shows that version.
    latest: Mutex<HashMap<String, Arc<NodeImage>>>,
    limit: Semaphore,
}

/// The per-NodeImage coalescing writer (cheap to clone).
#[derive(Clone)]
pub struct Writer {
    inner: Arc<Inner>,
}

impl Writer {
    /// A writer over `api`, reading `cache` (registers a handler on it: call before the informer
    /// starts). Writes are counted as `patchNodeImage` (every attempt) and
    /// `patchNodeImageConflict` (the attempts refused with a 409) under `controller`.
    pub fn new(
        api: Api<NodeImage>,
        cache: &Informer<NodeImage>,
        metrics: &Metrics,
        controller: &'static str,
        field_manager: &str,
    ) -> Writer {
        let inner = Arc::new(Inner {
            api,
            cache: cache.clone(),
            metrics: metrics.clone(),
            controller,
            field_manager: field_manager.to_string(),
            queues: Mutex::default(),
            latest: Mutex::default(),
            limit: Semaphore::new(CONCURRENT_WRITES),
        });
        let weak = Arc::downgrade(&inner);
        cache.on_change(move |c| {
            let Some(inner) = weak.upgrade() else { return };
            let name = c.meta().name.clone().unwrap_or_default();
            let mut latest = inner.latest.lock().unwrap_or_else(|e| e.into_inner());
            let Some(mine) = latest.get(&name) else { return };
            let drop = match c {
                Change::Deleted(_) => true,
                Change::Applied(ni) => resource_version_newer(
                    mine.metadata.resource_version.as_deref().unwrap_or(""),
                    ni.metadata.resource_version.as_deref().unwrap_or(""),
                ),
            };
            if drop {
                latest.remove(&name);
            }
        });
        Writer { inner }
    }

    /// Queues `intent` for the NodeImage `node`; the answer comes once a write including it is
    /// done (or found nothing to do).
    pub fn submit(&self, node: &str, intent: Intent) -> oneshot::Receiver<Result<Outcome, Failed>> {
        let (tx, rx) = oneshot::channel();
        let start = {
            let mut queues = self.inner.queues.lock().unwrap_or_else(|e| e.into_inner());
            let q = queues.entry(node.to_string()).or_default();
            q.waiting.push((intent, tx));
            !std::mem::replace(&mut q.busy, true)
        };
        if start {
            let inner = Arc::clone(&self.inner);
            let node = node.to_string();
            tokio::spawn(async move { inner.drain(&node).await });
        }
        rx
    }

    /// NodeImages with a write queued or in flight (tests, metrics).
    pub fn busy(&self) -> usize {
        self.inner.queues.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

impl Inner {
    fn count(&self, write: &str) {
        let labels = ControllerWriteLabels { controller: self.controller.into(), write: write.into() };
        self.metrics.controller_writes.get_or_create(&labels).inc();
    }

    /// Writes `node` until no intent waits for it.
    async fn drain(&self, node: &str) {
        loop {
            let batch = {
                let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
                let Some(q) = queues.get_mut(node) else { return };
                if q.waiting.is_empty() {
                    queues.remove(node);
                    return;
                }
                std::mem::take(&mut q.waiting)
            };
            let (intents, replies): (Vec<Intent>, Vec<Reply>) = batch.into_iter().unzip();
            let results = self.write(node, &intents).await;
            for (reply, result) in replies.into_iter().zip(results) {
                // A submitter that stopped waiting (its round was cancelled) needs no answer.
                let _ = reply.send(result);
            }
        }
    }

    /// The newer of the cache's copy and the last write's answer.
    fn base(&self, node: &str) -> Option<Arc<NodeImage>> {
        let cached = self.cache.index().get_object(&format!("/{node}"));
        let mut latest = self.latest.lock().unwrap_or_else(|e| e.into_inner());
        match (cached, latest.get(node).cloned()) {
            (Some(c), Some(l)) => {
                let (crv, lrv) =
                    (c.metadata.resource_version.as_deref().unwrap_or(""), l.metadata.resource_version.as_deref());
                if resource_version_newer(lrv.unwrap_or(""), crv) {
                    latest.remove(node);
                    Some(c)
                } else {
                    Some(l)
                }
            }
            (c, l) => l.or(c),
        }
    }

    /// The NodeImage as the API server has it now.
    async fn read(&self, node: &str) -> Result<Arc<NodeImage>, Failed> {
        let fresh = {
            let _permit = self.limit.acquire().await;
            self.api.get_opt(node).await
        };
        match fresh {
            Ok(Some(ni)) => Ok(Arc::new(ni)),
            Ok(None) => Err(not_found(node)),
            Err(e) => Err(Failed::api(format!("get nodeimage {node}"), &e)),
        }
    }

    /// One merged write of `intents` to `node`, with its retries; an answer per intent.
    async fn write(&self, node: &str, intents: &[Intent]) -> Vec<Result<Outcome, Failed>> {
        let fail = |e: Failed| intents.iter().map(|_| Err(e.clone())).collect::<Vec<_>>();
        let mut base = match self.base(node) {
            Some(b) => b,
            // Not in the cache (yet): read it.
            None => match self.read(node).await {
                Ok(b) => b,
                Err(e) => return fail(e),
            },
        };
        let pp = PatchParams { field_manager: Some(self.field_manager.clone()), ..Default::default() };
        for attempt in 0..ATTEMPTS {
            let merged = merge(&base, intents, Timestamp::now());
            let Some(patch) = merged.patch else {
                let rv = base.metadata.resource_version.clone().unwrap_or_default();
                return merged
                    .outcomes
                    .into_iter()
                    .map(|o| o.map(|_| Outcome::Unchanged(rv.clone())).map_err(invalid))
                    .collect();
            };
            self.count("patchNodeImage");
            let sent = {
                let _permit = self.limit.acquire().await;
                self.api.patch(node, &pp, &Patch::Json::<()>(patch)).await
            };
            match sent {
                Ok(done) => {
                    let rv = done.metadata.resource_version.clone().unwrap_or_default();
                    self.latest.lock().unwrap_or_else(|e| e.into_inner()).insert(node.to_string(), Arc::new(done));
                    return merged
                        .outcomes
                        .into_iter()
                        .map(|o| {
                            o.map(
                                |changed| {
                                    if changed { Outcome::At(rv.clone()) } else { Outcome::Unchanged(rv.clone()) }
                                },
                            )
                        })
                        .map(|o| o.map_err(invalid))
                        .collect();
                }
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    self.count("patchNodeImageConflict");
                    tracing::debug!(node, attempt, "NodeImage changed under a merged write; reading it again");
                    match self.read(node).await {
                        Ok(b) => base = b,
                        Err(e) => return fail(e),
                    }
                }
                Err(e) => return fail(Failed::api(format!("patch nodeimage {node}"), &e)),
            }
        }
        fail(Failed {
            what: format!("nodeimage({node})"),
            code: Some(409),
            message: format!("still changing under the write after {ATTEMPTS} attempts"),
        })
    }
}

fn not_found(node: &str) -> Failed {
    Failed { what: format!("nodeimage({node})"), code: Some(404), message: "not found".into() }
}

fn invalid(message: String) -> Failed {
    Failed { what: "plan imagepulljob".into(), code: None, message }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::controller::informers::Invalid;
    use crate::core::imagepulljob::testkit::job;
    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};
    use kube::Client;
    use serde_json::{Value, json};

    /// A fake API server holding one NodeImage `n1`: GET, and JSON PATCH applied with its
    /// resourceVersion pin checked (409 when stale). `bump` moves the version (a daemon's status
    /// write) before each of the next PATCHes.
    #[derive(Default)]
    struct Fake {
        object: Value,
        rv: u64,
        patches: usize,
        gets: usize,
        bump: usize,
    }

    fn answer(code: u16, body: Value) -> axum::http::Response<Full<Bytes>> {
        axum::http::Response::builder()
            .status(code)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap()
    }

    fn conflict() -> Value {
        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Conflict", "code": 409,
            "message": "the object has been modified"})
    }

    fn fake_api(fake: Arc<Mutex<Fake>>) -> Client {
        let svc = tower::service_fn(move |req: axum::http::Request<kube::client::Body>| {
            let fake = Arc::clone(&fake);
            async move {
                let (parts, body) = req.into_parts();
                let bytes = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                let mut f = fake.lock().unwrap();
                let response = match parts.method.as_str() {
                    "GET" => {
                        f.gets += 1;
                        answer(200, f.object.clone())
                    }
                    "PATCH" => {
                        f.patches += 1;
                        if f.bump > 0 {
                            f.bump -= 1;
                            f.rv += 1;
                            f.object["metadata"]["resourceVersion"] = json!(f.rv.to_string());
                            f.object["status"] = json!({"desired": f.rv});
                        }
                        let patch: json_patch::Patch = serde_json::from_slice(&bytes).unwrap();
                        let mut doc = f.object.clone();
                        json_patch::patch(&mut doc, &patch).unwrap();
                        if doc["metadata"]["resourceVersion"] != f.object["metadata"]["resourceVersion"] {
                            answer(409, conflict())
                        } else {
                            f.rv += 1;
                            doc["metadata"]["resourceVersion"] = json!(f.rv.to_string());
                            f.object = doc;
                            answer(200, f.object.clone())
                        }
                    }
                    _ => answer(405, conflict()),
                };
                Ok::<_, std::convert::Infallible>(response)
            }
        });
        Client::new(svc, "default")
    }

    fn world(bump: usize) -> (Arc<Mutex<Fake>>, Writer) {
        let fake = Arc::new(Mutex::new(Fake {
            object: json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "NodeImage",
                "metadata": {"name": "n1", "resourceVersion": "1"}, "spec": {}}),
            rv: 1,
            bump,
            ..Default::default()
        }));
        let cache: Informer<NodeImage> =
            Informer::new("NodeImage", crate::controller::index::no_keys::<NodeImage>, Invalid::KeepLast);
        let writer = Writer::new(Api::all(fake_api(Arc::clone(&fake))), &cache, &Metrics::default(), "test", "test");
        (fake, writer)
    }

    fn intent(i: usize) -> Intent {
        Intent { job: Arc::new(job(&format!("j{i}"), json!({"image": format!("img-{i}:v1")}))), secrets: Vec::new() }
    }

    fn owners(fake: &Mutex<Fake>) -> usize {
        let ni: NodeImage = serde_json::from_value(fake.lock().unwrap().object.clone()).unwrap();
        ni.spec.images.values().flat_map(|s| &s.tags).map(|t| t.owner_references.len()).sum()
    }

    #[tokio::test]
    async fn twenty_jobs_on_one_node_image_make_one_write() {
        let (fake, writer) = world(0);
        let waits: Vec<_> = (0..20).map(|i| writer.submit("n1", intent(i))).collect();
        let results = futures::future::join_all(waits).await;
        for r in results {
            assert!(matches!(r.unwrap().unwrap(), Outcome::At(rv) if rv == "2"));
        }
        let counts = {
            let f = fake.lock().unwrap();
            (f.patches, f.gets)
        };
        assert_eq!(counts, (1, 1), "one read (nothing cached) and one merged write");
        assert_eq!(owners(&fake), 20, "every job's entry is there");
        assert_eq!(writer.busy(), 0);
        // Asked again: the writer's last answer is the base, and nothing is written.
        let again = writer.submit("n1", intent(3)).await.unwrap().unwrap();
        assert!(matches!(again, Outcome::Unchanged(rv) if rv == "2"));
        assert_eq!(fake.lock().unwrap().patches, 1);
    }

    #[tokio::test]
    async fn a_conflict_is_merged_again_on_a_fresh_read_keeping_the_other_writers_change() {
        let (fake, writer) = world(2);
        let waits: Vec<_> = (0..3).map(|i| writer.submit("n1", intent(i))).collect();
        for r in futures::future::join_all(waits).await {
            assert!(matches!(r.unwrap().unwrap(), Outcome::At(_)));
        }
        let (counts, desired) = {
            let f = fake.lock().unwrap();
            ((f.patches, f.gets), f.object["status"]["desired"].clone())
        };
        assert_eq!(counts, (3, 3), "two refused writes, each followed by a read");
        assert_eq!(desired, 3, "the status written meanwhile is kept");
        assert_eq!(owners(&fake), 3);
    }

    #[tokio::test]
    async fn a_node_image_that_keeps_changing_fails_with_a_conflict() {
        let (fake, writer) = world(usize::MAX);
        let r = writer.submit("n1", intent(0)).await.unwrap();
        assert_eq!(r.unwrap_err().code, Some(409));
        assert_eq!(fake.lock().unwrap().patches, ATTEMPTS);
        assert_eq!(owners(&fake), 0);
    }
}
