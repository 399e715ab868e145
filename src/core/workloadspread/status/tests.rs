//! Rows of kruise v1.9.0 `pkg/controller/workloadspread/workloadspread_controller_test.go`
//! `TestWorkloadSpreadReconcile` (the status and deletion-cost half; kruise's clock is replaced
//! by records made a few seconds or a minute before `now`), plus the versioned statuses, and
//! `TestManagerExistingPods` (pods created before the spread, adopted by their node).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::*;
use crate::apis::workloadspread::WorkloadSpreadSubsetCondition;

const NOW: i64 = 1_700_000_000;

fn at(secs_before: i64) -> Time {
    Time(Timestamp::from_second(NOW - secs_before).unwrap())
}

/// kruise's `workloadSpreadDemo` (a CloneSet target) with `subsets` of `maxReplicas` and `status`.
fn ws(maxes: &[Value], status: Value) -> WorkloadSpread {
    let subsets: Vec<Value> = maxes
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let mut s = json!({"name": format!("subset-{}", (b'a' + i as u8) as char)});
            if !m.is_null() {
                s["maxReplicas"] = m.clone();
            }
            s
        })
        .collect();
    crate::compat::decode::from_value(
        &json!({"metadata": {"name": "test-workloadSpread", "namespace": "default", "generation": 10},
        "spec": {"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cloneset-test"},
            "subsets": subsets},
        "status": status}),
    )
    .unwrap()
}

fn pod(name: &str, subset: Option<&str>) -> Pod {
    let mut p: Pod = serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default",
        "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cloneset-test",
            "uid": "u", "controller": true}]},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]},
        "status": {"phase": "Running"}}))
    .unwrap();
    if let Some(s) = subset {
        let v = format!("{{\"Name\":\"test-workloadSpread\",\"Subset\":\"{s}\"}}");
        p.metadata.annotations = Some([(MATCHED_ANNOTATION.to_string(), v)].into());
    }
    p
}

/// `(name, missingReplicas, replicas, creatingPods, deletingPods)` per subset.
type Row = (String, i32, i32, Vec<String>, Vec<String>);

fn rows(statuses: &[WorkloadSpreadSubsetStatus]) -> Vec<Row> {
    statuses
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                s.missing_replicas,
                s.replicas,
                s.creating_pods.keys().cloned().collect(),
                s.deleting_pods.keys().cloned().collect(),
            )
        })
        .collect()
}

fn row(name: &str, missing: i32, replicas: i32, creating: &[&str], deleting: &[&str]) -> Row {
    (
        name.into(),
        missing,
        replicas,
        creating.iter().map(|s| s.to_string()).collect(),
        deleting.iter().map(|s| s.to_string()).collect(),
    )
}

/// No node is known (nothing is adopted).
fn no_node(_: &str) -> Option<Arc<Node>> {
    None
}

fn run(ws: &WorkloadSpread, pods: &[Pod], replicas: i32) -> Plan {
    let refs: Vec<&Pod> = pods.iter().collect();
    plan(ws, &refs, replicas, super::super::VERSION_IGNORED, &at(0), &no_node)
}

/// `(pod, cost)` of the plan's cost patches.
fn costs(p: &Plan) -> BTreeMap<String, String> {
    p.costs.iter().map(|c| (c.pod.clone(), c.cost.clone())).collect()
}

fn event_reasons(p: &Plan) -> Vec<(&'static str, String)> {
    p.events.iter().map(|e| (e.reason, e.message.clone())).collect()
}

fn overall(p: &Plan) -> Vec<Row> {
    rows(&p.status.as_ref().unwrap().subset_statuses)
}

#[test]
fn zero_pods() {
    // "one subset, create zero pod" / "two subset, create zero pod"
    let p = run(&ws(&[json!(5)], json!({})), &[], 10);
    assert_eq!(overall(&p), [row("subset-a", 5, 0, &[], &[])]);
    assert_eq!(p.status.as_ref().unwrap().observed_generation, 10);
    let p = run(&ws(&[json!(5), json!(5)], json!({})), &[], 10);
    assert_eq!(overall(&p), [row("subset-a", 5, 0, &[], &[]), row("subset-b", 5, 0, &[], &[])]);
    assert!(p.costs.is_empty() && p.requeue.is_none());
}

