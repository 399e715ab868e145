//! Adaptive scheduling that keeps the pods it cannot schedule (`adaptive.reserveUnschedulablePods`,
//! issue 34 item 2): which pods of a subset are *reserved* this round, kruise v1.9.0's
//! `calculateSubsetsStatusForReservedAdaptiveStrategy`, `postProcessSubsetStatusForReservedAdaptiveStrategy`
//! (`uniteddeployment_controller.go`), `CheckPodReallyInReservedStatus` and `IsPodMarkedAsReserved`
//! (`uniteddeployment_controller_utils.go`), `GetTimeBeforeUpdateTimeout`
//! (`pkg/controller/util/pod_condition_utils.go`) and `SubsetControl.UpdateSubset`'s
//! `maxUnavailable` override.
//!
//! - A pod becomes reserved when it has failed to schedule for `rescheduleCriticalSeconds` (at the
//!   update revision), or, at an older revision, when the UnitedDeployment's update has lasted that
//!   long (`UnitedDeploymentUpdated`'s transition time; such pods are *update-timeout* pods). A
//!   reserved pod leaves the state once it has run ready at the update revision for
//!   `unschedulableDuration`. A pod created while its subset is marked unschedulable (the
//!   `Schedulable` condition False) and not yet labelled starts reserved.
//! - Every pod carries its state in the label `apps.kruise.io/united-deployment-reserved-pod`
//!   (`"true"`/`"false"`), written when it changes or is missing: the status's `labelSelector`
//!   gains `,<label>=false`, so the scale subresource (an HPA) counts only the working pods.
//! - A subset with reserved pods is unschedulable (`Schedulable` False, `reschedule`, "reserved pods
//!   found"), else schedulable ("no reserved pods"). The reservation allocator
//!   ([`super::allocation`]) keeps the subset's replicas and gives the work of its reserved pods
//!   to the other subsets (temporary pods), which shrink again once the reserved pods work.
//! - A subset that has just recovered and is given more replicas is marked unschedulable again,
//!   so that its new pods start reserved and the temporary pods go only once those are ready.
//! - A new subset of a UnitedDeployment that already has subset statuses starts marked
//!   (`created`); see [`super::adaptive::init_status`].
//! - While a subset is unschedulable its workload's `maxUnavailable` is rewritten to
//!   `replicas − ready + update-timeout pods` when kruise rewrites the workload.
//!
//! Where we differ: kruise writes that `maxUnavailable` whatever it is, which its own webhooks
//! and the apiserver refuse when it is below 1, above 1 on an Advanced StatefulSet that is not
//! `Parallel`, or on an OnDelete StatefulSet or a `Recreate` Deployment; the workload update then
//! fails every round. Here the workload keeps its template's `maxUnavailable` in those cases
//! ([`super::workload::Workload::set_max_unavailable`]).
//!
//! Kept as kruise has it, though it looks like a kruise bug: a CloneSet template's revisions are
//! never considered ([`super::history`]), so `UnitedDeploymentUpdated` never turns False and, on a
//! template change, every pod at the old revision counts as an update-timeout pod at once.

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation, TestOperation};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use super::adaptive::{
    SCHEDULABLE, pending_timeout, reschedule_critical, set_subset_condition, unschedulable_duration,
};
use super::subsets::REVISION_LABEL;
use crate::apis::uniteddeployment::{
    UnitedDeploymentCondition, UnitedDeploymentScheduleStrategy, UnitedDeploymentSubsetStatus,
};
use crate::core::pods;

/// kruise `ReservedPodLabelKey`.
pub const RESERVED_POD_LABEL: &str = "apps.kruise.io/united-deployment-reserved-pod";
/// kruise `extraStatusSelector`, appended to the status's `labelSelector`.
pub const EXTRA_STATUS_SELECTOR: &str = ",apps.kruise.io/united-deployment-reserved-pod=false";

/// kruise `IsPodMarkedAsReserved`: (the label says `"true"`, the label is there).
pub fn marked_as_reserved(pod: &Pod) -> (bool, bool) {
    match pods::label(pod, RESERVED_POD_LABEL) {
        Some(v) => (v == "true", true),
        None => (false, false),
    }
}

