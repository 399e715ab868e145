//! The daemon's prober (issue 30 item 4; kruise `pkg/daemon/podprobe`): a watch of this node's
//! NodePodProbe only (field selector `metadata.name=<node>`), one worker per probe of its spec,
//! started, updated and stopped as the spec changes, and one status writer. A worker, every
//! `periodSeconds`, finds its container through CRI `ListContainers` (pod-uid label, the newest
//! of that name), runs the probe — exec through CRI `ExecSync`, tcp by connecting to the pod IP,
//! http by a GET to the pod IP — and publishes a result once the thresholds allow
//! ([`crate::core::podprobe::prober`] decides). The writer puts the results into the
//! NodePodProbe's status (a merge patch pinned to the resourceVersion read; a conflict waits
//! for the watch and builds again).
//!
//! Not done as kruise: HTTPS probes (kruise dials TLS without verifying) are reported as probe
//! errors (no result) and logged; no Events are recorded for results (kruise records one per
//! result on every status sync).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{HTTPGetAction, Probe, TCPSocketAction};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use kruise_cri::{CONTAINER_NAME_LABEL, v1};
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::watcher::{self, Event};
use serde_json::json;
use tokio::net::TcpStream;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use super::cri::CriRuntime;
use crate::apis::nodepodprobe::NodePodProbe;
use crate::core::podprobe::prober::{
    Before, Container, ProbeKey, Published, Worker, build_status, period, replaces, state_of, timeout_seconds,
    truncate_message, wanted_workers,
};
use crate::core::validation::podprobemarker::PROBE_UNKNOWN;

const FIELD_MANAGER: &str = "kruise-daemon-podprobe";
/// The most of an HTTP probe's body read (the kubelet's `maxRespBodyLength`).
const MAX_BODY: usize = 10 * 1024;

/// What an ExecSync gave.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecOutput {
    /// Exit code.
    pub exit_code: i32,
    /// Stdout.
    pub stdout: String,
    /// Stderr.
    pub stderr: String,
}

/// The runtime calls the prober makes (the node's CRI, or a test double).
pub trait ProbeRuntime: Send + Sync + 'static {
    /// The containers of the pod with this uid.
    fn list(&self, pod_uid: &str) -> impl Future<Output = Result<Vec<v1::Container>, String>> + Send;
    /// Runs `cmd` in the container, bounded by `timeout` seconds.
    fn exec(&self, id: &str, cmd: Vec<String>, timeout: i64)
    -> impl Future<Output = Result<ExecOutput, String>> + Send;
}

impl ProbeRuntime for CriRuntime {
    async fn list(&self, pod_uid: &str) -> Result<Vec<v1::Container>, String> {
        let c = self.client().ok_or_else(|| "no container runtime".to_string())?;
        c.list_pod_containers(pod_uid).await.map_err(|e| e.to_string())
    }
    async fn exec(&self, id: &str, cmd: Vec<String>, timeout: i64) -> Result<ExecOutput, String> {
        let c = self.client().ok_or_else(|| "no container runtime".to_string())?;
        let r = c.exec_sync(id, cmd, timeout).await.map_err(|e| e.to_string())?;
        Ok(ExecOutput {
            exit_code: r.exit_code,
            stdout: String::from_utf8_lossy(&r.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&r.stderr).into_owned(),
        })
    }
}

/// The newest container named `name` among `containers`.
pub fn newest(containers: &[v1::Container], name: &str) -> Option<Container> {
    containers
        .iter()
        .filter(|c| {
            c.labels.get(CONTAINER_NAME_LABEL).map(String::as_str).or(c.metadata.as_ref().map(|m| m.name.as_str()))
                == Some(name)
        })
        .max_by_key(|c| c.created_at)
        .map(|c| Container {
            id: c.id.clone(),
            running: c.state == v1::ContainerState::ContainerRunning as i32,
            started_at: Timestamp::from_nanosecond(i128::from(c.created_at)).unwrap_or(Timestamp::UNIX_EPOCH),
        })
}

/// Results shared by the workers and the writer.
#[derive(Default)]
struct Shared {
    results: Mutex<BTreeMap<ProbeKey, Published>>,
    latest: Mutex<Option<NodePodProbe>>,
    dirty: Notify,
}

impl Shared {
    /// kruise `resultManager.set`.
    fn set(&self, key: &ProbeKey, state: &str, message: String) {
        let now = Timestamp::now();
        let mut results = self.results.lock().unwrap_or_else(|e| e.into_inner());
        if replaces(results.get(key), state, &message, now) {
            results.insert(key.clone(), Published { state: state.to_string(), message, at: now });
            self.dirty.notify_one();
        }
    }

    fn remove(&self, key: &ProbeKey) {
        self.results.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
        self.dirty.notify_one();
    }
}

struct Running {
    stop: CancellationToken,
    spec: watch::Sender<Probe>,
}

