//! The CloneSet controller's central arithmetic (spec §5.3; kruise's
//! `calculateDiffsWithExpectation`): from the replicas, partition, maxSurge, maxUnavailable,
//! scaleStrategy.maxUnavailable and the pods as they are, how many pods to create (and how many of
//! those at the current revision), how many to delete (and how many old ones), how many ready pods
//! may be deleted, how much surge to use, and how many pods to move to the update revision
//! (negative: back to the current one). Scale and update both start from it, so its numbers are
//! ported with kruise's own table, row by row.
//!
//! Pods are counted as "new" when they carry the update revision (with gate
//! PreparingUpdateAsUpdate and the scale step's caller, pods in PreparingUpdate count as new);
//! PreparingDelete pods are "pre-deleting"; the others are active, and among them
//! specified-delete pods are "to delete" and the rest "unavailable" when not available.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use super::settings::Settings;
use crate::core::lifecycle;
use crate::core::lifecycle::State;

/// kruise's `expectationDiffs`, every field (the `diff` of `kruise plan -o json`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpectationDiffs {
    /// Pods to create.
    pub scale_up_num: i32,
    /// Of the pods to create, how many at the current revision (may exceed `scale_up_num`).
    pub scale_up_num_old_revision: i32,
    /// Pods to delete, beyond those already specified for deletion.
    pub scale_down_num: i32,
    /// Of the pods to delete, how many at old revisions.
    pub scale_down_num_old_revision: i32,
    /// Creations allowed by scaleStrategy.maxUnavailable.
    pub scale_up_limit: i32,
    /// Ready pods that may be deleted now (updateStrategy.maxUnavailable).
    pub delete_ready_limit: i32,
    /// Pods above replicas used for this step.
    pub use_surge: i32,
    /// Of the surge, how many at old revisions.
    pub use_surge_old_revision: i32,
    /// Pods to move to the update revision (negative: to the current revision).
    pub update_num: i32,
    /// Unavailable pods the update step may reach.
    pub update_max_unavailable: i32,
}

/// How pods were counted (for "why waiting" and tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub new: i32,
    pub new_active: i32,
    pub old: i32,
    pub old_active: i32,
    pub unavailable_new: i32,
    pub unavailable_old: i32,
    pub to_delete_new: i32,
    pub to_delete_old: i32,
    pub pre_deleting_new: i32,
    pub pre_deleting_old: i32,
}

impl Counts {
    /// Pods not available or on their way out.
    pub fn total_unavailable(&self) -> i32 {
        self.pre_deleting_new + self.pre_deleting_old + self.unavailable_new + self.unavailable_old
    }
}

/// `revision.IsPodUpdate` when `preparing_update_as_update`, else `EqualToRevisionHash`.
pub fn counts(
    s: &Settings,
    pods: &[&Pod],
    update_revision: &str,
    preparing_update_as_update: bool,
    now: Timestamp,
) -> Counts {
    let mut c = Counts::default();
    for p in pods {
        let is_new = (preparing_update_as_update && lifecycle::state(p) == State::PreparingUpdate)
            || super::revision::equal_to_revision_hash(p, update_revision);
        let pre_deleting = lifecycle::state(p) == State::PreparingDelete;
        let to_delete = !pre_deleting && s.is_specified_delete(p);
        let unavailable = !pre_deleting && !to_delete && !s.is_available(p, now);
        let (total, active, unavail, del, pre) = if is_new {
            (&mut c.new, &mut c.new_active, &mut c.unavailable_new, &mut c.to_delete_new, &mut c.pre_deleting_new)
        } else {
            (&mut c.old, &mut c.old_active, &mut c.unavailable_old, &mut c.to_delete_old, &mut c.pre_deleting_old)
        };
        *total += 1;
        if pre_deleting {
            *pre += 1;
        } else {
            *active += 1;
            *del += i32::from(to_delete);
            *unavail += i32::from(unavailable);
        }
    }
    c
}

