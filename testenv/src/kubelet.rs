//! A simulated kubelet and scheduler for a few fake nodes. Pending pods are bound to the least
//! loaded schedulable node whose labels match their nodeSelector (taints, affinity and resources
//! are not considered); bound pods become Running with a pod IP and
//! container statuses whose `imageID` derives from the image; containers turn ready after a
//! configurable delay (per pod: annotation `testenv.kruise.io/ready-delay-ms`), and the pod is
//! `Ready` only when every readiness-gate condition is also True. Changing a container's image
//! restarts that container (restartCount + 1, new imageID and containerID). Pods being deleted
//! disappear after their grace period (optionally capped). Other status fields and conditions
//! written by controllers are left alone.

use crate::api::{self, DeleteOptions, Target};
use crate::cluster::{Cluster, Ctx, User};
use crate::errors::{ApiError, Error};
use crate::meta;
use crate::selectors::Selector;
use crate::store::ObjKey;
use serde_json::{Value, json};
use sha2::Digest;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The annotation overriding the ready delay of one pod, in milliseconds.
pub const READY_DELAY_ANNOTATION: &str = "testenv.kruise.io/ready-delay-ms";

/// Kubelet settings.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeletConfig {
    /// How many nodes (`node-0`, `node-1`, ...).
    pub nodes: usize,
    /// Time from a container start to its readiness.
    pub ready_delay: Duration,
    /// Caps every pod's termination grace period (`None` honours it fully).
    pub max_grace_period: Option<Duration>,
}

impl Default for KubeletConfig {
    fn default() -> Self {
        Self { nodes: 3, ready_delay: Duration::ZERO, max_grace_period: None }
    }
}

struct Shared {
    config: Mutex<KubeletConfig>,
    wake: Notify,
}

/// A handle on the running kubelet: change its knobs at any time.
#[derive(Clone)]
pub struct Kubelet {
    shared: Arc<Shared>,
    nodes: Vec<String>,
}

impl Kubelet {
    /// The node names.
    pub fn nodes(&self) -> &[String] {
        &self.nodes
    }

    /// The current settings.
    pub fn config(&self) -> KubeletConfig {
        self.shared.config.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Changes the delay before containers turn ready (takes effect for every pod now).
    pub fn set_ready_delay(&self, delay: Duration) {
        self.update(|c| c.ready_delay = delay);
    }

    /// Caps termination grace periods.
    pub fn set_max_grace_period(&self, cap: Option<Duration>) {
        self.update(|c| c.max_grace_period = cap);
    }

    fn update(&self, f: impl FnOnce(&mut KubeletConfig)) {
        f(&mut self.shared.config.lock().unwrap_or_else(|e| e.into_inner()));
        self.shared.wake.notify_one();
    }
}

fn node_object(name: &str, index: usize) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
            "topology.kubernetes.io/zone": format!("zone-{}", index % 3)}},
        "spec": {},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status", "lastHeartbeatTime": meta::now(), "lastTransitionTime": meta::now()}],
            "addresses": [{"type": "InternalIP", "address": node_ip(index)}, {"type": "Hostname", "address": name}],
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "nodeInfo": {"kubeletVersion": "v1.35.0", "containerRuntimeVersion": "containerd://2.0.0", "operatingSystem": "linux", "architecture": "amd64"}
        }
    })
}

fn node_ip(index: usize) -> String {
    format!("172.18.0.{}", index + 2)
}

/// Starts the kubelet: registers the nodes, then runs until the cluster shuts down.
pub async fn start(cluster: Arc<Cluster>, config: KubeletConfig) -> Result<Kubelet, Error> {
    let nodes: Vec<String> = (0..config.nodes.max(1)).map(|i| format!("node-{i}")).collect();
    let def = cluster.by_group_resource("", "nodes").ok_or_else(|| Error::Manifest("nodes are not served".into()))?;
    for (i, name) in nodes.iter().enumerate() {
        let t = Target::new(def.clone(), "v1", "", "");
        match api::create(&cluster, &mut kubelet_ctx(name), &t, node_object(name, i)).await {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(Error::Api(e)),
        }
    }
    let shared = Arc::new(Shared { config: Mutex::new(config), wake: Notify::new() });
    let handle = Kubelet { shared: shared.clone(), nodes: nodes.clone() };
    tokio::spawn(run(cluster, shared, nodes));
    Ok(handle)
}

