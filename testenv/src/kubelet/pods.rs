//! The pod side of the simulated kubelet: watches the pods bound to its nodes and the
//! PersistentVolumeClaims they mount, advances each pod's simulated runtime
//! ([`runtime::advance`]) and writes the status a kubelet would report ([`runtime::render`]) to
//! `pods/status` with a strategic merge patch that carries only the kubelet's own conditions, so
//! conditions written by controllers (readiness gates) are never overwritten.
//!
//! - A pod starts only once every PersistentVolumeClaim it mounts is Bound.
//! - ConfigMaps are watched (their data keys, per namespace) because container env can read them:
//!   a container whose ConfigMap key is missing waits ([`runtime::config_error`]), and a change
//!   of a ConfigMap in its namespace looks at it again, as the kubelet's pod worker retries a
//!   `CreateContainerConfigError` on its next sync.
//! - A pod being deleted is removed (`DELETE` with grace period 0 and its uid as precondition,
//!   as the kubelet does) once its grace period, capped by the namespace's settings, has passed.

use super::runtime::{self, ConfigMapKeys, PodRuntime, RandomIds, RunState, RuntimeSettings};
use super::{Kubelet, READY_DELAY_ANNOTATION, bump};
use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, PodStatus};
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet};
use std::time::Duration;
use tokio::time::Instant;

type Key = (String, String);

/// Runs the pod loop forever (restarting it after errors).
pub async fn run(client: kube::Client, kubelet: Kubelet) {
    let mut driver = Driver::new(client, kubelet);
    driver.run().await;
}

struct Driver {
    client: kube::Client,
    kubelet: Kubelet,
    our_nodes: HashMap<String, (String, usize)>,
    pods: HashMap<Key, Pod>,
    runtimes: HashMap<String, PodRuntime>,
    /// The nodes' container runtimes: a started container pulls its image there.
    node_runtimes: super::cri::Runtimes,
    written: HashMap<String, PodStatus>,
    terminating_since: HashMap<String, Timestamp>,
    ips: HashMap<usize, HashSet<u32>>,
    ip_of: HashMap<String, (usize, u32)>,
    pvcs: HashMap<Key, bool>,
    waiting_for_claims: HashSet<Key>,
    /// Data keys of every ConfigMap, by namespace.
    config_maps: HashMap<String, ConfigMapKeys>,
    /// The ConfigMaps of a relist in progress.
    config_maps_listing: Option<HashMap<String, ConfigMapKeys>>,
    timers: BinaryHeap<Reverse<(Instant, Key)>>,
    dirty: BTreeSet<Key>,
    /// Pods one of whose containers was stopped through the node's CRI ([`super::restart`]).
    stopped: tokio::sync::mpsc::UnboundedReceiver<Key>,
}

impl Driver {
    fn new(client: kube::Client, kubelet: Kubelet) -> Self {
        let our_nodes = kubelet.node_infos().iter().map(|n| (n.name.clone(), (n.ip.clone(), n.index))).collect();
        let node_runtimes = kubelet.runtimes();
        let (stop_tx, stopped) = tokio::sync::mpsc::unbounded_channel();
        for n in node_runtimes.0.iter() {
            let tx = stop_tx.clone();
            n.runtime.on_stop(move |s| {
                let _ = tx.send((s.namespace.clone(), s.pod.clone()));
            });
        }
        Self {
            client,
            kubelet,
            our_nodes,
            pods: HashMap::new(),
            runtimes: HashMap::new(),
            node_runtimes,
            written: HashMap::new(),
            terminating_since: HashMap::new(),
            ips: HashMap::new(),
            ip_of: HashMap::new(),
            pvcs: HashMap::new(),
            waiting_for_claims: HashSet::new(),
            config_maps: HashMap::new(),
            config_maps_listing: None,
            timers: BinaryHeap::new(),
            dirty: BTreeSet::new(),
            stopped,
        }
    }

