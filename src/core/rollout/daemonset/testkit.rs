//! Test-only world for the Advanced DaemonSet planner: a set with the shared fake cluster of
//! [`crate::core::rollout::testkit`] (pods, revisions, nodes; writes applied exactly as given,
//! pins and preconditions checked; a tiny kubelet). The scheduler is played by binding each pod
//! to the node its affinity names before the kubelet runs. Rounds of plan → apply → kubelet let
//! tests follow a rollout to its end.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{Value, json};

use super::backoff::Backoff;
use super::eligibility::target_node;
use super::plan::{Input, Plan, plan};
use crate::apis::daemonset::v1beta1::DaemonSet;
use crate::core::features::FeatureGates;
pub use crate::core::rollout::testkit::{FakeCluster, Refused};

/// A set `ds` in `default`, one container `main` running `image`, `strategy` as its
/// `updateStrategy`.
pub fn daemon_set(image: &str, strategy: Value) -> DaemonSet {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "DaemonSet",
        "metadata": {"name": "ds", "namespace": "default", "uid": "uid-ds", "resourceVersion": "1", "generation": 1},
        "spec": {"selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "main", "image": image}]}},
            "updateStrategy": strategy, "revisionHistoryLimit": 10},
    }))
    .unwrap()
}

/// A node `name` with `labels`.
pub fn node(name: &str, labels: Value) -> Node {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
}

/// The fake cluster around a DaemonSet.
#[derive(Clone, Debug)]
pub struct World {
    pub ds: DaemonSet,
    pub cluster: FakeCluster,
    pub gates: FeatureGates,
    pub backoff: Backoff,
    pub seed: u64,
}

impl std::ops::Deref for World {
    type Target = FakeCluster;
    fn deref(&self) -> &FakeCluster {
        &self.cluster
    }
}

impl std::ops::DerefMut for World {
    fn deref_mut(&mut self) -> &mut FakeCluster {
        &mut self.cluster
    }
}

impl World {
    /// A world of `n` nodes `node-0…` around a set.
    pub fn new(ds: DaemonSet, n: usize) -> World {
        let mut cluster = FakeCluster::default();
        cluster.nodes = (0..n).map(|i| node(&format!("node-{i}"), json!({}))).collect();
        World { ds, cluster, gates: FeatureGates::default(), backoff: Backoff::default(), seed: 1 }
    }

    /// One planning round.
    pub fn plan(&self) -> Plan {
        let pods: Vec<&Pod> = self.pods.iter().collect();
        let revisions: Vec<&ControllerRevision> = self.revisions.iter().collect();
        let nodes: Vec<&Node> = self.nodes.iter().collect();
        plan(&Input {
            ds: &self.ds,
            pods: &pods,
            revisions: &revisions,
            nodes: &nodes,
            gates: &self.gates,
            now: self.now,
            backoff: &self.backoff,
            seed: self.seed,
        })
    }

    /// Applies a plan's writes in order, then its status write.
    pub fn apply(&mut self, plan: &Plan) -> Result<(), Refused> {
        self.cluster.apply_actions(&mut self.ds, &plan.actions)?;
        if let Some(w) = &plan.status_write {
            self.cluster.apply_write(&mut self.ds, w, &mut BTreeMap::new())?;
        }
        self.backoff = plan.backoff.clone();
        self.seed += 1;
        Ok(())
    }

    /// The scheduler: binds every pod to the node its affinity names.
    pub fn schedule(&mut self) {
        for p in &mut self.cluster.pods {
            if let Some(n) = target_node(p).map(str::to_string) {
                p.spec.get_or_insert_with(Default::default).node_name = Some(n);
            }
        }
    }

    /// Plan, apply, schedule, run the kubelet, tick: one round; returns the plan.
    pub fn round(&mut self) -> Plan {
        let p = self.plan();
        assert!(p.errors.is_empty(), "errors {:?}", p.errors);
        self.apply(&p).unwrap_or_else(|e| panic!("{e:?} applying {:#?}", p.actions));
        self.schedule();
        self.kubelet();
        self.advance(1);
        p
    }

    /// Rounds until one plans nothing; at most `max`.
    pub fn settle(&mut self, max: usize) -> Vec<Plan> {
        let mut plans = Vec::new();
        for _ in 0..max {
            let p = self.round();
            let quiet = p.actions.is_empty() && p.status_write.is_none();
            plans.push(p);
            if quiet {
                return plans;
            }
        }
        panic!("not settled after {max} rounds: last plan {:#?}", plans.last());
    }

    /// Changes the set's spec as a user would (a new generation).
    pub fn edit(&mut self, f: impl FnOnce(&mut DaemonSet)) {
        f(&mut self.ds);
        let g = self.ds.metadata.generation.unwrap_or(1);
        self.ds.metadata.generation = Some(g + 1);
    }

    /// The pods by node name.
    pub fn pods_by_node(&self) -> BTreeMap<String, Vec<&Pod>> {
        let mut out: BTreeMap<String, Vec<&Pod>> = BTreeMap::new();
        for p in &self.pods {
            if let Some(n) = target_node(p) {
                out.entry(n.to_string()).or_default().push(p);
            }
        }
        out
    }
}
