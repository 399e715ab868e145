//! The rolling-update arithmetic of an Advanced StatefulSet (spec §6.4), kruise's
//! `rollingUpdateStatefulsetPods` without the pod writes, `handleSpecifiedDeletedPods`,
//! `sortPodsToUpdate`, `getScaleMaxUnavailable` and the pod predicates of
//! `stateful_set_utils.go` (`isHealthy`, `isRunningAndReady`, `isRunningAndAvailable`):
//! - `maxUnavailable` is `rollingUpdate.maxUnavailable` (default 1) scaled over `replicas`
//!   rounding down (Kubernetes' deprecated `GetValueFromIntOrPercent`: any string is a
//!   percentage), at least 1; the webhook allows a value other than 1 only under Parallel, the
//!   controller applies whatever is there;
//! - a replica is unavailable when it is not healthy (lifecycle state other than ""/Normal, not
//!   Running+Ready, or terminating), its in-place update is not complete, it is not yet available
//!   for `minReadySeconds`, or (auto-resize) its claims are not ready;
//! - specified deletes go first, highest ordinal first, not bound by the partition; an available
//!   one is skipped while the unavailable count is at `maxUnavailable`;
//! - then the targets of `sortPodsToUpdate`, each not at the update revision: with the
//!   unavailable count at `maxUnavailable` and the target available the round stops; otherwise it
//!   is updated (in place or recreated, decided elsewhere) and counts as unavailable;
//! - with claims resized as pods roll ([`super::resize`]), a target at the update revision whose
//!   claims are too small is a target too: its claims are expanded first and the pod waits,
//!   unavailable, until they are; a claim that cannot be expanded stops the round;
//! - a target at the update revision whose volumes lack a claim template's claim (a template was
//!   added) is a target too, recreated: kruise patches the volumes in and loops on the API
//!   server's Forbidden (#1389, #2343).
//!
//! Kept from Go: "up to date" in the update loop is the exact label `controller-revision-hash ==
//! <update revision name>`, while `sortPodsToUpdate` and creation use kruise's `IsPodUpdate`
//! (short-hash match, and `PreparingUpdate` counts as updated with gate
//! `PreparingUpdateAsUpdate`).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::identity;
use super::ordinals::Slot;
use super::resize::{PodClaims, Refusal};
use crate::apis::keys::SPECIFIED_DELETE;
use crate::apis::statefulset::v1beta1::StatefulSet;
use crate::apis::statefulset::{MAX_MIN_READY_SECONDS, ON_DELETE, PARALLEL, RollingUpdateStatefulSetStrategy};
use crate::compat::intstr::k8s_value_from_int_or_percent;
use crate::core::features::{FeatureGates, Gate};
use crate::core::rollout::order;
use crate::core::{lifecycle, pods};

/// `getMinReadySeconds`: `rollingUpdate.minReadySeconds`, 0 when unset.
pub fn min_ready_seconds(set: &StatefulSet) -> i32 {
    set.spec.update_strategy.rolling_update.as_ref().and_then(|r| r.min_ready_seconds).unwrap_or(0)
}

/// `allowsBurst`: `podManagementPolicy: Parallel`.
pub fn allows_burst(set: &StatefulSet) -> bool {
    set.spec.pod_management_policy == PARALLEL
}

fn replicas(set: &StatefulSet) -> i64 {
    i64::from(set.spec.replicas.unwrap_or(1))
}

/// The rolling update's `maxUnavailable`: 1 without `rollingUpdate`, else its value (default
/// int 1) over `replicas` rounding down, at least 1.
pub fn max_unavailable(set: &StatefulSet) -> Result<i64, String> {
    let Some(ru) = &set.spec.update_strategy.rolling_update else { return Ok(1) };
    let value = ru.max_unavailable.clone().unwrap_or(IntOrString::Int(1));
    Ok(k8s_value_from_int_or_percent(Some(&value), replicas(set), false)?.max(1))
}

/// `getScaleMaxUnavailable`: `scaleStrategy.maxUnavailable` over `replicas` rounding down, at
/// least 1; `None` when unset (no bound on scaling).
pub fn scale_max_unavailable(set: &StatefulSet) -> Result<Option<i64>, String> {
    let Some(value) = set.spec.scale_strategy.as_ref().and_then(|s| s.max_unavailable.as_ref()) else {
        return Ok(None);
    };
    Ok(Some(k8s_value_from_int_or_percent(Some(value), replicas(set), false)?.max(1)))
}

