//! kruise's `TestCloneSet_ConvertTo` / `TestCloneSet_ConvertFrom` rows (apis/apps/v1alpha1/
//! conversion_test.go), row by row on the JSON objects, then the rows of our deliberate
//! differences, then round trips over generated objects.

use proptest::prelude::*;
use serde_json::{Value, json};

use crate::apis::CloneSet;
use crate::apis::cloneset::v1beta1;
use crate::apis::common::InPlaceUpdateStrategy;
use crate::core::conversion::{V1ALPHA1, V1BETA1, convert};

fn template(image: &str) -> Value {
    json!({"spec": {"containers": [{"name": "nginx", "image": image}]}})
}

fn object(version: &str, metadata: Value, spec: Value, status: Value) -> Value {
    let mut o = json!({"apiVersion": version, "kind": "CloneSet", "metadata": metadata, "spec": spec});
    if !status.is_null() {
        o["status"] = status;
    }
    o
}

fn alpha(metadata: Value, spec: Value) -> Value {
    object(V1ALPHA1, metadata, spec, Value::Null)
}

fn beta(metadata: Value, spec: Value) -> Value {
    object(V1BETA1, metadata, spec, Value::Null)
}

/// `spec` with replicas, the `app: test` selector and the nginx template, plus `extra`.
fn spec(replicas: i32, image: &str, extra: Value) -> Value {
    let mut s =
        json!({"replicas": replicas, "selector": {"matchLabels": {"app": "test"}}, "template": template(image)});
    if let (Some(s), Value::Object(extra)) = (s.as_object_mut(), extra) {
        s.extend(extra);
    }
    s
}

fn meta(name: &str) -> Value {
    json!({"name": name, "namespace": "default"})
}

fn status() -> Value {
    json!({"observedGeneration": 1, "replicas": 5, "readyReplicas": 5, "availableReplicas": 5, "updatedReplicas": 3,
           "updatedReadyReplicas": 3, "updatedAvailableReplicas": 3, "expectedUpdatedReplicas": 3,
           "updateRevision": "rev-123", "currentRevision": "rev-122", "collisionCount": 0, "labelSelector": "app=test"})
}

fn full_template() -> Value {
    json!({"metadata": {"labels": {"app": "test"}}, "spec": {"containers": [{"name": "nginx", "image": "nginx:1.14.2"}]}})
}

fn claims() -> Value {
    json!([{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}])
}

fn to_beta(a: &Value) -> Value {
    convert(0, a, V1BETA1).unwrap()
}

fn to_alpha(b: &Value) -> Value {
    convert(0, b, V1ALPHA1).unwrap()
}

