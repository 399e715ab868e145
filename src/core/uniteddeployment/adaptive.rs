//! Adaptive scheduling of a UnitedDeployment (issue 34 item 2): which subsets are unschedulable
//! this round, kruise's `calculateSubsetsStatusForDefaultAdaptiveStrategy`
//! (`uniteddeployment_controller.go`, v1.9.0) with `GetTimeBeforePendingTimeout`
//! (`pkg/controller/util/pod_condition_utils.go`) and `initStatus`.
//!
//! A subset whose `Schedulable` condition is False stays unschedulable until
//! `adaptive.unschedulableDuration` (default 300 s) after the condition's transition, then the
//! condition turns True (`recover`). A subset with fewer ready pods than pods counts its pods that
//! are Pending, unscheduled (no `nodeName`), carry `PodScheduled=False` reason `Unschedulable` and
//! were created more than `adaptive.rescheduleCriticalSeconds` (default 30 s) ago: one or more
//! make it unschedulable (condition False, `reschedule`, "timeout pending pods found"). The
//! allocator then holds an unschedulable subset to its ready pods and gives the rest to the others
//! ([`super::allocation`]). The round is looked at again when a pending pod would time out or the
//! unschedulable state would end (kruise's `durationStore`, the shortest wait).
//!
//! The reservation variant (`reserveUnschedulablePods`, which keeps and labels the pods) is
//! [`super::reservation`].

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::apis::uniteddeployment::{
    UnitedDeploymentScheduleStrategy, UnitedDeploymentSpec, UnitedDeploymentStatus, UnitedDeploymentSubsetCondition,
    UnitedDeploymentSubsetStatus,
};

/// The subset condition type adaptive scheduling keeps.
pub const SCHEDULABLE: &str = "Schedulable";
/// kruise `DefaultRescheduleCriticalDuration`.
pub const DEFAULT_RESCHEDULE_CRITICAL: SignedDuration = SignedDuration::from_secs(30);
/// kruise `DefaultUnschedulableStatusLastDuration`.
pub const DEFAULT_UNSCHEDULABLE_DURATION: SignedDuration = SignedDuration::from_secs(300);

/// kruise `GetRescheduleCriticalDuration`.
pub fn reschedule_critical(s: &UnitedDeploymentScheduleStrategy) -> SignedDuration {
    s.adaptive
        .as_ref()
        .and_then(|a| a.reschedule_critical_seconds)
        .map_or(DEFAULT_RESCHEDULE_CRITICAL, |v| SignedDuration::from_secs(i64::from(v)))
}

/// kruise `GetUnschedulableDuration`.
pub fn unschedulable_duration(s: &UnitedDeploymentScheduleStrategy) -> SignedDuration {
    s.adaptive
        .as_ref()
        .and_then(|a| a.unschedulable_duration)
        .map_or(DEFAULT_UNSCHEDULABLE_DURATION, |v| SignedDuration::from_secs(i64::from(v)))
}

/// kruise `GetTimeBeforePendingTimeout`: whether `pod` failed to schedule and has waited longer
/// than `timeout` since its creation, else how long until it would have (None when it is not a
/// pod that failed to schedule).
pub fn pending_timeout(pod: &Pod, timeout: SignedDuration, now: Timestamp) -> (bool, Option<SignedDuration>) {
    let spec_node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("");
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("");
    if pod.metadata.deletion_timestamp.is_some() || phase != "Pending" || !spec_node.is_empty() {
        return (false, None);
    }
    let failed = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "PodScheduled" && c.status == "False" && c.reason.as_deref() == Some("Unschedulable"));
    if !failed {
        return (false, None);
    }
    // A pod without a creation time counts from the zero time (Go's zero value): long timed out.
    let created = pod.metadata.creation_timestamp.as_ref().map_or(Timestamp::MIN, |t| t.0);
    let expect = created.checked_add(timeout).unwrap_or(Timestamp::MAX);
    if expect < now { (true, None) } else { (false, Some(expect.duration_since(now))) }
}

/// kruise `UnitedDeploymentSubsetStatus.SetCondition`: nothing changes when status and reason
/// are the same; otherwise the transition time is `now`.
pub fn set_subset_condition(
    s: &mut UnitedDeploymentSubsetStatus,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) {
    if let Some(c) = s.conditions.iter().find(|c| c.type_ == SCHEDULABLE)
        && c.status == status
        && c.reason == reason
    {
        return;
    }
    let i = match s.conditions.iter().position(|c| c.type_ == SCHEDULABLE) {
        Some(i) => i,
        None => {
            s.conditions.push(UnitedDeploymentSubsetCondition { type_: SCHEDULABLE.into(), ..Default::default() });
            s.conditions.len() - 1
        }
    };
    let c = &mut s.conditions[i];
    c.last_transition_time = Some(Time(now));
    c.status = status.into();
    c.reason = reason.into();
    c.message = message.into();
}

