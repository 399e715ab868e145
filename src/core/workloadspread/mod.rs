//! WorkloadSpread's pod hooks as pure decisions (issue 34 item 3; kruise v1.9.0
//! `pkg/util/workloadspread/workloadspread.go`, called from `pkg/webhook/pod/mutating/
//! workloadspread.go` on pod CREATE and `pkg/webhook/pod/validating/workloadspread.go` on pod
//! DELETE and eviction):
//!
//! - which WorkloadSpread a pod belongs to ([`owner_matches`], [`selects_pod`]): its controller
//!   is one of kruise's five workload kinds and the spread's target (group, kind, name) — the
//!   caller walks a ReplicaSet up to its Deployment as kruise's `isReferenceEqual` does — and the
//!   target filter selects the pod's labels;
//! - the status the pod is counted in: the subset statuses of the pod's version
//!   ([`pod_version`]: the `pod-template-hash` of Deployment/ReplicaSet pods, `versionIgnored`
//!   for other workloads), initialised from the subsets' `maxReplicas` over the workload's
//!   replicas when that version has none ([`initial_subset_statuses`]);
//! - on CREATE the first schedulable subset with room (`missingReplicas > 0`, or -1 unlimited),
//!   the pod recorded in its `creatingPods` (by name, or by a generated uid for a pod with only
//!   a generateName) and `missingReplicas` decremented; a StatefulSet's pod goes by ordinal
//!   instead ([`statefulset_subset`]); on DELETE or eviction the pod recorded in `deletingPods`
//!   of the subset its annotation names and `missingReplicas` incremented ([`update_subset_for_pod`]);
//! - what the chosen subset does to the pod ([`inject`]): tolerations appended, preferred terms
//!   appended, the required term added to every existing required term (or made the only one),
//!   the subset's patch applied as a strategic merge patch (clearing `priority` when the patch
//!   changed `priorityClassName`), and the annotation `apps.kruise.io/matched-workloadspread`
//!   written as kruise's `json.Marshal` writes it (`{"name":"…","subset":"…"}`, `uid` only
//!   when generated).
//!
//! [`cost`] decides the deletion cost the controller writes on the subsets' pods, [`adopt`]
//! the subset a pod created before its WorkloadSpread joins, [`reschedule`] the Adaptive
//! strategy's `Schedulable` conditions and the pods it deletes, [`status`] the controller's round.

pub mod adopt;
pub mod cost;
pub mod reschedule;
pub mod status;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, NodeAffinity, NodeSelector, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use serde_json::Value;

use crate::apis::workloadspread::{TargetFilter, TargetReference, WorkloadSpread, WorkloadSpreadSubsetStatus};
use crate::compat::intstr::k8s_scaled_value;
use crate::compat::selector::Selector;
use crate::compat::strategic::apply_pod_patch;
use crate::core::validation::workloadspread::parse_group;

/// The pod annotation naming the WorkloadSpread and subset a pod was placed in.
pub const MATCHED_ANNOTATION: &str = "apps.kruise.io/matched-workloadspread";
/// The pod annotation a ReplicaSet or CloneSet scale-down sorts pods by (lower goes first).
pub const DELETION_COST_ANNOTATION: &str = "controller.kubernetes.io/pod-deletion-cost";
/// The version key of workloads whose subset statuses are not versioned.
pub const VERSION_IGNORED: &str = "versionIgnored";
/// The subset condition type the rescheduling strategy sets to False.
pub const SUBSET_SCHEDULABLE: &str = "Schedulable";

/// What happens to the pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// Pod CREATE (`/mutate-pod`).
    Create,
    /// Pod DELETE (`/validate-pod`).
    Delete,
    /// `pods/eviction` CREATE (`/validate-pod`).
    Eviction,
}

/// The content of [`MATCHED_ANNOTATION`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Injected {
    /// WorkloadSpread name.
    pub name: String,
    /// Subset name.
    pub subset: String,
    /// The uid generated for a pod created without a name.
    pub uid: String,
}

