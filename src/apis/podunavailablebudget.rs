//! PodUnavailableBudget `policy.kruise.io/v1alpha1` (kruise `apis/policy/v1alpha1/
//! podunavailablebudget_types.go`, short name `pub`): how many selected pods may be unavailable
//! at once, enforced on pod deletion, eviction and update. Types only: validated by
//! `webhook::validate_pub` (spec §2.6), enforced by `webhook::validate_pod`, its status written
//! by `controller::podunavailablebudget`; the decisions are in `core::budget`. kruise HEAD's
//! [`v1beta1`] is served by the opt-in CRD; every decision is made on this model.

pub mod v1beta1;

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API group of PodUnavailableBudget.
pub const GROUP: &str = "policy.kruise.io";

/// Desired state of a PodUnavailableBudget.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "policy.kruise.io",
    version = "v1alpha1",
    kind = "PodUnavailableBudget",
    namespaced,
    status = "PodUnavailableBudgetStatus",
    shortname = "pub",
    derive = "PartialEq",
    derive = "Default",
    doc = "PodUnavailableBudget is the Schema for the podunavailablebudgets API",
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
    /// v1beta1's `spec.ignoredPodSelector`, which v1alpha1 cannot spell: held in memory only,
    /// when the view read the budget at v1beta1 (`cluster::snapshot`); never serialized.
    #[serde(skip)]
    pub ignored_pod_selector: Option<LabelSelector>,
}

/// `spec.targetRef`: a workload by apiVersion, kind and name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetReference {
    /// API version of the workload.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Kind of the workload.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Name of the workload.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// Observed state of a PodUnavailableBudget.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodUnavailableBudgetStatus {
    /// Generation the status describes.
    #[serde(default)]
    pub observed_generation: i64,
    /// Pods deleted or evicted through the webhook, not yet seen gone.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub disrupted_pods: BTreeMap<String, Time>,
    /// Pods updated in place through the webhook, not yet available again.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unavailable_pods: BTreeMap<String, Time>,
    /// Pods that may become unavailable now.
    #[serde(default)]
    pub unavailable_allowed: i32,
    /// Pods available now.
    #[serde(default)]
    pub current_available: i32,
    /// Pods that must stay available.
    #[serde(default)]
    pub desired_available: i32,
    /// Pods counted by the budget.
    #[serde(default)]
    pub total_replicas: i32,
}
