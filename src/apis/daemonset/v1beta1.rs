//! Advanced DaemonSet `apps.kruise.io/v1beta1`, kruise v1.9.0's `apis/apps/v1beta1/daemonset_types.go`:
//! v1alpha1's shape but for `spec.scaleStrategy.partitionedScaling` (v1alpha1: the
//! `daemonset.kruise.io/progressive-create-pod` annotation), `status.updateRevision` (v1alpha1:
//! `status.daemonSetHash`) and no deprecated `Surging` rolling-update type. The storage version,
//! as in kruise v1.9; served beside v1alpha1 through our `/convert` webhook, conversion in
//! `core::conversion::daemonset`.

use k8s_openapi::api::apps::v1::DaemonSetCondition;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use super::{DaemonSetUpdateStrategy, RollingUpdateDaemonSet};
use crate::apis::common::Lifecycle;
use crate::apis::is_default;

/// Desired state of a v1beta1 Advanced DaemonSet.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
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
    /// Scale behaviour (v1alpha1: the `daemonset.kruise.io/progressive-create-pod` annotation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_strategy: Option<DaemonSetScaleStrategy>,
}

/// `spec.scaleStrategy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DaemonSetScaleStrategy {
    /// Daemon pods created on new nodes are held back by `rollingUpdate.partition` too.
    #[serde(default, skip_serializing_if = "is_default")]
    pub partitioned_scaling: bool,
}

/// Observed state of a v1beta1 Advanced DaemonSet.
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
    /// The update revision's name (v1alpha1: `daemonSetHash`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub update_revision: String,
}