impl Injected {
    /// Go's `json.Marshal(InjectWorkloadSpread)`: `uid` omitted when empty.
    pub fn to_annotation(&self) -> String {
        let mut m = serde_json::Map::new();
        m.insert("name".into(), Value::from(self.name.as_str()));
        m.insert("subset".into(), Value::from(self.subset.as_str()));
        if !self.uid.is_empty() {
            m.insert("uid".into(), Value::from(self.uid.as_str()));
        }
        Value::Object(m).to_string()
    }

    /// Go's `json.Unmarshal` into `InjectWorkloadSpread`: field names match case-insensitively;
    /// `None` for what is not a JSON object (kruise ignores the pod then).
    pub fn parse(annotation: &str) -> Option<Injected> {
        let Value::Object(m) = serde_json::from_str::<Value>(annotation).ok()? else { return None };
        let field = |name: &str| {
            m.iter()
                .filter(|(k, _)| k.eq_ignore_ascii_case(name))
                .filter_map(|(_, v)| v.as_str())
                .next_back()
                .unwrap_or("")
                .to_string()
        };
        Some(Injected { name: field("name"), subset: field("subset"), uid: field("uid") })
    }
}

/// kruise's `workloads`: the controller kinds whose pods a WorkloadSpread may spread.
const WORKLOADS: &[(&str, &[&str])] = &[
    ("Deployment", &["apps"]),
    ("CloneSet", &["apps.kruise.io"]),
    ("ReplicaSet", &["apps"]),
    ("Job", &["batch"]),
    ("StatefulSet", &["apps", "apps.kruise.io"]),
];

/// `matchReference`: the owner is one of kruise's workload kinds.
pub fn is_workload_reference(owner: &OwnerReference) -> bool {
    let Ok(group) = parse_group(&owner.api_version) else { return false };
    WORKLOADS.iter().any(|(kind, groups)| *kind == owner.kind && groups.contains(&group))
}

/// The first part of `isReferenceEqual`: the target and the owner have the same group, kind and
/// name (the version may differ).
pub fn owner_matches(target: &TargetReference, owner: &OwnerReference) -> bool {
    match (parse_group(&target.api_version), parse_group(&owner.api_version)) {
        (Ok(g1), Ok(g2)) => g1 == g2 && target.kind == owner.kind && target.name == owner.name,
        _ => false,
    }
}

/// `IsPodSelected`: no filter selects every pod; a filter without selector none.
pub fn selects_pod(filter: Option<&TargetFilter>, labels: &BTreeMap<String, String>) -> Result<bool, String> {
    let Some(filter) = filter else { return Ok(true) };
    let selector = Selector::from_validated(filter.selector.as_ref()).map_err(|e| e.to_string())?;
    Ok(selector.matches(labels))
}

/// `GetPodVersion`: the pod's `pod-template-hash`, else the short form of its
/// `controller-revision-hash`, for pods of a Deployment or ReplicaSet (kruise's default
/// `--ws-enabled-versioned-status`); `versionIgnored` otherwise.
pub fn pod_version(pod: &Pod) -> String {
    let owner_kind = controller_of(pod).map(|o| o.kind.to_ascii_lowercase());
    if !matches!(owner_kind.as_deref(), Some("deployment" | "replicaset")) {
        return VERSION_IGNORED.into();
    }
    let labels = pod.metadata.labels.as_ref();
    if let Some(v) = labels.and_then(|l| l.get("pod-template-hash")) {
        return v.clone();
    }
    if let Some(v) = labels.and_then(|l| l.get("controller-revision-hash")) {
        return v.rsplit('-').next().unwrap_or(v).to_string();
    }
    VERSION_IGNORED.into()
}

/// `metav1.GetControllerOf`: the owner reference with `controller: true`.
pub fn controller_of(pod: &Pod) -> Option<&OwnerReference> {
    pod.metadata.owner_references.as_ref()?.iter().find(|o| o.controller == Some(true))
}

/// Whether any subset's `maxReplicas` is a percentage (then the workload's replicas are read).
pub fn has_percent_subset(ws: &WorkloadSpread) -> bool {
    ws.spec
        .subsets
        .iter()
        .any(|s| matches!(s.max_replicas, Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(_))))
}

