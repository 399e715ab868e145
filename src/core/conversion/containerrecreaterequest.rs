//! ContainerRecreateRequest v1alpha1 <-> v1beta1 (issue 30 item 1), as kruise HEAD's
//! `apis/apps/v1alpha1/containerrecreaterequest_conversion.go`: the spec and the status fields
//! both versions have stay where they are; what v1alpha1 keeps in annotations v1beta1 keeps in
//! its status:
//! - the `crr.apps.kruise.io/sync-container-statuses` annotation (a JSON list) is
//!   `status.containerStatusSnapshot`; an annotation that is not such a list is not promoted
//!   (kruise logs it and goes on);
//! - the `crr.apps.kruise.io/unready-acquired` annotation (an RFC 3339 time) is a `True`
//!   `PreRecreateGrace` condition whose `lastTransitionTime` is that time (UTC, whole seconds,
//!   as metav1.Time writes it); an unparsable time is not promoted.
//!
//! The annotations stay on the v1beta1 object (kruise copies the metadata); back to v1alpha1,
//! a snapshot present in v1beta1 rewrites its annotation, and the first `True` `PreRecreateGrace`
//! condition rewrites the time, as kruise's `ConvertFrom` does. Where we differ on purpose: an
//! object without a status gets none (kruise's typed status always writes `phase: ""`).

use k8s_openapi::jiff::Timestamp;
use serde_json::{Map, Value, json};

use super::{child, meta_map, meta_value};
use crate::apis::containerrecreaterequest::v1beta1::{PRE_RECREATE_GRACE, SyncContainerStatus};
use crate::apis::containerrecreaterequest::{SYNC_CONTAINER_STATUSES_KEY, UNREADY_ACQUIRED_KEY};

/// The message of the promoted condition (kruise's).
pub const PRE_RECREATE_GRACE_MESSAGE: &str = "Pod has been forced to not-ready for unreadyGracePeriodSeconds drain";

/// v1alpha1 -> v1beta1 (kruise `ConvertTo`).
pub fn to_v1beta1(object: &mut Map<String, Value>) {
    let snapshot = meta_value(object, "annotations", SYNC_CONTAINER_STATUSES_KEY)
        .filter(|raw| !raw.is_empty())
        .and_then(|raw| serde_json::from_str::<Option<Vec<SyncContainerStatus>>>(raw).ok())
        .map(Option::unwrap_or_default);
    let acquired = meta_value(object, "annotations", UNREADY_ACQUIRED_KEY)
        .filter(|raw| !raw.is_empty())
        .and_then(|raw| raw.parse::<Timestamp>().ok());
    let had_status = object.get("status").is_some_and(Value::is_object);
    if !had_status && snapshot.as_ref().is_none_or(Vec::is_empty) && acquired.is_none() {
        return;
    }
    let Some(status) = child(object, "status") else { return };
    // v1alpha1 has no conditions: kruise's typed status starts from none.
    status.remove("conditions");
    status.remove("containerStatusSnapshot");
    if let Some(list) = snapshot.filter(|l| !l.is_empty()) {
        status.insert("containerStatusSnapshot".into(), json!(list));
    }
    if let Some(at) = acquired {
        status.insert(
            "conditions".into(),
            json!([{
                "type": PRE_RECREATE_GRACE,
                "status": "True",
                "lastTransitionTime": whole_seconds(at),
                "reason": PRE_RECREATE_GRACE,
                "message": PRE_RECREATE_GRACE_MESSAGE,
            }]),
        );
    }
}

