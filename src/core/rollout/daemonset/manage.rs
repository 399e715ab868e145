//! Which daemon pods a round creates and deletes, before any update (kruise's `manage`,
//! `podsShouldBeOnNode`, `GetNodesNeedingPods`, `getUnscheduledPodsWithoutNode`,
//! `getBurstReplicas`):
//! - a node that should run a pod and has none gets one;
//! - on a node whose pods should keep running: failed pods are deleted (at most once per backoff
//!   period per node, with kruise's `FailedDaemonPod` Warning), pods in PreparingDelete are
//!   deleted, and extra pods go — without surge all but the oldest; with surge, at most one old
//!   and one new pod stay, and the old one goes once it is not ready or the new one is available;
//!   a surging node left with no pod gets one;
//! - every pod of a node that should not keep running is deleted, and pods bound to a node that
//!   does not exist and never scheduled;
//! - with a rolling-update `partition` and `scaleStrategy.partitionedScaling`, creations are
//!   limited to `desired - updated - partition` nodes (sorted by name).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::backoff::Backoff;
use super::eligibility::Eligibility;
use super::pods::{creation_order, is_pre_deleting, updated_and_old};
use crate::apis::daemonset::ROLLING_UPDATE;
use crate::apis::daemonset::v1beta1::DaemonSet;
use crate::compat::intstr::k8s_scaled_value;
use crate::core::pods;
use crate::core::revision::CONTROLLER_REVISION_HASH;
use crate::core::rollout::plan::Event;

/// kruise's default `burstReplicas`.
pub const BURST_REPLICAS: i64 = 250;

/// What `manage` decided.
#[derive(Debug, Default)]
pub struct Manage<'a> {
    /// Nodes to create a pod on, in order.
    pub create_on: Vec<String>,
    /// Pods to delete (each with why).
    pub delete: Vec<(&'a Pod, String)>,
    pub events: Vec<Event>,
    /// When to look again (a backoff or a new pod's minReadySeconds).
    pub requeue: Option<SignedDuration>,
}

impl Manage<'_> {
    fn requeue_after(&mut self, d: SignedDuration) {
        self.requeue = crate::core::rollout::plan::min_positive(self.requeue, d);
    }
}

/// `getBurstReplicas` over the desired number the set's status holds.
pub fn burst_replicas(ds: &DaemonSet) -> usize {
    let desired = ds.status.as_ref().map_or(0, |s| s.desired_number_scheduled);
    let burst = ds
        .spec
        .burst_replicas
        .clone()
        .unwrap_or(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(BURST_REPLICAS as i32));
    k8s_scaled_value(Some(&burst), i64::from(desired), false).unwrap_or(0).max(0) as usize
}

/// `allowSurge`.
pub fn allow_surge(ds: &DaemonSet) -> bool {
    super::update::surge_count(ds, 1).is_ok_and(|s| s > 0)
}

/// `GetNodesNeedingPods`.
pub fn nodes_needing_pods(
    new_pods: i64,
    desire: i64,
    partition: i64,
    progressive: bool,
    mut nodes: Vec<String>,
) -> Vec<String> {
    nodes.sort();
    if !progressive {
        return nodes;
    }
    let partition = partition.min(desire).max(0);
    let max_create = (desire - new_pods - partition).max(0).min(nodes.len() as i64) as usize;
    nodes.truncate(max_create);
    nodes
}

/// Everything `manage` reads.
pub struct Input<'a, 'p> {
    pub ds: &'a DaemonSet,
    pub nodes: &'a [&'a Node],
    pub eligibility: &'a BTreeMap<String, Eligibility>,
    pub by_node: &'a BTreeMap<String, Vec<&'p Pod>>,
    pub hash: &'a str,
    pub generation: Option<i64>,
    pub now: Timestamp,
}

/// `failedPodsBackoffKey`.
pub fn backoff_key(ds: &DaemonSet, node: &str) -> String {
    let observed = ds.status.as_ref().map_or(0, |s| s.observed_generation);
    format!("{}/{observed}/{node}", ds.metadata.uid.as_deref().unwrap_or(""))
}

