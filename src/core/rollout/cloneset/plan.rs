//! One round of the CloneSet controller as a pure function (spec §5.1): [`plan`] takes the
//! CloneSet, the pods and PVCs it owns, its revisions and the nodes, the feature gates, the clock
//! and a seed for instance ids, and returns this round's [`Plan`] — actions in the order to apply
//! them, each with its reason, the new status, Events, why the rollout is waiting, errors and when
//! to look again. The reconciler and `kruise plan` call this same function.
//!
//! The round, as kruise's `doReconcile` + `syncCloneSet`:
//! 1. only active pods (not Succeeded/Failed, not being deleted) take part; with PVC reuse
//!    disabled, PVCs of finished pods are handed to those pods and PVCs of no pod are deleted;
//! 2. owned pods that no longer match the selector are released (kruise never adopts orphans);
//! 3. the update revision is found, made the newest again (rollback) or created ([`revision`]);
//! 4. unless the CloneSet is being deleted: the scale step, and only if it changed nothing, the
//!    update step; their errors become the FailedScale/FailedUpdate conditions;
//! 5. status; names of vanished pods leave `scaleStrategy.podsToDelete`; revisions beyond
//!    `revisionHistoryLimit` that no pod uses are deleted.
//!
//! Expectations (spec §5.1 items 2 and 7) are checked by the caller before planning
//! ([`crate::core::expectations`]): a plan is only as good as the view it is made on.

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::diff::ExpectationDiffs;
use super::pods::{INSTANCE_ID, IdSource, instance_id};
use super::revision::{self, ActiveRevisions, Revision, equal_to_revision_hash, new_revision};
use super::round::{Event, Round, Step};
use super::settings::{Gates, Settings};
use super::status::{self, FAILED_SCALE, FAILED_UPDATE, Observed};
use super::{scale, update};
use crate::apis::cloneset::{CloneSet, CloneSetCondition, CloneSetStatus};
use crate::apis::podunavailablebudget::PodUnavailableBudget;
use crate::compat::selector::{self as sel, Selector};
use crate::core::budget::rollout::BudgetTake;
use crate::core::features::FeatureGates;
use crate::core::history;
use crate::core::pods;
use crate::core::rollout::actions::{Action, ActionKind, Pin, PodChanges, Write, object_patch};
use crate::core::rollout::plan::{min_positive, status_write};

/// Where the current and update revisions come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RevisionSource {
    /// As the controller does: from the template and the revisions.
    Compute,
    /// From `status.currentRevision`/`status.updateRevision` (`kruise plan` when the status has
    /// seen this generation); nothing is created.
    Status,
}

/// Everything a round reads.
pub struct Input<'a> {
    pub cloneset: &'a CloneSet,
    /// Pods owned by the CloneSet (active or not).
    pub pods: &'a [&'a Pod],
    /// PVCs owned by the CloneSet.
    pub pvcs: &'a [&'a PersistentVolumeClaim],
    /// Revisions matching the selector, owned by the CloneSet or by nobody.
    pub revisions: &'a [&'a ControllerRevision],
    /// Nodes the pods run on (for topology-spread scale-down ranking).
    pub nodes: &'a [Node],
    /// PodUnavailableBudgets of the CloneSet's namespace (gate PodUnavailableBudgetUpdateGate).
    pub budgets: &'a [&'a PodUnavailableBudget],
    pub gates: &'a FeatureGates,
    pub now: Timestamp,
    /// Seed for new instance ids.
    pub seed: u64,
    pub revision_source: RevisionSource,
}

/// One round's decisions.
#[derive(Debug)]
pub struct Plan {
    /// `namespace/name`.
    pub cloneset: String,
    pub current_revision: String,
    pub update_revision: String,
    /// The scale step's arithmetic (kruise's `expectationDiffs`).
    pub diff: ExpectationDiffs,
    pub actions: Vec<Action>,
    /// PodUnavailableBudget units to take before the writes of the pods they name (gate
    /// PodUnavailableBudgetUpdateGate); a unit refused means that pod's actions, and those of the
    /// pods after it, are not sent.
    pub budget_takes: Vec<BudgetTake>,
    pub events: Vec<Event>,
    /// Why the rollout is not moving further this round.
    pub waiting: Vec<String>,
    /// Errors of the round (also in the FailedScale/FailedUpdate conditions).
    pub errors: Vec<String>,
    /// The status to write, and whether kruise would write it.
    pub status: CloneSetStatus,
    pub status_changed: bool,
    /// The write of that status (when kruise would write it and it differs), after the actions.
    pub status_write: Option<Write>,
    pub requeue_after: Option<SignedDuration>,
}

