//! Test-only world for the Advanced StatefulSet planner: a set with the shared fake cluster of
//! [`crate::core::rollout::testkit`] (pods, PVCs, revisions; writes applied exactly as given,
//! pins and preconditions checked; a tiny kubelet). Rounds of plan → apply → kubelet let tests
//! follow a rollout to its end, as the CloneSet's `cloneset/testkit.rs` does.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use serde_json::{Value, json};

use super::identity;
use super::plan::{Input, Plan, plan};
use crate::apis::statefulset::v1beta1::StatefulSet;
use crate::core::features::FeatureGates;
use crate::core::pods;
pub use crate::core::rollout::testkit::{FakeCluster, Refused};

/// A set `web` in `default` with `replicas`, one container `main` running `image`, and `extra`
/// merged into its spec (`podManagementPolicy`, `updateStrategy`, …).
pub fn stateful_set(replicas: i32, image: &str, extra: Value) -> StatefulSet {
    let mut spec = json!({
        "replicas": replicas,
        "selector": {"matchLabels": {"app": "web"}},
        "serviceName": "web",
        "template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "main", "image": image}]}},
        "podManagementPolicy": "OrderedReady",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1,
            "podUpdatePolicy": "ReCreate"}},
        "revisionHistoryLimit": 10,
    });
    if let (Value::Object(base), Value::Object(extra)) = (&mut spec, extra) {
        base.extend(extra);
    }
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": "default", "uid": "uid-web", "resourceVersion": "1", "generation": 1},
        "spec": spec,
    }))
    .unwrap()
}

/// The fake cluster of the shared test kit around a StatefulSet.
#[derive(Clone, Debug)]
pub struct World {
    pub set: StatefulSet,
    pub cluster: FakeCluster,
    pub gates: FeatureGates,
    /// The cluster's StorageClasses.
    pub storage_classes: Vec<StorageClass>,
    /// The namespace's PodUnavailableBudgets.
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
    /// An empty world around a set.
    pub fn new(set: StatefulSet) -> World {
        World {
            set,
            cluster: FakeCluster::default(),
            gates: FeatureGates::default(),
            storage_classes: Vec::new(),
            budgets: Vec::new(),
        }
    }

    /// One planning round.
    pub fn plan(&self) -> Plan {
        let pods: Vec<&Pod> = self.pods.iter().collect();
        let pvcs: Vec<&PersistentVolumeClaim> = self.pvcs.iter().collect();
        let revisions: Vec<&ControllerRevision> = self.revisions.iter().collect();
        let storage_classes: Vec<&StorageClass> = self.storage_classes.iter().collect();
        let budgets: Vec<&crate::apis::podunavailablebudget::PodUnavailableBudget> = self.budgets.iter().collect();
        plan(&Input {
            set: &self.set,
            pods: &pods,
            pvcs: &pvcs,
            revisions: &revisions,
            storage_classes: &storage_classes,
            budgets: &budgets,
            gates: &self.gates,
            now: self.now,
        })
    }

    /// Applies a plan's writes in order, then its status write; stops at the first refused write.
    pub fn apply(&mut self, plan: &Plan) -> Result<(), Refused> {
        self.cluster.apply_actions(&mut self.set, &plan.actions)?;
        if let Some(w) = &plan.status_write {
            self.cluster.apply_write(&mut self.set, w, &mut BTreeMap::new())?;
        }
        Ok(())
    }

    /// Applies only the plan's actions of one kind.
    pub fn apply_actions_of(&mut self, plan: &Plan, kind: crate::core::rollout::actions::ActionKind) {
        let actions: Vec<_> = plan.actions.iter().filter(|a| a.kind == kind).cloned().collect();
        self.cluster.apply_actions(&mut self.set, &actions).unwrap();
    }

    /// Plan, apply, run the kubelet, tick: one round; returns the plan.
    pub fn round(&mut self) -> Plan {
        let p = self.plan();
        assert!(p.errors.is_empty(), "errors {:?}", p.errors);
        self.apply(&p).unwrap_or_else(|e| panic!("{e:?} applying {:#?}", p.actions));
        self.kubelet();
        self.advance(1);
        p
    }

    /// Rounds until one plans nothing (no action, no status write); at most `max`.
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

    /// The pod named `<set>-<ordinal>`.
    pub fn pod(&self, ordinal: i64) -> Option<&Pod> {
        let name = identity::pod_name(&self.set, ordinal);
        self.pods.iter().find(|p| pods::name(p) == name)
    }

    /// Ordinals of the pods, ascending.
    pub fn ordinals(&self) -> Vec<i64> {
        let mut o: Vec<i64> = self.pods.iter().filter_map(|p| identity::pod_ordinal(p).map(i64::from)).collect();
        o.sort();
        o
    }

    /// Changes the set's spec as a user would (a new generation).
    pub fn edit(&mut self, f: impl FnOnce(&mut StatefulSet)) {
        f(&mut self.set);
        let g = self.set.metadata.generation.unwrap_or(1);
        self.set.metadata.generation = Some(g + 1);
    }
}
