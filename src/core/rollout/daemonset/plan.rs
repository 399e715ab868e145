//! One round of the Advanced DaemonSet controller as a pure function (kruise's `syncDaemonSet`):
//! [`plan`] takes the set, the pods and ControllerRevisions of its namespace, the nodes, the
//! gates, the clock, the failed-pod backoff and a seed for pod names, and returns the round's
//! [`Plan`]:
//! 1. a set being deleted, or selecting everything (`SelectingAll` Warning), is left alone;
//! 2. pods are claimed (orphans matching the selector adopted, owned pods that no longer match
//!    released) and the history built ([`super::revision`]);
//! 3. `manage` ([`super::manage`]) then `syncNodes`: deletions (a pod the preDelete hook holds
//!    moves to PreparingDelete instead), creations bound to their node, each capped by
//!    `burstReplicas`; when this writes anything the round ends with the status (kruise's
//!    expectations are unsatisfied until the cache shows the writes);
//! 4. `refreshUpdateStates`: the shared pod-update machine follows in-place updates and
//!    lifecycles ([`crate::core::rollout::podupdate::Machine::refresh`]);
//! 5. unless paused, a `RollingUpdate` ([`super::update`]): the nodes `partition` and `selector`
//!    leave to update, then without surge old pods replaced within `maxUnavailable` — in place
//!    when `rollingUpdateType: InPlaceIfPossible`, the pod has the `InPlaceUpdateReady` gate and
//!    the classifier allows it (`inPlaceUpdatePods`), else deleted for `manage` to recreate — and
//!    with surge new pods created beside old ones within `maxSurge`;
//! 6. `cleanupHistory` and the status ([`super::status`]).
//!
//! Pod writes go through one [`PodChanges`], so several changes of a pod in a round compose;
//! a pod this round already writes to is deleted next round (its delete precondition is the
//! version observed). Not here: the shared machine moves an in-place updated pod to lifecycle
//! `Updating` (kruise's DaemonSet does not), and image pre-download.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use super::backoff::Backoff;
use super::eligibility::{Eligibility, node_should_run_daemon_pod};
use super::manage::{self, burst_replicas};
use super::pods::{self as dspods, IN_PLACE_UPDATE_READY, in_place_if_possible, new_pod, template_generation};
use super::revision::{self, Change, controller_ref, revision_hash};
use super::{status, update};
use crate::apis::daemonset::ROLLING_UPDATE;
use crate::apis::daemonset::v1beta1::{DaemonSet, DaemonSetStatus};
use crate::compat::selector::Selector;
use crate::core::features::{FeatureGates, Gate};
use crate::core::inplace::apply::Options;
use crate::core::inplace::classify::{self, ClassifyOptions, UpdateSpec, classify_revision_update};
use crate::core::lifecycle::{self, State};
use crate::core::pods;
use crate::core::revision::{CONTROLLER_REVISION_HASH, revision_data};
use crate::core::rollout::actions::{Action, ActionKind, Pin, PodChanges, Write, object_patch};
use crate::core::rollout::cloneset::pods::IdSource;
use crate::core::rollout::ownership::Owner;
use crate::core::rollout::plan::{Event, Step, min_positive, status_write};
use crate::core::rollout::podupdate::{self, Machine};

/// Everything a round reads.
pub struct Input<'a> {
    pub ds: &'a DaemonSet,
    /// Pods of the set's namespace.
    pub pods: &'a [&'a Pod],
    /// ControllerRevisions of the set's namespace.
    pub revisions: &'a [&'a ControllerRevision],
    /// Every node.
    pub nodes: &'a [&'a Node],
    pub gates: &'a FeatureGates,
    pub now: Timestamp,
    /// The failed-pod backoff as the previous rounds left it.
    pub backoff: &'a Backoff,
    /// Seed of the names of the pods this round creates.
    pub seed: u64,
}

/// One round's decisions.
#[derive(Debug, Default)]
pub struct Plan {
    /// `namespace/name`.
    pub daemonset: String,
    /// The update revision's hash.
    pub hash: String,
    /// The update revision's name (stored already, or created by this round's actions).
    pub update_revision: String,
    pub actions: Vec<Action>,
    pub events: Vec<Event>,
    pub waiting: Vec<String>,
    pub errors: Vec<String>,
    pub status: DaemonSetStatus,
    pub status_write: Option<Write>,
    pub requeue_after: Option<SignedDuration>,
    /// The failed-pod backoff to keep for the next round.
    pub backoff: Backoff,
}

fn at_hash(pod: &Pod, hash: &str) -> bool {
    pods::label(pod, CONTROLLER_REVISION_HASH) == Some(hash)
}

