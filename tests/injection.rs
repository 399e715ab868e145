//! Sidecar injection into pods through the `/mutate-pod` handler (spec §4.1–§4.5), one table
//! row per behaviour. Every row applies the returned patch to the request pod with
//! `json_patch::patch` and compares the result with the expected pod (hash-annotation timestamps
//! read `T`), then sends the patched pod again and expects no patch (re-invocation, issue 4
//! item 5). Placement and hot upgrade (§4.6, §4.7) are in `injection_placement.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::cases::*;
use common::sidecar::*;
use common::with;
use kruise::webhook::Context;
use serde_json::{Value, json};

/// Spec §4.6's example: kruise `sidecarset_test.go`.
fn kruise_example() -> (Value, Value) {
    let set = sidecarset(
        "sidecarset1",
        json!({"selector": {"matchLabels": {"app": "suxing-test"}},
               "initContainers": [{"name": "init-2", "image": "busybox:1.36"}, {"name": "init-1", "image": "busybox:1.36"}],
               "containers": [{"name": "dns-f", "image": "dns:1.0"},
                              {"name": "log-agent", "image": "log:1.0", "podInjectPolicy": "AfterAppContainer"}]}),
    );
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "test-pod", "namespace": "default", "labels": {"app": "suxing-test"}},
        "spec": {"initContainers": [{"name": "init-0", "image": "busybox"}],
                 "containers": [{"name": "nginx", "image": "nginx:1.15.1",
                                 "env": [{"name": "hello1", "value": "world1"}, {"name": "hello2", "value": "world2"}],
                                 "volumeMounts": [{"name": "volume-a", "mountPath": "/a/b"}, {"name": "volume-b", "mountPath": "/e/f"}]}],
                 "volumes": [{"name": "volume-a", "emptyDir": {}}, {"name": "volume-b", "emptyDir": {}}]}});
    (set, pod)
}