#[test]
fn two_subsets_two_pods_and_their_costs() {
    // "two subset, create two pod, maxReplicas = 5, missingReplicas = 4"
    let p = run(
        &ws(&[json!(5), json!(5)], json!({})),
        &[pod("test-pod-0", Some("subset-a")), pod("test-pod-1", Some("subset-b"))],
        10,
    );
    assert_eq!(overall(&p), [row("subset-a", 4, 1, &[], &[]), row("subset-b", 4, 1, &[], &[])]);
    assert_eq!(
        p.costs,
        [
            CostPatch { pod: "test-pod-0".into(), cost: "200".into(), subset: "subset-a".into() },
            CostPatch { pod: "test-pod-1".into(), cost: "100".into(), subset: "subset-b".into() }
        ]
    );
}

#[test]
fn percentages_scale_over_the_workload() {
    // "create one pod, maxReplicas = 100%" (4) and "= 80%" (3) of 5 replicas
    let p = run(&ws(&[json!("100%")], json!({})), &[pod("test-pod-0", Some("subset-a"))], 5);
    assert_eq!(overall(&p), [row("subset-a", 4, 1, &[], &[])]);
    let p = run(&ws(&[json!("80%")], json!({})), &[pod("test-pod-0", Some("subset-a"))], 5);
    assert_eq!(overall(&p), [row("subset-a", 3, 1, &[], &[])]);
}

#[test]
fn creating_pods_wait_until_their_timeout() {
    // "create two pods, one failed but no timeout": test-pod-1 kept, counted as missing
    let status = json!({"subsetStatuses": [{"name": "subset-a", "missingReplicas": 3, "replicas": 0,
        "creatingPods": {"test-pod-0": at(2), "test-pod-1": at(2)}}]});
    let p = run(&ws(&[json!(5)], status), &[pod("test-pod-0", Some("subset-a"))], 10);
    assert_eq!(overall(&p), [row("subset-a", 3, 1, &["test-pod-1"], &[])]);
    assert_eq!(p.requeue, Some(Duration::from_secs(28)));
    assert!(p.events.is_empty());
    // "create two pod, one failed and timeout": dropped, the unit is missing again
    let status = json!({"subsetStatuses": [{"name": "subset-a", "missingReplicas": 3, "replicas": 0,
        "creatingPods": {"test-pod-0": at(60), "test-pod-1": at(60)}}]});
    let p = run(&ws(&[json!(5)], status), &[pod("test-pod-0", Some("subset-a"))], 10);
    assert_eq!(overall(&p), [row("subset-a", 4, 1, &[], &[])]);
    assert_eq!(
        event_reasons(&p),
        [("CreatePodFailed", "Pod default/test-pod-1 was expected to be created but it wasn't".to_string())]
    );
    assert_eq!(p.requeue, None);
}

#[test]
fn a_pod_created_without_a_name_is_matched_by_its_uid() {
    let status =
        json!({"subsetStatuses": [{"name": "subset-a", "missingReplicas": 4, "creatingPods": {"uid-1": at(1)}}]});
    let mut p0 = pod("web-x1", None);
    p0.metadata.annotations = Some(
        [(
            MATCHED_ANNOTATION.to_string(),
            r#"{"name":"test-workloadSpread","subset":"subset-a","uid":"uid-1"}"#.to_string(),
        )]
        .into(),
    );
    let p = run(&ws(&[json!(5)], status), &[p0], 10);
    assert_eq!(overall(&p), [row("subset-a", 4, 1, &[], &[])]);
}