/// The active pods of a listing.
fn active<'a>(pods: &[&'a Pod]) -> Vec<&'a Pod> {
    pods.iter().copied().filter(|p| pods::is_active(p)).collect()
}

fn failed(type_: &str, message: String, now: Timestamp) -> CloneSetCondition {
    CloneSetCondition {
        type_: type_.into(),
        status: "True".into(),
        last_transition_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(pods::whole_seconds(now))),
        message,
        ..Default::default()
    }
}

/// The revisions for a plan from the status (see [`RevisionSource::Status`]).
fn revisions_from_status(cs: &CloneSet, sorted: &[ControllerRevision]) -> ActiveRevisions {
    let computed = revision::active_revisions(cs, sorted);
    let st = cs.status.clone().unwrap_or_default();
    let find = |name: &str| -> Option<Revision> {
        sorted
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(name))
            .map(|r| Revision { data: history::data_bytes(r), object: r.clone() })
    };
    let update = if st.update_revision.is_empty() {
        computed.update.clone()
    } else {
        find(&st.update_revision).unwrap_or_else(|| {
            // Not in the input: the template is the one the status saw; only the name is taken.
            let mut r = new_revision(cs, history::next_revision(sorted), st.collision_count.unwrap_or(0));
            r.revision.metadata.name = Some(st.update_revision.clone());
            Revision { object: r.revision, data: r.data }
        })
    };
    let current = find(&st.current_revision).unwrap_or_else(|| update.clone());
    ActiveRevisions { current, update, collision_count: computed.collision_count, action: None }
}

