//! What one round of the WorkloadSpread controller decides (kruise v1.9.0
//! `pkg/controller/workloadspread/workloadspread_controller.go` `syncWorkloadSpread`; issue 34
//! item 3), given the WorkloadSpread, the pods of its target workload (already filtered by the
//! target filter), the workload's replicas, its latest version and the nodes the pods run on:
//!
//! 1. `groupVersionedPods` / `groupPodBySubset`: pods by version, then by the subset their
//!    `apps.kruise.io/matched-workloadspread` annotation names. A pod without this spread's
//!    annotation (created before the spread, or annotated by another spread) is adopted when its
//!    node matches a subset ([`super::adopt`]): the plan lists the patch of its annotation and
//!    the round counts it in that subset already. The rest — no node, no matching subset, or
//!    annotated with a subset since removed — go to the fake subset.
//! 2. `updateDeletionCost` ([`super::cost`]): for the kinds whose scale-down honours it, the
//!    cost of every active pod, the latest version in subset order, older versions reversed;
//!    only the pods whose annotation differs are listed.
//! 3. `calculateWorkloadSpreadStatus`: per subset, `replicas` (active pods), `missingReplicas`
//!    (`maxReplicas` scaled over the workload's replicas, less the active pods, less the pods
//!    still being created, plus the pods being deleted; -1 for no limit), `creatingPods` kept
//!    until the pod shows or [`CREATE_TIMEOUT`] passes, `deletingPods` kept while the pod shows
//!    and [`DELETE_TIMEOUT`] has not passed (an expired record is a `CreatePodFailed` or
//!    `DeletePodFailed` Event); the overall statuses from every pod, the versioned ones per
//!    version (a version the webhook recorded and no pod shows yet is kept while it still
//!    records something).
//! 4. The `Schedulable` condition of every subset, overall and per version
//!    ([`super::reschedule`]): with the Adaptive strategy, the pods that failed to schedule for
//!    too long are listed for deletion (from the overall statuses) and a subset recovering is a
//!    `RecoverSchedulable` Event; without it the condition is removed.
//!
//! The round asks to come back when the next record expires, a pending pod would time out or a
//! subset would recover.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::Value;

use super::adopt::{adoption_patch, suitable_subset};
use super::cost::{FAKE_SUBSET, cost_applies, needs_patch, version_costs};
use super::reschedule::{critical_seconds, last_subset, remove_condition, reschedule_subset};
use super::{Injected, MATCHED_ANNOTATION, pod_version};
use crate::apis::workloadspread::{
    WorkloadSpread, WorkloadSpreadStatus, WorkloadSpreadSubset, WorkloadSpreadSubsetStatus,
};
use crate::compat::intstr::k8s_scaled_value;
use crate::core::pods::{is_active, name};
use crate::core::rollout::plan::Event;

/// kruise's `CreatPodTimeout`: how long a webhook's creation record waits for its pod.
pub const CREATE_TIMEOUT: Duration = Duration::from_secs(30);
/// kruise's `DeletePodTimeout`: how long a deletion record waits for its pod to go.
pub const DELETE_TIMEOUT: Duration = Duration::from_secs(15);

/// A pod adopted into a subset: the strategic merge patch to send.
#[derive(Clone, Debug, PartialEq)]
pub struct Adoption {
    /// Pod name.
    pub pod: String,
    /// The subset it joins.
    pub subset: String,
    /// `{"metadata": …}` with the annotation naming the spread and subset.
    pub patch: Value,
}

/// A deletion-cost annotation to write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CostPatch {
    /// Pod name.
    pub pod: String,
    /// The cost.
    pub cost: String,
    /// The subset the pod is counted in ([`FAKE_SUBSET`] for none), for the failure Event.
    pub subset: String,
}

/// A pod that failed to schedule for too long, to delete.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reschedule {
    /// Pod name.
    pub pod: String,
    /// Pod uid (the deletion's precondition).
    pub uid: String,
    /// Its subset.
    pub subset: String,
}

