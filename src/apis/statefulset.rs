//! Advanced StatefulSet `apps.kruise.io` (spec §1.2): `v1beta1` (storage version) and `v1alpha1`
//! (decoded and answered in its own version; converted through `core::conversion`).

use k8s_openapi::api::apps::v1::StatefulSetCondition;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::{InPlaceUpdateStrategy, UpdatePriorityStrategy};
use super::is_default;

/// `podManagementPolicy`: one pod at a time, in order.
pub const ORDERED_READY: &str = "OrderedReady";
/// `podManagementPolicy`: pods are created and deleted in parallel.
pub const PARALLEL: &str = "Parallel";
/// `updateStrategy.type`: rolling update.
pub const ROLLING_UPDATE: &str = "RollingUpdate";
/// `updateStrategy.type`: pods are updated when the user deletes them.
pub const ON_DELETE: &str = "OnDelete";
/// `podUpdatePolicy` values.
pub const RECREATE: &str = "ReCreate";
/// `podUpdatePolicy`: in place when possible.
pub const IN_PLACE_IF_POSSIBLE: &str = "InPlaceIfPossible";
/// `podUpdatePolicy`: in place only.
pub const IN_PLACE_ONLY: &str = "InPlaceOnly";
/// PVC retention policy values.
pub const RETAIN: &str = "Retain";
/// PVC retention policy: delete.
pub const DELETE: &str = "Delete";
/// `volumeClaimUpdateStrategy.type`: resize PVCs as pods roll.
pub const ON_POD_ROLLING_UPDATE: &str = "OnPodRollingUpdate";
/// Upper bound of `rollingUpdate.minReadySeconds`.
pub const MAX_MIN_READY_SECONDS: i32 = 300;

/// `spec.updateStrategy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatefulSetUpdateStrategy {
    /// RollingUpdate (default) or OnDelete.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// Rolling update parameters (only with RollingUpdate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<RollingUpdateStatefulSetStrategy>,
}

/// `spec.updateStrategy.rollingUpdate`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollingUpdateStatefulSetStrategy {
    /// Number of pods kept at the old revision (the highest ordinals are updated first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<i32>,
    /// Maximum unavailable pods during the update (default 1; anything else needs Parallel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// ReCreate (default), InPlaceIfPossible or InPlaceOnly.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pod_update_policy: String,
    /// Pause the update.
    #[serde(default, skip_serializing_if = "is_default")]
    pub paused: bool,
    /// Update pods out of ordinal order (Parallel only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unordered_update: Option<UnorderedUpdateStrategy>,
    /// In-place update parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_place_update_strategy: Option<InPlaceUpdateStrategy>,
    /// Seconds an updated pod must be ready before the next is updated (0..300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_ready_seconds: Option<i32>,
}

/// `rollingUpdate.unorderedUpdate`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnorderedUpdateStrategy {
    /// Update order by priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_strategy: Option<UpdatePriorityStrategy>,
}

/// One `status.volumeClaims` entry (v1beta1).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s,
    &["compatibleReadyReplicas", "compatibleReplicas", "volumeClaimName"]))]
pub struct VolumeClaimStatus {
    /// Volume claim template name.
    #[serde(default)]
    pub volume_claim_name: String,
    /// Replicas whose PVC matches the template.
    #[serde(default)]
    pub compatible_replicas: i32,
    /// Ready replicas whose PVC matches the template.
    #[serde(default)]
    pub compatible_ready_replicas: i32,
}

/// Advanced StatefulSet `v1beta1`, the storage version.
pub mod v1beta1 {
    use super::*;
    use kube::CustomResource;

