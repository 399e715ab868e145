//! Cases of `core::conversion::daemonset`: each row of kruise v1.9.0's `ConvertTo`/`ConvertFrom`
//! (Surging -> Standard, the progressive-create-pod annotation <-> `partitionedScaling`,
//! `daemonSetHash` <-> `updateRevision`, everything else copied) and round trips.

use serde_json::{Value, json};

use crate::apis::daemonset::PROGRESSIVE_CREATE_POD;
use crate::core::conversion::{V1ALPHA1, V1BETA1, convert};

fn ds(version: &str, metadata: Value, spec: Value, status: Value) -> Value {
    json!({"apiVersion": version, "kind": "DaemonSet", "metadata": metadata, "spec": spec, "status": status})
}

/// A spec setting every field both versions share.
fn shared_spec(rolling_type: &str) -> Value {
    json!({
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}},
                     "spec": {"containers": [{"name": "c", "image": "nginx:1", "futureField": {"x": 1}}]}},
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
            "rollingUpdateType": rolling_type, "maxUnavailable": "10%", "maxSurge": 1,
            "selector": {"matchLabels": {"zone": "a"}}, "partition": "50%", "paused": true}},
        "minReadySeconds": 5, "burstReplicas": 3, "revisionHistoryLimit": 7,
        "lifecycle": {"preDelete": {"finalizersHandler": ["f/x"], "markPodNotReady": true}}
    })
}

fn status(revision_key: &str) -> Value {
    json!({"currentNumberScheduled": 3, "numberMisscheduled": 1, "desiredNumberScheduled": 4, "numberReady": 2,
           "observedGeneration": 9, "updatedNumberScheduled": 2, "numberAvailable": 2, "numberUnavailable": 2,
           "collisionCount": 1,
           "conditions": [{"type": "Progressing", "status": "True", "reason": "r"}],
           revision_key: "ds-5d8f"})
}

fn with(mut base: Value, key: &str, value: Value) -> Value {
    if let Some(b) = base.as_object_mut() {
        b.insert(key.into(), value);
    }
    base
}

/// (case, v1alpha1 object, v1beta1 object it becomes).
fn to_v1beta1_rows() -> Vec<(&'static str, Value, Value)> {
    let annotated = json!({"name": "d", "namespace": "n", "annotations": {PROGRESSIVE_CREATE_POD: "true", "k": "v"}});
    vec![
        (
            "every field copied, Standard stays Standard, no annotation: no scaleStrategy",
            ds(V1ALPHA1, json!({"name": "d", "namespace": "n"}), shared_spec("Standard"), status("daemonSetHash")),
            ds(V1BETA1, json!({"name": "d", "namespace": "n"}), shared_spec("Standard"), status("updateRevision")),
        ),
        (
            "Surging (deprecated) becomes Standard",
            ds(V1ALPHA1, json!({"name": "d"}), shared_spec("Surging"), json!({})),
            ds(V1BETA1, json!({"name": "d"}), shared_spec("Standard"), json!({})),
        ),
        (
            "InPlaceIfPossible copied",
            ds(V1ALPHA1, json!({"name": "d"}), shared_spec("InPlaceIfPossible"), json!({})),
            ds(V1BETA1, json!({"name": "d"}), shared_spec("InPlaceIfPossible"), json!({})),
        ),
        (
            "progressive-create-pod \"true\": partitionedScaling, the annotation stays",
            ds(V1ALPHA1, annotated.clone(), shared_spec("Surging"), status("daemonSetHash")),
            ds(
                V1BETA1,
                annotated,
                with(shared_spec("Standard"), "scaleStrategy", json!({"partitionedScaling": true})),
                status("updateRevision"),
            ),
        ),
        (
            "progressive-create-pod other than \"true\": no scaleStrategy",
            ds(V1ALPHA1, json!({"name": "d", "annotations": {PROGRESSIVE_CREATE_POD: "false"}}), json!({}), json!({})),
            ds(V1BETA1, json!({"name": "d", "annotations": {PROGRESSIVE_CREATE_POD: "false"}}), json!({}), json!({})),
        ),
        (
            "a v1beta1-only field sent as v1alpha1 is replaced, as kruise builds the spec anew",
            ds(
                V1ALPHA1,
                json!({"name": "d"}),
                json!({"scaleStrategy": {"partitionedScaling": true}}),
                json!({"updateRevision": "stale", "daemonSetHash": ""}),
            ),
            ds(V1BETA1, json!({"name": "d"}), json!({}), json!({})),
        ),
    ]
}