/// What the round does.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// Pods adopted into a subset, patched first.
    pub adoptions: Vec<Adoption>,
    /// The pods whose deletion-cost annotation must change.
    pub costs: Vec<CostPatch>,
    /// The status to write (`None`: a `maxReplicas` cannot be computed; nothing is written).
    pub status: Option<WorkloadSpreadStatus>,
    /// Pods to delete after the status is written (Adaptive rescheduling).
    pub reschedule: Vec<Reschedule>,
    /// Come back after this.
    pub requeue: Option<Duration>,
    /// Events to record on the WorkloadSpread.
    pub events: Vec<Event>,
}

impl Plan {
    fn requeue_after(&mut self, d: Duration) {
        self.requeue = Some(self.requeue.map_or(d, |r| r.min(d)));
    }
}

/// The annotation's content when it names this spread and a subset (`isNotMatchedWS` negated).
fn injected_here(ws: &WorkloadSpread, pod: &Pod) -> Option<Injected> {
    let raw = pod.metadata.annotations.as_ref()?.get(MATCHED_ANNOTATION)?;
    Injected::parse(raw).filter(|i| Some(i.name.as_str()) == ws.metadata.name.as_deref() && !i.subset.is_empty())
}

/// `groupPodBySubset`: one version's pods by subset name ([`FAKE_SUBSET`] for the rest), pods
/// without this spread's annotation adopted by their node (`node` finds a node by name); the
/// adoptions are appended to `adoptions`.
pub fn group_by_subset<'a>(
    ws: &WorkloadSpread,
    pods: &[&'a Pod],
    replicas: i32,
    node: &dyn Fn(&str) -> Option<Arc<Node>>,
    adoptions: &mut Vec<Adoption>,
) -> BTreeMap<String, Vec<&'a Pod>> {
    let mut map: BTreeMap<String, Vec<&'a Pod>> = BTreeMap::new();
    map.insert(FAKE_SUBSET.into(), Vec::new());
    // What each subset may still take: its `maxReplicas` (no limit: MaxInt32) less its pods.
    let mut missing: BTreeMap<String, i64> = BTreeMap::new();
    for subset in &ws.spec.subsets {
        map.insert(subset.name.clone(), Vec::new());
        let max = subset
            .max_replicas
            .clone()
            .unwrap_or(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(i32::MAX));
        missing.insert(subset.name.clone(), k8s_scaled_value(Some(&max), i64::from(replicas), true).unwrap_or(0));
    }
    for pod in pods {
        if let Some(i) = injected_here(ws, pod)
            && let Some(m) = missing.get_mut(&i.subset)
        {
            *m -= 1;
        }
    }
    for pod in pods {
        let subset = match injected_here(ws, pod) {
            Some(i) => Some(i.subset),
            None => adopt(ws, pod, node, &mut missing, adoptions),
        };
        let subset = subset.filter(|s| map.contains_key(s) && s != FAKE_SUBSET);
        map.entry(subset.unwrap_or_else(|| FAKE_SUBSET.into())).or_default().push(pod);
    }
    map
}

/// `getAndUpdateSuitableSubsetName`: the subset a pod on a known node is adopted into.
fn adopt(
    ws: &WorkloadSpread,
    pod: &Pod,
    node: &dyn Fn(&str) -> Option<Arc<Node>>,
    missing: &mut BTreeMap<String, i64>,
    adoptions: &mut Vec<Adoption>,
) -> Option<String> {
    let node_name = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).filter(|n| !n.is_empty())?;
    let node = node(node_name)?;
    let subset: &WorkloadSpreadSubset = &ws.spec.subsets[suitable_subset(ws, pod, &node, missing)?];
    adoptions.push(Adoption {
        pod: name(pod).to_string(),
        subset: subset.name.clone(),
        patch: adoption_patch(ws, subset),
    });
    if let Some(m) = missing.get_mut(&subset.name) {
        *m -= 1;
    }
    Some(subset.name.clone())
}

fn since(now: &Time, then: &Time, timeout: Duration) -> Option<Duration> {
    let elapsed = now.0.duration_since(then.0);
    let left = k8s_openapi::jiff::SignedDuration::try_from(timeout).ok()? - elapsed;
    Duration::try_from(left).ok().filter(|d| !d.is_zero())
}