#[test]
fn entry_conditions_4_1() {
    let set = simple_set("s", json!({"matchLabels": {"app": "web"}}));
    let web = pod(json!({"app": "web"}), json!([app()]));
    let owned = with(&web, |p| {
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "name": "c", "uid": "u", "controller": true}]);
    });
    let injected_web = |ctx: &Context, base: &Value| {
        with(base, |p| {
            p["spec"]["containers"] = json!([injected("s-c", "side:1", json!([is_injected()])), app()]);
            add_annotations(p, bookkeeping(ctx, &[("s", &["s-c"], None)], "s"));
        })
    };
    let cases = vec![
        case("decode failure is 400", vec![], json!({"metadata": {"name": 1}, "spec": "x"}), |_| {
            Want::Code(400, "cannot decode Pod")
        }),
        case("no SidecarSet: no patch", vec![], web.clone(), |_| Want::Same),
        case("matched set injects", vec![set.clone()], web.clone(), {
            let web = web.clone();
            move |ctx| Want::Pod(injected_web(ctx, &web))
        }),
        case(
            "empty pod namespace is matched in the request namespace and never patched",
            vec![set.clone()],
            with(&web, |p| {
                p["metadata"].as_object_mut().unwrap().remove("namespace");
            }),
            {
                let web = web.clone();
                move |ctx| {
                    Want::Pod(with(&injected_web(ctx, &web), |p| {
                        p["metadata"].as_object_mut().unwrap().remove("namespace");
                    }))
                }
            },
        ),
        case("subresource: no injection", vec![set.clone()], web.clone(), |_| Want::Same)
            .shape(Shape::CreateSubresource("status")),
        case("UPDATE is not mutated", vec![set.clone()], web.clone(), |_| Want::Same).shape(Shape::Update),
        case(
            "succeeded pod: no injection",
            vec![set.clone()],
            with(&web, |p| p["status"] = json!({"phase": "Succeeded"})),
            |_| Want::Same,
        ),
        case(
            "failed pod: no injection",
            vec![set.clone()],
            with(&web, |p| p["status"] = json!({"phase": "Failed"})),
            |_| Want::Same,
        ),
        case(
            "deleting pod: no injection",
            vec![set.clone()],
            with(&web, |p| p["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z")),
            |_| Want::Same,
        ),
        case("kruise-owned pod gets the KruisePodReady gate", vec![], owned.clone(), {
            let owned = owned.clone();
            move |_| {
                Want::Pod(with(&owned, |p| p["spec"]["readinessGates"] = json!([{"conditionType": "KruisePodReady"}])))
            }
        }),
        case(
            "the gate is not added twice",
            vec![],
            with(&owned, |p| p["spec"]["readinessGates"] = json!([{"conditionType": "KruisePodReady"}])),
            |_| Want::Same,
        ),
        case(
            "a mutator error is 500",
            vec![set.clone()],
            with(&web, |p| add_annotations(p, json!({"kruise.io/sidecarset-hash": "{not json"}))),
            |_| Want::Code(500, "pod(default/test-pod) invalid annotations[kruise.io/sidecarset-hash]"),
        ),
        case(
            "launch priority: Ordered",
            vec![],
            with(&web, |p| {
                p["spec"]["containers"] = json!([app(), {"name": "b", "image": "b:1"}]);
                add_annotations(p, json!({"apps.kruise.io/container-launch-priority": "Ordered"}));
            }),
            {
                let web = web.clone();
                move |_| {
                    Want::Pod(with(&web, |p| {
                        let barrier = |k: &str| json!([{"name": "KRUISE_CONTAINER_BARRIER", "valueFrom": {"configMapKeyRef": {"name": "test-pod-barrier", "key": k}}}]);
                        p["spec"]["containers"] = json!([
                    with(&app(), |c| c["env"] = barrier("p_0")),
                    {"name": "b", "image": "b:1", "env": barrier("p_-1")}]);
                        add_annotations(p, json!({"apps.kruise.io/container-launch-priority": "Ordered"}));
                    }))
                }
            },
        ),
        // Issue 13 item 2: the sidecar takes part in the ordering and keeps its barrier when the
        // re-invocation replaces it with a freshly built copy (it used to lose it, so the second
        // pass answered a patch removing the sidecar's KRUISE_CONTAINER_BARRIER).
        case(
            "launch priority: Ordered with an injected sidecar",
            vec![set.clone()],
            with(&web, |p| {
                p["spec"]["containers"] = json!([app(), {"name": "b", "image": "b:1"}]);
                add_annotations(p, json!({"apps.kruise.io/container-launch-priority": "Ordered"}));
            }),
            {
                let web = web.clone();
                move |ctx| {
                    Want::Pod(with(&web, |p| {
                        let barrier = |k: &str| json!({"name": "KRUISE_CONTAINER_BARRIER", "valueFrom": {"configMapKeyRef": {"name": "test-pod-barrier", "key": k}}});
                        p["spec"]["containers"] = json!([
                            injected("s-c", "side:1", json!([is_injected(), barrier("p_0")])),
                            with(&app(), |c| c["env"] = json!([barrier("p_-1")])),
                            {"name": "b", "image": "b:1", "env": [barrier("p_-2")]}]);
                        add_annotations(p, json!({"apps.kruise.io/container-launch-priority": "Ordered"}));
                        add_annotations(p, bookkeeping(ctx, &[("s", &["s-c"], None)], "s"));
                    }))
                }
            },
        ),
        case(
            "launch priority: declared priorities with an injected sidecar",
            vec![sidecarset(
                "s",
                json!({"selector": {"matchLabels": {"app": "web"}}, "containers": [{"name": "s-c", "image": "side:1",
                    "env": [{"name": "KRUISE_CONTAINER_PRIORITY", "value": "100"}]}]}),
            )],
            with(&web, |p| p["spec"]["containers"] = json!([app(), {"name": "b", "image": "b:1"}])),
            {
                let web = web.clone();
                move |ctx| {
                    Want::Pod(with(&web, |p| {
                        let barrier = |k: &str| json!({"name": "KRUISE_CONTAINER_BARRIER", "valueFrom": {"configMapKeyRef": {"name": "test-pod-barrier", "key": k}}});
                        let priority = json!({"name": "KRUISE_CONTAINER_PRIORITY", "value": "100"});
                        p["spec"]["containers"] = json!([
                            injected("s-c", "side:1", json!([priority, is_injected(), barrier("p_100")])),
                            with(&app(), |c| c["env"] = json!([barrier("p_0")])),
                            {"name": "b", "image": "b:1", "env": [barrier("p_0")]}]);
                        add_annotations(p, bookkeeping(ctx, &[("s", &["s-c"], None)], "s"));
                    }))
                }
            },
        ),
    ];
    run_cases(cases);

    // Gate KruisePodReadinessGate: every pod; gate PodWebhook off: nothing at all.
    let gated = case("readiness gate for every pod", vec![], web.clone(), {
        let web = web.clone();
        move |_| Want::Pod(with(&web, |p| p["spec"]["readinessGates"] = json!([{"conditionType": "KruisePodReady"}])))
    })
    .gates("KruisePodReadinessGate=true");
    let off = case("PodWebhook off", vec![set], web, |_| Want::Same).gates("PodWebhook=false");
    run_cases(vec![gated, off]);
}

