//! Test-only builders and world for the SidecarSet planner: sets defaulted and hashed as the
//! webhook leaves them, pods injected by the real injection code (`core::sidecar::inject`), the
//! pod shapes of kruise's `sidecarset_strategy_test.go` (`factoryPods`), and a [`World`] around
//! the shared fake API (`core::rollout::testkit::FakeCluster`) that applies a plan's writes as
//! given (pins checked) and runs the kubelet on chosen pods, round after round.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod, PodCondition, VolumeMount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::plan::{Input, Plan, plan};
use super::pods::SetView;
use super::upgrade::upgraded_pod;
use crate::apis::SidecarSet;
use crate::apis::keys::{SIDECARSET_HASH, SIDECARSET_HASH_WITHOUT_IMAGE};
use crate::core::features::FeatureGates;
use crate::core::rollout::testkit::{FakeCluster, Refused};
use crate::core::sidecar::defaults::default_sidecarset;
use crate::core::sidecar::inject::{InjectionInput, plan_injection};

/// A timestamp `s` seconds after the epoch.
pub fn at(s: i64) -> Timestamp {
    Timestamp::from_second(s).unwrap()
}

/// A SidecarSet `test-sidecarset` (selector `app=nginx` unless given), defaulted and hashed.
pub fn sidecar_set(spec: Value) -> SidecarSet {
    let mut spec = spec;
    if spec.get("selector").is_none() {
        spec["selector"] = json!({"matchLabels": {"app": "nginx"}});
    }
    let mut set: SidecarSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
        "metadata": {"name": "test-sidecarset", "uid": "set-uid", "resourceVersion": "1", "generation": 1},
        "spec": spec,
    }))
    .unwrap();
    default_sidecarset(&mut set).unwrap();
    set
}

/// A set with one hot-upgrade sidecar `hot-sidecar`.
pub fn hot_set(image: &str, empty: &str) -> SidecarSet {
    sidecar_set(json!({"containers": [{"name": "hot-sidecar", "image": image,
        "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": empty}}]}))
}