#[test]
fn kruise_convert_to_rows() {
    let rows: Vec<(&str, Value, Value)> = vec![
        (
            "convert with all fields populated",
            object(
                V1ALPHA1,
                json!({"name": "test-cs", "namespace": "default", "labels": {"app": "test"}}),
                spec(
                    5,
                    "",
                    json!({"template": full_template(), "volumeClaimTemplates": claims(),
                    "scaleStrategy": {"podsToDelete": ["pod-1"], "maxUnavailable": 1},
                    "updateStrategy": {"type": "InPlaceIfPossible", "partition": 2, "maxUnavailable": "20%", "maxSurge": 1},
                    "revisionHistoryLimit": 10, "minReadySeconds": 30}),
                ),
                status(),
            ),
            object(
                V1BETA1,
                json!({"name": "test-cs", "namespace": "default", "labels": {"app": "test"}}),
                spec(
                    5,
                    "",
                    json!({"template": full_template(), "volumeClaimTemplates": claims(),
                    "scaleStrategy": {"podsToDelete": ["pod-1"], "maxUnavailable": 1, "enablePVCReuse": true},
                    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "InPlaceIfPossible",
                        "partition": 2, "maxUnavailable": "20%", "maxSurge": 1}},
                    "revisionHistoryLimit": 10, "minReadySeconds": 30}),
                ),
                status(),
            ),
        ),
        (
            "convert with label-based excludePreparingDelete to spec field",
            alpha(
                json!({"name": "test-cs-label", "namespace": "default",
                       "labels": {"app": "test", "apps.kruise.io/cloneset-scaling-exclude-preparing-delete": "true"}}),
                spec(3, "nginx:latest", json!({"scaleStrategy": {"disablePVCReuse": true}})),
            ),
            beta(
                json!({"name": "test-cs-label", "namespace": "default",
                       "labels": {"app": "test", "apps.kruise.io/cloneset-scaling-exclude-preparing-delete": "true"}}),
                spec(
                    3,
                    "nginx:latest",
                    json!({"scaleStrategy": {"excludePreparingDelete": true},
                    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "ReCreate"}}}),
                ),
            ),
        ),
        (
            "convert with minimal fields",
            alpha(meta("minimal-cs"), spec(1, "nginx:latest", json!({}))),
            beta(
                meta("minimal-cs"),
                spec(
                    1,
                    "nginx:latest",
                    json!({"scaleStrategy": {"enablePVCReuse": true},
                    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "ReCreate"}}}),
                ),
            ),
        ),
        (
            "convert with ReCreate update strategy",
            alpha(meta("test-cs-recreate"), spec(3, "nginx:latest", json!({"updateStrategy": {"type": "ReCreate"}}))),
            beta(
                meta("test-cs-recreate"),
                spec(
                    3,
                    "nginx:latest",
                    json!({"scaleStrategy": {"enablePVCReuse": true},
                    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "ReCreate"}}}),
                ),
            ),
        ),
        (
            "convert with InPlaceOnly update strategy",
            alpha(
                meta("test-cs-inplaceonly"),
                spec(3, "nginx:latest", json!({"updateStrategy": {"type": "InPlaceOnly"}})),
            ),
            beta(
                meta("test-cs-inplaceonly"),
                spec(
                    3,
                    "nginx:latest",
                    json!({"scaleStrategy": {"enablePVCReuse": true},
                    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "InPlaceOnly"}}}),
                ),
            ),
        ),
        (
            "convert with image pre-download annotations to spec fields",
            alpha(
                json!({"name": "test-cs-with-annotations", "namespace": "default", "annotations": {
                    "apps.kruise.io/image-predownload-parallelism": "2",
                    "apps.kruise.io/image-predownload-timeout-seconds": "300",
                    "apps.kruise.io/image-predownload-min-updated-ready-pods": "5"}}),
                spec(3, "nginx:latest", json!({"updateStrategy": {"type": "InPlaceIfPossible"}})),
            ),
            beta(
                json!({"name": "test-cs-with-annotations", "namespace": "default", "annotations": {
                    "apps.kruise.io/image-predownload-parallelism": "2",
                    "apps.kruise.io/image-predownload-timeout-seconds": "300",
                    "apps.kruise.io/image-predownload-min-updated-ready-pods": "5"}}),
                spec(
                    3,
                    "nginx:latest",
                    json!({"scaleStrategy": {"enablePVCReuse": true},
                    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "InPlaceIfPossible",
                        "inPlaceUpdateStrategy": {"imagePreDownloadParallelism": 2, "imagePreDownloadTimeoutSeconds": 300,
                            "imagePreDownloadMinUpdatedReadyPods": 5}}}}),
                ),
            ),
        ),
    ];
    for (name, a, want) in rows {
        assert_eq!(to_beta(&a), want, "{name}");
    }
}