    /// Desired state of an Advanced StatefulSet.
    #[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "apps.kruise.io",
        version = "v1beta1",
        kind = "StatefulSet",
        namespaced,
        status = "StatefulSetStatus",
        derive = "PartialEq",
        derive = "Default",
        shortname = "sts",
        shortname = "asts",
        doc = "StatefulSet is the Schema for the statefulsets API",
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
            name = "CURRENT",
            type_ = "integer",
            json_path = ".status.replicas",
            description = "The number of currently all pods."
        ),
        printcolumn(
            name = "UPDATED",
            type_ = "integer",
            json_path = ".status.updatedReplicas",
            description = "The number of pods updated."
        ),
        printcolumn(
            name = "READY",
            type_ = "integer",
            json_path = ".status.readyReplicas",
            description = "The number of pods ready."
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
            description = "The containers of currently advanced statefulset.",
            priority = "1"
        ),
        printcolumn(
            name = "IMAGES",
            type_ = "string",
            json_path = ".spec.template.spec.containers[*].image",
            description = "The images of currently advanced statefulset.",
            priority = "1"
        )
    )]
    #[serde(rename_all = "camelCase")]
    #[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["selector", "template"]))]
    pub struct StatefulSetSpec {
        /// Desired number of pods (default 1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub replicas: Option<i32>,
        /// Label query over pods. Immutable.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(schema_with = "crate::apis::schema::label_selector")]
        pub selector: Option<LabelSelector>,
        /// Template of the pods. Schemaless in the CRD, as in kruise.
        #[serde(default)]
        #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
        pub template: PodTemplateSpec,
        /// Claims each pod gets.
        #[serde(
            default,
            skip_serializing_if = "Vec::is_empty",
            serialize_with = "crate::apis::common::serialize_claim_templates"
        )]
        #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
        pub volume_claim_templates: Vec<PersistentVolumeClaim>,
        /// How PVCs follow template changes.
        #[serde(default, skip_serializing_if = "is_default")]
        pub volume_claim_update_strategy: VolumeClaimUpdateStrategy,
        /// Governing service. Immutable.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub service_name: String,
        /// OrderedReady (default) or Parallel. Immutable.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub pod_management_policy: String,
        /// Update behaviour.
        #[serde(default, skip_serializing_if = "is_default")]
        pub update_strategy: StatefulSetUpdateStrategy,
        /// Number of ControllerRevisions kept (default 10).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub revision_history_limit: Option<i32>,
        /// Ordinals skipped: integers or "a-b" ranges.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub reserve_ordinals: Vec<IntOrString>,
        /// Lifecycle hooks.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub lifecycle: Option<crate::apis::common::Lifecycle>,
        /// Scaling behaviour.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub scale_strategy: Option<StatefulSetScaleStrategy>,
        /// What happens to PVCs when the set is deleted or scaled down.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub persistent_volume_claim_retention_policy: Option<StatefulSetPersistentVolumeClaimRetentionPolicy>,
        /// First ordinal (gate StatefulSetStartOrdinal).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub ordinals: Option<StatefulSetOrdinals>,
    }

    /// `spec.volumeClaimUpdateStrategy`.
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    pub struct VolumeClaimUpdateStrategy {
        /// OnPodRollingUpdate or OnDelete.
        #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
        pub type_: String,
    }

    /// `spec.scaleStrategy`.
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct StatefulSetScaleStrategy {
        /// Maximum unavailable pods while scaling (anything but 1 needs Parallel).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub max_unavailable: Option<IntOrString>,
    }

    /// `spec.persistentVolumeClaimRetentionPolicy`.
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct StatefulSetPersistentVolumeClaimRetentionPolicy {
        /// Retain or Delete.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub when_deleted: String,
        /// Retain or Delete.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub when_scaled: String,
    }

    /// `spec.ordinals`.
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    pub struct StatefulSetOrdinals {
        /// First ordinal.
        #[serde(default)]
        pub start: i32,
    }

    /// Observed state of an Advanced StatefulSet (v1beta1).
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct StatefulSetStatus {
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
        /// Number of pods at the current revision.
        #[serde(default)]
        pub current_replicas: i32,
        /// Number of pods at the update revision.
        #[serde(default)]
        pub updated_replicas: i32,
        /// Number of ready pods at the update revision.
        #[serde(default, skip_serializing_if = "is_default")]
        pub updated_ready_replicas: i32,
        /// Number of available pods at the update revision.
        #[serde(default, skip_serializing_if = "is_default")]
        pub updated_available_replicas: i32,
        /// Current revision.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub current_revision: String,
        /// Update revision.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub update_revision: String,
        /// Count of hash collisions of revision names.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub collision_count: Option<i32>,
        /// apps/v1 StatefulSet conditions.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub conditions: Vec<StatefulSetCondition>,
        /// The selector as a label-selector string (scale subresource).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub label_selector: String,
        /// Per volume claim template compatibility.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub volume_claims: Vec<VolumeClaimStatus>,
    }
}

