//! One round of the Advanced StatefulSet controller as a pure function (spec §6): [`plan`] takes
//! the set, the pods, claims and ControllerRevisions it may own, the feature gates and the clock,
//! and returns this round's [`Plan`] — actions in the order to apply them (each with its kind,
//! pod, revision, reason and pinned writes), Events, why the rollout waits, errors, the status and
//! its planned write, and when to look again. It is kruise's `syncStatefulSet` →
//! `updateStatefulSet` + `rollingUpdateStatefulsetPods` + `updateStatefulSetStatus` +
//! `truncateHistory`, assembled from the decision modules of this directory:
//! 1. pods are claimed ([`super::adoption`]): orphans that match are adopted, owned pods that no
//!    longer match released; orphan revisions are adopted;
//! 2. the update revision is found, made the newest again (rollback) or created
//!    ([`super::revision`]);
//! 3. replicas and condemned pods are sorted by ordinal ([`super::ordinals`]), and every replica
//!    the scan reaches is refreshed by the shared pod-update machine
//!    ([`crate::core::rollout::podupdate::Machine::refresh`]: in-place progress, lifecycle);
//! 4. the scaling part ([`super::scale`]): creations at the revision `isCurrentRevisionNeeded`
//!    picks (claims first), failed-pod deletions, identity/storage/claim repairs, condemned pods'
//!    claims and deletions (through the preDelete hook: PreparingDelete first);
//! 5. unless it ended the round: the rolling update ([`super::budget`]): specified deletes, then
//!    each pod the budget lets through is updated in place when `podUpdatePolicy` allows and the
//!    classifier agrees ([`crate::core::inplace::classify::classify_revision_update`]), else
//!    deleted — the next round creates it at the update revision (`InPlaceOnly` makes that an
//!    error); with gate PodUnavailableBudgetUpdateGate each such pod is first put to its
//!    PodUnavailableBudget ([`UpdateAllowance`], as for the CloneSet; the units to take are in
//!    [`Plan::budget_takes`]) and the first refusal ends the updates of the round;
//! 6. the status ([`super::status`], `volumeClaims` included) and its write when kruise's
//!    `inconsistentStatus` says so;
//!    revisions beyond `revisionHistoryLimit` that no pod uses are deleted.
//!
//! Pod writes go through one [`PodChanges`], so several changes of a pod in a round compose (the
//! first pinned to the observed resourceVersion, the next to the version it returns); deletes
//! carry uid and resourceVersion preconditions. Expectations are the caller's, as for the
//! CloneSet. The status is counted over the pods as observed and adjusted for this round's
//! creations, failed-pod deletions and updates of current-revision pods, as kruise adjusts its
//! counts; `status.volumeClaims` counts the replicas' claims against their templates. Claims are
//! expanded as the pods roll when the set asks for it ([`super::resize`]). Not here: the shared
//! machine moves an in-place updated pod to lifecycle `Updating` whether or not an inPlaceUpdate
//! hook is set (kruise's ASTS only with the hook).

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use super::budget::{self, NoRollingUpdate};
use super::identity::{self, pod_revision};
use super::ordinals::{self, ReplicaRange, Slot};
use super::resize::{self, PodClaims};
use super::revision::{self as asts_revision, RevisionChange};
use super::scale::{self, ScaleStep, StopReason};
use super::{adoption, pvc, status};
use crate::apis::podunavailablebudget::PodUnavailableBudget;
use crate::apis::statefulset::v1beta1::{StatefulSet, StatefulSetStatus};
use crate::apis::statefulset::{IN_PLACE_IF_POSSIBLE, IN_PLACE_ONLY};
use crate::core::budget::rollout::{BudgetTake, UpdateAllowance};
use crate::core::features::{FeatureGates, Gate};
use crate::core::history;
use crate::core::inplace::apply::Options;
use crate::core::inplace::classify::{self, ClassifyOptions, UpdateSpec, classify_revision_update};
use crate::core::inplace::refresh;
use crate::core::lifecycle::{self, State};
use crate::core::pods;
use crate::core::rollout::actions::{Action, ActionKind, Pin, PodChanges, Write, object_patch};
use crate::core::rollout::plan::{Event, Step, min_positive, status_write};
use crate::core::rollout::podupdate::{self, Machine};

/// Everything a round reads.
pub struct Input<'a> {
    pub set: &'a StatefulSet,
    /// Pods in the set's namespace (owned, orphans and others: adoption sorts them).
    pub pods: &'a [&'a Pod],
    /// Claims in the set's namespace.
    pub pvcs: &'a [&'a PersistentVolumeClaim],
    /// ControllerRevisions in the set's namespace.
    pub revisions: &'a [&'a ControllerRevision],
    /// StorageClasses (read when claims are resized: [`resize::enabled`]).
    pub storage_classes: &'a [&'a StorageClass],
    /// PodUnavailableBudgets of the set's namespace (read with gate
    /// PodUnavailableBudgetUpdateGate only).
    pub budgets: &'a [&'a PodUnavailableBudget],
    pub gates: &'a FeatureGates,
    pub now: Timestamp,
}

