//! What one round of the WorkloadSpread controller decides (kruise v1.9.0
//! `pkg/controller/workloadspread/workloadspread_controller.go` `syncWorkloadSpread`; issue 34
//! item 3), given the WorkloadSpread, the pods of its target workload (already filtered by the
//! target filter), the workload's replicas and its latest version:
//!
//! 1. `groupVersionedPods` / `groupPodBySubset`: pods by version, then by the subset their
//!    `apps.kruise.io/matched-workloadspread` annotation names; pods of another spread, of no
//!    subset or of a subset since removed go to the fake subset. (kruise also adopts pods created
//!    before the spread by matching their node against the subsets; that needs the node and is
//!    not done here: such pods stay in the fake subset and are costed as such.)
//! 2. `updateDeletionCost` ([`super::cost`]): for the kinds whose scale-down honours it, the
//!    cost of every active pod, the latest version in subset order, older versions reversed;
//!    only the pods whose annotation differs are listed.
//! 3. `calculateWorkloadSpreadStatus`: per subset, `replicas` (active pods), `missingReplicas`
//!    (`maxReplicas` scaled over the workload's replicas, less the active pods, less the pods
//!    still being created, plus the pods being deleted; -1 for no limit), `creatingPods` kept
//!    until the pod shows or [`CREATE_TIMEOUT`] passes, `deletingPods` kept while the pod shows
//!    and [`DELETE_TIMEOUT`] has not passed; the overall statuses from every pod, the versioned
//!    ones per version (a version the webhook recorded and no pod shows yet is kept while it still
//!    records something). The round asks to come back when the next record expires.
//! 4. The `Schedulable` condition is removed from every subset (the Adaptive strategy's
//!    rescheduling is not implemented).

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::cost::{FAKE_SUBSET, cost_applies, needs_patch, version_costs};
use super::{Injected, MATCHED_ANNOTATION, SUBSET_SCHEDULABLE, pod_version};
use crate::apis::workloadspread::{
    WorkloadSpread, WorkloadSpreadStatus, WorkloadSpreadSubset, WorkloadSpreadSubsetStatus,
};
use crate::compat::intstr::k8s_scaled_value;
use crate::core::pods::{is_active, name};

/// kruise's `CreatPodTimeout`: how long a webhook's creation record waits for its pod.
pub const CREATE_TIMEOUT: Duration = Duration::from_secs(30);
/// kruise's `DeletePodTimeout`: how long a deletion record waits for its pod to go.
pub const DELETE_TIMEOUT: Duration = Duration::from_secs(15);

/// What the round does.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// `(pod name, cost)` for the pods whose deletion-cost annotation must change.
    pub costs: Vec<(String, String)>,
    /// The status to write (`None`: a `maxReplicas` cannot be computed; nothing is written).
    pub status: Option<WorkloadSpreadStatus>,
    /// Come back after this (the next record to expire).
    pub requeue: Option<Duration>,
    /// Records that expired: `(pod or uid, "CreatePodFailed" | "DeletePodFailed")`.
    pub expired: Vec<(String, &'static str)>,
}

/// The annotation's content when it names this spread.
fn injected_here(ws: &WorkloadSpread, pod: &Pod) -> Option<Injected> {
    let raw = pod.metadata.annotations.as_ref()?.get(MATCHED_ANNOTATION)?;
    Injected::parse(raw).filter(|i| Some(i.name.as_str()) == ws.metadata.name.as_deref())
}

/// `groupPodBySubset`: one version's pods by subset name ([`FAKE_SUBSET`] for the rest).
pub fn group_by_subset<'a>(ws: &WorkloadSpread, pods: &[&'a Pod]) -> BTreeMap<String, Vec<&'a Pod>> {
    let mut map: BTreeMap<String, Vec<&'a Pod>> = BTreeMap::new();
    map.insert(FAKE_SUBSET.into(), Vec::new());
    for subset in &ws.spec.subsets {
        map.insert(subset.name.clone(), Vec::new());
    }
    for pod in pods {
        let subset = injected_here(ws, pod).map(|i| i.subset).filter(|s| map.contains_key(s) && s != FAKE_SUBSET);
        map.entry(subset.unwrap_or_else(|| FAKE_SUBSET.into())).or_default().push(pod);
    }
    map
}

fn since(now: &Time, then: &Time, timeout: Duration) -> Option<Duration> {
    let elapsed = now.0.duration_since(then.0);
    let left = k8s_openapi::jiff::SignedDuration::try_from(timeout).ok()? - elapsed;
    Duration::try_from(left).ok().filter(|d| !d.is_zero())
}

