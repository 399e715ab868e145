//! SidecarSet `apps.kruise.io/v1alpha1` (spec §1.3): cluster-scoped sidecar definitions injected
//! into matching pods at creation.

pub mod v1beta1;

use k8s_openapi::api::core::v1::{Container, LocalObjectReference, ObjectFieldSelector, Volume};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::common::{UpdatePriorityStrategy, UpdateScatterStrategy};
use super::is_default;

/// Desired state of a SidecarSet.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "SidecarSet",
    status = "SidecarSetStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "SidecarSet is the Schema for the sidecarsets API",
    printcolumn(
        name = "MATCHED",
        type_ = "integer",
        json_path = ".status.matchedPods",
        description = "The number of pods matched."
    ),
    printcolumn(
        name = "UPDATED",
        type_ = "integer",
        json_path = ".status.updatedPods",
        description = "The number of pods matched and updated."
    ),
    printcolumn(
        name = "READY",
        type_ = "integer",
        json_path = ".status.readyPods",
        description = "The number of pods matched and ready."
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created."
    )
)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetSpec {
    /// Pod label selector; required and non-empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::label_selector")]
    pub selector: Option<LabelSelector>,
    /// Restrict injection to one namespace (v1alpha1 only).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Label selector over Namespace objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::label_selector")]
    pub namespace_selector: Option<LabelSelector>,
    /// Init containers injected at pod creation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "sidecar_containers")]
    pub init_containers: Vec<SidecarContainer>,
    /// Sidecar containers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "sidecar_containers")]
    pub containers: Vec<SidecarContainer>,
    /// Volumes the sidecars may mount.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::apis::schema::preserve_unknown")]
    pub volumes: Vec<Volume>,
    /// How running pods get new sidecar versions.
    #[serde(default, skip_serializing_if = "is_default")]
    pub update_strategy: SidecarSetUpdateStrategy,
    /// How new pods get sidecars.
    #[serde(default, skip_serializing_if = "is_default")]
    pub injection_strategy: SidecarSetInjectionStrategy,
    /// Image pull secrets merged into the pod.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::apis::schema::local_object_references")]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// Number of ControllerRevisions kept (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,
    /// Pod annotations to patch on injection.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patch_pod_metadata: Vec<SidecarSetPatchPodMetadata>,
}

/// One `patchPodMetadata` entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetPatchPodMetadata {
    /// Annotations to patch.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Retain (default), Overwrite or MergePatchJson.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub patch_policy: String,
}

/// The fields of a [`SidecarContainer`] that are not the core Container's.
const SIDECAR_FIELDS: &[&str] = &[
    "podInjectPolicy",
    "upgradeStrategy",
    "shareVolumePolicy",
    "shareVolumeDevicePolicy",
    "transferEnv",
    "resourcesPolicy",
];

/// kruise's `[]SidecarContainer` schema: each item keeps its core Container part as sent
/// (`x-kubernetes-preserve-unknown-fields`, as kruise's CRD does: newer Kubernetes fields survive)
/// and declares the sidecar fields, so the apiserver types and validates those.
pub fn sidecar_containers(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let full = SidecarContainer::json_schema(generator).to_value();
    let mut properties = serde_json::Map::new();
    for field in SIDECAR_FIELDS {
        if let Some(schema) = full["properties"].get(*field) {
            properties.insert((*field).to_string(), schema.clone());
        }
    }
    schemars::json_schema!({
        "type": "array",
        "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": properties}
    })
}

/// A core Container plus the injection settings of a sidecar.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarContainer {
    /// The container itself (inline).
    #[serde(flatten)]
    pub container: Container,
    /// BeforeAppContainer or AfterAppContainer.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pod_inject_policy: String,
    /// ColdUpgrade or HotUpgrade.
    #[serde(default, skip_serializing_if = "is_default")]
    pub upgrade_strategy: SidecarContainerUpgradeStrategy,
    /// Share the app containers' volume mounts.
    #[serde(default, skip_serializing_if = "is_default")]
    pub share_volume_policy: ShareVolumePolicy,
    /// Share the app containers' volume devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_volume_device_policy: Option<ShareVolumePolicy>,
    /// Env vars copied from app containers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transfer_env: Vec<TransferEnvVar>,
    /// Resources computed from the app containers (kruise v1.9+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_policy: Option<ResourcesPolicy>,
}

