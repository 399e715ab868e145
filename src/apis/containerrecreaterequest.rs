//! ContainerRecreateRequest `apps.kruise.io/v1alpha1` (kruise `apis/apps/v1alpha1/
//! containerrecreaterequest_types.go`, short name `crr`): asks kruise-daemon to recreate some
//! containers of one pod. The webhook is `webhook::mutate_containerrecreaterequest`, the manager's
//! controller `controller::containerrecreaterequest`, the node's executor `daemon::crr`, their
//! decisions `core::crr` (issue 30 item 1). kruise HEAD's v1beta1 is [`v1beta1`].

pub mod v1beta1;

use k8s_openapi::api::core::v1::{ContainerPort, ExecAction, HTTPGetAction, TCPSocketAction};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::is_default;

/// Label: the uid of the pod (kruise `ContainerRecreateRequestPodUIDKey`).
pub const POD_UID_KEY: &str = "crr.apps.kruise.io/pod-uid";
/// Label: the pod's node (kruise `ContainerRecreateRequestNodeNameKey`); each daemon watches its own.
pub const NODE_NAME_KEY: &str = "crr.apps.kruise.io/node-name";
/// Label `"true"` while the request is not finished (kruise `ContainerRecreateRequestActiveKey`).
pub const ACTIVE_KEY: &str = "crr.apps.kruise.io/active";
/// Annotation (RFC 3339) and finalizer: the pod was marked not ready for the request (kruise
/// `ContainerRecreateRequestUnreadyAcquiredKey`).
pub const UNREADY_ACQUIRED_KEY: &str = "crr.apps.kruise.io/unready-acquired";
/// Annotation: the pod's container statuses the manager copies for the daemon (kruise
/// `ContainerRecreateRequestSyncContainerStatusesKey`).
pub const SYNC_CONTAINER_STATUSES_KEY: &str = "crr.apps.kruise.io/sync-container-statuses";

/// Phase `Pending`.
pub const PHASE_PENDING: &str = "Pending";
/// Phase `Recreating`.
pub const PHASE_RECREATING: &str = "Recreating";
/// Phase `Succeeded` (of one container).
pub const PHASE_SUCCEEDED: &str = "Succeeded";
/// Phase `Failed` (of one container).
pub const PHASE_FAILED: &str = "Failed";
/// Phase `Completed` (of the request, whatever the containers' outcome).
pub const PHASE_COMPLETED: &str = "Completed";
/// `failurePolicy: Fail`.
pub const FAILURE_POLICY_FAIL: &str = "Fail";
/// `failurePolicy: Ignore`.
pub const FAILURE_POLICY_IGNORE: &str = "Ignore";

/// One entry of the [`SYNC_CONTAINER_STATUSES_KEY`] annotation (kruise
/// `ContainerRecreateRequestSyncContainerStatus`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncContainerStatus {
    /// Container name.
    #[serde(default)]
    pub name: String,
    /// The container is ready.
    #[serde(default)]
    pub ready: bool,
    /// Its restart count.
    #[serde(default)]
    pub restart_count: i32,
    /// Its id (`containerd://...`).
    #[serde(rename = "containerID", default, skip_serializing_if = "String::is_empty")]
    pub container_id: String,
}

/// Desired state of a ContainerRecreateRequest.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1alpha1",
    kind = "ContainerRecreateRequest",
    namespaced,
    status = "ContainerRecreateRequestStatus",
    shortname = "crr",
    derive = "PartialEq",
    derive = "Default",
    doc = "ContainerRecreateRequest is the Schema for the containerrecreaterequests API",
    printcolumn(
        name = "PHASE",
        type_ = "string",
        json_path = ".status.phase",
        description = "Phase of this ContainerRecreateRequest."
    ),
    printcolumn(
        name = "POD",
        type_ = "string",
        json_path = ".spec.podName",
        description = "Pod name of this ContainerRecreateRequest."
    ),
    printcolumn(
        name = "NODE",
        type_ = "string",
        json_path = ".metadata.labels.crr\\.apps\\.kruise\\.io/node-name",
        description = "Pod name of this ContainerRecreateRequest."
    ),
    printcolumn(
        name = "AGE",
        type_ = "date",
        json_path = ".metadata.creationTimestamp",
        description = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC."
    )
)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["containers", "podName"]))]
pub struct ContainerRecreateRequestSpec {
    /// Name of the pod whose containers are recreated.
    #[serde(default)]
    pub pod_name: String,
    /// Containers to recreate.
    #[serde(default)]
    pub containers: Vec<ContainerRecreateRequestContainer>,
    /// How the containers are recreated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<ContainerRecreateRequestStrategy>,
    /// Deadline of the whole request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
    /// Delete the request this long after it completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
}

/// One container to recreate; everything but the name is filled in by kruise's webhook.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["name"]))]
pub struct ContainerRecreateRequestContainer {
    /// Container name (of `pod.spec.containers`).
    #[serde(default)]
    pub name: String,
    /// The container's preStop hook, copied from the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_stop: Option<ProbeHandler>,
    /// The container's ports, copied from the pod.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ContainerPort>,
    /// The container's status when the request was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_context: Option<ContainerRecreateRequestContainerContext>,
}

/// kruise's `ProbeHandler`: exec, HTTP GET or TCP socket.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProbeHandler {
    /// Command to run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecAction>,
    /// HTTP request to send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_get: Option<HTTPGetAction>,
    /// TCP port to open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_socket: Option<TCPSocketAction>,
}

/// `statusContext`: the container as the request found it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["containerID", "restartCount"]))]
pub struct ContainerRecreateRequestContainerContext {
    /// Container ID (`containerd://...`).
    #[serde(default, rename = "containerID")]
    pub container_id: String,
    /// Restart count at creation.
    #[serde(default)]
    pub restart_count: i32,
}

/// `spec.strategy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestStrategy {
    /// Fail (default) or Ignore: whether to go on when one container fails.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub failure_policy: String,
    /// Recreate the next container only once the previous one has been recreated.
    #[serde(default, skip_serializing_if = "is_default")]
    pub ordered_recreate: bool,
    /// Kill the container even while the previous one is starting.
    #[serde(default, skip_serializing_if = "is_default")]
    pub force_recreate: bool,
    /// Grace period of the kill (default: the pod's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,
    /// How long the pod is kept not-ready before the preStop hook runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unready_grace_period_seconds: Option<i64>,
    /// Seconds a recreated container must stay started and ready to count as succeeded.
    #[serde(default, skip_serializing_if = "is_default")]
    pub min_started_seconds: i32,
}

/// Observed state of a ContainerRecreateRequest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestStatus {
    /// Pending, Recreating, Succeeded, Failed or Completed.
    #[serde(default)]
    pub phase: String,
    /// When the request completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// Human-readable details.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Per-container recreation states.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub container_recreate_states: Vec<ContainerRecreateRequestContainerRecreateState>,
}

/// Recreation state of one container.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["name", "phase"]))]
pub struct ContainerRecreateRequestContainerRecreateState {
    /// Container name.
    #[serde(default)]
    pub name: String,
    /// Recreation phase of the container.
    #[serde(default)]
    pub phase: String,
    /// Human-readable details.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The container was killed by kruise-daemon.
    #[serde(default, skip_serializing_if = "is_default")]
    pub is_killed: bool,
}