/// One round's decisions.
#[derive(Debug)]
pub struct Plan {
    /// `namespace/name`.
    pub statefulset: String,
    pub current_revision: String,
    pub update_revision: String,
    pub actions: Vec<Action>,
    pub events: Vec<Event>,
    /// Why the rollout is not moving further this round.
    pub waiting: Vec<String>,
    pub errors: Vec<String>,
    /// The round's status.
    pub status: StatefulSetStatus,
    /// Its write, when kruise would write it, after the actions.
    pub status_write: Option<Write>,
    pub requeue_after: Option<SignedDuration>,
    /// Budget units the controller takes before the pods' writes, in order (gate
    /// PodUnavailableBudgetUpdateGate).
    pub budget_takes: Vec<BudgetTake>,
}

/// `getPodRevision(pod) == revision` (the set's pods carry the full revision name).
fn at_revision(pod: &Pod, revision: &str) -> bool {
    pod_revision(pod) == revision
}

fn write_revision(pod: &mut Pod, revision: &str) {
    pod.metadata.labels.get_or_insert_with(Default::default).insert(identity::REVISION_LABEL.into(), revision.into());
}

/// The in-place options of the set (`inPlaceUpdateStrategy.gracePeriodSeconds`).
fn in_place_options(set: &StatefulSet, gates: &FeatureGates) -> Options {
    let grace = set
        .spec
        .update_strategy
        .rolling_update
        .as_ref()
        .and_then(|r| r.in_place_update_strategy.as_ref())
        .map_or(0, |s| s.grace_period_seconds);
    Options { grace_period_seconds: grace, vertical_scaling: gates.enabled(Gate::InPlaceWorkloadVerticalScaling) }
}

fn pod_update_policy(set: &StatefulSet) -> &str {
    set.spec.update_strategy.rolling_update.as_ref().map_or("", |r| r.pod_update_policy.as_str())
}

fn delete_write(p: &Pod) -> Write {
    Write::DeletePod {
        name: pods::name(p).to_string(),
        uid: p.metadata.uid.clone(),
        resource_version: p.metadata.resource_version.clone(),
    }
}

/// What the round builds up.
struct Round<'a> {
    set: &'a StatefulSet,
    name: &'a str,
    now: Timestamp,
    gates: &'a FeatureGates,
    changes: PodChanges,
    step: Step,
    /// Ordinals whose pod this round deletes (or hands to the preDelete hook).
    deleted: BTreeSet<i64>,
    /// What this round's writes change in the counted status (kruise adjusts its counts as it
    /// creates and deletes): replicas, currentReplicas, updatedReplicas.
    adjust: (i32, i32, i32),
    /// The namespace's budgets, spent as this round updates pods (gate
    /// PodUnavailableBudgetUpdateGate; `None` when off).
    budgets: Option<UpdateAllowance<'a>>,
    budget_takes: Vec<BudgetTake>,
}

impl Round<'_> {
    /// Whether this round already writes to `p`: a delete decided on the observed
    /// resourceVersion would then fail its precondition, so it waits for the next round.
    fn holds_back_delete(&mut self, p: &Pod) -> bool {
        let written = !std::ptr::eq(self.changes.current(p), p);
        if written {
            self.step.waiting.push(format!(
                "{} is deleted next round: this round already writes to it (its delete precondition is the \
                 version observed)",
                pods::name(p)
            ));
        }
        written
    }

    /// kruise's `deletePod`: a pod the preDelete hook holds moves to PreparingDelete instead
    /// (nothing when it already is there); otherwise a delete with preconditions. True when the
    /// pod is actually deleted.
    fn delete(&mut self, p: &Pod, kind: ActionKind, revision: &str, reason: String) -> bool {
        let name = pods::name(p).to_string();
        let hook = self.set.spec.lifecycle.as_ref().and_then(|l| l.pre_delete.as_ref());
        if lifecycle::is_hooked(hook, p) {
            let mark = hook.is_some_and(|h| h.mark_pod_not_ready);
            let current = self.changes.current(p).clone();
            if let Some(after) = lifecycle::update_lifecycle(&current, State::PreparingDelete, mark, self.now) {
                let writes = self.changes.change(p, after);
                let reason = format!("{reason}; its preDelete hook holds it: -> PreparingDelete");
                self.step.actions.push(Action::new(ActionKind::SetLifecycle, Some(&name), revision, reason, writes));
            } else {
                self.step.waiting.push(format!("{name} waits in PreparingDelete for its preDelete hook"));
            }
            return false;
        }
        if self.holds_back_delete(p) {
            return false;
        }
        self.step.actions.push(Action::new(kind, Some(&name), revision, reason, vec![delete_write(p)]));
        self.step.events.push(Event::normal(
            "SuccessfulDelete",
            format!("delete Pod {name} in StatefulSet {} successful", self.name),
        ));
        true
    }

    /// Claim creations for `pod` (`createPersistentVolumeClaims`); `Err` names a claim being deleted.
    fn create_claims<'c>(
        &mut self,
        pod: &Pod,
        claim: impl Fn(&str) -> Option<&'c PersistentVolumeClaim>,
    ) -> Result<Vec<Write>, String> {
        let c = pvc::claims_to_create(self.set, pod, claim);
        if let Some(name) = c.deleting.first() {
            return Err(format!("pvc {name} is to be deleted"));
        }
        let mut writes = Vec::new();
        for claim in c.create {
            self.step.events.push(Event::normal(
                "SuccessfulCreate",
                format!(
                    "create Claim {} Pod {} in StatefulSet {} success",
                    claim.metadata.name.as_deref().unwrap_or(""),
                    pods::name(pod),
                    self.name
                ),
            ));
            writes.push(Write::CreatePvc { pvc: Box::new(claim) });
        }
        Ok(writes)
    }
}

