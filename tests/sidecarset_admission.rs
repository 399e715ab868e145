//! SidecarSet admission as the apiserver runs it: `msidecarset.kb.io` (defaults and hash
//! annotations, spec §4.11, §1.3.2) then `vsidecarset.kb.io` (spec §2.3, answered 422 per
//! decision §11.1). One table row per rule, each with allowed and refused cases, comparing whole
//! messages where kruise's wording is reproduced.

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
    let review = ReviewRequest::new(op, "apps.kruise.io", "v1alpha1", "SidecarSet", "sidecarsets").object(set.clone());
    match old {
        Some(old) => review.old_object(old.clone()),
        None => review,
    }
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

enum Want {
    Allowed,
    /// The whole message.
    Exactly(&'static str),
    /// Every fragment appears in the message.
    Contains(&'static [&'static str]),
}

struct Row {
    name: &'static str,
    set: Value,
    old: Option<Value>,
    objects: Vec<Value>,
    gates: &'static str,
    want: Want,
}

fn row(name: &'static str, set: Value, want: Want) -> Row {
    Row { name, set, old: None, objects: vec![], gates: "", want }
}

fn check(rows: Vec<Row>) {
    for r in rows {
        let ctx = context(&r.objects, r.gates);
        let v = admit(&ctx, &r.set, r.old.as_ref());
        match r.want {
            Want::Allowed => assert!(v.allowed, "{}: refused: {}", r.name, v.message),
            Want::Exactly(msg) => {
                assert!(!v.allowed, "{}: allowed", r.name);
                assert_eq!(v.code, 422, "{}", r.name);
                assert_eq!(v.message, msg, "{}", r.name);
            }
            Want::Contains(parts) => {
                assert!(!v.allowed, "{}: allowed", r.name);
                assert_eq!(v.code, 422, "{}", r.name);
                for p in parts {
                    assert!(v.message.contains(p), "{}: {:?} lacks {p:?}", r.name, v.message);
                }
            }
        }
    }
}

fn valid() -> Value {
    sidecarset(
        "valid",
        json!({"selector": {"matchLabels": {"app": "web"}}, "containers": [{"name": "side", "image": "side:1"}]}),
    )
}

/// `valid()` with `spec` fields replaced.
fn spec(fields: Value) -> Value {
    let mut s = valid();
    for (k, v) in fields.as_object().unwrap() {
        if v.is_null() {
            s["spec"].as_object_mut().unwrap().remove(k);
        } else {
            s["spec"][k] = v.clone();
        }
    }
    s
}