fn write_hash(pod: &mut Pod, hash: &str) {
    pod.metadata.labels.get_or_insert_with(Default::default).insert(CONTROLLER_REVISION_HASH.into(), hash.into());
}

fn revision_patch(observed: &ControllerRevision, intended: &ControllerRevision) -> Write {
    Write::PatchRevision {
        name: observed.metadata.name.clone().unwrap_or_default(),
        pin: Pin::Observed(observed.metadata.resource_version.clone().unwrap_or_default()),
        patch: object_patch(observed, intended),
    }
}

struct Round<'a> {
    ds: &'a DaemonSet,
    name: &'a str,
    hash: String,
    now: Timestamp,
    changes: PodChanges,
    step: Step,
    names: BTreeSet<String>,
    ids: IdSource,
}

impl Round<'_> {
    /// `syncNodes`: deletions (through the preDelete hook) and creations, each capped by
    /// `burstReplicas`; true when it wrote anything.
    fn sync_nodes(&mut self, deletes: Vec<(&Pod, String)>, creates: Vec<String>) -> bool {
        let burst = burst_replicas(self.ds);
        let hook = self.ds.spec.lifecycle.as_ref().and_then(|l| l.pre_delete.as_ref());
        let mut wrote = false;
        let mut deletable = Vec::new();
        for (p, why) in deletes {
            if hook.is_some() && lifecycle::is_hooked(hook, p) {
                let mark = hook.is_some_and(|h| h.mark_pod_not_ready);
                let current = self.changes.current(p).clone();
                if let Some(after) = lifecycle::update_lifecycle(&current, State::PreparingDelete, mark, self.now) {
                    let writes = self.changes.change(p, after);
                    let reason = format!("{why}; its preDelete hook holds it: -> PreparingDelete");
                    let rev = pods::label(p, CONTROLLER_REVISION_HASH).unwrap_or("");
                    self.step.actions.push(Action::new(
                        ActionKind::SetLifecycle,
                        Some(pods::name(p)),
                        rev,
                        reason,
                        writes,
                    ));
                    wrote = true;
                }
                continue;
            }
            deletable.push((p, why));
        }
        let mut seen = BTreeSet::new();
        for (p, why) in deletable.into_iter().take(burst) {
            let pname = pods::name(p).to_string();
            if !seen.insert(pname.clone()) {
                continue;
            }
            if !std::ptr::eq(self.changes.current(p), p) {
                self.step.waiting.push(format!("{pname} is deleted next round: this round already writes to it"));
                continue;
            }
            let write = Write::DeletePod {
                name: pname.clone(),
                uid: p.metadata.uid.clone(),
                resource_version: p.metadata.resource_version.clone(),
            };
            let rev = pods::label(p, CONTROLLER_REVISION_HASH).unwrap_or("");
            self.step.actions.push(Action::new(ActionKind::Delete, Some(&pname), rev, why, vec![write]));
            self.step.events.push(Event::normal("SuccessfulDelete", format!("Deleted pod: {pname}")));
            wrote = true;
        }
        for (i, node) in creates.into_iter().take(burst).enumerate() {
            let pname = loop {
                let n = format!("{}-{}", self.name, self.ids.string(5));
                if self.names.insert(n.clone()) {
                    break n;
                }
            };
            let pod = new_pod(self.ds, &node, &self.hash, &pname);
            let mut action = Action::new(
                ActionKind::Create,
                Some(&pname),
                &self.hash,
                format!("node {node} should run a daemon pod and has none"),
                vec![Write::CreatePod { pod: Box::new(pod) }],
            );
            action.batch = Some(crate::core::rollout::actions::slow_start_batch(i));
            self.step.actions.push(action);
            self.step.events.push(Event::normal("SuccessfulCreate", format!("Created pod: {pname}")));
            wrote = true;
        }
        wrote
    }
}

/// The in-place decision for `p` (`canPodInPlaceUpdate`).
fn in_place_spec(
    p: &Pod,
    revisions: &[&ControllerRevision],
    update_data: &Value,
    gates: &FeatureGates,
) -> Result<UpdateSpec, String> {
    let gated = p
        .spec
        .as_ref()
        .and_then(|s| s.readiness_gates.as_ref())
        .is_some_and(|g| g.iter().any(|g| g.condition_type == IN_PLACE_UPDATE_READY));
    if !gated {
        return Err("it has no InPlaceUpdateReady readiness gate".into());
    }
    let label = pods::label(p, CONTROLLER_REVISION_HASH).unwrap_or("");
    let old = revisions
        .iter()
        .find(|r| revision_hash(r) == label)
        .ok_or_else(|| format!("its revision {label:?} is not among the set's revisions"))?;
    let opts = ClassifyOptions {
        gates: classify::Gates::from_features(gates),
        old_vct_hash: None,
        new_vct_hash: None,
        ignore_vct_hash_diff: false,
    };
    let old_data = old.data.as_ref().map(|d| d.0.clone()).unwrap_or_default();
    let spec = classify_revision_update(&old_data, update_data, &opts).map_err(|e| e.to_string())?;
    podupdate::in_place_possible_on(p, &spec)?;
    Ok(spec)
}

