//! What a UnitedDeployment round does to its subset workloads, kruise's
//! `uniteddeployment_controller.go` `Reconcile` / `manageSubsets` / `manageSubsetProvision` /
//! `calculateStatus` (v1.9.0; issue 34 item 3), for any of the four template kinds (what each
//! workload looks like is [`super::workload`], kruise's adapters):
//!
//! - one workload per subset, named `<ud>-<subset>-<random>` (`generateName`, kruise's
//!   `getSubsetPrefix`) and controlled by the UnitedDeployment;
//! - workloads of subsets no longer listed are deleted, a second workload of one subset is
//!   deleted (the first, oldest, is kept), workloads of another kind than the template's are
//!   deleted, and a workload is rewritten when its revision, replicas, partition or patch differ,
//!   or while its pods are not all updated (an apps/v1 StatefulSet's stuck pods are deleted then);
//! - the status: replicas, ready and updated counts summed over the subsets, `subsetReplicas`,
//!   `updateStatus` (revision and partitions), `currentRevision` promoted once every pod is updated
//!   and ready, the SubsetProvisioned and SubsetUpdated conditions, and `UnitedDeploymentUpdated`
//!   (kruise's `setUpdatedCondition`: False while the current revision is not the update revision).
//!
//! The subset `patch` is a strategic merge patch on the pod template, as kruise applies it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Affinity, NodeAffinity, NodeSelector, NodeSelectorTerm, Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use k8s_openapi::jiff::SignedDuration;
use serde_json::Value;

use super::allocation::{SubsetState, allocate, is_adaptive, should_reserve_unschedulable_pods};
use super::reservation::{EXTRA_STATUS_SELECTOR, LabelPod, Reservation, max_unavailable, reserve};
use super::workload::{SubsetKind, Workload, desired, stuck_pods};
use crate::apis::uniteddeployment::{
    MANUAL, UnitedDeployment, UnitedDeploymentCondition, UnitedDeploymentStatus, UnitedDeploymentSubsetStatus,
    UpdateStatus,
};
use crate::compat::names::is_dns1123_subdomain;
use crate::compat::selector::Selector;
use crate::core::pods;

/// Label naming the subset of a workload and of its pods.
pub const SUBSET_NAME_LABEL: &str = "apps.kruise.io/subset-name";
/// Label naming the UnitedDeployment revision a workload (and its pods) were written from.
pub const REVISION_LABEL: &str = "apps.kruise.io/controller-revision-hash";
/// Annotation holding the subset patch a workload was written with.
pub const SUBSET_PATCH_ANNOTATION: &str = "apps.kruise.io/subset-patch";
/// `apiVersion` of a UnitedDeployment owner.
pub const OWNER_API_VERSION: &str = "apps.kruise.io/v1alpha1";
/// `kind` of a UnitedDeployment owner.
pub const OWNER_KIND: &str = "UnitedDeployment";

/// kruise `getSubsetPrefix`: `<ud>-<subset>-`, or `<ud>-` when that is not a valid name prefix.
pub fn subset_prefix(ud: &str, subset: &str) -> String {
    let prefix = format!("{ud}-{subset}-");
    // NameIsDNSSubdomain(prefix, true): the prefix is checked with a trailing letter.
    if is_dns1123_subdomain(&format!("{prefix}a")).is_empty() { prefix } else { format!("{ud}-") }
}

/// kruise `calcNextPartitions`: the subset's `manualUpdate` partition, at most its replicas.
pub fn next_partitions(ud: &UnitedDeployment, next_replicas: &BTreeMap<String, i32>) -> BTreeMap<String, i32> {
    let strategy = &ud.spec.update_strategy;
    ud.spec
        .topology
        .subsets
        .iter()
        .map(|s| {
            let mut p = strategy
                .manual_update
                .as_ref()
                .filter(|_| strategy.type_ == MANUAL)
                .and_then(|m| m.partitions.get(&s.name).copied())
                .unwrap_or(0);
            if let Some(r) = next_replicas.get(&s.name)
                && p > *r
            {
                p = *r;
            }
            (s.name.clone(), p)
        })
        .collect()
}

/// The subset `patch` as kruise stores it in the annotation (its raw JSON, "" without one).
pub fn patch_text(patch: Option<&Value>) -> String {
    patch.map(|p| serde_json::to_string(p).unwrap_or_default()).unwrap_or_default()
}

