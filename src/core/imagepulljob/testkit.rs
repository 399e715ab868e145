//! Test-only builders for the image pre-download planners, and a [`World`] around the shared
//! fake API (`core::rollout::testkit::FakeCluster`, which holds the Nodes and the clock) with the
//! NodeImages and ImagePullJobs beside it: NodeImage patches are applied as sent, refused when
//! their resourceVersion pin is stale (a 409), and a fake daemon answers the tags round after
//! round, so property tests can follow jobs to their end.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::plan::{Input, Plan, plan};
use super::sync::NodeImagePatch;
use crate::apis::imagepulljob::v1beta1::ImagePullJob;
use crate::apis::nodeimage::v1beta1::NodeImage;
use crate::apis::nodeimage::{ImageTagSpec, ImageTagStatus};
use crate::core::rollout::testkit::{FakeCluster, Refused};

/// A timestamp `s` seconds after the epoch.
pub fn at(s: i64) -> Timestamp {
    Timestamp::from_second(s).unwrap()
}

/// An ImagePullJob `name` in `ns` (uid `uid-<name>`).
pub fn job(name: &str, spec: Value) -> ImagePullJob {
    serde_json::from_value(json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "ImagePullJob",
        "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"), "resourceVersion": "1"},
        "spec": spec}))
    .unwrap()
}

fn labels(l: &[(&str, &str)]) -> BTreeMap<String, String> {
    l.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// A NodeImage `name` with `labels` and nothing to pull (resourceVersion 1).
pub fn node_image(name: &str, l: &[(&str, &str)]) -> NodeImage {
    let mut ni = NodeImage::new(name, Default::default());
    ni.metadata.labels = Some(labels(l));
    ni.metadata.resource_version = Some("1".into());
    ni.metadata.uid = Some(format!("ni-{name}"));
    ni
}

/// A Node `name` with `labels`, Ready since `ready_since` seconds (not Ready when `None`).
pub fn node(name: &str, l: &[(&str, &str)], ready_since: Option<i64>) -> Node {
    let mut n: Node =
        serde_json::from_value(json!({"metadata": {"name": name, "uid": format!("node-{name}")}})).unwrap();
    n.metadata.labels = Some(labels(l));
    if let Some(s) = ready_since {
        n.status = Some(
            serde_json::from_value(json!({"conditions": [{"type": "Ready", "status": "True",
            "lastTransitionTime": at(s).to_string()}]}))
            .unwrap(),
        );
    }
    n
}

/// A pod on `node` (unscheduled when empty) in phase `phase`.
pub fn pod(name: &str, ns: &str, node: &str, l: &[(&str, &str)], phase: &str) -> Pod {
    let mut p: Pod = serde_json::from_value(json!({"metadata": {"name": name, "namespace": ns},
        "spec": {"containers": [{"name": "c", "image": "x"}]}, "status": {"phase": phase}}))
    .unwrap();
    p.metadata.labels = Some(labels(l));
    if !node.is_empty() {
        p.spec.as_mut().unwrap().node_name = Some(node.into());
    }
    p
}

/// The owner reference of the job whose uid is `uid-<name>`.
pub fn owner(uid: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("apps.kruise.io/v1beta1".into()),
        kind: Some("ImagePullJob".into()),
        name: Some(uid.trim_start_matches("uid-").into()),
        namespace: Some("ns".into()),
        uid: Some(uid.into()),
        ..Default::default()
    }
}

/// `ni` with tag `image:tag` at `version` owned by the jobs `owners` (created at 0), and the
/// daemon's `(phase, version)` for it when given.
pub fn tagged(
    mut ni: NodeImage,
    image: &str,
    tag: &str,
    version: i64,
    owners: &[&str],
    status: Option<(&str, i64)>,
) -> NodeImage {
    let spec = ni.spec.images.entry(image.into()).or_default();
    spec.tags.push(ImageTagSpec {
        tag: tag.into(),
        version,
        created_at: Some(Time(at(0))),
        owner_references: owners.iter().map(|o| owner(o)).collect(),
        ..Default::default()
    });
    if let Some((phase, v)) = status {
        let st = ni.status.get_or_insert_default().image_statuses.entry(image.into()).or_default();
        st.tags.push(ImageTagStatus { tag: tag.into(), phase: phase.into(), version: v, ..Default::default() });
    }
    ni
}

/// Jobs and NodeImages beside the shared fake API, and a fake daemon.
pub struct World {
    pub cluster: FakeCluster,
    pub node_images: BTreeMap<String, NodeImage>,
    pub jobs: BTreeMap<String, ImagePullJob>,
    next_rv: u64,
    /// Writes applied and refused.
    pub writes: usize,
    pub conflicts: usize,
}