/// kruise `initStatus`: a status entry for every subset of the spec. With
/// `reserveUnschedulablePods`, a subset added to a UnitedDeployment that already has subset
/// statuses starts marked unschedulable (`created`), so its first pods start reserved
/// ([`super::reservation`]).
pub fn init_status(spec: &UnitedDeploymentSpec, status: &mut UnitedDeploymentStatus, now: Timestamp) {
    let update = !status.subset_statuses.is_empty();
    let reserve = super::allocation::should_reserve_unschedulable_pods(&spec.topology.schedule_strategy);
    for subset in &spec.topology.subsets {
        if !status.subset_statuses.iter().any(|s| s.name == subset.name) {
            let mut s = UnitedDeploymentSubsetStatus { name: subset.name.clone(), ..Default::default() };
            if update && reserve {
                set_subset_condition(&mut s, "False", "created", "newly-created subsets in reservation strategy", now);
            }
            status.subset_statuses.push(s);
        }
    }
}

/// What one subset's round of adaptive scheduling found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unschedulable {
    /// The allocator holds the subset to its ready pods.
    pub unschedulable: bool,
    /// Pods that failed to schedule for longer than the critical time.
    pub pending_pods: i32,
    /// When to look again (the shortest wait), if anything is waiting.
    pub requeue_after: Option<SignedDuration>,
}

fn shortest(a: Option<SignedDuration>, b: SignedDuration) -> Option<SignedDuration> {
    Some(a.map_or(b, |a| a.min(b)))
}

