//! Test-only world every workload planner's tests share (issue 26 item 7): a fake API holding
//! pods, PVCs, ControllerRevisions and nodes that applies a plan's writes exactly as they are given
//! (JSON patches applied to the stored objects, resourceVersion pins checked, delete preconditions
//! checked, revisions created with their data bytes), with the workload's own spec and status
//! patched the same way, and a tiny kubelet that schedules pods, starts containers (a new image
//! gets a new imageID and a restart) and reports readiness. A planner's test world wraps it with
//! its workload and planner (the CloneSet's: `cloneset/testkit.rs`), and rounds of plan → apply →
//! kubelet let property tests follow a rollout to its end.

use std::collections::BTreeMap;

use json_patch::Patch;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{ContainerStatus, Node, PersistentVolumeClaim, Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::actions::{Action, Pin, Write};
use crate::core::pods;

/// A write the fake API refused.
#[derive(Clone, Debug, PartialEq)]
pub struct Refused(pub String);

fn rv_of(v: &Value) -> String {
    v["metadata"]["resourceVersion"].as_str().unwrap_or("").to_string()
}

/// The fake cluster around one workload.
#[derive(Clone, Debug)]
pub struct FakeCluster {
    pub pods: Vec<Pod>,
    pub pvcs: Vec<PersistentVolumeClaim>,
    pub revisions: Vec<ControllerRevision>,
    pub nodes: Vec<Node>,
    /// ImagePullJobs (image pre-download, spec §7).
    pub image_pull_jobs: Vec<crate::apis::imagepulljob::ImagePullJob>,
    pub now: Timestamp,
    next_rv: u64,
    next_uid: u64,
}

impl Default for FakeCluster {
    fn default() -> Self {
        FakeCluster {
            pods: Vec::new(),
            pvcs: Vec::new(),
            revisions: Vec::new(),
            nodes: Vec::new(),
            image_pull_jobs: Vec::new(),
            now: Timestamp::from_second(1_700_000_000).unwrap(),
            next_rv: 100,
            next_uid: 1,
        }
    }
}

impl FakeCluster {
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
    pub fn apply_actions<W: Serialize + DeserializeOwned + Clone>(
        &mut self,
        workload: &mut W,
        actions: &[Action],
    ) -> Result<(), Refused> {
        let mut latest: BTreeMap<String, String> = BTreeMap::new();
        for action in actions {
            for w in &action.writes {
                self.apply_write(workload, w, &mut latest)?;
            }
        }
        Ok(())
    }

    /// Applies one write to the cluster and `workload` (the object `PatchWorkload` and
    /// `PatchWorkloadStatus` patch), checking pins and preconditions; `latest` follows this
    /// round's writes per pod for [`Pin::Latest`].
    pub fn apply_write<W: Serialize + DeserializeOwned + Clone>(
        &mut self,
        workload: &mut W,
        w: &Write,
        latest: &mut BTreeMap<String, String>,
    ) -> Result<(), Refused> {
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
                let name =
                    serde_json::to_value(&*workload).unwrap()["metadata"]["name"].as_str().unwrap_or("").to_string();
                let mut one = vec![workload.clone()];
                Self::patch_object(&mut one, &name, w, &mut self.next_rv)?;
                *workload = one.remove(0);
            }
            Write::CreateImagePullJob { job } => {
                if self.image_pull_jobs.iter().any(|j| j.metadata.name == job.metadata.name) {
                    return Err(Refused("409 AlreadyExists".into()));
                }
                let mut j = (**job).clone();
                j.metadata.resource_version = Some(self.rv());
                j.metadata.uid = Some(self.uid());
                self.image_pull_jobs.push(j);
            }
            Write::DeleteImagePullJob { name, uid } => {
                let i = self.image_pull_jobs.iter().position(|j| j.metadata.name.as_deref() == Some(name.as_str()));
                let i = i.ok_or_else(|| Refused(format!("404 imagepulljob {name}")))?;
                if uid.is_some() && self.image_pull_jobs[i].metadata.uid != *uid {
                    return Err(Refused(format!("409 precondition failed deleting {name}")));
                }
                self.image_pull_jobs.remove(i);
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
    pub fn advance(&mut self, secs: i64) {
        self.now += SignedDuration::from_secs(secs);
    }

    /// Pods not Ready.
    pub fn unready(&self) -> usize {
        self.pods.iter().filter(|p| !pods::is_ready(p)).count()
    }
}
