//! The rolling update of an Advanced DaemonSet (kruise's `daemonset_update.go`):
//! - [`desired_node_counts`] (`updatedDesiredNodeCounts`): `maxSurge` and `maxUnavailable` over
//!   the nodes that should run a pod (both 0 with nodes → `maxUnavailable` 1), every such node
//!   listed even without pods;
//! - [`nodes_to_update`] (`filterDaemonPodsNodeToUpdate`): the nodes this rollout may touch, in
//!   order — nodes already updated, then nodes whose old pod is gone or PreparingDelete, then the
//!   nodes `rollingUpdate.selector` selects (only those, when there is a selector) or all the rest,
//!   each group by name descending; at most `nodes - partition` of them;
//! - [`rolling_update`]: without surge, old pods to replace within `maxUnavailable` (old pods
//!   that are not available always), an unavailable or PreparingDelete new pod counting against
//!   it; with surge, nodes to create a new pod on within `maxSurge` (where the old pod is not
//!   available always) and old pods to delete once their node's new pod is available.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;

use super::eligibility::Eligibility;
use super::pods::{is_pre_deleting, updated_and_old};
use crate::apis::daemonset::ROLLING_UPDATE;
use crate::apis::daemonset::v1beta1::DaemonSet;
use crate::compat::intstr::k8s_scaled_value;
use crate::compat::selector::Selector;
use crate::core::pods;

/// `surgeCount`.
pub fn surge_count(ds: &DaemonSet, n: i64) -> Result<i64, String> {
    let s = &ds.spec.update_strategy;
    match s.rolling_update.as_ref().and_then(|r| r.max_surge.as_ref()) {
        Some(v) if s.type_ == ROLLING_UPDATE => k8s_scaled_value(Some(v), n, true),
        _ => Ok(0),
    }
}

/// `unavailableCount`.
pub fn unavailable_count(ds: &DaemonSet, n: i64) -> Result<i64, String> {
    let s = &ds.spec.update_strategy;
    match s.rolling_update.as_ref().and_then(|r| r.max_unavailable.as_ref()) {
        Some(v) if s.type_ == ROLLING_UPDATE => k8s_scaled_value(Some(v), n, true),
        _ => Ok(0),
    }
}

/// The pods by node with every node that should run a pod listed.
pub type NodePods<'p> = BTreeMap<String, Vec<&'p Pod>>;

/// `updatedDesiredNodeCounts`: (maxSurge, maxUnavailable, the pods by node with empty entries).
pub fn desired_node_counts<'p>(
    ds: &DaemonSet,
    nodes: &[&Node],
    eligibility: &BTreeMap<String, Eligibility>,
    by_node: &NodePods<'p>,
) -> Result<(i64, i64, NodePods<'p>), String> {
    let mut out = by_node.clone();
    let mut desired = 0;
    for n in nodes {
        let name = n.metadata.name.as_deref().unwrap_or("");
        if !eligibility.get(name).is_some_and(|e| e.should_run) {
            continue;
        }
        desired += 1;
        out.entry(name.to_string()).or_default();
    }
    let max_unavailable =
        unavailable_count(ds, desired).map_err(|e| format!("invalid value for MaxUnavailable: {e}"))?;
    let max_surge = surge_count(ds, desired).map_err(|e| format!("invalid value for MaxSurge: {e}"))?;
    if desired > 0 && max_unavailable == 0 && max_surge == 0 {
        return Ok((0, 1, out));
    }
    Ok((max_surge, max_unavailable, out))
}

/// `filterDaemonPodsNodeToUpdate` over the pods of existing nodes; `labels_of` gives a node's
/// labels.
pub fn nodes_to_update(
    ds: &DaemonSet,
    hash: &str,
    generation: Option<i64>,
    node_pods: &NodePods<'_>,
    labels_of: impl Fn(&str) -> Option<BTreeMap<String, String>>,
) -> Result<Vec<String>, String> {
    let ru = ds.spec.update_strategy.rolling_update.as_ref();
    let partition = match ru.and_then(|r| r.partition.as_ref()) {
        Some(p) => {
            let desired = ds.status.as_ref().map_or(0, |s| s.desired_number_scheduled);
            k8s_scaled_value(Some(p), i64::from(desired), false)
                .map_err(|e| format!("failed to get partition value: {e}"))?
        }
        None => 0,
    };
    let selector = match ru.and_then(|r| r.selector.as_ref()) {
        Some(s) => Some(Selector::from_validated(Some(s)).map_err(|e| e.to_string())?),
        None => None,
    };
    let (mut updated, mut updating, mut selected, mut rest) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (name, pods) in node_pods.iter().rev() {
        let found = updated_and_old(pods, hash, generation);
        let Some((None, old)) = found else {
            updated.push(name.clone());
            continue;
        };
        if old.is_none_or(is_pre_deleting) {
            updating.push(name.clone());
            continue;
        }
        if let Some(sel) = &selector {
            let labels = labels_of(name).ok_or_else(|| format!("failed to get node {name}: not found"))?;
            if sel.matches(&labels) {
                selected.push(name.clone());
                continue;
            }
        }
        rest.push(name.clone());
    }
    let mut sorted = updated;
    sorted.extend(updating);
    sorted.extend(if selector.is_some() { selected } else { rest });
    let max_update = node_pods.len() as i64 - partition;
    if max_update <= 0 {
        return Ok(Vec::new());
    }
    sorted.truncate(max_update as usize);
    Ok(sorted)
}