fn kubelet_ctx(node: &str) -> Ctx {
    Ctx::new(User::named(&format!("system:node:{node}"), &["system:nodes", "system:authenticated"]))
}

fn scheduler_ctx() -> Ctx {
    Ctx::new(User::named("system:kube-scheduler", &["system:authenticated"]))
}

struct ContainerRt {
    image: String,
    image_id: String,
    container_id: String,
    restart_count: i64,
    started: Instant,
    started_wall: String,
    last_state: Value,
}

struct PodRt {
    uid: String,
    pod_ip: String,
    start_time: String,
    containers: HashMap<String, ContainerRt>,
    deleting_since: Option<Instant>,
}

/// `<repository>@sha256:<sha256 of the image reference>`: a stable imageID per image.
pub fn image_id(image: &str) -> String {
    let digest = sha2::Sha256::digest(image.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let last = image.rsplit('/').next().unwrap_or(image);
    let repo = match (image.split_once('@'), last.rfind(':')) {
        (Some((r, _)), _) => r.to_string(),
        (None, Some(i)) => image[..image.len() - (last.len() - i)].to_string(),
        (None, None) => image.to_string(),
    };
    format!("{repo}@sha256:{hex}")
}

fn container_id() -> String {
    let hex: String = (0..32).map(|_| format!("{:02x}", fastrand::u8(..))).collect();
    format!("containerd://{hex}")
}

fn spec_containers(pod: &Value, list: &str) -> Vec<(String, String)> {
    pod.pointer(&format!("/spec/{list}"))
        .and_then(Value::as_array)
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    (
                        c.get("name").and_then(Value::as_str).unwrap_or("").to_string(),
                        c.get("image").and_then(Value::as_str).unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

impl PodRt {
    /// Picks up existing container statuses (a restarted kubelet, or a pod written elsewhere).
    fn adopt(pod: &Value, pod_ip: String, delay: Duration) -> Self {
        let now = Instant::now();
        let mut containers = HashMap::new();
        for s in pod.pointer("/status/containerStatuses").and_then(Value::as_array).into_iter().flatten() {
            let Some(name) = s.get("name").and_then(Value::as_str) else { continue };
            let ready = s.get("ready").and_then(Value::as_bool).unwrap_or(false);
            containers.insert(
                name.to_string(),
                ContainerRt {
                    image: s.get("image").and_then(Value::as_str).unwrap_or("").to_string(),
                    image_id: s.get("imageID").and_then(Value::as_str).unwrap_or("").to_string(),
                    container_id: s.get("containerID").and_then(Value::as_str).unwrap_or("").to_string(),
                    restart_count: s.get("restartCount").and_then(Value::as_i64).unwrap_or(0),
                    started: if ready { now.checked_sub(delay).unwrap_or(now) } else { now },
                    started_wall: s
                        .pointer("/state/running/startedAt")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(meta::now),
                    last_state: s.get("lastState").cloned().unwrap_or(json!({})),
                },
            );
        }
        let pod_ip = pod.pointer("/status/podIP").and_then(Value::as_str).map(str::to_string).unwrap_or(pod_ip);
        Self {
            uid: meta::uid(pod).to_string(),
            pod_ip,
            start_time: pod
                .pointer("/status/startTime")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(meta::now),
            containers,
            deleting_since: None,
        }
    }

    /// Starts, restarts (on an image change) and ages containers; returns the next time a
    /// container becomes ready, if any is still waiting.
    fn sync(&mut self, pod: &Value, delay: Duration, now: Instant) -> Option<Instant> {
        let mut next = None;
        for (name, image) in spec_containers(pod, "containers") {
            let rt = self.containers.entry(name).or_insert_with(|| ContainerRt {
                image: image.clone(),
                image_id: image_id(&image),
                container_id: container_id(),
                restart_count: 0,
                started: now,
                started_wall: meta::now(),
                last_state: json!({}),
            });
            if rt.image != image {
                rt.last_state = json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": rt.started_wall,
                    "finishedAt": meta::now(), "containerID": rt.container_id}});
                rt.restart_count += 1;
                rt.image = image.clone();
                rt.image_id = image_id(&image);
                rt.container_id = container_id();
                rt.started = now;
                rt.started_wall = meta::now();
            }
            let ready_at = rt.started + delay;
            if ready_at > now {
                next = Some(next.map_or(ready_at, |n: Instant| n.min(ready_at)));
            }
        }
        next
    }
}