/// `initializedSubsetStatuses`: one status per subset, `missingReplicas` its `maxReplicas`
/// scaled over `replicas` (rounded up) or -1 for no limit.
pub fn initial_subset_statuses(ws: &WorkloadSpread, replicas: i32) -> Vec<WorkloadSpreadSubsetStatus> {
    ws.spec
        .subsets
        .iter()
        .map(|s| WorkloadSpreadSubsetStatus {
            name: s.name.clone(),
            missing_replicas: match &s.max_replicas {
                None => -1,
                Some(max) => k8s_scaled_value(Some(max), i64::from(replicas), true)
                    .map_or(0, |v| i32::try_from(v).unwrap_or(i32::MAX)),
            },
            ..Default::default()
        })
        .collect()
}

/// Whether the subset status carries `Schedulable=False`.
fn unschedulable(status: &WorkloadSpreadSubsetStatus) -> bool {
    status.conditions.iter().any(|c| c.type_ == SUBSET_SCHEDULABLE && c.status == "False")
}

/// `getSuitableSubset`: the first schedulable subset with room.
pub fn suitable_subset(statuses: &[WorkloadSpreadSubsetStatus]) -> Option<usize> {
    statuses.iter().position(|s| !unschedulable(s) && (s.missing_replicas > 0 || s.missing_replicas == -1))
}

/// `getParentNameAndOrdinal`: the ordinal at the end of a StatefulSet pod's name, -1 if none.
pub fn ordinal(pod_name: &str) -> i64 {
    let Some((parent, digits)) = pod_name.rsplit_once('-') else { return -1 };
    let _ = parent;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return -1;
    }
    digits.parse::<i32>().map_or(-1, i64::from)
}

/// A StatefulSet's pod: the subset whose cumulative `maxReplicas` range holds its ordinal
/// (subsets marked unschedulable in `status.subsetStatuses` are passed over).
pub fn statefulset_subset(ws: &WorkloadSpread, pod_name: &str) -> Option<String> {
    let id = ordinal(pod_name);
    let mut threshold = 0i64;
    for subset in &ws.spec.subsets {
        let status = ws.status.as_ref().and_then(|s| s.subset_statuses.iter().find(|st| st.name == subset.name));
        if status.is_some_and(unschedulable) {
            continue;
        }
        threshold += match &subset.max_replicas {
            Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(i)) => i64::from(*i),
            // Go's `IntValue()` of a string is its `Atoi` (0 when it is not a number).
            Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s)) => s.parse().unwrap_or(0),
            None => i64::from(i32::MAX),
        };
        if id < threshold {
            return Some(subset.name.clone());
        }
    }
    None
}

/// What [`update_subset_for_pod`] decided.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SubsetUpdate {
    /// Whether the WorkloadSpread status changed (and must be written).
    pub changed: bool,
    /// The subset the pod goes to (CREATE) or leaves (DELETE), when there is one.
    pub subset: Option<String>,
    /// The uid recorded for a pod created without a name.
    pub generated_uid: String,
}

