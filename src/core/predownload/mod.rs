//! Image pre-download for in-place updates (spec §7.1–§7.3; kruise v1.8.4
//! `pkg/controller/cloneset/cloneset_predownload_image.go`, `pkg/controller/statefulset/
//! statefulset_predownload_image.go`, `doReconcile` / `doPreDownload`): what a CloneSet or
//! Advanced StatefulSet round does about ImagePullJobs, as a [`Plan`] the controller applies.
//!
//! - [`enabled`]: gates `PreDownloadImageForInPlaceUpdate` and `KruiseDaemon` on, and the
//!   ImagePullJob kind served (the controller's discovery at start) — else nothing at all.
//! - While current ≠ update revision: the canary threshold ([`threshold`], from the
//!   `apps.kruise.io/image-predownload-min-updated-ready-pods` annotation) must be reached by
//!   `status.updatedReadyReplicas` (0 while the status names another update revision); then, once
//!   per update revision ([`plan`]): an update revision labelled `pre-predownload-created` or
//!   `image-predownload-ignored` is done; a strategy that would not profit ([`Strategy`]: recreate
//!   updates, ≤ 3 replicas, everything in one batch, a revision pair that cannot update in place)
//!   labels it ignored; otherwise one job per changed container ([`job`]) and the created label.
//! - When current == update revision: every ImagePullJob whose controller is the workload is
//!   deleted ([`jobs_to_delete`]).
//!
//! [`writes`] turns a plan into actions of the shared write vocabulary.
//!
//! Kruise's known issue #1419 is kept: a template going back to a revision already labelled gets
//! no new jobs.

pub mod job;
pub mod strategy;
pub mod writes;

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::apis::imagepulljob::ImagePullJob;
use crate::apis::keys::IMAGE_PREDOWNLOAD_MIN_UPDATED_READY_PODS;
use crate::compat::intstr::{go_atoi, k8s_scaled_value};
use crate::core::features::{FeatureGates, Gate};
pub use job::{JobTemplate, Owner, changed_images, job_name};
pub use strategy::Strategy;

/// Revision label: this revision's jobs were created (`ImagePreDownloadCreatedKey`).
pub const CREATED: &str = "apps.kruise.io/pre-predownload-created";
/// Revision label: this revision gets no jobs (`ImagePreDownloadIgnoredKey`).
pub const IGNORED: &str = "apps.kruise.io/image-predownload-ignored";
/// `minimumReplicasToPreDownloadImage`: workloads of at most this many replicas get no jobs.
pub const MINIMUM_REPLICAS: i32 = 3;
/// Event of a job created (type Normal).
pub const EVENT_CREATED: &str = "CreatedImagePullJob";
/// Event of a job that could not be created (type Normal, as kruise records it).
pub const EVENT_FAILED: &str = "FailedCreateImagePullJob";

/// Spec §7.1 without the discovery check: both gates on (`KruiseDaemon` off already forces the
/// pre-download gate off, see `core::features`).
pub fn gates_enabled(gates: &FeatureGates) -> bool {
    gates.enabled(Gate::KruiseDaemon) && gates.enabled(Gate::PreDownloadImageForInPlaceUpdate)
}

/// Spec §7.1: the gates, and the ImagePullJob kind served by the API server.
pub fn enabled(gates: &FeatureGates, image_pull_job_served: bool) -> bool {
    image_pull_job_served && gates_enabled(gates)
}

/// The canary threshold: the annotation as `intstr.Parse` reads it (an integer, else a string)
/// scaled by `intstr.GetScaledValueFromIntOrPercent` over `replicas`, rounding up; absent → 0,
/// unparsable → 0 with the error (kruise logs it and goes on with 0).
pub fn threshold(annotations: &BTreeMap<String, String>, replicas: i32) -> (i64, Option<String>) {
    let Some(raw) = annotations.get(IMAGE_PREDOWNLOAD_MIN_UPDATED_READY_PODS) else { return (0, None) };
    // Go's intstr.FromInt keeps the low 32 bits.
    let value = match go_atoi(raw) {
        Ok(n) => IntOrString::Int(n as i32),
        Err(_) => IntOrString::String(raw.clone()),
    };
    match k8s_scaled_value(Some(&value), i64::from(replicas), true) {
        Ok(n) => (n, None),
        Err(e) => (0, Some(format!("annotation {IMAGE_PREDOWNLOAD_MIN_UPDATED_READY_PODS}={raw:?}: {e}"))),
    }
}

/// What a round reads about the workload.
#[derive(Clone, Debug)]
pub struct Workload<'a> {
    pub owner: Owner,
    pub annotations: BTreeMap<String, String>,
    pub replicas: i32,
    pub selector: Option<&'a LabelSelector>,
    pub template: &'a PodTemplateSpec,
    /// `status.updatedReadyReplicas` as observed.
    pub updated_ready_replicas: i32,
    /// `status.updateRevision` as observed.
    pub status_update_revision: &'a str,
    /// The kind's update strategy, as far as pre-download cares.
    pub strategy: Strategy,
}