    async fn run(&mut self) {
        let pods = watcher(Api::<Pod>::all(self.client.clone()), watcher::Config::default().fields("spec.nodeName!="))
            .default_backoff();
        let claims = watcher(Api::<PersistentVolumeClaim>::all(self.client.clone()), watcher::Config::default())
            .default_backoff();
        let config_maps =
            watcher(Api::<ConfigMap>::all(self.client.clone()), watcher::Config::default()).default_backoff();
        let mut pods = std::pin::pin!(pods);
        let mut claims = std::pin::pin!(claims);
        let mut config_maps = std::pin::pin!(config_maps);
        let mut init_pods: Option<HashSet<Key>> = None;
        loop {
            let next_timer = self.timers.peek().map(|Reverse((t, _))| *t);
            let settings_changed = self.kubelet.shared.changed.notified();
            tokio::select! {
                ev = pods.next() => match ev {
                    Some(Ok(ev)) => self.on_pod(ev, &mut init_pods),
                    Some(Err(e)) => tracing::debug!(error = %e, "pod watch"),
                    None => return,
                },
                ev = claims.next() => match ev {
                    Some(Ok(ev)) => self.on_claim(ev),
                    Some(Err(e)) => tracing::debug!(error = %e, "claim watch"),
                    None => return,
                },
                ev = config_maps.next() => match ev {
                    Some(Ok(ev)) => self.on_config_map(ev),
                    Some(Err(e)) => tracing::debug!(error = %e, "config map watch"),
                    None => return,
                },
                () = sleep_until(next_timer) => {
                    let now = Instant::now();
                    while let Some(Reverse((t, _))) = self.timers.peek() {
                        if *t > now { break; }
                        if let Some(Reverse((_, key))) = self.timers.pop() {
                            self.dirty.insert(key);
                        }
                    }
                }
                Some(k) = self.stopped.recv() => {
                    self.dirty.insert(k);
                }
                () = settings_changed => {
                    self.dirty.extend(self.pods.keys().cloned());
                }
            }
            while let Some(key) = self.dirty.pop_first() {
                self.process(key).await;
            }
        }
    }

    fn on_pod(&mut self, ev: watcher::Event<Pod>, init: &mut Option<HashSet<Key>>) {
        match ev {
            watcher::Event::Init => *init = Some(HashSet::new()),
            watcher::Event::InitApply(pod) => {
                if let Some(seen) = init.as_mut() {
                    seen.insert(key(&pod));
                }
                self.upsert(pod);
            }
            watcher::Event::InitDone => {
                if let Some(seen) = init.take() {
                    let gone: Vec<Key> = self.pods.keys().filter(|k| !seen.contains(*k)).cloned().collect();
                    for k in gone {
                        self.remove(&k);
                    }
                }
            }
            watcher::Event::Apply(pod) => self.upsert(pod),
            watcher::Event::Delete(pod) => self.remove(&key(&pod)),
        }
    }

    fn upsert(&mut self, pod: Pod) {
        let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or_default();
        if !self.our_nodes.contains_key(node) {
            return;
        }
        let k = key(&pod);
        if let Some(old) = self.pods.get(&k)
            && old.metadata.uid != pod.metadata.uid
        {
            self.remove(&k);
        }
        // A status that is not the one we wrote last (another writer, or an old event): render
        // and compare again instead of trusting our memory.
        if let (Some(uid), Some(status)) = (pod.metadata.uid.as_ref(), pod.status.as_ref())
            && self.written.get(uid).is_some_and(|w| !runtime::same_kubelet_fields(w, status))
        {
            self.written.remove(uid);
        }
        self.pods.insert(k.clone(), pod);
        self.dirty.insert(k);
    }

