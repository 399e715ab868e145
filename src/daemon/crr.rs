//! The daemon's ContainerRecreateRequest executor (issue 30 item 1; kruise
//! `pkg/daemon/containerrecreate/crr_daemon_controller.go`): a watch of the active requests of
//! this node only (label selector `crr.apps.kruise.io/node-name=<node>,crr.apps.kruise.io/active=true`),
//! worked per pod (`namespace/podName`) by [`crate::core::crr::daemon`]: mark the request picked
//! Recreating (the others Pending), wait out `unreadyGracePeriodSeconds` once the manager marked
//! the pod not ready, read the pod's containers from the runtime (CRI `ListContainers` by the
//! pod-uid label), run a container's exec preStop hook (CRI `ExecSync`), stop it (CRI
//! `StopContainer` with the request's grace period) and write each container's state, then
//! complete the request.
//!
//! Deliberate fixes over kruise: every change of a request queues its pod, finished and removed
//! ones included, so the next request of a pod starts as soon as the previous one ends (kruise
//! drops those events: a second request stayed Pending, #1058 #1626); a recreating request is
//! looked at again every [`RECHECK`] even without events; and what this daemon stopped (by
//! request uid, in memory) is never stopped again nor reported "not killed" when a status write
//! was lost. preStop hooks are run as the kubelet's lifecycle runner runs them
//! (`core::crr::prestop`): exec through CRI, httpGet against the pod's IP (read from the pod;
//! kruise asks the sandbox), tcpSocket reported as an invalid handler.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kruise_cri::{CONTAINER_NAME_LABEL, CriClient, RESTART_COUNT_ANNOTATION, v1};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::watcher::{self, Event};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::cri::CriRuntime;
use super::httpget::{GetError, HttpGet, get};
use crate::apis::containerrecreaterequest::{
    ACTIVE_KEY, ContainerRecreateRequest, ContainerRecreateRequestContainerRecreateState as State, NODE_NAME_KEY,
    PHASE_COMPLETED, PHASE_PENDING, PHASE_RECREATING, POD_UID_KEY,
};
use crate::core::crr::daemon::{Observed, Step, current_states, kill_failed, pick, step, unready_wait};
use crate::core::crr::prestop::{PreStop, needs_pod_ip, plan as plan_pre_stop};
use crate::core::pods;

/// How often a recreating request is looked at without events.
pub const RECHECK: Duration = Duration::from_secs(2);
/// kruise's default grace period of a stop when neither the request nor the pod sets one.
pub const DEFAULT_GRACE_SECONDS: i64 = 30;
const FIELD_MANAGER: &str = "kruise-daemon-crr";

/// The runtime calls the executor makes (the node's CRI, or a test double).
pub trait ContainerRuntime: Send + Sync + 'static {
    /// The containers of the pod with this uid.
    fn list(&self, pod_uid: &str) -> impl Future<Output = Result<Vec<v1::Container>, String>> + Send;
    /// Runs `cmd` in the container.
    fn exec(&self, id: &str, cmd: Vec<String>, timeout: i64) -> impl Future<Output = Result<i32, String>> + Send;
    /// Stops the container with this grace period.
    fn stop(&self, id: &str, grace: i64) -> impl Future<Output = Result<(), String>> + Send;
}

impl ContainerRuntime for CriRuntime {
    async fn list(&self, pod_uid: &str) -> Result<Vec<v1::Container>, String> {
        let c = client(self)?;
        c.list_pod_containers(pod_uid).await.map_err(|e| e.to_string())
    }
    async fn exec(&self, id: &str, cmd: Vec<String>, timeout: i64) -> Result<i32, String> {
        let c = client(self)?;
        c.exec_sync(id, cmd, timeout).await.map(|r| r.exit_code).map_err(|e| e.to_string())
    }
    async fn stop(&self, id: &str, grace: i64) -> Result<(), String> {
        let c = client(self)?;
        c.stop_container(id, grace).await.map_err(|e| e.to_string())
    }
}

