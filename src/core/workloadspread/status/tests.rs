//! Rows of kruise v1.9.0 `pkg/controller/workloadspread/workloadspread_controller_test.go`
//! `TestWorkloadSpreadReconcile` (the status and deletion-cost half; kruise's clock is replaced
//! by records made a few seconds or a minute before `now`), plus the versioned statuses.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::*;

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

fn run(ws: &WorkloadSpread, pods: &[Pod], replicas: i32) -> Plan {
    let refs: Vec<&Pod> = pods.iter().collect();
    plan(ws, &refs, replicas, super::super::VERSION_IGNORED, &at(0))
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
    assert_eq!(p.costs, [("test-pod-0".to_string(), "200".to_string()), ("test-pod-1".into(), "100".into())]);
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
    assert!(p.expired.is_empty());
    // "create two pod, one failed and timeout": dropped, the unit is missing again
    let status = json!({"subsetStatuses": [{"name": "subset-a", "missingReplicas": 3, "replicas": 0,
        "creatingPods": {"test-pod-0": at(60), "test-pod-1": at(60)}}]});
    let p = run(&ws(&[json!(5)], status), &[pod("test-pod-0", Some("subset-a"))], 10);
    assert_eq!(overall(&p), [row("subset-a", 4, 1, &[], &[])]);
    assert_eq!(p.expired, [("test-pod-1".to_string(), "CreatePodFailed")]);
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
    assert_eq!(p.expired, [("test-pod-0".to_string(), "DeletePodFailed")]);
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
    let costs: BTreeMap<String, String> = p.costs.into_iter().collect();
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
    let costs: BTreeMap<String, String> = p.costs.into_iter().collect();
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
    let p = plan(&spread, &refs, 3, "v2", &at(0));
    let status = p.status.unwrap();
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
    let costs: BTreeMap<String, String> = p.costs.into_iter().collect();
    assert_eq!(costs["new-0"], "200");
    assert_eq!(costs["old-0"], "100");
    assert_eq!(costs["old-1"], "200");
}
