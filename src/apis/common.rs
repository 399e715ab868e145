//! Shared ("pub") types of `apis/apps/pub` and `apis/apps/v1alpha1` used by several workloads
//! (spec §1.0): update priority and scatter strategies, in-place update strategy, lifecycle hooks.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `priorityStrategy`: `weightPriority` XOR `orderPriority`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdatePriorityStrategy {
    /// Priority by the value of a pod label key (higher value first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub order_priority: Vec<UpdatePriorityOrderTerm>,
    /// Priority by weighted label selectors.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub weight_priority: Vec<UpdatePriorityWeightTerm>,
}

/// One `orderPriority` term.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["orderedKey"]))]
pub struct UpdatePriorityOrderTerm {
    /// Pod label key whose integer value orders the pods.
    #[serde(default)]
    pub ordered_key: String,
}

/// One `weightPriority` term.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["matchSelector", "weight"]))]
pub struct UpdatePriorityWeightTerm {
    /// Weight in the range 1-100.
    #[serde(default)]
    pub weight: i32,
    /// Pods matching this selector get the weight.
    #[serde(default)]
    #[schemars(schema_with = "crate::apis::schema::label_selector")]
    pub match_selector: LabelSelector,
}

/// `scatterStrategy`: a list of `{key, value}` pod labels to spread updates over.
pub type UpdateScatterStrategy = Vec<UpdateScatterTerm>;

/// One `scatterStrategy` term.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["key", "value"]))]
pub struct UpdateScatterTerm {
    /// Label key.
    #[serde(default)]
    pub key: String,
    /// Label value.
    #[serde(default)]
    pub value: String,
}

/// `inPlaceUpdateStrategy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InPlaceUpdateStrategy {
    /// Delay between "pod set not-ready" and "images actually patched".
    #[serde(default, skip_serializing_if = "super::is_default")]
    pub grace_period_seconds: i32,
    /// Parallelism of image pre-download (HEAD/v1beta1 field; an annotation in v1alpha1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pre_download_parallelism: Option<IntOrString>,
    /// Timeout of image pre-download (HEAD/v1beta1 field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pre_download_timeout_seconds: Option<i32>,
    /// Updated ready pods required before pre-download starts (HEAD/v1beta1 field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pre_download_min_updated_ready_pods: Option<i32>,
}

/// `lifecycle`: hooks run around deletion, in-place update and creation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Lifecycle {
    /// Hook before a pod is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_delete: Option<LifecycleHook>,
    /// Hook before a pod is updated in place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_place_update: Option<LifecycleHook>,
    /// Hook before a new pod becomes Normal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_normal: Option<LifecycleHook>,
}

/// One lifecycle hook: a pod is "hooked" while it carries any of these labels or finalizers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LifecycleHook {
    /// Labels that hold the pod in the hook.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels_handler: BTreeMap<String, String>,
    /// Finalizers that hold the pod in the hook.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalizers_handler: Vec<String>,
    /// Mark the pod not ready (KruisePodReady=False) while hooked.
    #[serde(default, skip_serializing_if = "super::is_default")]
    pub mark_pod_not_ready: bool,
}

/// Serialises `volumeClaimTemplates` as Go does: a template's `apiVersion` and `kind` are
/// `omitempty` in Go and unset in manifests, so they are not written (k8s-openapi always writes
/// them for a `PersistentVolumeClaim`). A request that has them keeps them: patches lay our
/// output over the request object.
pub(crate) fn serialize_claim_templates<S: serde::Serializer>(
    templates: &[k8s_openapi::api::core::v1::PersistentVolumeClaim],
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::{Error, SerializeSeq};
    let mut seq = serializer.serialize_seq(Some(templates.len()))?;
    for t in templates {
        let mut v = serde_json::to_value(t).map_err(S::Error::custom)?;
        if let Some(map) = v.as_object_mut() {
            map.remove("apiVersion");
            map.remove("kind");
        }
        seq.serialize_element(&v)?;
    }
    seq.end()
}
