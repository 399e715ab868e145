//! PodUnavailableBudget `policy.kruise.io/v1beta1`, as kruise HEAD serves it (`apis/policy/v1beta1`,
//! PR #2397, after v1.9): v1alpha1's fields, with the alpha annotations promoted to typed fields
//! (`protectOperations` for `kruise.io/pub-protect-operations`, `protectTotalReplicas` for
//! `pub.kruise.io/protect-total-replicas`) and a new `ignoredPodSelector` (pods that always
//! bypass the budget). Served only by the opt-in CRD (see `manifests`); conversion in
//! `core::conversion::podunavailablebudget`. The status is v1alpha1's.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::TargetReference;

/// Desired state of a v1beta1 PodUnavailableBudget.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "policy.kruise.io",
    version = "v1beta1",
    kind = "PodUnavailableBudget",
    namespaced,
    status = "super::PodUnavailableBudgetStatus",
    shortname = "pub",
    derive = "PartialEq",
    derive = "Default",
    doc = "PodUnavailableBudget is the Schema for the podunavailablebudgets API.",
    printcolumn(
        name = "Allowed",
        type_ = "integer",
        json_path = ".status.unavailableAllowed",
        description = "UnavailableAllowed number of pod unavailable that are currently allowed"
    ),
    printcolumn(
        name = "Current",
        type_ = "integer",
        json_path = ".status.currentAvailable",
        description = "CurrentAvailable current number of available pods"
    ),
    printcolumn(
        name = "Desired",
        type_ = "integer",
        json_path = ".status.desiredAvailable",
        description = "DesiredAvailable minimum desired number of available pods"
    ),
    printcolumn(
        name = "Total",
        type_ = "integer",
        json_path = ".status.totalReplicas",
        description = "TotalReplicas total number of pods counted by this budget"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct PodUnavailableBudgetSpec {
    /// Pods covered by the budget (or `targetRef`, which wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::label_selector")]
    pub selector: Option<LabelSelector>,
    /// The workload whose pods are covered.
    #[serde(default, rename = "targetRef", skip_serializing_if = "Option::is_none")]
    pub target_reference: Option<TargetReference>,
    /// Pods that may be unavailable (wins over `minAvailable`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Pods that must stay available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<IntOrString>,
    /// The operations the budget guards; DELETE, UPDATE and EVICT when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protect_operations: Vec<PubOperation>,
    /// The expected replicas, for pods no workload with a scale subresource manages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "positive_int32")]
    pub protect_total_replicas: Option<i32>,
    /// Pods that always bypass the budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::label_selector")]
    pub ignored_pod_selector: Option<LabelSelector>,
}

/// `+kubebuilder:validation:Minimum=1` on an int32 (schemars' `range` writes `1.0`).
fn positive_int32(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "integer", "format": "int32", "minimum": 1})
}

/// A pod operation a budget may guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PubOperation {
    /// Pod deletion.
    #[serde(rename = "DELETE")]
    Delete,
    /// A pod update that may make it unavailable.
    #[serde(rename = "UPDATE")]
    Update,
    /// Eviction (`pods/eviction`).
    #[serde(rename = "EVICT")]
    Evict,
    /// An in-place resize.
    #[serde(rename = "RESIZE")]
    Resize,
}