#[test]
fn deleting_pods_wait_until_their_timeout() {
    // "create five pods, all succeed and remove one failed but no timeout, missingReplicas = 1"
    let pods: Vec<Pod> = (0..5).map(|i| pod(&format!("test-pod-{i}"), Some("subset-a"))).collect();
    let status = json!({"subsetStatuses": [{"name": "subset-a", "missingReplicas": 1, "replicas": 5,
        "deletingPods": {"test-pod-0": at(5)}}]});
    let p = run(&ws(&[json!(5)], status), &pods, 10);
    assert_eq!(overall(&p), [row("subset-a", 1, 5, &[], &["test-pod-0"])]);
    assert_eq!(p.requeue, Some(Duration::from_secs(10)));
    // "... remove one failed and timeout, missingReplicas = 0"
    let status = json!({"subsetStatuses": [{"name": "subset-a", "missingReplicas": 1, "replicas": 5,
        "deletingPods": {"test-pod-0": at(30)}}]});
    let p = run(&ws(&[json!(5)], status), &pods, 10);
    assert_eq!(overall(&p), [row("subset-a", 0, 5, &[], &[])]);
    assert_eq!(
        event_reasons(&p),
        [("DeletePodFailed", "Pod default/test-pod-0 was expected to be deleted but it wasn't".to_string())]
    );
    // "create five pods, all succeed and remove one": the deleted pod is gone, its record too
    let status = json!({"subsetStatuses": [{"name": "subset-a", "missingReplicas": 1, "replicas": 5,
        "deletingPods": {"test-pod-0": at(5)}}]});
    let p = run(&ws(&[json!(5)], status), &pods[1..], 10);
    assert_eq!(overall(&p), [row("subset-a", 1, 4, &[], &[])]);
}

#[test]
fn surplus_pods_cost_least() {
    // "create five pods, all succeed, maxReplicas = 3, missingReplicas = 0, pod-0, pod-1 deletion-cost = -100"
    let pods: Vec<Pod> = (0..5).map(|i| pod(&format!("test-pod-{i}"), Some("subset-a"))).collect();
    let p = run(&ws(&[json!(3)], json!({})), &pods, 10);
    assert_eq!(overall(&p), [row("subset-a", 0, 5, &[], &[])]);
    let costs = costs(&p);
    assert_eq!(costs.values().filter(|c| *c == "-100").count(), 2);
    assert_eq!(costs.values().filter(|c| *c == "100").count(), 3);
}

#[test]
fn unmatched_pods_and_other_spreads_cost_least() {
    // A pod of no subset (or of another spread) is in the fake subset: lowest cost, not counted.
    let mut other = pod("test-pod-2", Some("subset-a"));
    other.metadata.annotations =
        Some([(MATCHED_ANNOTATION.to_string(), r#"{"name":"other","subset":"subset-a"}"#.to_string())].into());
    let pods = [pod("test-pod-0", Some("subset-a")), pod("test-pod-1", None), other];
    let p = run(&ws(&[json!(5), Value::Null], json!({})), &pods, 10);
    assert_eq!(overall(&p), [row("subset-a", 4, 1, &[], &[]), row("subset-b", -1, 0, &[], &[])]);
    let costs = costs(&p);
    assert_eq!(costs["test-pod-0"], "200");
    assert_eq!(costs["test-pod-1"], "-300");
    assert_eq!(costs["test-pod-2"], "-300");
}

#[test]
fn an_unchanged_cost_is_not_patched() {
    let mut p0 = pod("test-pod-0", Some("subset-a"));
    p0.metadata.annotations.as_mut().unwrap().insert(DELETION_COST.into(), "100".into());
    let p = run(&ws(&[json!(5)], json!({})), &[p0], 10);
    assert!(p.costs.is_empty());
}

const DELETION_COST: &str = super::super::DELETION_COST_ANNOTATION;

#[test]
fn versioned_statuses_and_the_old_version_reversed() {
    // "multiVersion pods": Deployment pods of two template hashes; the old version drains from
    // the first subset.
    let mut spread = ws(
        &[json!(2), Value::Null],
        json!({"versionedSubsetStatuses": {
        "gone": [{"name": "subset-a", "missingReplicas": 1, "creatingPods": {"x": at(1)}}, {"name": "subset-b", "missingReplicas": -1}],
        "empty": [{"name": "subset-a", "missingReplicas": 2}, {"name": "subset-b", "missingReplicas": -1}]}}),
    );
    spread.spec.target_ref = Some(crate::apis::workloadspread::TargetReference {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: "web".into(),
    });
    let mk = |name: &str, hash: &str, subset: &str| {
        let mut p = pod(name, Some(subset));
        p.metadata.owner_references.as_mut().unwrap()[0].kind = "ReplicaSet".into();
        p.metadata.owner_references.as_mut().unwrap()[0].api_version = "apps/v1".into();
        p.metadata.labels = Some([("pod-template-hash".to_string(), hash.to_string())].into());
        p
    };
    let pods = [mk("old-0", "v1", "subset-a"), mk("old-1", "v1", "subset-b"), mk("new-0", "v2", "subset-a")];
    let refs: Vec<&Pod> = pods.iter().collect();
    let p = plan(&spread, &refs, 3, "v2", &at(0), &no_node);
    let status = p.status.clone().unwrap();
    assert_eq!(rows(&status.subset_statuses), [row("subset-a", 0, 2, &[], &[]), row("subset-b", -1, 1, &[], &[])]);
    assert_eq!(
        rows(&status.versioned_subset_statuses["v1"]),
        [row("subset-a", 1, 1, &[], &[]), row("subset-b", -1, 1, &[], &[])]
    );
    assert_eq!(
        rows(&status.versioned_subset_statuses["v2"]),
        [row("subset-a", 1, 1, &[], &[]), row("subset-b", -1, 0, &[], &[])]
    );
    assert_eq!(
        rows(&status.versioned_subset_statuses["gone"]),
        [row("subset-a", 1, 0, &["x"], &[]), row("subset-b", -1, 0, &[], &[])]
    );
    assert!(!status.versioned_subset_statuses.contains_key("empty"));
    let costs = costs(&p);
    assert_eq!(costs["new-0"], "200");
    assert_eq!(costs["old-0"], "100");
    assert_eq!(costs["old-1"], "200");
}

// kruise v1.9.0 `workloadspread_controller_test.go` `TestManagerExistingPods`.

fn node(name: &str, labels: Value, taints: Value) -> Arc<Node> {
    Arc::new(
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}}))
            .unwrap(),
    )
}

