//! BroadcastJob `apps.kruise.io/v1alpha1`, kruise's `apis/apps/v1alpha1/broadcastjob_types.go`
//! (v1.9.0): runs a pod to completion on every matching node. Types only: the CRD is installed
//! so existing objects stay readable and writable; nothing of ours reconciles it yet.
//!
//! kruise v1.9 also serves `v1beta1` with the same schema and no conversion webhook
//! (`conversion: None`: the apiserver only rewrites `apiVersion`), storing v1beta1; so do we
//! (`v1beta1`).

pub mod v1beta1;

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::imagepulljob::CompletionPolicy;
use super::is_default;

/// Desired state of a BroadcastJob.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "BroadcastJob",
    namespaced,
    status = "BroadcastJobStatus",
    derive = "PartialEq",
    derive = "Default",
    shortname = "bcj",
    doc = "BroadcastJob is the Schema for the broadcastjobs API",
    printcolumn(
        name = "Desired",
        type_ = "integer",
        json_path = ".status.desired",
        description = "The desired number of pods. This is typically equal to the number of nodes satisfied to run pods."
    ),
    printcolumn(
        name = "Active",
        type_ = "integer",
        json_path = ".status.active",
        description = "The number of actively running pods."
    ),
    printcolumn(
        name = "Succeeded",
        type_ = "integer",
        json_path = ".status.succeeded",
        description = "The number of pods which reached phase Succeeded."
    ),
    printcolumn(
        name = "Failed",
        type_ = "integer",
        json_path = ".status.failed",
        description = "The number of pods which reached phase Failed."
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["template"]))]
pub struct BroadcastJobSpec {
    /// Pods running at once (integer or percent of the desired pods).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<IntOrString>,
    /// Template of the pods. Schemaless in the CRD, as in kruise.
    #[serde(default)]
    #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
    pub template: PodTemplateSpec,
    /// When the job completes (Always or Never), its deadline and TTL (kruise shares the type
    /// with ImagePullJob).
    #[serde(default)]
    pub completion_policy: CompletionPolicy,
    /// Pause the job.
    #[serde(default, skip_serializing_if = "is_default")]
    pub paused: bool,
    /// What a failed pod does to the job.
    #[serde(default, skip_serializing_if = "is_default")]
    pub failure_policy: FailurePolicy,
}

/// `spec.failurePolicy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailurePolicy {
    /// Continue, FailFast (default) or Pause.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// Restarts of a pod before it counts as failed.
    #[serde(default, skip_serializing_if = "is_default")]
    pub restart_limit: i32,
}

/// Observed state of a BroadcastJob.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BroadcastJobStatus {
    /// Complete and Failed conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<JobCondition>,
    /// When the job started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the job completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// Pods running.
    #[serde(default)]
    pub active: i32,
    /// Pods succeeded.
    #[serde(default)]
    pub succeeded: i32,
    /// Pods failed.
    #[serde(default)]
    pub failed: i32,
    /// Pods wanted (the matching nodes).
    #[serde(default)]
    pub desired: i32,
    /// completed, running, paused or failed.
    #[serde(default)]
    pub phase: String,
}

/// One job condition (BroadcastJob's `JobCondition`; EphemeralJob's conditions have the same shape).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["status", "type"]))]
pub struct JobCondition {
    /// Condition type.
    #[serde(default, rename = "type")]
    pub type_: String,
    /// True, False or Unknown.
    #[serde(default)]
    pub status: String,
    /// Last time the condition was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_probe_time: Option<Time>,
    /// Last time the condition changed status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// Machine-readable reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Human-readable message.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}