fn client(r: &CriRuntime) -> Result<CriClient, String> {
    r.client()
        .ok_or_else(|| super::runtime::ImageRuntime::describe(r).err().unwrap_or_else(|| "no container runtime".into()))
}

/// The newest instance of each container name, as kruise's `FindContainerStatusByName` sees the
/// runtime's pod status; ids spelled `<runtime>://<id>`.
pub fn observed(containers: &[v1::Container], runtime: &str) -> Vec<Observed> {
    let mut newest: BTreeMap<String, &v1::Container> = BTreeMap::new();
    for c in containers {
        let name = c
            .labels
            .get(CONTAINER_NAME_LABEL)
            .cloned()
            .or_else(|| c.metadata.as_ref().map(|m| m.name.clone()))
            .unwrap_or_default();
        match newest.get(&name) {
            Some(n) if n.created_at >= c.created_at => {}
            _ => {
                newest.insert(name, c);
            }
        }
    }
    newest
        .into_iter()
        .map(|(name, c)| Observed {
            name,
            id: format!("{runtime}://{}", c.id),
            running: c.state == v1::ContainerState::ContainerRunning as i32,
            restart_count: c
                .annotations
                .get(RESTART_COUNT_ANNOTATION)
                .and_then(|r| r.parse().ok())
                .or_else(|| c.metadata.as_ref().and_then(|m| i32::try_from(m.attempt).ok()))
                .unwrap_or(0),
            started_at: Timestamp::from_nanosecond(i128::from(c.created_at)).unwrap_or(Timestamp::UNIX_EPOCH),
        })
        .collect()
}

/// The runtime type of a request's containers (`containerd` of `containerd://...`, kruise
/// `newRuntimeManager`), or why there is none.
pub fn runtime_type(crr: &ContainerRecreateRequest) -> Result<String, String> {
    let mut found: Option<String> = None;
    for c in &crr.spec.containers {
        let id = c.status_context.as_ref().map(|s| s.container_id.as_str()).unwrap_or_default();
        if id.is_empty() {
            return Err(format!("no statusContext or empty containerID in {} container", c.name));
        }
        let Some((kind, _)) = id.split_once("://") else {
            return Err(format!("failed to parse containerID {id} in {} container", c.name));
        };
        match &found {
            None => found = Some(kind.to_string()),
            Some(f) if f != kind => return Err(format!("has different runtime types {f}, {kind} in Pod")),
            Some(_) => {}
        }
    }
    found.ok_or_else(|| "no runtime type found in Pod".into())
}

type Key = (String, String);

struct Executor<R> {
    api_client: kube::Client,
    runtime: Arc<R>,
    requests: HashMap<Key, ContainerRecreateRequest>,
    /// Containers this daemon stopped, by request uid.
    killed: HashMap<String, BTreeSet<String>>,
    timers: BinaryHeap<Reverse<(Instant, Key)>>,
    dirty: BTreeSet<Key>,
}

fn pod_key(c: &ContainerRecreateRequest) -> Key {
    (c.metadata.namespace.clone().unwrap_or_default(), c.spec.pod_name.clone())
}

fn own_key(c: &ContainerRecreateRequest) -> Key {
    (c.metadata.namespace.clone().unwrap_or_default(), c.metadata.name.clone().unwrap_or_default())
}