#[test]
fn which_sets_apply_4_2() {
    let web = pod(json!({"app": "web", "tier": "front"}), json!([app()]));
    let inject = |sets: &'static [&'static str]| {
        let web = web.clone();
        move |ctx: &Context| {
            Want::Pod(with(&web, |p| {
                let mut containers: Vec<Value> =
                    sets.iter().map(|s| injected(&format!("{s}-c"), "side:1", json!([is_injected()]))).collect();
                containers.push(app());
                p["spec"]["containers"] = Value::Array(containers);
                let lists: Vec<Vec<String>> = sets.iter().map(|s| vec![format!("{s}-c")]).collect();
                let refs: Vec<Vec<&str>> = lists.iter().map(|l| l.iter().map(String::as_str).collect()).collect();
                let entries: Vec<(&str, &[&str], Option<&str>)> =
                    sets.iter().zip(&refs).map(|(s, l)| (*s, l.as_slice(), None)).collect();
                let mut names: Vec<&str> = sets.to_vec();
                names.sort();
                add_annotations(p, bookkeeping(ctx, &entries, &names.join(",")));
            }))
        }
    };
    let set = |name: &str, extra: Value| {
        let mut s = simple_set(name, json!({"matchLabels": {"app": "web"}}));
        for (k, v) in extra.as_object().unwrap() {
            s["spec"][k] = v.clone();
        }
        s
    };
    let cases = vec![
        case("selector matches", vec![set("a", json!({}))], web.clone(), inject(&["a"])),
        case(
            "selector does not match",
            vec![set("a", json!({"selector": {"matchLabels": {"app": "db"}}}))],
            web.clone(),
            |_| Want::Same,
        ),
        case("empty selector never matches", vec![set("a", json!({"selector": {}}))], web.clone(), |_| Want::Same),
        case(
            "missing selector never matches",
            vec![with(&set("a", json!({})), |s| {
                s["spec"].as_object_mut().unwrap().remove("selector");
            })],
            web.clone(),
            |_| Want::Same,
        ),
        case(
            "matchExpressions",
            vec![set(
                "a",
                json!({"selector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]}}),
            )],
            web.clone(),
            inject(&["a"]),
        ),
        case(
            "spec.namespace is the pod's",
            vec![set("a", json!({"namespace": "default"}))],
            web.clone(),
            inject(&["a"]),
        ),
        case("spec.namespace is another", vec![set("a", json!({"namespace": "other"}))], web.clone(), |_| Want::Same),
        case(
            "namespaceSelector over the Namespace's labels",
            vec![
                namespace("default", json!({"env": "prod"})),
                set("a", json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}})),
            ],
            web.clone(),
            inject(&["a"]),
        ),
        case(
            "namespaceSelector not matching",
            vec![
                namespace("default", json!({"env": "dev"})),
                set("a", json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}})),
            ],
            web.clone(),
            |_| Want::Same,
        ),
        case(
            "unknown namespace has only its name label",
            vec![
                set("a", json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "default"}}})),
                set("b", json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}})),
            ],
            web.clone(),
            inject(&["a"]),
        ),
        case(
            "injection paused",
            vec![set("a", json!({"injectionStrategy": {"paused": true}})), set("b", json!({}))],
            web.clone(),
            inject(&["b"]),
        ),
        case(
            "two sets in candidate order",
            vec![set("zz", json!({})), set("aa", json!({"namespace": "default"}))],
            web.clone(),
            inject(&["aa", "zz"]),
        ),
        case(
            "a bad selector operator is 500",
            vec![set("a", json!({"selector": {"matchExpressions": [{"key": "app", "operator": "Near"}]}}))],
            web.clone(),
            |_| Want::Code(500, "\"Near\" is not a valid pod selector operator"),
        ),
        case(
            "a canary set drops its base",
            vec![
                set("base", json!({})),
                with(&set("canary", json!({"updateStrategy": {"type": "NotUpdate"}})), |s| {
                    s["metadata"]["annotations"] =
                        json!({"apps.kruise.io/sidecarset-canary": "true", "apps.kruise.io/sidecarset-base": "base"})
                }),
            ],
            web.clone(),
            inject(&["canary"]),
        ),
    ];
    run_cases(cases);
}

