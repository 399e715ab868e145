//! The status conditions an Advanced StatefulSet gets when a pod write of its round fails (spec
//! §6.3), kruise's `processReplica` with `NewStatefulsetCondition` / `SetStatefulsetCondition`:
//! creating a pod (or its claims) fails → `FailedCreatePod` "StatefulPodControl failed to create
//! Pod error: …"; repairing a pod's identity or storage fails → `FailedUpdatePod` "StatefulPodControl
//! failed to update Pod error: …". An in-place update that fails is an Event, not a condition, as
//! in kruise. A condition of the same type, status and reason is left as it is (kruise keeps the
//! first message); one of another status keeps no transition time.
//!
//! The write that failed is named as the act half names it (`create pod NS/NAME`,
//! `patch pod NS/NAME`, `create pvc NS/NAME`): the action holding that write says which condition.

use k8s_openapi::api::apps::v1::StatefulSetCondition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use crate::apis::statefulset::v1beta1::StatefulSetStatus;
use crate::core::rollout::actions::{Action, ActionKind, Write};

/// kruise's `appsv1beta1.FailedCreatePod`.
pub const FAILED_CREATE_POD: &str = "FailedCreatePod";
/// kruise's `appsv1beta1.FailedUpdatePod`.
pub const FAILED_UPDATE_POD: &str = "FailedUpdatePod";

/// Whether `write` is the call named `(verb, kind, name)`.
fn is_call(write: &Write, verb: &str, kind: &str, name: &str) -> bool {
    match (verb, kind, write) {
        ("create", "pod", Write::CreatePod { pod }) => pod.metadata.name.as_deref() == Some(name),
        ("create", "pvc", Write::CreatePvc { pvc }) => pvc.metadata.name.as_deref() == Some(name),
        ("patch", "pod", Write::PatchPod { name: n, .. }) => n == name,
        ("patch", "pvc", Write::PatchPvc { name: n, .. }) => n == name,
        _ => false,
    }
}

/// The condition for the failed call `failed` (the act half's `VERB KIND NS/NAME`) with the API
/// server's `error`, when it belongs to a creation or an identity repair of `actions`.
pub fn failure_condition(
    actions: &[Action],
    failed: &str,
    error: &str,
    now: Timestamp,
) -> Option<StatefulSetCondition> {
    let words: Vec<&str> = failed.split_whitespace().collect();
    let [verb, kind, object] = words[..] else { return None };
    let name = object.rsplit_once('/').map_or(object, |(_, n)| n);
    let action = actions.iter().find(|a| a.writes.iter().any(|w| is_call(w, verb, kind, name)))?;
    let (type_, what) = match action.kind {
        ActionKind::Create => (FAILED_CREATE_POD, "create"),
        ActionKind::RestoreIdentity => (FAILED_UPDATE_POD, "update"),
        _ => return None,
    };
    Some(StatefulSetCondition {
        type_: type_.into(),
        status: "True".into(),
        reason: None,
        message: Some(format!("StatefulPodControl failed to {what} Pod error: {error}")),
        last_transition_time: Some(Time(now)),
    })
}

/// `SetStatefulsetCondition`: whether `status` changed.
pub fn set_condition(status: &mut StatefulSetStatus, mut condition: StatefulSetCondition) -> bool {
    if let Some(current) = status.conditions.iter().find(|c| c.type_ == condition.type_) {
        if current.status == condition.status && current.reason == condition.reason {
            return false;
        }
        if current.status == condition.status {
            condition.last_transition_time = current.last_transition_time.clone();
        }
    }
    status.conditions.retain(|c| c.type_ != condition.type_);
    status.conditions.push(condition);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
    use serde_json::json;

    fn create(pod: &str, claim: Option<&str>) -> Action {
        let mut writes = Vec::new();
        if let Some(c) = claim {
            let pvc: PersistentVolumeClaim = serde_json::from_value(json!({"metadata": {"name": c}})).unwrap();
            writes.push(Write::CreatePvc { pvc: Box::new(pvc) });
        }
        let p: Pod = serde_json::from_value(json!({"metadata": {"name": pod}})).unwrap();
        writes.push(Write::CreatePod { pod: Box::new(p) });
        Action::new(ActionKind::Create, Some(pod), "web-1", "missing".into(), writes)
    }

    fn patch(kind: ActionKind, pod: &str) -> Action {
        let write = Write::PatchPod {
            name: pod.into(),
            pin: crate::core::rollout::actions::Pin::Observed("1".into()),
            patch: json_patch::Patch(vec![]),
        };
        Action::new(kind, Some(pod), "web-1", "why".into(), vec![write])
    }

    #[test]
    fn the_failed_call_names_the_condition() {
        let now = Timestamp::UNIX_EPOCH;
        let actions = [
            create("web-0", Some("data-web-0")),
            patch(ActionKind::RestoreIdentity, "web-1"),
            patch(ActionKind::UpdateInPlace, "web-2"),
        ];
        let quota = "pods \"web-0\" is forbidden: exceeded quota: q";
        let c = failure_condition(&actions, "create pod ns/web-0", quota, now).unwrap();
        assert_eq!((c.type_.as_str(), c.status.as_str()), (FAILED_CREATE_POD, "True"));
        assert_eq!(
            c.message.as_deref(),
            Some(format!("StatefulPodControl failed to create Pod error: {quota}").as_str())
        );
        let c = failure_condition(&actions, "create pvc ns/data-web-0", "no", now).unwrap();
        assert_eq!(c.type_, FAILED_CREATE_POD, "a claim of a creation");
        let c = failure_condition(&actions, "patch pod ns/web-1", "no", now).unwrap();
        assert_eq!(
            (c.type_.as_str(), c.message.as_deref()),
            (FAILED_UPDATE_POD, Some("StatefulPodControl failed to update Pod error: no"))
        );
        assert_eq!(failure_condition(&actions, "patch pod ns/web-2", "no", now), None, "in place: an Event");
        assert_eq!(failure_condition(&actions, "patch status of pod ns/web-1", "no", now), None);
        assert_eq!(failure_condition(&actions, "delete pod ns/web-0", "no", now), None);
        assert_eq!(failure_condition(&actions, "create pod ns/web-9", "no", now), None, "not this round's");
    }

    #[test]
    fn set_condition_keeps_the_first_message_as_kruise_does() {
        let at = |s: i64| Timestamp::from_second(s).unwrap();
        let actions = [create("web-0", None)];
        let mut status = StatefulSetStatus::default();
        let first = failure_condition(&actions, "create pod ns/web-0", "first", at(1)).unwrap();
        assert!(set_condition(&mut status, first.clone()));
        let second = failure_condition(&actions, "create pod ns/web-0", "second", at(2)).unwrap();
        assert!(!set_condition(&mut status, second), "same type, status and reason: unchanged");
        assert_eq!(status.conditions, std::slice::from_ref(&first));
        let mut other = first.clone();
        other.status = "False".into();
        other.last_transition_time = Some(Time(at(3)));
        assert!(set_condition(&mut status, other.clone()));
        assert_eq!(status.conditions, [other], "replaced, with its own transition time");
        let mut again = first.clone();
        again.reason = Some("Quota".into());
        again.last_transition_time = Some(Time(at(4)));
        status.conditions = vec![first.clone()];
        assert!(set_condition(&mut status, again));
        assert_eq!(status.conditions[0].last_transition_time, first.last_transition_time, "same status: time kept");
    }
}
