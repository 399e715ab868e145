//! WorkloadSpread `apps.kruise.io/v1alpha1`, kruise's `apis/apps/v1alpha1/workloadspread_types.go`
//! (v1.9.0): spreads the pods of a workload over subsets of nodes with per-subset limits and
//! patches. Types only: admission is `webhook::validate_workloadspread`, the pod hooks
//! `webhook::spread`, the controller `controller::workloadspread`.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorTerm, PreferredSchedulingTerm, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

use super::is_default;

/// `scheduleStrategy.type`: reschedule pods a subset cannot place.
pub const ADAPTIVE: &str = "Adaptive";
/// `scheduleStrategy.type`: subsets are fixed (the default).
pub const FIXED: &str = "Fixed";

/// Desired state of a WorkloadSpread.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "WorkloadSpread",
    namespaced,
    status = "WorkloadSpreadStatus",
    derive = "PartialEq",
    derive = "Default",
    shortname = "ws",
    doc = "WorkloadSpread is the Schema for the WorkloadSpread API",
    printcolumn(name = "WorkloadName", type_ = "string", json_path = ".spec.targetRef.name"),
    printcolumn(name = "WorkloadKind", type_ = "string", json_path = ".spec.targetRef.kind"),
    printcolumn(
        name = "Adaptive",
        type_ = "boolean",
        json_path = ".spec.scheduleStrategy.type[?(@ == \"Adaptive\")]",
        description = "Whether use the adaptive reschedule strategy"
    ),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["subsets", "targetRef"]))]
pub struct WorkloadSpreadSpec {
    /// The workload whose pods are spread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_ref: Option<TargetReference>,
    /// Only the pods matching this filter are managed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_filter: Option<TargetFilter>,
    /// The subsets, in priority order.
    #[serde(default)]
    pub subsets: Vec<WorkloadSpreadSubset>,
    /// Fixed or Adaptive.
    #[serde(default, skip_serializing_if = "is_default")]
    pub schedule_strategy: WorkloadSpreadScheduleStrategy,
}

/// A workload by apiVersion, kind and name (also PersistentPodState's `targetRef`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["apiVersion", "kind", "name"]))]
pub struct TargetReference {
    /// API version of the workload.
    #[serde(default)]
    pub api_version: String,
    /// Kind of the workload.
    #[serde(default)]
    pub kind: String,
    /// Name of the workload.
    #[serde(default)]
    pub name: String,
}

/// `spec.targetFilter`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetFilter {
    /// Pods managed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::label_selector")]
    pub selector: Option<LabelSelector>,
    /// Paths of the workload's replica counts that count towards the total.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas_path_list: Vec<String>,
}

/// `spec.scheduleStrategy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadScheduleStrategy {
    /// Adaptive, Fixed or "".
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    #[schemars(schema_with = "schedule_strategy_type")]
    pub type_: String,
    /// Parameters of Adaptive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive: Option<AdaptiveWorkloadSpreadStrategy>,
}

/// `+kubebuilder:validation:Enum=Adaptive;Fixed;""` (also UnitedDeployment's).
pub(crate) fn schedule_strategy_type(_: &mut SchemaGenerator) -> Schema {
    crate::apis::schema::string_enum(&[ADAPTIVE, FIXED, ""])
}

/// `scheduleStrategy.adaptive`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdaptiveWorkloadSpreadStrategy {
    /// Skip the scheduling simulation.
    #[serde(default, skip_serializing_if = "is_default")]
    pub disable_simulation_schedule: bool,
    /// Seconds a pending pod waits before it is rescheduled to another subset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reschedule_critical_seconds: Option<i32>,
}

/// One `spec.subsets` entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["name"]))]
pub struct WorkloadSpreadSubset {
    /// Subset name.
    #[serde(default)]
    pub name: String,
    /// Nodes the subset's pods must run on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::node_selector_term")]
    pub required_node_selector_term: Option<NodeSelectorTerm>,
    /// Nodes the subset's pods prefer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::apis::schema::preferred_scheduling_terms")]
    pub preferred_node_selector_terms: Vec<PreferredSchedulingTerm>,
    /// Tolerations added to the subset's pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Maximum pods in the subset (integer or percent); unset means unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_replicas: Option<IntOrString>,
    /// Strategic merge patch applied to the subset's pods. Schemaless, as in kruise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
    pub patch: Option<serde_json::Value>,
}

/// Observed state of a WorkloadSpread.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSpreadStatus {
    /// Generation observed by the controller.
    #[serde(default, skip_serializing_if = "is_default")]
    pub observed_generation: i64,
    /// Per subset state, for the current workload revision.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subset_statuses: Vec<WorkloadSpreadSubsetStatus>,
    /// Per subset state by workload revision.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub versioned_subset_statuses: BTreeMap<String, Vec<WorkloadSpreadSubsetStatus>>,
}

/// One subset's observed state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["missingReplicas", "name", "replicas"]))]
pub struct WorkloadSpreadSubsetStatus {
    /// Subset name.
    #[serde(default)]
    pub name: String,
    /// Pods in the subset.
    #[serde(default)]
    pub replicas: i32,
    /// Schedulable condition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<WorkloadSpreadSubsetCondition>,
    /// Pods the subset may still take (-1: unlimited).
    #[serde(default)]
    pub missing_replicas: i32,
    /// Pods being created in the subset, by name, with the time admitted.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub creating_pods: BTreeMap<String, Time>,
    /// Pods being deleted from the subset, by name, with the time admitted.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub deleting_pods: BTreeMap<String, Time>,
}

/// One subset condition.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["status", "type"]))]
pub struct WorkloadSpreadSubsetCondition {
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
