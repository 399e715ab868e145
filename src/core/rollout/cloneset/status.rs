//! CloneSet status (spec §5.7; kruise's `cloneset_status.go` and the condition helpers of
//! `cloneset/utils`), a pure function of what the round observed:
//! - replicas, readyReplicas (update-ready: Running, Ready, `InPlaceUpdateReady` not False),
//!   availableReplicas (also lifecycle Normal and minReadySeconds), updated* (pods at the update
//!   revision, and their ready/available subsets), expectedUpdatedReplicas (replicas − partition);
//! - currentRevision becomes the update revision once every pod is at it and there are exactly
//!   `spec.replicas` pods;
//! - the Progressing condition exists only with `progressDeadlineSeconds` (not MaxInt32):
//!   CloneSetAvailable / CloneSetPaused / ProgressPartitionAvailable / ProgressDeadlineExceeded
//!   (False) / CloneSetUpdated, with a requeue for the deadline;
//! - the status is written when kruise would write it ([`changed`]): a counted field, a revision,
//!   the selector, or the Progressing condition's status or reason differ. Kept on purpose: a new
//!   FailedScale/FailedUpdate condition alone does not trigger a write, as in kruise.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::revision::equal_to_revision_hash;
use super::settings::Settings;
use crate::apis::cloneset::{CloneSet, CloneSetCondition, CloneSetStatus};
use crate::core::pods;

/// Condition type `Progressing`.
pub const PROGRESSING: &str = "Progressing";
/// Condition type `FailedScale`.
pub const FAILED_SCALE: &str = "FailedScale";
/// Condition type `FailedUpdate`.
pub const FAILED_UPDATE: &str = "FailedUpdate";
/// Progressing reasons.
pub const CLONESET_AVAILABLE: &str = "CloneSetAvailable";
/// Progressing reason while paused (the constant's value; kruise's docs call it CloneSetProgressPaused).
pub const CLONESET_PROGRESS_PAUSED: &str = "CloneSetPaused";
/// Progressing reason when the partition is reached.
pub const CLONESET_PROGRESS_PARTITION_AVAILABLE: &str = "ProgressPartitionAvailable";
/// Progressing reason past the deadline.
pub const CLONESET_PROGRESS_DEADLINE_EXCEEDED: &str = "ProgressDeadlineExceeded";
/// Progressing reason otherwise.
pub const CLONESET_PROGRESS_UPDATED: &str = "CloneSetUpdated";

/// `GetCloneSetCondition`.
pub fn condition<'a>(status: &'a CloneSetStatus, type_: &str) -> Option<&'a CloneSetCondition> {
    status.conditions.iter().find(|c| c.type_ == type_)
}

/// `NewCloneSetCondition`.
pub fn new_condition(type_: &str, status: &str, reason: &str, message: &str, now: Timestamp) -> CloneSetCondition {
    let t = Some(Time(pods::whole_seconds(now)));
    CloneSetCondition {
        type_: type_.into(),
        status: status.into(),
        last_update_time: t.clone(),
        last_transition_time: t,
        reason: reason.into(),
        message: message.into(),
    }
}

/// `SetCloneSetCondition`: nothing when status and reason are the same; the transition time kept
/// when only the reason changes; the condition moved to the end.
pub fn set_condition(status: &mut CloneSetStatus, mut cond: CloneSetCondition) {
    if let Some(cur) = condition(status, &cond.type_) {
        if cur.status == cond.status && cur.reason == cond.reason {
            return;
        }
        if cur.status == cond.status {
            cond.last_transition_time = cur.last_transition_time.clone();
        }
    }
    status.conditions.retain(|c| c.type_ != cond.type_);
    status.conditions.push(cond);
}

/// [`set_condition`] on a bare condition list (the FailedScale/FailedUpdate conditions of a round).
pub fn set_condition_for_failure(conditions: &mut Vec<CloneSetCondition>, cond: CloneSetCondition) {
    let mut st = CloneSetStatus { conditions: std::mem::take(conditions), ..Default::default() };
    set_condition(&mut st, cond);
    *conditions = st.conditions;
}

/// `HasProgressDeadline`.
pub fn has_progress_deadline(cs: &CloneSet) -> bool {
    cs.spec.progress_deadline_seconds.is_some_and(|p| p != i32::MAX)
}

/// `getRequeueSecondsFromCondition`: time to the deadline, plus a second when it is more than one.
pub fn requeue_from_condition(
    cond: Option<&CloneSetCondition>,
    deadline_seconds: i32,
    now: Timestamp,
) -> Option<SignedDuration> {
    let cond = cond?;
    let last = cond.last_update_time.as_ref().map(|t| t.0).unwrap_or(Timestamp::UNIX_EPOCH);
    let after = (last + SignedDuration::from_secs(i64::from(deadline_seconds))).duration_since(now);
    Some(if after < SignedDuration::from_secs(1) { after } else { after + SignedDuration::from_secs(1) })
}