/// kruise `calculateSubsetsStatusForDefaultAdaptiveStrategy` for one existing subset: `status`
/// is the subset's entry of the UnitedDeployment status (its Schedulable condition updated here),
/// `replicas`/`ready` the workload's status counts, `pods` its pods.
pub fn default_adaptive(
    strategy: &UnitedDeploymentScheduleStrategy,
    status: &mut UnitedDeploymentSubsetStatus,
    replicas: i32,
    ready: i32,
    pods: &[impl std::borrow::Borrow<Pod>],
    now: Timestamp,
) -> Unschedulable {
    let mut out = Unschedulable::default();
    let lasts = unschedulable_duration(strategy);
    let marked = status.conditions.iter().find(|c| c.type_ == SCHEDULABLE && c.status == "False").map(|c| {
        let since = c.last_transition_time.as_ref().map_or(Timestamp::MIN, |t| t.0);
        since.checked_add(lasts).unwrap_or(Timestamp::MAX)
    });
    if let Some(recover) = marked {
        if now < recover {
            out.requeue_after = shortest(out.requeue_after, recover.duration_since(now));
            out.unschedulable = true;
        } else {
            let message = format!("unschedulable subset recovered after {:.6} seconds", lasts.as_secs_f64());
            set_subset_condition(status, "True", "recover", &message, now);
        }
    }
    if ready < replicas {
        let critical = reschedule_critical(strategy);
        for pod in pods.iter().map(std::borrow::Borrow::borrow) {
            let (timed_out, check_after) = pending_timeout(pod, critical, now);
            if timed_out {
                out.pending_pods += 1;
            }
            if let Some(d) = check_after.filter(|d| d.is_positive()) {
                out.requeue_after = shortest(out.requeue_after, d);
            }
        }
        if out.pending_pods > 0 {
            out.unschedulable = true;
            set_subset_condition(status, "False", "reschedule", "timeout pending pods found", now);
            out.requeue_after = shortest(out.requeue_after, lasts);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::uniteddeployment::AdaptiveUnitedDeploymentStrategy;
    use serde_json::json;

    fn now() -> Timestamp {
        Timestamp::from_second(1_700_000_000).unwrap()
    }

    fn ago(secs: i64) -> Timestamp {
        now() - SignedDuration::from_secs(secs)
    }

    /// kruise's test pod: Pending, PodScheduled=False/Unschedulable, created `age` seconds ago.
    fn pending(age: i64) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "creationTimestamp": Time(ago(age))},
            "status": {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
        }))
        .unwrap()
    }

    fn adaptive() -> UnitedDeploymentScheduleStrategy {
        UnitedDeploymentScheduleStrategy { type_: "Adaptive".into(), adaptive: None }
    }

    fn subset_status(status: &str, since: Timestamp) -> UnitedDeploymentSubsetStatus {
        UnitedDeploymentSubsetStatus {
            name: "subset-1".into(),
            conditions: vec![UnitedDeploymentSubsetCondition {
                type_: SCHEDULABLE.into(),
                status: status.into(),
                last_transition_time: Some(Time(since)),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    /// kruise `TestDefaultAdaptiveStrategy`, row by row (its clock is ours fixed).
    #[test]
    fn default_adaptive_strategy_rows() {
        // "Not timeouted yet": a pod pending 15 s of the 30 s.
        let mut st = subset_status("True", ago(1000));
        let got = default_adaptive(&adaptive(), &mut st, 1, 0, &[pending(15)], now());
        assert_eq!(
            got,
            Unschedulable { unschedulable: false, pending_pods: 0, requeue_after: Some(SignedDuration::from_secs(15)) }
        );
        assert_eq!(st.conditions[0].status, "True");

        // "Timeouted": pending 31 s; requeued after the unschedulable duration.
        let mut st = subset_status("True", ago(1000));
        let got = default_adaptive(&adaptive(), &mut st, 1, 0, &[pending(31)], now());
        assert_eq!(
            got,
            Unschedulable { unschedulable: true, pending_pods: 1, requeue_after: Some(DEFAULT_UNSCHEDULABLE_DURATION) }
        );
        assert_eq!((st.conditions[0].status.as_str(), st.conditions[0].reason.as_str()), ("False", "reschedule"));
        assert_eq!(st.conditions[0].message, "timeout pending pods found");
        assert_eq!(st.conditions[0].last_transition_time, Some(Time(now())));

        // "During unschedulable status": marked a minute ago, every pod ready.
        let mut st = subset_status("False", ago(60));
        let got = default_adaptive(&adaptive(), &mut st, 1, 1, &[pending(15)], now());
        assert_eq!(
            got,
            Unschedulable { unschedulable: true, pending_pods: 0, requeue_after: Some(SignedDuration::from_secs(240)) }
        );

        // "After status reset": marked 6 minutes ago, the pod now scheduled.
        let mut st = subset_status("False", ago(60 + 300));
        let mut pod = pending(15);
        pod.status.as_mut().unwrap().conditions =
            Some(vec![serde_json::from_value(json!({"type": "PodScheduled", "status": "True"})).unwrap()]);
        let got = default_adaptive(&adaptive(), &mut st, 1, 0, &[pod], now());
        assert_eq!(got, Unschedulable::default());
        assert_eq!((st.conditions[0].status.as_str(), st.conditions[0].reason.as_str()), ("True", "recover"));
        assert_eq!(st.conditions[0].message, "unschedulable subset recovered after 300.000000 seconds");
    }

    #[test]
    fn thresholds_come_from_the_strategy() {
        let s = UnitedDeploymentScheduleStrategy {
            type_: "Adaptive".into(),
            adaptive: Some(AdaptiveUnitedDeploymentStrategy {
                reschedule_critical_seconds: Some(5),
                unschedulable_duration: Some(60),
                reserve_unschedulable_pods: false,
            }),
        };
        let mut st = UnitedDeploymentSubsetStatus { name: "a".into(), ..Default::default() };
        // 10 s pending is past a 5 s threshold (the default 30 s would not be).
        let got = default_adaptive(&s, &mut st, 2, 0, &[pending(10), pending(3)], now());
        assert_eq!(
            got,
            Unschedulable { unschedulable: true, pending_pods: 1, requeue_after: Some(SignedDuration::from_secs(2)) }
        );
        // Still marked 59 s later; recovered at 61 s.
        let got = default_adaptive(&s, &mut st, 2, 2, &[] as &[Pod], now() + SignedDuration::from_secs(59));
        assert!(got.unschedulable);
        let got = default_adaptive(&s, &mut st, 2, 2, &[] as &[Pod], now() + SignedDuration::from_secs(61));
        assert!(!got.unschedulable);
        assert_eq!(st.conditions[0].status, "True");
    }

    #[test]
    fn only_pending_unscheduled_pods_time_out() {
        let t = SignedDuration::from_secs(30);
        assert_eq!(pending_timeout(&pending(31), t, now()), (true, None));
        let mut on_node = pending(31);
        on_node.spec = Some(serde_json::from_value(json!({"containers": [], "nodeName": "n1"})).unwrap());
        assert_eq!(pending_timeout(&on_node, t, now()), (false, None));
        let mut running = pending(31);
        running.status.as_mut().unwrap().phase = Some("Running".into());
        assert_eq!(pending_timeout(&running, t, now()), (false, None));
        let mut deleting = pending(31);
        deleting.metadata.deletion_timestamp = Some(Time(now()));
        assert_eq!(pending_timeout(&deleting, t, now()), (false, None));
        let mut other_reason = pending(31);
        other_reason.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].reason = Some("SchedulerError".into());
        assert_eq!(pending_timeout(&other_reason, t, now()), (false, None));
    }

    #[test]
    fn set_condition_keeps_the_time_of_the_same_status_and_reason() {
        let mut st = subset_status("False", ago(60));
        st.conditions[0].reason = "reschedule".into();
        set_subset_condition(&mut st, "False", "reschedule", "other", now());
        assert_eq!(st.conditions[0].last_transition_time, Some(Time(ago(60))));
        set_subset_condition(&mut st, "True", "recover", "m", now());
        assert_eq!(st.conditions[0].last_transition_time, Some(Time(now())));
        assert_eq!(st.conditions.len(), 1);
    }
}