/// The round.
pub fn plan(input: &Input<'_>) -> Plan {
    let cs = input.cloneset;
    let now = input.now;
    let key =
        format!("{}/{}", cs.metadata.namespace.as_deref().unwrap_or(""), cs.metadata.name.as_deref().unwrap_or(""));
    let settings = Settings::new(cs, Gates::from_feature_gates(input.gates));
    let old_status = cs.status.clone().unwrap_or_default();
    let mut out = Plan {
        cloneset: key,
        current_revision: old_status.current_revision.clone(),
        update_revision: old_status.update_revision.clone(),
        diff: ExpectationDiffs::default(),
        actions: Vec::new(),
        budget_takes: Vec::new(),
        events: Vec::new(),
        waiting: Vec::new(),
        errors: Vec::new(),
        status: old_status.clone(),
        status_changed: false,
        status_write: None,
        requeue_after: None,
    };

    let selector = match Selector::from_validated(cs.spec.selector.as_ref()) {
        Ok(s) => s,
        Err(e) => {
            out.errors.push(format!("spec.selector cannot be used: {e}; the controller gives up on this CloneSet"));
            return out;
        }
    };
    let label_selector = cs.spec.selector.as_ref().and_then(|s| sel::to_selector_string(s).ok()).unwrap_or_default();

    // 1. Active pods; PVC cleanup when reuse is disabled.
    let all_pods = input.pods;
    let mut pods: Vec<&Pod> = active(all_pods);
    let mut pvcs: Vec<&PersistentVolumeClaim> =
        input.pvcs.iter().copied().filter(|p| p.metadata.deletion_timestamp.is_none()).collect();
    if settings.disable_pvc_reuse {
        pvcs = cleanup_pvcs(cs, &pods, all_pods, pvcs, &mut out.actions);
    }

    // 2. Release pods that no longer match the selector.
    let deleting = cs.metadata.deletion_timestamp.is_some();
    if !deleting {
        let (claimed, released): (Vec<&Pod>, Vec<&Pod>) =
            pods.into_iter().partition(|p| selector.matches(pods::labels(p)));
        for p in released {
            out.actions.push(release(cs, p));
        }
        pods = claimed;
    }

    // 3. Revisions.
    let mut sorted: Vec<ControllerRevision> = input.revisions.iter().map(|r| (*r).clone()).collect();
    history::sort_revisions(&mut sorted);
    let active_revs = match input.revision_source {
        RevisionSource::Compute => revision::active_revisions(cs, &sorted),
        RevisionSource::Status => revisions_from_status(cs, &sorted),
    };
    out.current_revision = active_revs.current.name().to_string();
    out.update_revision = active_revs.update.name().to_string();
    if let Some(a) = active_revs.action.clone() {
        out.actions.push(a);
    }

    // 4. Scale, then update.
    let mut conditions = old_status.conditions.clone();
    let mut requeue: Option<SignedDuration> = None;
    let mut steps: Vec<Step> = Vec::new();
    if !deleting {
        let mut round = Round {
            cs,
            settings: &settings,
            now,
            current: &active_revs.current,
            update: &active_revs.update,
            revisions: &sorted,
            pods: &pods,
            pvcs: &pvcs,
            nodes: input.nodes,
            budgets: input.budgets,
            budget_takes: Vec::new(),
            ids: IdSource::new(input.seed),
            changes: PodChanges::default(),
        };
        let (scale_step, diff) = scale::scale(&mut round);
        out.diff = diff;
        let scaled = !scale_step.actions.is_empty();
        if let Some(e) = &scale_step.error {
            status::set_condition_for_failure(&mut conditions, failed(FAILED_SCALE, e.clone(), now));
        }
        steps.push(scale_step);
        if !scaled {
            let (update_step, _) = update::update(&mut round);
            if let Some(e) = &update_step.error {
                status::set_condition_for_failure(&mut conditions, failed(FAILED_UPDATE, e.clone(), now));
            }
            steps.push(update_step);
            out.budget_takes = std::mem::take(&mut round.budget_takes);
        }
    } else {
        out.waiting.push("the CloneSet is being deleted: its pods are left to the garbage collector".into());
    }
    let mut sync_failed = false;
    for step in steps {
        out.actions.extend(step.actions);
        out.events.extend(step.events);
        out.waiting.extend(step.waiting);
        if let Some(e) = step.error {
            sync_failed = true;
            out.errors.push(e);
        }
        if let Some(d) = step.requeue {
            requeue = min_positive(requeue, d);
        }
    }

    // 5. Status, podsToDelete, history.
    let (new_status, progress_requeue) = status::compute(
        cs,
        &settings,
        &pods,
        Observed {
            current_revision: active_revs.current.name(),
            update_revision: active_revs.update.name(),
            collision_count: active_revs.collision_count,
            label_selector,
            conditions,
        },
        now,
    );
    if let Some(d) = progress_requeue {
        requeue = min_positive(requeue, d);
    }
    out.status_changed = status::changed(&old_status, &new_status);
    if !sync_failed && settings.min_ready_seconds > 0 && new_status.available_replicas != new_status.ready_replicas {
        requeue = min_positive(requeue, SignedDuration::from_secs(i64::from(settings.min_ready_seconds)));
    }
    out.status = new_status;
    let trim = trim_pods_to_delete(cs, &pods);
    if out.status_changed {
        out.status_write = status_write(
            cs,
            cs.metadata.name.as_deref().unwrap_or(""),
            cs.metadata.resource_version.as_deref().unwrap_or(""),
            |c| c.status = Some(out.status.clone()),
            trim.is_some(),
        );
    }
    if let Some(a) = trim {
        out.actions.push(a);
    }
    out.actions.extend(truncate_history(cs, &pods, &sorted, &active_revs));
    out.requeue_after = requeue;
    out
}