fn nodes(list: Vec<Arc<Node>>) -> impl Fn(&str) -> Option<Arc<Node>> {
    move |name| list.iter().find(|n| n.metadata.name.as_deref() == Some(name)).cloned()
}

fn on(mut p: Pod, node: &str, spec: Value) -> Pod {
    let mut raw = serde_json::to_value(p.spec.take().unwrap()).unwrap();
    raw["nodeName"] = json!(node);
    for (k, v) in spec.as_object().unwrap() {
        raw[k] = v.clone();
    }
    p.spec = Some(serde_json::from_value(raw).unwrap());
    p
}

fn annotated(mut p: Pod, annotations: Value) -> Pod {
    p.metadata.annotations = Some(serde_json::from_value(annotations).unwrap());
    p
}

#[test]
fn pods_created_before_the_spread_are_adopted_by_their_node() {
    // "manage the pods that were created before workloadSpread"
    let mut spread = ws(
        &[json!(5), Value::Null],
        json!({"subsetStatuses": [
        {"name": "subset-a", "missingReplicas": 5}, {"name": "subset-b", "missingReplicas": -1}]}),
    );
    spread.spec.subsets = serde_json::from_value(json!([
        {"name": "subset-a", "maxReplicas": 5,
         "requiredNodeSelectorTerm": {"matchExpressions": [{"key": "name-is", "operator": "In", "values": ["node-a"]}]},
         "tolerations": [{"key": "node-taint", "value": "node-a", "effect": "NoSchedule"}],
         "patch": {"metadata": {"annotations": {"subset": "subset-a"}}}},
        {"name": "subset-b",
         "requiredNodeSelectorTerm": {"matchExpressions": [{"key": "name-is", "operator": "In", "values": ["node-b"]}]}}]))
    .unwrap();
    let worker = json!({
        "tolerations": [{"key": "schedule-system", "value": "unified", "effect": "NoSchedule"}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "type", "operator": "In", "values": ["worker"]}]}]}}}});
    let mut pods = Vec::new();
    // 0-1: created before the spread, on node-a.
    for i in 0..2 {
        pods.push(on(pod(&format!("test-pod-{i}"), None), "node-a", worker.clone()));
    }
    // 2-3: the same, annotated by another (old) WorkloadSpread.
    for i in 2..4 {
        let p = on(pod(&format!("test-pod-{i}"), None), "node-a", worker.clone());
        pods.push(annotated(
            p,
            json!({MATCHED_ANNOTATION: r#"{"Name":"unmatched-workloadSpread","Subset":"subset-a"}"#}),
        ));
    }
    // 4-7: placed by this spread.
    for i in 4..6 {
        pods.push(pod(&format!("test-pod-{i}"), Some("subset-a")));
    }
    for i in 6..8 {
        pods.push(pod(&format!("test-pod-{i}"), Some("subset-b")));
    }
    // 8: matches no subset (node-c); 9: annotated with a subset this spread does not have.
    let node_c_toleration = json!({"tolerations": [{"key": "node-taint", "value": "node-c", "effect": "NoSchedule"}]});
    pods.push(on(pod("test-pod-8", None), "node-c", node_c_toleration.clone()));
    pods.push(annotated(
        on(pod("test-pod-9", None), "node-a", node_c_toleration),
        json!({DELETION_COST: "200", MATCHED_ANNOTATION: r#"{"Name":"test-workloadSpread","Subset":"subset-c"}"#}),
    ));
    let known = nodes(vec![
        node(
            "node-a",
            json!({"name-is": "node-a", "type": "worker"}),
            json!([{"key": "node-taint", "value": "node-a", "effect": "NoSchedule"},
                   {"key": "schedule-system", "value": "unified", "effect": "NoSchedule"}]),
        ),
        node(
            "node-c",
            json!({"name-is": "node-c"}),
            json!([{"key": "node-taint", "value": "node-c", "effect": "NoSchedule"}]),
        ),
    ]);
    let refs: Vec<&Pod> = pods.iter().collect();
    let p = plan(&spread, &refs, 10, super::super::VERSION_IGNORED, &at(0), &known);
    let replicas: Vec<(String, i32)> =
        p.status.as_ref().unwrap().subset_statuses.iter().map(|s| (s.name.clone(), s.replicas)).collect();
    assert_eq!(replicas, [("subset-a".to_string(), 6), ("subset-b".to_string(), 2)]);
    let adopted: Vec<(&str, &str)> = p.adoptions.iter().map(|a| (a.pod.as_str(), a.subset.as_str())).collect();
    assert_eq!(
        adopted,
        [
            ("test-pod-0", "subset-a"),
            ("test-pod-1", "subset-a"),
            ("test-pod-2", "subset-a"),
            ("test-pod-3", "subset-a")
        ]
    );
    assert_eq!(
        p.adoptions[0].patch,
        json!({"metadata": {"annotations": {"subset": "subset-a",
            MATCHED_ANNOTATION: r#"{"name":"test-workloadSpread","subset":"subset-a"}"#}}})
    );
    // Every pod is costed: 7 within maxReplicas, 1 beyond, 2 in no subset.
    let costs = costs(&p);
    assert_eq!(costs.len(), 10, "{costs:?}");
    let n = |f: fn(i64) -> bool| costs.values().filter(|c| f(c.parse().unwrap())).count();
    assert_eq!(n(|c| c > 0), 7);
    assert_eq!(n(|c| (-200..=0).contains(&c)), 1);
    assert_eq!(n(|c| c < -200), 2);
    assert_eq!(costs["test-pod-8"], "-300");
    assert_eq!(costs["test-pod-9"], "-300");
    let fake = p.costs.iter().find(|c| c.pod == "test-pod-8").unwrap();
    assert_eq!(fake.subset, super::super::cost::FAKE_SUBSET);
}

#[test]
fn preferred_terms_choose_among_matching_subsets() {
    // "manage the pods that were created before workloadSpread, use preferredNodeSelectorTerms to match subset"
    let mut spread = ws(&[json!(3), json!(3), Value::Null], json!({}));
    let tolerate = json!([{"key": "node-taint", "operator": "Exists", "effect": "NoSchedule"}]);
    let prefer = |first: &str, second: &str| {
        json!([{"weight": 200, "preference": {"matchExpressions": [{"key": "type", "operator": "In", "values": [first]}]}},
               {"weight": 100, "preference": {"matchExpressions": [{"key": "type", "operator": "In", "values": [second]}]}}])
    };
    spread.spec.subsets = serde_json::from_value(json!([
        {"name": "subset-a", "maxReplicas": 3, "tolerations": tolerate,
         "patch": {"metadata": {"annotations": {"subset": "subset-a"}}}},
        {"name": "subset-b", "maxReplicas": 3, "tolerations": tolerate, "preferredNodeSelectorTerms": prefer("worker-2", "worker-3")},
        {"name": "subset-c", "tolerations": tolerate, "preferredNodeSelectorTerms": prefer("worker-3", "worker-2")}]))
    .unwrap();
    let taint = json!([{"key": "node-taint", "value": "whatever", "effect": "NoSchedule"}]);
    let known = nodes(
        (1..=3).map(|i| node(&format!("worker-{i}"), json!({"type": format!("worker-{i}")}), taint.clone())).collect(),
    );
    let pods: Vec<Pod> =
        (0..3).map(|i| on(pod(&format!("test-pod-{i}"), None), &format!("worker-{}", i + 1), json!({}))).collect();
    let refs: Vec<&Pod> = pods.iter().collect();
    let p = plan(&spread, &refs, 3, super::super::VERSION_IGNORED, &at(0), &known);
    let adopted: Vec<(&str, &str)> = p.adoptions.iter().map(|a| (a.pod.as_str(), a.subset.as_str())).collect();
    assert_eq!(adopted, [("test-pod-0", "subset-a"), ("test-pod-1", "subset-b"), ("test-pod-2", "subset-c")]);
    let replicas: Vec<i32> = p.status.as_ref().unwrap().subset_statuses.iter().map(|s| s.replicas).collect();
    assert_eq!(replicas, [1, 1, 1]);
    assert!(costs(&p).values().all(|c| c.parse::<i64>().unwrap() > 0), "{:?}", p.costs);
}

#[test]
fn a_full_subset_loses_the_tie_and_pods_without_a_known_node_stay_out() {
    // Two identical subsets: the first while it has room, then the second (the quota point).
    let mut spread = ws(&[json!(1), json!(1)], json!({}));
    for s in &mut spread.spec.subsets {
        s.required_node_selector_term =
            Some(serde_json::from_value(json!({"matchExpressions": [{"key": "zone", "operator": "Exists"}]})).unwrap());
    }
    let known = nodes(vec![node("n1", json!({"zone": "x"}), json!([]))]);
    let pods = [
        on(pod("p0", None), "n1", json!({})),
        on(pod("p1", None), "n1", json!({})),
        on(pod("p2", None), "gone", json!({})),
        on(pod("p3", None), "", json!({})),
    ];
    let refs: Vec<&Pod> = pods.iter().collect();
    let p = plan(&spread, &refs, 2, super::super::VERSION_IGNORED, &at(0), &known);
    let adopted: Vec<(&str, &str)> = p.adoptions.iter().map(|a| (a.pod.as_str(), a.subset.as_str())).collect();
    assert_eq!(adopted, [("p0", "subset-a"), ("p1", "subset-b")]);
    assert_eq!(overall(&p), [row("subset-a", 0, 1, &[], &[]), row("subset-b", 0, 1, &[], &[])]);
}

#[test]
fn a_subset_named_like_the_old_fake_subset_is_a_subset() {
    let mut spread = ws(&[Value::Null], json!({}));
    spread.spec.subsets[0].name = "fake-subset-name".into();
    let p = run(&spread, &[pod("p0", Some("fake-subset-name"))], 1);
    assert_eq!(overall(&p), [row("fake-subset-name", -1, 1, &[], &[])]);
}

#[test]
fn conditions_other_than_schedulable_are_kept() {
    let status = json!({"subsetStatuses": [{"name": "subset-a", "missingReplicas": 5,
        "conditions": [{"type": "Other", "status": "True"}, {"type": "Schedulable", "status": "False"}]}]});
    let p = run(&ws(&[json!(5)], status), &[], 10);
    let conditions: Vec<WorkloadSpreadSubsetCondition> = p.status.unwrap().subset_statuses[0].conditions.clone();
    assert_eq!(conditions.iter().map(|c| c.type_.as_str()).collect::<Vec<_>>(), ["Other"]);
}