/// The replica slots with the pods this round creates in the empty ones (Go's `replicas` after
/// `processReplica` assigned them).
fn with_created<'a>(slots: &[Slot<'a>], created: &'a [(i64, Pod)]) -> Vec<Slot<'a>> {
    slots
        .iter()
        .map(|s| Slot {
            ordinal: s.ordinal,
            pod: s.pod.or_else(|| created.iter().find(|(c, _)| *c == s.ordinal).map(|(_, p)| p)),
        })
        .collect()
}

fn claim_patch(observed: &PersistentVolumeClaim, intended: &PersistentVolumeClaim) -> Write {
    Write::PatchPvc {
        name: observed.metadata.name.clone().unwrap_or_default(),
        pin: Pin::Observed(observed.metadata.resource_version.clone().unwrap_or_default()),
        patch: object_patch(observed, intended),
    }
}

/// The round.
pub fn plan(input: &Input<'_>) -> Plan {
    let set = input.set;
    let (now, gates) = (input.now, input.gates);
    let name = set.metadata.name.as_deref().unwrap_or("");
    let old_status = set.status.clone().unwrap_or_default();
    let mut out = Plan {
        statefulset: format!("{}/{name}", set.metadata.namespace.as_deref().unwrap_or("")),
        current_revision: old_status.current_revision.clone(),
        update_revision: old_status.update_revision.clone(),
        actions: Vec::new(),
        events: Vec::new(),
        waiting: Vec::new(),
        errors: Vec::new(),
        status: old_status,
        status_write: None,
        requeue_after: None,
        budget_takes: Vec::new(),
    };
    let budget_gates = crate::core::budget::admit::Gates {
        in_place_pod_vertical_scaling: gates.enabled(Gate::InPlacePodVerticalScaling),
        in_place_workload_vertical_scaling: gates.enabled(Gate::InPlaceWorkloadVerticalScaling),
    };
    let mut r = Round {
        set,
        name,
        now,
        gates,
        changes: PodChanges::default(),
        step: Step::default(),
        deleted: BTreeSet::new(),
        adjust: (0, 0, 0),
        budgets: gates
            .enabled(Gate::PodUnavailableBudgetUpdateGate)
            .then(|| UpdateAllowance::new(input.budgets, budget_gates)),
        budget_takes: Vec::new(),
    };

    // 1. Claim pods and revisions.
    let claims = match adoption::claim_pods(set, input.pods) {
        Ok(c) => c,
        Err(e) => {
            out.errors.push(format!("cannot claim pods: {e}"));
            return out;
        }
    };
    for p in &claims.adopt {
        let mut after = r.changes.current(p).clone();
        after.metadata.owner_references.get_or_insert_with(Vec::new).push(identity::controller_ref(set));
        let writes = r.changes.change(p, after);
        let reason = "an orphan matching the selector and named <set>-<ordinal>".to_string();
        r.step.actions.push(Action::new(ActionKind::AdoptPod, Some(pods::name(p)), pod_revision(p), reason, writes));
    }
    for p in &claims.release {
        let mut after = r.changes.current(p).clone();
        if let Some(refs) = after.metadata.owner_references.as_mut() {
            refs.retain(|o| Some(&o.uid) != set.metadata.uid.as_ref());
        }
        let writes = r.changes.change(p, after);
        let reason = "its labels or name no longer make it a member of the set".to_string();
        r.step.actions.push(Action::new(ActionKind::ReleasePod, Some(pods::name(p)), pod_revision(p), reason, writes));
    }
    let owned: Vec<&Pod> = claims.owned.clone();
    let all_revisions: Vec<ControllerRevision> = input.revisions.iter().map(|rev| (*rev).clone()).collect();
    let (listed, orphans) = match adoption::claim_revisions(set, &all_revisions) {
        Ok(x) => x,
        Err(e) => {
            out.errors.push(format!("cannot list revisions: {e}"));
            return out;
        }
    };
    for rev in orphans {
        let mut after = rev.clone();
        after.metadata.owner_references.get_or_insert_with(Vec::new).push(identity::controller_ref(set));
        let rname = rev.metadata.name.clone().unwrap_or_default();
        let write = Write::PatchRevision {
            name: rname.clone(),
            pin: Pin::Observed(rev.metadata.resource_version.clone().unwrap_or_default()),
            patch: object_patch(rev, &after),
        };
        let reason = "an orphan revision matching the selector is adopted".to_string();
        r.step.actions.push(Action::new(ActionKind::UpdateRevision, None, &rname, reason, vec![write]));
    }

    // 2. Revisions.
    let mut sorted: Vec<ControllerRevision> = listed.into_iter().cloned().collect();
    history::sort_revisions(&mut sorted);
    let active = asts_revision::active_revisions(set, &sorted);
    let current_name = active.current.metadata.name.clone().unwrap_or_default();
    let update_name = active.update.metadata.name.clone().unwrap_or_default();
    out.current_revision = current_name.clone();
    out.update_revision = update_name.clone();
    let update_data = asts_revision::revision_data(&set.spec.template);
    match &active.change {
        RevisionChange::None => {}
        RevisionChange::Create(new) => {
            let write = Write::CreateRevision {
                revision: Box::new(new.revision.clone()),
                data: new.data.clone(),
                collision_count: active.collision_count,
            };
            let reason = "the template differs from every revision".to_string();
            r.step.actions.push(Action::new(ActionKind::CreateRevision, None, &update_name, reason, vec![write]));
        }
        RevisionChange::Bump { name: rname, resource_version, revision } => {
            if let Some(observed) = sorted.iter().find(|x| x.metadata.name.as_deref() == Some(rname.as_str())) {
                let mut after = observed.clone();
                after.revision = *revision;
                let write = Write::PatchRevision {
                    name: rname.clone(),
                    pin: Pin::Observed(resource_version.clone()),
                    patch: object_patch(observed, &after),
                };
                let reason = format!("the template is back to this revision: it becomes the newest ({revision})");
                r.step.actions.push(Action::new(ActionKind::UpdateRevision, None, rname, reason, vec![write]));
            }
        }
    }
    let current_template = match asts_revision::apply_revision(set, &active.current) {
        Ok(s) => s.spec.template,
        Err(e) => {
            out.errors.push(format!("current revision {current_name}: {e}"));
            set.spec.template.clone()
        }
    };

    // 3. Replicas and condemned pods.
    let range = ReplicaRange::of(set, gates);
    let members = ordinals::members(set, &range, &owned);
    for p in &members.duplicates {
        r.step.waiting.push(format!(
            "{} has the ordinal of another replica: it is left alone (neither a replica nor condemned)",
            pods::name(p)
        ));
    }
    let slots: &[Slot<'_>] = &members.replicas;
    let pvcs = input.pvcs;
    // Claims by name (one namespace: names are unique), looked up per pod and template by the
    // scaling part, the resize checks and the status.
    let claims_by_name: std::collections::BTreeMap<&str, &PersistentVolumeClaim> =
        pvcs.iter().filter_map(|c| Some((c.metadata.name.as_deref()?, *c))).collect();
    let claim = |n: &str| claims_by_name.get(n).copied();
    let by_ordinal =
        |o: i64| -> Option<&Pod> {
            slots.binary_search_by_key(&o, |s| s.ordinal).ok().and_then(|i| slots[i].pod).or_else(|| {
                members.condemned.iter().copied().find(|p| identity::pod_ordinal(p).map(i64::from) == Some(o))
            })
        };

    // 4. Scale.
    // An error here (a `scaleStrategy.maxUnavailable` that does not parse) ends kruise's round
    // before any pod is touched.
    let (scale_round, scale_failed) = match scale::plan_scale(set, &range, slots, &members.condemned, now, gates, claim)
    {
        Ok(s) => (s, false),
        Err(e) => {
            out.errors.push(e);
            (scale::ScaleRound::default(), true)
        }
    };
    if let Some(d) = scale_round.requeue_after {
        r.step.requeue_after(d);
    }
    let halted = set.metadata.deletion_timestamp.is_some() || scale_failed;

    // Refresh every created replica the scan reached (processReplica's refreshPodState).
    let opts = in_place_options(set, gates);
    let machine = Machine {
        lifecycle: set.spec.lifecycle.as_ref(),
        options: opts,
        now,
        update_revision: &update_name,
        at_revision,
        write_revision: &write_revision,
    };
    if !halted {
        let reach = scale_round.stop.filter(|s| s.ends_round).map_or(i64::MAX, |s| s.ordinal);
        for slot in slots.iter().filter(|s| s.ordinal <= reach) {
            let Some(p) = slot.pod else { continue };
            if pods::phase(p).is_empty() || budget::is_terminating(p) {
                continue;
            }
            if let Err(e) = machine.refresh(&mut r.changes, &mut r.step, p) {
                out.errors.push(format!("refresh {}: {e}", pods::name(p)));
            }
        }
    }

    let pod_index_label = gates.enabled(Gate::PodIndexLabel);
    let mut created: Vec<(i64, Pod)> = Vec::new();
    for step in &scale_round.steps {
        match *step {
            ScaleStep::Create(o) => {
                let needed = {
                    let view = with_created(slots, &created);
                    asts_revision::is_current_revision_needed(set, &update_name, o, range.start, &view, gates)
                };
                let (template, revision) =
                    if needed { (&current_template, &current_name) } else { (&set.spec.template, &update_name) };
                let mut pod = identity::new_pod(set, template, o, revision, pod_index_label);
                let state = identity::creation_lifecycle_state(set, &pod);
                lifecycle::set_state(&mut pod, state, now);
                let mut writes = match r.create_claims(&pod, claim) {
                    Ok(w) => w,
                    Err(e) => {
                        out.errors.push(e);
                        continue;
                    }
                };
                let pname = pods::name(&pod).to_string();
                writes.push(Write::CreatePod { pod: Box::new(pod.clone()) });
                let why =
                    if needed { "below the partition: at the current revision" } else { "at the update revision" };
                r.step.actions.push(Action::new(
                    ActionKind::Create,
                    Some(&pname),
                    revision,
                    format!("replica {o} is missing: created {why}"),
                    writes,
                ));
                r.step.events.push(Event::normal(
                    "SuccessfulCreate",
                    format!("create Pod {pname} in StatefulSet {name} successful"),
                ));
                r.adjust.0 += 1;
                r.adjust.1 += i32::from(*revision == current_name);
                r.adjust.2 += i32::from(*revision == update_name);
                created.push((o, pod));
            }
            ScaleStep::DeleteFailed(o) => {
                let Some(p) = by_ordinal(o) else { continue };
                r.deleted.insert(o);
                if r.holds_back_delete(p) {
                    continue;
                }
                let reason = format!("it is {}: deleted to be created again", pods::phase(p));
                // Go deletes a failed replica directly (DeleteStatefulPod), not through deletePod.
                let pname = pods::name(p).to_string();
                r.step.actions.push(Action::new(
                    ActionKind::Delete,
                    Some(&pname),
                    pod_revision(p),
                    reason,
                    vec![delete_write(p)],
                ));
                r.step.events.push(Event::normal(
                    "SuccessfulDelete",
                    format!("delete Pod {pname} in StatefulSet {name} successful"),
                ));
                r.step.events.push(Event::warning(
                    "RecreatingFailedPod",
                    format!("StatefulSet {} is recreating failed Pod {pname}", out.statefulset),
                ));
                r.adjust.0 -= 1;
                r.adjust.1 -= i32::from(pod_revision(p) == current_name);
                r.adjust.2 -= i32::from(pod_revision(p) == update_name);
            }
            ScaleStep::CreateMissingClaims(o) => {
                let Some(p) = by_ordinal(o) else { continue };
                match r.create_claims(p, claim) {
                    Ok(writes) if !writes.is_empty() => r.step.actions.push(Action::new(
                        ActionKind::UpdateClaims,
                        Some(pods::name(p)),
                        pod_revision(p),
                        "the Pending pod's claims are missing".into(),
                        writes,
                    )),
                    Ok(_) => {}
                    Err(e) => out.errors.push(e),
                }
            }
            ScaleStep::Restore(o) => {
                let Some(p) = by_ordinal(o) else { continue };
                restore(&mut r, &range, p, claim, pod_index_label, &mut out.errors);
            }
            ScaleStep::FixCondemnedClaims(o) => {
                let Some(p) = by_ordinal(o) else { continue };
                let writes: Vec<Write> = pvc::claim_updates_for_retention_policy(set, p, &range, claim)
                    .iter()
                    .filter_map(|after| {
                        claim(after.metadata.name.as_deref().unwrap_or("")).map(|c| claim_patch(c, after))
                    })
                    .collect();
                if !writes.is_empty() {
                    r.step.actions.push(Action::new(
                        ActionKind::UpdateClaims,
                        Some(pods::name(p)),
                        pod_revision(p),
                        "its claims get the owner references persistentVolumeClaimRetentionPolicy asks for".into(),
                        writes,
                    ));
                }
            }
            ScaleStep::DeleteCondemned(o) => {
                let Some(p) = by_ordinal(o) else { continue };
                r.deleted.insert(o);
                let reason = format!("ordinal {o} is not among the set's replicas (scale down)");
                r.delete(p, ActionKind::Delete, pod_revision(p), reason);
            }
        }
    }
    if let Some(w) = scale_round.stop.and_then(|stop| stop_message(set, stop)) {
        r.step.waiting.push(w);
    }

    // 5. Rolling update.
    if !halted && scale_round.continues() {
        let classes = input.storage_classes;
        let class = |n: &str| classes.iter().copied().find(|c| c.metadata.name.as_deref() == Some(n));
        let pod_claims = |p: &Pod| resize::pod_claims(set, p, claim, class);
        // Go's `replicas` hold the pods the scaling part just created (no status: unavailable).
        let replicas = with_created(slots, &created);
        let taken_current = rolling_update(
            &mut r,
            &mut out.errors,
            &replicas,
            range.start,
            &sorted,
            (&current_name, &update_name),
            &update_data,
            &machine,
            (resize::enabled(set, gates).then_some(&pod_claims as &dyn Fn(&Pod) -> PodClaims), &claim),
        );
        r.adjust.1 -= taken_current;
    }

    // 6. Status and history.
    let counted = slots.iter().filter_map(|s| s.pod).chain(members.condemned.iter().copied());
    match status::round_status(set, counted, &current_name, &update_name, active.collision_count, now) {
        Ok(mut st) => {
            // `updatePVCStatus`: over the replicas (with the pods this round creates), or the
            // owned pods when the round halted.
            st.volume_claims = if halted {
                status::volume_claims(set, owned.iter().filter_map(|p| identity::pod_ordinal(p)).map(i64::from), claim)
            } else {
                let replicas = with_created(slots, &created);
                status::volume_claims(set, replicas.iter().filter(|s| s.pod.is_some()).map(|s| s.ordinal), claim)
            };
            st.replicas += r.adjust.0;
            st.current_replicas += r.adjust.1;
            st.updated_replicas += r.adjust.2;
            status::complete_rolling_update(set, &mut st);
            if status::inconsistent_status(set, &st) {
                out.status_write = status_write(
                    set,
                    name,
                    set.metadata.resource_version.as_deref().unwrap_or(""),
                    |s| s.status = Some(st.clone()),
                    false,
                );
            }
            out.current_revision = st.current_revision.clone();
            out.status = st;
        }
        Err(e) => out.errors.push(e),
    }
    for rev in asts_revision::revisions_to_truncate(set, &sorted, &owned, &current_name, &update_name) {
        let rname = rev.metadata.name.clone().unwrap_or_default();
        let write = Write::DeleteRevision {
            name: rname.clone(),
            uid: rev.metadata.uid.clone(),
            resource_version: rev.metadata.resource_version.clone(),
        };
        let limit = set.spec.revision_history_limit.unwrap_or(10);
        let reason = format!("beyond revisionHistoryLimit {limit} and used by no pod");
        r.step.actions.push(Action::new(ActionKind::DeleteRevision, None, &rname, reason, vec![write]));
    }

    out.budget_takes = r.budget_takes;
    let step = r.step;
    out.actions = step.actions;
    out.events = step.events;
    out.waiting.extend(step.waiting);
    if let Some(e) = step.error {
        out.errors.push(e);
    }
    if let Some(d) = step.requeue {
        out.requeue_after = min_positive(out.requeue_after, d);
    }
    out
}

/// `UpdateStatefulPod`: identity, storage (missing claims created first) and the claims'
/// retention references put back.
fn restore<'c>(
    r: &mut Round<'_>,
    range: &ReplicaRange,
    p: &Pod,
    claim: impl Fn(&str) -> Option<&'c PersistentVolumeClaim> + Copy,
    pod_index_label: bool,
    errors: &mut Vec<String>,
) {
    let set = r.set;
    let mut after = r.changes.current(p).clone();
    let mut writes = Vec::new();
    let mut what = Vec::new();
    if !identity::identity_matches(set, &after) {
        identity::update_identity(set, &mut after, pod_index_label);
        what.push("identity");
    }
    if !identity::storage_matches(set, &after) {
        // kruise adds the volumes to the pod (`updateStorage`) and the API server refuses it
        // (a pod's volumes never change: Forbidden, retried forever, kruise #1389, #2343). Here the
        // missing claims are created and the rolling update recreates the pod instead.
        match r.create_claims(&after, claim) {
            Ok(w) if !w.is_empty() => {
                writes.extend(w);
                what.push("missing claims");
            }
            Ok(_) => {}
            Err(e) => {
                errors.push(e);
                return;
            }
        }
        r.step.waiting.push(format!(
            "{}'s volumes lack a volumeClaimTemplate's claim: a pod's volumes cannot change, the rolling \
             update recreates it",
            pods::name(p)
        ));
    }
    if r.gates.enabled(Gate::StatefulSetAutoDeletePVC) && !pvc::claims_match_retention_policy(set, p, range, claim) {
        for c in pvc::claim_updates_for_retention_policy(set, p, range, claim) {
            if let Some(observed) = claim(c.metadata.name.as_deref().unwrap_or("")) {
                writes.push(claim_patch(observed, &c));
            }
        }
        what.push("claim owner references");
    }
    writes.extend(r.changes.change(p, after));
    if writes.is_empty() {
        return;
    }
    let pname = pods::name(p).to_string();
    r.step.actions.push(Action::new(
        ActionKind::RestoreIdentity,
        Some(&pname),
        pod_revision(p),
        format!("its {} drifted from the set's", what.join(", ")),
        writes,
    ));
    r.step
        .events
        .push(Event::normal("SuccessfulUpdate", format!("update Pod {pname} in StatefulSet {} successful", r.name)));
}

