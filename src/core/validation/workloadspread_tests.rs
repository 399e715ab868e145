//! kruise v1.9.0 `workloadspread_validation_test.go`, row by row: `TestValidateWorkloadSpreadCreate`
//! (success cases and error cases by field path), `TestValidateWorkloadSpreadTargetRefUpdate`,
//! `TestValidateWorkloadSpreadConflict` and `Test_validateWorkloadSpreadSubsets`, plus the
//! messages checked in full.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};

use super::*;
use crate::compat::field::aggregate;

fn ws(v: Value) -> WorkloadSpread {
    crate::compat::decode::from_value(&v).unwrap()
}

fn gates() -> FeatureGates {
    FeatureGates::default()
}

fn zone(op: &str, z: &str) -> Value {
    json!({"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": op, "values": [z]}]})
}

fn ecs() -> Value {
    json!([{"key": "ecs", "operator": "Exists"}])
}

fn annotate(s: &str) -> Value {
    json!({"metadata": {"annotations": {"subset": s}}})
}

/// kruise's `workloadSpreadDemo`.
fn demo() -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
        "metadata": {"name": "workloadSpread", "namespace": "default"},
        "spec": {"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "demo"},
            "subsets": [
                {"name": "subset-a", "maxReplicas": 50, "requiredNodeSelectorTerm": zone("In", "zone-a"),
                    "tolerations": ecs(), "patch": annotate("subset-a")},
                {"name": "subset-b", "maxReplicas": 50, "requiredNodeSelectorTerm": zone("In", "zone-b"),
                    "tolerations": ecs(), "patch": annotate("subset-b")},
                {"name": "subset-c", "requiredNodeSelectorTerm": zone("In", "zone-c")}]}})
}

fn run(v: Value) -> Vec<FieldError> {
    let others = [ws(demo())];
    validate(&ws(v), Ok(&others), None, &gates())
}

fn two_subsets(target: Value, a: Value, b: Value, strategy: Option<Value>) -> Value {
    let mut spec = json!({"targetRef": target, "subsets": [a, b]});
    if let Some(s) = strategy {
        spec["scheduleStrategy"] = s;
    }
    json!({"metadata": {"name": "ws-1", "namespace": "default"}, "spec": spec})
}

#[test]
fn create_success_cases() {
    let cs = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "test"});
    let plain = |name: &str, max: Value| {
        let mut s = json!({"name": name, "patch": annotate(name)});
        if !max.is_null() {
            s["maxReplicas"] = max;
        }
        s
    };
    let resources =
        json!({"spec": {"containers": [{"name": "main", "resources": {"limits": {"cpu": "2", "memory": "8000Mi"}}}]}});
    let adaptive =
        json!({"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 30, "disableSimulationSchedule": true}});
    let mut cases = vec![
        two_subsets(
            cs,
            json!({"name": "subset-a", "maxReplicas": 50, "requiredNodeSelectorTerm": zone("NotIn", "zone-a"),
                "tolerations": ecs(), "patch": annotate("subset-a")}),
            json!({"name": "subset-b", "requiredNodeSelectorTerm": zone("NotIn", "zone-a"),
                "tolerations": ecs(), "patch": annotate("subset-b")}),
            Some(json!({"type": "Fixed"})),
        ),
        two_subsets(
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "demo"}),
            plain("subset-a", json!(50)),
            plain("subset-b", Value::Null),
            None,
        ),
        two_subsets(
            json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "StatefulSet", "name": "demo"}),
            plain("subset-a", json!(50)),
            plain("subset-b", Value::Null),
            None,
        ),
        two_subsets(
            json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "demo"}),
            plain("subset-a", json!(50)),
            plain("subset-b", Value::Null),
            None,
        ),
        two_subsets(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "test"}),
            json!({"name": "subset-a", "maxReplicas": 50, "preferredNodeSelectorTerms": [
                {"weight": 20, "preference": zone("NotIn", "zone-a")}], "tolerations": ecs(), "patch": resources}),
            json!({"name": "subset-b", "requiredNodeSelectorTerm": zone("In", "zone-b"), "tolerations": ecs(),
                "patch": resources}),
            Some(adaptive.clone()),
        ),
    ];
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "name": "test"});
    let pct = |name: &str, z: &str| {
        json!({"name": name, "maxReplicas": "50%", "requiredNodeSelectorTerm": zone("In", z), "tolerations": ecs(),
            "patch": annotate(name)})
    };
    cases.push(two_subsets(job.clone(), pct("subset-a", "zone-a"), pct("subset-b", "zone-b"), None));
    let mut three = two_subsets(job, pct("subset-a", "zone-a"), pct("subset-b", "zone-b"), Some(adaptive));
    three["spec"]["subsets"].as_array_mut().unwrap().push(json!({"name": "subset-c", "tolerations": ecs(),
        "patch": annotate("subset-c")}));
    cases.push(three);
    for (i, case) in cases.into_iter().enumerate() {
        let errs = run(case);
        assert!(errs.is_empty(), "success case {i}: {}", aggregate(&errs));
    }
}

