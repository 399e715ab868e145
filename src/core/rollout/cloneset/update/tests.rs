//! kruise's update tables (pkg/controller/cloneset/sync/cloneset_update_test.go), row by row:
//! `TestUpdate` (16 rows: refresh, recreate, in-place with and without grace, lifecycle hooks),
//! `TestSortUpdateIndexes` (1) and `TestCalculateUpdateCount` (16).
//!
//! `TestUpdate` rows run the update step on the row's pods and revisions, apply the step's writes
//! to the pods (JSON patches with resourceVersion pins, as the reconciler will) and compare the
//! resulting pods with kruise's expected pods. Times: kruise's "now" (its fake clock) is `T`; its
//! grace-period arithmetic uses the real clock, an hour later, which is this test's clock `T+1h`.

use super::*;
use crate::core::features::{FeatureGates, Gate};
use crate::core::pods::test_pods::at;
use crate::core::rollout::cloneset::testkit::{World, cloneset, raw_revision, with_round};
use serde_json::{Value, json};

const T: i64 = 1_700_000_000;

fn rfc(t: i64) -> String {
    pods::rfc3339(at(t))
}

/// kruise's revision fixtures.
fn rev_new(image: &str) -> k8s_openapi::api::apps::v1::ControllerRevision {
    raw_revision(
        "rev_new",
        &format!(
            r#"{{"spec":{{"template":{{"$patch":"replace","spec":{{"containers":[{{"name":"c1","image":"{image}"}}]}}}}}}}}"#
        ),
    )
}

fn rev_old() -> k8s_openapi::api::apps::v1::ControllerRevision {
    raw_revision(
        "rev_old",
        r#"{"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"c1","image":"foo1"}]}}}}"#,
    )
}

/// The pod after normalisation: no resourceVersion, no lifecycle timestamp, no condition times.
fn normal(p: &Pod) -> Value {
    let mut v = serde_json::to_value(p).unwrap();
    let m = v["metadata"].as_object_mut().unwrap();
    m.remove("resourceVersion");
    if let Some(a) = m.get_mut("annotations").and_then(Value::as_object_mut) {
        a.remove("lifecycle.apps.kruise.io/timestamp");
        if a.is_empty() {
            m.remove("annotations");
        }
    }
    if let Some(cs) = v["status"]["conditions"].as_array_mut() {
        for c in cs {
            c.as_object_mut().unwrap().remove("lastTransitionTime");
        }
    }
    v
}

struct Row {
    name: &'static str,
    cs: Value,
    update: k8s_openapi::api::apps::v1::ControllerRevision,
    revisions: Vec<k8s_openapi::api::apps::v1::ControllerRevision>,
    pod: Value,
    want: Value,
}

fn cs_spec(policy: &str, extra: Value) -> Value {
    let mut v = json!({"replicas": 1, "updateStrategy": {"type": policy}});
    if let (Value::Object(base), Value::Object(extra)) = (&mut v, extra) {
        for (k, x) in extra {
            if k == "updateStrategy" {
                base["updateStrategy"].as_object_mut().unwrap().extend(x.as_object().unwrap().clone());
            } else {
                base.insert(k, x);
            }
        }
    }
    v
}

fn gate() -> Value {
    json!([{"conditionType": "InPlaceUpdateReady"}])
}

fn c1(image: &str) -> Value {
    json!([{"name": "c1", "image": image}])
}

fn c1_status() -> Value {
    json!([{"name": "c1", "imageID": "image-id-xyz", "image": "", "ready": false, "restartCount": 0}])
}

fn conds(list: &[(&str, &str, Option<&str>)]) -> Value {
    Value::Array(
        list.iter()
            .map(|(t, s, r)| {
                let mut c = json!({"type": t, "status": s});
                if let Some(r) = r {
                    c["reason"] = json!(r);
                }
                c
            })
            .collect(),
    )
}