/// `isTerminating`: a deletion timestamp is set.
pub fn is_terminating(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
}

/// `isCreated`: the pod has a phase.
pub fn is_created(pod: &Pod) -> bool {
    !pods::phase(pod).is_empty()
}

/// `isRunningAndReady`.
pub fn is_running_and_ready(pod: &Pod) -> bool {
    pods::phase(pod) == "Running" && pods::is_ready(pod)
}

fn lifecycle_normal(pod: &Pod) -> bool {
    matches!(lifecycle::state(pod), lifecycle::State::Unset | lifecycle::State::Normal)
}

/// `isHealthy`: lifecycle state ""/Normal, Running and Ready, not terminating.
pub fn is_healthy(pod: &Pod) -> bool {
    lifecycle_normal(pod) && is_running_and_ready(pod) && !is_terminating(pod)
}

/// `isRunningAndAvailable`: lifecycle ""/Normal, Running, Ready, and Ready for
/// `min_ready_seconds` at `now` (the boundary counts as available). When ready but not yet
/// available, also how long until it is (`minReadySeconds` when the transition time is unknown).
pub fn running_and_available(pod: &Pod, min_ready_seconds: i32, now: Timestamp) -> (bool, Option<SignedDuration>) {
    if !lifecycle_normal(pod) || !is_running_and_ready(pod) {
        return (false, None);
    }
    if min_ready_seconds == 0 {
        return (true, None);
    }
    let min_ready = SignedDuration::from_secs(i64::from(min_ready_seconds));
    let Some(since) = pods::condition(pod, pods::POD_READY).and_then(|c| c.last_transition_time.as_ref()) else {
        return (false, Some(min_ready));
    };
    let wait = (since.0 + min_ready).duration_since(now);
    if wait > SignedDuration::ZERO { (false, Some(wait)) } else { (true, None) }
}

/// kruise's `revision.IsPodUpdate`: the pod's revision label is the update revision or has its
/// short hash, or (gate `PreparingUpdateAsUpdate`) the pod is in `PreparingUpdate`.
pub fn is_pod_update(pod: &Pod, update_revision: &str, gates: &FeatureGates) -> bool {
    if gates.enabled(Gate::PreparingUpdateAsUpdate) && lifecycle::state(pod) == lifecycle::PREPARING_UPDATE {
        return true;
    }
    let short = |s: &str| s.rsplit('-').next().unwrap_or(s).to_string();
    let label = identity::pod_revision(pod);
    label == update_revision || short(label) == short(update_revision)
}

/// `specifieddelete.IsSpecifiedDelete`: the label is present (any value).
pub fn is_specified_delete(pod: &Pod) -> bool {
    pods::labels(pod).contains_key(SPECIFIED_DELETE)
}

/// `sortPodsToUpdate`: the ordinals to bring to the update revision, in order. `start` is the
/// first ordinal (a slot's index in Go is `ordinal - start`), `slots` the replicas ascending.
/// Ordered: from the highest slot down to slot `partition`, at most `replicas - partition`.
/// Unordered: the already updated or terminating pods first, then the others in
/// `priorityStrategy` order (ordinal descending on ties), cut to `replicas - partition`.
pub fn sort_pods_to_update(
    strategy: Option<&RollingUpdateStatefulSetStrategy>,
    update_revision: &str,
    total_replicas: i64,
    start: i64,
    slots: &[Slot<'_>],
    gates: &FeatureGates,
) -> Vec<i64> {
    let update_min = strategy.and_then(|s| s.partition).map_or(0, i64::from);
    let max_update = total_replicas - update_min;
    if max_update <= 0 {
        return Vec::new();
    }
    let max_update = usize::try_from(max_update).unwrap_or(usize::MAX);
    let present = slots.iter().rev().filter_map(|s| s.pod.map(|p| (s.ordinal, p)));
    let Some(unordered) = strategy.and_then(|s| s.unordered_update.as_ref()) else {
        return present.take_while(|(o, _)| o - start >= update_min).take(max_update).map(|(o, _)| o).collect();
    };
    let (updated, waiting): (Vec<_>, Vec<_>) =
        present.partition(|(_, p)| is_terminating(p) || is_pod_update(p, update_revision, gates));
    let mut waiting_idx: Vec<usize> = (0..waiting.len()).collect();
    if let Some(priority) = &unordered.priority_strategy {
        let labels: Vec<order::PodLabels<'_>> = waiting.iter().map(|(_, p)| Some(pods::labels(p))).collect();
        order::sort_by_priority(priority, &labels, &mut waiting_idx);
    }
    updated.iter().map(|(o, _)| *o).chain(waiting_idx.iter().map(|&i| waiting[i].0)).take(max_update).collect()
}

/// The unavailable replicas by pod name, and the soonest a ready pod becomes available.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Unavailable {
    /// Names of the unavailable replicas.
    pub names: BTreeSet<String>,
    /// When to look again: the shortest wait for a ready pod to become available (kruise's
    /// `durationStore.Push`, capped at 300s).
    pub requeue_after: Option<SignedDuration>,
}

