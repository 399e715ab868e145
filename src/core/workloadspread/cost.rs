//! The deletion cost the WorkloadSpread controller writes on the pods of its subsets (kruise
//! v1.9.0 `pkg/controller/workloadspread/update_pod_deletion_cost.go`; issue 34 item 3), so that
//! a ReplicaSet, Deployment or CloneSet scale-down (which deletes pods with the lowest
//! `controller.kubernetes.io/pod-deletion-cost` first) empties the last subsets first and never
//! leaves a subset above its `maxReplicas`:
//!
//! - in the subset at position `i` of `n`, pods within `maxReplicas` (all of them when it is
//!   unset) cost `100 * (n - i)`; the surplus — the first ones in Kubernetes' `ActivePods` order,
//!   i.e. the cheapest to lose — cost `-100 * (i + 1)`; pods in no subset cost `-100 * (n + 1)`;
//! - for pods of an older workload version the subset order is reversed (an update drains the
//!   old version from the first subsets back);
//! - only active pods are costed, and a pod is patched only when its annotation differs (an
//!   absent annotation already means "0").

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;

use super::DELETION_COST_ANNOTATION;
use crate::apis::workloadspread::{TargetReference, WorkloadSpread, WorkloadSpreadSubset};
use crate::core::pods::{active_pods_order, is_active, name};

/// kruise's `FakeSubsetName`: the pods no subset holds (not a valid subset name, so no subset
/// can be taken for it).
pub const FAKE_SUBSET: &str = "kruise.io/workloadspread-fake-subset-name";
const POSITIVE: i64 = 100;
const NEGATIVE: i64 = -100;

/// `isEffectiveKindForDeletionCost`: the kinds whose scale-down honours the deletion cost.
pub fn cost_applies(target: &TargetReference) -> bool {
    matches!(target.kind.as_str(), "ReplicaSet" | "Deployment" | "CloneSet")
}

/// `syncSubsetPodDeletionCost`: `(pod name, cost)` for the active pods of the subset at
/// `index` (`None`: the pods in no subset).
pub fn subset_costs(
    ws: &WorkloadSpread,
    subset: Option<&WorkloadSpreadSubset>,
    index: usize,
    pods: &[&Pod],
    workload_replicas: i32,
) -> Vec<(String, String)> {
    let n = ws.spec.subsets.len() as i64;
    let i = index as i64;
    let positive = (POSITIVE * (n - i)).to_string();
    let negative = (NEGATIVE * (i + 1)).to_string();
    let mut active: Vec<&Pod> = pods.iter().copied().filter(|p| is_active(p)).collect();
    let with = |pods: &[&Pod], cost: &str| -> Vec<(String, String)> {
        pods.iter().map(|p| (name(p).to_string(), cost.to_string())).collect()
    };
    let Some(subset) = subset else { return with(&active, &negative) };
    let Some(max) = &subset.max_replicas else { return with(&active, &positive) };
    // `GetValueFromIntOrPercent(max, replicas, true)`; a bad value writes nothing, as kruise.
    let max = match crate::compat::intstr::k8s_value_from_int_or_percent(Some(max), i64::from(workload_replicas), true)
    {
        Ok(m) if m >= 0 => usize::try_from(m).unwrap_or(usize::MAX),
        _ => return Vec::new(),
    };
    if active.len() <= max {
        return with(&active, &positive);
    }
    active.sort_by(|a, b| active_pods_order(a, b));
    let surplus = active.len() - max;
    let mut out = with(&active[..surplus], &negative);
    out.extend(with(&active[surplus..], &positive));
    out
}

/// `updateDeletionCostBySubset`: the costs of one version's pods by subset name, in reverse
/// subset order for an old version.
pub fn version_costs(
    ws: &WorkloadSpread,
    pods_by_subset: &BTreeMap<String, Vec<&Pod>>,
    workload_replicas: i32,
    old_version: bool,
) -> Vec<(String, String)> {
    let n = ws.spec.subsets.len();
    let mut out = Vec::new();
    for (idx, subset) in ws.spec.subsets.iter().enumerate() {
        let index = if old_version { n - idx - 1 } else { idx };
        let pods = pods_by_subset.get(&subset.name).map(Vec::as_slice).unwrap_or_default();
        out.extend(subset_costs(ws, Some(subset), index, pods, workload_replicas));
    }
    if let Some(pods) = pods_by_subset.get(FAKE_SUBSET).filter(|p| !p.is_empty()) {
        out.extend(subset_costs(ws, None, n, pods, workload_replicas));
    }
    out
}

