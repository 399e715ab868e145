//! ResourceDistribution `apps.kruise.io/v1alpha1` (kruise `apis/apps/v1alpha1/
//! resourcedistribution_types.go`, cluster-scoped, short name `distributor`): copies one Secret or
//! ConfigMap into selected namespaces. Types only: the CRD is installed, no controller of ours
//! reconciles it yet (issue 32 item 3).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::is_default;

/// Desired state of a ResourceDistribution.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "ResourceDistribution",
    status = "ResourceDistributionStatus",
    shortname = "distributor",
    derive = "PartialEq",
    derive = "Default",
    doc = "ResourceDistribution is the Schema for the resourcedistributions API.",
    printcolumn(
        name = "TOTAL",
        type_ = "integer",
        json_path = ".status.desired",
        description = "The desired number of desired distribution and syncs."
    ),
    printcolumn(
        name = "SUCCEED",
        type_ = "integer",
        json_path = ".status.succeeded",
        description = "The number of successful distribution and syncs."
    ),
    printcolumn(
        name = "FAILED",
        type_ = "integer",
        json_path = ".status.failed",
        description = "The number of failed distributions and syncs."
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["resource", "targets"]))]
pub struct ResourceDistributionSpec {
    /// The whole object to distribute (`apiVersion`, `kind`, `metadata`, ...), kept as sent.
    #[serde(default)]
    #[schemars(schema_with = "crate::apis::schema::embedded_resource")]
    pub resource: serde_json::Value,
    /// The namespaces to distribute to.
    #[serde(default)]
    pub targets: ResourceDistributionTargets,
}

/// `spec.targets`: (all ∪ included ∪ selected) minus excluded namespaces.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDistributionTargets {
    /// Every namespace but the forbidden ones (`kube-system`, `kube-public`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub all_namespaces: bool,
    /// Never these namespaces.
    #[serde(default, skip_serializing_if = "is_default")]
    pub excluded_namespaces: ResourceDistributionTargetNamespaces,
    /// These namespaces.
    #[serde(default, skip_serializing_if = "is_default")]
    pub included_namespaces: ResourceDistributionTargetNamespaces,
    /// Namespaces matching this selector.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(schema_with = "crate::apis::schema::label_selector")]
    pub namespace_label_selector: LabelSelector,
}

/// A list of namespace names.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceDistributionTargetNamespaces {
    /// The namespaces.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub list: Vec<ResourceDistributionNamespace>,
}

/// One namespace name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceDistributionNamespace {
    /// Namespace name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
}

/// Observed state of a ResourceDistribution.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDistributionStatus {
    /// Target namespaces.
    #[serde(default, skip_serializing_if = "is_default")]
    pub desired: i32,
    /// Successful distributions.
    #[serde(default, skip_serializing_if = "is_default")]
    pub succeeded: i32,
    /// Failed distributions.
    #[serde(default, skip_serializing_if = "is_default")]
    pub failed: i32,
    /// Generation the status describes.
    #[serde(default, skip_serializing_if = "is_default")]
    pub observed_generation: i64,
    /// Problems met creating, updating and deleting the copies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<ResourceDistributionCondition>,
}

/// One condition of a ResourceDistribution.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["status", "type"]))]
pub struct ResourceDistributionCondition {
    /// ConflictOccurred, NamespaceNotExists, GetResourceFailed, ...
    #[serde(default, rename = "type")]
    pub type_: String,
    /// True, False or Unknown.
    #[serde(default)]
    pub status: String,
    /// Last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// Human-readable reason.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Namespaces that failed (kruise's JSON name is singular).
    #[serde(default, rename = "failedNamespace", skip_serializing_if = "Vec::is_empty")]
    pub failed_namespaces: Vec<String>,
}
