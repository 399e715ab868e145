//! kruise's pod-readiness controller (`pkg/controller/podreadiness`): a pod carrying the
//! `KruisePodReady` readiness gate (which the pod webhook adds to pods kruise workloads control,
//! spec §4.1) but no `KruisePodReady` condition gets the condition `True`, so that it can become
//! Ready; lifecycle hooks with `markPodNotReady` later turn it `False` and back
//! ([`crate::core::lifecycle`]). Pods being deleted, pods without the gate and pods that already
//! have the condition (whatever its status) are left alone.

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

use crate::apis::keys::KRUISE_POD_READY;

/// Whether `pod` needs its `KruisePodReady` condition added.
pub fn needs_condition(pod: &Pod) -> bool {
    let gated = pod
        .spec
        .as_ref()
        .and_then(|s| s.readiness_gates.as_ref())
        .is_some_and(|gates| gates.iter().any(|g| g.condition_type == KRUISE_POD_READY));
    let has_condition = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| conditions.iter().any(|c| c.type_ == KRUISE_POD_READY));
    pod.metadata.deletion_timestamp.is_none() && gated && !has_condition
}

/// The strategic-merge patch of `pods/status` that adds the condition (conditions merge by type).
pub fn condition_patch(now: &str) -> Value {
    json!({"status": {"conditions": [{"type": KRUISE_POD_READY, "status": "True", "lastTransitionTime": now}]}})
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn pod(v: Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    /// kruise's `TestReconcile` (pod0: gate → True; pod1: no gate → nothing), plus the cases its
    /// reconciler skips.
    #[test]
    fn table() {
        let gate = json!([{"conditionType": "KruisePodReady"}]);
        let rows = [
            (
                "pod0: the gate and no condition",
                json!({"metadata": {"name": "pod0"}, "spec": {"containers": [], "readinessGates": gate}}),
                true,
            ),
            (
                "pod1: no gate",
                json!({"metadata": {"name": "pod1"}, "spec": {"containers": [], "readinessGates": []}}),
                false,
            ),
            (
                "another gate only",
                json!({"metadata": {"name": "p"}, "spec": {"containers": [], "readinessGates": [{"conditionType": "x"}]}}),
                false,
            ),
            (
                "condition already False (held by a hook)",
                json!({"metadata": {"name": "p"}, "spec": {"containers": [], "readinessGates": gate},
                "status": {"conditions": [{"type": "KruisePodReady", "status": "False"}]}}),
                false,
            ),
            (
                "condition already True",
                json!({"metadata": {"name": "p"}, "spec": {"containers": [], "readinessGates": gate},
                "status": {"conditions": [{"type": "KruisePodReady", "status": "True"}]}}),
                false,
            ),
            (
                "other conditions only",
                json!({"metadata": {"name": "p"}, "spec": {"containers": [], "readinessGates": gate},
                "status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
                true,
            ),
            (
                "being deleted",
                json!({"metadata": {"name": "p", "deletionTimestamp": "2026-01-01T00:00:00Z"},
                "spec": {"containers": [], "readinessGates": gate}}),
                false,
            ),
        ];
        for (name, p, want) in rows {
            assert_eq!(needs_condition(&pod(p)), want, "{name}");
        }
        let patch = condition_patch("2026-01-01T00:00:00Z");
        assert_eq!(patch["status"]["conditions"][0]["status"], "True");
        assert_eq!(patch["status"]["conditions"][0]["type"], "KruisePodReady");
    }
}