/// The unavailable set of step 4: `update_incomplete` says whether a pod's in-place update is not
/// complete (`CheckPodUpdateCompleted` failing), `claims_not_ready` whether its claims are not
/// ready (auto-resize; pass `|_| false` when that gate is off).
pub fn unavailable_replicas(
    slots: &[Slot<'_>],
    min_ready_seconds: i32,
    now: Timestamp,
    update_incomplete: impl Fn(&Pod) -> bool,
    claims_not_ready: impl Fn(&Pod) -> bool,
) -> Unavailable {
    let mut out = Unavailable::default();
    let mut min_wait = SignedDuration::from_secs(i64::from(MAX_MIN_READY_SECONDS));
    for pod in slots.iter().filter_map(|s| s.pod) {
        let unavailable = if !is_healthy(pod) || update_incomplete(pod) {
            true
        } else {
            match running_and_available(pod, min_ready_seconds, now) {
                (false, wait) => {
                    if let Some(w) = wait.filter(|w| *w <= min_wait) {
                        min_wait = w;
                        out.requeue_after = Some(w);
                    }
                    true
                }
                (true, _) => claims_not_ready(pod),
            }
        };
        if unavailable {
            out.names.insert(pods::name(pod).to_string());
        }
    }
    out
}

/// Why a round does no rolling update at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoRollingUpdate {
    /// `updateStrategy.type: OnDelete`: pods change revision only when the user deletes them.
    OnDelete,
    /// `rollingUpdate.paused`.
    Paused,
}

/// A target the round stopped at, and what it waits for.
#[derive(Clone, Debug, PartialEq)]
pub struct Blocked {
    /// The available target that may not be made unavailable now.
    pub ordinal: i64,
    /// The pods already unavailable (as many as `maxUnavailable` allows, or more).
    pub waiting_for: Vec<String>,
}

/// What the rolling update may do this round.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RollingRound {
    /// `maxUnavailable` as computed.
    pub max_unavailable: i64,
    /// The update order (`sortPodsToUpdate`).
    pub order: Vec<i64>,
    /// Specified-delete pods to delete, in order (ordinals).
    pub specified_deletes: Vec<i64>,
    /// Specified-delete pods skipped because the budget is spent.
    pub specified_deletes_waiting: Vec<i64>,
    /// Targets to update (in place or recreate), in order.
    pub updates: Vec<i64>,
    /// Where the round stopped, if it did.
    pub blocked: Option<Blocked>,
    /// The unavailable pods when the round ends, by name.
    pub unavailable: BTreeSet<String>,
    /// Targets whose claims are expanded this round (auto-resize), with the claims to write.
    pub resizes: Vec<(i64, Vec<PersistentVolumeClaim>)>,
    /// Targets that wait for their claims' resize to complete (counted unavailable).
    pub resizing: Vec<i64>,
    /// A target whose claims cannot be patched: the round stopped there.
    pub refused: Option<(i64, Refusal)>,
}