/// The owner reference of a UnitedDeployment's workloads.
pub fn owner_reference(ud: &UnitedDeployment) -> OwnerReference {
    OwnerReference {
        api_version: OWNER_API_VERSION.into(),
        kind: OWNER_KIND.into(),
        name: ud.metadata.name.clone().unwrap_or_default(),
        uid: ud.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// Whether `meta` is controlled by the UnitedDeployment with `uid`.
pub fn owned_by(meta: &ObjectMeta, uid: &str) -> bool {
    meta.owner_references.iter().flatten().any(|r| r.controller == Some(true) && r.uid == uid)
}

/// kruise `attachNodeAffinity`: the subset's match expressions appended to every required term
/// (one empty term made first when there is none).
pub fn attach_node_affinity(pod_spec: &mut k8s_openapi::api::core::v1::PodSpec, term: &NodeSelectorTerm) {
    let expressions = term.match_expressions.clone().unwrap_or_default();
    if expressions.is_empty() {
        return;
    }
    let affinity = pod_spec.affinity.get_or_insert_with(Affinity::default);
    let node = affinity.node_affinity.get_or_insert_with(NodeAffinity::default);
    let required = node.required_during_scheduling_ignored_during_execution.get_or_insert_with(NodeSelector::default);
    if required.node_selector_terms.is_empty() {
        required.node_selector_terms.push(NodeSelectorTerm::default());
    }
    for t in &mut required.node_selector_terms {
        t.match_expressions.get_or_insert_with(Default::default).extend(expressions.iter().cloned());
    }
}

/// The subset patch merged into the pod template: kruise's `strategicpatch.StrategicMergePatch`
/// on the template with `PodTemplateSpec`'s merge keys (a pod's metadata and spec have the same
/// ones, [`crate::compat::strategic`]).
pub fn patch_template(template: &PodTemplateSpec, patch: &Value) -> Result<PodTemplateSpec, String> {
    let doc = serde_json::to_value(template).map_err(|e| e.to_string())?;
    let merged = crate::compat::strategic::apply_pod_patch(&doc, patch)?;
    serde_json::from_value(merged).map_err(|e| format!("the subset patch does not give a pod template: {e}"))
}

/// The pods of a subset workload among `candidates` (pods of its namespace): those it
/// controls, or for a Deployment those its selector matches that a ReplicaSet controls (kruise's
/// adapter lists its ReplicaSets' pods; an empty selector matches none).
pub fn workload_pods<'a>(w: &Workload, candidates: impl IntoIterator<Item = &'a Arc<Pod>>) -> Vec<Arc<Pod>> {
    if let Workload::Deployment(_) = w {
        let Ok(selector) = Selector::from_validated(w.selector()) else { return Vec::new() };
        if selector.is_empty() {
            return Vec::new();
        }
        let no_labels = Default::default();
        return candidates
            .into_iter()
            .filter(|p| {
                let controller = p.metadata.owner_references.iter().flatten().find(|r| r.controller == Some(true));
                controller.is_some_and(|r| r.kind == "ReplicaSet" && r.api_version == "apps/v1")
                    && selector.matches(p.metadata.labels.as_ref().unwrap_or(&no_labels))
            })
            .cloned()
            .collect();
    }
    let uid = w.meta().uid.clone().unwrap_or_default();
    candidates.into_iter().filter(|p| owned_by(&p.metadata, &uid)).cloned().collect()
}

/// What the controller knows of one subset workload.
#[derive(Clone, Debug)]
pub struct Existing {
    /// The workload.
    pub workload: Workload,
    /// Its pods (for a Deployment, those of its ReplicaSets), shared with the cache.
    pub pods: Vec<Arc<Pod>>,
}

impl Existing {
    fn subset(&self) -> Option<&str> {
        self.workload.subset()
    }

    /// kruise `CalculateUpdatedReplicas`: active pods at `revision`, and those ready.
    fn updated(&self, revision: &str) -> (i32, i32) {
        let updated: Vec<&Pod> = self
            .pods
            .iter()
            .map(|p| &**p)
            .filter(|p| pods::label(p, REVISION_LABEL) == Some(revision) && pods::is_active(p))
            .collect();
        (updated.len() as i32, updated.iter().filter(|p| pods::is_ready(p)).count() as i32)
    }
}

/// One write of a round.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Create the subset's workload (`generateName`).
    Create { subset: String, workload: Box<Workload> },
    /// Replace the workload `name` (resourceVersion kept from the cache) with `workload`.
    Update { subset: String, name: String, workload: Box<Workload> },
    /// Delete the workload `name` of `kind` (uid precondition).
    Delete { kind: SubsetKind, name: String, uid: String, reason: &'static str },
    /// Delete a pod an apps/v1 StatefulSet's rolling update is stuck on (uid precondition).
    DeletePod { subset: String, name: String, uid: String },
    /// Write a pod's reserved label (`reserveUnschedulablePods`, uid precondition).
    LabelPod { subset: String, pod: LabelPod },
}

/// A round: the writes, then the status to write once they succeed.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Reserved labels first (kruise writes them before it allocates), then deletions, then
    /// creations, then updates.
    pub actions: Vec<Action>,
    /// The status after the round (conditions set assuming the writes succeed).
    pub status: UnitedDeploymentStatus,
    /// The replicas allocated to each subset.
    pub next_replicas: BTreeMap<String, i32>,
    /// When adaptive scheduling wants the UnitedDeployment looked at again (kruise's
    /// `durationStore`).
    pub requeue_after: Option<SignedDuration>,
}