    fn remove(&mut self, k: &Key) {
        self.dirty.remove(k);
        self.waiting_for_claims.remove(k);
        if let Some(pod) = self.pods.remove(k)
            && let Some(uid) = pod.metadata.uid
        {
            self.runtimes.remove(&uid);
            if let Some(rt) =
                pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).and_then(|n| self.node_runtimes.of(n))
            {
                rt.forget_pod(&uid);
            }
            self.written.remove(&uid);
            self.terminating_since.remove(&uid);
            if let Some((node, ip)) = self.ip_of.remove(&uid)
                && let Some(set) = self.ips.get_mut(&node)
            {
                set.remove(&ip);
            }
        }
    }

    fn on_claim(&mut self, ev: watcher::Event<PersistentVolumeClaim>) {
        let (claim, deleted) = match ev {
            watcher::Event::Apply(c) | watcher::Event::InitApply(c) => (c, false),
            watcher::Event::Delete(c) => (c, true),
            watcher::Event::Init | watcher::Event::InitDone => return,
        };
        let k = key(&claim);
        if deleted {
            self.pvcs.remove(&k);
        } else {
            let bound = claim.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound");
            self.pvcs.insert(k.clone(), bound);
        }
        let waiting: Vec<Key> = self.waiting_for_claims.iter().filter(|p| p.0 == k.0).cloned().collect();
        self.dirty.extend(waiting);
    }

    fn on_config_map(&mut self, ev: watcher::Event<ConfigMap>) {
        let keys = |cm: &ConfigMap| cm.data.iter().flatten().map(|(k, _)| k.clone()).collect();
        let changed_ns = match ev {
            watcher::Event::Init => {
                self.config_maps_listing = Some(HashMap::new());
                return;
            }
            watcher::Event::InitApply(cm) => {
                let (ns, name) = key(&cm);
                let listing = self.config_maps_listing.get_or_insert_with(HashMap::new);
                listing.entry(ns).or_default().insert(name, keys(&cm));
                return;
            }
            watcher::Event::InitDone => {
                self.config_maps = self.config_maps_listing.take().unwrap_or_default();
                None
            }
            watcher::Event::Apply(cm) => {
                let (ns, name) = key(&cm);
                self.config_maps.entry(ns.clone()).or_default().insert(name, keys(&cm));
                Some(ns)
            }
            watcher::Event::Delete(cm) => {
                let (ns, name) = key(&cm);
                if let Some(m) = self.config_maps.get_mut(&ns) {
                    m.remove(&name);
                }
                Some(ns)
            }
        };
        // Containers held by their env, in that namespace (or anywhere after a relist), try again.
        let held: Vec<Key> = self
            .pods
            .iter()
            .filter(|(k, _)| changed_ns.as_ref().is_none_or(|ns| &k.0 == ns))
            .filter(|(_, p)| {
                p.metadata.uid.as_ref().and_then(|u| self.runtimes.get(u)).is_some_and(|rt| {
                    rt.containers
                        .values()
                        .chain(rt.init.values())
                        .any(|c| matches!(c.state, RunState::ConfigError { .. }))
                })
            })
            .map(|(k, _)| k.clone())
            .collect();
        self.dirty.extend(held);
    }

    fn claims_bound(&self, pod: &Pod) -> bool {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        pod.spec.iter().flat_map(|s| s.volumes.iter().flatten()).all(|v| match &v.persistent_volume_claim {
            Some(c) => self.pvcs.get(&(ns.clone(), c.claim_name.clone())).copied().unwrap_or(false),
            None => true,
        })
    }

    async fn process(&mut self, k: Key) {
        let Some(pod) = self.pods.get(&k).cloned() else { return };
        let Some(uid) = pod.metadata.uid.clone() else { return };
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        if matches!(phase, Some("Succeeded" | "Failed")) {
            return;
        }
        let settings = self.kubelet.settings_for(&k.0);
        let now = Timestamp::now();

        if let Some(deleted_at) = pod.metadata.deletion_timestamp.as_ref() {
            let since = *self.terminating_since.entry(uid.clone()).or_insert(now);
            let mut deadline = deleted_at.0;
            if let Some(cap) = settings.max_grace_period {
                deadline = deadline.min(add(since, cap));
            }
            if now >= deadline {
                let api: Api<Pod> = Api::namespaced(self.client.clone(), &k.0);
                let params = DeleteParams {
                    grace_period_seconds: Some(0),
                    preconditions: Some(Preconditions { uid: Some(uid.clone()), resource_version: None }),
                    ..DeleteParams::default()
                };
                match api.delete(&k.1, &params).await {
                    Ok(_) => bump(&self.kubelet.counters().deletions),
                    Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
                    Err(e) => {
                        tracing::warn!(pod = ?k, error = %e, "final pod delete failed");
                        self.later(&k, Duration::from_secs(1));
                    }
                }
            } else {
                self.at(&k, now, deadline);
            }
            return;
        }

        if !self.runtimes.contains_key(&uid) && !self.claims_bound(&pod) {
            self.waiting_for_claims.insert(k);
            return;
        }
        self.waiting_for_claims.remove(&k);

        let ready_delay = pod
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(READY_DELAY_ANNOTATION))
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(settings.ready_delay, Duration::from_millis);
        let rs = RuntimeSettings { ready_delay, pull_failures: settings.pull_failures.clone() };
        let previous = match self.runtimes.remove(&uid) {
            Some(rt) => rt,
            None => self.new_runtime(&pod, &uid, now),
        };
        let restarts_before: i32 = previous.containers.values().map(|c| c.restart_count).sum();
        let no_config_maps = ConfigMapKeys::new();
        let config_maps = self.config_maps.get(&k.0).unwrap_or(&no_config_maps);
        let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or_default();
        let mut ids = NodeIds { runtime: self.node_runtimes.of(node) };
        let node_runtime = self.node_runtimes.of(node);
        let previous = super::restart::after_stops(&pod, previous, node_runtime.as_ref(), now, &mut ids);
        let next = runtime::advance(&pod, previous, &rs, config_maps, now, &mut ids);
        super::restart::register(&pod, &next, node_runtime.as_ref());
        let restarts_after: i32 = next.containers.values().map(|c| c.restart_count).sum();
        for _ in restarts_before..restarts_after {
            bump(&self.kubelet.counters().restarts);
        }
        let (mut status, wake) = runtime::render(&pod, &next, &rs, now);
        let wake =
            super::exits::apply(&pod, &next, &mut status, now).map_or(wake, |w| Some(wake.map_or(w, |x| x.min(w))));
        super::restart::report_stopped(&pod, &next, node_runtime.as_ref(), &mut status, now);
        self.runtimes.insert(uid.clone(), next);
        if let Some(w) = wake {
            self.at(&k, now, w);
        }
        let current = pod.status.clone().unwrap_or_default();
        let already = runtime::same_kubelet_fields(&current, &status)
            || self.written.get(&uid).is_some_and(|w| runtime::same_kubelet_fields(w, &status));
        if already {
            return;
        }
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &k.0);
        match api.patch_status(&k.1, &PatchParams::default(), &Patch::Strategic(status_patch(&status))).await {
            Ok(_) => {
                bump(&self.kubelet.counters().status_writes);
                self.written.insert(uid, status);
            }
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => {
                tracing::warn!(pod = ?k, error = %e, "pod status write failed");
                self.later(&k, Duration::from_millis(500));
            }
        }
    }

    fn new_runtime(&mut self, pod: &Pod, uid: &str, now: Timestamp) -> PodRuntime {
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
        let (host_ip, index) = self.our_nodes.get(&node).cloned().unwrap_or_default();
        let used = self.ips.entry(index).or_default();
        let host = (2..255u32).find(|h| !used.contains(h)).unwrap_or(254);
        used.insert(host);
        self.ip_of.insert(uid.to_string(), (index, host));
        PodRuntime {
            pod_ip: format!("10.244.{index}.{host}"),
            host_ip,
            start_time: now,
            init: Default::default(),
            containers: Default::default(),
        }
    }

    fn at(&mut self, k: &Key, now: Timestamp, when: Timestamp) {
        let wait = Duration::try_from(when.duration_since(now)).unwrap_or(Duration::ZERO);
        self.later(k, wait);
    }

    fn later(&mut self, k: &Key, wait: Duration) {
        self.timers.push(Reverse((Instant::now() + wait, k.clone())));
    }
}

