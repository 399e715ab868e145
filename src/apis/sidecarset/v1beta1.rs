//! SidecarSet `apps.kruise.io/v1beta1` (spec §1.3), kruise's `apis/apps/v1beta1`: the storage
//! version since kruise v1.9. It has no `spec.namespace` (a v1alpha1 namespace becomes a
//! `namespaceSelector` on `kubernetes.io/metadata.name`) and carries the custom version as
//! `spec.customVersion` (a label in v1alpha1). Every other type is v1alpha1's, shared.
//! Conversion in `core::conversion::sidecarset`.

use k8s_openapi::api::core::v1::{LocalObjectReference, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::apis::is_default;
use crate::apis::sidecarset::{
    SidecarContainer, SidecarSetInjectionStrategy, SidecarSetPatchPodMetadata, SidecarSetUpdateStrategy,
};

/// Desired state of a v1beta1 SidecarSet.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "SidecarSet",
    status = "crate::apis::sidecarset::SidecarSetStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "SidecarSet is the Schema for the sidecarsets API",
    printcolumn(
        name = "MATCHED",
        type_ = "integer",
        json_path = ".status.matchedPods",
        description = "The number of pods matched."
    ),
    printcolumn(
        name = "UPDATED",
        type_ = "integer",
        json_path = ".status.updatedPods",
        description = "The number of pods matched and updated."
    ),
    printcolumn(
        name = "READY",
        type_ = "integer",
        json_path = ".status.readyPods",
        description = "The number of pods matched and ready."
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created."
    )
)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetSpec {
    /// Pod label selector; required and non-empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::label_selector")]
    pub selector: Option<LabelSelector>,
    /// Label selector over Namespace objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::label_selector")]
    pub namespace_selector: Option<LabelSelector>,
    /// Init containers injected at pod creation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "super::sidecar_containers")]
    pub init_containers: Vec<SidecarContainer>,
    /// Sidecar containers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "super::sidecar_containers")]
    pub containers: Vec<SidecarContainer>,
    /// Volumes the sidecars may mount.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
    pub volumes: Vec<Volume>,
    /// How running pods get new sidecar versions.
    #[serde(default, skip_serializing_if = "is_default")]
    pub update_strategy: SidecarSetUpdateStrategy,
    /// How new pods get sidecars.
    #[serde(default, skip_serializing_if = "is_default")]
    pub injection_strategy: SidecarSetInjectionStrategy,
    /// Image pull secrets merged into the pod.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::apis::schema::local_object_references")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// Number of ControllerRevisions kept (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,
    /// Pod annotations to patch on injection.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patch_pod_metadata: Vec<SidecarSetPatchPodMetadata>,
    /// Custom version of this SidecarSet (the `apps.kruise.io/sidecarset-custom-version` label in v1alpha1).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub custom_version: String,
}