/// Runs until `stop` fires.
pub async fn run<R: ContainerRuntime>(client: kube::Client, runtime: Arc<R>, node: String, stop: CancellationToken) {
    let api: Api<ContainerRecreateRequest> = Api::all(client.clone());
    let config = watcher::Config::default().labels(&format!("{NODE_NAME_KEY}={node},{ACTIVE_KEY}=true"));
    let mut events = crate::cluster::watch_backoff::with_backoff(watcher::watcher(api, config)).boxed();
    let mut ex = Executor {
        api_client: client,
        runtime,
        requests: HashMap::new(),
        killed: HashMap::new(),
        timers: BinaryHeap::new(),
        dirty: BTreeSet::new(),
    };
    let mut listing: Option<HashMap<Key, ContainerRecreateRequest>> = None;
    loop {
        let next = ex.timers.peek().map(|Reverse((t, _))| *t);
        let due = async move {
            match next {
                Some(t) => tokio::time::sleep_until(t).await,
                None => futures::future::pending().await,
            }
        };
        tokio::select! {
            _ = stop.cancelled() => break,
            ev = events.next() => match ev {
                None => break,
                Some(Ok(Event::Init)) => listing = Some(HashMap::new()),
                Some(Ok(Event::InitApply(c))) => {
                    listing.get_or_insert_with(HashMap::new).insert(own_key(&c), c);
                }
                Some(Ok(Event::InitDone)) => {
                    let fresh = listing.take().unwrap_or_default();
                    let old = std::mem::replace(&mut ex.requests, fresh);
                    for c in old.values().chain(ex.requests.values()) {
                        ex.dirty.insert(pod_key(c));
                    }
                    ex.forget_gone();
                }
                Some(Ok(Event::Apply(c))) => {
                    ex.dirty.insert(pod_key(&c));
                    ex.requests.insert(own_key(&c), c);
                }
                Some(Ok(Event::Delete(c))) => {
                    // Finished (its active label dropped) or deleted: the pod's next request may start.
                    ex.dirty.insert(pod_key(&c));
                    ex.requests.remove(&own_key(&c));
                    ex.forget_gone();
                }
                Some(Err(e)) => tracing::warn!(error = %e, "ContainerRecreateRequest watch failed; retrying"),
            },
            () = due => {
                let now = Instant::now();
                while let Some(Reverse((t, _))) = ex.timers.peek() {
                    if *t > now { break; }
                    if let Some(Reverse((_, k))) = ex.timers.pop() { ex.dirty.insert(k); }
                }
            }
        }
        // Drain what arrived meanwhile before working (bursts fold into one sync per pod).
        while let Some(Some(Ok(ev))) = events.next().now_or_never_ready() {
            match ev {
                Event::Apply(c) => {
                    ex.dirty.insert(pod_key(&c));
                    ex.requests.insert(own_key(&c), c);
                }
                Event::Delete(c) => {
                    ex.dirty.insert(pod_key(&c));
                    ex.requests.remove(&own_key(&c));
                    ex.forget_gone();
                }
                Event::Init => listing = Some(HashMap::new()),
                Event::InitApply(c) => {
                    listing.get_or_insert_with(HashMap::new).insert(own_key(&c), c);
                }
                Event::InitDone => {
                    ex.requests = listing.take().unwrap_or_default();
                    let keys: Vec<Key> = ex.requests.values().map(pod_key).collect();
                    ex.dirty.extend(keys);
                    ex.forget_gone();
                }
            }
        }
        if listing.is_some() {
            continue;
        }
        while let Some(k) = ex.dirty.pop_first() {
            if let Some(after) = ex.sync(&k).await {
                ex.timers.push(Reverse((Instant::now() + after, k)));
            }
        }
    }
}

/// `Stream::next` without waiting: `None` when nothing is ready.
trait NowOrNever {
    type Item;
    fn now_or_never_ready(self) -> Option<Self::Item>;
}

impl<F: Future> NowOrNever for F {
    type Item = F::Output;
    fn now_or_never_ready(self) -> Option<F::Output> {
        futures::FutureExt::now_or_never(self)
    }
}

impl<R: ContainerRuntime> Executor<R> {
    fn forget_gone(&mut self) {
        let live: BTreeSet<String> = self.requests.values().filter_map(|c| c.metadata.uid.clone()).collect();
        self.killed.retain(|uid, _| live.contains(uid));
    }

    fn api(&self, ns: &str) -> Api<ContainerRecreateRequest> {
        Api::namespaced(self.api_client.clone(), ns)
    }