impl World {
    /// `n` Ready Nodes `n0..` with their NodeImages.
    pub fn with_nodes(n: usize) -> World {
        let mut cluster = FakeCluster::default();
        let mut node_images = BTreeMap::new();
        for i in 0..n {
            let name = format!("n{i}");
            cluster.nodes.push(node(&name, &[("zone", if i % 2 == 0 { "a" } else { "b" })], Some(0)));
            node_images.insert(name.clone(), node_image(&name, &[]));
        }
        World { cluster, node_images, jobs: BTreeMap::new(), next_rv: 10, writes: 0, conflicts: 0 }
    }

    pub fn now(&self) -> Timestamp {
        self.cluster.now
    }

    fn rv(&mut self) -> String {
        self.next_rv += 1;
        self.next_rv.to_string()
    }

    /// The NodeImages as the cache lists them (by name).
    pub fn snapshot(&self) -> Vec<Arc<NodeImage>> {
        self.node_images.values().cloned().map(Arc::new).collect()
    }

    /// A job's round on `view` (a snapshot, maybe older than the store).
    pub fn plan_on(&self, job: &str, view: &[Arc<NodeImage>]) -> Plan {
        let j = &self.jobs[job];
        plan(&Input { job: j, node_images: view, pods: &[], secrets: &[], now: self.now() }).unwrap()
    }

    /// Applies one NodeImage patch as the API server would: a stale pin is a conflict.
    pub fn patch(&mut self, w: &NodeImagePatch) -> Result<(), Refused> {
        let Some(ni) = self.node_images.get(&w.name) else { return Err(Refused(format!("{} not found", w.name))) };
        if ni.metadata.resource_version.as_deref() != Some(w.resource_version.as_str()) {
            self.conflicts += 1;
            return Err(Refused(format!("conflict on {}", w.name)));
        }
        let mut doc = serde_json::to_value(ni).unwrap();
        json_patch::patch(&mut doc, &w.patch).map_err(|e| Refused(e.to_string()))?;
        let mut ni: NodeImage = serde_json::from_value(doc).unwrap();
        ni.metadata.resource_version = Some(self.rv());
        self.node_images.insert(w.name.clone(), ni);
        self.writes += 1;
        Ok(())
    }

    /// Applies a job's plan: its NodeImage patches (conflicts skipped) and its status.
    pub fn apply(&mut self, job: &str, p: &Plan) {
        for w in &p.node_images {
            let _ = self.patch(w);
        }
        if let Some(st) = &p.status {
            self.writes += 1;
            self.jobs.get_mut(job).unwrap().status = Some(st.clone());
        }
    }

    /// The fake daemon: every tag whose status is behind its spec version starts pulling;
    /// pulls started are finished (Succeeded, or Failed when `fail` says so for the node).
    pub fn daemon(&mut self, fail: &dyn Fn(&str) -> bool) {
        let now = Time(self.now());
        let names: Vec<String> = self.node_images.keys().cloned().collect();
        for name in names {
            let rv = self.rv();
            let ni = self.node_images.get_mut(&name).unwrap();
            let mut changed = false;
            for (image, spec) in ni.spec.images.clone() {
                let st = ni.status.get_or_insert_default().image_statuses.entry(image).or_default();
                for t in &spec.tags {
                    match st.tags.iter_mut().find(|s| s.tag == t.tag) {
                        Some(s) if s.version == t.version && s.phase == "Pulling" => {
                            s.phase = if fail(&name) { "Failed".into() } else { "Succeeded".into() };
                            s.completion_time = Some(now.clone());
                            changed = true;
                        }
                        Some(s) if s.version == t.version => {}
                        Some(s) => {
                            *s = ImageTagStatus {
                                tag: t.tag.clone(),
                                phase: "Pulling".into(),
                                version: t.version,
                                start_time: Some(now.clone()),
                                ..Default::default()
                            };
                            changed = true;
                        }
                        None => {
                            st.tags.push(ImageTagStatus {
                                tag: t.tag.clone(),
                                phase: "Pulling".into(),
                                version: t.version,
                                start_time: Some(now.clone()),
                                ..Default::default()
                            });
                            changed = true;
                        }
                    }
                }
            }
            if changed {
                ni.metadata.resource_version = Some(rv);
            }
        }
    }

    /// How many nodes are pulling for `job` right now (its tag owned, status not finished).
    pub fn pulling_for(&self, job: &str) -> usize {
        let j = &self.jobs[job];
        let (image, tag) = super::image_name_tag(&j.spec.fields.image).unwrap();
        let uid = j.metadata.uid.as_deref().unwrap();
        self.node_images
            .values()
            .filter(|ni| {
                super::status::owned_tag_version(ni, &image, &tag, uid).is_some_and(|v| {
                    !matches!(super::status::tag_phase(ni, &image, &tag, v), Some("Succeeded") | Some("Failed"))
                })
            })
            .count()
    }
}