/// kruise `GetTimeBeforeUpdateTimeout`: whether the update (`UnitedDeploymentUpdated`'s
/// transition time) has lasted longer than `timeout`, else how long until it will have. A pod
/// being deleted never times out. A condition without a time counts from Go's zero time.
pub fn update_timeout(
    pod: &Pod,
    updated: Option<&UnitedDeploymentCondition>,
    timeout: SignedDuration,
    now: Timestamp,
) -> (bool, Option<SignedDuration>) {
    if pod.metadata.deletion_timestamp.is_some() {
        return (false, None);
    }
    let since = updated.and_then(|c| c.last_transition_time.as_ref()).map_or(Timestamp::MIN, |t| t.0);
    let expect = since.checked_add(timeout).unwrap_or(Timestamp::MAX);
    if expect < now { (true, None) } else { (false, Some(expect.duration_since(now))) }
}

/// What [`check_pod`] found for one pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodCheck {
    /// The pod is reserved.
    pub reserved: bool,
    /// When to look at it again (kruise's positive `nextCheckAfter`; `None` for its -1).
    pub check_after: Option<SignedDuration>,
    /// The pod is at an older revision and the update timed out (kruise's `UpdateTimeoutPods`).
    pub update_timeout: bool,
}

/// kruise `CheckPodReallyInReservedStatus` for a pod of a subset whose update revision is
/// `updated_revision`: a pod marked reserved stays so until it has been Running and ready at
/// the update revision for `min_ready` (then `check_after` is `None`); an unmarked one becomes
/// reserved when its scheduling (update revision) or the update (older revision) timed out.
pub fn check_pod(
    pod: &Pod,
    updated_revision: &str,
    updated: Option<&UnitedDeploymentCondition>,
    pending: SignedDuration,
    min_ready: SignedDuration,
    now: Timestamp,
) -> PodCheck {
    let revision = pods::label(pod, REVISION_LABEL).unwrap_or("");
    let reserved = |check_after| PodCheck { reserved: true, check_after, update_timeout: false };
    if marked_as_reserved(pod).0 {
        if pods::phase(pod) == "Running"
            && revision == updated_revision
            && let Some(ready) = pods::condition(pod, pods::POD_READY).filter(|c| c.status == "True")
        {
            let since = ready.last_transition_time.as_ref().map_or(Timestamp::MIN, |t| t.0);
            let until = since.checked_add(min_ready).unwrap_or(Timestamp::MAX);
            if until < now {
                return PodCheck { reserved: false, check_after: None, update_timeout: false };
            }
            return reserved(Some(until.duration_since(now)));
        }
        // At least min_ready more before the pod can leave the state.
        return reserved(Some(min_ready));
    }
    let (timed_out, after, update) = if revision == updated_revision {
        let (t, a) = pending_timeout(pod, pending, now);
        (t, a, false)
    } else {
        let (t, a) = update_timeout(pod, updated, pending, now);
        (t, a, t)
    };
    if timed_out {
        PodCheck { reserved: true, check_after: Some(min_ready), update_timeout: update }
    } else {
        PodCheck { reserved: false, check_after: after, update_timeout: update }
    }
}

/// A pod whose reserved label is to be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelPod {
    /// Its name.
    pub name: String,
    /// Its uid (the write's precondition).
    pub uid: String,
    /// Whether the pod had labels at all (the write adds the map when not).
    pub has_labels: bool,
    /// The value: reserved or not.
    pub reserved: bool,
}

/// kruise's `patchPodReservedLabel` as a JSON patch pinned to the pod's uid (its `test` refuses
/// another pod of that name): the label set to `"true"`/`"false"`, the label map added when the
/// pod had none.
pub fn label_patch(pod: &LabelPod) -> json_patch::Patch {
    let pointer = |tokens: &[&str]| PointerBuf::from_tokens(tokens.iter().copied());
    let value = Value::from(if pod.reserved { "true" } else { "false" });
    let set = if pod.has_labels {
        PatchOperation::Add(AddOperation { path: pointer(&["metadata", "labels", RESERVED_POD_LABEL]), value })
    } else {
        let labels = Value::Object([(RESERVED_POD_LABEL.to_string(), value)].into_iter().collect());
        PatchOperation::Add(AddOperation { path: pointer(&["metadata", "labels"]), value: labels })
    };
    json_patch::Patch(vec![
        PatchOperation::Test(TestOperation {
            path: pointer(&["metadata", "uid"]),
            value: Value::from(pod.uid.clone()),
        }),
        set,
    ])
}