/// `cleanupPVCs`: PVCs of active pods stay; those of finished pods are handed to the pod (so they
/// go with it); the others are deleted. Returns the PVCs still in use.
fn cleanup_pvcs<'a>(
    cs: &CloneSet,
    active: &[&Pod],
    all: &[&Pod],
    pvcs: Vec<&'a PersistentVolumeClaim>,
    actions: &mut Vec<Action>,
) -> Vec<&'a PersistentVolumeClaim> {
    let active_ids: std::collections::BTreeSet<&str> =
        active.iter().map(|p| instance_id(p.metadata.labels.as_ref())).filter(|i| !i.is_empty()).collect();
    let inactive: Vec<&Pod> = all.iter().copied().filter(|p| !pods::is_active(p)).collect();
    let mut kept = Vec::new();
    for pvc in pvcs {
        let id = instance_id(pvc.metadata.labels.as_ref());
        if active_ids.contains(id) {
            kept.push(pvc);
            continue;
        }
        let name = pvc.metadata.name.clone().unwrap_or_default();
        match inactive.iter().find(|p| !id.is_empty() && instance_id(p.metadata.labels.as_ref()) == id) {
            Some(pod) => {
                let mut after = pvc.clone();
                let refs = after.metadata.owner_references.get_or_insert_with(Vec::new);
                refs.retain(|r| Some(&r.uid) != cs.metadata.uid.as_ref());
                refs.push(k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                    api_version: "v1".into(),
                    kind: "Pod".into(),
                    name: pods::name(pod).into(),
                    uid: pod.metadata.uid.clone().unwrap_or_default(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                });
                let write = Write::PatchPvc {
                    name: name.clone(),
                    pin: Pin::Observed(pvc.metadata.resource_version.clone().unwrap_or_default()),
                    patch: object_patch(pvc, &after),
                };
                let reason =
                    format!("PVC reuse is disabled: PVC {name} now belongs to finished pod {}", pods::name(pod));
                actions.push(Action::new(ActionKind::CleanupPvc, Some(pods::name(pod)), "", reason, vec![write]));
            }
            None => {
                let write = Write::DeletePvc {
                    name: name.clone(),
                    uid: pvc.metadata.uid.clone(),
                    resource_version: pvc.metadata.resource_version.clone(),
                };
                let reason = format!("PVC reuse is disabled: PVC {name} ({INSTANCE_ID}={id}) belongs to no pod");
                actions.push(Action::new(ActionKind::CleanupPvc, None, "", reason, vec![write]));
            }
        }
    }
    kept
}

/// Releasing a pod: its ownerReference to the CloneSet is removed.
fn release(cs: &CloneSet, p: &Pod) -> Action {
    let mut after = p.clone();
    if let Some(refs) = after.metadata.owner_references.as_mut() {
        refs.retain(|r| Some(&r.uid) != cs.metadata.uid.as_ref());
    }
    let writes = crate::core::rollout::actions::pod_writes(p, &after);
    let revision = pods::label(p, revision::CONTROLLER_REVISION_HASH).unwrap_or("");
    Action::new(
        ActionKind::ReleasePod,
        Some(pods::name(p)),
        revision,
        "its labels no longer match spec.selector".into(),
        writes,
    )
}

/// `truncatePodsToDelete`.
fn trim_pods_to_delete(cs: &CloneSet, pods: &[&Pod]) -> Option<Action> {
    let names = &cs.spec.scale_strategy.pods_to_delete;
    if names.is_empty() {
        return None;
    }
    let kept: Vec<String> =
        names.iter().filter(|n| pods.iter().any(|p| pods::name(p) == n.as_str())).cloned().collect();
    if kept.len() == names.len() {
        return None;
    }
    let gone: Vec<&String> = names.iter().filter(|n| !kept.contains(n)).collect();
    let mut after = cs.clone();
    after.spec.scale_strategy.pods_to_delete = kept;
    let write = Write::PatchWorkload {
        name: cs.metadata.name.clone().unwrap_or_default(),
        pin: Pin::Observed(cs.metadata.resource_version.clone().unwrap_or_default()),
        patch: object_patch(cs, &after),
    };
    let reason = format!("no such pods any more: {}", gone.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "));
    Some(Action::new(ActionKind::TrimPodsToDelete, None, "", reason, vec![write]))
}

/// `truncateHistory`.
fn truncate_history(
    cs: &CloneSet,
    pods: &[&Pod],
    sorted: &[ControllerRevision],
    active: &ActiveRevisions,
) -> Vec<Action> {
    let limit = cs.spec.revision_history_limit.unwrap_or(10);
    let live = |r: &ControllerRevision| {
        let name = r.metadata.name.as_deref().unwrap_or("");
        name == active.current.name()
            || name == active.update.name()
            || pods.iter().any(|p| equal_to_revision_hash(p, name))
    };
    history::revisions_to_truncate(sorted, live, limit)
        .into_iter()
        .map(|r| {
            let name = r.metadata.name.clone().unwrap_or_default();
            let write = Write::DeleteRevision {
                name: name.clone(),
                uid: r.metadata.uid.clone(),
                resource_version: r.metadata.resource_version.clone(),
            };
            let reason = format!("beyond revisionHistoryLimit {limit} and used by no pod");
            Action::new(ActionKind::DeleteRevision, None, &name, reason, vec![write])
        })
        .collect()
}

#[cfg(test)]
mod tests;