/// Why the scaling part stopped, for people (`None` when it is no wait).
fn stop_message(set: &StatefulSet, stop: scale::Stop) -> Option<String> {
    let pod = identity::pod_name(set, stop.ordinal);
    Some(match stop.reason {
        StopReason::SetDeleting => "the set is being deleted: its pods are left to the garbage collector".into(),
        StopReason::Created => format!("OrderedReady: {pod} was just created; the next waits for it to be ready"),
        StopReason::FailedPodDeleted => format!("OrderedReady: failed {pod} is being replaced"),
        StopReason::StaleClaim => format!("a claim of {pod} still belongs to an earlier pod of that name"),
        StopReason::ClaimDeleting => format!("a claim of {pod} is being deleted"),
        StopReason::NotCreatedYet => format!("{pod} has no phase yet"),
        StopReason::Terminating => format!("OrderedReady: waiting for {pod} to terminate"),
        StopReason::NotAvailable => format!("OrderedReady: waiting for {pod} to be Running, Ready and available"),
        StopReason::ScaleBudgetSpent => format!("scaleStrategy.maxUnavailable is spent at {pod}"),
        StopReason::CondemnedTerminating => format!("OrderedReady: waiting for condemned {pod} to terminate"),
        StopReason::WaitingForUnhealthy => {
            format!("OrderedReady: condemned {pod} waits for every other pod to be healthy")
        }
        StopReason::CondemnedDeleted => return None,
    })
}