/// Runs the prober of `node` until `stop`.
pub async fn run<R: ProbeRuntime>(client: kube::Client, runtime: Arc<R>, node: String, stop: CancellationToken) {
    let api: Api<NodePodProbe> = Api::all(client.clone());
    let config = watcher::Config::default().fields(&format!("metadata.name={node}"));
    let mut events = crate::cluster::watch_backoff::with_backoff(watcher::watcher(api.clone(), config)).boxed();
    let shared = Arc::new(Shared::default());
    let writer = tokio::spawn(write_status(api, node.clone(), Arc::clone(&shared), stop.clone()));
    let mut workers: HashMap<ProbeKey, Running> = HashMap::new();
    loop {
        let ev = tokio::select! {
            _ = stop.cancelled() => break,
            ev = events.next() => ev,
        };
        let npp = match ev {
            None => break,
            Some(Ok(Event::Apply(n) | Event::InitApply(n))) => Some(n),
            Some(Ok(Event::Delete(_))) => None,
            Some(Ok(Event::Init | Event::InitDone)) => continue,
            Some(Err(e)) => {
                tracing::warn!(error = %e, "NodePodProbe watch failed; retrying");
                continue;
            }
        };
        let wanted = npp.as_ref().map(wanted_workers).unwrap_or_default();
        *shared.latest.lock().unwrap_or_else(|e| e.into_inner()) = npp;
        workers.retain(|key, w| {
            let keep = wanted.contains_key(key);
            if !keep {
                w.stop.cancel();
            }
            keep
        });
        for (key, probe) in wanted {
            match workers.get(&key) {
                Some(w) => {
                    w.spec.send_if_modified(|old| {
                        let changed = *old != probe;
                        *old = probe.clone();
                        changed
                    });
                }
                None => {
                    let (tx, rx) = watch::channel(probe);
                    let token = stop.child_token();
                    tokio::spawn(work(key.clone(), rx, Arc::clone(&runtime), Arc::clone(&shared), token.clone()));
                    workers.insert(key, Running { stop: token, spec: tx });
                }
            }
        }
        shared.dirty.notify_one();
    }
    for w in workers.values() {
        w.stop.cancel();
    }
    stop.cancel();
    let _ = writer.await;
}

/// Whether two probes differ in what they run (kruise resets the result to Unknown then).
fn handler_changed(a: &Probe, b: &Probe) -> bool {
    a.exec != b.exec || a.http_get != b.http_get || a.tcp_socket != b.tcp_socket || a.grpc != b.grpc
}

/// One probe's worker (kruise `worker.run` / `doProbe`).
async fn work<R: ProbeRuntime>(
    key: ProbeKey,
    mut spec: watch::Receiver<Probe>,
    runtime: Arc<R>,
    shared: Arc<Shared>,
    stop: CancellationToken,
) {
    let mut w = Worker::default();
    loop {
        let probe = spec.borrow_and_update().clone();
        let container = match runtime.list(&key.uid).await {
            Ok(cs) => newest(&cs, &key.container),
            Err(e) => {
                tracing::debug!(pod = %key.pod, error = %e, "list containers failed");
                None
            }
        };
        if let Before::Go { publish, probe: run } =
            w.before_probe(&key.container, container.as_ref(), &probe, Timestamp::now())
        {
            for (state, message) in publish {
                shared.set(&key, &state, message);
            }
            if run {
                match run_probe(runtime.as_ref(), &probe, &key, &w.container_id).await {
                    Ok((success, message)) => {
                        let state = state_of(success);
                        if w.after_probe(state, &probe) {
                            shared.set(&key, state, truncate_message(message));
                        }
                    }
                    Err(e) => tracing::warn!(pod = %key.pod, probe = %key.probe, error = %e, "probe failed to run"),
                }
            }
        }
        tokio::select! {
            _ = stop.cancelled() => break,
            () = tokio::time::sleep(period(&probe)) => {}
            changed = spec.changed() => {
                if changed.is_err() {
                    break;
                }
                if handler_changed(&probe, &spec.borrow()) && !w.container_id.is_empty() {
                    shared.set(&key, PROBE_UNKNOWN, String::new());
                }
            }
        }
    }
    shared.remove(&key);
}

/// Runs one probe: success and message, or why it could not run (kruise `prober.probe`).
pub async fn run_probe<R: ProbeRuntime>(
    runtime: &R,
    probe: &Probe,
    key: &ProbeKey,
    container_id: &str,
) -> Result<(bool, String), String> {
    let timeout = timeout_seconds(probe);
    if let Some(exec) = &probe.exec {
        let cmd = exec.command.clone().unwrap_or_default();
        let out = runtime.exec(container_id, cmd, timeout).await?;
        return Ok(if out.exit_code == 0 { (true, out.stdout) } else { (false, out.stderr) });
    }
    let limit = Duration::from_secs(u64::try_from(timeout).unwrap_or(1));
    if let Some(http) = &probe.http_get {
        return http_probe(http, &key.ip, limit).await;
    }
    if let Some(tcp) = &probe.tcp_socket {
        return tcp_probe(tcp, &key.ip, limit).await;
    }
    Err(format!("missing probe handler for {}", key.container))
}

