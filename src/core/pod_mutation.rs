//! The pod mutators of `mpod.kb.io` besides SidecarSet injection (spec §4.1): (1) the
//! `KruisePodReady` readiness gate for pods a kruise workload controls, and (4) container launch
//! priority, which injects `KRUISE_CONTAINER_BARRIER` into every container when the pod asks for
//! ordered start (annotation `apps.kruise.io/container-launch-priority: Ordered`) or its
//! containers declare different `KRUISE_CONTAINER_PRIORITY` values. Both are idempotent: the gate
//! is added once, and a container that already carries a barrier keeps it while only those
//! without one get theirs. On a re-invocation SidecarSet injection has just replaced the injected
//! sidecars with freshly built copies, which lost their barrier: they get the same one back,
//! because priorities follow container positions and declared values, which the re-invocation
//! does not change (issue 13). Kruise appends a second barrier to every container instead.

use k8s_openapi::api::core::v1::{Container, Pod, PodReadinessGate};

use crate::apis::keys::KRUISE_POD_READY;

/// Pod annotation asking for ordered container start.
pub const LAUNCH_PRIORITY_ANNOTATION: &str = "apps.kruise.io/container-launch-priority";
/// Env var users set on containers to declare a launch priority.
pub const PRIORITY_ENV: &str = "KRUISE_CONTAINER_PRIORITY";
/// Env var the webhook injects: the barrier kruise-daemon releases in priority order.
pub const BARRIER_ENV: &str = "KRUISE_CONTAINER_BARRIER";

/// Whether the pod's controller is a kruise workload (`apps.kruise.io` group).
pub fn owned_by_kruise(pod: &Pod) -> bool {
    pod.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .is_some_and(|r| r.api_version.split_once('/').map_or("", |(g, _)| g) == crate::apis::GROUP)
}

/// `injectPodReadinessGate`: adds `KruisePodReady` when absent; returns whether it added it.
pub fn inject_readiness_gate(pod: &mut Pod) -> bool {
    let spec = pod.spec.get_or_insert_with(Default::default);
    let gates = spec.readiness_gates.get_or_insert_with(Vec::new);
    if gates.iter().any(|g| g.condition_type == KRUISE_POD_READY) {
        return false;
    }
    gates.push(PodReadinessGate { condition_type: KRUISE_POD_READY.into() });
    true
}

/// Why launch priority cannot be set (the webhook answers 500, as kruise).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("strconv.Atoi: parsing {value}: invalid syntax")]
pub struct PriorityError {
    /// The quoted bad value.
    pub value: String,
}

/// `containerLaunchPriorityInitialization` for a CREATE. `name_suffix` completes a
/// `generateName` when the pod has no name yet (kruise generates 5 random characters), because
/// the barrier ConfigMap is named after the pod. Containers that already carry a barrier keep
/// it (see the module comment). Returns whether the pod changed.
pub fn init_launch_priority(pod: &mut Pod, name_suffix: &str) -> Result<bool, PriorityError> {
    let Some(spec) = pod.spec.as_ref() else { return Ok(false) };
    if spec.containers.len() <= 1 || spec.containers.iter().all(has_barrier) {
        return Ok(false);
    }
    let ordered = pod.metadata.annotations.as_ref().and_then(|a| a.get(LAUNCH_PRIORITY_ANNOTATION)).map(String::as_str)
        == Some("Ordered");
    let priorities: Vec<i64> = if ordered {
        (0..spec.containers.len() as i64).map(|i| -i).collect()
    } else {
        let mut out = Vec::with_capacity(spec.containers.len());
        for c in &spec.containers {
            let mut p = 0;
            for e in c.env.iter().flatten().filter(|e| e.name == PRIORITY_ENV) {
                let v = e.value.as_deref().unwrap_or("");
                p = v.parse::<i64>().map_err(|_| PriorityError { value: crate::compat::field::go_quote(v) })?;
            }
            out.push(p);
        }
        if out.iter().all(|p| *p == out[0]) {
            return Ok(false);
        }
        out
    };
    if pod.metadata.name.as_deref().unwrap_or("").is_empty()
        && let Some(prefix) = pod.metadata.generate_name.as_deref().filter(|g| !g.is_empty())
    {
        pod.metadata.name = Some(format!("{prefix}{name_suffix}"));
    }
    let name = pod.metadata.name.clone().unwrap_or_default();
    let Some(spec) = pod.spec.as_mut() else { return Ok(false) };
    for (c, p) in spec.containers.iter_mut().zip(priorities).filter(|(c, _)| !has_barrier(c)) {
        c.env.get_or_insert_with(Vec::new).push(crate::core::launchpriority::barrier_env(p, &name));
    }
    Ok(true)
}