/// (case, v1beta1 object, v1alpha1 object it becomes).
fn to_v1alpha1_rows() -> Vec<(&'static str, Value, Value)> {
    vec![
        (
            "every field copied, no scaleStrategy: no annotation",
            ds(
                V1BETA1,
                json!({"name": "d", "namespace": "n"}),
                shared_spec("InPlaceIfPossible"),
                status("updateRevision"),
            ),
            ds(
                V1ALPHA1,
                json!({"name": "d", "namespace": "n"}),
                shared_spec("InPlaceIfPossible"),
                status("daemonSetHash"),
            ),
        ),
        (
            "partitionedScaling true: the annotation (created with the annotations)",
            ds(V1BETA1, json!({"name": "d"}), json!({"scaleStrategy": {"partitionedScaling": true}}), json!({})),
            ds(V1ALPHA1, json!({"name": "d", "annotations": {PROGRESSIVE_CREATE_POD: "true"}}), json!({}), json!({})),
        ),
        (
            "partitionedScaling true overwrites another value of the annotation",
            ds(
                V1BETA1,
                json!({"name": "d", "annotations": {PROGRESSIVE_CREATE_POD: "false", "k": "v"}}),
                json!({"scaleStrategy": {"partitionedScaling": true}}),
                json!({}),
            ),
            ds(
                V1ALPHA1,
                json!({"name": "d", "annotations": {PROGRESSIVE_CREATE_POD: "true", "k": "v"}}),
                json!({}),
                json!({}),
            ),
        ),
        (
            "partitionedScaling false or empty scaleStrategy: dropped, annotations untouched",
            ds(
                V1BETA1,
                json!({"name": "d", "annotations": {"k": "v"}}),
                json!({"scaleStrategy": {"partitionedScaling": false}, "minReadySeconds": 1}),
                json!({}),
            ),
            ds(V1ALPHA1, json!({"name": "d", "annotations": {"k": "v"}}), json!({"minReadySeconds": 1}), json!({})),
        ),
        (
            "a stale daemonSetHash on a v1beta1 object is replaced by updateRevision",
            ds(V1BETA1, json!({"name": "d"}), json!({}), json!({"daemonSetHash": "old", "updateRevision": "new"})),
            ds(V1ALPHA1, json!({"name": "d"}), json!({}), json!({"daemonSetHash": "new"})),
        ),
    ]
}

#[test]
fn kruise_convert_to_rows() {
    for (case, from, want) in to_v1beta1_rows() {
        assert_eq!(convert(0, &from, V1BETA1).unwrap(), want, "{case}");
    }
}

#[test]
fn kruise_convert_from_rows() {
    for (case, from, want) in to_v1alpha1_rows() {
        assert_eq!(convert(0, &from, V1ALPHA1).unwrap(), want, "{case}");
    }
}

/// A v1beta1 object survives v1beta1 -> v1alpha1 -> v1beta1 unchanged (whatever it sets but
/// `partitionedScaling: false`, which is the absent field), and a v1alpha1 object without the
/// deprecated type does the other way (the annotation is shared metadata).
#[test]
fn round_trips() {
    let betas = [
        ds(V1BETA1, json!({"name": "d"}), shared_spec("Standard"), status("updateRevision")),
        ds(
            V1BETA1,
            json!({"name": "d", "annotations": {PROGRESSIVE_CREATE_POD: "true"}}),
            with(shared_spec("InPlaceIfPossible"), "scaleStrategy", json!({"partitionedScaling": true})),
            status("updateRevision"),
        ),
        json!({"apiVersion": V1BETA1, "kind": "DaemonSet", "metadata": {"name": "bare"}}),
    ];
    for b in betas {
        let a = convert(0, &b, V1ALPHA1).unwrap();
        assert_eq!(a["apiVersion"], V1ALPHA1);
        assert_eq!(convert(0, &a, V1BETA1).unwrap(), b);
    }
    let alphas = [
        ds(V1ALPHA1, json!({"name": "d"}), shared_spec("InPlaceIfPossible"), status("daemonSetHash")),
        ds(
            V1ALPHA1,
            json!({"name": "d", "annotations": {PROGRESSIVE_CREATE_POD: "true"}}),
            shared_spec("Standard"),
            status("daemonSetHash"),
        ),
    ];
    for a in alphas {
        let b = convert(0, &a, V1BETA1).unwrap();
        assert_eq!(convert(0, &b, V1ALPHA1).unwrap(), a);
    }
    // Surging is the one loss, as in kruise: it comes back as Standard.
    let surging = ds(V1ALPHA1, json!({"name": "d"}), shared_spec("Surging"), json!({}));
    let back = convert(0, &convert(0, &surging, V1BETA1).unwrap(), V1ALPHA1).unwrap();
    assert_eq!(back["spec"]["updateStrategy"]["rollingUpdate"]["rollingUpdateType"], "Standard");
}

/// The typed structs read what the conversion writes: a converted v1alpha1 object is a valid
/// v1beta1 `DaemonSet` with the moved fields where the type declares them, and back.
#[test]
fn converted_objects_deserialize_as_the_target_type() {
    use crate::apis::daemonset::{DaemonSet as Alpha, v1beta1::DaemonSet as Beta};
    let a = ds(
        V1ALPHA1,
        json!({"name": "d", "annotations": {PROGRESSIVE_CREATE_POD: "true"}}),
        shared_spec("Surging"),
        status("daemonSetHash"),
    );
    let b: Beta = serde_json::from_value(convert(0, &a, V1BETA1).unwrap()).unwrap();
    assert!(b.spec.scale_strategy.as_ref().is_some_and(|s| s.partitioned_scaling));
    assert_eq!(b.status.as_ref().map(|s| s.update_revision.as_str()), Some("ds-5d8f"));
    let rolling = b.spec.update_strategy.rolling_update.clone().unwrap_or_default();
    assert_eq!(rolling.rolling_update_type, "Standard");
    let back: Alpha =
        serde_json::from_value(convert(0, &serde_json::to_value(&b).unwrap(), V1ALPHA1).unwrap()).unwrap();
    assert_eq!(back.status.as_ref().map(|s| s.daemon_set_hash.as_str()), Some("ds-5d8f"));
    assert_eq!(
        back.metadata.annotations.unwrap_or_default().get(PROGRESSIVE_CREATE_POD).map(String::as_str),
        Some("true")
    );
}