fn sum_or_max(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::apis::schema::string_enum(&["sum", "max"])
}

/// `shareVolumePolicy` / `shareVolumeDevicePolicy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShareVolumePolicy {
    /// enabled or disabled.
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub type_: String,
}

/// `upgradeStrategy` of a sidecar container.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarContainerUpgradeStrategy {
    /// ColdUpgrade or HotUpgrade.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub upgrade_type: String,
    /// Image of the idle container of a hot-upgrade pair.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub hot_upgrade_empty_image: String,
}

/// One `transferEnv` entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TransferEnvVar {
    /// Source container by name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source_container_name: String,
    /// Source container name read from the pod's metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_container_name_from: Option<SourceContainerNameSource>,
    /// One env var name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub env_name: String,
    /// Several env var names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_names: Vec<String>,
}

/// `transferEnv[].sourceContainerNameFrom`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceContainerNameSource {
    /// Pod field holding the container name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "atomic_field_selector")]
    pub field_ref: Option<ObjectFieldSelector>,
}

/// `corev1.ObjectFieldSelector` (`+structType=atomic`).
fn atomic_field_selector(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut s = ObjectFieldSelector::json_schema(generator);
    crate::apis::schema::atomic(&mut s);
    s
}

/// `resourcesPolicy` (spec §4.10).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["resourcesExpr", "targetContainersMode"]))]
pub struct ResourcesPolicy {
    /// sum or max.
    #[serde(default)]
    #[schemars(schema_with = "sum_or_max")]
    pub target_containers_mode: String,
    /// Regex over the names of the containers whose resources are aggregated.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub target_containers_name_regex: String,
    /// Expressions over the aggregated resources.
    #[serde(default)]
    pub resources_expr: ResourcesExpr,
}

/// `resourcesPolicy.resourcesExpr`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResourcesExpr {
    /// Limits expressions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<ResourceExprs>,
    /// Requests expressions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<ResourceExprs>,
}

/// cpu and memory expressions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResourceExprs {
    /// CPU expression.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub cpu: String,
    /// Memory expression.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub memory: String,
}

/// `spec.injectionStrategy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetInjectionStrategy {
    /// Stop injecting into new pods.
    #[serde(default, skip_serializing_if = "is_default")]
    pub paused: bool,
    /// Inject a historical revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<SidecarSetInjectRevision>,
}

/// `injectionStrategy.revision`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetInjectRevision {
    /// Revision selected by the custom-version label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_version: Option<String>,
    /// Revision selected by ControllerRevision name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_name: Option<String>,
    /// Always (default) or Partial (an enum in the CRD, as kruise's).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(schema_with = "revision_policy")]
    pub policy: String,
}

/// `+kubebuilder:validation:Enum=Always;Partial`.
fn revision_policy(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::apis::schema::string_enum(&["Always", "Partial"])
}

/// `spec.updateStrategy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetUpdateStrategy {
    /// NotUpdate or RollingUpdate (default).
    #[serde(default, rename = "type", skip_serializing_if = "String::is_empty")]
    pub type_: String,
    /// Pause the rollout.
    #[serde(default, skip_serializing_if = "is_default")]
    pub paused: bool,
    /// Canary subset of pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::label_selector")]
    pub selector: Option<LabelSelector>,
    /// Number or percent of matched pods kept at the old version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<IntOrString>,
    /// Maximum unavailable pods during the rollout (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Update order by priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_strategy: Option<UpdatePriorityStrategy>,
    /// Spread updates over label values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scatter_strategy: UpdateScatterStrategy,
}

/// Observed state of a SidecarSet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SidecarSetStatus {
    /// Generation observed by the controller.
    #[serde(default, skip_serializing_if = "is_default")]
    pub observed_generation: i64,
    /// Pods matched.
    #[serde(default)]
    pub matched_pods: i32,
    /// Pods with the latest sidecars.
    #[serde(default)]
    pub updated_pods: i32,
    /// Matched pods that are ready.
    #[serde(default)]
    pub ready_pods: i32,
    /// Updated pods that are ready.
    #[serde(default, skip_serializing_if = "is_default")]
    pub updated_ready_pods: i32,
    /// Latest ControllerRevision name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub latest_revision: String,
    /// Count of hash collisions of revision names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i32>,
}
