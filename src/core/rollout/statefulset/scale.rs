//! What the scaling part of an Advanced StatefulSet round does (spec §6.3), kruise's
//! `updateStatefulSet` from the first-unhealthy scan to the condemned pods, with
//! `processReplica`, `processCondemned`, `runForAllWithBreak`, `runForAll` and
//! `decreaseAndCheckMaxUnavailable` — the decisions only, in order, without the writes:
//! - replicas ascending: a missing one is created (not onto a stale claim, gate
//!   `StatefulSetAutoDeletePVC`), a Failed/Succeeded one deleted to be recreated, a Pending one
//!   has its missing claims created, one whose identity, storage or claim references drifted is
//!   restored;
//! - `OrderedReady` (monotonic): the round ends after a creation or a failed-pod deletion, at a
//!   terminating pod, and at a pod that is not Running+Ready+available — nothing after it runs,
//!   not even the rolling update;
//! - `Parallel` (burst): nothing waits, except under `scaleStrategy.maxUnavailable` M, where each
//!   creation, failed pod, terminating pod and unavailable pod spends one unit and the scan stops
//!   when M is spent (the rest of the round — condemned pods, rolling update — still runs);
//! - condemned pods, highest ordinal first: their claims get the retention policy's references;
//!   monotonic deletes one per round, only when every other pod is healthy (a condemned pod that
//!   is the first unhealthy one may go), and waits for a terminating one; burst deletes all that
//!   are not already terminating. A pod the preDelete hook holds in PreparingDelete is skipped
//!   (kruise's `deletePod` reports no change for it, so a monotonic round moves on).
//!
//! Not here: the in-place refresh `processReplica` also runs (`refreshPodState`, the shared
//! pod-update machinery), the lifecycle state a new pod gets ([`super::identity::creation_lifecycle_state`])
//! and its revision ([`super::revision::is_current_revision_needed`]).

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::budget::{
    allows_burst, is_healthy, is_running_and_ready, is_terminating, min_ready_seconds, running_and_available,
    scale_max_unavailable,
};
use super::identity;
use super::ordinals::{ReplicaRange, Slot};
use super::pvc;
use crate::apis::statefulset::v1beta1::StatefulSet;
use crate::core::features::{FeatureGates, Gate};
use crate::core::{lifecycle, pods};

/// One thing the scaling part of the round does, by ordinal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaleStep {
    /// Create the missing pod (its claims first).
    Create(i64),
    /// Delete a Failed or Succeeded replica; it is recreated in a later round.
    DeleteFailed(i64),
    /// Create the missing claims of a Pending replica.
    CreateMissingClaims(i64),
    /// Put back the replica's identity, storage or claim references (`UpdateStatefulPod`).
    Restore(i64),
    /// Give a condemned pod's claims the references the retention policy asks for.
    FixCondemnedClaims(i64),
    /// Delete a condemned pod (through the preDelete hook).
    DeleteCondemned(i64),
}

/// Why the scaling part stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The set is being deleted: status only.
    SetDeleting,
    /// Monotonic: a pod was created; the next waits for it.
    Created,
    /// Monotonic: a failed pod was deleted.
    FailedPodDeleted,
    /// A claim of the pod to create belongs to an earlier pod of that name (monotonic stops;
    /// burst skips that ordinal).
    StaleClaim,
    /// A claim of a Pending pod is being deleted (kruise returns an error).
    ClaimDeleting,
    /// The pod exists but has no phase yet (kruise would try to create it again and fail).
    NotCreatedYet,
    /// Monotonic: a replica is terminating.
    Terminating,
    /// Monotonic: a replica is not Running+Ready+available.
    NotAvailable,
    /// `scaleStrategy.maxUnavailable` is spent (the round goes on to condemned pods and updates).
    ScaleBudgetSpent,
    /// Monotonic: a condemned pod is terminating.
    CondemnedTerminating,
    /// Monotonic: a condemned pod waits for the first unhealthy pod.
    WaitingForUnhealthy,
    /// Monotonic: a condemned pod was deleted; one per round.
    CondemnedDeleted,
}

