//! The daemon's container-meta controller (issue 30 item 2, gate `DaemonWatchingPod`; kruise
//! `pkg/daemon/containermeta`): a watch of this node's pods (field selector `spec.nodeName`),
//! each change filtered by [`crate::core::containermeta::wants_report`] and synced a second later
//! (kruise's `enqueue`): the pod's containers are read from the runtime (CRI `ListContainers` by
//! the pod-uid label), the env of a running container not measured yet is read with `env` through
//! CRI `ExecSync`, [`crate::core::containermeta::build`] decides the meta and the restarts, the
//! meta is patched into the `apps.kruise.io/runtime-containers-meta` annotation (through
//! `pods/status`, as kruise does) and each stale container is stopped through CRI `StopContainer`
//! (kruise's restarter), which the kubelet restarts with the new env.
//!
//! As kruise, a pod of the first listing without a meta annotation is left until it changes (no
//! burst of writes when a daemon starts on a full node). Deliberately unlike kruise, a pod this
//! daemon sees for the first time after its listing is treated as an update from nothing, so a
//! pod created and started between two watch events still gets its first report. A container this
//! daemon stopped is not stopped again (kruise's restarter rate-limits by container id).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kruise_cri::v1;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::watcher::{self, Event};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::cri::CriRuntime;
use crate::core::containermeta::{Observed, build, encode, needs_env, parse_env, wants_report};
use crate::core::inplace::state::RUNTIME_CONTAINERS_META;

/// kruise's delay between a change and its sync.
const SYNC_DELAY: Duration = Duration::from_secs(1);
/// kruise's wait before measuring an env again after a failed read.
const RETRY: Duration = Duration::from_secs(3);
/// kruise `maxExpectationWaitDuration`: how long a sync waits for the cache to show its write.
const EXPECTATION_WAIT: Duration = Duration::from_secs(30);
/// The kubelet's annotation of a container's hash (hex).
const CONTAINER_HASH_ANNOTATION: &str = "io.kubernetes.container.hash";
/// The grace period of a restart when the pod sets none.
const DEFAULT_GRACE_SECONDS: i64 = 30;

type Key = (String, String);

struct Controller {
    client: kube::Client,
    runtime: Arc<CriRuntime>,
    env_gate: bool,
    pods: HashMap<Key, Pod>,
    /// The resourceVersion this daemon's last write produced, by pod uid, and when.
    expected: HashMap<String, (u64, Instant)>,
    /// Containers this daemon stopped.
    stopped: BTreeSet<String>,
    timers: BinaryHeap<Reverse<(Instant, Key)>>,
}

fn key_of(p: &Pod) -> Key {
    (p.metadata.namespace.clone().unwrap_or_default(), p.metadata.name.clone().unwrap_or_default())
}

fn has_meta(p: &Pod) -> bool {
    p.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(RUNTIME_CONTAINERS_META))
}

fn rv(p: &Pod) -> u64 {
    p.metadata.resource_version.as_deref().and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// Runs until `stop` fires. `env_gate`: `InPlaceUpdateEnvFromMetadata`.
pub async fn run(
    client: kube::Client,
    runtime: Arc<CriRuntime>,
    node: String,
    env_gate: bool,
    stop: CancellationToken,
) {
    let api: Api<Pod> = Api::all(client.clone());
    let config = watcher::Config::default().fields(&format!("spec.nodeName={node}"));
    let mut events = crate::cluster::watch_backoff::with_backoff(watcher::watcher(api, config)).boxed();
    let mut c = Controller {
        client,
        runtime,
        env_gate,
        pods: HashMap::new(),
        expected: HashMap::new(),
        stopped: BTreeSet::new(),
        timers: BinaryHeap::new(),
    };
    let mut listing: Option<HashMap<Key, Pod>> = None;
    loop {
        let next = c.timers.peek().map(|Reverse((t, _))| *t);
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
                Some(Ok(Event::InitApply(p))) => {
                    listing.get_or_insert_with(HashMap::new).insert(key_of(&p), p);
                }
                Some(Ok(Event::InitDone)) => {
                    let fresh = listing.take().unwrap_or_default();
                    for p in fresh.values() {
                        let old = c.pods.get(&key_of(p));
                        // kruise's AddFunc: a pod without meta waits for a change.
                        let due = match old {
                            Some(o) => wants_report(Some(o), p, c.env_gate),
                            None => has_meta(p) && wants_report(None, p, c.env_gate),
                        };
                        if due {
                            c.later(key_of(p), SYNC_DELAY);
                        }
                    }
                    c.pods = fresh;
                }
                Some(Ok(Event::Apply(p))) => c.applied(p),
                Some(Ok(Event::Delete(p))) => {
                    c.pods.remove(&key_of(&p));
                    if let Some(uid) = p.metadata.uid.as_deref() {
                        c.expected.remove(uid);
                    }
                }
                Some(Err(e)) => tracing::warn!(error = %e, "pod watch failed; retrying"),
            },
            () = due => {
                let now = Instant::now();
                let mut keys = BTreeSet::new();
                while let Some(Reverse((t, _))) = c.timers.peek() {
                    if *t > now { break; }
                    if let Some(Reverse((_, k))) = c.timers.pop() { keys.insert(k); }
                }
                for k in keys {
                    if let Some(after) = c.sync(&k).await {
                        c.later(k, after);
                    }
                }
            }
        }
    }
}