/// A pod `name` in `default` (labels `app=nginx` plus `labels`, container `nginx:1` with a
/// mount and an env var) into which `set` was injected by the webhook's code.
pub fn injected_pod(name: &str, set: &SidecarSet, labels: &[(&str, &str)]) -> Pod {
    let mut all: BTreeMap<String, String> = [("app".to_string(), "nginx".to_string())].into();
    all.extend(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let mut pod = Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            resource_version: Some("1".into()),
            labels: Some(all),
            ..Default::default()
        },
        spec: Some(k8s_openapi::api::core::v1::PodSpec {
            containers: vec![Container {
                name: "nginx".into(),
                image: Some("nginx:1".into()),
                env: Some(vec![k8s_openapi::api::core::v1::EnvVar {
                    name: "APP".into(),
                    value: Some("web".into()),
                    ..Default::default()
                }]),
                volume_mounts: Some(vec![VolumeMount {
                    name: "data".into(),
                    mount_path: "/data".into(),
                    ..Default::default()
                }]),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    };
    let ns_labels: BTreeMap<String, String> = [("kubernetes.io/metadata.name".to_string(), "default".to_string())].into();
    let no_revisions = Vec::new;
    let input = InjectionInput {
        namespace_labels: &ns_labels,
        revisions: &no_revisions,
        draw: 0.0,
        now: "2023-11-14T22:13:20Z",
        sort_by_name: false,
    };
    let plan = plan_injection(&pod, &[Arc::new(set.clone())], &input).unwrap();
    plan.apply(&mut pod);
    pod
}

/// Sets (or adds) a container status.
pub fn set_status(pod: &mut Pod, name: &str, image: &str, image_id: &str, ready: bool) {
    let status = pod.status.get_or_insert_with(Default::default);
    let is_init = pod
        .spec
        .as_ref()
        .is_some_and(|s| s.init_containers.iter().flatten().any(|c| c.name == name));
    let list = if is_init { &mut status.init_container_statuses } else { &mut status.container_statuses };
    let list = list.get_or_insert_with(Vec::new);
    let s = ContainerStatus {
        name: name.into(),
        image: image.into(),
        image_id: image_id.into(),
        ready,
        ..Default::default()
    };
    match list.iter_mut().find(|c| c.name == name) {
        Some(c) => {
            c.image = s.image;
            c.image_id = s.image_id;
            c.ready = ready;
        }
        None => list.push(s),
    }
}

/// Sets the pod's Ready condition.
pub fn set_ready(pod: &mut Pod, ready: bool) {
    let status = pod.status.get_or_insert_with(Default::default);
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    let value = if ready { "True" } else { "False" };
    match conditions.iter_mut().find(|c| c.type_ == "Ready") {
        Some(c) => c.status = value.into(),
        None => conditions.push(PodCondition { type_: "Ready".into(), status: value.into(), ..Default::default() }),
    }
}

/// Running and Ready on `n1`, every container (and native sidecar) running its spec image with
/// imageID `sha-<image>`.
pub fn run(mut pod: Pod) -> Pod {
    pod.spec.get_or_insert_with(Default::default).node_name = Some("n1".into());
    let spec = pod.spec.clone().unwrap_or_default();
    for c in spec.containers.iter().chain(spec.init_containers.iter().flatten().filter(|c| c.restart_policy.is_some())) {
        let image = c.image.clone().unwrap_or_default();
        set_status(&mut pod, &c.name, &image, &format!("sha-{image}"), true);
    }
    pod.status.get_or_insert_with(Default::default).phase = Some("Running".into());
    set_ready(&mut pod, true);
    pod
}

const TEST_IMAGE_V1_ID: &str =
    "docker-pullable://test-image@sha256:f7988fb6c02e0ce69257d9bd9cf37ae20a60f1df7563c3a2a6abe24160306b8d";
const TEST_IMAGE_V2_ID: &str =
    "docker-pullable://test-image@sha256:f7988fb6c02e0ce69257d9bd9cf37ae20a60f1df7563c3a2a6abe24160306b8e";

/// kruise `createFactorySidecarSet`: hashes given, sidecar `test-sidecar` at `test-image:v2`.
pub fn factory_set(hash: &str, without_image: &str) -> SidecarSet {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
        "metadata": {"name": "test-sidecarset", "labels": {"app": "sidecar"}, "resourceVersion": "1",
            "annotations": {SIDECARSET_HASH: hash, SIDECARSET_HASH_WITHOUT_IMAGE: without_image}},
        "spec": {"selector": {"matchLabels": {"app": "sidecar"}},
            "containers": [{"name": "test-sidecar", "image": "test-image:v2"}]},
    }))
    .unwrap()
}

/// kruise `factoryPods(count, upgraded, upgradedAndReady)`: pods at hash `aaa`; the first
/// `upgraded` upgraded to `set` (image v2, hash entry, in-place state with the v1 imageID), the
/// first `ready` of those already running v2. Pod `i` is created at second `i` (newer last).
pub fn factory_pods(count: usize, upgraded: usize, ready: usize, set: &SidecarSet) -> Vec<Pod> {
    let view = SetView::new(set);
    (0..count)
        .map(|i| {
            let mut pod: Pod = serde_json::from_value(json!({
                "metadata": {"name": format!("pod-{i}"), "namespace": "default", "labels": {"app": "sidecar"},
                    "resourceVersion": "1", "creationTimestamp": format!("2023-01-01T00:{:02}:{:02}Z", i / 60 % 60, i % 60),
                    "annotations": {
                        SIDECARSET_HASH: r#"{"test-sidecarset":{"hash":"aaa","sidecarList":["test-sidecar"]}}"#,
                        SIDECARSET_HASH_WITHOUT_IMAGE: r#"{"test-sidecarset":{"hash":"without-aaa","sidecarList":["test-sidecar"]}}"#}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx:1.15.1"}, {"name": "test-sidecar", "image": "test-image:v1"}]},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                    "containerStatuses": [
                        {"name": "nginx", "image": "nginx:1.15.1", "ready": true, "restartCount": 0,
                         "imageID": "docker-pullable://nginx@sha256:a9286defaba7b3a519d585ba0e37d0b2cbee74ebfe590960b0b1d6a5e97d1e1d"},
                        {"name": "test-sidecar", "image": "test-image:v1", "imageID": TEST_IMAGE_V1_ID, "ready": true, "restartCount": 0}]},
            }))
            .unwrap();
            // Creation times further apart than a minute for large counts.
            pod.metadata.creation_timestamp = Some(Time(at(1_600_000_000 + i as i64)));
            if i < upgraded {
                pod = upgraded_pod(&view, &pod, "", at(1_700_000_000)).unwrap();
                if i < ready {
                    set_status(&mut pod, "test-sidecar", "test-image:v2", TEST_IMAGE_V2_ID, true);
                }
            }
            pod
        })
        .collect()
}