/// The round.
pub fn plan(input: &Input<'_>) -> Plan {
    let ds = input.ds;
    let now = input.now;
    let name = ds.metadata.name.as_deref().unwrap_or("");
    let ns = ds.metadata.namespace.as_deref().unwrap_or("");
    let mut out = Plan { daemonset: format!("{ns}/{name}"), backoff: input.backoff.clone(), ..Default::default() };
    out.status = ds.status.clone().unwrap_or_default();
    if ds.metadata.deletion_timestamp.is_some() {
        return out;
    }
    let selector = match ds.spec.selector.as_ref().map(|s| Selector::from_validated(Some(s))) {
        Some(Ok(s)) if !s.is_empty() => s,
        Some(Err(e)) => {
            out.errors.push(format!("invalid selector: {e}"));
            return out;
        }
        _ => {
            out.events.push(Event::warning(
                "SelectingAll",
                "This DaemonSet is selecting all pods. A non-empty selector is required.".into(),
            ));
            return out;
        }
    };
    let owner = Owner {
        group: "apps.kruise.io",
        kind: "DaemonSet",
        meta: &ds.metadata,
        selector: Some(&selector),
        adopt_orphans: true,
    };
    let sorted = owner.sort(input.pods.iter().copied(), [], input.revisions.iter().copied());
    let mut r = Round {
        ds,
        name,
        hash: String::new(),
        now,
        changes: PodChanges::default(),
        step: Step::default(),
        names: input.pods.iter().map(|p| pods::name(p).to_string()).collect(),
        ids: IdSource::new(input.seed),
    };

    // 2. Claim pods and revisions.
    let empty = BTreeMap::new();
    let mut owned: Vec<&Pod> = Vec::new();
    for p in sorted.pods {
        if selector.matches(p.metadata.labels.as_ref().unwrap_or(&empty)) {
            owned.push(p);
            continue;
        }
        if p.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let mut after = r.changes.current(p).clone();
        if let Some(refs) = after.metadata.owner_references.as_mut() {
            refs.retain(|o| Some(&o.uid) != ds.metadata.uid.as_ref());
        }
        let writes = r.changes.change(p, after);
        let reason = "its labels no longer match the selector".to_string();
        r.step.actions.push(Action::new(ActionKind::ReleasePod, Some(pods::name(p)), "", reason, writes));
    }
    for p in sorted.orphans {
        let mut after = r.changes.current(p).clone();
        after.metadata.owner_references.get_or_insert_with(Vec::new).push(controller_ref(ds));
        let writes = r.changes.change(p, after);
        let reason = "an orphan matching the selector".to_string();
        r.step.actions.push(Action::new(ActionKind::AdoptPod, Some(pods::name(p)), "", reason, writes));
        owned.push(p);
    }
    let mut revisions: Vec<&ControllerRevision> = Vec::new();
    for rev in sorted.revisions {
        if owner.controls(&rev.metadata) {
            revisions.push(rev);
            continue;
        }
        let mut after = rev.clone();
        after.metadata.owner_references.get_or_insert_with(Vec::new).push(controller_ref(ds));
        let rname = rev.metadata.name.clone().unwrap_or_default();
        let reason = "an orphan revision matching the selector is adopted".to_string();
        r.step.actions.push(Action::new(
            ActionKind::UpdateRevision,
            None,
            &rname,
            reason,
            vec![revision_patch(rev, &after)],
        ));
        revisions.push(rev);
    }
    let history = revision::construct_history(ds, &revisions, &owned);
    r.hash = history.hash.clone();
    out.hash = history.hash.clone();
    out.update_revision = history.name.clone();
    let by_name = |n: &str| revisions.iter().copied().find(|x| x.metadata.name.as_deref() == Some(n));
    for change in &history.changes {
        match change {
            Change::Label { name: rname } => {
                if let Some(observed) = by_name(rname) {
                    let mut after = observed.clone();
                    after
                        .metadata
                        .labels
                        .get_or_insert_with(Default::default)
                        .insert(CONTROLLER_REVISION_HASH.into(), rname.clone());
                    let reason = "it lacks the controller-revision-hash label".to_string();
                    r.step.actions.push(Action::new(
                        ActionKind::UpdateRevision,
                        None,
                        rname,
                        reason,
                        vec![revision_patch(observed, &after)],
                    ));
                }
            }
            Change::Create { revision, data } => {
                let collision_count = ds.status.as_ref().and_then(|s| s.collision_count).unwrap_or(0);
                let write = Write::CreateRevision { revision: revision.clone(), data: data.clone(), collision_count };
                let reason = "the template differs from every revision".to_string();
                r.step.actions.push(Action::new(ActionKind::CreateRevision, None, &history.name, reason, vec![write]));
            }
            Change::Bump { name: rname, revision: number } => {
                if let Some(observed) = by_name(rname) {
                    let mut after = observed.clone();
                    after.revision = *number;
                    let reason = format!("the template is back to this revision: it becomes the newest ({number})");
                    r.step.actions.push(Action::new(
                        ActionKind::UpdateRevision,
                        None,
                        rname,
                        reason,
                        vec![revision_patch(observed, &after)],
                    ));
                }
            }
            Change::DeleteDuplicate { name: rname } => {
                if let Some(observed) = by_name(rname) {
                    let write = Write::DeleteRevision {
                        name: rname.clone(),
                        uid: observed.metadata.uid.clone(),
                        resource_version: observed.metadata.resource_version.clone(),
                    };
                    let reason = "a duplicate of the update revision".to_string();
                    r.step.actions.push(Action::new(ActionKind::DeleteRevision, None, rname, reason, vec![write]));
                }
            }
            Change::RelabelPod { pod, hash } => {
                if let Some(p) = owned.iter().copied().find(|p| pods::name(p) == pod) {
                    let mut after = r.changes.current(p).clone();
                    write_hash(&mut after, hash);
                    let writes = r.changes.change(p, after);
                    let reason = "the duplicate revisions of its template were merged".to_string();
                    r.step.actions.push(Action::new(ActionKind::UpdateRevision, Some(pod), hash, reason, writes));
                }
            }
        }
    }

    // 3. manage.
    let template_spec = ds.spec.template.spec.clone().unwrap_or_default();
    let eligibility: BTreeMap<String, Eligibility> = input
        .nodes
        .iter()
        .map(|n| (n.metadata.name.clone().unwrap_or_default(), node_should_run_daemon_pod(n, &template_spec)))
        .collect();
    let generation = template_generation(ds);
    let by_node = dspods::by_node(&owned);
    let mut backoff = input.backoff.clone();
    backoff.gc(now);
    let managed = manage::manage(
        &manage::Input {
            ds,
            nodes: input.nodes,
            eligibility: &eligibility,
            by_node: &by_node,
            hash: &r.hash,
            generation,
            now,
        },
        &mut backoff,
    );
    out.backoff = backoff;
    if let Some(d) = managed.requeue {
        r.step.requeue_after(d);
    }
    r.step.events.extend(managed.events);
    let manage_wrote = r.sync_nodes(managed.delete, managed.create_on);

    if !manage_wrote {
        // 4. refreshUpdateStates.
        let gates = input.gates;
        let opts =
            Options { grace_period_seconds: 0, vertical_scaling: gates.enabled(Gate::InPlaceWorkloadVerticalScaling) };
        let hash = r.hash.clone();
        let machine = Machine {
            lifecycle: ds.spec.lifecycle.as_ref(),
            options: opts,
            now,
            update_revision: &hash,
            at_revision: at_hash,
            write_revision: &write_hash,
        };
        for p in owned.iter().copied().filter(|p| p.metadata.deletion_timestamp.is_none() && !pods::phase(p).is_empty())
        {
            if let Err(e) = machine.refresh(&mut r.changes, &mut r.step, p) {
                out.errors.push(format!("refresh {}: {e}", pods::name(p)));
            }
        }

        // 5. The rolling update.
        let paused = ds.spec.update_strategy.rolling_update.as_ref().and_then(|u| u.paused) == Some(true);
        if paused {
            r.step.waiting.push("the rolling update is paused".into());
        } else if ds.spec.update_strategy.type_ == ROLLING_UPDATE {
            let update_data: Value = serde_json::from_str(&revision_data(&ds.spec.template)).unwrap_or_default();
            let mut all_revisions: Vec<&ControllerRevision> = history.old.iter().collect();
            all_revisions.push(&history.current);
            rolling(
                &mut r,
                &mut out,
                input,
                &eligibility,
                &by_node,
                generation,
                &machine,
                &all_revisions,
                &update_data,
            );
        }

        // 6. cleanupHistory.
        for rev in revision::to_clean_up(ds, &history.old, &owned) {
            let rname = rev.metadata.name.clone().unwrap_or_default();
            let write = Write::DeleteRevision {
                name: rname.clone(),
                uid: rev.metadata.uid.clone(),
                resource_version: rev.metadata.resource_version.clone(),
            };
            let limit = ds.spec.revision_history_limit.unwrap_or(10);
            let reason = format!("beyond revisionHistoryLimit {limit} and used by no pod");
            r.step.actions.push(Action::new(ActionKind::DeleteRevision, None, &rname, reason, vec![write]));
        }
    }

    let (st, again) = status::status(ds, input.nodes, &eligibility, &by_node, &r.hash, generation, now, !manage_wrote);
    if let Some(d) = again {
        r.step.requeue_after(d);
    }
    if status::needs_write(ds, &st) {
        out.status_write = status_write(
            ds,
            name,
            ds.metadata.resource_version.as_deref().unwrap_or(""),
            |s| s.status = Some(st.clone()),
            false,
        );
    }
    out.status = st;
    let step = r.step;
    out.actions = step.actions;
    out.events = step.events;
    out.waiting = step.waiting;
    if let Some(e) = step.error {
        out.errors.push(e);
    }
    if let Some(d) = step.requeue {
        out.requeue_after = min_positive(out.requeue_after, d);
    }
    out
}

