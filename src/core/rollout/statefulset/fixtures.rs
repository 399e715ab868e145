//! Test objects shaped like the ones kruise's `pkg/controller/statefulset` tests build
//! (`newStatefulSetWithVolumes`, `newStatefulSet`, `newStatefulSetPod`).

use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

use super::identity;
use crate::apis::statefulset::v1beta1::StatefulSet;

/// `newStatefulSetWithVolumes(replicas, name, petMounts, podMounts)`: claim templates for the
/// pet mounts, hostPath volumes for the pod mounts, selector and template labels `foo=bar`,
/// service `governingsvc`, RollingUpdate, Retain/Retain, history limit 2.
pub fn stateful_set_with_volumes(replicas: i32, name: &str, pet_mounts: &[&str], pod_mounts: &[&str]) -> StatefulSet {
    let mounts: Vec<_> = pet_mounts
        .iter()
        .chain(pod_mounts)
        .map(|m| json!({"name": m, "mountPath": if *m == "datadir" { "/tmp/zookeeper".to_string() } else { format!("/{m}") }}))
        .collect();
    let claims: Vec<_> = pet_mounts
        .iter()
        .map(|m| json!({"metadata": {"namespace": "default", "name": m}, "spec": {"resources": {"requests": {"storage": "1"}}}}))
        .collect();
    let vols: Vec<_> =
        pod_mounts.iter().map(|m| json!({"name": m, "hostPath": {"path": format!("/tmp/{m}")}})).collect();
    let mut template = json!({"metadata": {"labels": {"foo": "bar"}},
        "spec": {"containers": [{"name": "nginx", "image": "nginx", "volumeMounts": mounts}]}});
    if !vols.is_empty() {
        template["spec"]["volumes"] = json!(vols);
    }
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
        "metadata": {"name": name, "namespace": "default", "uid": "test"},
        "spec": {
            "selector": {"matchLabels": {"foo": "bar"}},
            "replicas": replicas,
            "template": template,
            "volumeClaimTemplates": claims,
            "serviceName": "governingsvc",
            "updateStrategy": {"type": "RollingUpdate"},
            "persistentVolumeClaimRetentionPolicy": {"whenScaled": "Retain", "whenDeleted": "Retain"},
            "revisionHistoryLimit": 2
        }
    }))
    .unwrap()
}

/// `newStatefulSet(replicas)`: set `foo` with claim `datadir` and hostPath volume `home`.
pub fn stateful_set(replicas: i32) -> StatefulSet {
    stateful_set_with_volumes(replicas, "foo", &["datadir"], &["home"])
}

/// `newStatefulSetPod(set, ordinal)` (no revision label in Go; here the set's own template and
/// revision "").
pub fn stateful_set_pod(set: &StatefulSet, ordinal: i64) -> Pod {
    let mut pod = identity::new_pod(set, &set.spec.template, ordinal, "", true);
    pod.metadata.labels.as_mut().unwrap().remove(identity::REVISION_LABEL);
    pod
}

/// A pod named `name` with labels only.
pub fn named_pod(name: &str, labels: &[(&str, &str)]) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.name = Some(name.into());
    if !labels.is_empty() {
        pod.metadata.labels = Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
    }
    pod
}
