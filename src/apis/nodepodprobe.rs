//! NodePodProbe `apps.kruise.io/v1alpha1` (kruise `apis/apps/v1alpha1/node_pod_probe_types.go`,
//! cluster-scoped, one per node): the PodProbeMarker probes kruise-daemon runs on a node, and
//! their results. Types only: written by `controller::podprobe` (spec) and the daemon's
//! `daemon::podprobe` (status), issue 30 item 4.

use k8s_openapi::api::core::v1::Probe;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Desired state of a NodePodProbe.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "NodePodProbe",
    status = "NodePodProbeStatus",
    derive = "PartialEq",
    derive = "Default",
    doc = "NodePodProbe is the Schema for the NodePodProbe API"
)]
#[serde(rename_all = "camelCase")]
pub struct NodePodProbeSpec {
    /// The probes of each pod on the node.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_probes: Vec<PodProbe>,
}

/// The probes of one pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["IP", "name", "namespace", "uid"]))]
pub struct PodProbe {
    /// Pod name.
    #[serde(default)]
    pub name: String,
    /// Pod namespace.
    #[serde(default)]
    pub namespace: String,
    /// Pod UID.
    #[serde(default)]
    pub uid: String,
    /// Pod IP (kruise's JSON name is `IP`).
    #[serde(default, rename = "IP")]
    pub ip: String,
    /// The probes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<ContainerProbe>,
}

/// One probe of one container.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["containerName", "name", "probe"]))]
pub struct ContainerProbe {
    /// `<podProbeMarker name>#<probe name>`.
    #[serde(default)]
    pub name: String,
    /// Container probed.
    #[serde(default)]
    pub container_name: String,
    /// The probe (kruise's `ContainerProbeSpec`, a `corev1.Probe` inline).
    #[serde(default)]
    pub probe: Probe,
}

/// Observed state of a NodePodProbe.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodePodProbeStatus {
    /// Results of each pod's probes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pod_probe_statuses: Vec<PodProbeStatus>,
}

/// Results of one pod's probes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["name", "namespace", "uid"]))]
pub struct PodProbeStatus {
    /// Pod name.
    #[serde(default)]
    pub name: String,
    /// Pod namespace.
    #[serde(default)]
    pub namespace: String,
    /// Pod UID.
    #[serde(default)]
    pub uid: String,
    /// Result of each probe.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probe_states: Vec<ContainerProbeState>,
}

/// Result of one probe.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["name", "state"]))]
pub struct ContainerProbeState {
    /// `<podProbeMarker name>#<probe name>`.
    #[serde(default)]
    pub name: String,
    /// Succeeded, Failed or Unknown.
    #[serde(default)]
    pub state: String,
    /// Last probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_probe_time: Option<Time>,
    /// Last change of state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// The probe's output (succeeded) or error (failed).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
}