/// What the rolling update asks of a pod's storage.
#[derive(Clone, Copy)]
pub struct Storage<'f> {
    /// The pod's claims against their templates when the set resizes them as it rolls
    /// ([`super::resize::enabled`]), else `None`.
    pub claims: Option<&'f dyn Fn(&Pod) -> PodClaims>,
    /// Whether the pod's volumes cover the claim templates ([`identity::storage_matches`]).
    pub volumes_ok: &'f dyn Fn(&Pod) -> bool,
}

impl Storage<'_> {
    /// No resizing, every pod's volumes taken as matching (tests of the arithmetic alone).
    pub const IGNORED: Storage<'static> = Storage { claims: None, volumes_ok: &|_| true };
}

/// Steps 3 and 5–7 of spec §6.4 over the replicas (`slots`) and the unavailable set of step 4.
/// `update_revision` is the update revision's name. Like Go's `replicas`, the slots should hold
/// the pods this round's scaling creates (without a phase they count as unavailable). With
/// `storage.claims`, a pod at the update revision whose claims are too small is a target too, its
/// claims are expanded first, and it is updated only once they are; one whose volumes do not
/// cover the claim templates (`storage.volumes_ok`) is a target too.
pub fn plan_rolling_update(
    set: &StatefulSet,
    start: i64,
    slots: &[Slot<'_>],
    update_revision: &str,
    unavailable: &Unavailable,
    gates: &FeatureGates,
    storage: Storage<'_>,
) -> Result<Result<RollingRound, NoRollingUpdate>, String> {
    let Storage { claims, volumes_ok: storage_ok } = storage;
    if set.spec.update_strategy.type_ == ON_DELETE {
        return Ok(Err(NoRollingUpdate::OnDelete));
    }
    let strategy = set.spec.update_strategy.rolling_update.as_ref();
    if strategy.is_some_and(|s| s.paused) {
        return Ok(Err(NoRollingUpdate::Paused));
    }
    let max = max_unavailable(set)?;
    let mut round = RollingRound { max_unavailable: max, unavailable: unavailable.names.clone(), ..Default::default() };
    let budget_spent = |round: &RollingRound, pod: &Pod| {
        round.unavailable.len() as i64 >= max && !round.unavailable.contains(pods::name(pod))
    };

    // handleSpecifiedDeletedPods: highest first, any ordinal.
    let mut specified = BTreeSet::new();
    for slot in slots.iter().rev() {
        let Some(pod) = slot.pod.filter(|p| is_specified_delete(p)) else { continue };
        if budget_spent(&round, pod) {
            round.specified_deletes_waiting.push(slot.ordinal);
            continue;
        }
        specified.insert(slot.ordinal);
        round.specified_deletes.push(slot.ordinal);
        round.unavailable.insert(pods::name(pod).to_string());
    }

    round.order = sort_pods_to_update(strategy, update_revision, replicas(set), start, slots, gates);
    for &target in &round.order {
        let Ok(i) = slots.binary_search_by_key(&target, |s| s.ordinal) else { continue };
        let Some(pod) = slots[i].pod else { continue };
        let pod_claims = claims.map(|f| f(pod));
        let claims_match = pod_claims.as_ref().is_none_or(|c| c.matched);
        // A pod whose volumes lack a claim template's claim (one was added) is recreated like an
        // out-of-date pod: its volumes cannot change in place.
        if identity::pod_revision(pod) == update_revision && claims_match && storage_ok(pod) {
            continue;
        }
        if budget_spent(&round, pod) {
            round.blocked = Some(Blocked { ordinal: target, waiting_for: round.unavailable.iter().cloned().collect() });
            break;
        }
        // Claims are resized before the pod is updated: kruise patches a claim only once a pod
        // will reference it again (online file-system expansion needs a running pod).
        if let Some(c) = pod_claims {
            if !c.matched {
                if let Some(refusal) = c.refusal {
                    round.refused = Some((target, refusal));
                    break;
                }
                round.resizes.push((target, c.writes));
            }
            if !c.completed {
                round.unavailable.insert(pods::name(pod).to_string());
                round.resizing.push(target);
                continue;
            }
        }
        if !specified.contains(&target) && !is_terminating(pod) {
            round.updates.push(target);
            round.unavailable.insert(pods::name(pod).to_string());
        }
    }
    Ok(Ok(round))
}

#[cfg(test)]
mod tests;