fn revision(name: &str, set: &str, revision: i64, custom: Option<&str>, image: &str, annotations: Value) -> Value {
    let mut labels = json!({"kruise.io/sidecarset-name": set});
    if let Some(c) = custom {
        labels["apps.kruise.io/sidecarset-custom-version"] = json!(c);
    }
    json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
           "metadata": {"name": name, "namespace": "kruise-system", "labels": labels, "annotations": annotations},
           "revision": revision,
           "data": {"spec": {"$patch": "replace", "volumes": null, "initContainers": null, "imagePullSecrets": null,
                             "patchPodMetadata": null,
                             "containers": [{"name": "side", "image": image, "imagePullPolicy": "IfNotPresent",
                                             "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                                             "podInjectPolicy": "BeforeAppContainer", "upgradeStrategy": {"upgradeType": "ColdUpgrade"},
                                             "shareVolumePolicy": {"type": "disabled"}}]}}})
}

#[test]
fn historical_versions_4_2() {
    let web = pod(json!({"app": "web", "canary": "no"}), json!([app()]));
    let set = |strategy: Value, update: Value| {
        let mut s = sidecarset(
            "s",
            json!({"selector": {"matchLabels": {"app": "web"}},
            "containers": [{"name": "side", "image": "side:2"}], "injectionStrategy": {"revision": strategy}, "updateStrategy": update}),
        );
        s["status"] = json!({"latestRevision": "s-live", "matchedPods": 0, "updatedPods": 0, "readyPods": 0});
        s
    };
    let revs = vec![
        revision(
            "s-old",
            "s",
            1,
            Some("v1"),
            "side:1",
            json!({"kruise.io/sidecarset-hash": "oldhash", "kruise.io/sidecarset-hash-without-image": "oldhash-wi"}),
        ),
        revision("s-older", "s", 0, Some("v1"), "side:0", json!({})),
    ];
    let expect = |image: &'static str, history: Option<&'static str>| {
        let web = web.clone();
        move |ctx: &Context| {
            Want::Pod(with(&web, |p| {
                p["spec"]["containers"] = json!([injected("side", image, json!([is_injected()])), app()]);
                let (h, hw, rev) = match history {
                    Some("s-old") => ("oldhash".to_string(), "oldhash-wi".to_string(), "s-old"),
                    Some(other) => {
                        let spec: kruise::apis::sidecarset::SidecarSetSpec =
                            serde_json::from_value(json!({"containers": [
                            {"name": "side", "image": "side:0", "imagePullPolicy": "IfNotPresent",
                             "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                             "podInjectPolicy": "BeforeAppContainer", "upgradeStrategy": {"upgradeType": "ColdUpgrade"},
                             "shareVolumePolicy": {"type": "disabled"}}]}))
                            .unwrap();
                        let (h, hw) = kruise::core::sidecar::hash::hashes(&spec);
                        (h, hw, other)
                    }
                    None => {
                        let (h, hw) = stored_hashes(ctx, "s");
                        (h, hw, "s-live")
                    }
                };
                add_annotations(
                    p,
                    json!({
                    "kruise.io/sidecarset-hash": hash_map(&[hash_entry("s", &h, &["side"], Some(rev))]),
                    "kruise.io/sidecarset-hash-without-image": hash_map(&[hash_entry("s", &hw, &["side"], None)]),
                    "kruise.io/sidecarset-injected-list": "s"}),
                );
            }))
        }
    };
    let objects = |s: Value| -> Vec<Value> {
        let mut o = revs.clone();
        o.push(s);
        o
    };
    let cases = vec![
        case(
            "revisionName (policy Always)",
            objects(set(json!({"revisionName": "s-old"}), json!({}))),
            web.clone(),
            expect("side:1", Some("s-old")),
        ),
        case(
            "customVersion: the newest revision",
            objects(set(json!({"customVersion": "v1"}), json!({}))),
            web.clone(),
            expect("side:1", Some("s-old")),
        ),
        case(
            "hash computed when the revision has none",
            objects(set(json!({"revisionName": "s-older"}), json!({}))),
            web.clone(),
            expect("side:0", Some("s-older")),
        ),
        case(
            "revision not found: the live set",
            objects(set(json!({"revisionName": "gone"}), json!({}))),
            web.clone(),
            expect("side:2", None),
        ),
        case(
            "neither name nor version: the live set",
            objects(set(json!({"policy": "Always"}), json!({}))),
            web.clone(),
            expect("side:2", None),
        ),
        case(
            "paused update: the revision even under Partial",
            objects(set(json!({"revisionName": "s-old", "policy": "Partial"}), json!({"paused": true}))),
            web.clone(),
            expect("side:1", Some("s-old")),
        ),
        case(
            "Partial, pod outside updateStrategy.selector: the revision",
            objects(set(
                json!({"revisionName": "s-old", "policy": "Partial"}),
                json!({"selector": {"matchLabels": {"canary": "yes"}}}),
            )),
            web.clone(),
            expect("side:1", Some("s-old")),
        ),
        case(
            "Partial, pod inside the selector, integer partition: the live set",
            objects(set(
                json!({"revisionName": "s-old", "policy": "Partial"}),
                json!({"selector": {"matchLabels": {"canary": "no"}}, "partition": 3}),
            )),
            web.clone(),
            expect("side:2", None),
        ),
        case(
            "Partial, partition 100%: the revision",
            objects(set(json!({"revisionName": "s-old", "policy": "Partial"}), json!({"partition": "100%"}))),
            web.clone(),
            expect("side:1", Some("s-old")),
        ),
        case(
            "Partial, partition -1%: the live set",
            objects(set(json!({"revisionName": "s-old", "policy": "Partial"}), json!({"partition": "-1%"}))),
            web.clone(),
            expect("side:2", None),
        ),
        case(
            "Partial, partition not a percentage: 500",
            objects(set(json!({"revisionName": "s-old", "policy": "Partial"}), json!({"partition": "x%"}))),
            web.clone(),
            |_| Want::Code(500, "strconv.ParseFloat"),
        ),
    ];
    run_cases(cases);
}