/// kruise's round: `existing` are the workloads of every kind the UnitedDeployment controls
/// (oldest first), `revision` the update revision name, `current_revision` the status's (or the
/// update revision when there is none), `now` for condition times. Workloads of another kind than
/// the template's are deleted (kruise's "clean the other kind of subsets").
pub fn plan(
    ud: &UnitedDeployment,
    existing: &[Existing],
    revision: &str,
    current_revision: &str,
    now: Time,
) -> Result<Plan, String> {
    let kind = SubsetKind::of(ud).ok_or("the UnitedDeployment has no subset template")?;
    let mut actions = Vec::new();
    // manageSubsetProvision's clean-up of the other kinds.
    let mut cleaned = false;
    for e in existing.iter().filter(|e| e.workload.kind() != kind) {
        actions.push(delete(e, "another kind of subset"));
        cleaned = true;
    }
    // classifySubsetBySubsetName + deleteDupSubset: the first workload of a subset is kept.
    let mut by_subset: BTreeMap<&str, &Existing> = BTreeMap::new();
    for e in existing.iter().filter(|e| e.workload.kind() == kind) {
        let Some(subset) = e.subset() else { continue };
        if by_subset.contains_key(subset) {
            actions.push(delete(e, "duplicate"));
        } else {
            by_subset.insert(subset, e);
        }
    }
    // initStatus, then adaptive scheduling's preprocessing (adaptive.rs) on the subset statuses.
    let mut base = ud.status.clone().unwrap_or_default();
    super::adaptive::init_status(&ud.spec, &mut base, now.0);
    set_updated_condition(&mut base.conditions, current_revision, revision, &now);
    let strategy = &ud.spec.topology.schedule_strategy;
    let reserving = should_reserve_unschedulable_pods(strategy);
    let adaptive = is_adaptive(strategy) && !reserving;
    let updated_condition = base.conditions.iter().find(|c| c.type_ == UPDATED_CONDITION).cloned();
    let mut requeue_after: Option<SignedDuration> = None;
    let mut wait = |d: SignedDuration| requeue_after = Some(requeue_after.map_or(d, |r: SignedDuration| r.min(d)));
    let mut states: BTreeMap<String, SubsetState> = BTreeMap::new();
    let mut reservations: BTreeMap<&str, Reservation> = BTreeMap::new();
    let mut labels = Vec::new();
    for (name, e) in &by_subset {
        let (replicas, ready) = (e.workload.status_replicas(), e.workload.status_ready_replicas());
        let mut state =
            SubsetState { replicas: e.workload.spec_replicas(), ready_replicas: ready, ..Default::default() };
        match base.subset_statuses.iter_mut().find(|s| s.name == *name) {
            Some(st) if adaptive => {
                let u = super::adaptive::default_adaptive(strategy, st, replicas, ready, &e.pods, now.0);
                state.unschedulable = u.unschedulable;
                if let Some(d) = u.requeue_after {
                    wait(d);
                }
            }
            Some(st) if reserving => {
                let r = reserve(strategy, st, &e.pods, revision, updated_condition.as_ref(), now.0);
                state.unschedulable = r.unschedulable;
                state.marked_as_unschedulable = r.marked_as_unschedulable;
                state.reserved_pods = r.reserved_pods;
                if let Some(d) = r.requeue_after {
                    wait(d);
                }
                let subset = name.to_string();
                labels
                    .extend(r.to_label.iter().map(|pod| Action::LabelPod { subset: subset.clone(), pod: pod.clone() }));
                reservations.insert(name, r);
            }
            _ => {}
        }
        states.insert(name.to_string(), state);
    }
    let next_replicas = allocate(&ud.spec, &states)?;
    // postProcessSubsetStatusForReservedAdaptiveStrategy.
    for (name, r) in &reservations {
        let next = next_replicas.get(*name).copied().unwrap_or(0);
        let replicas = states.get(*name).map_or(0, |s| s.replicas);
        if let Some(st) = base.subset_statuses.iter_mut().find(|s| s.name == *name) {
            super::reservation::after_allocation(st, r, replicas, next, now.0);
        }
    }
    actions.splice(0..0, labels);
    let partitions = next_partitions(ud, &next_replicas);
    let expected: BTreeSet<&str> = ud.spec.topology.subsets.iter().map(|s| s.name.as_str()).collect();
    for (subset, e) in &by_subset {
        if !expected.contains(subset) {
            actions.push(delete(e, "subset removed"));
        }
    }
    let mut provisioned = false;
    for s in &ud.spec.topology.subsets {
        if by_subset.contains_key(s.name.as_str()) {
            continue;
        }
        let replicas = next_replicas.get(&s.name).copied().unwrap_or(0);
        let partition = partitions.get(&s.name).copied().unwrap_or(0);
        let workload = desired(ud, &s.name, revision, replicas, partition, None)?;
        actions.push(Action::Create { subset: s.name.clone(), workload: Box::new(workload) });
        provisioned = true;
    }
    provisioned |= cleaned || by_subset.keys().any(|s| !expected.contains(s));
    for s in &ud.spec.topology.subsets {
        let Some(e) = by_subset.get(s.name.as_str()) else { continue };
        let replicas = next_replicas.get(&s.name).copied().unwrap_or(0);
        let partition = partitions.get(&s.name).copied().unwrap_or(0);
        let w = &e.workload;
        // A Deployment reads back no partition: kruise would rewrite it every round under a
        // manual partition, to no effect; it is not compared here.
        let stale = w.revision() != revision
            || w.spec_replicas() != replicas
            || (w.has_partition() && w.spec_partition(&e.pods) != partition)
            || w.patch() != patch_text(s.patch.as_ref())
            || e.updated(revision).0 < w.status_replicas();
        if !stale {
            continue;
        }
        let mut desired = desired(ud, &s.name, revision, replicas, partition, Some(w))?;
        // UpdateSubset's override while the subset is unschedulable (reservation only).
        if let Some(r) = reservations.get(s.name.as_str()).filter(|r| r.unschedulable) {
            desired.set_max_unavailable(max_unavailable(
                w.spec_replicas(),
                w.status_ready_replicas(),
                r.update_timeout_pods,
            ));
        }
        // Only a real change is written (kruise rewrites while pods are not updated; the same
        // object again would change nothing).
        if desired != *w {
            let name = w.name().to_string();
            actions.push(Action::Update { subset: s.name.clone(), name, workload: Box::new(desired.clone()) });
        }
        // PostUpdate: an apps/v1 StatefulSet's stuck pods.
        for (name, uid) in stuck_pods(&desired, &e.pods, revision, partition) {
            actions.push(Action::DeletePod { subset: s.name.clone(), name, uid });
        }
    }
    let reserved: BTreeMap<&str, i32> = reservations.iter().map(|(n, r)| (*n, r.reserved_pods)).collect();
    let mut status = status(
        ud,
        base,
        &by_subset,
        &reserved,
        &next_replicas,
        &partitions,
        revision,
        current_revision,
        provisioned,
        now,
    );
    if reserving {
        status.label_selector.push_str(EXTRA_STATUS_SELECTOR);
    }
    Ok(Plan { actions, status, next_replicas, requeue_after })
}

