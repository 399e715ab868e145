//! UnitedDeployment `apps.kruise.io/v1alpha1`, kruise's
//! `apis/apps/v1alpha1/uniteddeployment_types.go` (v1.9.0): one workload template (StatefulSet,
//! Advanced StatefulSet, CloneSet or Deployment) spread over subsets of nodes. Admitted by the
//! UnitedDeployment webhooks and reconciled by `controller/uniteddeployment.rs` (issue 34).
//!
//! The Advanced StatefulSet and CloneSet templates are our own specs (kruise embeds its
//! `v1beta1.StatefulSetSpec` and `v1alpha1.CloneSetSpec`); the apps/v1 templates and every
//! template's metadata are schemaless, as in kruise.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DeploymentSpec, StatefulSetSpec};
use k8s_openapi::api::core::v1::{NodeSelectorTerm, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::is_default;

/// `updateStrategy.type`: subsets are updated by `manualUpdate.partitions`.
pub const MANUAL: &str = "Manual";

/// Desired state of a UnitedDeployment.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "UnitedDeployment",
    namespaced,
    status = "UnitedDeploymentStatus",
    derive = "PartialEq",
    derive = "Default",
    shortname = "ud",
    doc = "UnitedDeployment is the Schema for the uniteddeployments API",
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
        description = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["selector"]))]
pub struct UnitedDeploymentSpec {
    /// Desired number of pods over all subsets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Label query over pods. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::label_selector")]
    pub selector: Option<LabelSelector>,
    /// The workload each subset runs (one of the four).
    #[serde(default, skip_serializing_if = "is_default")]
    pub template: SubsetTemplate,
    /// The subsets.
    #[serde(default, skip_serializing_if = "is_default")]
    pub topology: Topology,
    /// How subsets are updated.
    #[serde(default, skip_serializing_if = "is_default")]
    pub update_strategy: UnitedDeploymentUpdateStrategy,
    /// Number of ControllerRevisions kept (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,
}

/// `spec.template`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubsetTemplate {
    /// An apps/v1 StatefulSet per subset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stateful_set_template: Option<StatefulSetTemplateSpec>,
    /// An Advanced StatefulSet per subset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advanced_stateful_set_template: Option<AdvancedStatefulSetTemplateSpec>,
    /// A CloneSet per subset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clone_set_template: Option<CloneSetTemplateSpec>,
    /// An apps/v1 Deployment per subset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment_template: Option<DeploymentTemplateSpec>,
}

/// `template.statefulSetTemplate`: metadata and spec schemaless.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["spec"]))]
pub struct StatefulSetTemplateSpec {
    /// Metadata of the workloads created.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
    pub metadata: ObjectMeta,
    /// Spec of the workloads created.
    #[serde(default)]
    #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
    pub spec: StatefulSetSpec,
}

/// `template.advancedStatefulSetTemplate`: metadata schemaless.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["spec"]))]
pub struct AdvancedStatefulSetTemplateSpec {
    /// Metadata of the workloads created.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
    pub metadata: ObjectMeta,
    /// Spec of the workloads created (Advanced StatefulSet v1beta1).
    #[serde(default)]
    pub spec: crate::apis::statefulset::v1beta1::StatefulSetSpec,
}

/// `template.cloneSetTemplate`: metadata schemaless.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["spec"]))]
pub struct CloneSetTemplateSpec {
    /// Metadata of the workloads created.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
    pub metadata: ObjectMeta,
    /// Spec of the workloads created (CloneSet v1alpha1).
    #[serde(default)]
    pub spec: crate::apis::CloneSetSpec,
}

/// `template.deploymentTemplate`: metadata and spec schemaless.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["spec"]))]
pub struct DeploymentTemplateSpec {
    /// Metadata of the workloads created.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
    pub metadata: ObjectMeta,
    /// Spec of the workloads created.
    #[serde(default)]
    #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
    pub spec: DeploymentSpec,
}

/// `spec.updateStrategy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnitedDeploymentUpdateStrategy {
    /// Manual (the only type).
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// Partitions per subset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual_update: Option<ManualUpdate>,
}

/// `updateStrategy.manualUpdate`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ManualUpdate {
    /// Partition of each subset, by subset name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub partitions: BTreeMap<String, i32>,
}

/// `spec.topology`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Topology {
    /// The subsets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subsets: Vec<Subset>,
    /// Fixed or Adaptive.
    #[serde(default, skip_serializing_if = "is_default")]
    pub schedule_strategy: UnitedDeploymentScheduleStrategy,
}

