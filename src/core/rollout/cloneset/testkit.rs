//! Test-only world for the CloneSet planner: a CloneSet with its pods, PVCs and revisions, a
//! fake API that applies a plan's writes exactly as they are given (JSON patches applied to the
//! stored objects, resourceVersion pins checked, delete preconditions checked), and a tiny
//! kubelet that schedules pods, starts containers and reports readiness. Rounds of
//! plan → apply → kubelet let tests follow a rollout to its end.

use std::collections::BTreeMap;

use json_patch::Patch;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{ContainerStatus, Node, PersistentVolumeClaim, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use super::plan::{Input, Plan, RevisionSource, plan};
use crate::apis::cloneset::CloneSet;
use crate::core::features::FeatureGates;
use crate::core::pods;
use crate::core::rollout::actions::{Pin, Write};

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

/// The fake cluster.
#[derive(Clone, Debug)]
pub struct World {
    pub cs: CloneSet,
    pub pods: Vec<Pod>,
    pub pvcs: Vec<PersistentVolumeClaim>,
    pub revisions: Vec<ControllerRevision>,
    pub nodes: Vec<Node>,
    pub gates: FeatureGates,
    pub now: Timestamp,
    pub seed: u64,
    next_rv: u64,
    next_uid: u64,
}

/// A write the fake API refused.
#[derive(Clone, Debug, PartialEq)]
pub struct Refused(pub String);

fn rv_of(v: &Value) -> String {
    v["metadata"]["resourceVersion"].as_str().unwrap_or("").to_string()
}

impl World {
    /// An empty world around a CloneSet.
    pub fn new(cs: CloneSet) -> World {
        World {
            cs,
            pods: Vec::new(),
            pvcs: Vec::new(),
            revisions: Vec::new(),
            nodes: Vec::new(),
            gates: FeatureGates::default(),
            now: Timestamp::from_second(1_700_000_000).unwrap(),
            seed: 1,
            next_rv: 100,
            next_uid: 1,
        }
    }

    /// One planning round.
    pub fn plan(&self) -> Plan {
        let pods: Vec<&Pod> = self.pods.iter().collect();
        let pvcs: Vec<&PersistentVolumeClaim> = self.pvcs.iter().collect();
        let revisions: Vec<&ControllerRevision> = self.revisions.iter().collect();
        plan(&Input {
            cloneset: &self.cs,
            pods: &pods,
            pvcs: &pvcs,
            revisions: &revisions,
            nodes: &self.nodes,
            gates: &self.gates,
            now: self.now,
            seed: self.seed,
            revision_source: RevisionSource::Compute,
        })
    }

    fn rv(&mut self) -> String {
        self.next_rv += 1;
        self.next_rv.to_string()
    }

    fn uid(&mut self) -> String {
        self.next_uid += 1;
        format!("uid-{}", self.next_uid)
    }

    fn patch_value(v: &mut Value, write: &Write, latest: &str) -> Result<(), Refused> {
        let want = match write {
            Write::PatchPod { pin, .. }
            | Write::PatchPodStatus { pin, .. }
            | Write::PatchPodResize { pin, .. }
            | Write::PatchPvc { pin, .. }
            | Write::PatchRevision { pin, .. }
            | Write::PatchWorkload { pin, .. }
            | Write::PatchWorkloadStatus { pin, .. } => match pin {
                Pin::Observed(rv) => rv.clone(),
                Pin::Latest => latest.to_string(),
            },
            _ => unreachable!(),
        };
        if rv_of(v) != want {
            return Err(Refused(format!("409 Conflict: {} is at {} not {want}", v["metadata"]["name"], rv_of(v))));
        }
        let patch: Patch = write.request_patch(latest).unwrap();
        json_patch::patch(v, &patch).map_err(|e| Refused(format!("422 {e}")))
    }

    /// A pinned patch of a named object of a list.
    fn patch_object<T: serde::Serialize + serde::de::DeserializeOwned>(
        list: &mut [T],
        name: &str,
        w: &Write,
        next_rv: &mut u64,
    ) -> Result<(), Refused> {
        let found = list.iter().position(|o| serde_json::to_value(o).unwrap()["metadata"]["name"] == json!(name));
        let i = found.ok_or_else(|| Refused(format!("404 {name}")))?;
        let mut v = serde_json::to_value(&list[i]).unwrap();
        let l = rv_of(&v);
        Self::patch_value(&mut v, w, &l)?;
        *next_rv += 1;
        v["metadata"]["resourceVersion"] = json!(next_rv.to_string());
        list[i] = serde_json::from_value(v).map_err(|e| Refused(format!("422 {e}")))?;
        Ok(())
    }

    /// Applies actions' writes in order; stops at the first refused write.
    pub fn apply_actions(&mut self, actions: &[crate::core::rollout::actions::Action]) -> Result<(), Refused> {
        let mut latest: BTreeMap<String, String> = BTreeMap::new();
        for action in actions {
            for w in &action.writes {
                self.apply_write(w, &mut latest)?;
            }
        }
        Ok(())
    }

    /// Applies a plan's writes in order, then its status write (the planned patch, applied with
    /// its pin checked); stops at the first refused write.
    pub fn apply(&mut self, plan: &Plan) -> Result<(), Refused> {
        self.apply_actions(&plan.actions)?;
        if let Some(w) = &plan.status_write {
            self.apply_write(w, &mut BTreeMap::new())?;
        }
        Ok(())
    }

    fn apply_write(&mut self, w: &Write, latest: &mut BTreeMap<String, String>) -> Result<(), Refused> {
        match w {
            Write::CreatePod { pod } => {
                if self.pods.iter().any(|p| p.metadata.name == pod.metadata.name) {
                    return Err(Refused("409 AlreadyExists".into()));
                }
                let mut p = (**pod).clone();
                p.metadata.resource_version = Some(self.rv());
                p.metadata.uid = Some(self.uid());
                p.metadata.creation_timestamp = Some(Time(self.now));
                self.pods.push(p);
            }
            Write::CreatePvc { pvc } => {
                if !self.pvcs.iter().any(|p| p.metadata.name == pvc.metadata.name) {
                    let mut p = (**pvc).clone();
                    p.metadata.resource_version = Some(self.rv());
                    p.metadata.uid = Some(self.uid());
                    self.pvcs.push(p);
                }
            }
            Write::DeletePod { name, uid, resource_version } => {
                let i = self.pods.iter().position(|p| p.metadata.name.as_deref() == Some(name.as_str()));
                let i = i.ok_or_else(|| Refused(format!("404 pod {name}")))?;
                let p = &self.pods[i];
                if uid.is_some() && p.metadata.uid != *uid
                    || resource_version.is_some() && p.metadata.resource_version != *resource_version
                {
                    return Err(Refused(format!("409 precondition failed deleting {name}")));
                }
                self.pods.remove(i);
            }
            Write::DeletePvc { name, .. } => self.pvcs.retain(|p| p.metadata.name.as_deref() != Some(name.as_str())),
            Write::PatchPod { name, .. } | Write::PatchPodStatus { name, .. } | Write::PatchPodResize { name, .. } => {
                let i = self.pods.iter().position(|p| p.metadata.name.as_deref() == Some(name.as_str()));
                let i = i.ok_or_else(|| Refused(format!("404 pod {name}")))?;
                let mut v = serde_json::to_value(&self.pods[i]).unwrap();
                let l = latest.get(name).cloned().unwrap_or_else(|| rv_of(&v));
                Self::patch_value(&mut v, w, &l)?;
                let rv = self.rv();
                v["metadata"]["resourceVersion"] = json!(rv);
                latest.insert(name.clone(), rv);
                self.pods[i] = serde_json::from_value(v).map_err(|e| Refused(format!("422 {e}")))?;
            }
            Write::PatchPvc { name, .. } => Self::patch_object(&mut self.pvcs, name, w, &mut self.next_rv)?,
            Write::CreateRevision { revision, data, .. } => {
                let mut r = (**revision).clone();
                // The data arrives as the given bytes.
                r.data =
                    Some(k8s_openapi::apimachinery::pkg::runtime::RawExtension(serde_json::from_str(data).unwrap()));
                r.metadata.resource_version = Some(self.rv());
                r.metadata.uid = Some(self.uid());
                self.revisions.push(r);
            }
            Write::PatchRevision { name, .. } => Self::patch_object(&mut self.revisions, name, w, &mut self.next_rv)?,
            Write::DeleteRevision { name, .. } => {
                self.revisions.retain(|r| r.metadata.name.as_deref() != Some(name.as_str()))
            }
            Write::PatchWorkload { .. } | Write::PatchWorkloadStatus { .. } => {
                let name = self.cs.metadata.name.clone().unwrap_or_default();
                let mut one = vec![self.cs.clone()];
                Self::patch_object(&mut one, &name, w, &mut self.next_rv)?;
                self.cs = one.remove(0);
            }
        }
        Ok(())
    }

    /// The kubelet: schedules pods on `n1`, runs their containers (a new image gets a new imageID
    /// and a restart), and reports Ready when containers run and every readiness gate is True.
    pub fn kubelet(&mut self) {
        let now = self.now;
        for p in &mut self.pods {
            let spec = p.spec.get_or_insert_with(Default::default);
            if spec.node_name.is_none() {
                spec.node_name = Some("n1".into());
            }
            let containers = spec.containers.clone();
            let gates: Vec<String> = spec.readiness_gates.iter().flatten().map(|g| g.condition_type.clone()).collect();
            let status = p.status.get_or_insert_with(Default::default);
            status.phase = Some("Running".into());
            let statuses = status.container_statuses.get_or_insert_with(Vec::new);
            for c in &containers {
                let image = c.image.clone().unwrap_or_default();
                match statuses.iter_mut().find(|s| s.name == c.name) {
                    Some(s) if s.image != image => {
                        s.image = image.clone();
                        s.image_id = format!("sha-{image}");
                        s.restart_count += 1;
                    }
                    Some(_) => {}
                    None => statuses.push(ContainerStatus {
                        name: c.name.clone(),
                        image: image.clone(),
                        image_id: format!("sha-{image}"),
                        ready: true,
                        ..Default::default()
                    }),
                }
            }
            let conditions = status.conditions.get_or_insert_with(Vec::new);
            let gate_ok =
                |conditions: &Vec<PodCondition>, g: &str| conditions.iter().any(|c| c.type_ == g && c.status == "True");
            let ready = gates.iter().all(|g| gate_ok(conditions, g));
            for (t, on) in [("ContainersReady", true), ("Ready", ready)] {
                let status = if on { "True" } else { "False" };
                match conditions.iter_mut().find(|c| c.type_ == t) {
                    Some(c) if c.status != status => {
                        c.status = status.into();
                        c.last_transition_time = Some(Time(now));
                    }
                    Some(_) => {}
                    None => conditions.push(PodCondition {
                        type_: t.into(),
                        status: status.into(),
                        last_transition_time: Some(Time(now)),
                        ..Default::default()
                    }),
                }
            }
            p.metadata.resource_version = Some({
                self.next_rv += 1;
                self.next_rv.to_string()
            });
        }
    }

    /// Advance the clock.
    pub fn tick(&mut self, secs: i64) {
        self.now += SignedDuration::from_secs(secs);
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

    /// Pods not Ready.
    pub fn unready(&self) -> usize {
        self.pods.iter().filter(|p| !pods::is_ready(p)).count()
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
        ids: super::pods::IdSource::new(1),
        changes: Default::default(),
    };
    f(&mut round)
}