/// `calculateProgressingStatus`: sets (or removes) the Progressing condition on `new`; returns the
/// requeue the deadline needs.
pub fn progressing(cs: &CloneSet, s: &Settings, new: &mut CloneSetStatus, now: Timestamp) -> Option<SignedDuration> {
    if !has_progress_deadline(cs) {
        new.conditions.retain(|c| c.type_ != PROGRESSING);
        return None;
    }
    let replicas = cs.spec.replicas.unwrap_or(1);
    let available = new.current_revision == new.update_revision
        && new.replicas == replicas
        && new.updated_replicas == replicas
        && new.updated_available_replicas == replicas;
    let partition_available =
        new.expected_updated_replicas < replicas && new.expected_updated_replicas <= new.updated_available_replicas;
    let deadline = cs.spec.progress_deadline_seconds.unwrap_or(0);
    let exceeded = condition(new, PROGRESSING).is_some_and(|c| {
        c.reason == CLONESET_PROGRESS_DEADLINE_EXCEEDED
            || c.last_update_time.as_ref().is_some_and(|t| t.0 + SignedDuration::from_secs(i64::from(deadline)) < now)
    });
    let set = |new: &mut CloneSetStatus, status: &str, reason: &str, msg: &str| {
        set_condition(new, new_condition(PROGRESSING, status, reason, msg, now));
    };
    if available {
        set(new, "True", CLONESET_AVAILABLE, "CloneSet is available");
        None
    } else if s.paused {
        set(new, "True", CLONESET_PROGRESS_PAUSED, "CloneSet is paused");
        None
    } else if partition_available {
        set(new, "True", CLONESET_PROGRESS_PARTITION_AVAILABLE, "CloneSet has been paused due to partition ready");
        None
    } else if exceeded {
        let msg = format!("CloneSet revision {} has timed out progressing", new.update_revision);
        set(new, "False", CLONESET_PROGRESS_DEADLINE_EXCEEDED, &msg);
        None
    } else {
        set(new, "True", CLONESET_PROGRESS_UPDATED, "CloneSet is progressing");
        requeue_from_condition(condition(new, PROGRESSING), deadline, now)
    }
}

/// What the round knows besides the pods.
pub struct Observed<'a> {
    pub current_revision: &'a str,
    pub update_revision: &'a str,
    pub collision_count: i32,
    pub label_selector: String,
    /// The conditions to start from (the CloneSet's, plus this round's FailedScale/FailedUpdate).
    pub conditions: Vec<CloneSetCondition>,
}

/// `calculateStatus` over the active pods; returns the status and the requeue for the deadline.
pub fn compute(
    cs: &CloneSet,
    s: &Settings,
    pods: &[&Pod],
    o: Observed<'_>,
    now: Timestamp,
) -> (CloneSetStatus, Option<SignedDuration>) {
    let mut st = CloneSetStatus {
        observed_generation: cs.metadata.generation.unwrap_or(0),
        current_revision: o.current_revision.into(),
        update_revision: o.update_revision.into(),
        collision_count: Some(o.collision_count),
        label_selector: o.label_selector,
        conditions: o.conditions,
        ..Default::default()
    };
    for p in pods {
        let ready = s.is_update_ready(p, 0, now);
        let available = s.is_available(p, now);
        let updated = equal_to_revision_hash(p, o.update_revision);
        st.replicas += 1;
        st.ready_replicas += i32::from(ready);
        st.available_replicas += i32::from(available);
        st.updated_replicas += i32::from(updated);
        st.updated_ready_replicas += i32::from(updated && ready);
        st.updated_available_replicas += i32::from(updated && available);
    }
    if st.updated_replicas == st.replicas && st.replicas == s.replicas {
        st.current_revision = st.update_revision.clone();
    }
    st.expected_updated_replicas = s.replicas - s.partition;
    let requeue = progressing(cs, s, &mut st, now);
    (st, requeue)
}

/// `hasProgressingConditionChanged`: status or reason.
pub fn progressing_changed(old: &CloneSetStatus, new: &CloneSetStatus) -> bool {
    match (condition(old, PROGRESSING), condition(new, PROGRESSING)) {
        (None, None) => false,
        (Some(a), Some(b)) => a.status != b.status || a.reason != b.reason,
        _ => true,
    }
}

/// `inconsistentStatus`: whether kruise would write the status.
pub fn changed(old: &CloneSetStatus, new: &CloneSetStatus) -> bool {
    new.observed_generation > old.observed_generation
        || new.replicas != old.replicas
        || new.ready_replicas != old.ready_replicas
        || new.available_replicas != old.available_replicas
        || new.updated_ready_replicas != old.updated_ready_replicas
        || new.updated_replicas != old.updated_replicas
        || new.updated_available_replicas != old.updated_available_replicas
        || new.expected_updated_replicas != old.expected_updated_replicas
        || new.update_revision != old.update_revision
        || new.current_revision != old.current_revision
        || new.label_selector != old.label_selector
        || progressing_changed(old, new)
}

#[cfg(test)]
mod tests;