#[test]
fn create_error_cases() {
    type Edit = fn(&mut Value);
    let rows: Vec<(&str, Edit, &str)> = vec![
        ("targetRef is nil", |w| w["spec"]["targetRef"] = Value::Null, "spec.targetRef"),
        ("targetRef's APIVersion is empty", |w| w["spec"]["targetRef"]["apiVersion"] = json!(""), "spec.targetRef"),
        ("targetRef's Kind is empty", |w| w["spec"]["targetRef"]["kind"] = json!(""), "spec.targetRef"),
        ("targetRef's Name is empty", |w| w["spec"]["targetRef"]["name"] = json!(""), "spec.targetRef"),
        ("subsets is nil", |w| w["spec"]["subsets"] = Value::Null, "spec.subsets"),
        (
            "statefulset group error",
            |w| {
                w["spec"]["targetRef"] =
                    json!({"apiVersion": "rollouts.kruise.io/v2", "kind": "StatefulSet", "name": "demo"})
            },
            "spec.targetRef",
        ),
        (
            "statefulset subset is percentage",
            |w| {
                w["spec"]["targetRef"] =
                    json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "demo"});
                w["spec"]["subsets"][0]["maxReplicas"] = json!("50%");
            },
            "spec.subsets[0].maxReplicas",
        ),
        ("subset[0]'name is empty", |w| w["spec"]["subsets"][0]["name"] = json!(""), "spec.subsets[0].name"),
        ("subset[1]'name is empty", |w| w["spec"]["subsets"][1]["name"] = json!(""), "spec.subsets[1].name"),
        (
            "subset[1]'name is conflict with subsets[0]",
            |w| w["spec"]["subsets"][0]["name"] = json!("subset-b"),
            "spec.subsets[1].name",
        ),
        (
            "requiredNodeSelectorTerm are not valid",
            |w| {
                w["spec"]["subsets"][0]["requiredNodeSelectorTerm"] =
                    json!({"matchExpressions": [{"key": "key", "operator": "Exists", "values": ["unexpected"]}]})
            },
            "spec.subsets[0].requiredNodeSelectorTerm.matchExpressions[0].values",
        ),
        (
            "preferredSchedulingTerms' weight are not valid",
            |w| {
                w["spec"]["subsets"][0]["preferredNodeSelectorTerms"] = json!([{"weight": 101, "preference":
                    {"matchExpressions": [{"key": "key", "operator": "Exists", "values": ["unexpected"]}]}}])
            },
            "spec.subsets[0].preferredSchedulingTerms[0].weight",
        ),
        (
            "preferredSchedulingTerms are not valid",
            |w| {
                w["spec"]["subsets"][0]["preferredNodeSelectorTerms"] = json!([{"weight": 50, "preference":
                    {"matchExpressions": [{"key": "key", "operator": "Exists", "values": ["unexpected"]}]}}])
            },
            "spec.subsets[0].preferredSchedulingTerms[0].preference.matchExpressions[0].values",
        ),
        (
            "subset-a's maxReplicas < 0",
            |w| w["spec"]["subsets"][0]["maxReplicas"] = json!(-100),
            "spec.subsets[0].maxReplicas",
        ),
        (
            "subset-a's maxReplicas = 0.2%",
            |w| w["spec"]["subsets"][0]["maxReplicas"] = json!("0.2%"),
            "spec.subsets[0].maxReplicas",
        ),
        (
            "subset-a's maxReplicas = 50.2%",
            |w| w["spec"]["subsets"][0]["maxReplicas"] = json!("50.2%"),
            "spec.subsets[0].maxReplicas",
        ),
        (
            "subset-a's maxReplicas = 101%",
            |w| w["spec"]["subsets"][0]["maxReplicas"] = json!("101%"),
            "spec.subsets[0].maxReplicas",
        ),
        (
            "subset-a's maxReplicas = 40%, subset-b's maxReplicas = 70%",
            |w| {
                w["spec"]["subsets"][0]["maxReplicas"] = json!("40%");
                w["spec"]["subsets"][1]["maxReplicas"] = json!("70%");
            },
            "spec.subsets[1].maxReplicas",
        ),
        (
            "40%, 20%, 20%",
            |w| {
                w["spec"]["subsets"][0]["maxReplicas"] = json!("40%");
                w["spec"]["subsets"][1]["maxReplicas"] = json!("20%");
                w["spec"]["subsets"][2]["maxReplicas"] = json!("20%");
            },
            "spec.subsets[0].maxReplicas",
        ),
        (
            "subset-a's maxReplicas = -1%",
            |w| w["spec"]["subsets"][0]["maxReplicas"] = json!("-1%"),
            "spec.subsets[0].maxReplicas",
        ),
        (
            "scheduleStrategy's type is not valid",
            |w| w["spec"]["scheduleStrategy"] = json!({"type": "random"}),
            "spec.scheduleStrategy.type",
        ),
        (
            "rescheduleCriticalSeconds = -1",
            |w| {
                w["spec"]["scheduleStrategy"] = json!({"type": "Adaptive",
                    "adaptive": {"rescheduleCriticalSeconds": -1, "disableSimulationSchedule": true}})
            },
            "spec.scheduleStrategy.adaptive.rescheduleCriticalSeconds",
        ),
        (
            "rescheduleCriticalSeconds < 0",
            |w| {
                w["spec"]["scheduleStrategy"] = json!({"type": "Adaptive",
                    "adaptive": {"rescheduleCriticalSeconds": -20, "disableSimulationSchedule": true}})
            },
            "spec.scheduleStrategy.adaptive.rescheduleCriticalSeconds",
        ),
        (
            "scheduleStrategy's type is not matched",
            |w| {
                w["spec"]["scheduleStrategy"] = json!({"type": "Fixed",
                    "adaptive": {"rescheduleCriticalSeconds": 20, "disableSimulationSchedule": true}})
            },
            "spec.scheduleStrategy.type",
        ),
        (
            "the last subset's maxReplicas is not nil when using adaptive",
            |w| {
                w["spec"]["scheduleStrategy"] = json!({"type": "Adaptive",
                    "adaptive": {"rescheduleCriticalSeconds": 20, "disableSimulationSchedule": true}});
                w["spec"]["subsets"][2]["maxReplicas"] = json!(50);
            },
            "spec.scheduleStrategy.adaptive",
        ),
    ];
    for (name, edit, path) in rows {
        let mut w = demo();
        edit(&mut w);
        let errs = run(w);
        assert!(errs.iter().any(|e| e.path == path), "{name}: no error at {path}: {}", aggregate(&errs));
    }
}

