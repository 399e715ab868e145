//! kruise v1.9.0 `pkg/webhook/daemonset/validating/daemonset_validation_test.go`, row by row,
//! plus the messages of each rule.

use super::*;
use crate::apis::daemonset::DaemonSet;
use crate::compat::field::aggregate;
use serde_json::{Value, json};

fn alpha(v: Value) -> DaemonSet {
    serde_json::from_value(v).expect("v1alpha1 DaemonSet")
}

fn beta(v: Value) -> v1beta1::DaemonSet {
    serde_json::from_value(v).expect("v1beta1 DaemonSet")
}

/// kruise's `newDaemonset` with a valid selector/template pair and `strategy`.
fn ds(spec_extra: Value) -> Value {
    let mut v = json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "DaemonSet",
        "metadata": {"name": "ds1", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"key1": "value1"}},
            "template": {"metadata": {"labels": {"key1": "value1"}},
                         "spec": {"containers": [{"name": "a", "image": "b"}], "restartPolicy": "Always"}},
            "updateStrategy": {"type": "RollingUpdate",
                               "rollingUpdate": {"rollingUpdateType": "Standard", "maxUnavailable": 1}}
        }
    });
    merge(&mut v["spec"], spec_extra);
    v
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                if v.is_null() {
                    a.remove(&k);
                } else {
                    merge(a.entry(k).or_insert(Value::Null), v);
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

fn create(v: Value) -> String {
    aggregate(&validate_create((&alpha(v)).into(), &FeatureGates::default()))
}

fn create_beta(mut v: Value) -> String {
    v["apiVersion"] = json!("apps.kruise.io/v1beta1");
    aggregate(&validate_create((&beta(v)).into(), &FeatureGates::default()))
}

#[test]
fn test_validate_daemonset() {
    // "selector not match"
    let got = create(ds(json!({"template": {"metadata": {"labels": {"key1": "value2"}}}})));
    assert!(got.contains("spec.template.metadata.labels: Invalid value: {\"key1\":\"value2\"}: `selector` does not match template `labels`"), "{got}");
    // "selector match"
    assert_eq!(create(ds(json!({}))), "");
    assert_eq!(create_beta(ds(json!({}))), "");
}

#[test]
fn spec_rules() {
    // "empty selector"
    let got = create(ds(json!({"selector": {"matchLabels": null}})));
    assert!(got.contains("spec.selector: Invalid value: {}: empty selector is invalid for daemonset"), "{got}");
    // no selector: nothing matches
    let got = create(ds(json!({"selector": null})));
    assert!(got.contains("`selector` does not match template `labels`"), "{got}");
    // "invalid restart policy"
    let got = create(ds(json!({"template": {"spec": {"restartPolicy": "Never"}}})));
    assert!(
        got.contains("spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\""),
        "{got}"
    );
    // an unset restartPolicy is defaulted to Always first, as kruise's ConvertPodTemplateSpec does
    assert_eq!(create(ds(json!({"template": {"spec": {"restartPolicy": null}}}))), "");
    // "with activeDeadlineSeconds"
    let got = create(ds(json!({"template": {"spec": {"activeDeadlineSeconds": 10}}})));
    assert!(
        got.contains(
            "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported"
        ),
        "{got}"
    );
    // "with revisionHistoryLimit"
    assert_eq!(create(ds(json!({"revisionHistoryLimit": 5}))), "");
    let got = create(ds(json!({"revisionHistoryLimit": -1})));
    assert_eq!(got, "spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0");
    let got = create(ds(json!({"minReadySeconds": -1})));
    assert_eq!(got, "spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0");
    // "with inPlaceUpdate lifecycle"
    let got = create(ds(json!({"lifecycle": {"inPlaceUpdate": {"labelsHandler": {"a": "b"}}}})));
    assert_eq!(got, "spec.lifecycle.inPlaceUpdate: Forbidden: inPlaceUpdate hook has not supported yet");
    assert_eq!(create(ds(json!({"lifecycle": {"preDelete": {"finalizersHandler": ["x/y"]}}}))), "");
    // the template itself is validated
    let got = create(ds(json!({"template": {"spec": {"containers": [{"name": "a"}]}}})));
    assert!(got.contains("spec.template.spec.containers[0].image: Required value"), "{got}");
    // metadata
    let mut bad = ds(json!({}));
    bad["metadata"]["name"] = json!("Bad_Name");
    assert!(create(bad).starts_with("metadata.name: Invalid value: \"Bad_Name\""));
}

fn strategy(v: Value) -> String {
    let s: DaemonSetUpdateStrategy = serde_json::from_value(v).expect("strategy");
    aggregate(&validate_update_strategy(&s, Version::V1alpha1, "spec.updateStrategy"))
}

#[test]
fn test_validate_daemonset_update_strategy() {
    assert_eq!(strategy(json!({"type": "OnDelete"})), "", "OnDelete strategy");
    assert_eq!(strategy(json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}})), "");
    assert_eq!(
        strategy(json!({"type": "RollingUpdate"})),
        "spec.updateStrategy.rollingUpdate: Required value",
        "RollingUpdate without RollingUpdate field"
    );
    assert_eq!(strategy(json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}})), "");
    let got = strategy(json!({"type": "Invalid"}));
    assert!(got.starts_with("spec.updateStrategy: Unsupported value: "), "{got}");
    assert!(got.ends_with("supported values: \"RollingUpdate\", \"OnDelete\""), "{got}");
}