/// `manage`: the creations and deletions of the round (uncapped; `syncNodes` caps them).
pub fn manage<'p>(input: &Input<'_, 'p>, backoff: &mut Backoff) -> Manage<'p> {
    let ds = input.ds;
    let mut out = Manage::default();
    let surge = allow_surge(ds);
    let (mut desired, mut new_pods) = (0i64, 0i64);
    for node in input.nodes {
        let name = node.metadata.name.as_deref().unwrap_or("");
        let e = input
            .eligibility
            .get(name)
            .copied()
            .unwrap_or(Eligibility { should_run: false, should_continue_running: false });
        let pods = input.by_node.get(name);
        desired += i64::from(e.should_run);
        if pods.and_then(|p| updated_and_old(p, input.hash, input.generation)).is_some_and(|(n, _)| n.is_some()) {
            new_pods += 1;
        }
        match pods {
            None if e.should_run => out.create_on.push(name.to_string()),
            None => {}
            Some(pods) if e.should_continue_running => {
                on_node(input, name, pods, e.should_run, surge, backoff, &mut out)
            }
            Some(pods) => {
                for p in pods.iter().filter(|p| p.metadata.deletion_timestamp.is_none()) {
                    out.delete.push((p, format!("node {name} should not run a daemon pod")));
                }
            }
        }
    }
    // getUnscheduledPodsWithoutNode
    for (node, pods) in input.by_node {
        if input.nodes.iter().any(|n| n.metadata.name.as_deref() == Some(node.as_str())) {
            continue;
        }
        for p in pods.iter().filter(|p| !pods::is_scheduled(p)) {
            out.delete.push((p, format!("it is bound to node {node}, which does not exist")));
        }
    }
    // The first deploy with a partition.
    let s = &ds.spec.update_strategy;
    if s.type_ == ROLLING_UPDATE
        && let Some(partition) = s.rolling_update.as_ref().and_then(|r| r.partition.as_ref())
    {
        let status_desired = ds.status.as_ref().map_or(0, |st| st.desired_number_scheduled);
        if let Ok(partition) = k8s_scaled_value(Some(partition), i64::from(status_desired), false)
            && partition != 0
        {
            let progressive = ds.spec.scale_strategy.as_ref().is_some_and(|s| s.partitioned_scaling);
            out.create_on =
                nodes_needing_pods(new_pods, desired, partition, progressive, std::mem::take(&mut out.create_on));
        }
    }
    out
}