/// What one subset's round of reservation found (kruise's `SubsetUnschedulableStatus`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reservation {
    /// The subset has reserved pods (kruise's `Unschedulable`).
    pub unschedulable: bool,
    /// The subset's `Schedulable` condition was False at the start of the round.
    pub marked_as_unschedulable: bool,
    /// Reserved pods.
    pub reserved_pods: i32,
    /// Pods at an older revision whose update timed out.
    pub update_timeout_pods: i32,
    /// When to look again (the shortest wait), if anything waits.
    pub requeue_after: Option<SignedDuration>,
    /// Labels to write, in pod order.
    pub to_label: Vec<LabelPod>,
}

/// kruise `calculateSubsetsStatusForReservedAdaptiveStrategy` for one existing subset: `status`
/// is the subset's entry of the UnitedDeployment status (its Schedulable condition updated
/// here), `pods` the workload's pods, `updated_revision` the revision the round writes,
/// `updated` the UnitedDeployment's `UnitedDeploymentUpdated` condition.
pub fn reserve(
    strategy: &UnitedDeploymentScheduleStrategy,
    status: &mut UnitedDeploymentSubsetStatus,
    pods: &[impl std::borrow::Borrow<Pod>],
    updated_revision: &str,
    updated: Option<&UnitedDeploymentCondition>,
    now: Timestamp,
) -> Reservation {
    let mut out = Reservation::default();
    if let Some(c) = status.conditions.iter().find(|c| c.type_ == SCHEDULABLE) {
        out.marked_as_unschedulable = c.status == "False";
    }
    let (pending, lasts) = (reschedule_critical(strategy), unschedulable_duration(strategy));
    for pod in pods.iter().map(std::borrow::Borrow::<Pod>::borrow) {
        let (old, labelled) = marked_as_reserved(pod);
        let label = |reserved| LabelPod {
            name: pods::name(pod).to_string(),
            uid: pod.metadata.uid.clone().unwrap_or_default(),
            has_labels: pod.metadata.labels.is_some(),
            reserved,
        };
        if out.marked_as_unschedulable && !labelled {
            // Created in a subset marked unschedulable: reserved until it proves itself. (kruise
            // raises its requeue wait here only when it is below the duration, which it never
            // is: no requeue.)
            out.reserved_pods += 1;
            out.to_label.push(label(true));
            continue;
        }
        let check = check_pod(pod, updated_revision, updated, pending, lasts, now);
        if check.reserved {
            out.reserved_pods += 1;
        }
        if check.update_timeout {
            out.update_timeout_pods += 1;
        }
        if let Some(d) = check.check_after.filter(|d| d.is_positive()) {
            out.requeue_after = Some(out.requeue_after.map_or(d, |r| r.min(d)));
        }
        if check.reserved != old || !labelled {
            out.to_label.push(label(check.reserved));
        }
    }
    out.unschedulable = out.reserved_pods > 0;
    if out.unschedulable {
        set_subset_condition(status, "False", "reschedule", "reserved pods found", now);
    } else {
        set_subset_condition(status, "True", "reschedule", "no reserved pods", now);
    }
    out
}

/// kruise `postProcessSubsetStatusForReservedAdaptiveStrategy`: a subset that has just recovered
/// (no reserved pods, but marked at the start of the round) and is given more than its current
/// `replicas` is marked unschedulable again, so its new pods start reserved.
pub fn after_allocation(
    status: &mut UnitedDeploymentSubsetStatus,
    r: &Reservation,
    replicas: i32,
    next_replicas: i32,
    now: Timestamp,
) {
    if !r.unschedulable && r.marked_as_unschedulable && next_replicas > replicas {
        set_subset_condition(status, "False", "reschedule", "subset just recovered scaled up", now);
    }
}

/// `SubsetControl.UpdateSubset`'s value for an unschedulable subset: `replicas − ready +
/// update-timeout pods` (the workload's `spec.replicas` and ready pods before the round);
/// [`super::workload::Workload::set_max_unavailable`] writes it where the workload accepts it.
pub fn max_unavailable(replicas: i32, ready: i32, update_timeout_pods: i32) -> i32 {
    replicas.wrapping_sub(ready).wrapping_add(update_timeout_pods)
}

#[cfg(test)]
mod props;
#[cfg(test)]
mod tests;
