//! What the ContainerRecreateRequest webhook decides (kruise
//! `pkg/webhook/containerrecreaterequest/mutating/crr_mutating_handler.go`, `Handle` and
//! `injectPodIntoContainerRecreateRequest`): on CREATE the defaults (`strategy`, `failurePolicy:
//! Fail`, the pod's `terminationGracePeriodSeconds`), the labels (active, node name, pod uid) and
//! per container its `statusContext` (id and restart count now), its preStop hook and, for an HTTP
//! preStop, its ports; on UPDATE the spec and the pod-uid / node-name labels (and an acquired
//! unready annotation) are immutable. Every refusal carries kruise's message and HTTP code.
//!
//! The container is looked up like kruise's `util.GetContainer` (init containers, then
//! containers) and its status like `util.GetContainerStatus` (`status.containerStatuses` only), so
//! naming an init container is refused with kruise's "not found ... containerStatus" message. The
//! Node is not read: kruise reads it only to copy the virtual-kubelet label, which the caller
//! passes as `node_labels` when it has them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

use crate::apis::containerrecreaterequest::{
    ACTIVE_KEY, ContainerRecreateRequest, ContainerRecreateRequestContainerContext, FAILURE_POLICY_FAIL,
    FAILURE_POLICY_IGNORE, NODE_NAME_KEY, POD_UID_KEY, ProbeHandler, UNREADY_ACQUIRED_KEY,
};
use crate::core::pods;

/// kruise's `minDeadlineSeconds`.
pub const MIN_DEADLINE_SECONDS: i64 = 3;
/// kruise `util.VirtualKubeletLabelKey`.
pub const VIRTUAL_KUBELET_KEY: &str = "type";
/// kruise `util.VirtualKubeletLabelValue`.
pub const VIRTUAL_KUBELET_VALUE: &str = "virtual-kubelet";

/// A refusal: HTTP code and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// 400, 403 or 500.
    pub code: u16,
    /// kruise's message.
    pub message: String,
}

fn bad(message: impl Into<String>) -> Refusal {
    Refusal { code: 400, message: message.into() }
}

fn forbidden(message: impl Into<String>) -> Refusal {
    Refusal { code: 403, message: message.into() }
}

/// The checks of a CREATE that need no pod, and the defaults that need none (kruise `Handle`
/// before the pod is read).
pub fn precheck_create(crr: &mut ContainerRecreateRequest) -> Result<(), Refusal> {
    if crr.spec.pod_name.is_empty() {
        return Err(bad("podName can not be empty"));
    }
    let strategy = crr.spec.strategy.get_or_insert_with(Default::default);
    crr.metadata.labels.get_or_insert_with(BTreeMap::new).insert(ACTIVE_KEY.into(), "true".into());
    if crr.spec.containers.is_empty() {
        return Err(bad("containers list can not be null"));
    }
    if crr.spec.active_deadline_seconds.is_some_and(|d| d < MIN_DEADLINE_SECONDS) {
        return Err(bad(format!("activeDeadlineSeconds can not be less than {MIN_DEADLINE_SECONDS}s")));
    }
    if strategy.termination_grace_period_seconds.is_some_and(|s| s < 0) {
        return Err(bad("terminationGracePeriodSeconds must be non-negative integer"));
    }
    if strategy.unready_grace_period_seconds.is_some_and(|s| s < 0) {
        return Err(bad("unreadyGracePeriodSeconds must be non-negative integer"));
    }
    match strategy.failure_policy.as_str() {
        "" => strategy.failure_policy = FAILURE_POLICY_FAIL.into(),
        FAILURE_POLICY_FAIL | FAILURE_POLICY_IGNORE => {}
        other => return Err(bad(format!("unknown failurePolicy {other}"))),
    }
    Ok(())
}

/// The rest of a CREATE once the pod was read (`None`: not found): kruise's checks of the pod
/// and `injectPodIntoContainerRecreateRequest`.
pub fn admit_with_pod(
    crr: &mut ContainerRecreateRequest,
    pod: Option<&Pod>,
    node_labels: Option<&BTreeMap<String, String>>,
) -> Result<(), Refusal> {
    let Some(pod) = pod else {
        return Err(bad(format!("no found Pod named {}", crr.spec.pod_name)));
    };
    let sidecar_terminated = pods::condition(pod, "SidecarTerminated").is_some();
    if !pods::is_active(pod) && !sidecar_terminated {
        return Err(bad("not allowed to recreate containers in an inactive Pod"));
    }
    let node = pod.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
    if node.is_empty() {
        return Err(bad("not allowed to recreate containers in a pending Pod"));
    }
    inject_pod(crr, pod, &node, node_labels).map_err(bad)
}

