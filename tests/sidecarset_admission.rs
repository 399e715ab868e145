//! SidecarSet admission as the apiserver runs it: `msidecarset.kb.io` (defaults and hash
//! annotations, spec §4.11, §1.3.2) then `vsidecarset.kb.io` (spec §2.3, answered 422 per
//! decision §11.1). The rules themselves are tabled beside their decision
//! (`core::sidecar::validate`); here, what the handlers add: the mutating answer, the 422
//! aggregate, and the inputs the validating handler reads from the request and the cluster view.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::sidecar::*;
use common::*;
use kruise::webhook::request::ReviewRequest;
use kruise::webhook::{Context, Handler};
use kube::core::admission::Operation;
use serde_json::{Value, json};

/// A review of SidecarSet `set` (with `old` as oldObject, if any).
fn review(op: Operation, set: &Value, old: Option<&Value>) -> ReviewRequest {
    ReviewRequest::new(op, "apps.kruise.io", "v1alpha1", "SidecarSet", "sidecarsets").objects(Some(set), old)
}

/// Mutates then validates `set` (and `old` for an UPDATE); returns the validating verdict.
fn admit(ctx: &Context, set: &Value, old: Option<&Value>) -> kruise::webhook::Verdict {
    let op = if old.is_some() { Operation::Update } else { Operation::Create };
    let mutate = |obj: &Value, op: Operation, old: Option<&Value>| {
        let v = run(ctx, Handler::MutateSidecarSet, &review(op, obj, old));
        assert!(v.allowed, "mutation refused: {}", v.message);
        apply(obj, v.patch.as_ref())
    };
    let old = old.map(|o| mutate(o, Operation::Create, None));
    let set = mutate(set, op.clone(), old.as_ref());
    run(ctx, Handler::ValidateSidecarSet, &review(op, &set, old.as_ref()))
}

#[test]
fn mutation_defaults_and_hashes() {
    let ctx = context(&[], "");
    let fixture = sidecarset(
        "sidecarset-test",
        json!({"containers": [{"name": "dns-f", "image": "dns:1.0"}],
        "patchPodMetadata": [{"annotations": {"key1": "value1"}}], "injectionStrategy": {"revision": {"customVersion": "1"}}}),
    );
    let v = run(&ctx, Handler::MutateSidecarSet, &review(Operation::Create, &fixture, None));
    let out = apply(&fixture, v.patch.as_ref());
    assert_eq!(
        out["metadata"]["annotations"]["kruise.io/sidecarset-hash"],
        "6wbd76bd7984x24fb4f44fv9222cw9v9bcf85x766744wddd4zwx927zzz2zb684"
    );
    assert_eq!(
        out["metadata"]["annotations"]["kruise.io/sidecarset-hash-without-image"],
        "82684vwf9d4cb4wz4vffx4ddfbb47ww4z4wwxdbwb8w2zbb7zvf4524cdd49bv94"
    );
    assert_eq!(out["spec"]["updateStrategy"], json!({"type": "RollingUpdate", "partition": 0, "maxUnavailable": 1}));
    assert_eq!(out["spec"]["injectionStrategy"]["revision"]["policy"], "Always");
    assert_eq!(out["spec"]["patchPodMetadata"][0]["patchPolicy"], "Retain");
    assert_eq!(out["spec"]["revisionHistoryLimit"], 10);
    // Defaulted objects are left alone; unknown fields survive.
    let again = run(&ctx, Handler::MutateSidecarSet, &review(Operation::Update, &out, Some(&out)));
    assert!(again.patch.is_none(), "{:?}", again.patch);
    let extra = with_field(&fixture, "futureField", json!(1));
    assert_eq!(
        apply(&extra, run(&ctx, Handler::MutateSidecarSet, &review(Operation::Create, &extra, None)).patch.as_ref())["spec"]
            ["futureField"],
        1
    );
    // A changed image changes the hash but not the hash without image.
    let mut newer = out.clone();
    newer["spec"]["containers"][0]["image"] = json!("dns:2.0");
    let newer = apply(
        &newer,
        run(&ctx, Handler::MutateSidecarSet, &review(Operation::Update, &newer, Some(&out))).patch.as_ref(),
    );
    assert_ne!(
        newer["metadata"]["annotations"]["kruise.io/sidecarset-hash"],
        out["metadata"]["annotations"]["kruise.io/sidecarset-hash"]
    );
    assert_eq!(
        newer["metadata"]["annotations"]["kruise.io/sidecarset-hash-without-image"],
        out["metadata"]["annotations"]["kruise.io/sidecarset-hash-without-image"]
    );
    // Other versions and bad quantities are refused with 400; DELETE is allowed untouched.
    let mut body = ReviewRequest::new(Operation::Create, "apps.kruise.io", "v2", "SidecarSet", "sidecarsets")
        .object(fixture.clone());
    assert_eq!(run(&ctx, Handler::MutateSidecarSet, &body).code, 400);
    body = review(
        Operation::Create,
        &sidecarset(
            "bad-quantity",
            json!({"containers": [{"name": "side", "image": "side:1", "resources": {"limits": {"cpu": "lots"}}}]}),
        ),
        None,
    );
    assert_eq!(run(&ctx, Handler::MutateSidecarSet, &body).code, 400);
    body = review(Operation::Delete, &fixture, None);
    assert!(run(&ctx, Handler::MutateSidecarSet, &body).allowed);
    assert!(run(&ctx, Handler::ValidateSidecarSet, &body).allowed);
}