fn port_number(port: &IntOrString) -> Result<u16, String> {
    let n = match port {
        IntOrString::Int(n) => *n,
        IntOrString::String(s) => s.parse::<i32>().unwrap_or(-1),
    };
    u16::try_from(n).ok().filter(|n| *n > 0).ok_or_else(|| format!("invalid port number: {n}"))
}

/// The kubelet's tcp probe: a connection within the timeout succeeds.
pub async fn tcp_probe(tcp: &TCPSocketAction, pod_ip: &str, limit: Duration) -> Result<(bool, String), String> {
    let host = tcp.host.as_deref().filter(|h| !h.is_empty()).unwrap_or(pod_ip);
    let port = port_number(&tcp.port)?;
    Ok(match tokio::time::timeout(limit, TcpStream::connect((host, port))).await {
        Ok(Ok(_)) => (true, String::new()),
        Ok(Err(e)) => (false, format!("dial tcp {host}:{port}: {e}")),
        Err(_) => (false, format!("dial tcp {host}:{port}: i/o timeout")),
    })
}

/// The kubelet's http probe: a GET answered 200–399 succeeds (body as message), any other code
/// fails with "HTTP probe failed with statuscode: N", as a failed connection does with its error.
/// `scheme: HTTPS` is sent over TLS without verifying the certificate, as the kubelet does
/// ([`super::httpget`]).
pub async fn http_probe(http: &HTTPGetAction, pod_ip: &str, limit: Duration) -> Result<(bool, String), String> {
    let scheme = http.scheme.as_deref().unwrap_or("HTTP");
    let https = if scheme.eq_ignore_ascii_case("http") {
        false
    } else if scheme.eq_ignore_ascii_case("https") {
        true
    } else {
        return Err(format!("unsupported protocol scheme \"{}\"", scheme.to_ascii_lowercase()));
    };
    let host = http.host.as_deref().filter(|h| !h.is_empty()).unwrap_or(pod_ip);
    let port = port_number(&http.port)?;
    let path = http.path.as_deref().unwrap_or("");
    let path = if path.starts_with('/') { path.to_string() } else { format!("/{path}") };
    let mut headers = Vec::new();
    let mut host_header = if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") };
    let mut has = (false, false);
    for h in http.http_headers.iter().flatten() {
        if h.name.eq_ignore_ascii_case("host") {
            host_header.clone_from(&h.value);
            continue;
        }
        has.0 |= h.name.eq_ignore_ascii_case("user-agent");
        has.1 |= h.name.eq_ignore_ascii_case("accept");
        if !(h.name.eq_ignore_ascii_case("accept") && h.value.is_empty()) {
            headers.push((h.name.clone(), h.value.clone()));
        }
    }
    if !has.0 {
        headers.push(("User-Agent".to_string(), "kube-probe".to_string()));
    }
    if !has.1 {
        headers.push(("Accept".to_string(), "*/*".to_string()));
    }
    let request = super::httpget::HttpGet { https, host: host.to_string(), port, path, headers, host_header };
    let url = request.url();
    let answer = match super::httpget::get(&request, limit, MAX_BODY).await {
        Ok(a) => a,
        Err(e) => return Ok((false, format!("Get \"{url}\": {e}"))),
    };
    let body: String = String::from_utf8_lossy(&answer.body).chars().take(MAX_BODY).collect();
    Ok(if (200..400).contains(&answer.code) {
        (true, body)
    } else {
        (false, format!("HTTP probe failed with statuscode: {}", answer.code))
    })
}

/// The status writer: on each change of the results or of the NodePodProbe, the status built
/// from both, written when it differs.
async fn write_status(api: Api<NodePodProbe>, node: String, shared: Arc<Shared>, stop: CancellationToken) {
    let pp = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            () = shared.dirty.notified() => {}
        }
        // Fold a burst of results into one write.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let Some(npp) = shared.latest.lock().unwrap_or_else(|e| e.into_inner()).clone() else { continue };
        let results = shared.results.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let status = build_status(&npp, &results, Timestamp::now());
        if npp.status.clone().unwrap_or_default() == status {
            continue;
        }
        let patch = json!({"metadata": {"resourceVersion": npp.metadata.resource_version},
            "status": {"podProbeStatuses": status.pod_probe_statuses}});
        match api.patch_status(&node, &pp, &Patch::Merge(&patch)).await {
            Ok(_) => tracing::debug!(node = %node, "NodePodProbe status written"),
            Err(e) => {
                // A conflict: the watch brings the new version, which builds again.
                tracing::debug!(node = %node, error = %e, "NodePodProbe status write failed; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
                shared.dirty.notify_one();
            }
        }
    }
}

#[cfg(test)]
#[path = "podprobe_tests.rs"]
mod tests;