/// `patchPodDeletionCost`'s check: whether the pod's annotation must be written.
pub fn needs_patch(pod: &Pod, cost: &str) -> bool {
    match pod.metadata.annotations.as_ref().and_then(|a| a.get(DELETION_COST_ANNOTATION)) {
        Some(old) => old != cost,
        None => cost != "0",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::{Value, json};

    fn ws(maxes: &[Value]) -> WorkloadSpread {
        let subsets: Vec<Value> = maxes
            .iter()
            .enumerate()
            .map(|(i, m)| {
                let mut s = json!({"name": format!("s{i}")});
                if !m.is_null() {
                    s["maxReplicas"] = m.clone();
                }
                s
            })
            .collect();
        crate::compat::decode::from_value(&json!({"metadata": {"name": "w"}, "spec": {"subsets": subsets}})).unwrap()
    }

    /// kruise's controller `podDemo` (on node-1, no phase), named `test-pods-<i>`.
    fn pods(n: usize) -> Vec<Pod> {
        (0..n)
            .map(|i| {
                serde_json::from_value(json!({"metadata": {"name": format!("test-pods-{i}"), "namespace": "default"},
                    "spec": {"nodeName": "node-1", "containers": [{"name": "nginx", "image": "nginx:1.15.1"}]}}))
                .unwrap()
            })
            .collect()
    }

    fn costs(ws: &WorkloadSpread, index: usize, pods: &[Pod]) -> Vec<String> {
        let refs: Vec<&Pod> = pods.iter().collect();
        let got: BTreeMap<String, String> =
            subset_costs(ws, Some(&ws.spec.subsets[index]), index, &refs, 10).into_iter().collect();
        pods.iter().map(|p| got.get(name(p)).cloned().unwrap_or_default()).collect()
    }

    fn phase(p: &mut Pod, phase: &str) {
        p.status = Some(serde_json::from_value(json!({"phase": phase})).unwrap());
    }

    fn deleting(p: &mut Pod) {
        p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::from_second(1_700_000_000).unwrap(),
        ));
    }

    /// `TestSubsetPodDeletionCost`, row by row ("" = not costed).
    #[test]
    fn subset_pod_deletion_cost() {
        let two = ws(&[json!(3), json!(3)]);
        assert_eq!(costs(&two, 0, &pods(3)), ["200"; 3]);
        assert_eq!(costs(&two, 1, &pods(3)), ["100"; 3]);
        assert_eq!(costs(&two, 0, &pods(4)), ["-100", "200", "200", "200"]);
        assert_eq!(costs(&two, 1, &pods(4)), ["-200", "100", "100", "100"]);
        assert_eq!(costs(&ws(&[json!(3)]), 0, &pods(3)), ["100"; 3]);
        assert_eq!(costs(&ws(&[json!(3)]), 0, &pods(2)), ["100"; 2]);
        assert_eq!(costs(&ws(&[json!(1)]), 0, &pods(3)), ["-100", "-100", "100"]);
        let mut p = pods(4);
        deleting(&mut p[0]);
        assert_eq!(costs(&ws(&[json!(1)]), 0, &p), ["", "-100", "-100", "100"]);
        assert_eq!(costs(&ws(&[Value::Null]), 0, &pods(3)), ["100"; 3]);

        let max2 = ws(&[json!(2)]);
        let mut p = pods(5);
        p[0].spec.as_mut().unwrap().node_name = None;
        phase(&mut p[1], "Running");
        phase(&mut p[2], "Running");
        phase(&mut p[3], "Pending");
        phase(&mut p[4], "Pending");
        assert_eq!(costs(&max2, 0, &p), ["-100", "100", "100", "-100", "-100"]);
        let mut p = pods(5);
        phase(&mut p[0], "Running");
        phase(&mut p[1], "Running");
        p[2].spec.as_mut().unwrap().node_name = None;
        phase(&mut p[3], "Pending");
        phase(&mut p[4], "Unknown");
        assert_eq!(costs(&max2, 0, &p), ["100", "100", "-100", "-100", "-100"]);
        let mut p = pods(5);
        phase(&mut p[0], "Running");
        phase(&mut p[1], "Running");
        p[2].spec.as_mut().unwrap().node_name = None;
        phase(&mut p[3], "Pending");
        deleting(&mut p[4]);
        assert_eq!(costs(&max2, 0, &p), ["100", "100", "-100", "-100", ""]);
        let mut p = pods(5);
        phase(&mut p[0], "Running");
        phase(&mut p[1], "Running");
        p[2].spec.as_mut().unwrap().node_name = None;
        phase(&mut p[4], "Pending");
        phase(&mut p[3], "Failed");
        assert_eq!(costs(&max2, 0, &p), ["100", "100", "-100", "", "-100"]);
    }

    /// The case: zone-a (max 2) and zone-b (no max) over 5 pods — zone-b's pods are
    /// cheaper, so a scale-down removes them first; pods in no subset go before both; an old
    /// version reverses the order.
    #[test]
    fn last_subsets_cost_less() {
        let w = ws(&[json!(2), Value::Null]);
        let all = pods(6);
        let by: BTreeMap<String, Vec<&Pod>> = [
            ("s0".to_string(), vec![&all[0], &all[1]]),
            ("s1".to_string(), vec![&all[2], &all[3], &all[4]]),
            (FAKE_SUBSET.to_string(), vec![&all[5]]),
        ]
        .into();
        let got: BTreeMap<String, String> = version_costs(&w, &by, 5, false).into_iter().collect();
        assert_eq!(got["test-pods-0"], "200");
        assert_eq!(got["test-pods-2"], "100");
        assert_eq!(got["test-pods-5"], "-300");
        let old: BTreeMap<String, String> = version_costs(&w, &by, 5, true).into_iter().collect();
        assert_eq!((old["test-pods-0"].as_str(), old["test-pods-2"].as_str()), ("100", "200"));
    }

    #[test]
    fn patch_only_what_differs() {
        let mut p = pods(1).remove(0);
        assert!(!needs_patch(&p, "0"));
        assert!(needs_patch(&p, "100"));
        p.metadata.annotations = Some([(DELETION_COST_ANNOTATION.to_string(), "100".to_string())].into());
        assert!(!needs_patch(&p, "100"));
        assert!(needs_patch(&p, "0"));
        let target = |kind: &str| TargetReference { kind: kind.into(), ..Default::default() };
        assert!(cost_applies(&target("Deployment")) && cost_applies(&target("CloneSet")));
        assert!(!cost_applies(&target("StatefulSet")) && !cost_applies(&target("Job")));
    }
}
