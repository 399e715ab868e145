//! Which pods a CloneSet deletes first when it scales down (spec §5.4 step 5; kruise's
//! `ActivePodsWithRanks` and its rankers in `cloneset/utils/pod_sorter.go`): unassigned before
//! assigned, Pending < Unknown < Running, unavailable before available, not ready before ready,
//! lower `controller.kubernetes.io/pod-deletion-cost` first, then higher "rank" first, then ready
//! for less time first, more restarts first, newer first.
//!
//! The rank spreads deletions: without topologySpreadConstraints it is the number of sibling pods
//! sharing the pod's node (so crowded nodes lose pods first); with them it is, for every
//! constraint, the pod's position from the end in its topology domain (sorted the same way),
//! weighted by `ln(#domains + 2)`, with hostname spread ranked by the same-node rank too. Nodes
//! come from the cluster view; pods on unknown nodes have no topology.
//!
//! kruise sorts with Go's `sort.Sort`, which is not stable; its order of exact ties is an
//! implementation detail of Go's sort (stable for fewer than 13 pods). Here ties keep the pods'
//! listed order.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::core::pods;

/// Pod annotation: the cost of deleting this pod relative to its siblings.
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";
/// Node label of the hostname topology.
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";

/// `getDeletionCostFromPodAnnotations`: the int32 cost, 0 when absent or not a canonical integer
/// (`+1` and `01` are invalid).
pub fn deletion_cost(pod: &Pod) -> i32 {
    let Some(v) = pods::annotations(pod).get(POD_DELETION_COST) else { return 0 };
    let first_ok = match v.as_bytes().first() {
        Some(b'-') => true,
        Some(b'0') => v == "0",
        Some(b'1'..=b'9') => true,
        _ => false,
    };
    if !first_ok {
        return 0;
    }
    v.parse::<i32>().unwrap_or(0)
}

/// `ActivePodsWithRanks.Less`: `Less` means `a` is deleted before `b`.
pub fn deletion_order(a: &Pod, b: &Pod, rank: (f64, f64), available: Option<(bool, bool)>) -> Ordering {
    let node = |p: &Pod| p.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
    let (na, nb) = (node(a), node(b));
    if na != nb && (na.is_empty() || nb.is_empty()) {
        return if na.is_empty() { Ordering::Less } else { Ordering::Greater };
    }
    let phase = pods::phase_ordinal(a).cmp(&pods::phase_ordinal(b));
    if phase != Ordering::Equal {
        return phase;
    }
    if let Some((aa, ab)) = available
        && aa != ab
    {
        return if aa { Ordering::Greater } else { Ordering::Less };
    }
    let (ra, rb) = (pods::is_ready(a), pods::is_ready(b));
    if ra != rb {
        return if ra { Ordering::Greater } else { Ordering::Less };
    }
    let cost = deletion_cost(a).cmp(&deletion_cost(b));
    if cost != Ordering::Equal {
        return cost;
    }
    if rank.0 != rank.1 {
        return if rank.0 > rank.1 { Ordering::Less } else { Ordering::Greater };
    }
    if ra && rb {
        let t = pods::later_or_zero_first(pods::ready_time(a), pods::ready_time(b));
        if t != Ordering::Equal {
            return t;
        }
    }
    let restarts = pods::max_restarts(b).cmp(&pods::max_restarts(a));
    if restarts != Ordering::Equal {
        return restarts;
    }
    let created = |p: &Pod| p.metadata.creation_timestamp.as_ref().map(|t| t.0);
    pods::later_or_zero_first(created(a), created(b))
}

/// Indexes of `pods` sorted by [`deletion_order`] with the given ranks (stable).
fn sorted_by(pods: &[&Pod], members: &[usize], rank: &dyn Fn(usize) -> f64) -> Vec<usize> {
    let mut order = members.to_vec();
    order.sort_by(|&i, &j| deletion_order(pods[i], pods[j], (rank(i), rank(j)), None));
    order
}

fn node_name(p: &Pod) -> Option<&str> {
    p.spec.as_ref().and_then(|s| s.node_name.as_deref()).filter(|n| !n.is_empty())
}

/// `NewSameNodeRanker`: on a node with n > 1 pods sorted for deletion, the first n−1 get ranks
/// n−1 … 1 (the last, the one deleted last, gets none).
pub fn same_node_ranks(pods: &[&Pod]) -> Vec<f64> {
    let mut ranks = vec![0.0; pods.len()];
    let mut by_node: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, p) in pods.iter().enumerate() {
        if let Some(n) = node_name(p) {
            by_node.entry(n).or_default().push(i);
        }
    }
    for members in by_node.values().filter(|m| m.len() > 1) {
        let sorted = sorted_by(pods, members, &|_| 0.0);
        let keep = sorted.len() - 1;
        for (pos, &i) in sorted[..keep].iter().enumerate() {
            ranks[i] = (keep - pos) as f64;
        }
    }
    ranks
}

/// One topologySpreadConstraint as the ranker reads it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpreadConstraint {
    /// Node label of the topology.
    pub topology_key: String,
    /// Only these values count (empty: all).
    pub limited_values: Vec<String>,
}

/// `NewSpreadConstraintsRanker`.
pub fn spread_ranks(pods: &[&Pod], constraints: &[SpreadConstraint], nodes: &[Node]) -> Vec<f64> {
    let mut ranks = vec![0.0; pods.len()];
    // Nodes in the order pods first name them, only those the view knows.
    let mut known: Vec<&Node> = Vec::new();
    let mut on_node: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, p) in pods.iter().enumerate() {
        let Some(n) = node_name(p) else { continue };
        if !known.iter().any(|k| k.metadata.name.as_deref() == Some(n)) {
            match nodes.iter().find(|k| k.metadata.name.as_deref() == Some(n)) {
                Some(node) => known.push(node),
                None => continue,
            }
        }
        on_node.entry(n).or_default().push(i);
    }
    let same_node = same_node_ranks(pods);
    for c in constraints {
        let mut domains: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for node in &known {
            let Some(value) = node.metadata.labels.as_ref().and_then(|l| l.get(&c.topology_key)) else { continue };
            if !c.limited_values.is_empty() && !c.limited_values.iter().any(|v| v == value) {
                continue;
            }
            let name = node.metadata.name.as_deref().unwrap_or("");
            domains.entry(value.as_str()).or_default().extend(on_node.get(name).into_iter().flatten());
        }
        let weight = ((domains.len() + 2) as f64).ln();
        let by_host = c.topology_key == LABEL_HOSTNAME;
        for members in domains.values() {
            let rank = |i: usize| if by_host { 0.0 } else { same_node[i] };
            let sorted = sorted_by(pods, members, &rank);
            for (pos, &i) in sorted.iter().enumerate() {
                ranks[i] += (sorted.len() - pos) as f64 * weight;
            }
        }
    }
    ranks
}

/// Sorts pods (indexes into `pods`) for deletion: `ranks` from one of the rankers, `available`
/// per pod.
pub fn sort_for_deletion(pods: &[&Pod], members: &mut [usize], ranks: &[f64], available: &[bool]) {
    members
        .sort_by(|&i, &j| deletion_order(pods[i], pods[j], (ranks[i], ranks[j]), Some((available[i], available[j]))));
}

#[cfg(test)]
mod tests;
