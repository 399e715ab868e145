//! CloneSet `apps.kruise.io/v1alpha1` (spec §1.1): an enhanced Deployment with in-place update,
//! partitions, `maxSurge`/`maxUnavailable` and selective deletion.

pub mod v1beta1;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{InPlaceUpdateStrategy, Lifecycle, UpdatePriorityStrategy, UpdateScatterStrategy};
use super::is_default;

/// `updateStrategy.type`: pods are recreated.
pub const RECREATE: &str = "ReCreate";
/// `updateStrategy.type`: update in place when only images/metadata changed, else recreate.
pub const IN_PLACE_IF_POSSIBLE: &str = "InPlaceIfPossible";
/// `updateStrategy.type`: only in-place updates are allowed.
pub const IN_PLACE_ONLY: &str = "InPlaceOnly";
/// `updateStrategy.type` constant added in kruise v1.9; rejected by the v1alpha1 validator (spec §11.3).
pub const ON_DELETE: &str = "OnDelete";
/// Default `updateStrategy.maxUnavailable`.
pub const DEFAULT_MAX_UNAVAILABLE: &str = "20%";

/// Desired state of a CloneSet.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "CloneSet",
    namespaced,
    status = "CloneSetStatus",
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
    /// Seconds before a stalled rollout is reported (kruise v1.9+).
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
    /// Disable reuse of the PVCs of deleted pods.
    #[serde(default, rename = "disablePVCReuse", skip_serializing_if = "is_default")]
    pub disable_pvc_reuse: bool,
}

/// `spec.updateStrategy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloneSetUpdateStrategy {
    /// ReCreate (default), InPlaceIfPossible or InPlaceOnly.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// Number or percent of pods kept at the old revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<IntOrString>,
    /// Maximum unavailable pods during the update (default 20%).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Maximum pods above replicas during the update (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrString>,
    /// Pause the update.
    #[serde(default, skip_serializing_if = "is_default")]
    pub paused: bool,
    /// Update order by priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_strategy: Option<UpdatePriorityStrategy>,
    /// Spread updated pods over label values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scatter_strategy: UpdateScatterStrategy,
    /// In-place update parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_place_update_strategy: Option<InPlaceUpdateStrategy>,
}

/// Observed state of a CloneSet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CloneSetStatus {
    /// Generation observed by the controller.
    #[serde(default, skip_serializing_if = "is_default")]
    pub observed_generation: i64,
    /// Number of pods.
    #[serde(default)]
    pub replicas: i32,
    /// Number of ready pods.
    #[serde(default)]
    pub ready_replicas: i32,
    /// Number of available pods.
    #[serde(default)]
    pub available_replicas: i32,
    /// Number of pods at the update revision.
    #[serde(default)]
    pub updated_replicas: i32,
    /// Number of ready pods at the update revision.
    #[serde(default)]
    pub updated_ready_replicas: i32,
    /// Number of available pods at the update revision.
    #[serde(default, skip_serializing_if = "is_default")]
    pub updated_available_replicas: i32,
    /// replicas minus the computed partition.
    #[serde(default, skip_serializing_if = "is_default")]
    pub expected_updated_replicas: i32,
    /// Revision pods are updated to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub update_revision: String,
    /// Revision of the current pods.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub current_revision: String,
    /// Count of hash collisions of revision names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i32>,
    /// FailedScale, FailedUpdate and Progressing conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<CloneSetCondition>,
    /// The selector as a label-selector string (scale subresource).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label_selector: String,
}

/// One CloneSet status condition.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["status", "type"]))]
pub struct CloneSetCondition {
    /// FailedScale, FailedUpdate or Progressing.
    #[serde(default, rename = "type")]
    pub type_: String,
    /// True, False or Unknown.
    #[serde(default)]
    pub status: String,
    /// Last time the condition was updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
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
