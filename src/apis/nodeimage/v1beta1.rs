//! NodeImage `apps.kruise.io/v1beta1` (kruise v1.9.0 `apis/apps/v1beta1/nodeimage_types.go`): the
//! v1alpha1 object with `spec.images{}.pullSecrets[].mode`. kruise serves both versions under
//! `conversion: None` (the apiserver only rewrites `apiVersion`), stored as v1beta1: a `mode` read
//! through v1alpha1 is pruned, exactly as with kruise.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ImageTagSpec, NodeImageStatus};
use crate::apis::imagepulljob::SandboxConfig;

/// Desired state of a NodeImage.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
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

/// `<namespace>/<name>` of an object, and how its secret is synchronised.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReferenceObject {
    /// Namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// `batch`: the secret is synchronised once and cleaned up with the image spec.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub mode: String,
}
