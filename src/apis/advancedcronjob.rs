//! AdvancedCronJob `apps.kruise.io/v1alpha1`, kruise's
//! `apis/apps/v1alpha1/advancedcronjob_types.go` (v1.9.0): a CronJob whose template is a Job or
//! a BroadcastJob. Types only: admission is `webhook::{mutate,validate}_advancedcronjob`, the
//! schedule `core::advancedcronjob`, the controller `controller::advancedcronjob`.
//!
//! Served as kruise v1.9 serves it: v1alpha1 and [`v1beta1`] (which adds
//! `template.imageListPullJobTemplate`) under `conversion: None`, stored as v1beta1: an object
//! written as v1beta1 loses that template when read as v1alpha1, as with kruise.

pub mod v1beta1;

use k8s_openapi::api::batch::v1::JobTemplateSpec;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

use super::broadcastjob::BroadcastJobSpec;
use super::is_default;

/// `concurrencyPolicy` values.
pub const ALLOW: &str = "Allow";
/// `concurrencyPolicy`: skip a run while the previous one is active.
pub const FORBID: &str = "Forbid";
/// `concurrencyPolicy`: replace the active run.
pub const REPLACE: &str = "Replace";

/// Desired state of an AdvancedCronJob.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
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
    #[schemars(schema_with = "concurrency_policy")]
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

/// `+kubebuilder:validation:Enum=Allow;Forbid;Replace`.
pub(crate) fn concurrency_policy(_: &mut SchemaGenerator) -> Schema {
    crate::apis::schema::string_enum(&[ALLOW, FORBID, REPLACE])
}

/// `spec.template`: a Job or a BroadcastJob.
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
}

/// `template.broadcastJobTemplate`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BroadcastJobTemplateSpec {
    /// Metadata of the BroadcastJobs created. kruise's CRD declares it a bare `type: object`, so
    /// the apiserver prunes what is under it; ours says the same.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(schema_with = "crate::apis::schema::bare_object")]
    pub metadata: ObjectMeta,
    /// Spec of the BroadcastJobs created.
    #[serde(default)]
    pub spec: BroadcastJobSpec,
}

/// Observed state of an AdvancedCronJob.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdvancedCronJobStatus {
    /// Job or BroadcastJob.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// The runs active.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::apis::schema::object_references")]
    pub active: Vec<ObjectReference>,
    /// When a run was last scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_schedule_time: Option<Time>,
}
