//! Rows of kruise v1.9.0 `pkg/controller/workloadspread/reschedule_test.go` `TestRescheduleSubset`
//! through the whole round ([`crate::core::workloadspread::status::plan`], as kruise's test runs
//! `syncWorkloadSpread`; kruise's "a minute ago" clock offsets become records before `now`), plus
//! the pending pod not yet timed out, the last subset and the versioned statuses.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::*;
use crate::core::workloadspread::status::{Plan, plan};
use crate::core::workloadspread::{MATCHED_ANNOTATION, VERSION_IGNORED};

const NOW: i64 = 1_700_000_000;

fn at(secs_before: i64) -> Time {
    Time(Timestamp::from_second(NOW - secs_before).unwrap())
}

fn no_node(_: &str) -> Option<Arc<Node>> {
    None
}

/// kruise's `wsDemo`: Adaptive with `rescheduleCriticalSeconds: 5`, `subset-a` (max 5) and
/// `subset-b`, both statuses `Schedulable=True` unless `conditions` says otherwise.
fn ws_demo(strategy: &str, conditions: [Value; 2]) -> WorkloadSpread {
    let [a, b] = conditions;
    crate::compat::decode::from_value(&json!({
        "metadata": {"name": "test-workloadSpread", "namespace": "default", "generation": 10},
        "spec": {"targetRef": {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cloneset-test"},
            "scheduleStrategy": {"type": strategy, "adaptive": {"rescheduleCriticalSeconds": 5}},
            "subsets": [{"name": "subset-a", "maxReplicas": 5}, {"name": "subset-b"}]},
        "status": {"observedGeneration": 10, "subsetStatuses": [
            {"name": "subset-a", "missingReplicas": 5, "conditions": a},
            {"name": "subset-b", "missingReplicas": -1, "conditions": b}]}
    }))
    .unwrap()
}

fn schedulable(status: &str, secs_before: i64) -> Value {
    json!([{"type": "Schedulable", "status": status, "lastTransitionTime": at(secs_before)}])
}

/// kruise's `newScheduledFailedPod`: Pending, unscheduled, `PodScheduled=False Unschedulable`,
/// created `created_before` seconds ago, annotated into `subset`.
fn failed_pod(name: &str, subset: &str, created_before: i64) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
            "creationTimestamp": at(created_before),
            "annotations": {MATCHED_ANNOTATION: format!(r#"{{"Name":"test-workloadSpread","Subset":"{subset}"}}"#)},
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "cloneset-test",
                "uid": "u", "controller": true}]},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.15.1"}]},
        "status": {"phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}
    }))
    .unwrap()
}

fn run(ws: &WorkloadSpread, pods: &[Pod]) -> Plan {
    let refs: Vec<&Pod> = pods.iter().collect();
    plan(ws, &refs, 10, VERSION_IGNORED, &at(0), &no_node)
}

/// The `Schedulable` condition of each overall subset status: `(status, seconds before now)`.
fn conditions(p: &Plan) -> Vec<Option<(String, i64)>> {
    p.status
        .as_ref()
        .unwrap()
        .subset_statuses
        .iter()
        .map(|s| {
            schedulable_condition(Some(s)).map(|c| {
                let t = c.last_transition_time.as_ref().unwrap();
                (c.status.clone(), NOW - t.0.as_second())
            })
        })
        .collect()
}

fn cond(status: &str, secs_before: i64) -> Option<(String, i64)> {
    Some((status.into(), secs_before))
}

#[test]
fn close_reschedule_strategy_condition_is_null() {
    let p = run(&ws_demo("Fixed", [Value::Null, Value::Null]), &[]);
    assert_eq!(conditions(&p), [None, None]);
    // A condition left from an Adaptive past is removed.
    let p = run(&ws_demo("Fixed", [schedulable("False", 60), schedulable("True", 60)]), &[]);
    assert_eq!(conditions(&p), [None, None]);
    assert!(p.reschedule.is_empty());
}

#[test]
fn create_no_pods_subset_a_is_schedulable() {
    let p = run(&ws_demo("Adaptive", [Value::Null, Value::Null]), &[]);
    assert_eq!(conditions(&p), [cond("True", 0), cond("True", 0)]);
}

#[test]
fn create_two_pods_two_pending_subset_a_is_unschedulable() {
    let ws = ws_demo("Adaptive", [schedulable("True", 120), schedulable("True", 120)]);
    let pods = [failed_pod("test-pod-0", "subset-a", 60), failed_pod("test-pod-1", "subset-a", 60)];
    let p = run(&ws, &pods);
    assert_eq!(conditions(&p), [cond("False", 0), cond("True", 120)]);
    let deleted: Vec<(&str, &str, &str)> =
        p.reschedule.iter().map(|r| (r.pod.as_str(), r.uid.as_str(), r.subset.as_str())).collect();
    assert_eq!(deleted, [("test-pod-0", "uid-test-pod-0", "subset-a"), ("test-pod-1", "uid-test-pod-1", "subset-a")]);
}