/// `updateSubsetForPod` on `ws` (changed in place): `replicas` is the workload's, used only when
/// the pod's version has no subset statuses yet; `new_uid` makes the uid of a nameless pod.
pub fn update_subset_for_pod(
    ws: &mut WorkloadSpread,
    pod: &Pod,
    injected: Option<&Injected>,
    op: Operation,
    now: &Time,
    replicas: i32,
    new_uid: impl FnOnce() -> String,
) -> SubsetUpdate {
    let version = pod_version(pod);
    let initial = initial_subset_statuses(ws, replicas);
    let status = ws.status.get_or_insert_with(Default::default);
    let statuses = status.versioned_subset_statuses.entry(version).or_default();
    // Initialised statuses are written only with a change to a subset, as kruise does.
    let changed = false;
    if statuses.is_empty() {
        *statuses = initial;
    }
    let pod_name = pod.metadata.name.as_deref().unwrap_or("");
    let recorded = |statuses: &[WorkloadSpreadSubsetStatus]| {
        statuses
            .iter()
            .find(|s| s.creating_pods.contains_key(pod_name) || s.deleting_pods.contains_key(pod_name))
            .map(|s| s.name.clone())
    };
    let mut update = SubsetUpdate::default();
    match op {
        Operation::Create => {
            if !pod_name.is_empty()
                && let Some(name) = recorded(statuses)
            {
                return SubsetUpdate { subset: Some(name), ..update };
            }
            let Some(i) = suitable_subset(statuses) else { return SubsetUpdate { changed, ..update } };
            let subset = &mut statuses[i];
            update.subset = Some(subset.name.clone());
            if subset.missing_replicas == -1 {
                return SubsetUpdate { changed, ..update };
            }
            let key = if pod_name.is_empty() {
                update.generated_uid = new_uid();
                update.generated_uid.clone()
            } else {
                pod_name.to_string()
            };
            subset.creating_pods.insert(key, now.clone());
            if subset.missing_replicas > 0 {
                subset.missing_replicas -= 1;
            }
        }
        Operation::Delete | Operation::Eviction => {
            if recorded(statuses).is_some() {
                return update;
            }
            let wanted = injected.map(|i| i.subset.as_str()).unwrap_or("");
            let Some(subset) = statuses.iter_mut().find(|s| s.name == wanted) else {
                return SubsetUpdate { changed, ..update };
            };
            update.subset = Some(subset.name.clone());
            if subset.missing_replicas == -1 {
                return SubsetUpdate { changed, ..update };
            }
            subset.deleting_pods.insert(pod_name.to_string(), now.clone());
            subset.missing_replicas += 1;
        }
    }
    update.changed = true;
    update
}

/// `injectWorkloadSpreadIntoPod`: the subset's scheduling constraints and patch on `pod`, and
/// the annotation; `Ok(false)` when the WorkloadSpread has no subset of that name.
pub fn inject(ws: &WorkloadSpread, pod: &mut Pod, subset_name: &str, generated_uid: &str) -> Result<bool, String> {
    let Some(subset) = ws.spec.subsets.iter().find(|s| s.name == subset_name) else { return Ok(false) };
    let spec = pod.spec.get_or_insert_with(Default::default);
    if !subset.tolerations.is_empty() {
        spec.tolerations.get_or_insert_with(Vec::new).extend(subset.tolerations.iter().cloned());
    }
    let affinity = spec.affinity.get_or_insert_with(Affinity::default);
    let node = affinity.node_affinity.get_or_insert_with(NodeAffinity::default);
    if !subset.preferred_node_selector_terms.is_empty() {
        node.preferred_during_scheduling_ignored_during_execution
            .get_or_insert_with(Vec::new)
            .extend(subset.preferred_node_selector_terms.iter().cloned());
    }
    if let Some(term) = &subset.required_node_selector_term {
        let required =
            node.required_during_scheduling_ignored_during_execution.get_or_insert_with(NodeSelector::default);
        if required.node_selector_terms.is_empty() {
            required.node_selector_terms = vec![term.clone()];
        } else {
            for t in &mut required.node_selector_terms {
                if let Some(e) = &term.match_expressions {
                    t.match_expressions.get_or_insert_with(Vec::new).extend(e.iter().cloned());
                }
                if let Some(f) = &term.match_fields {
                    t.match_fields.get_or_insert_with(Vec::new).extend(f.iter().cloned());
                }
            }
        }
    }
    if let Some(patch) = &subset.patch {
        let raw = serde_json::to_value(&*pod).map_err(|e| e.to_string())?;
        let merged = apply_pod_patch(&raw, patch)?;
        let mut patched: Pod = crate::compat::decode::from_value(&merged).map_err(|e| e.to_string())?;
        let class = |p: &Pod| p.spec.as_ref().and_then(|s| s.priority_class_name.clone());
        if class(&patched) != class(pod)
            && let Some(s) = patched.spec.as_mut()
        {
            // The priority admission plugin ran before us; it runs again after a changed class.
            s.priority = None;
        }
        *pod = patched;
    }
    pod.metadata.labels.get_or_insert_with(BTreeMap::new);
    let injected = Injected {
        name: ws.metadata.name.clone().unwrap_or_default(),
        subset: subset_name.into(),
        uid: generated_uid.into(),
    };
    pod.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(MATCHED_ANNOTATION.into(), injected.to_annotation());
    Ok(true)
}

#[cfg(test)]
mod tests;