#[test]
fn kruise_convert_from_rows() {
    let rows: Vec<(&str, Value, Value)> = vec![
        (
            "convert from v1beta1 with all fields populated",
            object(
                V1BETA1,
                json!({"name": "test-cs", "namespace": "default", "labels": {"app": "test"}}),
                spec(
                    5,
                    "",
                    json!({"template": full_template(), "volumeClaimTemplates": claims(),
                    "scaleStrategy": {"podsToDelete": ["pod-1"], "maxUnavailable": 1, "excludePreparingDelete": true},
                    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "InPlaceIfPossible",
                        "partition": 2, "maxUnavailable": "20%", "maxSurge": 1}},
                    "revisionHistoryLimit": 10, "minReadySeconds": 30}),
                ),
                status(),
            ),
            object(
                V1ALPHA1,
                // Difference: kruise drops excludePreparingDelete here; we keep it as the label.
                json!({"name": "test-cs", "namespace": "default",
                       "labels": {"app": "test", "apps.kruise.io/cloneset-scaling-exclude-preparing-delete": "true"}}),
                spec(
                    5,
                    "",
                    json!({"template": full_template(), "volumeClaimTemplates": claims(),
                    "scaleStrategy": {"podsToDelete": ["pod-1"], "maxUnavailable": 1, "disablePVCReuse": true},
                    "updateStrategy": {"type": "InPlaceIfPossible", "partition": 2, "maxUnavailable": "20%", "maxSurge": 1},
                    "revisionHistoryLimit": 10, "minReadySeconds": 30}),
                ),
                status(),
            ),
        ),
        (
            "convert from v1beta1 with excludePreparingDelete true",
            beta(meta("cs"), spec(3, "nginx:latest", json!({"scaleStrategy": {"excludePreparingDelete": true}}))),
            // Difference: the label (kruise drops the field).
            alpha(
                json!({"name": "cs", "namespace": "default",
                       "labels": {"apps.kruise.io/cloneset-scaling-exclude-preparing-delete": "true"}}),
                spec(
                    3,
                    "nginx:latest",
                    json!({"scaleStrategy": {"disablePVCReuse": true},
                    "updateStrategy": {"type": "ReCreate"}}),
                ),
            ),
        ),
        (
            "convert from v1beta1 with minimal fields",
            beta(meta("cs"), spec(1, "nginx:latest", json!({}))),
            alpha(
                meta("cs"),
                spec(
                    1,
                    "nginx:latest",
                    json!({"scaleStrategy": {"disablePVCReuse": true},
                    "updateStrategy": {"type": "ReCreate"}}),
                ),
            ),
        ),
        (
            "convert from v1beta1 with disablePVCReuse false",
            beta(meta("cs"), spec(1, "nginx:latest", json!({"scaleStrategy": {"enablePVCReuse": true}}))),
            alpha(
                meta("cs"),
                spec(1, "nginx:latest", json!({"scaleStrategy": {}, "updateStrategy": {"type": "ReCreate"}})),
            ),
        ),
        (
            "convert from v1beta1 with ReCreate update strategy",
            beta(
                meta("cs"),
                spec(
                    3,
                    "nginx:latest",
                    json!({"updateStrategy": {"type": "RollingUpdate",
                    "rollingUpdate": {"podUpdatePolicy": "ReCreate"}}}),
                ),
            ),
            alpha(
                meta("cs"),
                spec(
                    3,
                    "nginx:latest",
                    json!({"scaleStrategy": {"disablePVCReuse": true},
                    "updateStrategy": {"type": "ReCreate"}}),
                ),
            ),
        ),
        (
            "convert from v1beta1 with InPlaceOnly update strategy",
            beta(
                meta("cs"),
                spec(
                    3,
                    "nginx:latest",
                    json!({"updateStrategy": {"type": "RollingUpdate",
                    "rollingUpdate": {"podUpdatePolicy": "InPlaceOnly"}}}),
                ),
            ),
            alpha(
                meta("cs"),
                spec(
                    3,
                    "nginx:latest",
                    json!({"scaleStrategy": {"disablePVCReuse": true},
                    "updateStrategy": {"type": "InPlaceOnly"}}),
                ),
            ),
        ),
        (
            "convert from v1beta1 with image pre-download spec fields to annotations",
            beta(
                meta("cs"),
                spec(
                    3,
                    "nginx:latest",
                    json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                    "podUpdatePolicy": "InPlaceIfPossible", "inPlaceUpdateStrategy": {"imagePreDownloadParallelism": 3,
                    "imagePreDownloadTimeoutSeconds": 450, "imagePreDownloadMinUpdatedReadyPods": 10}}}}),
                ),
            ),
            alpha(
                json!({"name": "cs", "namespace": "default", "annotations": {
                    "apps.kruise.io/image-predownload-parallelism": "3",
                    "apps.kruise.io/image-predownload-timeout-seconds": "450",
                    "apps.kruise.io/image-predownload-min-updated-ready-pods": "10"}}),
                spec(
                    3,
                    "nginx:latest",
                    json!({"scaleStrategy": {"disablePVCReuse": true},
                    "updateStrategy": {"type": "InPlaceIfPossible", "inPlaceUpdateStrategy": {}}}),
                ),
            ),
        ),
    ];
    for (name, b, want) in rows {
        assert_eq!(to_alpha(&b), want, "{name}");
    }
}

