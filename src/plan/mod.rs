//! `kruise plan -f FILE...`: what the CloneSet controller will do next, and why, without writing
//! anything (issue 11 item 7). Reads CloneSets with their Pods, and optionally ControllerRevisions,
//! PersistentVolumeClaims and Nodes, from manifests (multi-document YAML or `kind: List`, such as
//! `kubectl get cloneset,pods,controllerrevisions,pvc -o yaml`), and runs the same planner the
//! controller runs ([`crate::core::rollout::cloneset::plan::plan`]) on each CloneSet.
//!
//! What the controller would see: the pods and PVCs with an owner reference to the CloneSet
//! (kruise never adopts others; they are counted in a note), and the revisions matching its
//! selector that it or nobody owns. When `status.observedGeneration` equals `metadata.generation`,
//! the status has seen this spec and its current/update revisions are taken as given; otherwise the
//! update revision is computed from the template as the controller computes it.

pub mod live;
pub mod render;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use serde::de::DeserializeOwned;

use crate::apis::cloneset::CloneSet;
use crate::check::input::Manifest;
use crate::compat::selector::Selector;
use crate::core::features::FeatureGates;
use crate::core::rollout::cloneset::owner;
use crate::core::rollout::cloneset::plan::{Input, Plan, RevisionSource, plan};

/// Why the input cannot be planned.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// An object of a kind `plan` reads does not decode.
    #[error("{file}:{line}: {kind} {name}: {message}")]
    Decode { file: String, line: usize, kind: String, name: String, message: String },
    /// No CloneSet in the input.
    #[error("no CloneSet in the input: give the CloneSet and its pods, e.g. `kubectl get cloneset,pods -o yaml`")]
    NoCloneSet,
}

/// One CloneSet's plan, with what was left out.
#[derive(Debug)]
pub struct Planned {
    pub plan: Plan,
    /// How the revisions were chosen.
    pub revision_source: RevisionSource,
    /// Pods matching the selector that the CloneSet does not own.
    pub not_owned: usize,
}

#[derive(Default)]
struct Objects {
    clonesets: Vec<CloneSet>,
    pods: Vec<Pod>,
    pvcs: Vec<PersistentVolumeClaim>,
    revisions: Vec<ControllerRevision>,
    nodes: Vec<Node>,
}

fn decode<T: DeserializeOwned>(m: &Manifest) -> Result<T, PlanError> {
    serde_json::from_value(m.object.clone()).map_err(|e| PlanError::Decode {
        file: m.file.clone(),
        line: m.line,
        kind: m.object["kind"].as_str().unwrap_or("").to_string(),
        name: m.object["metadata"]["name"].as_str().unwrap_or("").to_string(),
        message: e.to_string(),
    })
}

fn group(manifests: &[Manifest]) -> Result<Objects, PlanError> {
    let mut o = Objects::default();
    for m in manifests {
        let api = m.object["apiVersion"].as_str().unwrap_or("");
        match (api, m.object["kind"].as_str().unwrap_or("")) {
            ("apps.kruise.io/v1alpha1", "CloneSet") => o.clonesets.push(decode(m)?),
            // `kubectl get cloneset` prints the preferred version, v1beta1: planned on the
            // v1alpha1 model the controller reads, as the apiserver converts it.
            ("apps.kruise.io/v1beta1", "CloneSet") => {
                let mut m = m.clone();
                if let Ok(v1alpha1) = crate::core::conversion::convert(0, &m.object, crate::core::conversion::V1ALPHA1)
                {
                    m.object = v1alpha1;
                }
                o.clonesets.push(decode(&m)?)
            }
            ("v1", "Pod") => o.pods.push(decode(m)?),
            ("v1", "PersistentVolumeClaim") => o.pvcs.push(decode(m)?),
            ("apps/v1", "ControllerRevision") => o.revisions.push(decode(m)?),
            ("v1", "Node") => o.nodes.push(decode(m)?),
            _ => {}
        }
    }
    Ok(o)
}

fn namespace(meta: &ObjectMeta) -> &str {
    meta.namespace.as_deref().unwrap_or("default")
}

/// Plans every CloneSet of the input, in namespace/name order.
pub fn plan_manifests(manifests: &[Manifest], gates: &FeatureGates, now: Timestamp) -> Result<Vec<Planned>, PlanError> {
    let mut o = group(manifests)?;
    if o.clonesets.is_empty() {
        return Err(PlanError::NoCloneSet);
    }
    o.clonesets
        .sort_by(|a, b| (namespace(&a.metadata), &a.metadata.name).cmp(&(namespace(&b.metadata), &b.metadata.name)));
    let mut out = Vec::new();
    for cs in &o.clonesets {
        let selector = Selector::from_validated(cs.spec.selector.as_ref()).ok();
        let owner = owner(cs, selector.as_ref());
        let view = owner.sort(&o.pods, &o.pvcs, &o.revisions);
        let (pods, pvcs, revisions) = (view.pods, view.pvcs, view.revisions);
        let not_owned = owner.not_owned(&o.pods);
        let status = cs.status.as_ref();
        let seen = status.is_some_and(|s| {
            s.observed_generation == cs.metadata.generation.unwrap_or(0) && !s.update_revision.is_empty()
        });
        let revision_source = if seen { RevisionSource::Status } else { RevisionSource::Compute };
        let plan = plan(&Input {
            cloneset: cs,
            pods: &pods,
            pvcs: &pvcs,
            revisions: &revisions,
            nodes: &o.nodes,
            gates,
            now,
            seed: 0,
            revision_source,
        });
        out.push(Planned { plan, revision_source, not_owned });
    }
    Ok(out)
}