/// The `shouldContinueRunning` branch of `podsShouldBeOnNode`.
fn on_node<'p>(
    input: &Input<'_, 'p>,
    node: &str,
    pods: &[&'p Pod],
    should_run: bool,
    surge: bool,
    backoff: &mut Backoff,
    out: &mut Manage<'p>,
) {
    let ds = input.ds;
    let mut running: Vec<&'p Pod> = Vec::new();
    for p in pods.iter().copied().filter(|p| p.metadata.deletion_timestamp.is_none()) {
        if pods::phase(p) == "Failed" {
            let key = backoff_key(ds, node);
            if let Some(wait) = backoff.waiting(&key, input.now) {
                out.requeue_after(wait);
                continue;
            }
            backoff.next(&key, input.now);
            out.events.push(Event::warning(
                "FailedDaemonPod",
                format!(
                    "Found failed daemon pod {}/{} on node {node}, will try to kill it",
                    p.metadata.namespace.as_deref().unwrap_or(""),
                    pods::name(p)
                ),
            ));
            out.delete.push((p, "it failed: deleted to be created again".into()));
        } else if is_pre_deleting(p) {
            out.delete.push((p, "it is in PreparingDelete".into()));
        } else {
            running.push(p);
        }
    }
    running.sort_by(|a, b| creation_order(a, b));
    if !surge {
        for p in running.iter().skip(1) {
            out.delete.push((p, format!("node {node} runs more than one daemon pod: all but the oldest go")));
        }
        return;
    }
    if running.len() <= 1 {
        if running.is_empty() && should_run {
            out.create_on.push(node.to_string());
        }
        return;
    }
    let (mut oldest_new, mut oldest_old): (Option<&Pod>, Option<&Pod>) = (None, None);
    for p in running {
        let slot = if pods::label(p, CONTROLLER_REVISION_HASH) == Some(input.hash) {
            &mut oldest_new
        } else {
            &mut oldest_old
        };
        if slot.is_none() {
            *slot = Some(p);
        } else {
            out.delete.push((p, format!("node {node} runs more than one old and one new daemon pod")));
        }
    }
    if let (Some(new), Some(old)) = (oldest_new, oldest_old) {
        let min_ready = ds.spec.min_ready_seconds;
        if !pods::is_ready(old) {
            out.delete.push((old, "surge: it is not ready and a new pod is there".into()));
        } else if pods::is_available(new, min_ready, input.now) {
            out.delete.push((old, "surge: the new pod on its node is available".into()));
        } else if pods::is_ready(new)
            && min_ready > 0
            && let Some(d) = pods::becomes_available_in(new, min_ready, input.now)
        {
            out.requeue_after(d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kruise's `TestGetMaxCreateNum`, row by row: (name, newPodsNum, desire, partition,
    /// progressive, nodes needing pods, expected).
    #[test]
    fn nodes_needing_pods_rows() {
        let n = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let nodes10: Vec<String> = (0..10).map(|i| format!("node-{i}")).collect();
        type Row<'a> = (&'a str, i64, i64, i64, bool, Vec<String>, Vec<String>);
        let rows: Vec<Row<'_>> = vec![
            ("no changes applied on daemonset, all pods are new version", 10, 10, 0, false, n(&[]), n(&[])),
            ("create daemonset step1: create a daemonset, partition=10", 0, 10, 10, true, nodes10.clone(), n(&[])),
            (
                "create daemonset step2: decrease the partition, partition=9",
                0,
                10,
                9,
                true,
                nodes10.clone(),
                n(&["node-0"]),
            ),
            (
                "create daemonset step3: decrease the partition, partition=5",
                1,
                10,
                5,
                true,
                nodes10[1..].to_vec(),
                n(&["node-1", "node-2", "node-3", "node-4"]),
            ),
            (
                "create daemonset step4: importing 2 new nodes(node-10, node-11), partition=5",
                5,
                12,
                5,
                true,
                n(&["node-5", "node-6", "node-7", "node-8", "node-9", "node-10", "node-11"]),
                n(&["node-10", "node-11"]),
            ),
            (
                "create daemonset step5: offline 3 nodes(node-4, node-8, node-11), partition=5",
                4,
                9,
                5,
                true,
                n(&["node-5", "node-6", "node-7", "node-9", "node-10"]),
                n(&[]),
            ),
            (
                "create daemonset step6: decrease the partition, partition=0",
                4,
                9,
                0,
                true,
                n(&["node-5", "node-6", "node-7", "node-9", "node-10"]),
                n(&["node-10", "node-5", "node-6", "node-7", "node-9"]),
            ),
            (
                "create daemonset step7: importing 3 nodes, partition=0",
                9,
                12,
                0,
                true,
                n(&["node-12", "node-13", "node-14"]),
                n(&["node-12", "node-13", "node-14"]),
            ),
            ("update daemonset step1: update spec and set partition=10", 0, 10, 10, false, n(&[]), n(&[])),
            (
                "update daemonset step2: decrease partition and pod has not been deleted by rolling update method",
                0,
                10,
                9,
                false,
                n(&[]),
                n(&[]),
            ),
            (
                "update daemonset step3: decrease partition and pod has been deleted by rolling update method",
                0,
                10,
                9,
                false,
                n(&["node-1"]),
                n(&["node-1"]),
            ),
            (
                "update daemonset step4: keep decreasing partition and pod has not been deleted by rolling update method",
                1,
                10,
                5,
                false,
                n(&[]),
                n(&[]),
            ),
            (
                "update daemonset step5: keep decreasing partition and pod has been deleted by rolling update method",
                1,
                10,
                5,
                false,
                n(&["node-2", "node-3", "node-4", "node-5"]),
                n(&["node-2", "node-3", "node-4", "node-5"]),
            ),
            (
                "update daemonset step6: importing 2 new node",
                5,
                12,
                5,
                false,
                n(&["node-11", "node-12"]),
                n(&["node-11", "node-12"]),
            ),
            (
                "update daemonset step7: keep decreasing partition and pod has not been deleted by rolling update method",
                7,
                12,
                0,
                false,
                n(&[]),
                n(&[]),
            ),
            (
                "update daemonset step7: keep decreasing partition and pod has been deleted by rolling update method",
                7,
                12,
                0,
                false,
                n(&["node-6", "node-7", "node-8", "node-9", "node-10"]),
                n(&["node-10", "node-6", "node-7", "node-8", "node-9"]),
            ),
            (
                "update daemonset selector step1: update node selector and desire number has changed",
                0,
                20,
                20,
                false,
                n(&[]),
                n(&[]),
            ),
            (
                "update daemonset selector step2: decrease partition",
                0,
                20,
                15,
                true,
                (11..=20).map(|i| format!("node-{i}")).collect(),
                n(&["node-11", "node-12", "node-13", "node-14", "node-15"]),
            ),
            (
                "update daemonset selector step3: decrease partition",
                5,
                20,
                10,
                true,
                n(&["node-16", "node-17", "node-18", "node-19", "node-20"]),
                n(&["node-16", "node-17", "node-18", "node-19", "node-20"]),
            ),
            ("bad case 1: partition is set too large", 10, 10, 100, false, n(&[]), n(&[])),
            (
                "bad case 2: partition is set too large when create daemonset",
                5,
                10,
                100,
                true,
                n(&["node-5", "node-6", "node-7", "node-8", "node-9", "node-10"]),
                n(&[]),
            ),
            (
                "bad case 3: an old pod was deleted manually in rolling update",
                5,
                10,
                5,
                false,
                n(&["node-6"]),
                n(&["node-6"]),
            ),
            (
                "bad case 4: an old pod was deleted manually in rolling update and new pod has created",
                6,
                10,
                5,
                false,
                n(&[]),
                n(&[]),
            ),
        ];
        for (name, new_pods, desire, partition, progressive, nodes, want) in rows {
            assert_eq!(nodes_needing_pods(new_pods, desire, partition, progressive, nodes), want, "{name}");
        }
    }
}