/// `calculateWorkloadSpreadSubsetStatus`; `None` when `maxReplicas` cannot be computed.
fn subset_status(
    ws: &WorkloadSpread,
    subset: &WorkloadSpreadSubset,
    pods: &[&Pod],
    old: Option<&WorkloadSpreadSubsetStatus>,
    replicas: i32,
    now: &Time,
    plan: &mut Plan,
) -> Option<WorkloadSpreadSubsetStatus> {
    let max = match &subset.max_replicas {
        None => -1,
        Some(m) => {
            let v = k8s_scaled_value(Some(m), i64::from(replicas), true).ok()?;
            if v < 0 {
                return None;
            }
            i32::try_from(v).unwrap_or(i32::MAX)
        }
    };
    let ns = ws.metadata.namespace.as_deref().unwrap_or("");
    let mut status =
        WorkloadSpreadSubsetStatus { name: subset.name.clone(), missing_replicas: max, ..Default::default() };
    let mut creating = old.map(|o| o.creating_pods.clone()).unwrap_or_default();
    let deleting = old.map(|o| o.deleting_pods.clone()).unwrap_or_default();
    let mut active = 0;
    for pod in pods {
        match pod.metadata.annotations.as_ref().and_then(|a| a.get(MATCHED_ANNOTATION)).and_then(|a| Injected::parse(a))
        {
            Some(i) if !i.uid.is_empty() => creating.remove(&i.uid),
            _ => creating.remove(name(pod)),
        };
        if !is_active(pod) {
            continue;
        }
        active += 1;
        if status.missing_replicas > 0 {
            status.missing_replicas -= 1;
        }
        if let Some(at) = deleting.get(name(pod)) {
            match since(now, at, DELETE_TIMEOUT) {
                None => plan.events.push(Event::warning(
                    "DeletePodFailed",
                    format!("Pod {ns}/{} was expected to be deleted but it wasn't", name(pod)),
                )),
                Some(left) => {
                    status.deleting_pods.insert(name(pod).to_string(), at.clone());
                    if status.missing_replicas < max {
                        status.missing_replicas += 1;
                    }
                    plan.requeue_after(left);
                }
            }
        }
    }
    status.replicas = active;
    for (id, at) in creating {
        match since(now, &at, CREATE_TIMEOUT) {
            None => plan.events.push(Event::warning(
                "CreatePodFailed",
                format!("Pod {ns}/{id} was expected to be created but it wasn't"),
            )),
            Some(left) => {
                status.creating_pods.insert(id, at);
                if status.missing_replicas > 0 {
                    status.missing_replicas -= 1;
                }
                plan.requeue_after(left);
            }
        }
    }
    // kruise starts from no condition and sets only `Schedulable` (below); conditions of other
    // types, which kruise has none of, are kept.
    status.conditions = old
        .map(|o| o.conditions.iter().filter(|c| c.type_ != super::SUBSET_SCHEDULABLE).cloned().collect())
        .unwrap_or_default();
    Some(status)
}

/// `calculateWorkloadSpreadSubsetStatuses` for one group of pods, with the `Schedulable`
/// conditions; the pods to reschedule are added to `plan.reschedule`.
fn subset_statuses(
    ws: &WorkloadSpread,
    old: &[WorkloadSpreadSubsetStatus],
    pods: Option<&BTreeMap<String, Vec<&Pod>>>,
    replicas: i32,
    now: &Time,
    plan: &mut Plan,
) -> Option<Vec<WorkloadSpreadSubsetStatus>> {
    let critical = critical_seconds(ws);
    let last = ws.spec.subsets.len().saturating_sub(1);
    let ns = ws.metadata.namespace.as_deref().unwrap_or("");
    let ws_name = ws.metadata.name.as_deref().unwrap_or("");
    let mut out = Vec::with_capacity(ws.spec.subsets.len());
    for (i, subset) in ws.spec.subsets.iter().enumerate() {
        let subset_pods = pods.and_then(|p| p.get(&subset.name)).map(Vec::as_slice).unwrap_or_default();
        let old_status = old.iter().find(|o| o.name == subset.name);
        let mut status = subset_status(ws, subset, subset_pods, old_status, replicas, now, plan)?;
        match critical {
            Some(seconds) if i != last => {
                let r = reschedule_subset(seconds, subset_pods, &mut status, old_status, now);
                if let Some(d) = r.requeue {
                    plan.requeue_after(d);
                }
                if r.recovered {
                    plan.events.push(Event::normal(
                        "RecoverSchedulable",
                        format!(
                            "Subset {} of WorkloadSpread {ns}/{ws_name} is recovered from unschedulable to schedulable",
                            subset.name
                        ),
                    ));
                }
                plan.reschedule.extend(r.failed.iter().map(|p| Reschedule {
                    pod: name(p).to_string(),
                    uid: p.metadata.uid.clone().unwrap_or_default(),
                    subset: subset.name.clone(),
                }));
            }
            Some(_) => last_subset(&mut status, old_status, now),
            None => remove_condition(&mut status),
        }
        out.push(status);
    }
    Some(out)
}

