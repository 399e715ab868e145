//! What the manager's ContainerRecreateRequest controller does with one request (kruise
//! `pkg/controller/containerrecreaterequest/crr_controller.go`, `Reconcile`): a finished request
//! releases the pod's not-ready key, drops its active label and is deleted after
//! `ttlSecondsAfterFinished`; a request whose pod is gone (deleted, being deleted, another uid)
//! completes with "pod has gone"; one the daemon has not answered for a minute, or past its
//! `activeDeadlineSeconds` (counted from creation), completes with kruise's message — phase
//! `Completed`, as kruise writes it, never `Failed`; a recreating one gets the pod's running
//! container statuses copied into its `sync-container-statuses` annotation (the daemon reads
//! readiness there) and, with `unreadyGracePeriodSeconds`, the pod marked not ready through the
//! `KruisePodReady` readiness gate before the daemon may stop anything.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::apis::containerrecreaterequest::{
    ACTIVE_KEY, ContainerRecreateRequest, PHASE_RECREATING, POD_UID_KEY, SYNC_CONTAINER_STATUSES_KEY,
    SyncContainerStatus, UNREADY_ACQUIRED_KEY,
};
use crate::core::lifecycle::NotReadyMessage;
use crate::core::pods;

/// kruise's `responseTimeout`: how long the daemon may leave a new request without a phase.
pub const RESPONSE_TIMEOUT: SignedDuration = SignedDuration::from_secs(60);

/// Message: the pod is gone.
pub const POD_GONE: &str = "pod has gone";
/// Message: the daemon never answered.
pub const NO_RESPONSE: &str = "daemon has not responded for a long time";
/// Message: `activeDeadlineSeconds` passed.
pub const DEADLINE_EXCEEDED: &str = "recreating has exceeded the activeDeadlineSeconds";

/// One write of a round, in order.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Remove the request's key from the pod's `KruisePodReady` condition (when the pod still has
    /// the gate) and the finalizer from the request.
    ReleaseNotReady,
    /// Drop the active label.
    RemoveActiveLabel,
    /// Delete the request (its TTL passed).
    Delete,
    /// `status`: phase Completed, completionTime now, this message.
    Complete(String),
    /// Set the `sync-container-statuses` annotation to this text.
    SyncStatuses(String),
    /// Add the finalizer (when the pod has the readiness gate), the pod's not-ready key, then
    /// the `unready-acquired` annotation at now.
    AcquireNotReady {
        /// Whether the pod has the `KruisePodReady` gate (else only the annotation is written).
        gated: bool,
    },
}

/// A round: writes, and when to look again.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// The writes.
    pub actions: Vec<Action>,
    /// Look again after this.
    pub requeue: Option<SignedDuration>,
}

/// The not-ready key of a request on its pod (kruise `getReadinessMessage`).
pub fn readiness_message(crr: &ContainerRecreateRequest) -> NotReadyMessage {
    let ns = crr.metadata.namespace.as_deref().unwrap_or_default();
    let name = crr.metadata.name.as_deref().unwrap_or_default();
    NotReadyMessage { user_agent: "ContainerRecreateRequest".into(), key: format!("{ns}/{name}") }
}

fn label<'a>(crr: &'a ContainerRecreateRequest, key: &str) -> Option<&'a str> {
    crr.metadata.labels.as_ref().and_then(|l| l.get(key)).map(String::as_str)
}

fn annotation<'a>(crr: &'a ContainerRecreateRequest, key: &str) -> &'a str {
    crr.metadata.annotations.as_ref().and_then(|a| a.get(key)).map(String::as_str).unwrap_or_default()
}

/// Whether the request holds the pod not ready (its finalizer).
pub fn holds_not_ready(crr: &ContainerRecreateRequest) -> bool {
    crr.metadata.finalizers.iter().flatten().any(|f| f == UNREADY_ACQUIRED_KEY)
}

/// The `sync-container-statuses` text for `pod` (kruise `syncContainerStatuses`): the requested
/// containers running since the request was created, as Go's `json.Marshal` writes them.
pub fn sync_statuses(crr: &ContainerRecreateRequest, pod: &Pod) -> String {
    let created = crr.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let mut out = Vec::new();
    for c in &crr.spec.containers {
        let Some(s) = pods::container_status(pod, &c.name) else { continue };
        let Some(running) = s.state.as_ref().and_then(|st| st.running.as_ref()) else { continue };
        let started = running.started_at.as_ref().map(|t| t.0);
        // metav1.Time.Before on a nil startedAt is "before" anything.
        let before = match (started, created) {
            (None, _) => true,
            (Some(s), Some(c)) => s < c,
            (Some(_), None) => false,
        };
        if before {
            continue;
        }
        out.push(SyncContainerStatus {
            name: s.name.clone(),
            ready: s.ready,
            restart_count: s.restart_count,
            container_id: s.container_id.clone().unwrap_or_default(),
        });
    }
    serde_json::to_string(&out).unwrap_or_else(|_| "[]".into())
}

fn finished(crr: &ContainerRecreateRequest) -> Option<Timestamp> {
    crr.status.as_ref().and_then(|s| s.completion_time.as_ref()).map(|t| t.0)
}

