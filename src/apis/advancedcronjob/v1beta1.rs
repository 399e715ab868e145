//! AdvancedCronJob `apps.kruise.io/v1beta1` (kruise v1.9.0 `apis/apps/v1beta1/advancedcronjob_types.go`):
//! the v1alpha1 object whose template may also be an ImageListPullJob
//! (`template.imageListPullJobTemplate`). kruise serves both versions under `conversion: None` (the
//! apiserver only rewrites `apiVersion`), stored as v1beta1: that template read through v1alpha1 is
//! pruned, exactly as with kruise.

use k8s_openapi::api::batch::v1::JobTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{AdvancedCronJobStatus, BroadcastJobTemplateSpec};
use crate::apis::imagelistpulljob::ImageListPullJobSpec;
use crate::apis::is_default;

/// Desired state of an AdvancedCronJob.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "AdvancedCronJob",
    namespaced,
    status = "AdvancedCronJobStatus",
    derive = "PartialEq",
    derive = "Default",
    shortname = "acj",
    doc = "AdvancedCronJob is the Schema for the advancedcronjobs API",
    printcolumn(
        name = "Schedule",
        type_ = "string",
        json_path = ".spec.schedule",
        description = "The schedule of advanced cron job."
    ),
    printcolumn(name = "Type", type_ = "string", json_path = ".status.type", description = "Type of cron job."),
    printcolumn(
        name = "LastScheduleTime",
        type_ = "date",
        json_path = ".status.lastScheduleTime",
        description = "The last time at which job was scheduled."
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["schedule", "template"]))]
pub struct AdvancedCronJobSpec {
    /// Cron schedule.
    #[serde(default)]
    pub schedule: String,
    /// Time zone of the schedule (IANA name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// Deadline for starting a missed run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starting_deadline_seconds: Option<i64>,
    /// Allow (default), Forbid or Replace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(schema_with = "super::concurrency_policy")]
    pub concurrency_policy: String,
    /// Suspend new runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// Finished successful runs kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub successful_jobs_history_limit: Option<i32>,
    /// Finished failed runs kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_jobs_history_limit: Option<i32>,
    /// What each run creates.
    #[serde(default)]
    pub template: CronJobTemplate,
}

/// `spec.template`: a Job, a BroadcastJob or an ImageListPullJob.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CronJobTemplate {
    /// A batch/v1 Job template. Schemaless in the CRD, as in kruise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
    pub job_template: Option<JobTemplateSpec>,
    /// A BroadcastJob template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broadcast_job_template: Option<BroadcastJobTemplateSpec>,
    /// An ImageListPullJob template (v1beta1 only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_list_pull_job_template: Option<ImageListPullJobTemplateSpec>,
}

/// `template.imageListPullJobTemplate`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ImageListPullJobTemplateSpec {
    /// Metadata of the ImageListPullJobs created: a bare `type: object` in kruise's CRD, as the
    /// BroadcastJob template's.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(schema_with = "crate::apis::schema::bare_object")]
    pub metadata: ObjectMeta,
    /// Spec of the ImageListPullJobs created.
    #[serde(default)]
    pub spec: ImageListPullJobSpec,
}