fn is_empty(statuses: &[WorkloadSpreadSubsetStatus]) -> bool {
    statuses.iter().all(|s| s.replicas == 0 && s.creating_pods.is_empty() && s.deleting_pods.is_empty())
}

/// The round: `pods` are the target's (filtered), `replicas` the workload's, `latest_version`
/// the version of its newest pods ([`super::VERSION_IGNORED`] for unversioned workloads), `node`
/// finds a node by name (for the pods to adopt).
pub fn plan(
    ws: &WorkloadSpread,
    pods: &[&Pod],
    replicas: i32,
    latest_version: &str,
    now: &Time,
    node: &dyn Fn(&str) -> Option<Arc<Node>>,
) -> Plan {
    let mut plan = Plan::default();
    let mut versioned: BTreeMap<String, Vec<&Pod>> = BTreeMap::new();
    for pod in pods {
        versioned.entry(pod_version(pod)).or_default().push(pod);
    }
    let grouped: BTreeMap<String, BTreeMap<String, Vec<&Pod>>> = versioned
        .iter()
        .map(|(v, pods)| (v.clone(), group_by_subset(ws, pods, replicas, node, &mut plan.adoptions)))
        .collect();
    let mut all: BTreeMap<String, Vec<&Pod>> = BTreeMap::new();
    for map in grouped.values() {
        for (subset, pods) in map {
            all.entry(subset.clone()).or_default().extend(pods.iter().copied());
        }
    }

    if ws.spec.target_ref.as_ref().is_some_and(cost_applies) {
        let by_name: BTreeMap<&str, &Pod> = pods.iter().map(|p| (name(p), *p)).collect();
        let subset_of: BTreeMap<&str, &str> =
            all.iter().flat_map(|(subset, pods)| pods.iter().map(move |p| (name(p), subset.as_str()))).collect();
        for (version, map) in &grouped {
            for (pod, cost) in version_costs(ws, map, replicas, version != latest_version) {
                if by_name.get(pod.as_str()).is_some_and(|p| needs_patch(p, &cost)) {
                    let subset = subset_of.get(pod.as_str()).copied().unwrap_or(FAKE_SUBSET).to_string();
                    plan.costs.push(CostPatch { pod, cost, subset });
                }
            }
        }
    }

    let old = ws.status.clone().unwrap_or_default();
    let Some(overall) = subset_statuses(ws, &old.subset_statuses, Some(&all), replicas, now, &mut plan) else {
        return plan;
    };
    let mut status = WorkloadSpreadStatus {
        observed_generation: ws.metadata.generation.unwrap_or(0),
        subset_statuses: overall,
        versioned_subset_statuses: BTreeMap::new(),
    };
    // The versioned statuses carry their own conditions (the pod webhook reads them) and their
    // own expiries and pending pods; the Events and deletions come once, from the overall ones.
    let mut scratch = Plan::default();
    for (version, map) in &grouped {
        let old_version = old.versioned_subset_statuses.get(version).map(Vec::as_slice).unwrap_or_default();
        if let Some(s) = subset_statuses(ws, old_version, Some(map), replicas, now, &mut scratch) {
            status.versioned_subset_statuses.insert(version.clone(), s);
        }
    }
    for (version, old_version) in &old.versioned_subset_statuses {
        if grouped.contains_key(version) {
            continue;
        }
        if let Some(s) = subset_statuses(ws, old_version, None, replicas, now, &mut scratch)
            && !is_empty(&s)
        {
            status.versioned_subset_statuses.insert(version.clone(), s);
        }
    }
    if let Some(d) = scratch.requeue {
        plan.requeue_after(d);
    }
    plan.status = Some(status);
    plan
}

#[cfg(test)]
mod tests;