fn rolling(v: Value, version: Version) -> String {
    let r: RollingUpdateDaemonSet = serde_json::from_value(v).expect("rollingUpdate");
    aggregate(&validate_rolling_update(&r, version, "spec.updateStrategy.rollingUpdate"))
}

#[test]
fn test_validate_rolling_update_daemonset() {
    let a = Version::V1alpha1;
    let rows: &[(&str, Value, &str)] = &[
        ("Valid maxUnavailable", json!({"maxUnavailable": 1}), ""),
        ("Valid maxSurge", json!({"maxSurge": 1}), ""),
        (
            "Both maxUnavailable and maxSurge",
            json!({"maxUnavailable": 1, "maxSurge": 1}),
            "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero",
        ),
        (
            "Both zero",
            json!({"maxUnavailable": 0, "maxSurge": 0}),
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0",
        ),
        ("Standard rolling update type", json!({"rollingUpdateType": "Standard", "maxUnavailable": 1}), ""),
        (
            "InplaceRollingUpdate with maxSurge",
            json!({"rollingUpdateType": "InPlaceIfPossible", "maxSurge": 1}),
            "spec.updateStrategy.rollingUpdate.maxSurge: Required value: must be 0 for InPlaceIfPossible type",
        ),
        (
            "InplaceRollingUpdate with maxUnavailable",
            json!({"rollingUpdateType": "InPlaceIfPossible", "maxUnavailable": 1}),
            "",
        ),
        (
            "DeprecatedSurgingRollingUpdate with maxUnavailable",
            json!({"rollingUpdateType": "Surging", "maxUnavailable": 1}),
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: must be 0 for Surging type",
        ),
        ("DeprecatedSurgingRollingUpdate with maxSurge", json!({"rollingUpdateType": "Surging", "maxSurge": 1}), ""),
        ("Percent value", json!({"maxUnavailable": "50%"}), ""),
        (
            "Invalid percent value",
            json!({"maxUnavailable": "150%"}),
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: \"150%\": must not be greater than 100%",
        ),
        ("With partition", json!({"maxUnavailable": 1, "partition": 5}), ""),
    ];
    for (name, v, want) in rows {
        assert_eq!(rolling(v.clone(), a), *want, "{name}");
    }
}