fn delete(e: &Existing, reason: &'static str) -> Action {
    Action::Delete {
        kind: e.workload.kind(),
        name: e.workload.name().to_string(),
        uid: e.workload.meta().uid.clone().unwrap_or_default(),
        reason,
    }
}

/// kruise `SetUnitedDeploymentCondition`: the transition time only moves when the status does.
fn set_condition(conditions: &mut Vec<UnitedDeploymentCondition>, mut c: UnitedDeploymentCondition) {
    if let Some(old) = conditions.iter().find(|o| o.type_ == c.type_) {
        if old.status == c.status && old.reason == c.reason && old.message == c.message {
            return;
        }
        if old.status == c.status {
            c.last_transition_time = old.last_transition_time.clone();
        }
    }
    conditions.retain(|o| o.type_ != c.type_);
    conditions.push(c);
}

/// The condition kruise's `UnitedDeploymentUpdated` type names.
pub const UPDATED_CONDITION: &str = "UnitedDeploymentUpdated";

/// kruise `setUpdatedCondition`: `UnitedDeploymentUpdated` False while the current revision is not
/// the expected one (the update revision), True once it is; rewritten only when its status
/// changes, so the message names the revision of the moment the status turned.
fn set_updated_condition(conditions: &mut Vec<UnitedDeploymentCondition>, current: &str, expected: &str, now: &Time) {
    let updated = current == expected;
    let status = if updated { "True" } else { "False" };
    if conditions.iter().any(|c| c.type_ == UPDATED_CONDITION && c.status == status) {
        return;
    }
    let (reason, message) = if updated {
        ("UnitedDeploymentRevisionUpdated", format!("updated to revision {expected}"))
    } else {
        ("UnitedDeploymentRevisionUpdating", format!("updating to revision {expected}"))
    };
    set_condition(
        conditions,
        UnitedDeploymentCondition {
            type_: UPDATED_CONDITION.into(),
            status: status.into(),
            last_transition_time: Some(now.clone()),
            reason: reason.into(),
            message,
        },
    );
}

