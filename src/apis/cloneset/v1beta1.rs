//! CloneSet `apps.kruise.io/v1beta1` (spec §1.1.4), kruise HEAD's `apis/apps/v1beta1`: the
//! update strategy is `type: RollingUpdate|OnDelete` plus `rollingUpdate` (partition, surge,
//! `podUpdatePolicy` ReCreate|InPlaceIfPossible|InPlaceOnly, in-place and image pre-download
//! parameters as fields); `scaleStrategy.enablePVCReuse` (default false) replaces v1alpha1's
//! `disablePVCReuse`, and `excludePreparingDelete` replaces a label. Status is v1alpha1's shape.
//! Served beside v1alpha1, which stays the storage version as in kruise v1.9; conversion in
//! `core::conversion::cloneset`.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::apis::common::{InPlaceUpdateStrategy, Lifecycle, UpdatePriorityStrategy, UpdateScatterStrategy};
use crate::apis::is_default;

/// `updateStrategy.type`: pods are updated by the controller.
pub const ROLLING_UPDATE: &str = "RollingUpdate";
/// `updateStrategy.type`: pods are updated when the user deletes them.
pub const ON_DELETE: &str = "OnDelete";

/// Desired state of a v1beta1 CloneSet.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
    kind = "CloneSet",
    namespaced,
    status = "crate::apis::cloneset::CloneSetStatus",
    derive = "PartialEq",
    derive = "Default",
    shortname = "clone",
    doc = "CloneSet is the Schema for the clonesets API",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.labelSelector"
    ),
    printcolumn(
        name = "DESIRED",
        type_ = "integer",
        json_path = ".spec.replicas",
        description = "The desired number of pods."
    ),
    printcolumn(
        name = "UPDATED",
        type_ = "integer",
        json_path = ".status.updatedReplicas",
        description = "The number of pods updated."
    ),
    printcolumn(
        name = "UPDATED_READY",
        type_ = "integer",
        json_path = ".status.updatedReadyReplicas",
        description = "The number of pods updated and ready."
    ),
    printcolumn(
        name = "UPDATED_AVAILABLE",
        type_ = "integer",
        json_path = ".status.updatedAvailableReplicas",
        description = "The number of pods updated and available."
    ),
    printcolumn(
        name = "READY",
        type_ = "integer",
        json_path = ".status.readyReplicas",
        description = "The number of pods ready."
    ),
    printcolumn(
        name = "TOTAL",
        type_ = "integer",
        json_path = ".status.replicas",
        description = "The number of currently all pods."
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created."
    ),
    printcolumn(
        name = "CONTAINERS",
        type_ = "string",
        json_path = ".spec.template.spec.containers[*].name",
        description = "The containers of currently cloneset.",
        priority = "1"
    ),
    printcolumn(
        name = "IMAGES",
        type_ = "string",
        json_path = ".spec.template.spec.containers[*].image",
        description = "The images of currently cloneset.",
        priority = "1"
    ),
    printcolumn(
        name = "SELECTOR",
        type_ = "string",
        json_path = ".status.labelSelector",
        description = "The selector of currently cloneset.",
        priority = "1"
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["selector", "template"]))]
pub struct CloneSetSpec {
    /// Desired number of pods (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Label query over pods; must match the template labels. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::label_selector")]
    pub selector: Option<LabelSelector>,
    /// Template of the pods. Schemaless in the CRD, as in kruise.
    #[serde(default)]
    #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
    pub template: PodTemplateSpec,
    /// One PVC per pod per template.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        serialize_with = "crate::apis::common::serialize_claim_templates"
    )]
    #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
    pub volume_claim_templates: Vec<PersistentVolumeClaim>,
    /// Scaling behaviour.
    #[serde(default, skip_serializing_if = "is_default")]
    pub scale_strategy: CloneSetScaleStrategy,
    /// Update behaviour.
    #[serde(default, skip_serializing_if = "is_default")]
    pub update_strategy: CloneSetUpdateStrategy,
    /// Number of ControllerRevisions kept (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,
    /// Seconds a new pod must be ready to count as available.
    #[serde(default, skip_serializing_if = "is_default")]
    pub min_ready_seconds: i32,
    /// Lifecycle hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Lifecycle>,
    /// Seconds before a stalled rollout is reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline_seconds: Option<i32>,
}

/// `spec.scaleStrategy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloneSetScaleStrategy {
    /// Names of pods to delete while scaling down (or replace).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pods_to_delete: Vec<String>,
    /// Limit on unavailable pods while scaling up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Reuse the PVCs of deleted pods (default false, the zero value).
    #[serde(default, rename = "enablePVCReuse", skip_serializing_if = "is_default")]
    pub enable_pvc_reuse: bool,
    /// Count pods in PreparingDelete out of the scale arithmetic (a label in v1alpha1).
    #[serde(default, skip_serializing_if = "is_default")]
    pub exclude_preparing_delete: bool,
}

/// `spec.updateStrategy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloneSetUpdateStrategy {
    /// RollingUpdate (default) or OnDelete.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// Rolling update parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<RollingUpdateCloneSetStrategy>,
}

/// `spec.updateStrategy.rollingUpdate`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollingUpdateCloneSetStrategy {
    /// Number or percent of pods kept at the old revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<IntOrString>,
    /// Maximum unavailable pods during the update (default 20%).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Maximum pods above replicas during the update (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrString>,
    /// ReCreate (default), InPlaceIfPossible or InPlaceOnly.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pod_update_policy: String,
    /// Pause the update.
    #[serde(default, skip_serializing_if = "is_default")]
    pub paused: bool,
    /// Update order by priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_strategy: Option<UpdatePriorityStrategy>,
    /// Spread updated pods over label values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scatter_strategy: UpdateScatterStrategy,
    /// In-place update and image pre-download parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_place_update_strategy: Option<InPlaceUpdateStrategy>,
}