/// Advanced StatefulSet `v1alpha1`: the v1beta1 shape without volumeClaimUpdateStrategy,
/// reserveOrdinals, lifecycle, scaleStrategy, PVC retention policy and ordinals.
pub mod v1alpha1 {
    use super::*;
    use kube::CustomResource;

    /// Desired state of an Advanced StatefulSet (v1alpha1).
    #[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "apps.kruise.io",
        version = "v1alpha1",
        kind = "StatefulSet",
        namespaced,
        status = "StatefulSetStatus",
        derive = "PartialEq",
        derive = "Default",
        shortname = "sts",
        shortname = "asts",
        doc = "StatefulSet is the Schema for the statefulsets API",
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
            name = "CURRENT",
            type_ = "integer",
            json_path = ".status.replicas",
            description = "The number of currently all pods."
        ),
        printcolumn(
            name = "UPDATED",
            type_ = "integer",
            json_path = ".status.updatedReplicas",
            description = "The number of pods updated."
        ),
        printcolumn(
            name = "READY",
            type_ = "integer",
            json_path = ".status.readyReplicas",
            description = "The number of pods ready."
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
            description = "The containers of currently advanced statefulset.",
            priority = "1"
        ),
        printcolumn(
            name = "IMAGES",
            type_ = "string",
            json_path = ".spec.template.spec.containers[*].image",
            description = "The images of currently advanced statefulset.",
            priority = "1"
        )
    )]
    #[serde(rename_all = "camelCase")]
    #[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["selector", "template"]))]
    pub struct StatefulSetSpec {
        /// Desired number of pods (default 1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub replicas: Option<i32>,
        /// Label query over pods. Immutable.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(schema_with = "crate::apis::schema::label_selector")]
        pub selector: Option<LabelSelector>,
        /// Template of the pods.
        #[serde(default)]
        #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
        pub template: PodTemplateSpec,
        /// Claims each pod gets.
        #[serde(
            default,
            skip_serializing_if = "Vec::is_empty",
            serialize_with = "crate::apis::common::serialize_claim_templates"
        )]
        #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
        pub volume_claim_templates: Vec<PersistentVolumeClaim>,
        /// Governing service. Immutable.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub service_name: String,
        /// OrderedReady (default) or Parallel. Immutable.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub pod_management_policy: String,
        /// Update behaviour.
        #[serde(default, skip_serializing_if = "is_default")]
        pub update_strategy: StatefulSetUpdateStrategy,
        /// Number of ControllerRevisions kept (default 10).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub revision_history_limit: Option<i32>,
    }

    /// Observed state of an Advanced StatefulSet (v1alpha1).
    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct StatefulSetStatus {
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
        /// Number of pods at the current revision.
        #[serde(default)]
        pub current_replicas: i32,
        /// Number of pods at the update revision.
        #[serde(default)]
        pub updated_replicas: i32,
        /// Current revision.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub current_revision: String,
        /// Update revision.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub update_revision: String,
        /// Count of hash collisions of revision names.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub collision_count: Option<i32>,
        /// apps/v1 StatefulSet conditions.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        pub conditions: Vec<StatefulSetCondition>,
        /// The selector as a label-selector string (scale subresource).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub label_selector: String,
    }
}