fn condition(existing: &[Value], type_: &str, status: bool) -> Value {
    let status = if status { "True" } else { "False" };
    let old = existing.iter().find(|c| c.get("type").and_then(Value::as_str) == Some(type_));
    let time = match old {
        Some(c) if c.get("status").and_then(Value::as_str) == Some(status) => {
            c.get("lastTransitionTime").cloned().unwrap_or(json!(meta::now()))
        }
        _ => json!(meta::now()),
    };
    json!({"type": type_, "status": status, "lastProbeTime": null, "lastTransitionTime": time})
}

/// The pod status this kubelet reports.
fn desired_status(pod: &Value, rt: &PodRt, host_ip: &str, delay: Duration, now: Instant) -> Value {
    let mut status = pod.get("status").cloned().unwrap_or(json!({}));
    let existing: Vec<Value> = status.get("conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut all_ready = true;
    let statuses: Vec<Value> = spec_containers(pod, "containers")
        .iter()
        .filter_map(|(name, _)| {
            let c = rt.containers.get(name)?;
            let ready = now >= c.started + delay;
            all_ready &= ready;
            Some(json!({
                "name": name, "image": c.image, "imageID": c.image_id, "containerID": c.container_id,
                "ready": ready, "started": true, "restartCount": c.restart_count,
                "state": {"running": {"startedAt": c.started_wall}}, "lastState": c.last_state,
            }))
        })
        .collect();
    let init: Vec<Value> = spec_containers(pod, "initContainers")
        .iter()
        .map(|(name, image)| json!({
            "name": name, "image": image, "imageID": image_id(image), "ready": true, "started": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": rt.start_time, "finishedAt": rt.start_time}},
            "lastState": {},
        }))
        .collect();
    let gates_ok = pod
        .pointer("/spec/readinessGates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|g| g.get("conditionType").and_then(Value::as_str))
        .all(|gate| {
            existing.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(gate)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        });
    const OWNED: &[&str] = &["PodScheduled", "Initialized", "ContainersReady", "Ready", "PodReadyToStartContainers"];
    let mut conditions: Vec<Value> = vec![
        condition(&existing, "PodReadyToStartContainers", true),
        condition(&existing, "Initialized", true),
        condition(&existing, "Ready", all_ready && gates_ok),
        condition(&existing, "ContainersReady", all_ready),
        condition(&existing, "PodScheduled", true),
    ];
    conditions.extend(
        existing.iter().filter(|c| !OWNED.contains(&c.get("type").and_then(Value::as_str).unwrap_or(""))).cloned(),
    );
    let fields = [
        ("phase", json!("Running")),
        ("conditions", json!(conditions)),
        ("hostIP", json!(host_ip)),
        ("hostIPs", json!([{"ip": host_ip}])),
        ("podIP", json!(rt.pod_ip)),
        ("podIPs", json!([{"ip": rt.pod_ip}])),
        ("startTime", json!(rt.start_time)),
        ("containerStatuses", json!(statuses)),
    ];
    if let Some(map) = status.as_object_mut() {
        for (k, v) in fields {
            map.insert(k.into(), v);
        }
        if !init.is_empty() {
            map.insert("initContainerStatuses".into(), json!(init));
        }
        map.entry("qosClass").or_insert(json!("BestEffort"));
    }
    status
}

enum Next {
    Done,
    At(Instant),
    Retry,
}

struct State {
    cluster: Arc<Cluster>,
    shared: Arc<Shared>,
    nodes: Vec<String>,
    pods: HashMap<ObjKey, PodRt>,
    ip_counter: u32,
}

impl State {
    fn target(&self, key: &ObjKey) -> Option<Target> {
        let def = self.cluster.by_group_resource("", "pods")?;
        Some(Target::new(def, "v1", &key.namespace, &key.name))
    }

    async fn schedule(&mut self, key: &ObjKey, pod: &Value) -> Result<(), ApiError> {
        let selector: Selector = pod
            .pointer("/spec/nodeSelector")
            .map(|s| Selector::from_label_selector(&json!({"matchLabels": s})).unwrap_or_default())
            .unwrap_or_default();
        let (pods, _) = self.cluster.store.list("", "pods", None);
        let load =
            |n: &str| pods.iter().filter(|p| p.pointer("/spec/nodeName").and_then(Value::as_str) == Some(n)).count();
        let (nodes, _) = self.cluster.store.list("", "nodes", None);
        let candidates = nodes.iter().filter(|n| {
            self.nodes.iter().any(|ours| ours == meta::name(n))
                && n.pointer("/spec/unschedulable").and_then(Value::as_bool) != Some(true)
                && selector.matches(&meta::labels(n))
        });
        let Some(node) = candidates.min_by_key(|n| load(meta::name(n))).map(|n| meta::name(n).to_string()) else {
            return Ok(()); // Unschedulable: stays Pending.
        };
        let Some(t) = self.target(key) else { return Ok(()) };
        let binding = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": key.name, "namespace": key.namespace}, "target": {"apiVersion": "v1", "kind": "Node", "name": node}});
        match api::bind(&self.cluster, &mut scheduler_ctx(), &t.with_sub("binding"), binding).await {
            Err(e) if e.code != 404 && e.code != 409 => Err(e),
            _ => Ok(()),
        }
    }

    async fn reconcile(&mut self, key: &ObjKey) -> Next {
        let Some(pod) = self.cluster.store.get(key) else {
            self.pods.remove(key);
            return Next::Done;
        };
        let node = pod.pointer("/spec/nodeName").and_then(Value::as_str).unwrap_or("").to_string();
        if node.is_empty() {
            if meta::is_deleting(&pod) {
                return Next::Done;
            }
            return match self.schedule(key, &pod).await {
                Ok(()) => Next::Done,
                Err(e) => {
                    tracing::warn!(pod = %key.name, error = %e, "scheduling failed");
                    Next::Retry
                }
            };
        }
        let Some(index) = self.nodes.iter().position(|n| *n == node) else { return Next::Done };
        let config = self.shared.config.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let delay = meta::string_map(&pod, "annotations")
            .get(READY_DELAY_ANNOTATION)
            .and_then(|ms| ms.parse().ok())
            .map(Duration::from_millis)
            .unwrap_or(config.ready_delay);
        let now = Instant::now();
        if self.pods.get(key).is_some_and(|rt| rt.uid != meta::uid(&pod)) {
            self.pods.remove(key);
        }
        if !self.pods.contains_key(key) {
            self.ip_counter += 1;
            let ip = format!("10.244.{}.{}", index, self.ip_counter % 250 + 2);
            self.pods.insert(key.clone(), PodRt::adopt(&pod, ip, delay));
        }
        let Some(rt) = self.pods.get_mut(key) else { return Next::Done };
        if meta::is_deleting(&pod) {
            let grace = pod.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(0).max(0);
            let mut grace = Duration::from_secs(grace.unsigned_abs());
            if let Some(cap) = config.max_grace_period {
                grace = grace.min(cap);
            }
            let due = *rt.deleting_since.get_or_insert(now) + grace;
            if due > now {
                return Next::At(due);
            }
            let uid = rt.uid.clone();
            let Some(t) = self.target(key) else { return Next::Done };
            let opts = DeleteOptions { grace_period: Some(0), precondition_uid: Some(uid), ..Default::default() };
            return match api::delete(&self.cluster, &mut kubelet_ctx(&node), &t, &opts, true).await {
                Ok(_) => Next::Done,
                Err(e) if e.code == 404 || e.code == 409 => Next::Done,
                Err(e) => {
                    tracing::warn!(pod = %key.name, error = %e, "kubelet could not delete pod");
                    Next::At(now + Duration::from_millis(200))
                }
            };
        }
        let next_ready = rt.sync(&pod, delay, now);
        let status = desired_status(&pod, rt, &node_ip(index), delay, now);
        if pod.get("status") != Some(&status) {
            let mut new = (*pod).clone();
            new["status"] = status;
            let Some(t) = self.target(key) else { return Next::Done };
            match api::update(&self.cluster, &mut kubelet_ctx(&node), &t.with_sub("status"), new).await {
                Ok(_) => {}
                Err(e) if e.code == 409 => return Next::Retry,
                Err(e) if e.code == 404 => return Next::Done,
                Err(e) => {
                    tracing::warn!(pod = %key.name, error = %e, "kubelet status update failed");
                    return Next::At(now + Duration::from_millis(200));
                }
            }
        }
        next_ready.map_or(Next::Done, Next::At)
    }
}

fn all_pods(cluster: &Cluster) -> BTreeSet<ObjKey> {
    let (pods, _) = cluster.store.list("", "pods", None);
    pods.iter().map(|p| ObjKey::new("", "pods", meta::namespace(p), meta::name(p))).collect()
}

async fn run(cluster: Arc<Cluster>, shared: Arc<Shared>, nodes: Vec<String>) {
    let mut rx = cluster.store.subscribe();
    let mut shutdown = cluster.shutdown.clone();
    let mut state =
        State { cluster: cluster.clone(), shared: shared.clone(), nodes, pods: HashMap::new(), ip_counter: 0 };
    let mut dirty = all_pods(&cluster);
    let mut timers: BinaryHeap<Reverse<(Instant, ObjKey)>> = BinaryHeap::new();
    loop {
        while let Some(key) = dirty.pop_first() {
            match state.reconcile(&key).await {
                Next::Done => {}
                Next::At(t) => timers.push(Reverse((t, key))),
                Next::Retry => {
                    timers.push(Reverse((Instant::now() + Duration::from_millis(10), key)));
                }
            }
        }
        let next_timer = timers.peek().map(|Reverse((t, _))| *t);
        let far = Instant::now() + Duration::from_secs(3600);
        tokio::select! {
            ev = rx.recv() => match ev {
                Ok(ev) => {
                    if ev.key.group.is_empty() && ev.key.resource == "pods" {
                        dirty.insert(ev.key.clone());
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => dirty = all_pods(&cluster),
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            },
            _ = tokio::time::sleep_until(next_timer.unwrap_or(far)) => {
                let now = Instant::now();
                while let Some(Reverse((t, _))) = timers.peek() {
                    if *t > now {
                        break;
                    }
                    if let Some(Reverse((_, key))) = timers.pop() {
                        dirty.insert(key);
                    }
                }
            }
            _ = shared.wake.notified() => dirty = all_pods(&cluster),
            _ = shutdown.changed() => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_ids() {
        assert!(image_id("nginx:1.25").starts_with("nginx@sha256:"));
        assert!(image_id("reg:5000/app:2").starts_with("reg:5000/app@sha256:"));
        assert!(image_id("reg:5000/app").starts_with("reg:5000/app@sha256:"));
        assert_ne!(image_id("nginx:1"), image_id("nginx:2"));
        assert_eq!(image_id("nginx:1"), image_id("nginx:1"));
    }

    #[test]
    fn readiness_follows_delay_and_gates() {
        let pod = json!({"metadata": {"uid": "u"}, "spec": {"containers": [{"name": "a", "image": "x:1"}],
            "readinessGates": [{"conditionType": "InPlaceUpdateReady"}]},
            "status": {"conditions": [{"type": "InPlaceUpdateReady", "status": "False"}]}});
        let now = Instant::now();
        let mut rt = PodRt::adopt(&pod, "10.0.0.1".into(), Duration::ZERO);
        let next = rt.sync(&pod, Duration::from_secs(5), now);
        assert_eq!(next, Some(now + Duration::from_secs(5)));
        let s = desired_status(&pod, &rt, "1.2.3.4", Duration::from_secs(5), now);
        assert_eq!(s["containerStatuses"][0]["ready"], false);
        let later = now + Duration::from_secs(6);
        let s = desired_status(&pod, &rt, "1.2.3.4", Duration::from_secs(5), later);
        assert_eq!(s["containerStatuses"][0]["ready"], true);
        let ready = s["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Ready").unwrap();
        assert_eq!(ready["status"], "False");
        assert!(s["conditions"].as_array().unwrap().iter().any(|c| c["type"] == "InPlaceUpdateReady"));
        let mut gated = pod.clone();
        gated["status"]["conditions"][0]["status"] = json!("True");
        let s = desired_status(&gated, &rt, "1.2.3.4", Duration::from_secs(5), later);
        let ready = s["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Ready").unwrap();
        assert_eq!(ready["status"], "True");
        // An image change restarts the container.
        let mut updated = pod.clone();
        updated["spec"]["containers"][0]["image"] = json!("x:2");
        rt.sync(&updated, Duration::ZERO, later);
        let s = desired_status(&updated, &rt, "1.2.3.4", Duration::ZERO, later);
        assert_eq!(s["containerStatuses"][0]["restartCount"], 1);
        assert_eq!(s["containerStatuses"][0]["imageID"], json!(image_id("x:2")));
    }
}