/// One `topology.subsets` entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["name"]))]
pub struct Subset {
    /// Subset name.
    #[serde(default)]
    pub name: String,
    /// Nodes of the subset.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(schema_with = "crate::apis::schema::node_selector_term")]
    pub node_selector_term: NodeSelectorTerm,
    /// Tolerations added to the subset's pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Pods in the subset (integer or percent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<IntOrString>,
    /// Minimum pods in the subset (integer or percent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_replicas: Option<IntOrString>,
    /// Maximum pods in the subset (integer or percent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_replicas: Option<IntOrString>,
    /// Strategic merge patch applied to the subset's workload. Schemaless, as in kruise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
    pub patch: Option<serde_json::Value>,
}

/// `topology.scheduleStrategy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnitedDeploymentScheduleStrategy {
    /// Adaptive, Fixed or "".
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    #[schemars(schema_with = "crate::apis::workloadspread::schedule_strategy_type")]
    pub type_: String,
    /// Parameters of Adaptive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<AdaptiveUnitedDeploymentStrategy>,
}

/// `scheduleStrategy.adaptive`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdaptiveUnitedDeploymentStrategy {
    /// Seconds a pending pod waits before it is rescheduled to another subset (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reschedule_critical_seconds: Option<i32>,
    /// Seconds a subset stays unschedulable once marked (default 300).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unschedulable_duration: Option<i32>,
    /// Keep the pods of an unschedulable subset instead of deleting them.
    #[serde(default, skip_serializing_if = "is_default")]
    pub reserve_unschedulable_pods: bool,
}

/// Observed state of a UnitedDeployment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnitedDeploymentStatus {
    /// Generation observed by the controller.
    #[serde(default, skip_serializing_if = "is_default")]
    pub observed_generation: i64,
    /// Ready pods.
    #[serde(default, skip_serializing_if = "is_default")]
    pub ready_replicas: i32,
    /// Pods.
    #[serde(default)]
    pub replicas: i32,
    /// Pods at the update revision.
    #[serde(default)]
    pub updated_replicas: i32,
    /// Pods kept in unschedulable subsets.
    #[serde(default, skip_serializing_if = "is_default")]
    pub reserved_pods: i32,
    /// Ready pods at the update revision.
    #[serde(default, skip_serializing_if = "is_default")]
    pub updated_ready_replicas: i32,
    /// Count of hash collisions of revision names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i32>,
    /// Current revision.
    #[serde(default)]
    pub current_revision: String,
    /// Replicas of each subset, by subset name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub subset_replicas: BTreeMap<String, i32>,
    /// State of each subset.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subset_statuses: Vec<UnitedDeploymentSubsetStatus>,
    /// SubsetProvisioned, SubsetUpdated, SubsetFailure and UnitedDeploymentUpdated conditions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<UnitedDeploymentCondition>,
    /// Update revision and the partitions applied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_status: Option<UpdateStatus>,
    /// The selector as a label-selector string (scale subresource).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label_selector: String,
}

/// One UnitedDeployment condition (every field optional in kruise's schema).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnitedDeploymentCondition {
    /// Condition type.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// True, False or Unknown.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status: String,
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

/// `status.updateStatus`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateStatus {
    /// The update revision.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub updated_revision: String,
    /// Partition of each subset, by subset name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub current_partitions: BTreeMap<String, i32>,
}

/// One subset's observed state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnitedDeploymentSubsetStatus {
    /// Subset name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Pods.
    #[serde(default, skip_serializing_if = "is_default")]
    pub replicas: i32,
    /// Ready pods.
    #[serde(default, skip_serializing_if = "is_default")]
    pub ready_replicas: i32,
    /// Partition applied.
    #[serde(default, skip_serializing_if = "is_default")]
    pub partition: i32,
    /// Pods kept while the subset is unschedulable.
    #[serde(default, skip_serializing_if = "is_default")]
    pub reserved_pods: i32,
    /// Schedulable condition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<UnitedDeploymentSubsetCondition>,
}

/// One subset condition.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["status", "type"]))]
pub struct UnitedDeploymentSubsetCondition {
    /// Schedulable.
    #[serde(default, rename = "type")]
    pub type_: String,
    /// True, False or Unknown.
    #[serde(default)]
    pub status: String,
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