/// The in-place decision between the pod's revision and the update revision.
fn in_place_spec(
    r: &Round<'_>,
    p: &Pod,
    revisions: &[ControllerRevision],
    update_data: &Value,
) -> Result<UpdateSpec, String> {
    let Some(old) = revisions.iter().find(|rev| rev.metadata.name.as_deref() == Some(pod_revision(p))) else {
        return Err(format!("its revision {:?} is not among the set's revisions", pod_revision(p)));
    };
    let opts = ClassifyOptions {
        gates: classify::Gates::from_features(r.gates),
        old_vct_hash: None,
        new_vct_hash: None,
        ignore_vct_hash_diff: false,
    };
    let old_data = old.data.as_ref().map(|d| d.0.clone()).unwrap_or_default();
    let spec = classify_revision_update(&old_data, update_data, &opts).map_err(|e| e.to_string())?;
    podupdate::in_place_possible_on(p, &spec)?;
    Ok(spec)
}

/// The pod-claims check of the rolling update when claims are resized (else `None`), and the
/// claim lookup by name.
type ClaimLookups<'f, 'c> =
    (Option<&'f dyn Fn(&Pod) -> PodClaims>, &'f dyn Fn(&str) -> Option<&'c PersistentVolumeClaim>);

/// `TryPatchPVC` of the round's targets (each claim patched on the version observed, with kruise's
/// `SuccessfulResize` Event), the refusal that stopped the round, and who waits for a resize.
fn resize_claims<'c>(
    r: &mut Round<'_>,
    errors: &mut Vec<String>,
    round: &budget::RollingRound,
    slots: &[Slot<'_>],
    claim: &dyn Fn(&str) -> Option<&'c PersistentVolumeClaim>,
) {
    let pod_at = |o: i64| slots.binary_search_by_key(&o, |s| s.ordinal).ok().and_then(|i| slots[i].pod);
    for (o, intended) in &round.resizes {
        let Some(p) = pod_at(*o) else { continue };
        let pname = pods::name(p);
        let mut writes = Vec::new();
        let mut names = Vec::new();
        for c in intended {
            let cname = c.metadata.name.as_deref().unwrap_or("");
            let Some(observed) = claim(cname) else { continue };
            writes.push(claim_patch(observed, c));
            names.push(cname.to_string());
            r.step.events.push(Event::normal(
                "SuccessfulResize",
                format!("resize Claim {cname} Pod {pname} in StatefulSet {} success", r.name),
            ));
        }
        if !writes.is_empty() {
            let reason =
                format!("claims {} are smaller than their templates: expanded before the pod", names.join(", "));
            r.step.actions.push(Action::new(ActionKind::ResizeClaims, Some(pname), pod_revision(p), reason, writes));
        }
    }
    if let Some((_, refusal)) = &round.refused {
        if refusal.warn {
            r.step.events.push(Event::warning(
                "FailedUpdatePVC",
                format!(
                    "failed to update pvc {}: contains diff other than spec resource, wait pvc to be deleted",
                    refusal.claim
                ),
            ));
        }
        errors.push(refusal.message.clone());
    }
    for o in &round.resizing {
        let Some(p) = pod_at(*o) else { continue };
        r.step.waiting.push(format!(
            "{} waits for its claims to be resized (capacity reaching the request, or FileSystemResizePending)",
            pods::name(p)
        ));
    }
}

/// `rollingUpdateStatefulsetPods` with `inPlaceUpdatePod` and `deletePod`; returns how many
/// pods of the current revision it takes (kruise's `status.CurrentReplicas--`).
#[allow(clippy::too_many_arguments)]
fn rolling_update(
    r: &mut Round<'_>,
    errors: &mut Vec<String>,
    slots: &[Slot<'_>],
    start: i64,
    revisions: &[ControllerRevision],
    (current_name, update_name): (&str, &str),
    update_data: &str,
    machine: &Machine<'_>,
    (claims, claim): ClaimLookups<'_, '_>,
) -> i32 {
    let mut taken_current = 0;
    let set = r.set;
    let opts = machine.options;
    let unavailable = budget::unavailable_replicas(
        slots,
        budget::min_ready_seconds(set),
        r.now,
        |p| refresh::update_completed(p, opts).is_err(),
        |p| claims.is_some_and(|f| !f(p).ready),
    );
    if let Some(d) = unavailable.requeue_after {
        r.step.requeue_after(d);
    }
    let volumes_ok = |p: &Pod| identity::storage_matches(set, p);
    let storage = budget::Storage { claims, volumes_ok: &volumes_ok };
    let round = match budget::plan_rolling_update(set, start, slots, update_name, &unavailable, r.gates, storage) {
        Err(e) => {
            errors.push(e);
            return 0;
        }
        Ok(Err(NoRollingUpdate::OnDelete)) => {
            let behind = slots.iter().filter_map(|s| s.pod).filter(|p| !at_revision(p, update_name)).count();
            if behind > 0 {
                r.step.waiting.push(format!("updateStrategy.type is OnDelete: {behind} pods wait to be deleted"));
            }
            return 0;
        }
        Ok(Err(NoRollingUpdate::Paused)) => {
            r.step.waiting.push("the rolling update is paused (rollingUpdate.paused)".into());
            return 0;
        }
        Ok(Ok(round)) => round,
    };
    let pod_at = |o: i64| slots.binary_search_by_key(&o, |s| s.ordinal).ok().and_then(|i| slots[i].pod);
    for &o in &round.specified_deletes {
        let Some(p) = pod_at(o).filter(|_| !r.deleted.contains(&o)) else { continue };
        r.deleted.insert(o);
        let reason = "it is labelled apps.kruise.io/specified-delete".to_string();
        r.delete(p, ActionKind::Delete, pod_revision(p), reason);
    }
    if !round.specified_deletes_waiting.is_empty() {
        let names: Vec<String> = round.specified_deletes_waiting.iter().map(|o| identity::pod_name(set, *o)).collect();
        r.step.waiting.push(format!(
            "{} labelled specified-delete wait: maxUnavailable {} reached",
            names.join(", "),
            round.max_unavailable
        ));
    }
    resize_claims(r, errors, &round, slots, claim);
    let update_value: Value = serde_json::from_str(update_data).unwrap_or(Value::Null);
    let policy = pod_update_policy(set);
    for &o in &round.updates {
        // A pod this round creates (no uid yet) counts in the budget but is not written to.
        let Some(p) = pod_at(o).filter(|p| !r.deleted.contains(&o) && p.metadata.uid.is_some()) else { continue };
        let pname = pods::name(p).to_string();
        // With gate PodUnavailableBudgetUpdateGate the pod's budget is asked first, as kruise's
        // CloneSet update step does (its ASTS relies on the pod webhook, which an in-place update
        // passes unchecked once its readiness gate made the pod unready): the first refusal ends
        // the updates of this round and looks again in a second.
        match r.budgets.as_mut().map(|b| b.admit(p)) {
            Some(Err(why)) => {
                r.step.waiting.push(format!("{pname} waits for its PodUnavailableBudget: {why}"));
                r.step.requeue_after(SignedDuration::from_secs(1));
                return taken_current;
            }
            Some(Ok(Some(take))) => r.budget_takes.push(take),
            Some(Ok(None)) | None => {}
        }
        let mut refused = None;
        if !identity::storage_matches(set, p) {
            // A volumeClaimTemplate was added: only a new pod mounts its claim.
            refused = Some("its volumes lack a volumeClaimTemplate's claim".to_string());
        } else if policy == IN_PLACE_IF_POSSIBLE || policy == IN_PLACE_ONLY {
            match in_place_spec(r, p, revisions, &update_value) {
                Ok(spec) => {
                    if let Err(e) = machine.update_in_place(&mut r.changes, &mut r.step, p, update_name, &spec) {
                        errors.push(e);
                        return taken_current;
                    }
                    taken_current += i32::from(pod_revision(p) == current_name);
                    continue;
                }
                Err(why) => refused = Some(why),
            }
            if policy == IN_PLACE_ONLY {
                errors.push(format!("find strategy InPlaceOnly but Pod {pname} can not update in-place"));
                return taken_current;
            }
        }
        let reason = match &refused {
            Some(why) => format!("cannot update in place ({why}): deleted, recreated at {update_name}"),
            None => format!("podUpdatePolicy ReCreate: deleted, recreated at {update_name}"),
        };
        if let Some(why) = refused.as_deref().filter(|w| w.starts_with(podupdate::ENV_FROM_METADATA_NEEDS_DAEMON)) {
            r.step.events.push(Event::normal(
                podupdate::RECREATE_FOR_ENV_FROM_METADATA,
                format!("pod {pname} is recreated at revision {update_name} instead of updated in place: {why}"),
            ));
        }
        r.deleted.insert(o);
        if r.delete(p, ActionKind::Recreate, update_name, reason) {
            taken_current += i32::from(pod_revision(p) == current_name);
        }
    }
    if let Some(b) = &round.blocked {
        let names: Vec<&str> = b.waiting_for.iter().map(String::as_str).collect();
        r.step.waiting.push(format!(
            "{} unavailable, maxUnavailable {}: {} waits for the update to {update_name}; waiting for {}",
            names.len(),
            round.max_unavailable,
            identity::pod_name(set, b.ordinal),
            names.join(", ")
        ));
    }
    taken_current
}

#[cfg(test)]
mod tests;
