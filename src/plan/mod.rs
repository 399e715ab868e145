//! `kruise plan -f FILE...`: what the CloneSet, Advanced StatefulSet and SidecarSet controllers
//! will do next, and why, without writing anything (issue 11 item 7, issue 27 item 7, issue 28
//! item 10). Reads CloneSets and Advanced StatefulSets with their Pods, and optionally
//! ControllerRevisions, PersistentVolumeClaims and Nodes, and SidecarSets with Pods, Namespaces
//! and the manager namespace's ControllerRevisions, from manifests (multi-document YAML or `kind:
//! List`, such as `kubectl get cloneset,pods,controllerrevisions,pvc -o yaml`), and runs the
//! planners the controllers run ([`crate::core::rollout::cloneset::plan::plan`],
//! [`crate::core::rollout::statefulset::plan::plan`], and for SidecarSets [`sidecarset`]) on each
//! workload.
//!
//! What the CloneSet controller would see: the pods and PVCs with an owner reference to the
//! CloneSet (kruise never adopts others; they are counted in a note), and the revisions matching
//! its selector that it or nobody owns. When `status.observedGeneration` equals
//! `metadata.generation`, the status has seen this spec and its current/update revisions are taken
//! as given; otherwise the update revision is computed from the template as the controller computes
//! it. An Advanced StatefulSet is planned on every pod, claim and revision of its namespace, as its
//! controller is (it adopts orphans that match and releases pods that no longer do); pods that match
//! but another controller owns are counted in a note.
//!
//! An Advanced DaemonSet (`apps.kruise.io/v1beta1`, or v1alpha1 converted as the apiserver
//! converts it) is planned as its controller plans a round
//! ([`crate::core::rollout::daemonset::plan::plan`]) on every pod and revision of its namespace
//! and every Node of the input, with no failed-pod backoff remembered (the controller keeps that
//! in memory) and pod names drawn from seed 0. The Nodes decide where its pods belong, so a
//! DaemonSet given without any is not planned: its plan says so (otherwise every pod would look
//! misplaced).
//!
//! With gate PreDownloadImageForInPlaceUpdate (and KruiseDaemon) on, each workload's plan also
//! shows its image pre-download (spec §7): the ImagePullJobs the round would create, the label it
//! would put on the update revision, or the jobs of the input it would delete once the rollout
//! completed. The ImagePullJob kind is assumed served. An Advanced DaemonSet's pre-download is
//! planned with gate PreDownloadImageForDaemonSetUpdate instead
//! ([`crate::core::rollout::daemonset::predownload`]).
//!
//! A UnitedDeployment is planned as its controller plans a round on the subset workloads it
//! controls, their pods and the input's revisions ([`uniteddeployment`]).

pub mod live;
pub mod render;
pub mod sidecarset;
pub mod uniteddeployment;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use serde::de::DeserializeOwned;

use crate::apis::cloneset::CloneSet;
use crate::apis::imagepulljob::ImagePullJob;
use crate::apis::statefulset::v1beta1::StatefulSet;
use crate::check::input::Manifest;
use crate::compat::selector::Selector;
use crate::core::features::FeatureGates;
use crate::core::predownload::gates_enabled;
use crate::core::rollout::cloneset::owner;
use crate::core::rollout::cloneset::plan::{Input, Plan, RevisionSource, plan};
use crate::core::rollout::cloneset::predownload as cs_predownload;
use crate::core::rollout::daemonset::plan as ads;
use crate::core::rollout::daemonset::predownload as ads_predownload;
use crate::core::rollout::ownership::controller_of;
use crate::core::rollout::statefulset::plan as asts;
use crate::core::rollout::statefulset::predownload as asts_predownload;

/// Why the input cannot be planned.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// An object of a kind `plan` reads does not decode.
    #[error("{file}:{line}: {kind} {name}: {message}")]
    Decode { file: String, line: usize, kind: String, name: String, message: String },
    /// No CloneSet, Advanced StatefulSet, Advanced DaemonSet, SidecarSet or UnitedDeployment in the
    /// input.
    #[error(
        "no CloneSet, Advanced StatefulSet, Advanced DaemonSet, SidecarSet or UnitedDeployment in the input: give \
         the workload and its pods, e.g. `kubectl get cloneset,pods,controllerrevisions -o yaml`, `kubectl get \
         statefulsets.apps.kruise.io,pods,controllerrevisions,pvc -o yaml`, `kubectl get \
         daemonsets.apps.kruise.io,pods,controllerrevisions -o yaml; kubectl get nodes -o yaml`, `kubectl get \
         sidecarset,namespaces -o yaml; kubectl get pods -A -o yaml; kubectl get controllerrevisions -n \
         kruise-system -o yaml` or `kubectl get uniteddeployment,clonesets,pods,controllerrevisions -o yaml`"
    )]
    NoWorkload,
}