#[test]
fn messages_in_full() {
    let mut w = demo();
    w["spec"]["targetRef"] = Value::Null;
    assert_eq!(aggregate(&run(w)), "spec.targetRef: Required value: no targetRef defined in WorkloadSpread");

    let mut w = demo();
    w["spec"]["targetRef"] = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "d"});
    assert_eq!(
        aggregate(&run(w)),
        "spec.targetRef: Invalid value: {\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"name\":\"d\"}: \
         TargetReference's GroupKind is not permitted."
    );

    let mut w = demo();
    w["spec"]["targetRef"]["apiVersion"] = json!("apps/v1");
    assert!(aggregate(&run(w)).ends_with(": TargetReference is not valid for CloneSet."));

    let mut w = demo();
    w["spec"]["subsets"] = json!([]);
    assert_eq!(aggregate(&run(w)), "spec.subsets: Required value: subsets number must >= 1 in WorkloadSpread");

    let mut w = demo();
    w["spec"]["subsets"][1]["name"] = json!("subset-a");
    assert_eq!(
        aggregate(&run(w)),
        "spec.subsets[1].name: Invalid value: \"subset-a\": duplicated subset name subset-a"
    );

    let mut w = demo();
    w["spec"]["subsets"][1]["maxReplicas"] = json!("50%");
    assert_eq!(
        aggregate(&run(w)),
        "spec.subsets[1].maxReplicas: Invalid value: \"50%\": the maxReplicas type of all subsets must be the same"
    );

    let mut w = demo();
    w["spec"]["scheduleStrategy"] = json!({"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 200}});
    // 3 subsets: (300 - 5) / 2 = 147.
    assert_eq!(
        aggregate(&run(w)),
        "spec.scheduleStrategy.adaptive.rescheduleCriticalSeconds: Invalid value: 200: \
         rescheduleCriticalSeconds < 0 or rescheduleCriticalSeconds > 147 is not permitted"
    );

    let mut w = demo();
    w["spec"]["targetFilter"] = json!({"selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}});
    assert!(aggregate(&run(w)).contains("spec.targetFilter: Invalid value: "), "bad selector");
}

#[test]
fn other_list_failure_is_an_internal_error() {
    let errs = validate(&ws(demo()), Err("boom".into()), None, &gates());
    assert_eq!(aggregate(&errs), ": Internal error: query other WorkloadSpread failed, err: boom");
}

#[test]
fn target_ref_update() {
    let old = ws(demo());
    let edits: [fn(&mut Value); 3] = [
        |w| w["spec"]["targetRef"]["apiVersion"] = json!("apps/v1"),
        |w| w["spec"]["targetRef"]["kind"] = json!("Deployment"),
        |w| w["spec"]["targetRef"]["name"] = json!("deploy-1"),
    ];
    for edit in edits {
        let mut new = demo();
        edit(&mut new);
        let errs = validate_update(&ws(new), &old);
        assert_eq!(errs[0].path, "spec.targetRef", "{}", aggregate(&errs));
        assert!(errs[0].to_string().ends_with("change TargetReference is not permitted for WorkloadSpread"));
    }
    // The version alone may change.
    let mut new = demo();
    new["spec"]["targetRef"]["apiVersion"] = json!("apps.kruise.io/v1beta1");
    assert!(validate_update(&ws(new), &old).is_empty());
}

#[test]
fn conflict() {
    let named = |name: &str, target: &str| {
        let mut w = demo();
        w["metadata"]["name"] = json!(name);
        w["spec"]["targetRef"]["name"] = json!(target);
        ws(w)
    };
    let others = [named("ws-1", "test1"), named("ws-2", "test2"), named("ws-3", "test3")];
    let edits: [fn(&mut Value); 3] = [
        |w| w["spec"]["targetRef"]["apiVersion"] = json!("apps/v1"),
        |w| w["spec"]["targetRef"]["kind"] = json!("Deployment"),
        |w| w["spec"]["targetRef"]["name"] = json!("test"),
    ];
    for edit in edits {
        let mut w = demo();
        edit(&mut w);
        assert!(validate_conflict(&ws(w), &others, "spec").is_empty());
    }
    let others = [named("ws-1", "test1"), named("ws-2", "test1"), named("ws-3", "test2")];
    for me in &others[..2] {
        let errs = validate_conflict(me, &others, "spec");
        assert_eq!(errs[0].path, "spec.targetRef");
    }
    assert_eq!(
        validate_conflict(&others[0], &others, "spec")[0].detail,
        "ws.spec.targetRef is in conflict with other WorkloadSpread ws-2"
    );
}

/// `Test_validateWorkloadSpreadSubsets`: a patch applied to a template whose volume mounts name a
/// volumeClaimTemplate is valid; with the claim renamed the mount has no volume (one error).
#[test]
fn subsets_patch_on_the_workload_template() {
    let template: PodTemplateSpec = serde_json::from_value(json!({"metadata": {"labels": {"app": "test"}},
        "spec": {"containers": [{"name": "main", "image": "img:latest",
            "volumeMounts": [{"name": "vol-1--0", "mountPath": "/logs", "subPath": "logs"}]}]}}))
    .unwrap();
    let w = ws(json!({"spec": {"subsets": [{"name": "test",
        "patch": {"metadata": {"annotations": {"some-key": "some-value"}}}}]}}));
    let good = WorkloadTemplate { template: template.clone(), claims: vec!["vol-1--0".into()] };
    let bad = WorkloadTemplate { template, claims: vec!["bad-boy".into()] };
    for kind in ["CloneSet", "StatefulSet"] {
        let errs = validate_subsets(&w, &w.spec.subsets, Some(&good), &gates(), "spec.subsets");
        assert!(errs.is_empty(), "good {kind}: {}", aggregate(&errs));
        let errs = validate_subsets(&w, &w.spec.subsets, Some(&bad), &gates(), "spec.subsets");
        assert_eq!(errs.len(), 1, "bad {kind}: {}", aggregate(&errs));
        assert!(errs[0].path.starts_with("spec.subsets[0].patch.containers[0].volumeMounts"), "{}", errs[0]);
    }
    // A patch breaking the pod (an empty image) is refused under `patch`.
    let w = ws(
        json!({"spec": {"subsets": [{"name": "test", "patch": {"spec": {"containers": [{"name": "main", "image": ""}]}}}]}}),
    );
    let errs = validate_subsets(&w, &w.spec.subsets, Some(&good), &gates(), "spec.subsets");
    assert_eq!(aggregate(&errs), "spec.subsets[0].patch.containers[0].image: Required value");
}

#[test]
fn parse_group_as_go() {
    assert_eq!(parse_group("apps/v1"), Ok("apps"));
    assert_eq!(parse_group("v1"), Ok(""));
    assert_eq!(parse_group(""), Ok(""));
    assert!(parse_group("a/b/c").is_err());
}