/// Ids for the pods of one node: random container ids, and imageIDs from the node's runtime,
/// which pulls the image (as the kubelet's `EnsureImageExists` does) so it shows in the node's
/// images too.
struct NodeIds {
    runtime: Option<kruise_cri::fake::FakeRuntime>,
}

impl runtime::Ids for NodeIds {
    fn container_id(&mut self) -> String {
        RandomIds.container_id()
    }

    fn image_id(&mut self, normalized: &str) -> String {
        let pulled = self.runtime.as_ref().map(|r| r.ensure_image(normalized));
        pulled.and_then(|i| i.repo_digests.into_iter().next()).unwrap_or_else(|| runtime::image_id(normalized))
    }
}

/// The patch of `pods/status`: the kubelet's fields, and of the conditions only its own.
fn status_patch(status: &PodStatus) -> Value {
    let mut v = serde_json::to_value(status).unwrap_or(Value::Null);
    if let Some(obj) = v.as_object_mut() {
        let ours: Vec<Value> = status
            .conditions
            .iter()
            .flatten()
            .filter(|c| runtime::KUBELET_CONDITIONS.contains(&c.type_.as_str()))
            .filter_map(|c| serde_json::to_value(c).ok())
            .collect();
        obj.insert("conditions".into(), Value::Array(ours));
        obj.retain(|k, _| {
            matches!(
                k.as_str(),
                "phase"
                    | "hostIP"
                    | "hostIPs"
                    | "podIP"
                    | "podIPs"
                    | "startTime"
                    | "conditions"
                    | "containerStatuses"
                    | "initContainerStatuses"
                    | "observedGeneration"
            )
        });
    }
    json!({ "status": v })
}

fn key<K: kube::Resource>(o: &K) -> Key {
    (o.meta().namespace.clone().unwrap_or_default(), o.meta().name.clone().unwrap_or_default())
}

fn add(t: Timestamp, d: Duration) -> Timestamp {
    jiff::SignedDuration::try_from(d).ok().and_then(|d| t.checked_add(d).ok()).unwrap_or(t)
}

async fn sleep_until(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}