/// One CloneSet's plan, with what was left out.
#[derive(Debug)]
pub struct Planned {
    pub plan: Plan,
    /// Image pre-download (spec §7), planned when its gates are on.
    pub predownload: Option<crate::core::predownload::Round>,
    /// How the revisions were chosen.
    pub revision_source: RevisionSource,
    /// Pods matching the selector that the CloneSet does not own.
    pub not_owned: usize,
}

/// One Advanced StatefulSet's plan, with what was left out.
#[derive(Debug)]
pub struct PlannedSet {
    pub plan: asts::Plan,
    /// Image pre-download (spec §7), planned when its gates are on.
    pub predownload: Option<crate::core::predownload::Round>,
    /// Pods matching the selector that another controller owns.
    pub not_owned: usize,
}

/// One Advanced DaemonSet's plan, with what was left out.
#[derive(Debug)]
pub struct PlannedDaemonSet {
    pub plan: ads::Plan,
    /// Image pre-download, planned when gates `KruiseDaemon` and
    /// `PreDownloadImageForDaemonSetUpdate` are on.
    pub predownload: Option<crate::core::predownload::Round>,
    /// Nodes in the input.
    pub nodes: usize,
    /// Pods matching the selector that another controller owns.
    pub not_owned: usize,
}

/// Every workload's plan: CloneSets, then Advanced StatefulSets, then Advanced DaemonSets, each in
/// namespace/name order, then SidecarSets in name order, then UnitedDeployments in namespace/name
/// order.
#[derive(Debug, Default)]
pub struct Workloads {
    pub clonesets: Vec<Planned>,
    pub statefulsets: Vec<PlannedSet>,
    pub sidecarsets: Vec<sidecarset::PlannedSidecarSet>,
    pub daemonsets: Vec<PlannedDaemonSet>,
    pub uniteddeployments: Vec<uniteddeployment::PlannedUnitedDeployment>,
}

/// What a plan needs besides the objects.
#[derive(Clone, Copy, Debug)]
pub struct Settings<'a> {
    /// Feature gates, as `serve` takes them.
    pub gates: &'a FeatureGates,
    /// The time the round is planned at.
    pub now: Timestamp,
    /// The manager namespace, where SidecarSet revisions live (kruise's `POD_NAMESPACE`).
    pub manager_namespace: &'a str,
}

#[derive(Default)]
struct Objects {
    clonesets: Vec<CloneSet>,
    statefulsets: Vec<StatefulSet>,
    daemonsets: Vec<crate::apis::daemonset::v1beta1::DaemonSet>,
    pods: Vec<Pod>,
    pvcs: Vec<PersistentVolumeClaim>,
    revisions: Vec<ControllerRevision>,
    nodes: Vec<Node>,
    storage_classes: Vec<StorageClass>,
    budgets: Vec<crate::apis::podunavailablebudget::PodUnavailableBudget>,
    image_pull_jobs: Vec<ImagePullJob>,
    uniteddeployments: Vec<crate::apis::uniteddeployment::UnitedDeployment>,
    /// apps/v1 StatefulSets and Deployments: UnitedDeployment subsets.
    apps_statefulsets: Vec<k8s_openapi::api::apps::v1::StatefulSet>,
    deployments: Vec<k8s_openapi::api::apps::v1::Deployment>,
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
            // Both versions of the Advanced StatefulSet are served without conversion (kruise's CRD
            // has no webhook for them): a v1alpha1 object reads as v1beta1.
            ("apps.kruise.io/v1beta1" | "apps.kruise.io/v1alpha1", "StatefulSet") => {
                let mut m = m.clone();
                m.object["apiVersion"] = "apps.kruise.io/v1beta1".into();
                o.statefulsets.push(decode(&m)?)
            }
            ("apps.kruise.io/v1beta1", "DaemonSet") => o.daemonsets.push(decode(m)?),
            // v1alpha1 (`status.daemonSetHash`, the progressive-create annotation) planned on the
            // v1beta1 model the controller reads, as the apiserver converts it.
            ("apps.kruise.io/v1alpha1", "DaemonSet") => {
                let mut m = m.clone();
                if let Ok(v1beta1) = crate::core::conversion::convert(0, &m.object, crate::core::conversion::V1BETA1) {
                    m.object = v1beta1;
                }
                o.daemonsets.push(decode(&m)?)
            }
            ("apps.kruise.io/v1alpha1", "UnitedDeployment") => o.uniteddeployments.push(decode(m)?),
            ("apps/v1", "StatefulSet") => o.apps_statefulsets.push(decode(m)?),
            ("apps/v1", "Deployment") => o.deployments.push(decode(m)?),
            ("v1", "Pod") => o.pods.push(decode(m)?),
            ("v1", "PersistentVolumeClaim") => o.pvcs.push(decode(m)?),
            ("apps/v1", "ControllerRevision") => o.revisions.push(decode(m)?),
            ("v1", "Node") => o.nodes.push(decode(m)?),
            ("storage.k8s.io/v1", "StorageClass") => o.storage_classes.push(decode(m)?),
            ("policy.kruise.io/v1alpha1", "PodUnavailableBudget") => o.budgets.push(decode(m)?),
            // Both versions have one shape.
            ("apps.kruise.io/v1alpha1" | "apps.kruise.io/v1beta1", "ImagePullJob") => {
                let mut m = m.clone();
                m.object["apiVersion"] = "apps.kruise.io/v1alpha1".into();
                o.image_pull_jobs.push(decode(&m)?)
            }
            _ => {}
        }
    }
    Ok(o)
}