/// kruise's `Random`: a deterministic shuffle.
pub fn shuffled(mut pods: Vec<Pod>, seed: u64) -> Vec<Pod> {
    let mut x = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407) | 1;
    for i in (1..pods.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let j = (x % (i as u64 + 1)) as usize;
        pods.swap(i, j);
    }
    pods
}

/// A fake cluster with one SidecarSet, planned and applied round after round.
pub struct World {
    pub cluster: FakeCluster,
    pub set: SidecarSet,
    pub namespace_labels: BTreeMap<String, BTreeMap<String, String>>,
    pub gates: FeatureGates,
}

impl World {
    /// `n` running pods injected with `set` (`pod-<i>`, label `zone=z<i mod 3>`).
    pub fn new(set: SidecarSet, n: usize) -> World {
        let mut cluster = FakeCluster::default();
        for i in 0..n {
            let zone = format!("z{}", i % 3);
            let mut p = run(injected_pod(&format!("pod-{i}"), &set, &[("zone", &zone)]));
            p.metadata.creation_timestamp = Some(Time(at(1_600_000_000 + i as i64)));
            cluster.pods.push(p);
        }
        let namespace_labels =
            [("default".to_string(), [("kubernetes.io/metadata.name".to_string(), "default".to_string())].into())]
                .into();
        World { cluster, set, namespace_labels, gates: FeatureGates::default() }
    }

    /// Plans a round.
    pub fn plan(&self) -> Plan {
        let pods: Vec<&Pod> = self.cluster.pods.iter().collect();
        let revisions: Vec<&k8s_openapi::api::apps::v1::ControllerRevision> = self.cluster.revisions.iter().collect();
        plan(&Input {
            set: &self.set,
            pods: &pods,
            namespace_labels: &self.namespace_labels,
            revisions: &revisions,
            manager_namespace: "kruise-system",
            gates: &self.gates,
            now: self.cluster.now,
        })
    }

    /// Applies a plan as the controller does: revisions, then each pod action (a refused action
    /// does not stop the others), then the status. Returns the refusals.
    pub fn apply(&mut self, plan: &Plan) -> Vec<Refused> {
        let mut refused = Vec::new();
        let mut latest = BTreeMap::new();
        for w in &plan.revision_writes {
            if let Err(e) = self.cluster.apply_write(&mut self.set, w, &mut latest) {
                refused.push(e);
            }
        }
        for action in plan.pod_actions.values().flatten() {
            if let Err(e) = self.cluster.apply_actions(&mut self.set, std::slice::from_ref(action)) {
                refused.push(e);
            }
        }
        if let Some(w) = &plan.status_write {
            if let Err(e) = self.cluster.apply_write(&mut self.set, w, &mut latest) {
                refused.push(e);
            }
        }
        refused
    }

    /// The kubelet runs on the pods `pick` chooses (the others lag behind).
    pub fn kubelet(&mut self, pick: impl Fn(&Pod) -> bool) {
        let all = std::mem::take(&mut self.cluster.pods);
        let (now, later): (Vec<Pod>, Vec<Pod>) = all.into_iter().partition(|p| pick(p));
        self.cluster.pods = now;
        self.cluster.kubelet();
        self.cluster.pods.extend(later);
        self.cluster.pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    }

    /// Changes the set's spec as a user would (the webhook re-hashes; generation and
    /// resourceVersion move).
    pub fn edit(&mut self, f: impl FnOnce(&mut SidecarSet)) {
        f(&mut self.set);
        default_sidecarset(&mut self.set).unwrap();
        let meta = &mut self.set.metadata;
        meta.generation = Some(meta.generation.unwrap_or(1) + 1);
        let rv: u64 = meta.resource_version.as_deref().unwrap_or("1").parse().unwrap_or(1);
        meta.resource_version = Some((rv + 1000).to_string());
    }
}
