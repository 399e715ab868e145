//! Test-only world for the CloneSet planner: a CloneSet with the shared fake cluster of
//! [`crate::core::rollout::testkit`] (pods, PVCs, revisions, nodes; writes applied exactly as
//! given, pins and preconditions checked; a tiny kubelet). Rounds of plan → apply → kubelet let
//! tests follow a rollout to its end.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::plan::{Input, Plan, RevisionSource, plan};
use crate::apis::cloneset::CloneSet;
use crate::core::features::FeatureGates;
use crate::core::pods;
pub use crate::core::rollout::testkit::{FakeCluster, Refused};

/// A CloneSet `sample` in `default` from its spec JSON.
pub fn cloneset(spec: Value) -> CloneSet {
    let mut cs: CloneSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "sample", "namespace": "default", "uid": "uid-sample", "resourceVersion": "1", "generation": 1},
        "spec": spec,
    }))
    .unwrap();
    if cs.spec.selector.is_none() {
        cs.spec.selector = serde_json::from_value(json!({"matchLabels": {"app": "sample"}})).unwrap();
    }
    cs
}

/// A spec with `replicas`, one container `main` running `image`, and the defaults of the
/// mutating webhook for the update strategy.
pub fn spec(replicas: i32, image: &str, strategy: Value) -> Value {
    let mut us = json!({"type": "ReCreate", "partition": 0, "maxUnavailable": "20%", "maxSurge": 0});
    if let (Value::Object(base), Value::Object(extra)) = (&mut us, strategy) {
        base.extend(extra);
    }
    json!({
        "replicas": replicas,
        "selector": {"matchLabels": {"app": "sample"}},
        "template": {"metadata": {"labels": {"app": "sample"}}, "spec": {"containers": [{"name": "main", "image": image}]}},
        "updateStrategy": us,
        "revisionHistoryLimit": 10,
    })
}

/// The fake cluster of the shared test kit around a CloneSet; the cluster's fields (`pods`,
/// `revisions`, `now`, …) are reached through it.
#[derive(Clone, Debug)]
pub struct World {
    pub cs: CloneSet,
    pub cluster: FakeCluster,
    pub gates: FeatureGates,
    pub seed: u64,
    /// PodUnavailableBudgets of the CloneSet's namespace.
    pub budgets: Vec<crate::apis::podunavailablebudget::PodUnavailableBudget>,
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
    /// An empty world around a CloneSet.
    pub fn new(cs: CloneSet) -> World {
        World { cs, cluster: FakeCluster::default(), gates: FeatureGates::default(), seed: 1, budgets: Vec::new() }
    }

    /// One planning round.
    pub fn plan(&self) -> Plan {
        let pods: Vec<&Pod> = self.pods.iter().collect();
        let pvcs: Vec<&PersistentVolumeClaim> = self.pvcs.iter().collect();
        let revisions: Vec<&ControllerRevision> = self.revisions.iter().collect();
        let budgets: Vec<&crate::apis::podunavailablebudget::PodUnavailableBudget> = self.budgets.iter().collect();
        plan(&Input {
            cloneset: &self.cs,
            pods: &pods,
            pvcs: &pvcs,
            revisions: &revisions,
            nodes: &self.nodes,
            budgets: &budgets,
            gates: &self.gates,
            now: self.now,
            seed: self.seed,
            revision_source: RevisionSource::Compute,
        })
    }

    /// Applies actions' writes in order; stops at the first refused write.
    pub fn apply_actions(&mut self, actions: &[crate::core::rollout::actions::Action]) -> Result<(), Refused> {
        self.cluster.apply_actions(&mut self.cs, actions)
    }

    /// Applies a plan's writes in order, then its status write (the planned patch, applied with
    /// its pin checked); stops at the first refused write.
    pub fn apply(&mut self, plan: &Plan) -> Result<(), Refused> {
        self.apply_actions(&plan.actions)?;
        if let Some(w) = &plan.status_write {
            self.cluster.apply_write(&mut self.cs, w, &mut BTreeMap::new())?;
        }
        Ok(())
    }

    /// Advance the clock.
    pub fn tick(&mut self, secs: i64) {
        self.cluster.advance(secs);
        self.seed += 1;
    }

    /// Plan, apply, run the kubelet, tick: one round; returns the plan.
    pub fn round(&mut self) -> Plan {
        let p = self.plan();
        self.apply(&p).unwrap_or_else(|e| panic!("{e:?} applying {:#?}", p.actions));
        self.kubelet();
        self.tick(1);
        p
    }

    /// Pods at a revision.
    pub fn at_revision(&self, revision: &str) -> Vec<&Pod> {
        self.pods.iter().filter(|p| super::revision::equal_to_revision_hash(p, revision)).collect()
    }
}

/// A revision named `name` holding `data` (kruise's test fixtures give raw data).
pub fn raw_revision(name: &str, data: &str) -> ControllerRevision {
    let mut r = ControllerRevision {
        data: (!data.is_empty())
            .then(|| k8s_openapi::apimachinery::pkg::runtime::RawExtension(serde_json::from_str(data).unwrap())),
        ..Default::default()
    };
    r.metadata.name = Some(name.into());
    r
}

/// Runs `f` on a round over explicit revisions (kruise's sync tests call Scale/Update directly).
#[allow(clippy::too_many_arguments)]
pub fn with_round<R>(
    cs: &CloneSet,
    pods: &[Pod],
    pvcs: &[PersistentVolumeClaim],
    current: &ControllerRevision,
    update: &ControllerRevision,
    revisions: &[ControllerRevision],
    gates: &FeatureGates,
    now: Timestamp,
    f: impl FnOnce(&mut super::round::Round<'_>) -> R,
) -> R {
    let settings = super::settings::Settings::new(cs, super::settings::Gates::from_feature_gates(gates));
    let rev = |r: &ControllerRevision| super::revision::Revision {
        data: crate::core::history::data_bytes(r),
        object: r.clone(),
    };
    let (current, update) = (rev(current), rev(update));
    let pods: Vec<&Pod> = pods.iter().filter(|p| pods::is_active(p)).collect();
    let pvcs: Vec<&PersistentVolumeClaim> = pvcs.iter().collect();
    let mut round = super::round::Round {
        cs,
        settings: &settings,
        now,
        current: &current,
        update: &update,
        revisions,
        pods: &pods,
        pvcs: &pvcs,
        nodes: &[],
        budgets: &[],
        budget_takes: Vec::new(),
        ids: super::pods::IdSource::new(1),
        changes: Default::default(),
    };
    f(&mut round)
}