    async fn patch_status(&self, c: &ContainerRecreateRequest, status: serde_json::Value, pinned: bool) -> bool {
        let (ns, name) = own_key(c);
        let mut patch = json!({ "status": status });
        if pinned {
            patch["metadata"] = json!({"resourceVersion": c.metadata.resource_version});
        }
        let pp = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
        match self.api(&ns).patch_status(&name, &pp, &Patch::Merge(&patch)).await {
            // The watch brings the updated object.
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(request = %format!("{ns}/{name}"), error = %e, "status write failed; retrying");
                false
            }
        }
    }

    /// One pod's requests; `Some(d)`: look again after `d`.
    async fn sync(&mut self, key: &Key) -> Option<Duration> {
        let mine: Vec<&ContainerRecreateRequest> = self.requests.values().filter(|c| pod_key(c) == *key).collect();
        if mine.is_empty() {
            return None;
        }
        let (picked, to_pending) = pick(&mine);
        let to_pending: Vec<ContainerRecreateRequest> =
            to_pending.iter().filter_map(|n| self.requests.get(&(key.0.clone(), n.clone())).cloned()).collect();
        let picked = picked.and_then(|n| self.requests.get(&(key.0.clone(), n)).cloned());
        for c in &to_pending {
            if !self.patch_status(c, json!({"phase": PHASE_PENDING}), true).await {
                return Some(Duration::from_millis(500));
            }
        }
        let crr = picked?;
        let phase = crr.status.as_ref().map(|s| s.phase.as_str()).unwrap_or_default();
        if phase != PHASE_RECREATING {
            let ok = self.patch_status(&crr, json!({"phase": PHASE_RECREATING}), true).await;
            // The watch brings the change; look again soon anyway.
            return Some(if ok { RECHECK } else { Duration::from_millis(500) });
        }
        let now = Timestamp::now();
        match unready_wait(&crr, now) {
            Err(message) => return self.complete(&crr, &message).await,
            Ok(Some(left)) if left == SignedDuration::MAX => return Some(RECHECK),
            Ok(Some(left)) => {
                return Some(Duration::try_from(left).unwrap_or(RECHECK) + Duration::from_millis(100));
            }
            Ok(None) => {}
        }
        let runtime = match runtime_type(&crr) {
            Ok(r) => r,
            Err(e) => return self.complete(&crr, &format!("failed to find runtime service: {e}")).await,
        };
        let uid = crr.metadata.labels.as_ref().and_then(|l| l.get(POD_UID_KEY)).cloned().unwrap_or_default();
        let containers = match self.runtime.list(&uid).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(request = ?own_key(&crr), error = %e, "listing the pod's containers failed");
                return Some(RECHECK);
            }
        };
        let observed = observed(&containers, &runtime);
        let crr_uid = crr.metadata.uid.clone().unwrap_or_default();
        let killed = self.killed.get(&crr_uid).cloned().unwrap_or_default();
        let states = current_states(&crr, &observed, &killed, now);
        match step(&crr, states, &observed, &killed) {
            Step::WriteStates(states) => self.write_states(&crr, &states).await,
            Step::Complete => self.complete(&crr, "").await,
            Step::Wait(after) => Some(after.and_then(|d| Duration::try_from(d).ok()).unwrap_or(RECHECK).min(RECHECK)),
            Step::Kill { name, id, states } => {
                let message = format!(
                    "Stopping container {name} by ContainerRecreateRequest {}",
                    crr.metadata.name.as_deref().unwrap_or_default()
                );
                tracing::info!(request = ?own_key(&crr), container = %name, "{message}");
                match self.kill(&crr, &name, &id).await {
                    Ok(()) => {
                        self.killed.entry(crr_uid).or_default().insert(name);
                        self.write_states(&crr, &states).await
                    }
                    Err(e) => {
                        tracing::warn!(request = ?own_key(&crr), container = %name, error = %e, "kill container failed");
                        self.write_states(&crr, &kill_failed(states, &name, &e)).await
                    }
                }
            }
        }
    }

    async fn write_states(&self, crr: &ContainerRecreateRequest, states: &[State]) -> Option<Duration> {
        let ok = self.patch_status(crr, json!({"containerRecreateStates": states}), false).await;
        Some(if ok { RECHECK } else { Duration::from_millis(500) })
    }

    async fn complete(&self, crr: &ContainerRecreateRequest, message: &str) -> Option<Duration> {
        let now = Time(pods::whole_seconds(Timestamp::now()));
        let status = json!({"phase": PHASE_COMPLETED, "completionTime": now, "message": message});
        let ok = self.patch_status(crr, status, true).await;
        (!ok).then_some(Duration::from_millis(500))
    }

    /// kruise's `KillContainer`: the preStop hook, then a stop with what is left of the grace
    /// period.
    async fn kill(&self, crr: &ContainerRecreateRequest, name: &str, id: &str) -> Result<(), String> {
        let bare = id.split_once("://").map_or(id, |(_, b)| b);
        let grace = crr
            .spec
            .strategy
            .as_ref()
            .and_then(|s| s.termination_grace_period_seconds)
            .unwrap_or(DEFAULT_GRACE_SECONDS)
            .max(0);
        let mut left = grace;
        let container = crr.spec.containers.iter().find(|c| c.name == name);
        let hook = container.and_then(|c| c.pre_stop.as_ref());
        if hook.is_some() {
            let started = std::time::Instant::now();
            let pod_ip = if needs_pod_ip(hook) { self.pod_ip(crr).await } else { None };
            let ports = container.map(|c| c.ports.as_slice()).unwrap_or_default();
            match plan_pre_stop(hook, ports, pod_ip.as_deref()) {
                PreStop::Nothing => {}
                PreStop::Exec(cmd) => match self.runtime.exec(bare, cmd, grace).await {
                    Ok(0) => {}
                    Ok(code) => tracing::warn!(container = %name, code, "preStop hook exited non-zero"),
                    Err(e) => tracing::warn!(container = %name, error = %e, "preStop hook failed"),
                },
                PreStop::HttpGet(request) => {
                    let limit = Duration::from_secs(u64::try_from(grace.max(1)).unwrap_or(1));
                    if let Err(e) = send_http_hook(&request, limit).await {
                        tracing::warn!(container = %name, url = %request.url(), error = %e, "HTTP preStop hook failed");
                    }
                }
                PreStop::Invalid(why) => tracing::warn!(container = %name, error = %why, "cannot run preStop hook"),
            }
            let spent = i64::try_from(started.elapsed().as_secs()).unwrap_or(i64::MAX);
            left = (grace - spent).max(2);
        }
        self.runtime.stop(bare, left).await
    }

    /// The pod's IP for an HTTP preStop hook without host (kruise asks the runtime's sandbox;
    /// the daemon may list its pods, so it reads the pod).
    async fn pod_ip(&self, crr: &ContainerRecreateRequest) -> Option<String> {
        let ns = crr.metadata.namespace.as_deref()?;
        let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(self.api_client.clone(), ns);
        let lp = kube::api::ListParams::default().fields(&format!("metadata.name={}", crr.spec.pod_name));
        match pods.list(&lp).await {
            Ok(list) => list.items.into_iter().next()?.status?.pod_ip.filter(|ip| !ip.is_empty()),
            Err(e) => {
                tracing::warn!(pod = %crr.spec.pod_name, error = %e, "cannot read the pod's IP for its preStop hook");
                None
            }
        }
    }
}