/// `calculateWorkloadSpreadSubsetStatus`; `None` when `maxReplicas` cannot be computed.
fn subset_status(
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
    let mut status =
        WorkloadSpreadSubsetStatus { name: subset.name.clone(), missing_replicas: max, ..Default::default() };
    let mut creating = old.map(|o| o.creating_pods.clone()).unwrap_or_default();
    let deleting = old.map(|o| o.deleting_pods.clone()).unwrap_or_default();
    let mut requeue = |d: Duration| plan.requeue = Some(plan.requeue.map_or(d, |r| r.min(d)));
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
                None => plan.expired.push((name(pod).to_string(), "DeletePodFailed")),
                Some(left) => {
                    status.deleting_pods.insert(name(pod).to_string(), at.clone());
                    if status.missing_replicas < max {
                        status.missing_replicas += 1;
                    }
                    requeue(left);
                }
            }
        }
    }
    status.replicas = active;
    for (id, at) in creating {
        match since(now, &at, CREATE_TIMEOUT) {
            None => plan.expired.push((id, "CreatePodFailed")),
            Some(left) => {
                status.creating_pods.insert(id, at);
                if status.missing_replicas > 0 {
                    status.missing_replicas -= 1;
                }
                requeue(left);
            }
        }
    }
    // The old conditions other than `Schedulable` are kept (no rescheduling: it is removed).
    status.conditions = old
        .map(|o| o.conditions.iter().filter(|c| c.type_ != SUBSET_SCHEDULABLE).cloned().collect())
        .unwrap_or_default();
    Some(status)
}

/// `calculateWorkloadSpreadSubsetStatuses` for one group of pods.
fn subset_statuses(
    ws: &WorkloadSpread,
    old: &[WorkloadSpreadSubsetStatus],
    pods: Option<&BTreeMap<String, Vec<&Pod>>>,
    replicas: i32,
    now: &Time,
    plan: &mut Plan,
) -> Option<Vec<WorkloadSpreadSubsetStatus>> {
    ws.spec
        .subsets
        .iter()
        .map(|subset| {
            let subset_pods = pods.and_then(|p| p.get(&subset.name)).map(Vec::as_slice).unwrap_or_default();
            subset_status(subset, subset_pods, old.iter().find(|o| o.name == subset.name), replicas, now, plan)
        })
        .collect()
}

fn is_empty(statuses: &[WorkloadSpreadSubsetStatus]) -> bool {
    statuses.iter().all(|s| s.replicas == 0 && s.creating_pods.is_empty() && s.deleting_pods.is_empty())
}

/// The round: `pods` are the target's (filtered), `replicas` the workload's, `latest_version`
/// the version of its newest pods ([`super::VERSION_IGNORED`] for unversioned workloads).
pub fn plan(ws: &WorkloadSpread, pods: &[&Pod], replicas: i32, latest_version: &str, now: &Time) -> Plan {
    let mut plan = Plan::default();
    let mut versioned: BTreeMap<String, Vec<&Pod>> = BTreeMap::new();
    for pod in pods {
        versioned.entry(pod_version(pod)).or_default().push(pod);
    }
    let grouped: BTreeMap<String, BTreeMap<String, Vec<&Pod>>> =
        versioned.iter().map(|(v, pods)| (v.clone(), group_by_subset(ws, pods))).collect();
    let mut all: BTreeMap<String, Vec<&Pod>> = BTreeMap::new();
    for map in grouped.values() {
        for (subset, pods) in map {
            all.entry(subset.clone()).or_default().extend(pods.iter().copied());
        }
    }

    if ws.spec.target_ref.as_ref().is_some_and(cost_applies) {
        let by_name: BTreeMap<&str, &Pod> = pods.iter().map(|p| (name(p), *p)).collect();
        for (version, map) in &grouped {
            for (pod, cost) in version_costs(ws, map, replicas, version != latest_version) {
                if by_name.get(pod.as_str()).is_some_and(|p| needs_patch(p, &cost)) {
                    plan.costs.push((pod, cost));
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
    // Versioned statuses report expiries too: they are counted once, from the overall ones.
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
        plan.requeue = Some(plan.requeue.map_or(d, |r| r.min(d)));
    }
    plan.status = Some(status);
    plan
}

#[cfg(test)]
mod tests;