fn container(fields: Value) -> Value {
    let mut c = json!({"name": "side", "image": "side:1"});
    for (k, v) in fields.as_object().unwrap() {
        c[k] = v.clone();
    }
    c
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
    let mut body = ReviewRequest::new(Operation::Create, "apps.kruise.io", "v1beta1", "SidecarSet", "sidecarsets")
        .object(fixture.clone());
    assert_eq!(run(&ctx, Handler::MutateSidecarSet, &body).code, 400);
    body = review(
        Operation::Create,
        &spec(json!({"containers": [container(json!({"resources": {"limits": {"cpu": "lots"}}}))]})),
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

#[test]
fn rule_1_object_meta() {
    let long = "a".repeat(64);
    let long: &'static str = Box::leak(long.into_boxed_str());
    check(vec![
        row("valid", valid(), Want::Allowed),
        row(
            "namespaced",
            with_meta(valid(), json!({"namespace": "default"})),
            Want::Exactly("metadata.namespace: Forbidden: not allowed on this type"),
        ),
        row(
            "bad name",
            with_meta(valid(), json!({"name": "bad_name"})),
            Want::Exactly(
                "metadata.name: Invalid value: \"bad_name\": sidecarset name must consist of alphanumeric characters or '-' (e.g. 'example-com', regex used for validation is '^[a-zA-Z0-9\\-]+$')",
            ),
        ),
        row(
            "long name",
            with_meta(valid(), json!({"name": long})),
            Want::Contains(&["must be no more than 63 characters"]),
        ),
        row(
            "bad label",
            with_meta(valid(), json!({"labels": {"a b": "c"}})),
            Want::Contains(&["metadata.labels: Invalid value: \"a b\""]),
        ),
    ]);
}

fn with_meta(mut set: Value, meta: Value) -> Value {
    for (k, v) in meta.as_object().unwrap() {
        set["metadata"][k] = v.clone();
    }
    set
}

#[test]
fn rule_2_canary() {
    let canary = |base: &str, strategy: &str| {
        with_meta(
            spec(json!({"updateStrategy": {"type": strategy}})),
            json!({"annotations": {
            "apps.kruise.io/sidecarset-canary": "true", "apps.kruise.io/sidecarset-base": base}}),
        )
    };
    let base = sidecarset(
        "base",
        json!({"selector": {"matchLabels": {"app": "web"}}, "containers": [{"name": "side", "image": "side:0"}]}),
    );
    let canary_base = with_meta(
        sidecarset(
            "cbase",
            json!({"selector": {"matchLabels": {"x": "y"}}, "containers": [{"name": "c", "image": "c"}]}),
        ),
        json!({"annotations": {"apps.kruise.io/sidecarset-canary": "true", "apps.kruise.io/sidecarset-base": "base"}}),
    );
    check(vec![
        Row {
            objects: vec![base.clone()],
            ..row(
                "canary of an existing base, NotUpdate (same containers as the base are fine)",
                canary("base", "NotUpdate"),
                Want::Allowed,
            )
        },
        row(
            "base missing",
            canary("nope", "NotUpdate"),
            Want::Contains(&["fetch base sidecarSet[nope] failed: sidecarsets.apps.kruise.io \"nope\" not found"]),
        ),
        Row {
            objects: vec![base.clone()],
            ..row(
                "RollingUpdate canary",
                canary("base", "RollingUpdate"),
                Want::Contains(&["RollingUpdate is not supported for canary sidecarSet"]),
            )
        },
        Row {
            objects: vec![valid()],
            ..row("base is itself", canary("valid", "NotUpdate"), Want::Contains(&["base sidecarSet cannot be itself"]))
        },
        Row {
            objects: vec![canary_base],
            ..row(
                "base is a canary",
                canary("cbase", "NotUpdate"),
                Want::Contains(&["base sidecarSet cannot be canary"]),
            )
        },
        Row {
            objects: vec![
                base.clone(),
                sidecarset(
                    "base2",
                    json!({"selector": {"matchLabels": {"q": "r"}}, "containers": [{"name": "q", "image": "q"}]}),
                ),
            ],
            old: Some(canary("base2", "NotUpdate")),
            ..row(
                "base annotation is immutable",
                canary("base", "NotUpdate"),
                Want::Contains(&["annotations[apps.kruise.io/sidecarset-base] is immutable"]),
            )
        },
    ]);
}

#[test]
fn rules_3_to_6_strategies_and_selectors() {
    let native = json!([{"name": "native", "image": "n:1", "restartPolicy": "Always"}]);
    check(vec![
        row(
            "native sidecar with RollingUpdate",
            spec(json!({"initContainers": native})),
            Want::Exactly(
                "spec.updateStrategy: Required value: The initContainer in-place upgrade is not currently supported.",
            ),
        ),
        row(
            "native sidecar with NotUpdate",
            spec(json!({"initContainers": native, "updateStrategy": {"type": "NotUpdate"}})),
            Want::Allowed,
        ),
        row(
            "no selector",
            spec(json!({"selector": null})),
            Want::Exactly("spec.selector: Required value: no selector defined for SidecarSet"),
        ),
        row(
            "empty selector",
            spec(json!({"selector": {}})),
            Want::Exactly("spec.selector: Invalid value: {}: empty selector is not valid for sidecarset."),
        ),
        row(
            "invalid selector: validation and parse errors",
            spec(json!({"selector": {"matchLabels": {"a b": "c"}}})),
            Want::Contains(&[
                "[spec.selector.matchLabels: Invalid value: \"a b\"",
                "spec.selector.selector: Invalid value: {\"matchLabels\":{\"a b\":\"c\"}}",
            ]),
        ),
        row(
            "empty namespaceSelector",
            spec(json!({"namespaceSelector": {}})),
            Want::Exactly("spec.namespaceSelector: Invalid value: {}: empty selector is not valid for sidecarset."),
        ),
        row("namespaceSelector", spec(json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}})), Want::Allowed),
        row(
            "revision without name or version",
            spec(json!({"injectionStrategy": {"revision": {}}})),
            Want::Exactly(
                "revision: Invalid value: {\"policy\":\"Always\"}: revisionName and customVersion cannot be empty simultaneously",
            ),
        ),
        row(
            "revision not found",
            spec(json!({"injectionStrategy": {"revision": {"revisionName": "nope"}}})),
            Want::Exactly(
                "revision: Invalid value: null: Cannot find specific ControllerRevision, err: controllerrevisions.apps \"nope\" not found",
            ),
        ),
        row(
            "custom version not found",
            spec(json!({"injectionStrategy": {"revision": {"customVersion": "v9"}}})),
            Want::Exactly(
                "revision: Invalid value: null: Cannot find specific ControllerRevision, err: ControllerRevision.apps \"valid\" not found",
            ),
        ),
        Row {
            objects: vec![json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "revision": 1,
                  "metadata": {"name": "valid-1", "namespace": "kruise-system", "labels": {"kruise.io/sidecarset-name": "valid"}},
                  "data": {"spec": {"containers": [{"name": "side", "image": "side:0"}]}}})],
            ..row(
                "revision found, bad policy",
                spec(json!({"injectionStrategy": {"revision": {"revisionName": "valid-1", "policy": "Sometimes"}}})),
                Want::Exactly(
                    "revision.policy: Invalid value: {\"policy\":\"Sometimes\",\"revisionName\":\"valid-1\"}: Invalid policy Sometimes, supported: [Always, Partial]",
                ),
            )
        },
        row(
            "partition with selector",
            spec(json!({"updateStrategy": {"partition": 1, "selector": {"matchLabels": {"a": "b"}}}})),
            Want::Contains(&["updateStrategy: Invalid value: ", "Partition and Selector cannot be used together"]),
        ),
        row(
            "zero partition with selector",
            spec(json!({"updateStrategy": {"partition": 0, "selector": {"matchLabels": {"a": "b"}}}})),
            Want::Allowed,
        ),
        row(
            "bad partition",
            spec(json!({"updateStrategy": {"partition": "x"}})),
            Want::Exactly(
                "spec.updateStrategy.partition: Invalid value: \"x\": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
            ),
        ),
        row(
            "negative maxUnavailable",
            spec(json!({"updateStrategy": {"maxUnavailable": -1}})),
            Want::Exactly("spec.updateStrategy.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"),
        ),
        row(
            "percent maxUnavailable over 100 is fine",
            spec(json!({"updateStrategy": {"maxUnavailable": "150%"}})),
            Want::Allowed,
        ),
        row(
            "both priorities",
            spec(
                json!({"updateStrategy": {"priorityStrategy": {"weightPriority": [{"weight": 1, "matchSelector": {"matchLabels": {"a": "b"}}}],
            "orderPriority": [{"orderedKey": "k"}]}}}),
            ),
            Want::Exactly(
                "spec.updateStrategy.priorityStrategy: Required value: only one of weightPriority and orderPriority can be used",
            ),
        ),
        row(
            "duplicate scatter",
            spec(
                json!({"updateStrategy": {"scatterStrategy": [{"key": "a", "value": "b"}, {"key": "a", "value": "b"}]}}),
            ),
            Want::Exactly("spec.updateStrategy.scatterStrategy: Required value: duplicated key=a value=b"),
        ),
        row(
            "NotUpdate skips strategy checks",
            spec(json!({"updateStrategy": {"type": "NotUpdate", "partition": "x", "maxUnavailable": -1}})),
            Want::Allowed,
        ),
    ]);
}