/// Where we keep what kruise's conversion drops (see the module comment).
#[test]
fn differences_keep_data() {
    // OnDelete keeps its rolling parameters both ways.
    let a = alpha(
        meta("cs"),
        spec(2, "i", json!({"updateStrategy": {"type": "OnDelete", "partition": 1, "paused": true}})),
    );
    let b = to_beta(&a);
    assert_eq!(
        b["spec"]["updateStrategy"],
        json!({"type": "OnDelete", "rollingUpdate": {"partition": 1, "paused": true}})
    );
    assert_eq!(to_alpha(&b)["spec"]["updateStrategy"], a["spec"]["updateStrategy"]);
    // Unknown values reach validation unchanged.
    let a = alpha(meta("cs"), spec(2, "i", json!({"updateStrategy": {"type": "Bogus"}})));
    assert_eq!(to_beta(&a)["spec"]["updateStrategy"]["rollingUpdate"]["podUpdatePolicy"], "Bogus");
    assert_eq!(to_alpha(&to_beta(&a))["spec"]["updateStrategy"]["type"], "Bogus");
    // An annotation that already says the value is kept as written; an unparsable one survives.
    let a = alpha(
        json!({"name": "cs", "annotations": {"apps.kruise.io/image-predownload-timeout-seconds": "0300",
               "apps.kruise.io/image-predownload-min-updated-ready-pods": "many"}}),
        spec(
            1,
            "i",
            json!({"updateStrategy": {"type": "InPlaceIfPossible", "inPlaceUpdateStrategy": {"gracePeriodSeconds": 5}}}),
        ),
    );
    let b = to_beta(&a);
    assert_eq!(
        b["spec"]["updateStrategy"]["rollingUpdate"]["inPlaceUpdateStrategy"],
        json!({"gracePeriodSeconds": 5, "imagePreDownloadTimeoutSeconds": 300})
    );
    assert_eq!(to_alpha(&b)["metadata"], a["metadata"]);
    // Fields our types do not know (a newer Kubernetes' template field) pass through verbatim.
    let a = alpha(meta("cs"), spec(1, "i", json!({"template": {"spec": {"containers": [], "futureField": {"x": 1}}}})));
    assert_eq!(to_alpha(&to_beta(&a))["spec"]["template"]["spec"]["futureField"], json!({"x": 1}));
}

/// The meaning of a v1alpha1 CloneSet: an unset strategy type is ReCreate, an unset
/// `inPlaceUpdateStrategy` is an empty one, an empty scale/update strategy is none.
fn alpha_meaning(v: &Value) -> CloneSet {
    let mut cs: CloneSet = serde_json::from_value(v.clone()).unwrap();
    let s = &mut cs.spec.update_strategy;
    if s.type_.is_empty() {
        s.type_ = "ReCreate".into();
    }
    if s.in_place_update_strategy == Some(InPlaceUpdateStrategy::default()) {
        s.in_place_update_strategy = None;
    }
    cs
}

/// The meaning of a v1beta1 CloneSet: an unset type is RollingUpdate, an unset policy ReCreate;
/// under OnDelete the policy means nothing; an empty in-place strategy is none.
fn beta_meaning(v: &Value) -> v1beta1::CloneSet {
    let mut cs: v1beta1::CloneSet = serde_json::from_value(v.clone()).unwrap();
    let s = &mut cs.spec.update_strategy;
    if s.type_.is_empty() {
        s.type_ = "RollingUpdate".into();
    }
    let on_delete = s.type_ == "OnDelete";
    let rolling = s.rolling_update.get_or_insert_with(Default::default);
    if on_delete {
        rolling.pod_update_policy.clear();
    } else if rolling.pod_update_policy.is_empty() {
        rolling.pod_update_policy = "ReCreate".into();
    }
    if rolling.in_place_update_strategy == Some(InPlaceUpdateStrategy::default()) {
        rolling.in_place_update_strategy = None;
    }
    if *rolling == Default::default() {
        s.rolling_update = None;
    }
    cs
}

fn int_or_string() -> impl Strategy<Value = Value> {
    prop_oneof![(0i32..20).prop_map(Value::from), (0u32..100).prop_map(|p| Value::from(format!("{p}%")))]
}

fn opt<T: std::fmt::Debug + Clone>(s: impl Strategy<Value = T>) -> impl Strategy<Value = Option<T>> {
    proptest::option::of(s)
}

/// Inserts `value` at `key` when present.
fn put(map: &mut serde_json::Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        map.insert(key.into(), v);
    }
}

prop_compose! {
    fn rolling_fields()(partition in opt(int_or_string()), max_unavailable in opt(int_or_string()),
                        max_surge in opt(int_or_string()), paused in any::<bool>(),
                        grace in opt(0i32..30), scatter in any::<bool>()) -> serde_json::Map<String, Value> {
        let mut m = serde_json::Map::new();
        put(&mut m, "partition", partition);
        put(&mut m, "maxUnavailable", max_unavailable);
        put(&mut m, "maxSurge", max_surge);
        if paused { m.insert("paused".into(), Value::Bool(true)); }
        put(&mut m, "inPlaceUpdateStrategy", grace.map(|g| json!({"gracePeriodSeconds": g})));
        if scatter { m.insert("scatterStrategy".into(), json!([{"key": "zone", "value": "a"}])); }
        m
    }
}