/// `rollingUpdate` with `inPlaceUpdatePods`.
#[allow(clippy::too_many_arguments)]
fn rolling(
    r: &mut Round<'_>,
    out: &mut Plan,
    input: &Input<'_>,
    eligibility: &BTreeMap<String, Eligibility>,
    by_node: &BTreeMap<String, Vec<&Pod>>,
    generation: Option<i64>,
    machine: &Machine<'_>,
    revisions: &[&ControllerRevision],
    update_data: &Value,
) {
    let ds = r.ds;
    let (max_surge, max_unavailable, node_pods) =
        match update::desired_node_counts(ds, input.nodes, eligibility, by_node) {
            Ok(x) => x,
            Err(e) => {
                out.errors.push(format!("couldn't get unavailable numbers: {e}"));
                return;
            }
        };
    let existing: BTreeMap<String, &Node> =
        input.nodes.iter().map(|n| (n.metadata.name.clone().unwrap_or_default(), *n)).collect();
    let node_pods: update::NodePods<'_> = node_pods.into_iter().filter(|(n, _)| existing.contains_key(n)).collect();
    let labels_of = |n: &str| existing.get(n).map(|node| node.metadata.labels.clone().unwrap_or_default());
    let chosen = match update::nodes_to_update(ds, &r.hash, generation, &node_pods, labels_of) {
        Ok(c) => c,
        Err(e) => {
            out.errors.push(format!("failed to filterDaemonPodsToUpdate: {e}"));
            return;
        }
    };
    let chosen: update::NodePods<'_> =
        chosen.into_iter().filter_map(|n| node_pods.get(&n).map(|p| (n, p.clone()))).collect();
    let hash = r.hash.clone();
    let rolling = update::rolling_update(ds, &hash, generation, &chosen, (max_surge, max_unavailable), input.now);
    r.step.waiting.extend(rolling.waiting);
    if max_surge == 0 {
        let mut deletes = Vec::new();
        let mut updates = Vec::new();
        for p in rolling.replace {
            if !in_place_if_possible(ds) {
                deletes.push((p, format!("its revision is not {hash}: recreated")));
                continue;
            }
            match in_place_spec(p, revisions, update_data, input.gates) {
                Ok(spec) => updates.push((p, spec)),
                Err(why) => {
                    deletes.push((p, format!("its revision is not {hash} and it cannot be updated in place: {why}")))
                }
            }
        }
        for (p, spec) in updates.into_iter().take(burst_replicas(ds)) {
            if let Err(e) = machine.update_in_place(&mut r.changes, &mut r.step, p, &hash, &spec) {
                r.step.events.push(Event::warning(
                    "FailedUpdatePodInPlace",
                    format!("failed to update pod {} in-place(revision {hash}): {e}", pods::name(p)),
                ));
                out.errors.push(e);
            }
        }
        r.sync_nodes(deletes, Vec::new());
    } else {
        let deletes = rolling
            .delete
            .into_iter()
            .map(|p| (p, "surge: the new pod on its node is available".to_string()))
            .collect();
        r.sync_nodes(deletes, rolling.create_on);
    }
}