/// Whether a container carries `KRUISE_CONTAINER_BARRIER`.
fn has_barrier(c: &Container) -> bool {
    c.env.iter().flatten().any(|e| e.name == BARRIER_ENV)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn readiness_gate_once_and_ownership() {
        let mut p = pod(json!({"metadata": {"ownerReferences": [
            {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "c", "uid": "u", "controller": true}]},
            "spec": {"containers": []}}));
        assert!(owned_by_kruise(&p));
        assert!(inject_readiness_gate(&mut p));
        assert!(!inject_readiness_gate(&mut p));
        assert_eq!(p.spec.unwrap().readiness_gates.unwrap().len(), 1);
        let other = pod(json!({"metadata": {"ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "r", "uid": "u", "controller": true},
            {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "c", "uid": "u2"}]}}));
        assert!(!owned_by_kruise(&other));
    }

    #[test]
    fn launch_priority() {
        let mut ordered =
            pod(json!({"metadata": {"generateName": "web-", "annotations": {LAUNCH_PRIORITY_ANNOTATION: "Ordered"}},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}]}}));
        assert!(init_launch_priority(&mut ordered, "xyz12").unwrap());
        assert_eq!(ordered.metadata.name.as_deref(), Some("web-xyz12"));
        let env = |p: &Pod, i: usize| serde_json::to_value(&p.spec.as_ref().unwrap().containers[i].env).unwrap();
        assert_eq!(
            env(&ordered, 1)[0]["valueFrom"]["configMapKeyRef"],
            json!({"name": "web-xyz12-barrier", "key": "p_-1"})
        );
        assert!(!init_launch_priority(&mut ordered, "other").unwrap(), "idempotent");

        // A re-invocation after injection replaced a sidecar with a fresh copy that lost its
        // barrier: only that container gets one, the one it had (issue 13).
        let mut injected = pod(
            json!({"metadata": {"name": "p", "annotations": {LAUNCH_PRIORITY_ANNOTATION: "Ordered"}},
            "spec": {"containers": [{"name": "s", "env": [{"name": "IS_INJECTED", "value": "true"}]}, {"name": "a"}, {"name": "b"}]}}),
        );
        let fresh_sidecar = injected.spec.as_ref().unwrap().containers[0].clone();
        assert!(init_launch_priority(&mut injected, "").unwrap());
        let mut reinvoked = injected.clone();
        reinvoked.spec.as_mut().unwrap().containers[0] = fresh_sidecar;
        assert!(init_launch_priority(&mut reinvoked, "").unwrap());
        assert_eq!(reinvoked, injected, "the sidecar gets back the barrier it had");
        assert_eq!(env(&injected, 0)[1]["valueFrom"]["configMapKeyRef"]["key"], "p_0");
        assert_eq!(env(&injected, 2)[0]["valueFrom"]["configMapKeyRef"]["key"], "p_-2");

        let mut declared = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "a", "env": [{"name": PRIORITY_ENV, "value": "10"}]}, {"name": "b"}]}}));
        assert!(init_launch_priority(&mut declared, "").unwrap());
        assert_eq!(env(&declared, 0)[1]["valueFrom"]["configMapKeyRef"]["key"], "p_10");
        assert_eq!(env(&declared, 1)[0]["valueFrom"]["configMapKeyRef"]["key"], "p_0");

        let mut same = pod(json!({"spec": {"containers": [
            {"name": "a", "env": [{"name": PRIORITY_ENV, "value": "1"}]}, {"name": "b", "env": [{"name": PRIORITY_ENV, "value": "1"}]}]}}));
        assert!(!init_launch_priority(&mut same, "").unwrap());
        let mut bad = pod(
            json!({"spec": {"containers": [{"name": "a", "env": [{"name": PRIORITY_ENV, "value": "x"}]}, {"name": "b"}]}}),
        );
        assert_eq!(
            init_launch_priority(&mut bad, "").unwrap_err().to_string(),
            "strconv.Atoi: parsing \"x\": invalid syntax"
        );
    }
}
