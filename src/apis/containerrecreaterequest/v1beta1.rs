//! ContainerRecreateRequest `apps.kruise.io/v1beta1`, as kruise HEAD serves it
//! (`apis/apps/v1beta1/containerrecreaterequest_types.go`, commit 07169cfa, after v1.9): the
//! v1alpha1 spec with `+kubebuilder:validation` markers (enums, minimums), and a status that
//! carries as typed fields what v1alpha1 keeps in annotations: `containerStatusSnapshot` (the
//! `crr.apps.kruise.io/sync-container-statuses` annotation) and a `PreRecreateGrace` condition
//! (the `crr.apps.kruise.io/unready-acquired` annotation). Our manager and daemon speak v1alpha1,
//! the stored version (see `manifests`); v1beta1 objects reach them through the conversion in
//! `core::conversion::containerrecreaterequest`.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::apis::containerrecreaterequest::ContainerRecreateRequestContainer;
use crate::apis::is_default;

/// Condition type: the controller forced the pod not-ready for `unreadyGracePeriodSeconds`
/// (kruise `ContainerRecreateRequestPreRecreateGraceType`); its `lastTransitionTime` says when.
pub const PRE_RECREATE_GRACE: &str = "PreRecreateGrace";

/// Desired state of a v1beta1 ContainerRecreateRequest.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "apps.kruise.io",
    version = "v1beta1",
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
    /// Containers to recreate (v1alpha1's: kruise's `CRRProbeHandler` has `ProbeHandler`'s fields).
    #[serde(default)]
    pub containers: Vec<ContainerRecreateRequestContainer>,
    /// How the containers are recreated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<ContainerRecreateRequestStrategy>,
    /// Deadline of the whole request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 0))]
    pub active_deadline_seconds: Option<i64>,
    /// Delete the request this long after it completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 0))]
    pub ttl_seconds_after_finished: Option<i32>,
}

/// `spec.strategy`, with kruise HEAD's markers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestStrategy {
    /// Fail (default) or Ignore: whether to go on when one container fails.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(schema_with = "failure_policy")]
    pub failure_policy: String,
    /// Recreate the next container only once the previous one has been recreated.
    #[serde(default, skip_serializing_if = "is_default")]
    pub ordered_recreate: bool,
    /// Kill the container even while the previous one is starting.
    #[serde(default, skip_serializing_if = "is_default")]
    pub force_recreate: bool,
    /// Grace period of the kill (default: the pod's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 0))]
    pub termination_grace_period_seconds: Option<i64>,
    /// How long the pod is kept not-ready before the preStop hook runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("minimum" = 0))]
    pub unready_grace_period_seconds: Option<i64>,
    /// Seconds a recreated container must stay started and ready to count as succeeded.
    #[serde(default, skip_serializing_if = "is_default")]
    #[schemars(extend("minimum" = 0))]
    pub min_started_seconds: i32,
}

/// Observed state of a v1beta1 ContainerRecreateRequest (`phase` not required, unlike kruise's:
/// see `REQUIRED_NOT_KEPT` in tests/crd_schemas.rs).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerRecreateRequestStatus {
    /// Pending, Recreating, Succeeded, Failed or Completed.
    #[serde(default)]
    #[schemars(schema_with = "phase")]
    pub phase: String,
    /// When the request completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// Human-readable details.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Per-container recreation states.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub container_recreate_states: Vec<ContainerRecreateStateV1beta1>,
    /// The pod's container statuses the controller copies for the daemon.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub container_status_snapshot: Vec<SyncContainerStatus>,
    /// Conditions (`PreRecreateGrace`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "conditions")]
    pub conditions: Vec<Condition>,
}

/// Recreation state of one container (v1alpha1's, with the phase enum).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["name", "phase"]))]
pub struct ContainerRecreateStateV1beta1 {
    /// Container name.
    #[serde(default)]
    pub name: String,
    /// Recreation phase of the container.
    #[serde(default)]
    #[schemars(schema_with = "phase")]
    pub phase: String,
    /// Human-readable details.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The container was killed by kruise-daemon.
    #[serde(default, skip_serializing_if = "is_default")]
    pub is_killed: bool,
}

/// One entry of `status.containerStatusSnapshot` (kruise
/// `ContainerRecreateRequestSyncContainerStatus`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = |s: &mut schemars::Schema| crate::apis::schema::require(s, &["name", "ready", "restartCount"]))]
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

fn failure_policy(_: &mut SchemaGenerator) -> Schema {
    crate::apis::schema::string_enum(&["Fail", "Ignore"])
}

fn phase(_: &mut SchemaGenerator) -> Schema {
    crate::apis::schema::string_enum(&["Pending", "Recreating", "Succeeded", "Failed", "Completed"])
}

/// `[]metav1.Condition` as controller-gen writes it (`+listType=map`, `+listMapKey=type`, the
/// markers of metav1.Condition).
fn conditions(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["type"],
        "items": {
            "type": "object",
            "description": "Condition contains details for one aspect of the current state of this API Resource.",
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
            "properties": {
                "lastTransitionTime": {"type": "string", "format": "date-time",
                    "description": "lastTransitionTime is the last time the condition transitioned from one status to another."},
                "message": {"type": "string", "maxLength": 32768,
                    "description": "message is a human readable message indicating details about the transition."},
                "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0,
                    "description": "observedGeneration represents the .metadata.generation that the condition was set based upon."},
                "reason": {"type": "string", "maxLength": 1024, "minLength": 1,
                    "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                    "description": "reason contains a programmatic identifier indicating the reason for the condition's last transition."},
                "status": {"type": "string", "enum": ["True", "False", "Unknown"],
                    "description": "status of the condition, one of True, False, Unknown."},
                "type": {"type": "string", "maxLength": 316,
                    "pattern": "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
                    "description": "type of condition in CamelCase or in foo.example.com/CamelCase."}
            }
        }
    })
}
