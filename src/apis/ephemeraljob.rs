//! EphemeralJob `apps.kruise.io/v1alpha1`, kruise's `apis/apps/v1alpha1/ephemeraljob_types.go`
//! (v1.9.0): adds ephemeral containers to the pods a selector matches. Types only: the CRD is
//! installed so existing objects stay readable and writable; nothing of ours reconciles it yet.

use k8s_openapi::api::core::v1::EphemeralContainer;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::broadcastjob::JobCondition;
use super::is_default;

/// Desired state of an EphemeralJob.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "EphemeralJob",
    namespaced,
    status = "EphemeralJobStatus",
    derive = "PartialEq",
    derive = "Default",
    shortname = "ejob",
    doc = "EphemeralJob is the Schema for the ephemeraljobs API",
    printcolumn(
        name = "STATUS",
        type_ = "string",
        json_path = ".status.phase",
        description = "The status of ephemeral job"
    ),
    printcolumn(
        name = "MATCH",
        type_ = "integer",
        json_path = ".status.match",
        description = "Number of ephemeral container matched by this job"
    ),
    printcolumn(
        name = "SUCCEED",
        type_ = "integer",
        json_path = ".status.succeeded",
        description = "Number of succeed ephemeral containers"
    ),
    printcolumn(
        name = "FAILED",
        type_ = "integer",
        json_path = ".status.failed",
        description = "Number of failed ephemeral containers"
    ),
    printcolumn(
        name = "RUNNING",
        type_ = "integer",
        json_path = ".status.running",
        description = "Number of running ephemeral containers"
    ),
    printcolumn(
        name = "WAITING",
        type_ = "integer",
        json_path = ".status.waiting",
        description = "Number of waiting ephemeral containers"
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["selector", "template"]))]
pub struct EphemeralJobSpec {
    /// Pods that get the ephemeral containers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::label_selector")]
    pub selector: Option<LabelSelector>,
    /// Pods to run on (default: every match).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Pods running the containers at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<i32>,
    /// The ephemeral containers.
    #[serde(default)]
    pub template: EphemeralContainerTemplateSpec,
    /// Pause the job.
    #[serde(default, skip_serializing_if = "is_default")]
    pub paused: bool,
    /// Deadline of the whole job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
    /// Delete the job this long after it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
}

/// `spec.template`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["ephemeralContainers"]))]
pub struct EphemeralContainerTemplateSpec {
    /// The containers. Schemaless in the CRD, as in kruise.
    #[serde(default)]
    #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
    pub ephemeral_containers: Vec<EphemeralContainer>,
}

/// Observed state of an EphemeralJob.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EphemeralJobStatus {
    /// JobSucceeded, JobFailed, JobError, Initialized and MatchedEmpty conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<JobCondition>,
    /// When the job started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the job completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// Succeeded, Failed, Waiting, Running, Paused, Error or Unknown.
    #[serde(default)]
    pub phase: String,
    /// Pods matched.
    #[serde(default, rename = "match")]
    pub matches: i32,
    /// Containers running.
    #[serde(default)]
    pub running: i32,
    /// Containers succeeded.
    #[serde(default)]
    pub succeeded: i32,
    /// Containers waiting.
    #[serde(default)]
    pub waiting: i32,
    /// Containers failed.
    #[serde(default)]
    pub failed: i32,
}
