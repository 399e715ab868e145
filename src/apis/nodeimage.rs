//! NodeImage `apps.kruise.io/v1alpha1` (kruise `apis/apps/v1alpha1/nodeimage_types.go`,
//! cluster-scoped, one per node): the images kruise-daemon pulls on a node and how the pulls went
//! (ImagePullJobs write `spec.images`, spec §7.4). Types only: the CRD is installed, no controller
//! of ours reconciles it yet (issue 32 item 3).
//!
//! Served as kruise v1.9 serves it: v1alpha1 and [`v1beta1`] (which adds
//! `spec.images{}.pullSecrets[].mode`) under `conversion: None`, stored as v1beta1.
//! `status.waiting` is kruise v1.9's.

pub mod v1beta1;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::imagepulljob::SandboxConfig;
use super::is_default;

/// Desired state of a NodeImage.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "NodeImage",
    status = "NodeImageStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "NodeImage is the Schema for the nodeimages API",
    printcolumn(
        name = "DESIRED",
        type_ = "integer",
        json_path = ".status.desired",
        description = "Number of all images on this node"
    ),
    printcolumn(
        name = "PULLING",
        type_ = "integer",
        json_path = ".status.pulling",
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
        description = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
    )
)]
pub struct NodeImageSpec {
    /// Images to pull on this node, by name (at most 256).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub images: BTreeMap<String, ImageSpec>,
}

/// How one image is pulled.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["tags"]))]
pub struct ImageSpec {
    /// Pull secrets, by namespace and name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pull_secrets: Vec<ReferenceObject>,
    /// Tags to pull.
    #[serde(default)]
    pub tags: Vec<ImageTagSpec>,
    /// Labels and annotations of the pull sandbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_config: Option<SandboxConfig>,
}

/// `<namespace>/<name>` of an object.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReferenceObject {
    /// Namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// How one tag is pulled.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["tag"]))]
pub struct ImageTagSpec {
    /// The tag.
    #[serde(default)]
    pub tag: String,
    /// When the tag was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Time>,
    /// Timeouts, retries and TTL of the pull.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_policy: Option<ImageTagPullPolicy>,
    /// The jobs that asked for this tag.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::apis::schema::object_references")]
    pub owner_references: Vec<ObjectReference>,
    /// Opaque version of this tag's request.
    #[serde(default, skip_serializing_if = "is_default")]
    pub version: i64,
    /// Always or IfNotPresent (default).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub image_pull_policy: String,
}

/// `pullPolicy` of one tag.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageTagPullPolicy {
    /// Timeout of the pull (default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i32>,
    /// Retries (default 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<i32>,
    /// Forget the finished pull this long after it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
    /// Deadline of the pull.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
}

/// Observed state of a NodeImage.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeImageStatus {
    /// Pull tasks wanted (usually the number of images in the spec).
    #[serde(default)]
    pub desired: i32,
    /// Tasks succeeded.
    #[serde(default)]
    pub succeeded: i32,
    /// Tasks failed.
    #[serde(default)]
    pub failed: i32,
    /// Tasks not finished.
    #[serde(default)]
    pub pulling: i32,
    /// Tasks waiting (kruise v1.9).
    #[serde(default)]
    pub waiting: i32,
    /// Status of each image's pulls.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub image_statuses: BTreeMap<String, ImageStatus>,
    /// When the node's first pulls all finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_sync_status: Option<SyncStatus>,
}

/// Pull status of one image.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["tags"]))]
pub struct ImageStatus {
    /// Status of each tag.
    #[serde(default)]
    pub tags: Vec<ImageTagStatus>,
}

/// Pull status of one tag.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["phase", "tag"]))]
pub struct ImageTagStatus {
    /// The tag.
    #[serde(default)]
    pub tag: String,
    /// Waiting, Pulling, Succeeded or Failed.
    #[serde(default)]
    pub phase: String,
    /// Progress, 0-100.
    #[serde(default, skip_serializing_if = "is_default")]
    pub progress: i32,
    /// When the pull started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// When the pull completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// The version of the tag's request this status answers.
    #[serde(default, skip_serializing_if = "is_default")]
    pub version: i64,
    /// Image ID.
    #[serde(default, rename = "imageID", skip_serializing_if = "String::is_empty")]
    pub image_id: String,
    /// Human-readable details.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// `status.firstSyncStatus`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncStatus {
    /// When.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sync_at: Option<Time>,
    /// Succeeded or Failed.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
    /// Human-readable details.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}
