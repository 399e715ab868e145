//! ImagePullJob `apps.kruise.io/v1beta1` (spec §1.4), kruise's `apis/apps/v1beta1`: the storage
//! version since kruise v1.9, with exactly v1alpha1's fields and JSON shapes (kruise's conversion
//! copies every field), so the spec is v1alpha1's, flattened. Conversion in
//! `core::conversion::imagepulljob`.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a v1beta1 ImagePullJob: v1alpha1's fields.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "ImagePullJob",
    namespaced,
    status = "crate::apis::imagepulljob::ImagePullJobStatus",
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
pub struct ImagePullJobSpec {
    /// Every field of the v1alpha1 spec, at the same place.
    #[serde(flatten)]
    pub fields: crate::apis::imagepulljob::ImagePullJobSpec,
}