#[test]
fn building_sidecars_4_3_to_4_5() {
    let (example_set, example_pod) = kruise_example();
    let example_want = {
        let p = example_pod.clone();
        move |ctx: &Context| {
            Want::Pod(with(&p, |p| {
                let nginx = p["spec"]["containers"][0].clone();
                p["spec"]["containers"] = json!([
                    injected("dns-f", "dns:1.0", json!([is_injected()])),
                    nginx,
                    injected("log-agent", "log:1.0", json!([is_injected()]))
                ]);
                p["spec"]["initContainers"] = json!([{"name": "init-0", "image": "busybox"},
                    injected("init-1", "busybox:1.36", json!([is_injected()])), injected("init-2", "busybox:1.36", json!([is_injected()]))]);
                add_annotations(p, bookkeeping(ctx, &[("sidecarset1", &["dns-f", "log-agent"], None)], "sidecarset1"));
            }))
        }
    };
    let web = pod(
        json!({"app": "web", "owner": "nginx"}),
        json!([{"name": "nginx", "image": "nginx:1", "env": [{"name": "A", "value": "a"}, {"name": "B", "value": "b"},
                 {"name": "POD", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                "volumeMounts": [{"name": "data", "mountPath": "/data", "subPathExpr": "$(POD)/x"}, {"name": "logs", "mountPath": "/logs"}],
                "volumeDevices": [{"name": "blk", "devicePath": "/dev/b"}]},
               {"name": "other", "image": "o:1", "env": [{"name": "A", "value": "other-a"}],
                "volumeMounts": [{"name": "logs", "mountPath": "/other-logs"}]}]),
    );
    let with_volumes = with(&web, |p| {
        p["spec"]["volumes"] = json!([{"name": "data", "emptyDir": {}}, {"name": "logs", "emptyDir": {}},
        {"name": "blk", "persistentVolumeClaim": {"claimName": "c"}}])
    });
    let one = |sidecar: Value, extra: Value| {
        let mut spec = json!({"selector": {"matchLabels": {"app": "web"}}, "containers": [sidecar]});
        for (k, v) in extra.as_object().unwrap() {
            spec[k] = v.clone();
        }
        sidecarset("s", spec)
    };
    let expect_one = |base: &Value, container: Value, list: &'static [&'static str], edit: fn(&mut Value)| {
        let base = base.clone();
        move |ctx: &Context| {
            let container = container.clone();
            Want::Pod(with(&base, |p| {
                let mut cs = vec![container];
                cs.extend(p["spec"]["containers"].as_array().unwrap().iter().cloned());
                p["spec"]["containers"] = Value::Array(cs);
                add_annotations(p, bookkeeping(ctx, &[("s", list, None)], "s"));
                edit(p);
            }))
        }
    };
    let cases = vec![
        case(
            "kruise's example: init sorted after the pod's, Before first, After last, IS_INJECTED everywhere",
            vec![example_set],
            example_pod,
            example_want,
        ),
        case(
            "shareVolumePolicy: app mounts (own path wins), subPathExpr env, devices",
            vec![one(
                json!({"name": "side", "image": "side:1", "shareVolumePolicy": {"type": "enabled"},
                   "shareVolumeDevicePolicy": {"type": "enabled"}, "volumeMounts": [{"name": "own", "mountPath": "/logs"}]}),
                json!({"volumes": [{"name": "own", "emptyDir": {}}]}),
            )],
            with_volumes.clone(),
            expect_one(
                &with_volumes,
                json!({"name": "side", "image": "side:1", "imagePullPolicy": "IfNotPresent",
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "env": [is_injected(), {"name": "POD", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                "volumeMounts": [{"name": "own", "mountPath": "/logs"}, {"name": "data", "mountPath": "/data", "subPathExpr": "$(POD)/x"},
                                 {"name": "logs", "mountPath": "/other-logs"}],
                "volumeDevices": [{"name": "blk", "devicePath": "/dev/b"}]}),
                &["side"],
                |p| {
                    p["spec"]["volumes"].as_array_mut().unwrap().push(json!({"name": "own", "emptyDir": {}}));
                },
            ),
        ),
        case(
            "transferEnv: by name, by label, envNames sorted, missing skipped, own env wins",
            vec![one(
                json!({"name": "side", "image": "side:1", "env": [{"name": "B", "value": "mine"}], "transferEnv": [
                {"sourceContainerName": "nginx", "envNames": ["B", "A", "MISSING"]},
                {"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.labels['owner']"}}, "envName": "POD"},
                {"sourceContainerName": "other", "envName": "A"},
                {"sourceContainerNameFrom": {"fieldRef": {"fieldPath": "metadata.name"}}, "envName": "A"}]}),
                json!({}),
            )],
            web.clone(),
            expect_one(
                &web,
                injected(
                    "side",
                    "side:1",
                    json!([{"name": "B", "value": "mine"}, is_injected(),
                {"name": "A", "value": "a"}, {"name": "POD", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}]),
                ),
                &["side"],
                |_| {},
            ),
        ),
        case(
            "set volumes only when referenced, pod volumes win",
            vec![one(
                json!({"name": "side", "image": "side:1", "volumeMounts": [{"name": "data", "mountPath": "/d"}, {"name": "cfg", "mountPath": "/c"}]}),
                json!({"volumes": [{"name": "data", "hostPath": {"path": "/x"}}, {"name": "cfg", "configMap": {"name": "c"}}, {"name": "unused", "emptyDir": {}}]}),
            )],
            with_volumes.clone(),
            expect_one(
                &with_volumes,
                json!({"name": "side", "image": "side:1", "imagePullPolicy": "IfNotPresent",
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File", "env": [is_injected()],
                "volumeMounts": [{"name": "data", "mountPath": "/d"}, {"name": "cfg", "mountPath": "/c"}]}),
                &["side"],
                |p| {
                    p["spec"]["volumes"]
                        .as_array_mut()
                        .unwrap()
                        .push(json!({"name": "cfg", "configMap": {"name": "c", "defaultMode": 420}}));
                },
            ),
        ),
        case(
            "imagePullSecrets: pod's deduplicated, then the set's",
            vec![one(
                json!({"name": "side", "image": "side:1"}),
                json!({"imagePullSecrets": [{"name": "b"}, {"name": "c"}]}),
            )],
            with(&web, |p| p["spec"]["imagePullSecrets"] = json!([{"name": "a"}, {"name": "b"}, {"name": "a"}])),
            expect_one(
                &with(&web, |p| p["spec"]["imagePullSecrets"] = json!([{"name": "a"}, {"name": "b"}, {"name": "c"}])),
                injected("side", "side:1", json!([is_injected()])),
                &["side"],
                |_| {},
            ),
        ),
        case(
            "native sidecar init container: in the sidecar list, before app init containers",
            vec![sidecarset(
                "s",
                json!({
            "selector": {"matchLabels": {"app": "web"}}, "updateStrategy": {"type": "NotUpdate"},
            "initContainers": [{"name": "native", "image": "n:1", "restartPolicy": "Always", "podInjectPolicy": "BeforeAppContainer"},
                               {"name": "plain", "image": "p:1"}]}),
            )],
            with(&web, |p| p["spec"]["initContainers"] = json!([{"name": "setup", "image": "s:1"}])),
            {
                let web = web.clone();
                move |ctx: &Context| {
                    Want::Pod(with(&web, |p| {
                        p["spec"]["initContainers"] = json!([
                    with(&injected("native", "n:1", json!([is_injected()])), |c| c["restartPolicy"] = json!("Always")),
                    {"name": "setup", "image": "s:1"}, injected("plain", "p:1", json!([is_injected()]))]);
                        add_annotations(p, bookkeeping(ctx, &[("s", &["native"], None)], "s"));
                    }))
                }
            },
        ),
        case(
            "existing entries are merged; the old map format is converted",
            vec![one(json!({"name": "side", "image": "side:1"}), json!({}))],
            with(&web, |p| {
                add_annotations(
                    p,
                    json!({"kruise.io/sidecarset-hash": "{\"legacy\":\"h0\"}",
                "kruise.io/sidecarset-injected-list": "legacy"}),
                )
            }),
            {
                let web = web.clone();
                move |ctx: &Context| {
                    Want::Pod(with(&web, |p| {
                        let cs = p["spec"]["containers"].as_array().unwrap().clone();
                        let mut all = vec![injected("side", "side:1", json!([is_injected()]))];
                        all.extend(cs);
                        p["spec"]["containers"] = Value::Array(all);
                        let (h, hw) = stored_hashes(ctx, "s");
                        add_annotations(
                            p,
                            json!({
                    "kruise.io/sidecarset-hash": format!("{{\"legacy\":{{\"updateTimestamp\":null,\"hash\":\"h0\",\"sidecarSetName\":\"legacy\",\"sidecarList\":null}},{}}}",
                        hash_entry("s", &h, &["side"], None)),
                    "kruise.io/sidecarset-hash-without-image": hash_map(&[hash_entry("s", &hw, &["side"], None)]),
                    "kruise.io/sidecarset-injected-list": "legacy,s"}),
                        );
                    }))
                }
            },
        ),
        case(
            "patchPodMetadata: Retain, Overwrite, MergePatchJson, before containers",
            vec![one(
                json!({"name": "side", "image": "side:1"}),
                json!({"patchPodMetadata": [{"annotations": {"keep": "set", "new": "set"}, "patchPolicy": "Retain"},
                                        {"annotations": {"over": "set"}, "patchPolicy": "Overwrite"},
                                        {"annotations": {"merged": "{\"b\":2}", "fresh": "{\"c\": 3}"}, "patchPolicy": "MergePatchJson"}]}),
            )],
            with(&web, |p| add_annotations(p, json!({"keep": "pod", "over": "pod", "merged": "{\"a\":1}"}))),
            expect_one(
                &with(&web, |p| {
                    add_annotations(
                        p,
                        json!({"keep": "pod", "new": "set", "over": "set", "merged": "{\"a\":1,\"b\":2}",
                "fresh": "{\"c\": 3}"}),
                    )
                }),
                injected("side", "side:1", json!([is_injected()])),
                &["side"],
                |_| {},
            ),
        ),
        case(
            "bad MergePatchJson document is 500",
            vec![one(
                json!({"name": "side", "image": "side:1"}),
                json!({"patchPodMetadata": [{"annotations": {"m": "{}"}, "patchPolicy": "MergePatchJson"}]}),
            )],
            with(&web, |p| add_annotations(p, json!({"m": "not json"}))),
            |_| Want::Code(500, "Invalid JSON Document"),
        ),
    ];
    run_cases(cases);
}