impl Controller {
    fn later(&mut self, k: Key, after: Duration) {
        self.timers.push(Reverse((Instant::now() + after, k)));
    }

    fn applied(&mut self, p: Pod) {
        let k = key_of(&p);
        let due = wants_report(self.pods.get(&k), &p, self.env_gate);
        self.pods.insert(k.clone(), p);
        if due {
            self.later(k, SYNC_DELAY);
        }
    }

    /// kruise `sync`: `Some(after)` to look again.
    async fn sync(&mut self, k: &Key) -> Option<Duration> {
        let pod = self.pods.get(k)?.clone();
        let statuses = pod.status.as_ref().and_then(|s| s.container_statuses.as_deref()).unwrap_or(&[]);
        if pod.metadata.deletion_timestamp.is_some() || statuses.is_empty() {
            return None;
        }
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        if let Some((want, at)) = self.expected.get(&uid).copied() {
            if rv(&pod) < want && at.elapsed() < EXPECTATION_WAIT {
                // Our last write is not in the cache yet: its arrival queues the pod again.
                return Some(SYNC_DELAY);
            }
            self.expected.remove(&uid);
        }
        // The runtime type, from the ids the kubelet reports (kruise `getRuntimeForPod`).
        let runtime_type = statuses
            .iter()
            .filter_map(|s| s.container_id.as_deref()?.split_once("://").map(|(t, _)| t.to_string()))
            .next()?;
        let Some(cri) = self.runtime.client() else {
            tracing::debug!(pod = ?k, "no container runtime; container meta not reported");
            return None;
        };
        let containers = match cri.list_pod_containers(&uid).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(pod = ?k, error = %e, "failed to list the pod's containers");
                return Some(RETRY);
            }
        };
        let observed = observed(&containers, &runtime_type);
        let mut envs = BTreeMap::new();
        for id in needs_env(&pod, &observed, self.env_gate) {
            let bare = id.split_once("://").map_or(id.as_str(), |(_, b)| b);
            let env = cri.exec_sync(bare, vec!["env".into()], 3).await.map_err(|e| e.to_string()).and_then(|r| {
                if r.exit_code == 0 {
                    Ok(parse_env(&String::from_utf8_lossy(&r.stdout)))
                } else {
                    Err(format!("env exited with {}", r.exit_code))
                }
            });
            if let Err(e) = &env {
                tracing::warn!(pod = ?k, container = %id, error = %e, "failed to read the container's env");
            }
            envs.insert(id, env);
        }
        let report = build(&pod, &observed, &envs, self.env_gate);
        let grace = pod.spec.as_ref().and_then(|s| s.termination_grace_period_seconds).unwrap_or(DEFAULT_GRACE_SECONDS);
        for id in &report.restart {
            let running = observed.iter().any(|o| o.id == *id && o.running);
            if !running || self.stopped.contains(id) {
                continue;
            }
            let bare = id.split_once("://").map_or(id.as_str(), |(_, b)| b);
            tracing::info!(pod = ?k, container = %id, "stopping the container: its env from metadata changed");
            match cri.stop_container(bare, grace).await {
                Ok(()) => {
                    self.stopped.insert(id.clone());
                }
                Err(e) => tracing::warn!(pod = ?k, container = %id, error = %e, "failed to stop the container"),
            }
        }
        let mut again = report.retry.then_some(RETRY);
        if report.changed {
            let text = encode(&report.meta);
            tracing::info!(pod = ?k, meta = %text, "reporting container meta");
            let patch = json!({"metadata": {"annotations": {RUNTIME_CONTAINERS_META: text}}});
            let api: Api<Pod> = Api::namespaced(self.client.clone(), &k.0);
            match api.patch_status(&k.1, &PatchParams::default(), &Patch::Strategic(&patch)).await {
                Ok(p) => {
                    self.expected.insert(uid, (rv(&p), Instant::now()));
                }
                Err(kube::Error::Api(e)) if e.code == 404 => return None,
                Err(e) => {
                    tracing::warn!(pod = ?k, error = %e, "failed to patch the container meta");
                    again = Some(again.map_or(RETRY, |a| a.min(RETRY)));
                }
            }
        }
        again
    }
}

/// The runtime's newest instance of each container name (the shared reading of
/// [`super::crr::observed`]), with the kubelet's container hash.
fn observed(containers: &[v1::Container], runtime: &str) -> Vec<Observed> {
    super::crr::observed(containers, runtime)
        .into_iter()
        .map(|o| {
            let bare = o.id.split_once("://").map_or(o.id.as_str(), |(_, b)| b);
            let plain_hash = containers
                .iter()
                .find(|c| c.id == bare)
                .and_then(|c| c.annotations.get(CONTAINER_HASH_ANNOTATION))
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .unwrap_or(0);
            Observed { name: o.name, id: o.id, running: o.running, restart_count: o.restart_count, plain_hash }
        })
        .collect()
}
