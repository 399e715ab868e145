//! Admission of v1beta1 CloneSets and SidecarSets (issue 15 item 4), in-process through the
//! handlers: the mutating answer is a patch of the request's own v1beta1 JSON that leaves a
//! v1beta1 object (kruise's `SetDefaultsCloneSetV1beta1`), with the same meaning as the v1alpha1
//! answer to the same object converted; the validating answer names v1beta1 fields; the
//! InPlaceOnly guard denies the same edits in both versions.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use kruise::core::conversion::{V1ALPHA1, V1BETA1, convert};
use kruise::webhook::request::ReviewRequest;
use kruise::webhook::{Context, Handler};
use kube::core::admission::Operation;
use serde_json::{Value, json};

fn review(kind: &str, version: &str, op: Operation, object: &Value, old: Option<&Value>) -> ReviewRequest {
    let resource = format!("{}s", kind.to_lowercase());
    let r = ReviewRequest::new(op, "apps.kruise.io", version, kind, &resource).objects(Some(object), old);
    if kind == "CloneSet" { r.name("web").namespace("ns") } else { r.name("side") }
}

/// A v1beta1 CloneSet as OpenKruise's documentation writes one.
fn docs_cloneset(strategy: Value) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "CloneSet",
           "metadata": {"name": "web", "namespace": "ns", "labels": {"app": "web"}},
           "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "nginx", "image": "nginx:alpine", "env": [{"name": "MODE", "value": "a"}]}]}},
                    "updateStrategy": strategy}})
}

fn mutate(ctx: &Context, kind: &str, version: &str, object: &Value, old: Option<&Value>) -> Value {
    let op = if old.is_some() { Operation::Update } else { Operation::Create };
    let handler = if kind == "CloneSet" { Handler::MutateCloneSet } else { Handler::MutateSidecarSet };
    let v = run(ctx, handler, &review(kind, version, op, object, old));
    assert!(v.allowed, "{}", v.message);
    apply(object, v.patch.as_ref())
}

fn validate(ctx: &Context, kind: &str, version: &str, object: &Value, old: Option<&Value>) -> (bool, String) {
    let op = if old.is_some() { Operation::Update } else { Operation::Create };
    let handler = if kind == "CloneSet" { Handler::ValidateCloneSet } else { Handler::ValidateSidecarSet };
    let v = run(ctx, handler, &review(kind, version, op, object, old));
    (v.allowed, v.message)
}

