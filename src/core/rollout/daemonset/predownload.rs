//! What an Advanced DaemonSet round does about image pre-download: kruise's `Reconcile` calling
//! `createImagePullJobsForInPlaceUpdate` / `DeleteJobsForWorkload`
//! (`pkg/controller/daemonset/daemonset_predownload_image.go`, `daemonset_controller.go`),
//! as a [`crate::core::predownload::Plan`] the shared act half applies. It shares the job
//! (name `<revision>-<container>`, labels, selector, parallelism and timeout annotations) and the
//! revision labels with the CloneSet's; its own rules are:
//!
//! - enabled by gates `KruiseDaemon` and `PreDownloadImageForDaemonSetUpdate` (and the
//!   ImagePullJob kind served), not by the CloneSet's gate;
//! - it works while `status.updatedNumberScheduled != status.desiredNumberScheduled` or the update
//!   revision's hash differs from `status.updateRevision`; otherwise the set's jobs are deleted;
//! - the `image-predownload-min-updated-ready-pods` annotation is parsed (an error is logged) but
//!   not waited for: kruise leaves it as a todo;
//! - an update revision is labelled ignored only when everything updates in one batch: partition
//!   (scaled over `status.desiredNumberScheduled`, rounding down) 0 and maxUnavailable (default
//!   1, rounding up) at least the desired number — no minimum size, no recreate or in-place check;
//! - a DaemonSet revision is labelled `controller-revision-hash` only, so the
//!   `controller.kubernetes.io/hash` kruise reads from it for the job's label and selector is
//!   "": the selector's `NotIn [<revision name>, ""]` then excludes no daemon pod (they carry
//!   the hash, not the revision name), so the job pulls on the nodes of updated pods too, as in
//!   kruise;
//! - the changed images are those of the new template against every old revision
//!   ([`changed_images_since`]).

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::apis::daemonset::v1beta1::DaemonSet;
use crate::apis::imagepulljob::ImagePullJob;
use crate::compat::intstr::k8s_scaled_value;
use crate::core::features::{FeatureGates, Gate};
use crate::core::predownload::job::changed_images_since;
use crate::core::predownload::strategy::template_of;
use crate::core::predownload::{CREATED, IGNORED, JobTemplate, Owner, Plan, Round, job_name, threshold, writes};

/// Both gates on (`KruiseDaemon` off already forces the DaemonSet gate off).
pub fn gates_enabled(gates: &FeatureGates) -> bool {
    gates.enabled(Gate::KruiseDaemon) && gates.enabled(Gate::PreDownloadImageForDaemonSetUpdate)
}

/// The set as the owner of its jobs (`controllerKind`: `apps.kruise.io/v1beta1` DaemonSet).
pub fn owner(ds: &DaemonSet) -> Owner {
    Owner {
        api_version: "apps.kruise.io/v1beta1",
        kind: "DaemonSet",
        name: ds.metadata.name.clone().unwrap_or_default(),
        namespace: ds.metadata.namespace.clone().unwrap_or_default(),
        uid: ds.metadata.uid.clone().unwrap_or_default(),
    }
}

/// Whether the observed status says the rollout to `hash` is complete (kruise deletes the jobs
/// then, and creates none).
pub fn complete(ds: &DaemonSet, hash: &str) -> bool {
    let st = ds.status.clone().unwrap_or_default();
    st.updated_number_scheduled == st.desired_number_scheduled && hash == st.update_revision
}

/// The round's plan: `hash` is the update revision's hash, `update` the stored update revision,
/// `old` the set's other revisions.
pub fn plan(ds: &DaemonSet, hash: &str, update: &ControllerRevision, old: &[&ControllerRevision]) -> Plan {
    let mut out = Plan::default();
    if complete(ds, hash) {
        out.delete_owned = true;
        out.reason = "the rollout is complete: the DaemonSet's ImagePullJobs are deleted".into();
        return out;
    }
    let desired = ds.status.as_ref().map_or(0, |s| s.desired_number_scheduled);
    let annotations = ds.metadata.annotations.clone().unwrap_or_default();
    // Parsed for its error only: kruise does not wait for the threshold (a todo there).
    let (_, error) = threshold(&annotations, desired);
    out.errors.extend(error);
    let update_name = update.metadata.name.as_deref().unwrap_or("");
    let labels = update.metadata.labels.clone().unwrap_or_default();
    if let Some(done) = [CREATED, IGNORED].into_iter().find(|k| labels.contains_key(*k)) {
        out.reason = format!("revision {update_name} is labelled {done}");
        return out;
    }
    let rolling = ds.spec.update_strategy.rolling_update.clone().unwrap_or_default();
    let partition = match rolling.partition.as_ref() {
        None => 0,
        Some(p) => match k8s_scaled_value(Some(p), i64::from(desired), false) {
            Ok(n) => n,
            Err(e) => {
                out.errors.push(format!("failed to get partition value: {e}"));
                out.reason = "the partition cannot be computed".into();
                return out;
            }
        },
    };
    let one = IntOrString::Int(1);
    let max_unavailable =
        k8s_scaled_value(Some(rolling.max_unavailable.as_ref().unwrap_or(&one)), i64::from(desired), true).unwrap_or(0);
    if partition == 0 && max_unavailable >= i64::from(desired) {
        out.label_revision = Some((update_name.to_string(), IGNORED));
        out.reason = format!(
            "no pre-download for revision {update_name}: every pod updates in one batch \
             (partition 0, maxUnavailable {max_unavailable} of {desired})"
        );
        return out;
    }
    let template =
        JobTemplate::new(owner(ds), annotations, ds.spec.selector.as_ref(), &ds.spec.template, &update.metadata);
    let olds: Vec<_> = old.iter().map(|r| template_of(r)).collect();
    let images = changed_images_since(&olds, template_of(update).as_ref());
    out.create = images.iter().map(|(name, image)| template.job(&job_name(update_name, name), image)).collect();
    out.label_revision = Some((update_name.to_string(), CREATED));
    out.reason = format!("pre-downloading {} image(s) of revision {update_name}", out.create.len());
    out
}

/// The round of a set whose planner chose the update revision `update_name` (hash `hash`) among
/// the namespace's `revisions`; `jobs` are the ImagePullJobs of its namespace (only read when the
/// rollout is complete). An update revision not yet stored waits for the next round.
pub fn round(
    ds: &DaemonSet,
    revisions: &[&ControllerRevision],
    hash: &str,
    update_name: &str,
    jobs: &[&ImagePullJob],
) -> Round {
    let uid = ds.metadata.uid.clone().unwrap_or_default();
    let controlled: Vec<&ControllerRevision> = revisions
        .iter()
        .copied()
        .filter(|r| {
            r.metadata
                .owner_references
                .as_ref()
                .is_some_and(|refs| refs.iter().any(|o| o.controller == Some(true) && o.uid == uid))
        })
        .collect();
    let update = controlled.iter().copied().find(|r| r.metadata.name.as_deref() == Some(update_name));
    let plan = match update {
        _ if complete(ds, hash) => plan(ds, hash, &ControllerRevision::default(), &[]),
        None => Plan { reason: format!("revision {update_name} is not stored yet"), ..Default::default() },
        Some(u) => {
            let old: Vec<&ControllerRevision> =
                controlled.iter().copied().filter(|r| r.metadata.name.as_deref() != Some(update_name)).collect();
            plan(ds, hash, u, &old)
        }
    };
    let empty = ControllerRevision::default();
    let actions = writes::actions(&plan, update.unwrap_or(&empty), jobs, &uid);
    Round { plan, actions }
}

#[cfg(test)]
mod tests;