/// Where the scaling part stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stop {
    /// The ordinal it stopped at.
    pub ordinal: i64,
    /// Why.
    pub reason: StopReason,
    /// Whether the round ends here (no condemned pods, no rolling update).
    pub ends_round: bool,
}

/// The scaling part of a round.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScaleRound {
    /// What to do, in order.
    pub steps: Vec<ScaleStep>,
    /// Where it stopped, if it did.
    pub stop: Option<Stop>,
    /// When a pod becomes available (look again then).
    pub requeue_after: Option<SignedDuration>,
}

impl ScaleRound {
    /// Whether the rolling update may run after this.
    pub fn continues(&self) -> bool {
        self.stop.is_none_or(|s| !s.ends_round)
    }
}

/// `decreaseAndCheckMaxUnavailable`: spends one unit; true when none is left.
fn spend(budget: &mut Option<i64>) -> bool {
    match budget {
        None => false,
        Some(left) => {
            *left -= 1;
            *left <= 0
        }
    }
}

fn stop(round: &mut ScaleRound, ordinal: i64, reason: StopReason, ends_round: bool) {
    round.stop = Some(Stop { ordinal, reason, ends_round });
}

/// Keeps the shortest wait for a pod to become available.
fn wait(round: &mut ScaleRound, w: Option<SignedDuration>) {
    if let Some(w) = w.filter(|w| round.requeue_after.is_none_or(|r| *w < r)) {
        round.requeue_after = Some(w);
    }
}

/// The preDelete hook holds the pod and it already is in PreparingDelete: deleting it is waiting.
fn waiting_on_pre_delete(set: &StatefulSet, pod: &Pod) -> bool {
    let hook = set.spec.lifecycle.as_ref().and_then(|l| l.pre_delete.as_ref());
    lifecycle::is_hooked(hook, pod) && lifecycle::state(pod) == lifecycle::PREPARING_DELETE
}

fn ordinal_of(pod: &Pod) -> i64 {
    identity::pod_ordinal(pod).map_or(-1, i64::from)
}