#[test]
fn rules_8_to_10_containers() {
    check(vec![
        row(
            "no containers",
            spec(json!({"containers": null})),
            Want::Exactly("spec: Required value: no initContainer or container defined for SidecarSet"),
        ),
        row(
            "only init containers",
            spec(json!({"containers": null, "initContainers": [{"name": "i", "image": "i:1"}]})),
            Want::Allowed,
        ),
        row(
            "inject policy",
            spec(json!({"containers": [container(json!({"podInjectPolicy": "Middle"}))]})),
            Want::Exactly("spec.container.podInjectPolicy: Invalid value: \"Middle\": unsupported pod inject policy"),
        ),
        row(
            "share volume policy",
            spec(json!({"containers": [container(json!({"shareVolumePolicy": {"type": "maybe"}}))]})),
            Want::Exactly(
                "spec.container.shareVolumePolicy: Invalid value: {\"type\":\"maybe\"}: unsupported share volume policy",
            ),
        ),
        row(
            "transferEnv from an unsubscripted field",
            spec(json!({"containers": [container(json!({"transferEnv": [
            {"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.name"}}, "envName": "A"}]}))]})),
            Want::Exactly(
                "spec[0].transferEnv.fieldRef.fieldPath: Invalid value: \"metadata.name\": error converting fieldPath: field label not supported: metadata.name",
            ),
        ),
        row(
            "transferEnv from a bad label key",
            spec(json!({"containers": [container(json!({"transferEnv": [
            {"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.labels['a b']"}}, "envName": "A"}]}))]})),
            Want::Contains(&[
                "spec[0].transferEnv.fieldRef: Invalid value: \"a b\": name part must consist of alphanumeric characters",
            ]),
        ),
        row(
            "transferEnv from a label",
            spec(json!({"containers": [container(json!({"transferEnv": [
            {"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}, "envName": "A"}]}))]})),
            Want::Allowed,
        ),
        row(
            "mount of an unknown volume",
            spec(json!({"containers": [container(json!({"volumeMounts": [{"name": "missing", "mountPath": "/m"}]}))]})),
            Want::Exactly("spec.containers[0].volumeMounts[0].name: Not found: \"missing\""),
        ),
        row(
            "mount of a set volume",
            spec(
                json!({"volumes": [{"name": "v"}], "containers": [container(json!({"volumeMounts": [{"name": "v", "mountPath": "/m"}]}))]}),
            ),
            Want::Allowed,
        ),
        row(
            "duplicate names",
            spec(json!({"containers": [container(json!({})), container(json!({}))]})),
            Want::Exactly("spec.containers[1].name: Duplicate value: \"side\""),
        ),
        row(
            "no image",
            spec(json!({"containers": [{"name": "side"}]})),
            Want::Exactly("spec.containers[0].image: Required value"),
        ),
        row(
            "resourcesPolicy with resources",
            spec(json!({"containers": [container(json!({"resources": {"limits": {"cpu": "1"}},
            "resourcesPolicy": {"targetContainersMode": "sum", "targetContainersNameRegex": ".*", "resourcesExpr": {"limits": {"cpu": "cpu"}}}}))]})),
            Want::Contains(&[
                "spec[0].resourcesPolicy: Invalid value: ",
                "resourcesPolicy and resources cannot be configured together",
            ]),
        ),
        row(
            "resourcesPolicy regex",
            spec(json!({"containers": [container(json!({
            "resourcesPolicy": {"targetContainersMode": "sum", "targetContainersNameRegex": "(", "resourcesExpr": {}}}))]})),
            Want::Contains(&[
                "spec[0].resourcesPolicy.targetContainersNameRegex: Invalid value: \"(\": invalid regex pattern",
                "spec[0].resourcesPolicy.resourcesExpr: Invalid value: {}: at least one of limits or requests must be configured",
            ]),
        ),
        row(
            "init resourcesPolicy needs a native sidecar",
            spec(json!({"initContainers": [{"name": "i", "image": "i:1",
            "resourcesPolicy": {"targetContainersMode": "max", "targetContainersNameRegex": ".*", "resourcesExpr": {"requests": {"cpu": "cpu"}}}}]})),
            Want::Contains(&[
                "spec[0].resourcesPolicy: Invalid value: ",
                "resourcesPolicy is only supported for containers with RestartPolicy Always",
            ]),
        ),
    ]);
}

#[test]
fn rule_11_patch_pod_metadata() {
    let patch = |entries: Value| spec(json!({"patchPodMetadata": entries}));
    let whitelist = |rules: Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kruise-configuration", "namespace": "kruise-system"},
               "data": {"SidecarSet_PatchPodMetadata_WhiteList": rules.to_string()}})
    };
    let allow_prefix = whitelist(json!({"rules": [{"allowedAnnotationKeyExprs": ["^allowed/.*"]}]}));
    let selective = whitelist(
        json!({"rules": [{"selector": {"matchLabels": {"team": "a"}}, "allowedAnnotationKeyExprs": [".*"]}]}),
    );
    check(vec![
        row(
            "no whitelist",
            patch(json!([{"annotations": {"k": "v"}}])),
            Want::Exactly("spec.patchPodMetadata: Required value: SidecarSet patch metadata whitelist not found"),
        ),
        Row {
            gates: "SidecarSetPatchPodMetadataDefaultsAllowed=true",
            ..row("no whitelist, defaults allowed", patch(json!([{"annotations": {"k": "v"}}])), Want::Allowed)
        },
        Row {
            objects: vec![allow_prefix.clone()],
            ..row("key allowed", patch(json!([{"annotations": {"allowed/x": "v"}}])), Want::Allowed)
        },
        Row {
            objects: vec![allow_prefix.clone()],
            ..row(
                "key not allowed",
                patch(json!([{"annotations": {"other": "v"}}])),
                Want::Exactly(
                    "spec.patchPodMetadata: Required value: sidecarSet patch metadata annotation(other) is not allowed",
                ),
            )
        },
        Row {
            objects: vec![selective.clone()],
            ..row(
                "no rule for the set's labels",
                patch(json!([{"annotations": {"k": "v"}}])),
                Want::Exactly(
                    "spec.patchPodMetadata: Required value: sidecarSet patch metadata annotation is not allowed",
                ),
            )
        },
        Row {
            objects: vec![selective],
            ..row(
                "rule for the set's labels",
                with_meta(patch(json!([{"annotations": {"k": "v"}}])), json!({"labels": {"team": "a"}})),
                Want::Allowed,
            )
        },
        Row {
            gates: "SidecarSetPatchPodMetadataDefaultsAllowed=true",
            ..row(
                "empty annotations",
                patch(json!([{"patchPolicy": "Overwrite"}])),
                Want::Exactly("spec.patchPodMetadata: Required value: no annotations defined for SidecarSet"),
            )
        },
        Row {
            gates: "SidecarSetPatchPodMetadataDefaultsAllowed=true",
            ..row(
                "a key twice",
                patch(json!([{"annotations": {"k": "v"}}, {"annotations": {"k": "w"}, "patchPolicy": "Overwrite"}])),
                Want::Exactly("spec.patchPodMetadata: Required value: patch annotation[k] already exist"),
            )
        },
        Row {
            gates: "SidecarSetPatchPodMetadataDefaultsAllowed=true",
            ..row(
                "bad key",
                patch(json!([{"annotations": {"a b": "v"}}])),
                Want::Contains(&["patchPodMetadata.annotations: Invalid value: \"a b\""]),
            )
        },
    ]);
}

#[test]
fn rule_12_update() {
    check(vec![
        Row { old: Some(valid()), ..row("unchanged containers", valid(), Want::Allowed) },
        Row {
            old: Some(valid()),
            ..row("image change", spec(json!({"containers": [container(json!({"image": "side:2"}))]})), Want::Allowed)
        },
        Row {
            old: Some(valid()),
            ..row(
                "added container",
                spec(json!({"containers": [container(json!({})), container(json!({"name": "new"}))]})),
                Want::Exactly("spec.containers.name: Invalid value: \"new\": container new is not found"),
            )
        },
        Row {
            old: Some(valid()),
            ..row(
                "upgradeType change",
                spec(
                    json!({"containers": [container(json!({"upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "e"}}))]}),
                ),
                Want::Exactly(
                    "spec.containers.upgradeStrategy.upgradeType: Invalid value: \"side\": container side upgradeType is immutable",
                ),
            )
        },
    ]);
}

#[test]
fn rule_13_conflicts() {
    let other = |selector: Value, extra: Value| {
        let mut s =
            sidecarset("other", json!({"selector": selector, "containers": [{"name": "other-c", "image": "o:1"}]}));
        for (k, v) in extra.as_object().unwrap() {
            s["spec"][k] = v.clone();
        }
        s
    };
    let web = json!({"matchLabels": {"app": "web"}});
    let same_container = json!({"containers": [{"name": "side", "image": "o:1"}]});
    let overwrite = |policy: &str| json!([{"annotations": {"k": "v"}, "patchPolicy": policy}]);
    let gates = "SidecarSetPatchPodMetadataDefaultsAllowed=true";
    check(vec![
        Row {
            objects: vec![other(web.clone(), same_container.clone())],
            ..row(
                "same container name",
                valid(),
                Want::Exactly("spec.containers: Invalid value: \"side\": container side already exist in other"),
            )
        },
        Row {
            objects: vec![other(json!({"matchLabels": {"app": "db"}}), same_container.clone())],
            ..row("disjoint selectors", valid(), Want::Allowed)
        },
        Row {
            objects: vec![other(json!({"matchLabels": {"tier": "x"}}), same_container.clone())],
            ..row("different keys overlap", valid(), Want::Contains(&["container side already exist in other"]))
        },
        Row {
            objects: vec![other(
                web.clone(),
                json!({"namespace": "a", "containers": [{"name": "side", "image": "o"}]}),
            )],
            ..row("disjoint namespaces", spec(json!({"namespace": "b"})), Want::Allowed)
        },
        Row {
            objects: vec![other(
                web.clone(),
                json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}, "containers": [{"name": "side", "image": "o"}]}),
            )],
            ..row(
                "one namespace scope unknown: overlapping",
                spec(json!({"namespace": "b"})),
                Want::Contains(&["already exist in other"]),
            )
        },
        Row {
            objects: vec![other(web.clone(), json!({"initContainers": [{"name": "init", "image": "i"}]}))],
            ..row(
                "same init container name",
                spec(json!({"initContainers": [{"name": "init", "image": "i"}]})),
                Want::Exactly("spec.containers: Invalid value: \"init\": container init already exist in other"),
            )
        },
        Row {
            objects: vec![other(web.clone(), json!({"volumes": [{"name": "v", "hostPath": {"path": "/a"}}]}))],
            ..row(
                "same volume, other definition",
                spec(json!({"volumes": [{"name": "v", "hostPath": {"path": "/b"}}]})),
                Want::Exactly("spec.volumes: Invalid value: \"v\": volume v is in conflict with sidecarset other"),
            )
        },
        Row {
            objects: vec![other(web.clone(), json!({"volumes": [{"name": "v", "hostPath": {"path": "/a"}}]}))],
            ..row(
                "same volume, same definition",
                spec(json!({"volumes": [{"name": "v", "hostPath": {"path": "/a"}}]})),
                Want::Allowed,
            )
        },
        Row {
            gates,
            objects: vec![other(web.clone(), json!({"patchPodMetadata": overwrite("Overwrite")}))],
            ..row(
                "annotation overwritten by the other",
                spec(json!({"patchPodMetadata": overwrite("MergePatchJson")})),
                Want::Exactly(
                    "spec.patchPodMetadata: Invalid value: \"k\": annotation k is in conflict with sidecarset other",
                ),
            )
        },
        Row {
            gates,
            objects: vec![other(web.clone(), json!({"patchPodMetadata": overwrite("MergePatchJson")}))],
            ..row("both MergePatchJson", spec(json!({"patchPodMetadata": overwrite("MergePatchJson")})), Want::Allowed)
        },
        Row {
            gates,
            objects: vec![other(web.clone(), json!({"patchPodMetadata": overwrite("Overwrite")}))],
            ..row("Retain is ignored", spec(json!({"patchPodMetadata": overwrite("Retain")})), Want::Allowed)
        },
        Row {
            objects: vec![other(web.clone(), same_container.clone())],
            ..row(
                "conflicts only when everything else passed",
                spec(json!({"selector": {}})),
                Want::Exactly("spec.selector: Invalid value: {}: empty selector is not valid for sidecarset."),
            )
        },
        Row {
            objects: vec![with_meta(valid(), json!({}))],
            ..row("a set does not conflict with itself", valid(), Want::Allowed)
        },
    ]);
}

#[test]
fn several_errors_are_aggregated() {
    let ctx = context(&[], "");
    let v = admit(&ctx, &spec(json!({"selector": null, "containers": null})), None);
    assert_eq!(
        v.message,
        "[spec.selector: Required value: no selector defined for SidecarSet, spec: Required value: no initContainer or container defined for SidecarSet]"
    );
    assert_eq!(v.code, 422);
}