/// One round's pre-download decisions.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// Jobs to create, in container-name order (AlreadyExists is not an error).
    pub create: Vec<ImagePullJob>,
    /// `(revision name, label key)`: the label (value "true") to set on the update revision,
    /// after the creations, whatever became of them.
    pub label_revision: Option<(String, &'static str)>,
    /// Whether the workload's jobs are to be deleted (the caller lists them; [`jobs_to_delete`]).
    pub delete_owned: bool,
    /// Why nothing (more) is done this round, for `kruise plan` and the debug log.
    pub reason: String,
    /// Errors (an unparsable threshold, an unusable partition): logged, never fatal.
    pub errors: Vec<String>,
}

/// The round: `current` and `update` are the workload's current and update revisions.
pub fn plan(w: &Workload<'_>, current: &ControllerRevision, update: &ControllerRevision) -> Plan {
    let mut out = Plan::default();
    let (current_name, update_name) =
        (current.metadata.name.as_deref().unwrap_or(""), update.metadata.name.as_deref().unwrap_or(""));
    if current_name == update_name {
        out.delete_owned = true;
        out.reason = "the rollout is complete: the workload's ImagePullJobs are deleted".into();
        return out;
    }
    let (min_ready, error) = threshold(&w.annotations, w.replicas);
    out.errors.extend(error);
    let updated_ready = if update_name == w.status_update_revision { w.updated_ready_replicas } else { 0 };
    if min_ready > i64::from(updated_ready) {
        out.reason = format!("waiting for {min_ready} updated ready pods before pre-downloading ({updated_ready} now)");
        return out;
    }
    let labels = update.metadata.labels.clone().unwrap_or_default();
    if let Some(done) = [CREATED, IGNORED].into_iter().find(|k| labels.contains_key(*k)) {
        out.reason = format!("revision {update_name} is labelled {done}");
        return out;
    }
    match w.strategy.skip_reason(w.replicas, current, update) {
        Err(e) => {
            // Kruise returns the partition error before labelling: tried again next round.
            out.errors.push(e);
            out.reason = "the partition cannot be computed".into();
            return out;
        }
        Ok(Some(why)) => {
            out.label_revision = Some((update_name.to_string(), IGNORED));
            out.reason = format!("no pre-download for revision {update_name}: {why}");
            return out;
        }
        Ok(None) => {}
    }
    let template = JobTemplate::new(w.owner.clone(), w.annotations.clone(), w.selector, w.template, &update.metadata);
    let images = match (strategy::template_of(current), strategy::template_of(update)) {
        (Some(old), Some(new)) => changed_images(&old, &new),
        // kruise's diff gives nothing for a revision whose data does not decode.
        _ => BTreeMap::new(),
    };
    out.create = images.iter().map(|(name, image)| template.job(&job_name(update_name, name), image)).collect();
    out.label_revision = Some((update_name.to_string(), CREATED));
    out.reason = format!("pre-downloading {} image(s) of revision {update_name}", out.create.len());
    out
}

/// The jobs of a listing whose controller ownerReference is the workload `uid`
/// (`DeleteJobsForWorkload`).
pub fn jobs_to_delete<'a>(jobs: &[&'a ImagePullJob], uid: &str) -> Vec<&'a ImagePullJob> {
    jobs.iter()
        .copied()
        .filter(|j| {
            j.metadata
                .owner_references
                .as_ref()
                .and_then(|refs| refs.iter().find(|r| r.controller == Some(true)))
                .is_some_and(|r| r.uid == uid)
        })
        .collect()
}

/// One round's plan and its actions.
#[derive(Clone, Debug, Default)]
pub struct Round {
    pub plan: Plan,
    pub actions: Vec<crate::core::rollout::actions::Action>,
}

/// The round of a workload whose rollout planner chose `current` and `update` (revision names)
/// among `revisions`; `jobs` are the ImagePullJobs of its namespace (only read once the rollout
/// completed). An update revision not yet among `revisions` (created this round) waits for the
/// next round, as kruise works on revisions it has stored.
pub fn round(
    w: &Workload<'_>,
    revisions: &[&ControllerRevision],
    current: &str,
    update: &str,
    jobs: &[&ImagePullJob],
) -> Round {
    let find = |name: &str| revisions.iter().copied().find(|r| r.metadata.name.as_deref() == Some(name));
    let plan = if current == update {
        Plan {
            delete_owned: true,
            reason: "the rollout is complete: the workload's ImagePullJobs are deleted".into(),
            ..Default::default()
        }
    } else {
        match (find(current), find(update)) {
            (Some(c), Some(u)) => plan(w, c, u),
            _ => Plan {
                reason: format!("revisions {current} and {update} are not both stored yet"),
                ..Default::default()
            },
        }
    };
    let empty = ControllerRevision::default();
    let update_revision = find(update).unwrap_or(&empty);
    let actions = writes::actions(&plan, update_revision, jobs, &w.owner.uid);
    Round { plan, actions }
}

#[cfg(test)]
mod tests;
