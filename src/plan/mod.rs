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

/// Whether an owner reference points at this CloneSet (by uid when both have one, else by kind
/// and name).
fn is_ref_to(owner: &k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference, cs: &CloneSet) -> bool {
    if owner.kind != "CloneSet" || !owner.api_version.starts_with("apps.kruise.io/") {
        return false;
    }
    match (cs.metadata.uid.as_deref(), owner.uid.as_str()) {
        (Some(uid), o) if !uid.is_empty() && !o.is_empty() => uid == o,
        _ => Some(owner.name.as_str()) == cs.metadata.name.as_deref(),
    }
}

/// Whether the CloneSet owns the object: kruise lists pods and PVCs by an index of every owner
/// reference's uid.
fn owned_by(meta: &ObjectMeta, cs: &CloneSet) -> bool {
    meta.owner_references.iter().flatten().any(|r| is_ref_to(r, cs))
}

/// Whether the object's controller reference is this CloneSet (revisions: kruise keeps those
/// whose controller is the CloneSet or nobody).
fn controlled_by(meta: &ObjectMeta, cs: &CloneSet) -> bool {
    meta.owner_references.iter().flatten().find(|r| r.controller == Some(true)).is_some_and(|r| is_ref_to(r, cs))
}

/// What the CloneSet controller sees of one CloneSet.
#[derive(Debug, Default)]
pub struct Owned {
    /// Pods whose controller reference is the CloneSet.
    pub pods: Vec<Pod>,
    /// PVCs with an owner reference to the CloneSet.
    pub pvcs: Vec<PersistentVolumeClaim>,
    /// Revisions matching its selector that it or nobody controls.
    pub revisions: Vec<ControllerRevision>,
}

/// The objects of a CloneSet's namespace the controller plans with (kruise never adopts orphan
/// pods; it adopts orphan revisions): shared by `kruise plan` and the reconciler, which hands it
/// what its indexes file under the CloneSet's uid and namespace.
pub fn owned<'a>(
    cs: &CloneSet,
    pods: impl IntoIterator<Item = &'a Pod>,
    pvcs: impl IntoIterator<Item = &'a PersistentVolumeClaim>,
    revisions: impl IntoIterator<Item = &'a ControllerRevision>,
) -> Owned {
    let ns = namespace(&cs.metadata);
    let selector = Selector::from_validated(cs.spec.selector.as_ref()).ok();
    let in_ns = |m: &ObjectMeta| namespace(m) == ns;
    let matches =
        |m: &ObjectMeta| selector.as_ref().is_some_and(|s| s.matches(m.labels.as_ref().unwrap_or(&Default::default())));
    Owned {
        pods: pods.into_iter().filter(|p| in_ns(&p.metadata) && controlled_by(&p.metadata, cs)).cloned().collect(),
        pvcs: pvcs.into_iter().filter(|p| in_ns(&p.metadata) && owned_by(&p.metadata, cs)).cloned().collect(),
        revisions: revisions
            .into_iter()
            .filter(|r| in_ns(&r.metadata) && matches(&r.metadata))
            .filter(|r| {
                let controller = r.metadata.owner_references.iter().flatten().any(|o| o.controller == Some(true));
                !controller || controlled_by(&r.metadata, cs)
            })
            .cloned()
            .collect(),
    }
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
        let view = owned(cs, &o.pods, &o.pvcs, &o.revisions);
        let (pods, pvcs, revisions) = (view.pods, view.pvcs, view.revisions);
        let ns = namespace(&cs.metadata);
        let selector = Selector::from_validated(cs.spec.selector.as_ref()).ok();
        let not_owned = o
            .pods
            .iter()
            .filter(|p| namespace(&p.metadata) == ns && !owned_by(&p.metadata, cs))
            .filter(|p| {
                selector.as_ref().is_some_and(|s| s.matches(p.metadata.labels.as_ref().unwrap_or(&Default::default())))
            })
            .count();
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