#[test]
fn subset_a_was_unschedulable_and_not_reach_up_5_minutes() {
    let ws = ws_demo("Adaptive", [schedulable("False", 240), schedulable("True", 240)]);
    let p = run(&ws, &[]);
    assert_eq!(conditions(&p), [cond("False", 240), cond("True", 240)]);
    assert!(p.events.is_empty());
    assert_eq!(p.requeue, Some(Duration::from_secs(60)), "come back when it recovers");
}

#[test]
fn subset_a_was_recovered_from_unschedulable_to_schedulable() {
    let ws = ws_demo("Adaptive", [schedulable("False", 600), schedulable("True", 600)]);
    let p = run(&ws, &[]);
    assert_eq!(conditions(&p), [cond("True", 0), cond("True", 600)]);
    let events: Vec<(&str, &str)> = p.events.iter().map(|e| (e.reason, e.message.as_str())).collect();
    assert_eq!(
        events,
        [(
            "RecoverSchedulable",
            "Subset subset-a of WorkloadSpread default/test-workloadSpread is recovered from unschedulable to schedulable"
        )]
    );
    assert_eq!(p.events[0].type_, crate::core::rollout::plan::EventType::Normal);
}

#[test]
fn a_pending_pod_not_yet_timed_out_brings_the_round_back() {
    let ws = ws_demo("Adaptive", [schedulable("True", 120), schedulable("True", 120)]);
    let p = run(&ws, &[failed_pod("test-pod-0", "subset-a", 2)]);
    assert_eq!(conditions(&p), [cond("True", 120), cond("True", 120)]);
    assert!(p.reschedule.is_empty());
    assert_eq!(p.requeue, Some(Duration::from_secs(3)));
    // Still unschedulable but scheduled since (a node name), or being deleted: not a failed pod.
    let mut bound = failed_pod("test-pod-0", "subset-a", 60);
    bound.spec.as_mut().unwrap().node_name = Some("n1".into());
    let p = run(&ws, &[bound]);
    assert!(p.reschedule.is_empty());
}

#[test]
fn the_last_subset_is_never_rescheduled() {
    let ws = ws_demo("Adaptive", [schedulable("True", 120), schedulable("False", 120)]);
    let p = run(&ws, &[failed_pod("test-pod-0", "subset-b", 60)]);
    assert_eq!(conditions(&p), [cond("True", 120), cond("True", 0)]);
    assert!(p.reschedule.is_empty());
}

#[test]
fn versioned_statuses_carry_the_condition_the_webhook_reads() {
    let mut ws = ws_demo("Adaptive", [schedulable("True", 120), schedulable("True", 120)]);
    ws.spec.target_ref.as_mut().unwrap().kind = "Deployment".into();
    ws.spec.target_ref.as_mut().unwrap().api_version = "apps/v1".into();
    let mut pods = [failed_pod("web-0", "subset-a", 60)];
    let owner = &mut pods[0].metadata.owner_references.as_mut().unwrap()[0];
    owner.kind = "ReplicaSet".into();
    owner.api_version = "apps/v1".into();
    pods[0].metadata.labels = Some([("pod-template-hash".to_string(), "v1".to_string())].into());
    let refs: Vec<&Pod> = pods.iter().collect();
    let p = plan(&ws, &refs, 2, "v1", &at(0), &no_node);
    let versioned = &p.status.as_ref().unwrap().versioned_subset_statuses["v1"];
    let got: Vec<&str> = versioned.iter().map(|s| schedulable_condition(Some(s)).unwrap().status.as_str()).collect();
    assert_eq!(got, ["False", "True"]);
    assert_eq!(crate::core::workloadspread::suitable_subset(versioned), Some(1), "the webhook passes over subset-a");
    assert_eq!(p.reschedule.len(), 1, "deleted once, from the overall statuses");
}

#[test]
fn conditions_are_set_as_kruise_sets_them() {
    let mut s = WorkloadSpreadSubsetStatus::default();
    set_condition(&mut s, new_condition("True", &at(10)));
    set_condition(&mut s, new_condition("True", &at(0)));
    assert_eq!(s.conditions[0].last_transition_time, Some(at(10)), "same status and reason: unchanged");
    s.conditions.insert(0, WorkloadSpreadSubsetCondition { type_: "Other".into(), ..Default::default() });
    set_condition(&mut s, new_condition("False", &at(0)));
    let types: Vec<(&str, &str)> = s.conditions.iter().map(|c| (c.type_.as_str(), c.status.as_str())).collect();
    assert_eq!(types, [("Other", ""), ("Schedulable", "False")]);
    remove_condition(&mut s);
    assert_eq!(s.conditions.len(), 1);
}

#[test]
fn only_a_positive_critical_time_of_an_adaptive_strategy_reschedules() {
    let mut ws = ws_demo("Adaptive", [Value::Null, Value::Null]);
    assert_eq!(critical_seconds(&ws), Some(5));
    ws.spec.schedule_strategy.adaptive.as_mut().unwrap().reschedule_critical_seconds = Some(0);
    assert_eq!(critical_seconds(&ws), None);
    ws.spec.schedule_strategy.adaptive = None;
    assert_eq!(critical_seconds(&ws), None);
    assert_eq!(critical_seconds(&ws_demo("", [Value::Null, Value::Null])), None);
}