/// kruise `injectPodIntoContainerRecreateRequest`.
pub fn inject_pod(
    crr: &mut ContainerRecreateRequest,
    pod: &Pod,
    node: &str,
    node_labels: Option<&BTreeMap<String, String>>,
) -> Result<(), String> {
    let labels = crr.metadata.labels.get_or_insert_with(BTreeMap::new);
    labels.insert(NODE_NAME_KEY.into(), node.into());
    labels.insert(POD_UID_KEY.into(), pod.metadata.uid.clone().unwrap_or_default());
    if node_labels.and_then(|l| l.get(VIRTUAL_KUBELET_KEY)).map(String::as_str) == Some(VIRTUAL_KUBELET_VALUE) {
        labels.insert(VIRTUAL_KUBELET_KEY.into(), VIRTUAL_KUBELET_VALUE.into());
    }
    let spec = pod.spec.as_ref();
    let strategy = crr.spec.strategy.get_or_insert_with(Default::default);
    if strategy.termination_grace_period_seconds.is_none() {
        strategy.termination_grace_period_seconds = spec.and_then(|s| s.termination_grace_period_seconds);
    }
    let mut seen = std::collections::BTreeSet::new();
    for c in &mut crr.spec.containers {
        if !seen.insert(c.name.clone()) {
            return Err(format!("can not recreate {} multi times", c.name));
        }
        if c.pre_stop.is_some() || !c.ports.is_empty() || c.status_context.is_some() {
            return Err("preStop, ports, statusContext in container are ready-only fields".into());
        }
        let pod_container = spec
            .and_then(|s| s.init_containers.iter().flatten().chain(s.containers.iter()).find(|pc| pc.name == c.name));
        let Some(pod_container) = pod_container else {
            return Err(format!("container {} not found in Pod", c.name));
        };
        let status = match pods::container_status(pod, &c.name) {
            None => return Err(format!("not found {} containerStatus in Pod Status", c.name)),
            Some(s) => s,
        };
        let container_id = status.container_id.clone().unwrap_or_default();
        if container_id.is_empty() {
            return Err(format!(
                "no containerID in {} containerStatus, maybe the container has not been initialized",
                c.name
            ));
        }
        if let Some(pre_stop) = pod_container.lifecycle.as_ref().and_then(|l| l.pre_stop.as_ref()) {
            c.pre_stop = Some(ProbeHandler {
                exec: pre_stop.exec.clone(),
                http_get: pre_stop.http_get.clone(),
                tcp_socket: pre_stop.tcp_socket.clone(),
            });
        }
        if c.pre_stop.as_ref().is_some_and(|p| p.http_get.is_some()) {
            c.ports = pod_container.ports.clone().unwrap_or_default();
        }
        c.status_context =
            Some(ContainerRecreateRequestContainerContext { container_id, restart_count: status.restart_count });
    }
    Ok(())
}

/// An UPDATE: 403 when the spec, the pod-uid or node-name label, or an acquired unready annotation
/// changed.
pub fn admit_update(new: &ContainerRecreateRequest, old: &ContainerRecreateRequest) -> Result<(), Refusal> {
    admit_update_v1beta1(new, old)?;
    let anno = |o: &ContainerRecreateRequest| {
        o.metadata.annotations.as_ref().and_then(|a| a.get(UNREADY_ACQUIRED_KEY)).cloned().unwrap_or_default()
    };
    if !anno(old).is_empty() && anno(new) != anno(old) {
        return Err(forbidden(format!("not allowed to update immutable annotation {UNREADY_ACQUIRED_KEY}")));
    }
    Ok(())
}