prop_compose! {
    fn annotations()(p in opt(prop_oneof![(0i32..9).prop_map(|n| n.to_string()), Just("3x".to_string())]),
                     t in opt(0i32..900), m in opt(0i32..9)) -> serde_json::Map<String, Value> {
        let mut a = serde_json::Map::new();
        put(&mut a, "apps.kruise.io/image-predownload-parallelism", p.map(Value::from));
        put(&mut a, "apps.kruise.io/image-predownload-timeout-seconds", t.map(|t| Value::from(t.to_string())));
        put(&mut a, "apps.kruise.io/image-predownload-min-updated-ready-pods", m.map(|m| Value::from(m.to_string())));
        a
    }
}

prop_compose! {
    fn v1alpha1_cloneset()(kind in prop_oneof![Just(""), Just("ReCreate"), Just("InPlaceIfPossible"), Just("InPlaceOnly"), Just("OnDelete")],
                           rolling in rolling_fields(), disable in any::<bool>(), exclude in any::<bool>(),
                           annotations in annotations(), replicas in opt(0i32..10)) -> Value {
        let mut strategy = rolling;
        if !kind.is_empty() { strategy.insert("type".into(), Value::from(kind)); }
        let mut s = spec(1, "nginx", json!({"updateStrategy": strategy}));
        s["replicas"] = replicas.map(Value::from).unwrap_or(Value::Null);
        if disable { s["scaleStrategy"] = json!({"disablePVCReuse": true}); }
        let mut m = json!({"name": "cs", "namespace": "ns", "annotations": annotations});
        if exclude { m["labels"] = json!({"apps.kruise.io/cloneset-scaling-exclude-preparing-delete": "true"}); }
        alpha(m, s)
    }
}

prop_compose! {
    fn v1beta1_cloneset()(kind in prop_oneof![Just(""), Just("RollingUpdate"), Just("OnDelete")],
                          policy in prop_oneof![Just(""), Just("ReCreate"), Just("InPlaceIfPossible"), Just("InPlaceOnly")],
                          rolling in rolling_fields(), predownload in (opt(int_or_string()), opt(0i32..900), opt(0i32..9)),
                          enable in any::<bool>(), exclude in any::<bool>()) -> Value {
        let mut rolling = rolling;
        if !policy.is_empty() { rolling.insert("podUpdatePolicy".into(), Value::from(policy)); }
        let (p, t, m) = predownload;
        if p.is_some() || t.is_some() || m.is_some() {
            let mut in_place = serde_json::Map::new();
            put(&mut in_place, "imagePreDownloadParallelism", p);
            put(&mut in_place, "imagePreDownloadTimeoutSeconds", t.map(Value::from));
            put(&mut in_place, "imagePreDownloadMinUpdatedReadyPods", m.map(Value::from));
            rolling.insert("inPlaceUpdateStrategy".into(), Value::Object(in_place));
        }
        let mut strategy = json!({"rollingUpdate": rolling});
        if !kind.is_empty() { strategy["type"] = Value::from(kind); }
        let mut scale = serde_json::Map::new();
        if enable { scale.insert("enablePVCReuse".into(), Value::Bool(true)); }
        if exclude { scale.insert("excludePreparingDelete".into(), Value::Bool(true)); }
        beta(meta("cs"), spec(2, "nginx", json!({"updateStrategy": strategy, "scaleStrategy": scale})))
    }
}

proptest! {
    /// v1alpha1 -> v1beta1 -> v1alpha1 keeps every field and its meaning; the v1beta1 object
    /// decodes as our v1beta1 type.
    #[test]
    fn v1alpha1_round_trip(a in v1alpha1_cloneset()) {
        let b = to_beta(&a);
        let _typed: v1beta1::CloneSet = serde_json::from_value(b.clone()).unwrap();
        let back = to_alpha(&b);
        prop_assert_eq!(alpha_meaning(&back), alpha_meaning(&a));
        prop_assert_eq!(&back["metadata"], &a["metadata"]);
    }

    /// v1beta1 -> v1alpha1 -> v1beta1 keeps the spec's meaning (metadata gains the v1alpha1
    /// annotations and label, which is how v1alpha1 says it).
    #[test]
    fn v1beta1_round_trip(b in v1beta1_cloneset()) {
        let a = to_alpha(&b);
        let _typed: CloneSet = serde_json::from_value(a.clone()).unwrap();
        let back = to_beta(&a);
        prop_assert_eq!(beta_meaning(&back).spec, beta_meaning(&b).spec);
    }
}