/// The kubelet lifecycle runner's HTTP hook: the answer's status does not matter; an HTTPS hook
/// answered in plain HTTP is sent again in HTTP without `Authorization`.
async fn send_http_hook(request: &HttpGet, limit: Duration) -> Result<(), GetError> {
    match get(request, limit, 0).await {
        Ok(_) => Ok(()),
        Err(GetError::PlainAnswer) => {
            let mut plain = request.clone();
            plain.https = false;
            plain.headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
            get(&plain, limit, 0).await.map(|_| ())
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A plain HTTP server recording each request's text (a TLS hello gets the 400 a plain server
    /// answers).
    async fn recording_server() -> (u16, Arc<std::sync::Mutex<Vec<String>>>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut s, _)) = listener.accept().await else { return };
                let mut buf = [0u8; 4096];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let text = String::from_utf8_lossy(&buf[..n]).to_string();
                let answer: &[u8] = if text.starts_with("GET ") {
                    log.lock().unwrap().push(text);
                    b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n"
                } else {
                    b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n"
                };
                let _ = s.write_all(answer).await;
            }
        });
        (port, seen)
    }

    fn hook(https: bool, port: u16) -> HttpGet {
        HttpGet {
            https,
            host: "127.0.0.1".into(),
            port,
            path: "/stop".into(),
            headers: vec![("Authorization".into(), "Bearer x".into()), ("User-Agent".into(), "kube-lifecycle".into())],
            host_header: format!("127.0.0.1:{port}"),
        }
    }

    #[tokio::test]
    async fn http_pre_stop_hooks_as_the_kubelet_sends_them() {
        let (port, seen) = recording_server().await;
        // Any answer will do (a 500 included).
        send_http_hook(&hook(false, port), Duration::from_secs(20)).await.unwrap();
        // HTTPS answered in plain HTTP: sent again in HTTP, without Authorization.
        send_http_hook(&hook(true, port), Duration::from_secs(20)).await.unwrap();
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert!(seen[0].starts_with("GET /stop HTTP/1.1\r\n") && seen[0].contains("Authorization: Bearer x\r\n"));
        assert!(seen[1].starts_with("GET /stop HTTP/1.1\r\n") && !seen[1].contains("Authorization"), "{}", seen[1]);
        assert!(seen[1].contains("User-Agent: kube-lifecycle\r\n"));
        // Nothing listening: an error (logged by the caller, the stop goes on).
        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let dead = closed.local_addr().unwrap().port();
        drop(closed);
        assert!(send_http_hook(&hook(false, dead), Duration::from_secs(20)).await.is_err());
    }

    fn container(id: &str, name: &str, created: i64, running: bool, restarts: i32) -> v1::Container {
        v1::Container {
            id: id.into(),
            state: if running { v1::ContainerState::ContainerRunning } else { v1::ContainerState::ContainerExited }
                as i32,
            created_at: created,
            labels: [(CONTAINER_NAME_LABEL.to_string(), name.to_string())].into_iter().collect(),
            annotations: [(RESTART_COUNT_ANNOTATION.to_string(), restarts.to_string())].into_iter().collect(),
            ..Default::default()
        }
    }

    #[test]
    fn newest_instance_per_name() {
        let list = vec![
            container("old", "a", 1_000_000_000, false, 0),
            container("new", "a", 2_000_000_000, true, 1),
            container("b1", "b", 1_000_000_000, true, 0),
        ];
        let o = observed(&list, "containerd");
        assert_eq!(o.len(), 2);
        assert_eq!(o[0].id, "containerd://new");
        assert!(o[0].running);
        assert_eq!(o[0].restart_count, 1);
        assert_eq!(o[0].started_at, Timestamp::from_second(2).unwrap());
        assert_eq!(o[1].name, "b");
    }

    #[test]
    fn runtime_types() {
        let mk = |ids: &[&str]| -> ContainerRecreateRequest {
            let containers: Vec<serde_json::Value> = ids
                .iter()
                .enumerate()
                .map(
                    |(i, id)| json!({"name": format!("c{i}"), "statusContext": {"containerID": id, "restartCount": 0}}),
                )
                .collect();
            serde_json::from_value(json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "ContainerRecreateRequest",
                "metadata": {"name": "r"}, "spec": {"podName": "p", "containers": containers}}))
            .unwrap()
        };
        assert_eq!(runtime_type(&mk(&["containerd://a", "containerd://b"])), Ok("containerd".into()));
        assert_eq!(
            runtime_type(&mk(&["containerd://a", "docker://b"])),
            Err("has different runtime types containerd, docker in Pod".into())
        );
        assert_eq!(runtime_type(&mk(&[""])), Err("no statusContext or empty containerID in c0 container".into()));
        assert_eq!(runtime_type(&mk(&[])), Err("no runtime type found in Pod".into()));
    }
}
