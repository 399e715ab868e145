//! ImageListPullJob `apps.kruise.io/v1alpha1` (kruise `apis/apps/v1alpha1/
//! imagelistpulljob_types.go`): one ImagePullJob per listed image, all from one template. Types
//! only: the CRD is installed, no controller of ours reconciles it yet (issue 32 item 3).
//!
//! Served as v1alpha1 and v1beta1 (stored), as kruise v1.9 serves it: the two schemas are the same
//! (kruise's conversion copies every field), so the CRD converts with `strategy: None`.

pub mod v1beta1;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::imagepulljob::{CompletionPolicy, ImagePullJobNodeSelector, PullPolicy, SandboxConfig};

/// Desired state of an ImageListPullJob.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "ImageListPullJob",
    namespaced,
    status = "ImageListPullJobStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "ImageListPullJob is the Schema for the imagelistpulljobs API",
    printcolumn(
        name = "TOTAL",
        type_ = "integer",
        json_path = ".status.desired",
        description = "Number of image pull job"
    ),
    printcolumn(
        name = "SUCCEEDED",
        type_ = "integer",
        json_path = ".status.succeeded",
        description = "Number of image pull job succeeded"
    ),
    printcolumn(
        name = "COMPLETED",
        type_ = "integer",
        json_path = ".status.completed",
        description = "Number of ImagePullJobs which are finished"
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
    )
)]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["completionPolicy", "images"]))]
pub struct ImageListPullJobSpec {
    /// Images to pull, one ImagePullJob each.
    #[serde(default)]
    pub images: Vec<String>,
    /// Everything of an ImagePullJob's spec but the image (inline).
    #[serde(flatten)]
    pub template: ImagePullJobTemplate,
}

/// kruise's `ImagePullJobTemplate`: an ImagePullJob spec without its image.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImagePullJobTemplate {
    /// Secret names used to pull.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pull_secrets: Vec<String>,
    /// Nodes to pull on: names XOR a label selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<ImagePullJobNodeSelector>,
    /// Pull on the nodes of the pods matching this selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::label_selector")]
    pub pod_selector: Option<LabelSelector>,
    /// Nodes pulling at once (0 pauses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<IntOrString>,
    /// Per-node timeout and retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_policy: Option<PullPolicy>,
    /// When each job completes.
    #[serde(default)]
    pub completion_policy: CompletionPolicy,
    /// Labels and annotations of the pull sandbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_config: Option<SandboxConfig>,
    /// Always or IfNotPresent (default).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub image_pull_policy: String,
}

/// Observed state of an ImageListPullJob (both versions).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageListPullJobStatus {
    /// When the job started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When every ImagePullJob completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// ImagePullJobs wanted (usually the number of images).
    #[serde(default)]
    pub desired: i32,
    /// ImagePullJobs running.
    #[serde(default)]
    pub active: i32,
    /// ImagePullJobs finished.
    #[serde(default)]
    pub completed: i32,
    /// ImagePullJobs finished with every node succeeded.
    #[serde(default)]
    pub succeeded: i32,
    /// ImagePullJobs with failed nodes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed_image_statuses: Vec<FailedImageStatus>,
}

/// An ImagePullJob with failed nodes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailedImageStatus {
    /// The ImagePullJob.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub image_pull_job: String,
    /// The image.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Human-readable details.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}
