//! PersistentPodState `apps.kruise.io/v1alpha1`, kruise's
//! `apis/apps/v1alpha1/persistent_pod_state_types.go` (v1.9.0): keeps a StatefulSet pod's node
//! topology and annotations across recreation. Types only: the CRD is installed so existing
//! objects stay readable and writable; nothing of ours reconciles it yet.

use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::workloadspread::TargetReference;

/// `persistentPodStateRetentionPolicy`: delete the state when the workload scales down.
pub const WHEN_SCALED: &str = "WhenScaled";
/// `persistentPodStateRetentionPolicy`: delete the state only with the workload.
pub const WHEN_DELETED: &str = "WhenDeleted";

/// Desired state of a PersistentPodState.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "PersistentPodState",
    namespaced,
    status = "PersistentPodStateStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "PersistentPodState is the Schema for the PersistentPodState API"
)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["targetRef"]))]
pub struct PersistentPodStateSpec {
    /// The workload (StatefulSet or Advanced StatefulSet) whose pods' state is kept.
    #[serde(default, rename = "targetRef")]
    pub target_reference: TargetReference,
    /// Pod annotations kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub persistent_pod_annotations: Vec<PersistentPodAnnotation>,
    /// Node topology a recreated pod must keep.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_persistent_topology: Option<NodeTopologyTerm>,
    /// Node topology a recreated pod prefers to keep.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub preferred_persistent_topology: Vec<PreferredTopologyTerm>,
    /// WhenScaled (default) or WhenDeleted.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub persistent_pod_state_retention_policy: String,
}

/// One `preferredPersistentTopology` term.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["preference", "weight"]))]
pub struct PreferredTopologyTerm {
    /// Weight in the range 1-100.
    #[serde(default)]
    pub weight: i32,
    /// The topology keys.
    #[serde(default)]
    pub preference: NodeTopologyTerm,
}

/// Node label keys whose values a recreated pod keeps.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["nodeTopologyKeys"]))]
pub struct NodeTopologyTerm {
    /// Node label keys.
    #[serde(default)]
    pub node_topology_keys: Vec<String>,
}

/// One pod annotation kept.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["key"]))]
pub struct PersistentPodAnnotation {
    /// Annotation key.
    #[serde(default)]
    pub key: String,
}

/// Observed state of a PersistentPodState.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PersistentPodStateStatus {
    /// Generation observed by the controller.
    #[serde(default)]
    pub observed_generation: i64,
    /// State of each pod, by pod name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pod_states: BTreeMap<String, PodState>,
}

/// One pod's kept state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodState {
    /// Node the pod ran on.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub node_name: String,
    /// Values of the topology labels of that node.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_topology_labels: BTreeMap<String, String>,
    /// Values of the kept annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}