/// kruise `calculateStatus` (and the conditions `manageSubsets` sets on success).
#[allow(clippy::too_many_arguments)]
fn status(
    ud: &UnitedDeployment,
    base: UnitedDeploymentStatus,
    by_subset: &BTreeMap<&str, &Existing>,
    reserved: &BTreeMap<&str, i32>,
    next_replicas: &BTreeMap<String, i32>,
    partitions: &BTreeMap<String, i32>,
    revision: &str,
    current_revision: &str,
    provisioned: bool,
    now: Time,
) -> UnitedDeploymentStatus {
    let mut s = base;
    let condition = |type_: &str| UnitedDeploymentCondition {
        type_: type_.into(),
        status: "True".into(),
        last_transition_time: Some(now.clone()),
        reason: String::new(),
        message: String::new(),
    };
    if provisioned {
        set_condition(&mut s.conditions, condition("SubsetProvisioned"));
    }
    set_condition(&mut s.conditions, condition("SubsetUpdated"));
    s.replicas = 0;
    s.reserved_pods = 0;
    s.ready_replicas = 0;
    s.updated_replicas = 0;
    s.updated_ready_replicas = 0;
    for (name, e) in by_subset {
        let (replicas, ready) = (e.workload.status_replicas(), e.workload.status_ready_replicas());
        let (updated, updated_ready) = e.updated(revision);
        let reserved = reserved.get(*name).copied().unwrap_or(0);
        // Reserved pods are not counted as replicas (kruise's calculateStatus).
        s.replicas += replicas.wrapping_sub(reserved);
        s.reserved_pods += reserved;
        s.ready_replicas += ready;
        s.updated_replicas += updated;
        s.updated_ready_replicas += updated_ready;
        let partition = partitions.get(*name).copied().unwrap_or(0);
        match s.subset_statuses.iter_mut().find(|x| x.name == *name) {
            Some(x) => {
                x.replicas = replicas;
                x.ready_replicas = ready;
                x.partition = partition;
                x.reserved_pods = reserved;
            }
            None => s.subset_statuses.push(UnitedDeploymentSubsetStatus {
                name: name.to_string(),
                replicas,
                ready_replicas: ready,
                partition,
                reserved_pods: reserved,
                ..Default::default()
            }),
        }
    }
    s.subset_replicas = next_replicas.clone();
    if s.current_revision.is_empty() {
        s.current_revision = current_revision.into();
    }
    let update = s.update_status.get_or_insert_with(UpdateStatus::default);
    update.updated_revision = revision.into();
    update.current_partitions = partitions.clone();
    if revision != s.current_revision && s.updated_ready_replicas >= s.replicas {
        s.current_revision = revision.into();
    }
    s.label_selector =
        Selector::from_validated(ud.spec.selector.as_ref()).map(|sel| sel.to_string()).unwrap_or_default();
    s.observed_generation = ud.metadata.generation.unwrap_or(0);
    s
}

#[cfg(test)]
mod tests;
