//! ImageListPullJob `apps.kruise.io/v1beta1` (kruise `apis/apps/v1beta1/
//! imagelistpulljob_types.go`): the storage version since kruise v1.9, with exactly v1alpha1's
//! fields and JSON shapes, so the spec is v1alpha1's, flattened, and the CRD needs no conversion
//! webhook.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a v1beta1 ImageListPullJob: v1alpha1's fields.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "ImageListPullJob",
    namespaced,
    status = "crate::apis::imagelistpulljob::ImageListPullJobStatus",
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
        description = "CreationTimestamp is a timestamp representing the server time when this object was created."
    )
)]
pub struct ImageListPullJobSpec {
    /// Every field of the v1alpha1 spec, at the same place.
    #[serde(flatten)]
    pub fields: crate::apis::imagelistpulljob::ImageListPullJobSpec,
}