/// An UPDATE of a v1beta1 request (kruise `handleV1beta1`; its spec is v1alpha1's, so it is
/// decoded on the v1alpha1 model): the spec and the pod-uid and node-name labels are immutable;
/// the `unready-acquired` annotation is not checked (v1beta1 keeps that time in a condition).
pub fn admit_update_v1beta1(new: &ContainerRecreateRequest, old: &ContainerRecreateRequest) -> Result<(), Refusal> {
    if new.spec != old.spec {
        return Err(forbidden("spec of ContainerRecreateRequest is immutable"));
    }
    let label = |o: &ContainerRecreateRequest, k: &str| o.metadata.labels.as_ref().and_then(|l| l.get(k)).cloned();
    for key in [POD_UID_KEY, NODE_NAME_KEY] {
        if label(new, key) != label(old, key) {
            return Err(forbidden(format!("not allowed to update immutable label {key}")));
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn pod(v: Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    fn crr(v: Value) -> ContainerRecreateRequest {
        serde_json::from_value(v).unwrap()
    }

    fn base_pod() -> Pod {
        pod(json!({
            "metadata": {"name": "test-pod", "namespace": "default", "uid": "pod-uid-123"},
            "spec": {"nodeName": "test-node", "terminationGracePeriodSeconds": 20,
                "initContainers": [{"name": "init"}],
                "containers": [
                    {"name": "main", "lifecycle": {"preStop": {"exec": {"command": ["sleep", "1"]}}}},
                    {"name": "web", "ports": [{"containerPort": 80}],
                     "lifecycle": {"preStop": {"httpGet": {"path": "/stop", "port": 80}}}},
                    {"name": "new"}
                ]},
            "status": {"phase": "Running", "containerStatuses": [
                {"name": "main", "containerID": "docker://abc123", "restartCount": 2, "image": "", "imageID": "", "ready": true},
                {"name": "web", "containerID": "docker://def", "restartCount": 0, "image": "", "imageID": "", "ready": true},
                {"name": "new", "restartCount": 0, "image": "", "imageID": "", "ready": false}
            ]}
        }))
    }

    fn request(containers: Value) -> ContainerRecreateRequest {
        crr(json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "ContainerRecreateRequest",
            "metadata": {"name": "test-crr", "namespace": "default"},
            "spec": {"podName": "test-pod", "containers": containers}}))
    }

    type Labels = Option<BTreeMap<String, String>>;

    /// kruise `TestInjectPodIntoContainerRecreateRequest_VirtualKubeletLabel`.
    #[test]
    fn virtual_kubelet_label() {
        let rows: [(&str, Labels, bool); 3] = [
            (
                "node has virtual-kubelet label",
                Some([(VIRTUAL_KUBELET_KEY.to_string(), VIRTUAL_KUBELET_VALUE.to_string())].into()),
                true,
            ),
            ("node does not have it", Some([("foo".to_string(), "bar".to_string())].into()), false),
            ("node not found", None, false),
        ];
        for (name, node, expect) in rows {
            let mut c = request(json!([{"name": "main"}]));
            inject_pod(&mut c, &base_pod(), "test-node", node.as_ref()).unwrap();
            let has = c.metadata.labels.as_ref().unwrap().get(VIRTUAL_KUBELET_KEY).is_some();
            assert_eq!(has, expect, "{name}");
        }
    }

    #[test]
    fn create_defaults_and_injection() {
        let mut c = request(json!([{"name": "main"}, {"name": "web"}]));
        precheck_create(&mut c).unwrap();
        admit_with_pod(&mut c, Some(&base_pod()), None).unwrap();
        let labels = c.metadata.labels.clone().unwrap();
        assert_eq!(labels[ACTIVE_KEY], "true");
        assert_eq!(labels[NODE_NAME_KEY], "test-node");
        assert_eq!(labels[POD_UID_KEY], "pod-uid-123");
        let s = c.spec.strategy.clone().unwrap();
        assert_eq!(s.failure_policy, "Fail");
        assert_eq!(s.termination_grace_period_seconds, Some(20));
        let main = &c.spec.containers[0];
        assert_eq!(main.status_context.as_ref().unwrap().container_id, "docker://abc123");
        assert_eq!(main.status_context.as_ref().unwrap().restart_count, 2);
        assert!(main.pre_stop.as_ref().unwrap().exec.is_some());
        assert!(main.ports.is_empty(), "ports only for an HTTP preStop");
        assert_eq!(c.spec.containers[1].ports.len(), 1);
    }

    #[test]
    fn create_refusals() {
        let with = |f: &dyn Fn(&mut ContainerRecreateRequest)| {
            let mut c = request(json!([{"name": "main"}]));
            f(&mut c);
            precheck_create(&mut c).and_then(|()| admit_with_pod(&mut c, Some(&base_pod()), None))
        };
        let rows: Vec<(&str, Result<(), Refusal>)> = vec![
            ("no pod name", with(&|c| c.spec.pod_name.clear())),
            ("no containers", with(&|c| c.spec.containers.clear())),
            ("deadline 2", with(&|c| c.spec.active_deadline_seconds = Some(2))),
            (
                "negative grace",
                with(&|c| {
                    c.spec.strategy.get_or_insert_with(Default::default).termination_grace_period_seconds = Some(-1)
                }),
            ),
            (
                "negative unready",
                with(&|c| c.spec.strategy.get_or_insert_with(Default::default).unready_grace_period_seconds = Some(-1)),
            ),
            ("policy", with(&|c| c.spec.strategy.get_or_insert_with(Default::default).failure_policy = "Maybe".into())),
            ("twice", with(&|c| c.spec.containers.push(c.spec.containers[0].clone()))),
            ("missing", with(&|c| c.spec.containers[0].name = "sidecar".into())),
            ("init has no containerStatus", with(&|c| c.spec.containers[0].name = "init".into())),
            ("not started", with(&|c| c.spec.containers[0].name = "new".into())),
            ("read-only", with(&|c| c.spec.containers[0].status_context = Some(Default::default()))),
        ];
        let want = [
            "podName can not be empty",
            "containers list can not be null",
            "activeDeadlineSeconds can not be less than 3s",
            "terminationGracePeriodSeconds must be non-negative integer",
            "unreadyGracePeriodSeconds must be non-negative integer",
            "unknown failurePolicy Maybe",
            "can not recreate main multi times",
            "container sidecar not found in Pod",
            "not found init containerStatus in Pod Status",
            "no containerID in new containerStatus, maybe the container has not been initialized",
            "preStop, ports, statusContext in container are ready-only fields",
        ];
        for ((name, got), want) in rows.into_iter().zip(want) {
            assert_eq!(got, Err(bad(want)), "{name}");
        }
    }

    #[test]
    fn pod_refusals() {
        let mut c = request(json!([{"name": "main"}]));
        precheck_create(&mut c).unwrap();
        assert_eq!(admit_with_pod(&mut c.clone(), None, None), Err(bad("no found Pod named test-pod")));
        let mut done = base_pod();
        done.status.as_mut().unwrap().phase = Some("Succeeded".into());
        assert_eq!(
            admit_with_pod(&mut c.clone(), Some(&done), None),
            Err(bad("not allowed to recreate containers in an inactive Pod"))
        );
        let mut pending = base_pod();
        pending.spec.as_mut().unwrap().node_name = None;
        assert_eq!(
            admit_with_pod(&mut c, Some(&pending), None),
            Err(bad("not allowed to recreate containers in a pending Pod"))
        );
    }

    #[test]
    fn updates() {
        let mut old = request(json!([{"name": "main"}]));
        precheck_create(&mut old).unwrap();
        admit_with_pod(&mut old, Some(&base_pod()), None).unwrap();
        assert_eq!(admit_update(&old, &old), Ok(()));
        let mut spec = old.clone();
        spec.spec.ttl_seconds_after_finished = Some(1);
        assert_eq!(admit_update(&spec, &old), Err(forbidden("spec of ContainerRecreateRequest is immutable")));
        let mut uid = old.clone();
        uid.metadata.labels.as_mut().unwrap().insert(POD_UID_KEY.into(), "x".into());
        assert_eq!(
            admit_update(&uid, &old),
            Err(forbidden("not allowed to update immutable label crr.apps.kruise.io/pod-uid"))
        );
        let mut node = old.clone();
        node.metadata.labels.as_mut().unwrap().remove(NODE_NAME_KEY);
        assert_eq!(
            admit_update(&node, &old),
            Err(forbidden("not allowed to update immutable label crr.apps.kruise.io/node-name"))
        );
        let mut acquired = old.clone();
        acquired.metadata.annotations = Some([(UNREADY_ACQUIRED_KEY.to_string(), "t1".to_string())].into());
        assert_eq!(admit_update(&acquired, &old), Ok(()), "setting it is allowed");
        let mut changed = acquired.clone();
        changed.metadata.annotations = Some([(UNREADY_ACQUIRED_KEY.to_string(), "t2".to_string())].into());
        assert!(admit_update(&changed, &acquired).is_err());
        assert_eq!(admit_update_v1beta1(&changed, &acquired), Ok(()), "v1beta1: not checked, as kruise HEAD");
        assert_eq!(admit_update_v1beta1(&spec, &old), Err(forbidden("spec of ContainerRecreateRequest is immutable")));
        assert_eq!(
            admit_update_v1beta1(&uid, &old),
            Err(forbidden("not allowed to update immutable label crr.apps.kruise.io/pod-uid"))
        );
        let mut active_gone = old.clone();
        active_gone.metadata.labels.as_mut().unwrap().remove(ACTIVE_KEY);
        assert_eq!(admit_update(&active_gone, &old), Ok(()), "the manager drops the active label");
    }
}