/// The scaling part of a round over the replicas (`slots`, a missing pod as `None`) and the
/// condemned pods (highest ordinal first); `claim` looks a claim up by name.
pub fn plan_scale<'a>(
    set: &StatefulSet,
    range: &ReplicaRange,
    slots: &[Slot<'_>],
    condemned: &[&Pod],
    now: Timestamp,
    gates: &FeatureGates,
    claim: impl Fn(&str) -> Option<&'a PersistentVolumeClaim> + Copy,
) -> Result<ScaleRound, String> {
    let mut round = ScaleRound::default();
    if set.metadata.deletion_timestamp.is_some() {
        stop(&mut round, -1, StopReason::SetDeleting, true);
        return Ok(round);
    }
    let monotonic = !allows_burst(set);
    let min_ready = min_ready_seconds(set);
    let auto_delete_pvc = gates.enabled(Gate::StatefulSetAutoDeletePVC);
    let mut budget = scale_max_unavailable(set)?;

    // The first unhealthy pod: missing replicas count (Go holds a placeholder for them).
    let first_unhealthy = slots
        .iter()
        .filter(|s| s.pod.is_none_or(|p| !is_healthy(p)))
        .map(|s| s.ordinal)
        .chain(condemned.iter().filter(|p| !is_healthy(p)).map(|p| ordinal_of(p)))
        .min();

    for slot in slots {
        let ordinal = slot.ordinal;
        let Some(pod) = slot.pod else {
            // The pod to create has this name and no uid yet.
            let stub = Pod {
                metadata: ObjectMeta { name: Some(identity::pod_name(set, ordinal)), ..Default::default() },
                ..Default::default()
            };
            if auto_delete_pvc && pvc::pod_claim_is_stale(set, &stub, claim) {
                if monotonic {
                    stop(&mut round, ordinal, StopReason::StaleClaim, true);
                    return Ok(round);
                }
                continue;
            }
            round.steps.push(ScaleStep::Create(ordinal));
            if monotonic {
                stop(&mut round, ordinal, StopReason::Created, true);
                return Ok(round);
            }
            if spend(&mut budget) {
                stop(&mut round, ordinal, StopReason::ScaleBudgetSpent, false);
                break;
            }
            continue;
        };
        if matches!(pods::phase(pod), "Failed" | "Succeeded") {
            if spend(&mut budget) {
                stop(&mut round, ordinal, StopReason::ScaleBudgetSpent, false);
                break;
            }
            if !is_terminating(pod) {
                round.steps.push(ScaleStep::DeleteFailed(ordinal));
            }
            if monotonic {
                stop(&mut round, ordinal, StopReason::FailedPodDeleted, true);
                return Ok(round);
            }
            continue;
        }
        if pods::phase(pod).is_empty() {
            stop(&mut round, ordinal, StopReason::NotCreatedYet, true);
            return Ok(round);
        }
        if pods::phase(pod) == "Pending" {
            let claims = pvc::claims_to_create(set, pod, claim);
            if !claims.deleting.is_empty() {
                stop(&mut round, ordinal, StopReason::ClaimDeleting, true);
                return Ok(round);
            }
            if !claims.create.is_empty() {
                round.steps.push(ScaleStep::CreateMissingClaims(ordinal));
            }
        }
        if is_terminating(pod) {
            if monotonic {
                stop(&mut round, ordinal, StopReason::Terminating, true);
                return Ok(round);
            }
            if spend(&mut budget) {
                stop(&mut round, ordinal, StopReason::ScaleBudgetSpent, false);
                break;
            }
        }
        if monotonic || budget.is_some() {
            let (available, w) = running_and_available(pod, min_ready, now);
            if !available && monotonic {
                wait(&mut round, w);
                stop(&mut round, ordinal, StopReason::NotAvailable, true);
                return Ok(round);
            }
            if !available && spend(&mut budget) {
                wait(&mut round, w);
                stop(&mut round, ordinal, StopReason::ScaleBudgetSpent, false);
                break;
            }
        }
        let retention = !auto_delete_pvc || pvc::claims_match_retention_policy(set, pod, range, claim);
        if !(identity::identity_matches(set, pod) && identity::storage_matches(set, pod) && retention) {
            round.steps.push(ScaleStep::Restore(ordinal));
        }
    }

    if auto_delete_pvc {
        for pod in condemned {
            if !pvc::claims_match_retention_policy(set, pod, range, claim) {
                round.steps.push(ScaleStep::FixCondemnedClaims(ordinal_of(pod)));
            }
        }
    }
    for pod in condemned {
        let ordinal = ordinal_of(pod);
        if is_terminating(pod) {
            if monotonic {
                stop(&mut round, ordinal, StopReason::CondemnedTerminating, true);
                return Ok(round);
            }
            continue;
        }
        if monotonic && first_unhealthy != Some(ordinal) {
            let (available, w) = running_and_available(pod, min_ready, now);
            if !is_running_and_ready(pod) || !available {
                wait(&mut round, w);
                stop(&mut round, ordinal, StopReason::WaitingForUnhealthy, true);
                return Ok(round);
            }
        }
        // kruise's `deletePod` on a pod the preDelete hook holds in PreparingDelete changes
        // nothing, and a monotonic round then goes on to the next condemned pod.
        if waiting_on_pre_delete(set, pod) {
            continue;
        }
        round.steps.push(ScaleStep::DeleteCondemned(ordinal));
        if monotonic {
            stop(&mut round, ordinal, StopReason::CondemnedDeleted, true);
            return Ok(round);
        }
    }
    Ok(round)
}

#[cfg(test)]
mod tests;