#[test]
fn v1beta1_refuses_surging_and_partition_rules() {
    let got = rolling(json!({"rollingUpdateType": "Surging", "maxSurge": 1}), Version::V1beta1);
    assert_eq!(
        got,
        "spec.updateStrategy.rollingUpdate.rollingUpdate.type: Unsupported value: \"Surging\": supported values: \"Standard\", \"InPlaceIfPossible\""
    );
    // TestValidateNonnegativeIntOrPercent: positive, zero, negative, percent
    assert_eq!(rolling(json!({"maxUnavailable": 1, "partition": 0}), Version::V1beta1), "");
    assert_eq!(
        rolling(json!({"maxUnavailable": 1, "partition": -1}), Version::V1beta1),
        "spec.updateStrategy.rollingUpdate.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0"
    );
    assert_eq!(rolling(json!({"maxUnavailable": 1, "partition": "50%"}), Version::V1beta1), "");
    assert_eq!(
        rolling(json!({"maxUnavailable": 1, "partition": "150%"}), Version::V1beta1),
        "spec.updateStrategy.rollingUpdate.rollingUpdate.partition: Invalid value: \"150%\": must not be greater than 100%"
    );
}

#[test]
fn test_get_int_or_percent_value() {
    assert_eq!(int_or_percent_value(&IntOrString::Int(5)), 5, "int value");
    assert_eq!(int_or_percent_value(&IntOrString::String("50%".into())), 50, "percent value");
    assert_eq!(int_or_percent_value(&IntOrString::Int(0)), 0, "zero int");
    assert_eq!(int_or_percent_value(&IntOrString::String("abc".into())), 0, "invalid percent string");
    assert_eq!(int_or_percent_value(&IntOrString::String("7".into())), 7, "IntValue of a numeric string");
}

fn update(new: Value, old: Value) -> String {
    let (new, old) = (alpha(new), alpha(old));
    aggregate(&validate_update((&new).into(), (&old).into(), &FeatureGates::default()))
}

#[test]
fn test_validate_daemonset_update() {
    let with = |sel: Value, burst: i32, surge: Option<i32>| {
        let mut v =
            ds(json!({"selector": {"matchLabels": sel.clone()}, "template": {"metadata": {"labels": {"a": "b"}}},
                             "burstReplicas": burst}));
        v["spec"]["template"]["metadata"]["labels"] = json!({"a": "b"});
        v["spec"]["selector"] = json!({"matchLabels": sel});
        if let Some(s) = surge {
            v["spec"]["updateStrategy"]["rollingUpdate"]["maxSurge"] = json!(s);
        }
        v
    };
    // success: burstReplicas changes
    assert_eq!(update(with(json!({"a": "b"}), 1, None), with(json!({"a": "b"}), 2, None)), "");
    // error: the selector changes (and both maxUnavailable and maxSurge are set)
    let got = update(with(json!({"c": "d"}), 1, Some(2)), with(json!({"a": "b"}), 2, Some(2)));
    assert!(got.contains(&format!("spec: Forbidden: {IMMUTABLE_V1ALPHA1}")), "{got}");
    assert!(got.contains("may not be set when maxUnavailable is non-zero"), "{got}");
    // v1beta1: scaleStrategy may change, the message names it
    let mut new = with(json!({"a": "b"}), 1, None);
    new["apiVersion"] = json!("apps.kruise.io/v1beta1");
    new["spec"]["scaleStrategy"] = json!({"partitionedScaling": true});
    let old = {
        let mut o = with(json!({"a": "b"}), 1, None);
        o["apiVersion"] = json!("apps.kruise.io/v1beta1");
        o
    };
    let (n, o) = (beta(new.clone()), beta(old.clone()));
    assert!(validate_update((&n).into(), (&o).into(), &FeatureGates::default()).is_empty());
    new["spec"]["selector"] = json!({"matchLabels": {"a": "b", "x": "y"}});
    new["spec"]["template"]["metadata"]["labels"] = json!({"a": "b", "x": "y"});
    let n = beta(new);
    let got = aggregate(&validate_update((&n).into(), (&o).into(), &FeatureGates::default()));
    assert_eq!(got, format!("spec: Forbidden: {IMMUTABLE_V1BETA1}"));
}