fn namespace(meta: &ObjectMeta) -> &str {
    meta.namespace.as_deref().unwrap_or("default")
}

fn by_namespace_and_name(a: &ObjectMeta, b: &ObjectMeta) -> std::cmp::Ordering {
    (namespace(a), &a.name).cmp(&(namespace(b), &b.name))
}

/// Plans every CloneSet, Advanced StatefulSet, Advanced DaemonSet, SidecarSet and UnitedDeployment
/// of the input.
pub fn plan_workloads(manifests: &[Manifest], settings: &Settings<'_>) -> Result<Workloads, PlanError> {
    let (gates, now) = (settings.gates, settings.now);
    let mut o = group(manifests)?;
    let sidecarsets = match sidecarset::has_sidecarset(manifests) {
        true => sidecarset::plan_sidecarsets(manifests, settings)?,
        false => Vec::new(),
    };
    if o.clonesets.is_empty()
        && o.statefulsets.is_empty()
        && o.daemonsets.is_empty()
        && sidecarsets.is_empty()
        && o.uniteddeployments.is_empty()
    {
        return Err(PlanError::NoWorkload);
    }
    let mut uds = std::mem::take(&mut o.uniteddeployments);
    let input = uniteddeployment::Input {
        clonesets: &o.clonesets,
        advanced_statefulsets: &o.statefulsets,
        statefulsets: &o.apps_statefulsets,
        deployments: &o.deployments,
        pods: &o.pods,
        revisions: &o.revisions,
    };
    let uniteddeployments = uniteddeployment::plan_uniteddeployments(&mut uds, &input, now);
    let statefulsets = plan_statefulsets(&mut o, gates, now);
    let daemonsets = plan_daemonsets(&mut o, gates, now);
    Ok(Workloads { clonesets: plan_clonesets(o, gates, now), statefulsets, sidecarsets, daemonsets, uniteddeployments })
}

/// Each Advanced DaemonSet planned on its namespace's pods and revisions and every node.
fn plan_daemonsets(o: &mut Objects, gates: &FeatureGates, now: Timestamp) -> Vec<PlannedDaemonSet> {
    o.daemonsets.sort_by(|a, b| by_namespace_and_name(&a.metadata, &b.metadata));
    let nodes: Vec<&Node> = o.nodes.iter().collect();
    let backoff = crate::core::rollout::daemonset::backoff::Backoff::default();
    o.daemonsets
        .iter()
        .map(|ds| {
            let ns = namespace(&ds.metadata);
            let name = ds.metadata.name.as_deref().unwrap_or("");
            if nodes.is_empty() {
                let plan = ads::Plan {
                    daemonset: format!("{ns}/{name}"),
                    status: ds.status.clone().unwrap_or_default(),
                    errors: vec![
                        "no Node in the input: the nodes decide where daemon pods belong (add `kubectl get nodes -o \
                         yaml`); not planned"
                            .into(),
                    ],
                    ..Default::default()
                };
                return PlannedDaemonSet { plan, predownload: None, nodes: 0, not_owned: 0 };
            }
            let pods: Vec<&Pod> = o.pods.iter().filter(|p| namespace(&p.metadata) == ns).collect();
            let revisions: Vec<&ControllerRevision> =
                o.revisions.iter().filter(|r| namespace(&r.metadata) == ns).collect();
            let selector = Selector::from_validated(ds.spec.selector.as_ref()).ok();
            let uid = ds.metadata.uid.as_deref();
            let no_labels = Default::default();
            let not_owned = pods
                .iter()
                .filter(|p| {
                    let labels = p.metadata.labels.as_ref().unwrap_or(&no_labels);
                    selector.as_ref().is_some_and(|s| !s.is_empty() && s.matches(labels))
                        && controller_of(&p.metadata).is_some_and(|r| Some(r.uid.as_str()) != uid)
                })
                .count();
            let plan = ads::plan(&ads::Input {
                ds,
                pods: &pods,
                revisions: &revisions,
                nodes: &nodes,
                gates,
                now,
                backoff: &backoff,
                seed: 0,
            });
            let predownload = ads_predownload::gates_enabled(gates).then(|| {
                let jobs = jobs_in(&o.image_pull_jobs, ns);
                ads_predownload::round(ds, &revisions, &plan.hash, &plan.update_revision, &jobs)
            });
            PlannedDaemonSet { plan, predownload, nodes: nodes.len(), not_owned }
        })
        .collect()
}