/// What the rolling update decided.
#[derive(Debug, Default)]
pub struct Rolling<'p> {
    /// Without surge: old pods to replace (in place when possible, else deleted).
    pub replace: Vec<&'p Pod>,
    /// With surge: old pods to delete (their node's new pod is available).
    pub delete: Vec<&'p Pod>,
    /// With surge: nodes to create a new pod on.
    pub create_on: Vec<String>,
    /// Why the rollout does not go further, for people.
    pub waiting: Vec<String>,
}

/// `rollingUpdate` over the nodes [`nodes_to_update`] chose.
pub fn rolling_update<'p>(
    ds: &DaemonSet,
    hash: &str,
    generation: Option<i64>,
    node_pods: &NodePods<'p>,
    (max_surge, max_unavailable): (i64, i64),
    now: Timestamp,
) -> Rolling<'p> {
    let min_ready = ds.spec.min_ready_seconds;
    let available = |p: &Pod| pods::is_available(p, min_ready, now);
    let mut out = Rolling::default();
    if max_surge == 0 {
        let mut unavailable = 0;
        let (mut allowed, mut candidates) = (Vec::new(), Vec::new());
        for pods in node_pods.values() {
            let Some((new, old)) = updated_and_old(pods, hash, generation) else {
                unavailable += 1;
                continue;
            };
            let (new_gone, old_gone) = (new.is_none_or(is_pre_deleting), old.is_none_or(is_pre_deleting));
            match (new, old) {
                _ if new_gone == old_gone => unavailable += 1,
                (Some(new), _) => {
                    unavailable += i64::from(!available(new)) + i64::from(is_pre_deleting(new));
                }
                (None, Some(old)) if !available(old) => allowed.push(old),
                (None, Some(_)) if unavailable >= max_unavailable => {}
                (None, Some(old)) => candidates.push(old),
                (None, None) => {}
            }
        }
        let remaining = (max_unavailable - unavailable).max(0).min(candidates.len() as i64) as usize;
        if remaining < candidates.len() {
            out.waiting.push(format!(
                "maxUnavailable {max_unavailable}: {unavailable} unavailable, {} old pods wait",
                candidates.len() - remaining
            ));
        }
        out.replace = allowed;
        out.replace.extend(candidates.into_iter().take(remaining));
        return out;
    }
    let mut surging = 0;
    let (mut allowed, mut candidates) = (Vec::new(), Vec::new());
    for (node, pods) in node_pods {
        let Some((new, old)) = updated_and_old(pods, hash, generation) else {
            surging += 1;
            continue;
        };
        match (new, old) {
            (_, None) => {}
            (_, Some(old)) if is_pre_deleting(old) => {}
            (None, Some(old)) if !available(old) => allowed.push(node.clone()),
            (None, Some(_)) if surging >= max_surge => {}
            (None, Some(_)) => candidates.push(node.clone()),
            (Some(new), Some(_)) if !available(new) || is_pre_deleting(new) => surging += 1,
            (Some(_), Some(old)) => out.delete.push(old),
        }
    }
    let remaining = (max_surge - surging).max(0).min(candidates.len() as i64) as usize;
    if remaining < candidates.len() {
        out.waiting
            .push(format!("maxSurge {max_surge}: {surging} surging, {} nodes wait", candidates.len() - remaining));
    }
    out.create_on = allowed;
    out.create_on.extend(candidates.into_iter().take(remaining));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn ds(strategy: Value) -> DaemonSet {
        serde_json::from_value(json!({"metadata": {"name": "x"}, "spec": {"selector": {"matchLabels": {"a": "b"}},
            "template": {"spec": {"containers": []}}, "updateStrategy": strategy}}))
        .unwrap()
    }

    fn unavailable(v: Value) -> Value {
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": v}})
    }

    fn surge(v: Value) -> Value {
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": v}})
    }

    fn node(name: &str, labels: Value) -> Node {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
    }

    fn pod(name: &str, node: &str, hash: &str, ready: bool, deleting: bool) -> Pod {
        let mut p: Pod = serde_json::from_value(json!({"metadata": {"name": name, "labels": {"controller-revision-hash": hash}},
            "spec": {"containers": [], "nodeName": node},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}}))
        .unwrap();
        if deleting {
            p.metadata.deletion_timestamp =
                Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::UNIX_EPOCH));
        }
        p
    }

    /// kruise's `TestGetUnavailableNumbers`, row by row: (name, strategy, nodes, pods by node,
    /// maxSurge, maxUnavailable, empty nodes).
    #[test]
    fn desired_node_counts_rows() {
        let ready = |n: &str, node: &str| pod(n, node, "h", true, false);
        type Row<'a> = (&'a str, Value, usize, Vec<Pod>, i64, i64, usize);
        let rows: Vec<Row<'_>> = vec![
            ("No nodes", unavailable(json!(0)), 0, vec![], 0, 0, 0),
            (
                "Two nodes with ready pods",
                unavailable(json!(1)),
                2,
                vec![ready("pod-0", "node-0"), ready("pod-1", "node-1")],
                0,
                1,
                0,
            ),
            ("Two nodes, one node without pods", unavailable(json!(0)), 2, vec![ready("pod-0", "node-0")], 0, 1, 1),
            ("Two nodes, one node without pods, surge", surge(json!(0)), 2, vec![ready("pod-0", "node-0")], 0, 1, 1),
            (
                "Two nodes with pods, MaxUnavailable in percents",
                unavailable(json!("50%")),
                2,
                vec![ready("pod-0", "node-0"), ready("pod-1", "node-1")],
                0,
                1,
                0,
            ),
            (
                "Two nodes with pods, MaxUnavailable in percents, surge",
                surge(json!("50%")),
                2,
                vec![ready("pod-0", "node-0"), ready("pod-1", "node-1")],
                1,
                0,
                0,
            ),
            (
                "Two nodes with pods, MaxUnavailable is 100%, surge",
                surge(json!("100%")),
                2,
                vec![ready("pod-0", "node-0"), ready("pod-1", "node-1")],
                2,
                0,
                0,
            ),
            (
                "Two nodes with pods, MaxUnavailable in percents, pod terminating",
                unavailable(json!("50%")),
                3,
                vec![ready("pod-0", "node-0"), pod("pod-1", "node-1", "h", true, true)],
                0,
                2,
                1,
            ),
        ];
        for (name, strategy, n, pods_list, want_surge, want_unavailable, want_empty) in rows {
            let d = ds(strategy);
            let nodes: Vec<Node> = (0..n).map(|i| node(&format!("node-{i}"), json!({}))).collect();
            let node_refs: Vec<&Node> = nodes.iter().collect();
            let elig: BTreeMap<String, Eligibility> = nodes
                .iter()
                .map(|n| {
                    (n.metadata.name.clone().unwrap(), Eligibility { should_run: true, should_continue_running: true })
                })
                .collect();
            let refs: Vec<&Pod> = pods_list.iter().collect();
            let by = super::super::pods::by_node(&refs);
            let (s, u, out) = desired_node_counts(&d, &node_refs, &elig, &by).unwrap();
            assert_eq!((s, u), (want_surge, want_unavailable), "{name}");
            assert_eq!(out.values().filter(|p| p.is_empty()).count(), want_empty, "{name}");
        }
    }

    /// kruise's `TestFilterDaemonPodsNodeToUpdate`, row by row: (name, rollingUpdate, pods by
    /// node (hash, terminating), canary nodes, expected order).
    #[test]
    fn nodes_to_update_rows() {
        type Row<'a> = (&'a str, Value, Vec<(&'a str, &'a str, bool)>, Vec<&'a str>, Vec<&'a str>);
        let rows: Vec<Row<'_>> = vec![
            (
                "Standard,partition=0",
                json!({"rollingUpdateType": "Standard", "partition": 0}),
                vec![("n1", "v1", false), ("n2", "v2", false), ("n3", "v1", false)],
                vec![],
                vec!["n2", "n3", "n1"],
            ),
            (
                "Standard,partition=1",
                json!({"rollingUpdateType": "Standard", "partition": 1}),
                vec![("n1", "v2", false), ("n2", "v1", false), ("n3", "v1", false)],
                vec![],
                vec!["n1", "n3"],
            ),
            (
                "Standard,partition=1,selector=1",
                json!({"rollingUpdateType": "Standard", "partition": 1, "selector": {"matchLabels": {"node-type": "canary"}}}),
                vec![("n1", "v1", false), ("n2", "v2", false), ("n3", "v1", false), ("n4", "v1", false)],
                vec!["n3"],
                vec!["n2", "n3"],
            ),
            (
                "Standard,partition=2,selector=3",
                json!({"rollingUpdateType": "Standard", "partition": 2, "selector": {"matchLabels": {"node-type": "canary"}}}),
                vec![("n1", "v1", false), ("n2", "v2", false), ("n3", "v1", false), ("n4", "v1", false)],
                vec!["n1", "n3", "n4"],
                vec!["n2", "n4"],
            ),
            (
                "Standard,partition=0,selector=3,terminating",
                json!({"rollingUpdateType": "Standard", "partition": 0, "selector": {"matchLabels": {"node-type": "canary"}}}),
                vec![("n1", "v1", false), ("n2", "v2", false), ("n3", "v1", true), ("n4", "v1", false)],
                vec!["n1", "n3"],
                vec!["n2", "n3", "n1"],
            ),
        ];
        for (name, rolling, pods_list, canary, want) in rows {
            let d = ds(json!({"type": "RollingUpdate", "rollingUpdate": rolling}));
            let owned: Vec<Pod> = pods_list.iter().map(|(n, h, t)| pod(&format!("p-{n}"), n, h, true, *t)).collect();
            let refs: Vec<&Pod> = owned.iter().collect();
            let by = super::super::pods::by_node(&refs);
            let labels = |n: &str| {
                Some(if canary.contains(&n) {
                    [("node-type".to_string(), "canary".to_string())].into()
                } else {
                    BTreeMap::new()
                })
            };
            assert_eq!(nodes_to_update(&d, "v2", None, &by, labels).unwrap(), want, "{name}");
        }
    }

    /// The arithmetic of `rollingUpdate` (kruise's `TestDaemonSetUpdatesPods*` decide with it):
    /// (name, maxSurge, maxUnavailable, pods (node, hash, ready), pods replaced or deleted, nodes
    /// surged onto).
    #[test]
    fn rolling_update_rows() {
        type Row<'a> = (&'a str, i64, i64, Vec<(&'a str, &'a str, bool)>, Vec<&'a str>, Vec<&'a str>);
        let rows: Vec<Row<'_>> = vec![
            ("one at a time", 0, 1, vec![("a", "v1", true), ("b", "v1", true), ("c", "v1", true)], vec!["p-a"], vec![]),
            // Old pods being replaced do not count against the budget (only new pods do).
            (
                "unavailable old pods always",
                0,
                1,
                vec![("a", "v1", false), ("b", "v1", false), ("c", "v1", true)],
                vec!["p-a", "p-b", "p-c"],
                vec![],
            ),
            (
                "unavailable old pods beyond the budget",
                0,
                1,
                vec![("a", "v1", false), ("b", "v2", false), ("c", "v1", true)],
                vec!["p-a"],
                vec![],
            ),
            ("a new unready pod takes the budget", 0, 1, vec![("a", "v2", false), ("b", "v1", true)], vec![], vec![]),
            (
                "a node without pods takes the budget",
                0,
                2,
                vec![("a", "", false), ("b", "v1", true), ("c", "v1", true)],
                vec!["p-b"],
                vec![],
            ),
            ("surge onto one node", 1, 0, vec![("a", "v1", true), ("b", "v1", true)], vec![], vec!["a"]),
            (
                "surge: old unavailable always",
                1,
                0,
                vec![("a", "v1", false), ("b", "v1", false)],
                vec![],
                vec!["a", "b"],
            ),
        ];
        for (name, s, u, pods_list, want_replace, want_create) in rows {
            let d = ds(json!({"type": "RollingUpdate"}));
            let owned: Vec<Pod> = pods_list
                .iter()
                .filter(|(_, h, _)| !h.is_empty())
                .map(|(n, h, r)| pod(&format!("p-{n}"), n, h, *r, false))
                .collect();
            let refs: Vec<&Pod> = owned.iter().collect();
            let mut by = super::super::pods::by_node(&refs);
            for (n, _, _) in &pods_list {
                by.entry(n.to_string()).or_default();
            }
            let r = rolling_update(&d, "v2", None, &by, (s, u), Timestamp::UNIX_EPOCH);
            let replaced: Vec<&str> = r.replace.iter().chain(&r.delete).map(|p| pods::name(p)).collect();
            assert_eq!(replaced, want_replace, "{name}");
            assert_eq!(r.create_on, want_create, "{name}");
        }
        // With surge, an old pod goes once its node's new pod is available.
        let d = ds(json!({"type": "RollingUpdate"}));
        let (old, new) = (pod("old", "a", "v1", true, false), pod("new", "a", "v2", true, false));
        let by = super::super::pods::by_node(&[&old, &new]);
        let r = rolling_update(&d, "v2", None, &by, (1, 0), Timestamp::UNIX_EPOCH);
        assert_eq!(r.delete.iter().map(|p| pods::name(p)).collect::<Vec<_>>(), ["old"]);
    }
}