/// v1beta1 -> v1alpha1 (kruise `ConvertFrom`).
pub fn to_v1alpha1(object: &mut Map<String, Value>) {
    let Some(status) = object.get_mut("status").and_then(Value::as_object_mut) else { return };
    let snapshot = status.remove("containerStatusSnapshot");
    let conditions = status.remove("conditions");
    if let Some(list) =
        snapshot.filter(Value::is_array).and_then(|v| serde_json::from_value::<Vec<SyncContainerStatus>>(v).ok())
    {
        // The v1alpha1 annotation's shape (`core::crr` reads it).
        let entries: Vec<crate::apis::containerrecreaterequest::SyncContainerStatus> = list
            .into_iter()
            .map(|s| crate::apis::containerrecreaterequest::SyncContainerStatus {
                name: s.name,
                ready: s.ready,
                restart_count: s.restart_count,
                container_id: s.container_id,
            })
            .collect();
        if let (Ok(text), Some(annotations)) = (serde_json::to_string(&entries), meta_map(object, "annotations")) {
            annotations.insert(SYNC_CONTAINER_STATUSES_KEY.into(), Value::String(text));
        }
    }
    let grace = conditions.as_ref().and_then(Value::as_array).and_then(|list| {
        list.iter().find(|c| {
            c.get("type").and_then(Value::as_str) == Some(PRE_RECREATE_GRACE)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
    });
    if let Some(at) = grace
        .and_then(|c| c.get("lastTransitionTime"))
        .and_then(Value::as_str)
        .and_then(|t| t.parse::<Timestamp>().ok())
        && let Some(annotations) = meta_map(object, "annotations")
    {
        annotations.insert(UNREADY_ACQUIRED_KEY.into(), Value::String(whole_seconds(at)));
    }
}

/// Go's `t.UTC().Format(time.RFC3339)`: UTC, whole seconds (truncated).
fn whole_seconds(at: Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::{V1ALPHA1, V1BETA1, convert};
    use super::*;

    fn crr(version: &str, annotations: Value, status: Option<Value>) -> Value {
        let mut o = json!({"apiVersion": version, "kind": "ContainerRecreateRequest",
            "metadata": {"name": "r", "namespace": "ns", "annotations": annotations},
            "spec": {"podName": "p", "containers": [{"name": "a", "preStop": {"httpGet": {"port": 80, "path": "/q"}},
                     "statusContext": {"containerID": "containerd://1", "restartCount": 2}}],
                     "strategy": {"failurePolicy": "Ignore", "orderedRecreate": true, "minStartedSeconds": 3},
                     "activeDeadlineSeconds": 60, "ttlSecondsAfterFinished": 10}});
        if let Some(s) = status {
            o["status"] = s;
        }
        o
    }

    const SYNC: &str = r#"[{"name":"a","ready":true,"restartCount":3,"containerID":"containerd://2"}]"#;

    #[test]
    fn annotations_become_the_v1beta1_status_and_come_back() {
        let alpha = crr(
            V1ALPHA1,
            json!({SYNC_CONTAINER_STATUSES_KEY: SYNC, UNREADY_ACQUIRED_KEY: "2026-01-02T03:04:05+02:00", "x": "y"}),
            Some(json!({"phase": "Recreating", "containerRecreateStates": [{"name": "a", "phase": "Pending"}]})),
        );
        let beta = convert(0, &alpha, V1BETA1).unwrap();
        assert_eq!(beta["apiVersion"], V1BETA1);
        assert_eq!(beta["spec"], alpha["spec"]);
        assert_eq!(beta["metadata"], alpha["metadata"], "kruise copies the metadata");
        assert_eq!(beta["status"]["phase"], "Recreating");
        assert_eq!(beta["status"]["containerRecreateStates"], alpha["status"]["containerRecreateStates"]);
        assert_eq!(
            beta["status"]["containerStatusSnapshot"],
            json!([{"name": "a", "ready": true, "restartCount": 3, "containerID": "containerd://2"}])
        );
        assert_eq!(
            beta["status"]["conditions"],
            json!([{"type": "PreRecreateGrace", "status": "True", "lastTransitionTime": "2026-01-02T01:04:05Z",
                    "reason": "PreRecreateGrace", "message": PRE_RECREATE_GRACE_MESSAGE}])
        );
        let back = convert(0, &beta, V1ALPHA1).unwrap();
        assert_eq!(back["spec"], alpha["spec"]);
        assert_eq!(back["status"], alpha["status"]);
        assert_eq!(back["metadata"]["annotations"][SYNC_CONTAINER_STATUSES_KEY], SYNC);
        assert_eq!(back["metadata"]["annotations"][UNREADY_ACQUIRED_KEY], "2026-01-02T01:04:05Z", "UTC, as kruise");
        assert_eq!(back["metadata"]["annotations"]["x"], "y");
    }

    #[test]
    fn a_v1beta1_status_rewrites_the_v1alpha1_annotations() {
        let beta = crr(
            V1BETA1,
            json!({SYNC_CONTAINER_STATUSES_KEY: "stale"}),
            Some(json!({"phase": "Recreating",
                "containerStatusSnapshot": [{"name": "b", "ready": false, "restartCount": 0}],
                "conditions": [{"type": "Other", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "R", "message": ""},
                               {"type": "PreRecreateGrace", "status": "False", "lastTransitionTime": "2026-01-01T00:00:01Z", "reason": "R", "message": ""},
                               {"type": "PreRecreateGrace", "status": "True", "lastTransitionTime": "2026-01-01T00:00:02Z", "reason": "R", "message": ""}]})),
        );
        let alpha = convert(0, &beta, V1ALPHA1).unwrap();
        assert_eq!(
            alpha["metadata"]["annotations"][SYNC_CONTAINER_STATUSES_KEY],
            r#"[{"name":"b","ready":false,"restartCount":0}]"#
        );
        assert_eq!(alpha["metadata"]["annotations"][UNREADY_ACQUIRED_KEY], "2026-01-01T00:00:02Z");
        assert_eq!(alpha["status"], json!({"phase": "Recreating"}), "v1alpha1 has neither field");
    }

    #[test]
    fn what_cannot_be_promoted_stays_an_annotation_only() {
        let alpha = crr(
            V1ALPHA1,
            json!({SYNC_CONTAINER_STATUSES_KEY: "{not a list", UNREADY_ACQUIRED_KEY: "yesterday"}),
            Some(json!({"phase": "Pending"})),
        );
        let beta = convert(0, &alpha, V1BETA1).unwrap();
        assert_eq!(beta["status"], json!({"phase": "Pending"}));
        assert_eq!(beta["metadata"]["annotations"][UNREADY_ACQUIRED_KEY], "yesterday");
        let back = convert(0, &beta, V1ALPHA1).unwrap();
        assert_eq!(back, alpha);
    }

    #[test]
    fn a_request_without_status_or_annotations_only_changes_version() {
        let beta = crr(V1BETA1, json!({}), None);
        let alpha = convert(0, &beta, V1ALPHA1).unwrap();
        let mut expected = beta.clone();
        expected["apiVersion"] = json!(V1ALPHA1);
        assert_eq!(alpha, expected);
        assert_eq!(convert(0, &alpha, V1BETA1).unwrap(), beta);
    }
}