/// `calculateDiffsWithExpectation`. `preparing_update_as_update` is true when the scale step calls
/// with gate PreparingUpdateAsUpdate on (kruise passes `revision.IsPodUpdate` there).
pub fn calculate(
    s: &Settings,
    pods: &[&Pod],
    current_revision: &str,
    update_revision: &str,
    preparing_update_as_update: bool,
    now: Timestamp,
) -> ExpectationDiffs {
    let c = counts(s, pods, update_revision, preparing_update_as_update, now);
    calculate_from_counts(s, &c, pods.len() as i32, current_revision == update_revision)
}

/// The arithmetic itself, over counted pods.
pub fn calculate_from_counts(
    s: &Settings,
    c: &Counts,
    total_pods: i32,
    revisions_consistent: bool,
) -> ExpectationDiffs {
    let (replicas, partition) = (s.replicas, s.partition);
    let (max_surge, max_unavailable) = (s.max_surge, s.max_unavailable);
    let mut res = ExpectationDiffs::default();

    let mut update_old_diff = c.old_active - partition;
    let mut update_new_diff = c.new_active - (replicas - partition);
    let total_unavailable = c.total_unavailable();
    // Without the rollback gate (or with a single revision) pods only move to the update revision.
    if revisions_consistent || !s.gates.partition_rollback {
        update_old_diff = update_old_diff.max(0);
        update_new_diff = update_new_diff.min(0);
    }

    if max_surge > 0 {
        let to_delete = c.to_delete_new + c.to_delete_old;
        let (mut scale_surge, mut scale_old_surge) = (0, 0);
        if to_delete > 0 {
            scale_surge = (total_unavailable + to_delete - max_unavailable).max(0).min(to_delete);
            if scale_surge > c.to_delete_new {
                scale_old_surge = scale_surge - c.to_delete_new;
            }
        }
        let (mut update_surge, mut update_old_surge) = (0, 0);
        if (update_old_diff > 0 && update_new_diff < 0) || (update_old_diff < 0 && update_new_diff > 0) {
            if update_old_diff.abs() <= update_new_diff.abs() {
                update_surge = update_old_diff.abs();
                if update_old_diff < 0 {
                    update_old_surge = update_surge;
                }
            } else {
                update_surge = update_new_diff.abs();
                if update_new_diff > 0 {
                    update_old_surge = update_surge;
                }
            }
        }
        // The controller never scales and updates in one round: the larger need wins.
        if scale_surge >= update_surge {
            res.use_surge = max_surge.min(scale_surge);
            res.use_surge_old_revision = res.use_surge.min(scale_old_surge);
        } else {
            res.use_surge = max_surge.min(update_surge);
            res.use_surge_old_revision = res.use_surge.min(update_old_surge);
        }
    }

    let (mut current_total, mut current_old) = (total_pods, c.old);
    if s.exclude_preparing_delete {
        current_total -= c.pre_deleting_old + c.pre_deleting_new;
        current_old -= c.pre_deleting_old;
    }
    let expected_total = replicas + res.use_surge;
    let expected_old = partition + res.use_surge_old_revision;

    let up = expected_total - current_total;
    if up > 0 {
        res.scale_up_num = up;
        res.scale_up_num_old_revision = (expected_old - current_old).max(0);
        res.scale_up_limit = res.scale_up_num.min((s.scale_max_unavailable - total_unavailable).max(0));
    }
    let down = current_total - c.to_delete_old - c.to_delete_new - expected_total;
    if down > 0 {
        res.scale_down_num = down;
        res.scale_down_num_old_revision = (current_old - c.to_delete_old - expected_old).max(0);
    }
    if c.to_delete_new > 0 || c.to_delete_old > 0 || res.scale_down_num > 0 {
        res.delete_ready_limit = (max_unavailable + (total_pods - replicas) - total_unavailable).max(0);
    }
    res.update_num = if update_old_diff.abs() <= update_new_diff.abs() { update_old_diff } else { -update_new_diff };
    if res.update_num != 0 {
        res.update_max_unavailable = max_unavailable + total_pods - replicas;
    }
    res
}

#[cfg(test)]
mod tests;
