//! What a CloneSet round does about image pre-download (spec §7; kruise's `doReconcile` calling
//! `createImagePullJobsForInPlaceUpdate` / `DeleteJobsForWorkload`): the CloneSet as
//! [`crate::core::predownload`] reads it — owner `apps.kruise.io/v1alpha1` CloneSet (kruise
//! v1.8), the annotations, `spec.replicas`, selector and template, the status it observed, and its
//! update strategy. The caller runs it only when pre-download is enabled (spec §7.1).

use k8s_openapi::api::apps::v1::ControllerRevision;

use crate::apis::cloneset::CloneSet;
use crate::apis::imagepulljob::ImagePullJob;
use crate::core::features::FeatureGates;
use crate::core::predownload::{self, Owner, Round, Strategy, Workload};

/// The CloneSet as the pre-download planner reads it.
pub fn workload<'a>(cs: &'a CloneSet, gates: &FeatureGates) -> Workload<'a> {
    let status = cs.status.as_ref();
    Workload {
        owner: Owner {
            api_version: "apps.kruise.io/v1alpha1",
            kind: "CloneSet",
            name: cs.metadata.name.clone().unwrap_or_default(),
            namespace: cs.metadata.namespace.clone().unwrap_or_default(),
            uid: cs.metadata.uid.clone().unwrap_or_default(),
        },
        annotations: cs.metadata.annotations.clone().unwrap_or_default(),
        // The webhook defaults replicas to 1.
        replicas: cs.spec.replicas.unwrap_or(1),
        selector: cs.spec.selector.as_ref(),
        template: &cs.spec.template,
        updated_ready_replicas: status.map_or(0, |s| s.updated_ready_replicas),
        status_update_revision: status.map_or("", |s| s.update_revision.as_str()),
        strategy: Strategy::of_cloneset(cs, gates),
    }
}

/// The round for a CloneSet whose planner chose `current` and `update`.
pub fn round(
    cs: &CloneSet,
    gates: &FeatureGates,
    revisions: &[&ControllerRevision],
    current: &str,
    update: &str,
    jobs: &[&ImagePullJob],
) -> Round {
    predownload::round(&workload(cs, gates), revisions, current, update, jobs)
}

#[cfg(test)]
mod tests;
