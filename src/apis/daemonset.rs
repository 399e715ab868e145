//! Advanced DaemonSet `apps.kruise.io/v1alpha1`, kruise's `apis/apps/v1alpha1/daemonset_types.go`
//! (v1.9.0, where `rollingUpdate.partition` became an int-or-string): a DaemonSet with in-place
//! update, surge, partitions, node selectors for the rollout and lifecycle hooks. Types only: the
//! CRD is installed so existing objects stay readable and writable; nothing of ours reconciles it
//! yet.
//!
//! Served beside v1beta1 (`daemonset::v1beta1`, the storage version), as kruise v1.9 serves it;
//! the two differ (`scaleStrategy.partitionedScaling`, `status.updateRevision` for
//! `status.daemonSetHash`) and are converted by our `/convert` webhook
//! (`core::conversion::daemonset`, kruise's `daemonset_conversion.go`).

pub mod v1beta1;

use k8s_openapi::api::apps::v1::DaemonSetCondition;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::Lifecycle;
use super::is_default;

/// `updateStrategy.type`: rolling update (the default).
pub const ROLLING_UPDATE: &str = "RollingUpdate";
/// `updateStrategy.type`: pods are updated when the user deletes them.
pub const ON_DELETE: &str = "OnDelete";
/// `rollingUpdate.rollingUpdateType`: recreate pods (the default).
pub const STANDARD: &str = "Standard";
/// `rollingUpdate.rollingUpdateType`: update in place when possible.
pub const IN_PLACE_IF_POSSIBLE: &str = "InPlaceIfPossible";
/// `rollingUpdate.rollingUpdateType`: deprecated (v1alpha1 only); v1beta1 reads it as `Standard`.
pub const DEPRECATED_SURGING: &str = "Surging";
/// Annotation of a v1alpha1 DaemonSet: `"true"` is v1beta1's `scaleStrategy.partitionedScaling`.
pub const PROGRESSIVE_CREATE_POD: &str = "daemonset.kruise.io/progressive-create-pod";

/// Desired state of an Advanced DaemonSet.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "DaemonSet",
    namespaced,
    status = "DaemonSetStatus",
    derive = "PartialEq",
    derive = "Default",
    shortname = "daemon",
    shortname = "ads",
    doc = "DaemonSet is the Schema for the daemonsets API",
    printcolumn(
        name = "DESIRED",
        type_ = "integer",
        json_path = ".status.desiredNumberScheduled",
        description = "The desired number of pods."
    ),
    printcolumn(
        name = "CURRENT",
        type_ = "integer",
        json_path = ".status.currentNumberScheduled",
        description = "The current number of pods."
    ),
    printcolumn(
        name = "READY",
        type_ = "integer",
        json_path = ".status.numberReady",
        description = "The ready number of pods."
    ),
    printcolumn(
        name = "UP-TO-DATE",
        type_ = "integer",
        json_path = ".status.updatedNumberScheduled",
        description = "The updated number of pods."
    ),
    printcolumn(
        name = "AVAILABLE",
        type_ = "integer",
        json_path = ".status.numberAvailable",
        description = "The updated number of pods."
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
    ),
    printcolumn(
        name = "CONTAINERS",
        type_ = "string",
        json_path = ".spec.template.spec.containers[*].name",
        description = "The containers of currently  daemonset.",
        priority = "1"
    ),
    printcolumn(
        name = "IMAGES",
        type_ = "string",
        json_path = ".spec.template.spec.containers[*].image",
        description = "The images of currently advanced daemonset.",
        priority = "1"
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["selector", "template"]))]
pub struct DaemonSetSpec {
    /// Label query over pods. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::label_selector")]
    pub selector: Option<LabelSelector>,
    /// Template of the pods. Schemaless in the CRD, as in kruise.
    #[serde(default)]
    #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
    pub template: PodTemplateSpec,
    /// Update behaviour.
    #[serde(default, skip_serializing_if = "is_default")]
    pub update_strategy: DaemonSetUpdateStrategy,
    /// Seconds a new pod must be ready to count as available.
    #[serde(default, skip_serializing_if = "is_default")]
    pub min_ready_seconds: i32,
    /// Pods created at once when nodes appear (integer or percent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_replicas: Option<IntOrString>,
    /// Number of ControllerRevisions kept (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,
    /// Lifecycle hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Lifecycle>,
}

/// `spec.updateStrategy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSetUpdateStrategy {
    /// RollingUpdate (default) or OnDelete.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// Rolling update parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<RollingUpdateDaemonSet>,
}

/// `spec.updateStrategy.rollingUpdate`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollingUpdateDaemonSet {
    /// Standard (default) or InPlaceIfPossible (`Surging` is deprecated).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub rolling_update_type: String,
    /// Maximum unavailable pods during the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Maximum pods above the desired number during the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrString>,
    /// Only nodes matching this selector are updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::label_selector")]
    pub selector: Option<LabelSelector>,
    /// Pods kept at the old revision (integer or percent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<IntOrString>,
    /// Pause the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
}

/// Observed state of an Advanced DaemonSet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSetStatus {
    /// Nodes running a daemon pod that should.
    #[serde(default)]
    pub current_number_scheduled: i32,
    /// Nodes running a daemon pod that should not.
    #[serde(default)]
    pub number_misscheduled: i32,
    /// Nodes that should run a daemon pod.
    #[serde(default)]
    pub desired_number_scheduled: i32,
    /// Nodes whose daemon pod is ready.
    #[serde(default)]
    pub number_ready: i32,
    /// Generation observed by the controller.
    #[serde(default, skip_serializing_if = "is_default")]
    pub observed_generation: i64,
    /// Nodes running the updated pod.
    #[serde(default)]
    pub updated_number_scheduled: i32,
    /// Nodes whose daemon pod is available.
    #[serde(default, skip_serializing_if = "is_default")]
    pub number_available: i32,
    /// Nodes whose daemon pod is not available.
    #[serde(default, skip_serializing_if = "is_default")]
    pub number_unavailable: i32,
    /// Count of hash collisions of revision names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i32>,
    /// apps/v1 DaemonSet conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<DaemonSetCondition>,
    /// The update revision's hash.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub daemon_set_hash: String,
}
