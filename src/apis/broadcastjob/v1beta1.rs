//! BroadcastJob `apps.kruise.io/v1beta1`, kruise's `apis/apps/v1beta1/broadcastjob_types.go`
//! (v1.9.0): the storage version since kruise v1.9, with exactly v1alpha1's fields and JSON
//! shapes (kruise's CRD converts with `conversion: None`), so the spec is v1alpha1's, flattened.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// v1alpha1's fields, flattened; the doc comment is v1alpha1's so that the two versions' schemas
// are the same, descriptions included.
/// Desired state of a BroadcastJob.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "BroadcastJob",
    namespaced,
    status = "crate::apis::broadcastjob::BroadcastJobStatus",
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
pub struct BroadcastJobSpec {
    /// Every field of the v1alpha1 spec, at the same place.
    #[serde(flatten)]
    pub fields: crate::apis::broadcastjob::BroadcastJobSpec,
}
