//! ImagePullJob `apps.kruise.io/v1alpha1` (spec §1.4): pulls an image on selected nodes; used by
//! image pre-download before in-place updates.

pub mod v1beta1;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Desired state of an ImagePullJob.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "ImagePullJob",
    namespaced,
    status = "ImagePullJobStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "ImagePullJob is the Schema for the imagepulljobs API",
    printcolumn(
        name = "TOTAL",
        type_ = "integer",
        json_path = ".status.desired",
        description = "Number of all nodes matched by this job"
    ),
    printcolumn(
        name = "ACTIVE",
        type_ = "integer",
        json_path = ".status.active",
        description = "Number of image pull task active"
    ),
    printcolumn(
        name = "SUCCEED",
        type_ = "integer",
        json_path = ".status.succeeded",
        description = "Number of image pull task succeeded"
    ),
    printcolumn(
        name = "FAILED",
        type_ = "integer",
        json_path = ".status.failed",
        description = "Number of image pull tasks failed"
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created."
    ),
    printcolumn(
        name = "MESSAGE",
        type_ = "string",
        json_path = ".status.message",
        description = "Summary of status when job is failed"
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["completionPolicy", "image"]))]
pub struct ImagePullJobSpec {
    /// Image to pull.
    #[serde(default)]
    pub image: String,
    /// Secret names used to pull (immutable).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pull_secrets: Vec<String>,
    /// Nodes to pull on: names XOR a label selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<ImagePullJobNodeSelector>,
    /// Pull on the nodes of the pods matching this selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::label_selector")]
    pub pod_selector: Option<LabelSelector>,
    /// Nodes pulling at once (integer only; 0 pauses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<IntOrString>,
    /// Per-node timeout and retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_policy: Option<PullPolicy>,
    /// When the job completes.
    #[serde(default)]
    pub completion_policy: CompletionPolicy,
    /// Labels and annotations of the pull sandbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_config: Option<SandboxConfig>,
    /// Always or IfNotPresent (default).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub image_pull_policy: String,
}

/// `spec.selector`: node names XOR a label selector (inline).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = crate::apis::schema::atomic)]
pub struct ImagePullJobNodeSelector {
    /// Node names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    /// Label selector over nodes (inline).
    #[serde(flatten)]
    pub label_selector: LabelSelector,
}

/// `spec.pullPolicy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PullPolicy {
    /// Per-node timeout (default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i32>,
    /// Retries per node (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<i32>,
}

/// `spec.completionPolicy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompletionPolicy {
    /// Always (default) or Never.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// Deadline of the whole job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
    /// Delete the job this long after it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
}

/// `spec.sandboxConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxConfig {
    /// Sandbox labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Sandbox annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// Observed state of an ImagePullJob.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImagePullJobStatus {
    /// When the job started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the job completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// Nodes matched.
    #[serde(default)]
    pub desired: i32,
    /// Nodes pulling.
    #[serde(default)]
    pub active: i32,
    /// Nodes done.
    #[serde(default)]
    pub succeeded: i32,
    /// Nodes failed.
    #[serde(default)]
    pub failed: i32,
    /// Summary when failed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Nodes that failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_nodes: Vec<String>,
}