fn state(extra: Value) -> String {
    let mut v = json!({"revision": "rev_new"});
    v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    let st: crate::core::inplace::state::InPlaceUpdateState = serde_json::from_value(v).unwrap();
    crate::core::inplace::state::encode_state(&st)
}

#[test]
fn kruise_update() {
    let now = T + 3600;
    let grace = r#"{"revision":"rev_new","containerImages":{"c1":"foo2"},"graceSeconds":3630}"#;
    let ip = |extra: Value| cs_spec("InPlaceIfPossible", extra);
    let pre_normal_label = json!({"lifecycle": {"preNormal": {"labelsHandler": {"preNormalHooked": "true"}}}});
    let in_place_state = state(json!({"updateTimestamp": rfc(now), "updateImages": true,
        "lastContainerStatuses": {"c1": {"imageID": "image-id-xyz"}},
        "containerBatchesRecord": [{"timestamp": rfc(now), "containers": ["c1"]}]}));
    let rows = vec![
        Row {
            name: "do nothing",
            cs: cs_spec("ReCreate", json!({})),
            update: raw_revision("rev_new", ""),
            revisions: vec![],
            pod: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_new"}},
                        "spec": {"readinessGates": gate(), "containers": []},
                        "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "True", None)])}}),
            want: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_new", "pod-template-hash": "rev_new"}},
                         "spec": {"readinessGates": gate(), "containers": []},
                         "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "True", None)])}}),
        },
        Row {
            name: "normal update condition",
            cs: cs_spec("ReCreate", json!({})),
            update: raw_revision("rev_new", ""),
            revisions: vec![],
            pod: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_new"}},
                        "spec": {"readinessGates": gate(), "containers": []},
                        "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None)])}}),
            want: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_new", "pod-template-hash": "rev_new"}},
                         "spec": {"readinessGates": gate(), "containers": []},
                         "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "True", None)])}}),
        },
        Row {
            name: "recreate update 1",
            cs: cs_spec("ReCreate", json!({})),
            update: raw_revision("rev_new", ""),
            revisions: vec![],
            pod: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_old", "pod-template-hash": "rev_old", "apps.kruise.io/cloneset-instance-id": "id-0"}},
                        "spec": {"readinessGates": gate(), "containers": []},
                        "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "True", None)])}}),
            want: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_old", "pod-template-hash": "rev_old", "apps.kruise.io/cloneset-instance-id": "id-0", "apps.kruise.io/specified-delete": "true"}},
                         "spec": {"readinessGates": gate(), "containers": []},
                         "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "True", None)])}}),
        },
        Row {
            // kruise's new revision data here is invalid JSON (an env list written as an object),
            // which the apiserver would never store; the same change written validly (an added
            // env) is not in place either.
            name: "recreate update 2",
            cs: ip(json!({})),
            update: raw_revision(
                "rev_new",
                r#"{"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"c1","image":"foo2","env":[{"name":"k","value":"v"}]}]}}}}"#,
            ),
            revisions: vec![rev_old()],
            pod: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_old", "pod-template-hash": "rev_old", "apps.kruise.io/cloneset-instance-id": "id-0"}},
                        "spec": {"readinessGates": gate(), "containers": c1("foo1")},
                        "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "True", None)]), "containerStatuses": c1_status()}}),
            want: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_old", "pod-template-hash": "rev_old", "apps.kruise.io/cloneset-instance-id": "id-0", "apps.kruise.io/specified-delete": "true"}},
                         "spec": {"readinessGates": gate(), "containers": c1("foo1")},
                         "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "True", None)]), "containerStatuses": c1_status()}}),
        },
        Row {
            name: "inplace update",
            cs: ip(json!({})),
            update: rev_new("foo2"),
            revisions: vec![rev_old()],
            pod: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_old", "pod-template-hash": "rev_old", "apps.kruise.io/cloneset-instance-id": "id-0"}},
                        "spec": {"readinessGates": gate(), "containers": c1("foo1")},
                        "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "True", None)]), "containerStatuses": c1_status()}}),
            want: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_new", "pod-template-hash": "rev_new", "apps.kruise.io/cloneset-instance-id": "id-0", "lifecycle.apps.kruise.io/state": "Updating"},
                                      "annotations": {"apps.kruise.io/inplace-update-state": in_place_state}},
                         "spec": {"readinessGates": gate(), "containers": c1("foo2")},
                         "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "False", Some("StartInPlaceUpdate"))]), "containerStatuses": c1_status()}}),
        },
        Row {
            name: "inplace update with grace period",
            cs: ip(json!({"updateStrategy": {"inPlaceUpdateStrategy": {"gracePeriodSeconds": 3630}}})),
            update: rev_new("foo2"),
            revisions: vec![rev_old()],
            pod: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_old", "pod-template-hash": "rev_old", "apps.kruise.io/cloneset-instance-id": "id-0"}},
                        "spec": {"readinessGates": gate(), "containers": c1("foo1")},
                        "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "True", None)]), "containerStatuses": c1_status()}}),
            want: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_new", "pod-template-hash": "rev_new", "apps.kruise.io/cloneset-instance-id": "id-0", "lifecycle.apps.kruise.io/state": "Updating"},
                                      "annotations": {"apps.kruise.io/inplace-update-state": state(json!({"updateTimestamp": rfc(now), "updateImages": true})), "apps.kruise.io/inplace-update-grace": grace}},
                         "spec": {"readinessGates": gate(), "containers": c1("foo1")},
                         "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "False", Some("StartInPlaceUpdate"))]), "containerStatuses": c1_status()}}),
        },
        Row {
            name: "inplace update during grace period",
            cs: ip(json!({"updateStrategy": {"inPlaceUpdateStrategy": {"gracePeriodSeconds": 3630}}})),
            update: rev_new("foo2"),
            revisions: vec![rev_old()],
            pod: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_new", "apps.kruise.io/cloneset-instance-id": "id-0"},
                                     "annotations": {"apps.kruise.io/inplace-update-state": state(json!({"updateTimestamp": rfc(T - 10)})), "apps.kruise.io/inplace-update-grace": grace}},
                        "spec": {"readinessGates": gate(), "containers": c1("foo1")},
                        "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "False", Some("StartInPlaceUpdate"))]), "containerStatuses": c1_status()}}),
            want: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_new", "pod-template-hash": "rev_new", "apps.kruise.io/cloneset-instance-id": "id-0"},
                                      "annotations": {"apps.kruise.io/inplace-update-state": state(json!({"updateTimestamp": rfc(T - 10)})), "apps.kruise.io/inplace-update-grace": grace}},
                         "spec": {"readinessGates": gate(), "containers": c1("foo1")},
                         "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "False", Some("StartInPlaceUpdate"))]), "containerStatuses": c1_status()}}),
        },
        Row {
            name: "inplace update continuously after grace period",
            cs: ip(json!({"updateStrategy": {"inPlaceUpdateStrategy": {"gracePeriodSeconds": 3630}}})),
            update: rev_new("foo2"),
            revisions: vec![rev_old()],
            pod: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_new", "apps.kruise.io/cloneset-instance-id": "id-0"},
                                     "annotations": {"apps.kruise.io/inplace-update-state": state(json!({"updateTimestamp": rfc(T - 60)})), "apps.kruise.io/inplace-update-grace": grace}},
                        "spec": {"readinessGates": gate(), "containers": c1("foo1")},
                        "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "False", Some("StartInPlaceUpdate"))]), "containerStatuses": c1_status()}}),
            want: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_new", "pod-template-hash": "rev_new", "apps.kruise.io/cloneset-instance-id": "id-0"},
                                      "annotations": {"apps.kruise.io/inplace-update-state": state(json!({"updateTimestamp": rfc(T - 60),
                                          "lastContainerStatuses": {"c1": {"imageID": "image-id-xyz"}},
                                          "containerBatchesRecord": [{"timestamp": rfc(now), "containers": ["c1"]}]}))}},
                         "spec": {"readinessGates": gate(), "containers": c1("foo2")},
                         "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "False", Some("StartInPlaceUpdate"))]), "containerStatuses": c1_status()}}),
        },
        Row {
            name: "create: preparingNormal->Normal without hook",
            cs: cs_spec("ReCreate", json!({})),
            update: raw_revision("rev_new", ""),
            revisions: vec![],
            pod: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_new", "pod-template-hash": "rev_new", "lifecycle.apps.kruise.io/state": "PreparingNormal"}},
                        "spec": {"readinessGates": gate(), "nodeName": "127.0.0.1", "containers": []},
                        "status": {"phase": "Running", "conditions": conds(&[("Ready", "False", None), ("InPlaceUpdateReady", "True", None)])}}),
            want: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_new", "pod-template-hash": "rev_new", "lifecycle.apps.kruise.io/state": "Normal"}},
                         "spec": {"readinessGates": gate(), "nodeName": "127.0.0.1", "containers": []},
                         "status": {"phase": "Running", "conditions": conds(&[("Ready", "False", None), ("InPlaceUpdateReady", "True", None)])}}),
        },
        Row {
            name: "create: preparingNormal->preparingNormal, preNormal does not hook",
            cs: cs_spec("ReCreate", pre_normal_label.clone()),
            update: raw_revision("rev_new", ""),
            revisions: vec![],
            pod: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_new", "pod-template-hash": "rev_new", "lifecycle.apps.kruise.io/state": "PreparingNormal"}},
                        "spec": {"readinessGates": gate(), "containers": []},
                        "status": {"phase": "Running", "conditions": conds(&[("Ready", "False", None), ("InPlaceUpdateReady", "True", None)])}}),
            want: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_new", "pod-template-hash": "rev_new", "lifecycle.apps.kruise.io/state": "PreparingNormal"}},
                         "spec": {"readinessGates": gate(), "containers": []},
                         "status": {"phase": "Running", "conditions": conds(&[("Ready", "False", None), ("InPlaceUpdateReady", "True", None)])}}),
        },
        Row {
            name: "create: preparingNormal->Normal, preNormal does hook",
            cs: cs_spec("ReCreate", pre_normal_label.clone()),
            update: raw_revision("rev_new", ""),
            revisions: vec![],
            pod: json!({"metadata": {"name": "pod-0", "labels": {"preNormalHooked": "true", "controller-revision-hash": "rev_new", "pod-template-hash": "rev_new", "lifecycle.apps.kruise.io/state": "PreparingNormal"}},
                        "spec": {"readinessGates": gate(), "containers": []},
                        "status": {"phase": "Running", "conditions": conds(&[("Ready", "False", None), ("InPlaceUpdateReady", "True", None)])}}),
            want: json!({"metadata": {"name": "pod-0", "labels": {"preNormalHooked": "true", "controller-revision-hash": "rev_new", "pod-template-hash": "rev_new", "lifecycle.apps.kruise.io/state": "Normal"}},
                         "spec": {"readinessGates": gate(), "containers": []},
                         "status": {"phase": "Running", "conditions": conds(&[("Ready", "False", None), ("InPlaceUpdateReady", "True", None)])}}),
        },
        Row {
            name: "recreate update: preparingNormal, preNormal does not hook, specific delete",
            cs: cs_spec("ReCreate", json!({"lifecycle": {"preNormal": {"finalizersHandler": ["preNormalHooked"]}}})),
            update: raw_revision("rev_new", ""),
            revisions: vec![],
            pod: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_old", "pod-template-hash": "rev_old", "lifecycle.apps.kruise.io/state": "PreparingNormal"}},
                        "spec": {"readinessGates": gate(), "containers": []},
                        "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "True", None)])}}),
            want: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_old", "pod-template-hash": "rev_old", "apps.kruise.io/specified-delete": "true", "lifecycle.apps.kruise.io/state": "PreparingNormal"}},
                         "spec": {"readinessGates": gate(), "containers": []},
                         "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "True", None)])}}),
        },
        Row {
            name: "in-place update: preparingNormal->Updating, preNormal & InPlaceUpdate does not hook",
            cs: ip(json!({"lifecycle": {"preNormal": {"finalizersHandler": ["slb.com/online"]}}})),
            update: rev_new("foo2"),
            revisions: vec![rev_old()],
            pod: json!({"metadata": {"name": "pod-0", "labels": {"pod-template-hash": "rev_old", "controller-revision-hash": "rev_old", "lifecycle.apps.kruise.io/state": "PreparingNormal"}},
                        "spec": {"readinessGates": gate(), "containers": c1("foo1")},
                        "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "True", None)]), "containerStatuses": c1_status()}}),
            want: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_new", "pod-template-hash": "rev_new", "lifecycle.apps.kruise.io/state": "Updating"},
                                      "annotations": {"apps.kruise.io/inplace-update-state": in_place_state}},
                         "spec": {"readinessGates": gate(), "containers": c1("foo2")},
                         "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "False", Some("StartInPlaceUpdate"))]), "containerStatuses": c1_status()}}),
        },
        Row {
            name: "in-place update: preparingNormal->Normal, preNormal & InPlaceUpdate does hook",
            cs: ip(
                json!({"lifecycle": {"preNormal": {"finalizersHandler": ["slb/online"]}, "inPlaceUpdate": {"finalizersHandler": ["slb/online"]}}}),
            ),
            update: rev_new("foo2"),
            revisions: vec![rev_old()],
            pod: json!({"metadata": {"name": "pod-0", "labels": {"pod-template-hash": "rev_old", "controller-revision-hash": "rev_old", "lifecycle.apps.kruise.io/state": "PreparingNormal"}, "finalizers": ["slb/online"]},
                        "spec": {"readinessGates": gate(), "containers": c1("foo1")},
                        "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "True", None)]), "containerStatuses": c1_status()}}),
            want: json!({"metadata": {"name": "pod-0", "labels": {"pod-template-hash": "rev_old", "controller-revision-hash": "rev_old", "lifecycle.apps.kruise.io/state": "Normal"}, "finalizers": ["slb/online"]},
                         "spec": {"readinessGates": gate(), "containers": c1("foo1")},
                         "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "True", None)]), "containerStatuses": c1_status()}}),
        },
        Row {
            name: "in-place update: Normal->preparingUpdate, preNormal & InPlaceUpdate does hook",
            cs: ip(
                json!({"lifecycle": {"preNormal": {"finalizersHandler": ["slb/online"]}, "inPlaceUpdate": {"finalizersHandler": ["slb/online"]}}}),
            ),
            update: rev_new("foo2"),
            revisions: vec![rev_old()],
            pod: json!({"metadata": {"name": "pod-0", "labels": {"pod-template-hash": "rev_old", "controller-revision-hash": "rev_old", "lifecycle.apps.kruise.io/state": "Normal"}, "finalizers": ["slb/online"]},
                        "spec": {"readinessGates": gate(), "containers": c1("foo1")},
                        "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "True", None)]), "containerStatuses": c1_status()}}),
            want: json!({"metadata": {"name": "pod-0", "labels": {"pod-template-hash": "rev_old", "controller-revision-hash": "rev_old", "lifecycle.apps.kruise.io/state": "PreparingUpdate"}, "finalizers": ["slb/online"]},
                         "spec": {"readinessGates": gate(), "containers": c1("foo1")},
                         "status": {"phase": "Running", "conditions": conds(&[("Ready", "True", None), ("InPlaceUpdateReady", "True", None)]), "containerStatuses": c1_status()}}),
        },
        Row {
            name: "create: preparingNormal->Normal without hook, pod is not scheduled, should stay at preparingNormal",
            cs: cs_spec("ReCreate", json!({})),
            update: raw_revision("rev_new", ""),
            revisions: vec![],
            pod: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_new", "pod-template-hash": "rev_new", "lifecycle.apps.kruise.io/state": "PreparingNormal"}},
                        "spec": {"readinessGates": gate(), "containers": []},
                        "status": {"phase": "Running", "conditions": conds(&[("Ready", "False", None), ("ContainersReady", "False", None), ("InPlaceUpdateReady", "True", None)])}}),
            want: json!({"metadata": {"name": "pod-0", "labels": {"controller-revision-hash": "rev_new", "pod-template-hash": "rev_new", "lifecycle.apps.kruise.io/state": "PreparingNormal"}},
                         "spec": {"readinessGates": gate(), "containers": []},
                         "status": {"phase": "Running", "conditions": conds(&[("Ready", "False", None), ("ContainersReady", "False", None), ("InPlaceUpdateReady", "True", None)])}}),
        },
    ];
    assert_eq!(rows.len(), 16, "every row of kruise's TestUpdate");
    for row in rows {
        let cs = cloneset(row.cs);
        let mut pod: Pod = serde_json::from_value(row.pod).unwrap();
        pod.metadata.resource_version = Some("7".into());
        // kruise: the current revision is the first listed one, or the update revision.
        let current = row.revisions.first().cloned().unwrap_or_else(|| row.update.clone());
        let step = with_round(
            &cs,
            std::slice::from_ref(&pod),
            &[],
            &current,
            &row.update,
            &row.revisions,
            &FeatureGates::default(),
            at(now),
            |r| update(r).0,
        );
        assert_eq!(step.error, None, "{}", row.name);
        let mut world = World::new(cs);
        world.pods = vec![pod];
        world.apply_actions(&step.actions).unwrap_or_else(|e| panic!("{}: {e:?}", row.name));
        let want: Pod = serde_json::from_value(row.want).unwrap();
        assert_eq!(normal(&world.pods[0]), normal(&want), "{}", row.name);
    }
}

/// kruise `TestSortUpdateIndexes`.
#[test]
fn kruise_sort_update_indexes() {
    let p = |phase: &str, ready: bool| -> Pod {
        let mut v = json!({"status": {"phase": phase}});
        if ready {
            v["status"]["conditions"] = json!([{"type": "Ready", "status": "True"}]);
        }
        serde_json::from_value(v).unwrap()
    };
    let pods = [p("Pending", true), p("Pending", false), p("Pending", false), p("Running", true), p("Running", false)];
    let refs: Vec<&Pod> = pods.iter().collect();
    let cs = cloneset(cs_spec("ReCreate", json!({})));
    assert_eq!(sort_update_indexes(&cs, &refs, vec![0, 1, 3, 4]), [1, 0, 4, 3]);
}

/// kruise `TestCalculateUpdateCount`: (strategy, replicas, old revision indexes, pods ready?,
/// expected count). Gate CloneSetPartitionRollback on, as in kruise's test.
#[test]
fn kruise_calculate_update_count() {
    let recreate = |extra: Value| cs_spec("ReCreate", json!({"updateStrategy": extra}));
    let (r, u) = (true, false);
    type Row = (Value, i32, Vec<usize>, Vec<bool>, usize);
    let rows: Vec<Row> = vec![
        (recreate(json!({})), 3, vec![0, 1, 2], vec![r, r, r], 1),
        (recreate(json!({})), 3, vec![0, 1, 2], vec![r, u, r], 0),
        (recreate(json!({})), 3, vec![0, 1, 2], vec![u, r, r], 1),
        (recreate(json!({})), 10, vec![0, 1, 2, 3, 4, 5, 6, 7, 8], vec![u, r, r, r, r, r, r, r, u, r], 1),
        (recreate(json!({"partition": 2, "maxUnavailable": 3})), 3, vec![0, 1], vec![u, r, r], 0),
        (recreate(json!({"partition": 2, "maxUnavailable": 3})), 8, vec![0, 1, 2, 3, 4, 5, 6], vec![r; 8], 3),
        (recreate(json!({"partition": 0, "maxUnavailable": 2})), 5, vec![0, 1, 2, 3, 4], vec![u; 5], 2),
        (recreate(json!({"partition": 0, "maxUnavailable": 2})), 5, vec![0, 1, 2], vec![u; 5], 0),
        (recreate(json!({"partition": 0, "maxUnavailable": 2})), 5, vec![0, 1, 2], vec![u, u, u, r, u], 1),
        (recreate(json!({"partition": 0, "maxUnavailable": 2, "maxSurge": 1})), 5, vec![0, 1, 2, 3, 4], vec![u; 6], 2),
        (
            recreate(json!({"partition": 0, "maxUnavailable": 2, "maxSurge": 1})),
            5,
            vec![0, 1, 2, 3],
            vec![u, u, u, u, r, u],
            2,
        ),
        (
            recreate(json!({"partition": 0, "maxUnavailable": 2, "maxSurge": 1})),
            5,
            vec![0, 1, 2],
            vec![u, u, u, u, r, u],
            1,
        ),
        (recreate(json!({"partition": 0, "maxUnavailable": 2, "maxSurge": 1})), 5, vec![0, 1, 2], vec![u; 6], 0),
        (recreate(json!({"partition": 7, "maxUnavailable": 3})), 8, vec![0, 1, 2], vec![r, r, r, u, u, u, u, u], 3),
        (recreate(json!({"maxUnavailable": 2, "maxSurge": 1})), 4, vec![0, 1], vec![r; 5], 1),
        (recreate(json!({"maxUnavailable": 2, "maxSurge": 1})), 4, vec![0, 1, 2, 3], vec![r; 6], 2),
    ];
    assert_eq!(rows.len(), 16);
    let gates = FeatureGates::default().with(Gate::CloneSetPartitionRollback, true);
    for (i, (spec, replicas, old, ready, want)) in rows.into_iter().enumerate() {
        let mut spec = spec;
        spec["replicas"] = json!(replicas);
        // kruise builds these CloneSets without the webhook defaults: fields it leaves nil stay nil.
        let us = spec["updateStrategy"].as_object_mut().unwrap();
        for key in ["partition", "maxUnavailable", "maxSurge"] {
            if us.get(key).is_some_and(|v| *v == json!(0) || *v == json!("20%")) {
                us.remove(key);
            }
        }
        let cs = cloneset(spec);
        let pods: Vec<Pod> = ready
            .iter()
            .enumerate()
            .map(|(j, ready)| {
                let rev = if old.contains(&j) { "current" } else { "updated" };
                let p = crate::core::pods::test_pods::pod(&format!("p{j}"), &[("controller-revision-hash", rev)]);
                if *ready { crate::core::pods::test_pods::running_ready(p, None) } else { p }
            })
            .collect();
        let refs: Vec<&Pod> = pods.iter().collect();
        let settings = Settings::new(&cs, crate::core::rollout::cloneset::settings::Gates::from_feature_gates(&gates));
        let diff = diff::calculate(&settings, &refs, "current", "updated", false, at(0));
        let (waiting, target): (Vec<usize>, &str) = if diff.update_num > 0 {
            (old.clone(), "updated")
        } else if diff.update_num < 0 {
            ((0..pods.len()).filter(|j| !old.contains(j)).collect(), "current")
        } else {
            (vec![], "")
        };
        let got = limit(&settings, &diff, &waiting, &refs, target, at(0));
        assert_eq!(got.len(), want, "case #{i} (diff {diff:?})");
    }
}