#[test]
fn v1beta1_cloneset_is_defaulted_in_v1beta1() {
    let ctx = context(&[], "");
    let object = docs_cloneset(json!({"rollingUpdate": {"podUpdatePolicy": "InPlaceIfPossible", "maxUnavailable": 1}}));
    let out = mutate(&ctx, "CloneSet", "v1beta1", &object, None);
    assert_eq!(out["apiVersion"], "apps.kruise.io/v1beta1");
    assert_eq!(
        out["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "InPlaceIfPossible", "maxUnavailable": 1,
               "partition": 0, "maxSurge": 0, "inPlaceUpdateStrategy": {}}})
    );
    assert_eq!((out["spec"]["revisionHistoryLimit"].clone(), out["spec"].get("scaleStrategy")), (json!(10), None));
    assert_eq!(out["metadata"], object["metadata"], "metadata untouched");
    assert_eq!(out["spec"]["template"]["spec"]["containers"][0]["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(out["spec"]["template"]["spec"]["restartPolicy"], "Always");
    // The v1alpha1 answer to the same object converted has the same meaning.
    let alpha = convert(0, &object, V1ALPHA1).unwrap();
    let alpha_out = mutate(&ctx, "CloneSet", "v1alpha1", &alpha, None);
    assert_eq!(convert(0, &out, V1ALPHA1).unwrap(), alpha_out);
    // Defaulted objects get no patch; the defaulted object validates.
    let again = run(&ctx, Handler::MutateCloneSet, &review("CloneSet", "v1beta1", Operation::Update, &out, Some(&out)));
    assert!(again.patch.is_none(), "{:?}", again.patch);
    assert_eq!(validate(&ctx, "CloneSet", "v1beta1", &out, None), (true, String::new()));
}

#[test]
fn on_delete_keeps_no_rolling_parameters() {
    let ctx = context(&[], "");
    let out = mutate(&ctx, "CloneSet", "v1beta1", &docs_cloneset(json!({"type": "OnDelete"})), None);
    assert_eq!(out["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
    assert_eq!(validate(&ctx, "CloneSet", "v1beta1", &out, None), (true, String::new()));
    // In v1alpha1, OnDelete stays rejected (spec §11.3).
    let alpha = convert(0, &out, V1ALPHA1).unwrap();
    let (allowed, message) = validate(&ctx, "CloneSet", "v1alpha1", &alpha, None);
    assert!(!allowed && message.contains("spec.updateStrategy.type: Invalid value: \"OnDelete\""), "{message}");
}

#[test]
fn v1beta1_errors_name_v1beta1_fields() {
    let ctx = context(&[], "");
    let rows = [
        (
            json!({"type": "InPlaceOnly"}),
            "spec.updateStrategy.type: Invalid value: \"InPlaceOnly\": must be 'RollingUpdate' or 'OnDelete'",
        ),
        (
            json!({"rollingUpdate": {"podUpdatePolicy": "InPlace"}}),
            "spec.updateStrategy.rollingUpdate.podUpdatePolicy: Invalid value: \"InPlace\": must be 'ReCreate', 'InPlaceIfPossible' or 'InPlaceOnly'",
        ),
        (
            json!({"rollingUpdate": {"podUpdatePolicy": "InPlaceOnly", "maxSurge": 1}}),
            "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: \"1\": can not use maxSurge with podUpdatePolicy InPlaceOnly",
        ),
        (
            json!({"rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}),
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: 0: maxUnavailable and maxSurge should not both be less than 1",
        ),
        (
            json!({"rollingUpdate": {"partition": "x"}}),
            "spec.updateStrategy.rollingUpdate.partition: Invalid value: \"x\"",
        ),
        (
            json!({"rollingUpdate": {"inPlaceUpdateStrategy": {"imagePreDownloadParallelism": "10%"}}}),
            "imagePreDownloadParallelism: Invalid value: \"10%\": imagePreDownloadParallelism does not support percentage value",
        ),
    ];
    for (strategy, want) in rows {
        let object = mutate(&ctx, "CloneSet", "v1beta1", &docs_cloneset(strategy.clone()), None);
        let (allowed, message) = validate(&ctx, "CloneSet", "v1beta1", &object, None);
        assert!(!allowed, "{strategy}");
        assert!(message.contains(want), "{strategy}: {message}");
        assert!(!message.contains("spec.updateStrategy.partition") && !message.contains("strategy type"), "{message}");
    }
}

#[test]
fn in_place_only_guard_denies_the_same_edit_in_both_versions() {
    let ctx = context(&[], "");
    let beta = mutate(
        &ctx,
        "CloneSet",
        "v1beta1",
        &docs_cloneset(json!({"rollingUpdate": {"podUpdatePolicy": "InPlaceOnly"}})),
        None,
    );
    let alpha = convert(0, &beta, V1ALPHA1).unwrap();
    let edits: [(&str, Value, bool); 3] = [
        ("image", json!("nginx:1.27"), true),
        ("env", json!([{"name": "MODE", "value": "b"}]), false),
        ("command", json!(["sh"]), false),
    ];
    for (field, value, allowed) in edits {
        for (version, old, field_name) in [
            ("v1beta1", &beta, "spec.updateStrategy.rollingUpdate.podUpdatePolicy"),
            ("v1alpha1", &alpha, "spec.updateStrategy.type"),
        ] {
            let new = with(old, |o| o["spec"]["template"]["spec"]["containers"][0][field] = value.clone());
            let new = mutate(&ctx, "CloneSet", version, &new, Some(old));
            let (ok, message) = validate(&ctx, "CloneSet", version, &new, Some(old));
            assert_eq!(ok, allowed, "{version} {field}: {message}");
            if !allowed {
                assert!(message.contains("only allowed to update images in spec for InPlaceOnly"), "{message}");
                assert!(message.contains(&format!("set {field_name} to")), "{version}: {message}");
            }
        }
    }
}

fn docs_sidecarset() -> Value {
    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "SidecarSet", "metadata": {"name": "side"},
           "spec": {"selector": {"matchLabels": {"app": "web"}}, "customVersion": "v2",
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ns"}},
                    "containers": [{"name": "sidecar1", "image": "busybox:latest", "command": ["sleep", "999d"]}]}})
}

#[test]
fn v1beta1_sidecarset_is_defaulted_and_validated_in_v1beta1() {
    let ctx = context(&[], "");
    let object = docs_sidecarset();
    let out = mutate(&ctx, "SidecarSet", "v1beta1", &object, None);
    assert_eq!(out["spec"]["customVersion"], "v2");
    assert_eq!(out["spec"]["namespaceSelector"], object["spec"]["namespaceSelector"]);
    assert!(out["spec"].get("namespace").is_none() && out["metadata"].get("labels").is_none(), "{out}");
    assert_eq!(out["spec"]["updateStrategy"], json!({"type": "RollingUpdate", "partition": 0, "maxUnavailable": 1}));
    let alpha = mutate(&ctx, "SidecarSet", "v1alpha1", &convert(0, &object, V1ALPHA1).unwrap(), None);
    assert_eq!(out["metadata"]["annotations"], alpha["metadata"]["annotations"], "same hashes");
    assert_eq!(convert(0, &alpha, V1BETA1).unwrap(), out);
    assert_eq!(validate(&ctx, "SidecarSet", "v1beta1", &out, None), (true, String::new()));
    let bad = with(&out, |o| o["spec"]["containers"][0]["podInjectPolicy"] = json!("Sometimes"));
    let (allowed, message) = validate(&ctx, "SidecarSet", "v1beta1", &bad, None);
    assert!(!allowed && message.contains("podInjectPolicy: Invalid value: \"Sometimes\""), "{message}");
}
