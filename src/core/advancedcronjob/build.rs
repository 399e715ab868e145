//! The children an AdvancedCronJob creates (kruise `constructJobForCronJob` /
//! `constructBrJobForCronJob`): named `<acj>-<unix seconds of the run>`, in the AdvancedCronJob's
//! namespace, with the template's labels, the template's annotations plus
//! `apps.kruise.io/scheduled-at` (RFC 3339, UTC), the template's spec, and the AdvancedCronJob as
//! controller (`blockOwnerDeletion: true`).

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::jiff::Timestamp;

use super::{OWNER_API_VERSION, OWNER_KIND, SCHEDULED_AT};
use crate::apis::advancedcronjob::AdvancedCronJob;
use crate::apis::broadcastjob::BroadcastJob;

/// The child's name for the run at `scheduled`.
pub fn child_name(acj: &AdvancedCronJob, scheduled: Timestamp) -> String {
    format!("{}-{}", acj.metadata.name.as_deref().unwrap_or(""), scheduled.as_second())
}

/// `scheduledTime.Format(time.RFC3339)` in UTC.
pub fn rfc3339(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `ctrl.SetControllerReference(acj, child)`.
pub fn owner_reference(acj: &AdvancedCronJob) -> OwnerReference {
    OwnerReference {
        api_version: OWNER_API_VERSION.into(),
        kind: OWNER_KIND.into(),
        name: acj.metadata.name.clone().unwrap_or_default(),
        uid: acj.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

fn metadata(acj: &AdvancedCronJob, template: Option<&ObjectMeta>, scheduled: Timestamp) -> ObjectMeta {
    let labels: BTreeMap<String, String> = template.and_then(|m| m.labels.clone()).unwrap_or_default();
    let mut annotations: BTreeMap<String, String> = template.and_then(|m| m.annotations.clone()).unwrap_or_default();
    annotations.insert(SCHEDULED_AT.into(), rfc3339(scheduled));
    ObjectMeta {
        name: Some(child_name(acj, scheduled)),
        namespace: acj.metadata.namespace.clone(),
        labels: (!labels.is_empty()).then_some(labels),
        annotations: Some(annotations),
        owner_references: Some(vec![owner_reference(acj)]),
        ..Default::default()
    }
}

/// The Job of the run at `scheduled`; `None` without a Job template.
pub fn job(acj: &AdvancedCronJob, scheduled: Timestamp) -> Option<Job> {
    let template = acj.spec.template.job_template.as_ref()?;
    Some(Job {
        metadata: metadata(acj, template.metadata.as_ref(), scheduled),
        spec: Some(template.spec.clone().unwrap_or_default()),
        status: None,
    })
}

/// The BroadcastJob of the run at `scheduled`; `None` without a BroadcastJob template.
pub fn broadcast_job(acj: &AdvancedCronJob, scheduled: Timestamp) -> Option<BroadcastJob> {
    let template = acj.spec.template.broadcast_job_template.as_ref()?;
    Some(BroadcastJob {
        metadata: metadata(acj, Some(&template.metadata), scheduled),
        spec: template.spec.clone(),
        status: None,
    })
}
