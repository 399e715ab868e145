//! PodProbeMarker `apps.kruise.io/v1alpha1` (kruise `apis/apps/v1alpha1/
//! pod_probe_marker_types.go`): custom container probes whose results kruise-daemon writes to
//! pod conditions, labels and annotations. Types only: validated by `vpodprobemarker.kb.io`,
//! reconciled by `controller::podprobe` (issue 30 item 4).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Probe;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::is_default;

/// Desired state of a PodProbeMarker.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "PodProbeMarker",
    namespaced,
    status = "PodProbeMarkerStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "PodProbeMarker is the Schema for the PodProbeMarker API"
)]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["probes", "selector"]))]
pub struct PodProbeMarkerSpec {
    /// Pods to probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::apis::schema::label_selector")]
    pub selector: Option<LabelSelector>,
    /// The probes.
    #[serde(default)]
    pub probes: Vec<PodContainerProbe>,
}

/// One probe of a container of the selected pods.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["containerName", "name", "probe"]))]
pub struct PodContainerProbe {
    /// Probe name, unique in the pod.
    #[serde(default)]
    pub name: String,
    /// Container probed.
    #[serde(default)]
    pub container_name: String,
    /// The probe (kruise's `ContainerProbeSpec`, a `corev1.Probe` inline).
    #[serde(default)]
    pub probe: Probe,
    /// Labels and annotations patched on the pod for each result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub marker_policy: Vec<ProbeMarkerPolicy>,
    /// Pod condition type the result is written to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pod_condition_type: String,
}

/// What to patch on the pod when a probe reaches `state`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["state"]))]
pub struct ProbeMarkerPolicy {
    /// Succeeded or Failed.
    #[serde(default)]
    pub state: String,
    /// Pod labels to set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Pod annotations to set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// Observed state of a PodProbeMarker.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodProbeMarkerStatus {
    /// Generation the status describes.
    #[serde(default)]
    pub observed_generation: i64,
    /// Pods matched.
    #[serde(default, skip_serializing_if = "is_default")]
    pub matched_pods: i64,
}