/// kruise `Reconcile` for one request; `pod` is the pod of the request's `podName` (`None`: not
/// found).
pub fn plan(crr: &ContainerRecreateRequest, pod: Option<&Pod>, now: Timestamp) -> Plan {
    let mut plan = Plan::default();
    let completed = finished(crr);
    if crr.metadata.deletion_timestamp.is_some() || completed.is_some() {
        if holds_not_ready(crr) {
            plan.actions.push(Action::ReleaseNotReady);
        }
        if crr.metadata.deletion_timestamp.is_some() {
            return plan;
        }
        if label(crr, ACTIVE_KEY).is_some() {
            plan.actions.push(Action::RemoveActiveLabel);
            return plan;
        }
        if let (Some(ttl), Some(done)) = (crr.spec.ttl_seconds_after_finished, completed) {
            let left = SignedDuration::from_secs(i64::from(ttl)) - now.duration_since(done);
            if left <= SignedDuration::ZERO {
                plan.actions.push(Action::Delete);
            } else {
                plan.requeue = Some(left);
            }
        }
        return plan;
    }
    let pod_uid = pod.and_then(|p| p.metadata.uid.as_deref()).unwrap_or_default();
    let gone = pod.is_none_or(|p| p.metadata.deletion_timestamp.is_some()) || Some(pod_uid) != label(crr, POD_UID_KEY);
    if gone {
        plan.actions.push(Action::Complete(POD_GONE.into()));
        return plan;
    }
    let created = crr.metadata.creation_timestamp.as_ref().map_or(now, |t| t.0);
    let age = now.duration_since(created);
    let mut requeue: Option<SignedDuration> = None;
    let mut soon = |d: SignedDuration| requeue = Some(requeue.map_or(d, |r| r.min(d)));
    let phase = crr.status.as_ref().map(|s| s.phase.as_str()).unwrap_or_default();
    if phase.is_empty() {
        let left = RESPONSE_TIMEOUT - age;
        if left <= SignedDuration::ZERO {
            plan.actions.push(Action::Complete(NO_RESPONSE.into()));
            return plan;
        }
        soon(left);
    }
    if let Some(deadline) = crr.spec.active_deadline_seconds {
        let left = SignedDuration::from_secs(deadline) - age;
        if left <= SignedDuration::ZERO {
            plan.actions.push(Action::Complete(DEADLINE_EXCEEDED.into()));
            return plan;
        }
        soon(left);
    }
    plan.requeue = requeue;
    if phase != PHASE_RECREATING {
        return plan;
    }
    let Some(pod) = pod else { return plan };
    let text = sync_statuses(crr, pod);
    if annotation(crr, SYNC_CONTAINER_STATUSES_KEY) != text {
        plan.actions.push(Action::SyncStatuses(text));
    }
    let unready = crr.spec.strategy.as_ref().and_then(|s| s.unready_grace_period_seconds).is_some();
    if unready && annotation(crr, UNREADY_ACQUIRED_KEY).is_empty() {
        let gated = pods::has_readiness_gate(pod, crate::apis::keys::KRUISE_POD_READY);
        plan.actions.push(Action::AcquireNotReady { gated });
    }
    plan
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn crr(extra: Value) -> ContainerRecreateRequest {
        let mut v = json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "ContainerRecreateRequest",
            "metadata": {"name": "r", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {POD_UID_KEY: "uid-1", ACTIVE_KEY: "true"}},
            "spec": {"podName": "p", "containers": [{"name": "a"}, {"name": "b"}], "strategy": {"failurePolicy": "Fail"}}
        });
        json_patch::merge(&mut v, &extra);
        serde_json::from_value(v).unwrap()
    }

    fn pod(extra: Value) -> Pod {
        let mut v = json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "uid-1"},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}], "readinessGates": [{"conditionType": "KruisePodReady"}]},
            "status": {"containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 1, "containerID": "containerd://a2", "image": "", "imageID": "",
                 "state": {"running": {"startedAt": "2026-01-01T00:00:05Z"}}},
                {"name": "b", "ready": false, "restartCount": 0, "containerID": "containerd://b1", "image": "", "imageID": "",
                 "state": {"running": {"startedAt": "2025-12-31T00:00:00Z"}}}
            ]}
        });
        json_patch::merge(&mut v, &extra);
        serde_json::from_value(v).unwrap()
    }

    const NOW: &str = "2026-01-01T00:00:10Z";

    #[test]
    fn table() {
        let done = json!({"status": {"phase": "Completed", "completionTime": "2026-01-01T00:00:08Z"}});
        let recreating = json!({"status": {"phase": "Recreating"}});
        let rows: Vec<(&str, ContainerRecreateRequest, Option<Pod>, &str, Plan)> = vec![
            (
                "completed with the active label: drop it",
                crr(done.clone()),
                Some(pod(json!({}))),
                NOW,
                Plan { actions: vec![Action::RemoveActiveLabel], requeue: None },
            ),
            (
                "completed, TTL 5s, 2s after: wait 3s",
                crr(json!({"metadata": {"labels": {ACTIVE_KEY: null}}, "spec": {"ttlSecondsAfterFinished": 5},
                    "status": {"phase": "Completed", "completionTime": "2026-01-01T00:00:08Z"}})),
                None,
                NOW,
                Plan { actions: vec![], requeue: Some(SignedDuration::from_secs(3)) },
            ),
            (
                "completed, TTL passed: delete",
                crr(json!({"metadata": {"labels": {ACTIVE_KEY: null}}, "spec": {"ttlSecondsAfterFinished": 1},
                    "status": {"phase": "Completed", "completionTime": "2026-01-01T00:00:08Z"}})),
                None,
                NOW,
                Plan { actions: vec![Action::Delete], requeue: None },
            ),
            (
                "completed holding the pod not ready: release first",
                crr(json!({"metadata": {"finalizers": [UNREADY_ACQUIRED_KEY]},
                    "status": {"phase": "Completed", "completionTime": "2026-01-01T00:00:08Z"}})),
                Some(pod(json!({}))),
                NOW,
                Plan { actions: vec![Action::ReleaseNotReady, Action::RemoveActiveLabel], requeue: None },
            ),
            (
                "deleting holding the pod not ready: release only",
                crr(json!({"metadata": {"finalizers": [UNREADY_ACQUIRED_KEY], "deletionTimestamp": NOW}})),
                Some(pod(json!({}))),
                NOW,
                Plan { actions: vec![Action::ReleaseNotReady], requeue: None },
            ),
            (
                "pod not found",
                crr(recreating.clone()),
                None,
                NOW,
                Plan { actions: vec![Action::Complete(POD_GONE.into())], requeue: None },
            ),
            (
                "pod recreated with another uid",
                crr(recreating.clone()),
                Some(pod(json!({"metadata": {"uid": "uid-2"}}))),
                NOW,
                Plan { actions: vec![Action::Complete(POD_GONE.into())], requeue: None },
            ),
            (
                "pod being deleted",
                crr(recreating.clone()),
                Some(pod(json!({"metadata": {"deletionTimestamp": NOW}}))),
                NOW,
                Plan { actions: vec![Action::Complete(POD_GONE.into())], requeue: None },
            ),
            (
                "no phase after 10s: wait for the daemon 50s more",
                crr(json!({})),
                Some(pod(json!({}))),
                NOW,
                Plan { actions: vec![], requeue: Some(SignedDuration::from_secs(50)) },
            ),
            (
                "no phase after a minute",
                crr(json!({})),
                Some(pod(json!({}))),
                "2026-01-01T00:01:00Z",
                Plan { actions: vec![Action::Complete(NO_RESPONSE.into())], requeue: None },
            ),
            (
                "deadline 5s passed",
                crr(json!({"spec": {"activeDeadlineSeconds": 5}, "status": {"phase": "Recreating"}})),
                Some(pod(json!({}))),
                NOW,
                Plan { actions: vec![Action::Complete(DEADLINE_EXCEEDED.into())], requeue: None },
            ),
            (
                "deadline 30s: sync, look again at the deadline",
                crr(json!({"spec": {"activeDeadlineSeconds": 30}, "status": {"phase": "Recreating"}})),
                Some(pod(json!({}))),
                NOW,
                Plan {
                    actions: vec![Action::SyncStatuses(
                        r#"[{"name":"a","ready":true,"restartCount":1,"containerID":"containerd://a2"}]"#.into(),
                    )],
                    requeue: Some(SignedDuration::from_secs(20)),
                },
            ),
            (
                "pending: nothing to sync",
                crr(json!({"status": {"phase": "Pending"}})),
                Some(pod(json!({}))),
                NOW,
                Plan::default(),
            ),
            (
                "unready grace: acquire",
                crr(json!({"spec": {"strategy": {"unreadyGracePeriodSeconds": 3}}, "status": {"phase": "Recreating"},
                    "metadata": {"annotations": {SYNC_CONTAINER_STATUSES_KEY:
                        r#"[{"name":"a","ready":true,"restartCount":1,"containerID":"containerd://a2"}]"#}}})),
                Some(pod(json!({}))),
                NOW,
                Plan { actions: vec![Action::AcquireNotReady { gated: true }], requeue: None },
            ),
            (
                "unready grace already acquired",
                crr(json!({"spec": {"strategy": {"unreadyGracePeriodSeconds": 3}}, "status": {"phase": "Recreating"},
                    "metadata": {"annotations": {UNREADY_ACQUIRED_KEY: "2026-01-01T00:00:01Z", SYNC_CONTAINER_STATUSES_KEY:
                        r#"[{"name":"a","ready":true,"restartCount":1,"containerID":"containerd://a2"}]"#}}})),
                Some(pod(json!({}))),
                NOW,
                Plan::default(),
            ),
        ];
        for (name, c, p, now, want) in rows {
            assert_eq!(plan(&c, p.as_ref(), t(now)), want, "{name}");
        }
    }

    #[test]
    fn readiness_key() {
        let m = readiness_message(&crr(json!({})));
        assert_eq!((m.user_agent.as_str(), m.key.as_str()), ("ContainerRecreateRequest", "ns/r"));
    }
}