fn with_field(set: &Value, key: &str, v: Value) -> Value {
    let mut s = set.clone();
    s["spec"][key] = v;
    s
}

fn valid() -> Value {
    sidecarset(
        "valid",
        json!({"selector": {"matchLabels": {"app": "web"}}, "containers": [{"name": "side", "image": "side:1"}]}),
    )
}

/// Refused with 422 and exactly `message`.
#[track_caller]
fn assert_422(v: &kruise::webhook::Verdict, message: &str) {
    assert!(!v.allowed, "allowed, wanted {message:?}");
    assert_eq!((v.code, v.message.as_str()), (422, message));
}

#[test]
fn several_errors_are_aggregated() {
    let ctx = context(&[], "");
    assert!(admit(&ctx, &valid(), None).allowed);
    let v = admit(&ctx, &sidecarset("valid", json!({})), None);
    assert_422(
        &v,
        "[spec.selector: Required value: no selector defined for SidecarSet, spec: Required value: no initContainer or container defined for SidecarSet]",
    );
}

#[test]
fn validation_reads_the_request_and_the_cluster_view() {
    let patched = with_field(&valid(), "patchPodMetadata", json!([{"annotations": {"allowed/x": "v"}}]));
    // kruise-configuration of kruise's namespace holds the patchPodMetadata whitelist.
    assert_422(
        &admit(&context(&[], ""), &patched, None),
        "spec.patchPodMetadata: Required value: SidecarSet patch metadata whitelist not found",
    );
    let whitelist = |namespace: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kruise-configuration", "namespace": namespace},
               "data": {"SidecarSet_PatchPodMetadata_WhiteList": json!({"rules": [{"allowedAnnotationKeyExprs": ["^allowed/.*"]}]}).to_string()}})
    };
    assert!(admit(&context(&[whitelist("kruise-system")], ""), &patched, None).allowed);
    assert!(!admit(&context(&[whitelist("default")], ""), &patched, None).allowed, "another namespace's ConfigMap");
    // The gates.
    assert!(admit(&context(&[], "SidecarSetPatchPodMetadataDefaultsAllowed=true"), &patched, None).allowed);

    // ControllerRevisions of kruise's namespace.
    let pinned = with_field(&valid(), "injectionStrategy", json!({"revision": {"revisionName": "valid-1"}}));
    let revision = json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "revision": 1,
          "metadata": {"name": "valid-1", "namespace": "kruise-system", "labels": {"kruise.io/sidecarset-name": "valid"}},
          "data": {"spec": {"containers": [{"name": "side", "image": "side:0"}]}}});
    assert!(admit(&context(&[revision], ""), &pinned, None).allowed);
    assert_422(
        &admit(&context(&[], ""), &pinned, None),
        "revision: Invalid value: null: Cannot find specific ControllerRevision, err: controllerrevisions.apps \"valid-1\" not found",
    );

    // The other SidecarSets of the view (the set itself is one of them on UPDATE).
    let other = sidecarset(
        "other",
        json!({"selector": {"matchLabels": {"app": "web"}}, "containers": [{"name": "side", "image": "o:1"}]}),
    );
    assert_422(
        &admit(&context(std::slice::from_ref(&other), ""), &valid(), None),
        "spec.containers: Invalid value: \"side\": container side already exist in other",
    );
    assert!(admit(&context(&[valid()], ""), &valid(), None).allowed, "a set does not conflict with itself");

    // The old object of an UPDATE.
    let added = with_field(
        &valid(),
        "containers",
        json!([{"name": "side", "image": "side:1"}, {"name": "new", "image": "n:1"}]),
    );
    assert_422(
        &admit(&context(&[], ""), &added, Some(&valid())),
        "spec.containers.name: Invalid value: \"new\": container new is not found",
    );
}
