//! The Adaptive strategy's rescheduling (kruise v1.9.0 `pkg/controller/workloadspread/
//! reschedule.go` and `calculateWorkloadSpreadSubsetStatuses`; issue 34 item 3): with
//! `scheduleStrategy: {type: Adaptive, adaptive: {rescheduleCriticalSeconds: N}}` (N > 0), a
//! subset other than the last whose pod has stayed Pending, unscheduled, with `PodScheduled=False`
//! reason `Unschedulable` for more than N seconds since its creation
//! (`GetTimeBeforePendingTimeout`, shared with the UnitedDeployment's adaptive scheduling) gets
//! `Schedulable=False` and those pods are deleted (the workload creates them again, and the pod
//! webhook passes over a subset whose `Schedulable` is False, [`super::suitable_subset`]). A
//! subset marked False turns True again [`MAX_SCHEDULED_FAILED_DURATION`] after the transition
//! (kruise's `MaxScheduledFailedDuration`, 5 minutes), with a `RecoverSchedulable` Event. The last
//! subset is never rescheduled: it is always `Schedulable=True`. Without the strategy the
//! condition is removed.
//!
//! The round is looked at again when a pending pod would time out or a False condition would
//! recover (kruise's `durationStore`).
//!
//! `adaptive.disableSimulationSchedule` has no effect, as in kruise: its webhook has only a
//! "TODO simulation schedule" where the simulation would be.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::SignedDuration;

use super::SUBSET_SCHEDULABLE;
use crate::apis::workloadspread::{
    ADAPTIVE, WorkloadSpread, WorkloadSpreadSubsetCondition, WorkloadSpreadSubsetStatus,
};
use crate::core::uniteddeployment::adaptive::pending_timeout;

/// kruise's `MaxScheduledFailedDuration`: how long a subset stays unschedulable.
pub const MAX_SCHEDULED_FAILED_DURATION: Duration = Duration::from_secs(300);

/// `rescheduleCriticalSeconds` when the Adaptive strategy reschedules (`None`: it does not).
pub fn critical_seconds(ws: &WorkloadSpread) -> Option<i32> {
    let strategy = &ws.spec.schedule_strategy;
    if strategy.type_ != ADAPTIVE {
        return None;
    }
    strategy.adaptive.as_ref()?.reschedule_critical_seconds.filter(|s| *s > 0)
}

/// `GetWorkloadSpreadSubsetCondition(status, Schedulable)`.
pub fn schedulable_condition(status: Option<&WorkloadSpreadSubsetStatus>) -> Option<&WorkloadSpreadSubsetCondition> {
    status?.conditions.iter().find(|c| c.type_ == SUBSET_SCHEDULABLE)
}

/// `NewWorkloadSpreadSubsetCondition(Schedulable, status, "", "")` at `now`.
fn new_condition(status: &str, now: &Time) -> WorkloadSpreadSubsetCondition {
    WorkloadSpreadSubsetCondition {
        type_: SUBSET_SCHEDULABLE.into(),
        status: status.into(),
        last_transition_time: Some(now.clone()),
        ..Default::default()
    }
}

/// `setWorkloadSpreadSubsetCondition`: nothing changes when the condition has the same status and
/// reason; the same status keeps its transition time; the condition goes last.
pub fn set_condition(status: &mut WorkloadSpreadSubsetStatus, mut condition: WorkloadSpreadSubsetCondition) {
    if let Some(current) = status.conditions.iter().find(|c| c.type_ == condition.type_) {
        if current.status == condition.status && current.reason == condition.reason {
            return;
        }
        if current.status == condition.status {
            condition.last_transition_time = current.last_transition_time.clone();
        }
    }
    status.conditions.retain(|c| c.type_ != condition.type_);
    status.conditions.push(condition);
}

/// `removeWorkloadSpreadSubsetCondition(status, Schedulable)`.
pub fn remove_condition(status: &mut WorkloadSpreadSubsetStatus) {
    status.conditions.retain(|c| c.type_ != SUBSET_SCHEDULABLE);
}

/// What [`reschedule_subset`] decided for one subset.
#[derive(Debug, Default)]
pub struct Rescheduled<'a> {
    /// The pods to delete (they failed to schedule for too long).
    pub failed: Vec<&'a Pod>,
    /// When to look again (a pending pod's timeout, or the recovery).
    pub requeue: Option<Duration>,
    /// The subset recovers to schedulable this round (`RecoverSchedulable`).
    pub recovered: bool,
}

fn positive(d: SignedDuration) -> Option<Duration> {
    Duration::try_from(d).ok().filter(|d| !d.is_zero())
}

fn earliest(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// `rescheduleSubset`: the `Schedulable` condition of a subset that is not the last, set on
/// `status` from the subset's `pods` and its `old` status.
pub fn reschedule_subset<'a>(
    critical_seconds: i32,
    pods: &[&'a Pod],
    status: &mut WorkloadSpreadSubsetStatus,
    old: Option<&WorkloadSpreadSubsetStatus>,
    now: &Time,
) -> Rescheduled<'a> {
    let timeout = SignedDuration::from_secs(i64::from(critical_seconds));
    let mut out = Rescheduled::default();
    for pod in pods {
        let (timed_out, next) = pending_timeout(pod, timeout, now.0);
        if timed_out {
            out.failed.push(pod);
        }
        out.requeue = earliest(out.requeue, next.and_then(positive));
    }
    let unschedulable = !out.failed.is_empty();
    let Some(old_condition) = schedulable_condition(old) else {
        set_condition(status, new_condition(if unschedulable { "False" } else { "True" }, now));
        return out;
    };
    // The old condition is copied first, so an unchanged one is not written again.
    set_condition(status, old_condition.clone());
    if unschedulable {
        set_condition(status, new_condition("False", now));
    } else if old_condition.status == "False" {
        // A False condition without a transition time counts from Go's zero time: long over.
        let since = old_condition.last_transition_time.as_ref().map(|t| now.0.duration_since(t.0));
        let left =
            since.map(|s| SignedDuration::try_from(MAX_SCHEDULED_FAILED_DURATION).unwrap_or(SignedDuration::MAX) - s);
        match left {
            // Recovery needs the time strictly past: come back just after it.
            Some(left) if !left.is_negative() => {
                out.requeue = earliest(out.requeue, Some(positive(left).unwrap_or(Duration::from_millis(1))))
            }
            _ => {
                out.recovered = true;
                set_condition(status, new_condition("True", now));
            }
        }
    }
    out
}

/// The last subset: never rescheduled, always `Schedulable=True` (its old condition kept when it
/// already says so).
pub fn last_subset(status: &mut WorkloadSpreadSubsetStatus, old: Option<&WorkloadSpreadSubsetStatus>, now: &Time) {
    if let Some(c) = schedulable_condition(old) {
        set_condition(status, c.clone());
    }
    set_condition(status, new_condition("True", now));
}

#[cfg(test)]
mod tests;
