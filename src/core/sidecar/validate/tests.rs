//! The rules of the SidecarSet validating webhook (spec §2.3), one table per rule group, on
//! typed SidecarSets defaulted as the mutating webhook leaves them. `tests/sidecarset_admission.rs`
//! shows the handler answering these decisions (422, the cluster view as input).

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;
use crate::compat::field::aggregate;
use crate::core::sidecar::defaults::default_sidecarset;

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

/// Runs each row as the webhooks do: the set (and the old set) defaulted by the mutating
/// webhook, the cluster view's SidecarSets as stored (defaulted, with hashes), its
/// ControllerRevisions and `kruise-configuration` of kruise's namespace.
fn check(rows: Vec<Row>) {
    for r in rows {
        let gates = FeatureGates::parse(r.gates).unwrap();
        let (mut all, mut revisions, mut whitelist) = (Vec::new(), Vec::new(), None);
        for o in &r.objects {
            match o["kind"].as_str() {
                Some("SidecarSet") => all.push(Arc::new(defaulted(o))),
                Some("ControllerRevision") => revisions.push(Arc::new(serde_json::from_value(o.clone()).unwrap())),
                Some("ConfigMap") => whitelist = o["data"][WHITELIST_KEY].as_str().map(str::to_string),
                _ => panic!("{}: no view holds {o}", r.name),
            }
        }
        let set = defaulted(&r.set);
        let old = r.old.as_ref().map(defaulted);
        let input = ValidationInput {
            old: old.as_ref(),
            all: &all,
            revisions: &revisions,
            whitelist: whitelist.as_deref(),
            gates: &gates,
        };
        let got = aggregate(&validate_sidecarset(&set, &input));
        match r.want {
            Want::Allowed => assert_eq!(got, "", "{}: refused", r.name),
            Want::Exactly(msg) => assert_eq!(got, msg, "{}", r.name),
            Want::Contains(parts) => {
                assert!(!got.is_empty(), "{}: allowed", r.name);
                for p in parts {
                    assert!(got.contains(p), "{}: {got:?} lacks {p:?}", r.name);
                }
            }
        }
    }
}

/// A SidecarSet as the mutating webhook leaves it.
fn defaulted(o: &Value) -> SidecarSet {
    let mut set: SidecarSet = serde_json::from_value(o.clone()).unwrap();
    default_sidecarset(&mut set).unwrap();
    set
}

fn sidecarset(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet", "metadata": {"name": name}, "spec": spec})
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
        // Kruise refuses this; our controller upgrades native sidecars in place (issue 28 item 6).
        row("native sidecar with RollingUpdate", spec(json!({"initContainers": native})), Want::Allowed),
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
    check(vec![row(
        "no selector and no containers",
        spec(json!({"selector": null, "containers": null})),
        Want::Exactly(
            "[spec.selector: Required value: no selector defined for SidecarSet, spec: Required value: no initContainer or container defined for SidecarSet]",
        ),
    )]);
}