/// Each Advanced StatefulSet planned on its namespace's pods, claims and revisions.
fn plan_statefulsets(o: &mut Objects, gates: &FeatureGates, now: Timestamp) -> Vec<PlannedSet> {
    o.statefulsets.sort_by(|a, b| by_namespace_and_name(&a.metadata, &b.metadata));
    let in_ns = |meta: &ObjectMeta, ns: &str| namespace(meta) == ns;
    let classes: Vec<&StorageClass> = o.storage_classes.iter().collect();
    o.statefulsets
        .iter()
        .map(|set| {
            let ns = namespace(&set.metadata);
            let pods: Vec<&Pod> = o.pods.iter().filter(|p| in_ns(&p.metadata, ns)).collect();
            let pvcs: Vec<&PersistentVolumeClaim> = o.pvcs.iter().filter(|p| in_ns(&p.metadata, ns)).collect();
            let revisions: Vec<&ControllerRevision> = o.revisions.iter().filter(|r| in_ns(&r.metadata, ns)).collect();
            let budgets: Vec<&crate::apis::podunavailablebudget::PodUnavailableBudget> =
                o.budgets.iter().filter(|b| in_ns(&b.metadata, ns)).collect();
            let selector = Selector::from_validated(set.spec.selector.as_ref()).ok();
            let uid = set.metadata.uid.as_deref();
            let no_labels = Default::default();
            let not_owned = pods
                .iter()
                .filter(|p| {
                    let labels = p.metadata.labels.as_ref().unwrap_or(&no_labels);
                    selector.as_ref().is_some_and(|s| s.matches(labels))
                        && controller_of(&p.metadata).is_some_and(|r| Some(r.uid.as_str()) != uid)
                })
                .count();
            let plan = asts::plan(&asts::Input {
                set,
                pods: &pods,
                pvcs: &pvcs,
                revisions: &revisions,
                storage_classes: &classes,
                budgets: &budgets,
                gates,
                now,
            });
            let predownload = gates_enabled(gates).then(|| {
                let jobs = jobs_in(&o.image_pull_jobs, ns);
                let (current, update) = (plan.current_revision.as_str(), plan.update_revision.as_str());
                asts_predownload::round(set, gates, &revisions, current, update, &jobs)
            });
            PlannedSet { plan, predownload, not_owned }
        })
        .collect()
}

/// The ImagePullJobs of the input in namespace `ns`.
fn jobs_in<'a>(jobs: &'a [ImagePullJob], ns: &str) -> Vec<&'a ImagePullJob> {
    jobs.iter().filter(|j| namespace(&j.metadata) == ns).collect()
}

fn plan_clonesets(mut o: Objects, gates: &FeatureGates, now: Timestamp) -> Vec<Planned> {
    o.clonesets.sort_by(|a, b| by_namespace_and_name(&a.metadata, &b.metadata));
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
        let budgets: Vec<&crate::apis::podunavailablebudget::PodUnavailableBudget> =
            o.budgets.iter().filter(|b| namespace(&b.metadata) == namespace(&cs.metadata)).collect();
        let plan = plan(&Input {
            cloneset: cs,
            pods: &pods,
            pvcs: &pvcs,
            revisions: &revisions,
            nodes: &o.nodes,
            budgets: &budgets,
            gates,
            now,
            seed: 0,
            revision_source,
        });
        let predownload = gates_enabled(gates).then(|| {
            let jobs = jobs_in(&o.image_pull_jobs, namespace(&cs.metadata));
            let (current, update) = (plan.current_revision.as_str(), plan.update_revision.as_str());
            cs_predownload::round(cs, gates, &revisions, current, update, &jobs)
        });
        out.push(Planned { plan, predownload, revision_source, not_owned });
    }
    out
}
