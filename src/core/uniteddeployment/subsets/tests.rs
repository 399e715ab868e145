//! The CloneSet planner: kruise's `ApplySubsetTemplate` shape, provisioning, updates, deletions
//! and status.

use super::*;
use crate::apis::CloneSet;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::json;

fn ud(spec: Value) -> UnitedDeployment {
    let mut u = UnitedDeployment::new("web", serde_json::from_value(spec).unwrap());
    u.metadata.namespace = Some("ns".into());
    u.metadata.uid = Some("ud-uid".into());
    u.metadata.generation = Some(2);
    u
}

fn spec() -> Value {
    json!({"replicas": 6, "selector": {"matchLabels": {"app": "web"}},
        "template": {"cloneSetTemplate": {"metadata": {"labels": {"app": "web", "team": "a"}}, "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "main", "image": "nginx:1"}]}}}}},
        "topology": {"subsets": [
            {"name": "zone-a", "replicas": 4, "nodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
             "tolerations": [{"key": "dedicated", "operator": "Exists"}],
             "patch": {"spec": {"containers": [{"name": "main", "env": [{"name": "ZONE", "value": "a"}]}]}}},
            {"name": "zone-b", "nodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}}]},
        "updateStrategy": {"type": "Manual", "manualUpdate": {"partitions": {"zone-a": 9, "zone-b": 1}}}})
}

fn now() -> Time {
    Time(k8s_openapi::jiff::Timestamp::from_second(1_700_000_000).unwrap())
}

fn created(plan: &Plan) -> BTreeMap<String, CloneSet> {
    plan.actions
        .iter()
        .filter_map(|a| match a {
            Action::Create { subset, workload } => match &**workload {
                Workload::CloneSet(set) => Some((subset.clone(), set.clone())),
                other => panic!("not a CloneSet: {other:?}"),
            },
            _ => None,
        })
        .collect()
}

#[test]
fn subset_prefix_as_kruise() {
    assert_eq!(subset_prefix("web", "zone-a"), "web-zone-a-");
    assert_eq!(subset_prefix("web", "Zone_A"), "web-");
}

#[test]
fn first_round_creates_one_cloneset_per_subset() {
    let u = ud(spec());
    let p = plan(&u, &[], "web-abc", "web-abc", now()).unwrap();
    assert_eq!(p.next_replicas, [("zone-a".to_string(), 4), ("zone-b".to_string(), 2)].into());
    let sets = created(&p);
    assert_eq!(sets.len(), 2);
    let a = &sets["zone-a"];
    assert_eq!(a.metadata.generate_name.as_deref(), Some("web-zone-a-"));
    assert_eq!(a.metadata.namespace.as_deref(), Some("ns"));
    let labels = a.metadata.labels.clone().unwrap();
    assert_eq!(labels["app"], "web");
    assert_eq!(labels["team"], "a");
    assert_eq!(labels[SUBSET_NAME_LABEL], "zone-a");
    assert_eq!(labels[REVISION_LABEL], "web-abc");
    let owner = &a.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.uid.as_str(), owner.controller), ("UnitedDeployment", "ud-uid", Some(true)));
    assert_eq!(a.spec.replicas, Some(4));
    assert_eq!(a.spec.update_strategy.partition, Some(IntOrString::Int(4)), "partition 9 capped at the replicas");
    assert_eq!(
        serde_json::to_value(&a.spec.selector).unwrap(),
        json!({"matchLabels": {"app": "web", SUBSET_NAME_LABEL: "zone-a"}})
    );
    let pod = serde_json::to_value(&a.spec.template).unwrap();
    assert_eq!(pod["metadata"]["labels"][SUBSET_NAME_LABEL], "zone-a");
    assert_eq!(pod["metadata"]["labels"][REVISION_LABEL], "web-abc");
    assert_eq!(
        pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"],
        json!([{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}])
    );
    assert_eq!(pod["spec"]["tolerations"], json!([{"key": "dedicated", "operator": "Exists"}]));
    assert_eq!(pod["spec"]["containers"][0]["image"], "nginx:1");
    assert_eq!(pod["spec"]["containers"][0]["env"], json!([{"name": "ZONE", "value": "a"}]));
    assert_eq!(
        a.metadata.annotations.as_ref().unwrap()[SUBSET_PATCH_ANNOTATION],
        r#"{"spec":{"containers":[{"env":[{"name":"ZONE","value":"a"}],"name":"main"}]}}"#
    );
    let b = &sets["zone-b"];
    assert_eq!(b.spec.replicas, Some(2));
    assert_eq!(b.spec.update_strategy.partition, Some(IntOrString::Int(1)));
    assert_eq!(b.metadata.annotations.as_ref().unwrap()[SUBSET_PATCH_ANNOTATION], "");
    assert_eq!(p.status.subset_replicas, p.next_replicas);
    assert_eq!(p.status.update_status.as_ref().unwrap().updated_revision, "web-abc");
    assert_eq!(p.status.current_revision, "web-abc");
    assert_eq!(p.status.label_selector, "app=web");
    assert_eq!(p.status.observed_generation, 2);
    let types: Vec<&str> = p.status.conditions.iter().map(|c| c.type_.as_str()).collect();
    // kruise's order: setUpdatedCondition at the start of the round, manageSubsets' two after.
    assert_eq!(types, ["UnitedDeploymentUpdated", "SubsetProvisioned", "SubsetUpdated"]);
    assert_eq!(p.status.conditions[0].status, "True", "a first round is at its only revision");
}

fn existing(u: &UnitedDeployment, subset: &str, name: &str, revision: &str, replicas: i32, ready: i32) -> Existing {
    let Workload::CloneSet(mut set) = desired(u, subset, revision, replicas, 0, None).unwrap() else { panic!() };
    set.metadata.name = Some(name.into());
    set.metadata.uid = Some(format!("{name}-uid"));
    set.status = Some(crate::apis::CloneSetStatus {
        replicas,
        ready_replicas: ready,
        updated_replicas: replicas,
        ..Default::default()
    });
    let pods = (0..replicas)
        .map(|i| {
            std::sync::Arc::new(serde_json::from_value::<Pod>(json!({"metadata": {"name": format!("{name}-{i}"), "labels": {REVISION_LABEL: revision}},
                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": if i < ready {"True"} else {"False"}}]}}))
            .unwrap())
        })
        .collect();
    Existing { workload: Workload::CloneSet(set), pods }
}

#[test]
fn settled_subsets_need_nothing() {
    let mut s = spec();
    s["updateStrategy"] = json!({"type": "Manual", "manualUpdate": {}});
    s["topology"]["subsets"][0].as_object_mut().unwrap().remove("patch");
    let u = ud(s);
    let sets = [existing(&u, "zone-a", "web-zone-a-x", "r1", 4, 4), existing(&u, "zone-b", "web-zone-b-y", "r1", 2, 2)];
    let p = plan(&u, &sets, "r1", "r1", now()).unwrap();
    assert!(p.actions.is_empty(), "{:?}", p.actions);
    assert_eq!((p.status.replicas, p.status.ready_replicas, p.status.updated_replicas), (6, 6, 6));
    assert_eq!(p.status.subset_statuses.len(), 2);
}

#[test]
fn new_revision_rewrites_both_and_promotes_once_ready() {
    let u = ud(spec());
    let sets = [existing(&u, "zone-a", "web-zone-a-x", "r1", 4, 4), existing(&u, "zone-b", "web-zone-b-y", "r1", 2, 2)];
    let p = plan(&u, &sets, "r2", "r1", now()).unwrap();
    let updated: Vec<&str> = p
        .actions
        .iter()
        .map(|a| match a {
            Action::Update { name, workload, .. } => {
                assert_eq!(workload.revision(), "r2");
                name.as_str()
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(updated, ["web-zone-a-x", "web-zone-b-y"]);
    assert_eq!(p.status.current_revision, "r1", "nothing updated yet");
    assert_eq!(p.status.updated_replicas, 0);
    let updating = updated_condition(&p);
    assert_eq!(
        (updating.status.as_str(), updating.reason.as_str(), updating.message.as_str()),
        ("False", "UnitedDeploymentRevisionUpdating", "updating to revision r2")
    );
    let sets = [existing(&u, "zone-a", "web-zone-a-x", "r2", 4, 4), existing(&u, "zone-b", "web-zone-b-y", "r2", 2, 2)];
    let mut u2 = u.clone();
    u2.status = Some(p.status.clone());
    let p = plan(&u2, &sets, "r2", "r1", now()).unwrap();
    assert_eq!(p.status.current_revision, "r2");
    assert_eq!(p.status.updated_ready_replicas, 6);
    // Still False this round (kruise sets it from the revision the round started with); the
    // next round, from the promoted current revision, turns it True.
    assert_eq!(updated_condition(&p).status, "False");
    let mut u3 = u2.clone();
    u3.status = Some(p.status.clone());
    let later = Time(now().0 + k8s_openapi::jiff::SignedDuration::from_secs(5));
    let p = plan(&u3, &sets, "r2", "r2", later.clone()).unwrap();
    let done = updated_condition(&p);
    assert_eq!(
        (done.status.as_str(), done.reason.as_str(), done.message.as_str()),
        ("True", "UnitedDeploymentRevisionUpdated", "updated to revision r2")
    );
    assert_eq!(done.last_transition_time, Some(later));
    // Unchanged status: the condition is left as it was (its time too).
    let mut u4 = u3.clone();
    u4.status = Some(p.status.clone());
    let p2 = plan(&u4, &sets, "r2", "r2", Time(now().0 + k8s_openapi::jiff::SignedDuration::from_secs(60))).unwrap();
    assert_eq!(updated_condition(&p2), done);
}

fn updated_condition(p: &Plan) -> crate::apis::uniteddeployment::UnitedDeploymentCondition {
    let found: Vec<_> = p.status.conditions.iter().filter(|c| c.type_ == super::UPDATED_CONDITION).collect();
    assert_eq!(found.len(), 1, "{:?}", p.status.conditions);
    found[0].clone()
}

#[test]
fn removed_and_duplicate_subsets_are_deleted() {
    let u = ud(spec());
    let sets = [
        existing(&u, "zone-a", "web-zone-a-x", "r1", 4, 4),
        existing(&u, "zone-a", "web-zone-a-z", "r1", 4, 4),
        existing(&u, "zone-b", "web-zone-b-y", "r1", 2, 2),
    ];
    let mut gone = spec();
    gone["topology"]["subsets"].as_array_mut().unwrap().remove(1);
    gone["topology"]["subsets"][0]["replicas"] = json!(6);
    let u = ud(gone);
    let p = plan(&u, &sets, "r1", "r1", now()).unwrap();
    let deletes: Vec<(&str, &str)> = p
        .actions
        .iter()
        .filter_map(|a| match a {
            Action::Delete { name, reason, .. } => Some((name.as_str(), *reason)),
            _ => None,
        })
        .collect();
    assert_eq!(deletes, [("web-zone-a-z", "duplicate"), ("web-zone-b-y", "subset removed")]);
}

#[test]
fn allocation_errors_are_reported() {
    let mut s = spec();
    s["topology"]["subsets"][0]["replicas"] = json!(9);
    assert!(plan(&ud(s), &[], "r1", "r1", now()).unwrap_err().contains("is greater than UnitedDeployment replica"));
}

/// Adaptive scheduling through the round: zone-a's 3 pods fail to schedule for longer than the
/// critical time, so zone-a is held to its ready pods (0) and zone-b gets all 4; the Schedulable
/// condition turns False and the round asks to be looked at again when it ends.
#[test]
fn adaptive_moves_replicas_off_an_unschedulable_subset() {
    let mut s = spec();
    s["replicas"] = json!(4);
    s["updateStrategy"] = json!({"type": "Manual", "manualUpdate": {}});
    s["topology"]["scheduleStrategy"] = json!({"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 10}});
    s["topology"]["subsets"] = json!([
        {"name": "zone-a", "maxReplicas": 3, "nodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
        {"name": "zone-b", "nodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}}]);
    let u = ud(s);
    let mut a = existing(&u, "zone-a", "web-zone-a-x", "r1", 3, 0);
    let created_at = Time(now().0 - k8s_openapi::jiff::SignedDuration::from_secs(20));
    for p in a.pods.iter_mut().map(std::sync::Arc::make_mut) {
        p.metadata.creation_timestamp = Some(created_at.clone());
        p.status = Some(
            serde_json::from_value(json!({"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}))
            .unwrap(),
        );
    }
    let b = existing(&u, "zone-b", "web-zone-b-y", "r1", 1, 1);
    let p = plan(&u, &[a.clone(), b.clone()], "r1", "r1", now()).unwrap();
    assert_eq!(p.next_replicas, [("zone-a".to_string(), 0), ("zone-b".to_string(), 4)].into());
    let zone_a = p.status.subset_statuses.iter().find(|s| s.name == "zone-a").unwrap();
    assert_eq!((zone_a.conditions[0].type_.as_str(), zone_a.conditions[0].status.as_str()), ("Schedulable", "False"));
    assert_eq!(p.requeue_after, Some(k8s_openapi::jiff::SignedDuration::from_secs(300)));
    let updates: BTreeMap<String, Option<i32>> = p
        .actions
        .iter()
        .filter_map(|x| match x {
            Action::Update { subset, workload, .. } => Some((subset.clone(), Some(workload.spec_replicas()))),
            _ => None,
        })
        .collect();
    assert_eq!(updates, [("zone-a".to_string(), Some(0)), ("zone-b".to_string(), Some(4))].into());

    // The same pods only 5 s old: nothing moves yet, the round comes back when they time out.
    for p in a.pods.iter_mut().map(std::sync::Arc::make_mut) {
        p.metadata.creation_timestamp = Some(Time(now().0 - k8s_openapi::jiff::SignedDuration::from_secs(5)));
    }
    let p = plan(&u, &[a, b], "r1", "r1", now()).unwrap();
    assert_eq!(p.next_replicas, [("zone-a".to_string(), 3), ("zone-b".to_string(), 1)].into());
    assert_eq!(p.requeue_after, Some(k8s_openapi::jiff::SignedDuration::from_secs(5)));

    // Without Adaptive the same timed-out subset keeps its replicas.
    let mut s = spec();
    s["replicas"] = json!(4);
    s["topology"]["subsets"] = json!([{"name": "zone-a", "maxReplicas": 3}, {"name": "zone-b"}]);
    let fixed = ud(s);
    let p = plan(&fixed, &[existing(&fixed, "zone-a", "x", "r1", 3, 0)], "r1", "r1", now()).unwrap();
    assert_eq!(p.next_replicas["zone-a"], 3);
    assert_eq!(p.requeue_after, None);
}

/// `reserveUnschedulablePods` through the round (kruise's Reconcile with the reservation
/// strategy): zone-a's 2 pods fail to schedule past the critical time, so they are labelled
/// reserved (before anything else is written), zone-a keeps its 2 replicas while zone-b runs all
/// 4 (2 temporary), the status counts only the working pods and its selector leaves the reserved
/// ones out; once zone-a's pods have worked for the unschedulable duration they are let go, zone-a
/// is schedulable again and zone-b shrinks back to 2.
#[test]
fn reservation_keeps_the_pods_and_runs_temporary_ones_elsewhere() {
    use crate::core::uniteddeployment::reservation::{LabelPod, RESERVED_POD_LABEL};
    use k8s_openapi::jiff::SignedDuration;
    let mut s = spec();
    s["replicas"] = json!(4);
    s["updateStrategy"] = json!({"type": "Manual", "manualUpdate": {}});
    s["topology"]["scheduleStrategy"] = json!({"type": "Adaptive", "adaptive": {
        "rescheduleCriticalSeconds": 10, "unschedulableDuration": 30, "reserveUnschedulablePods": true}});
    s["topology"]["subsets"] = json!([
        {"name": "zone-a", "maxReplicas": 2, "nodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
        {"name": "zone-b", "nodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}}]);
    let mut u = ud(s);
    let ago = |secs: i64| Time(now().0 - SignedDuration::from_secs(secs));
    let mut a = existing(&u, "zone-a", "web-zone-a-x", "r1", 2, 0);
    for (i, p) in a.pods.iter_mut().map(std::sync::Arc::make_mut).enumerate() {
        p.metadata.uid = Some(format!("a{i}"));
        p.metadata.creation_timestamp = Some(ago(20));
        p.status = Some(
            serde_json::from_value(json!({"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}))
            .unwrap(),
        );
    }
    let mut b = existing(&u, "zone-b", "web-zone-b-y", "r1", 2, 2);
    for (i, p) in b.pods.iter_mut().map(std::sync::Arc::make_mut).enumerate() {
        p.metadata.uid = Some(format!("b{i}"));
    }
    let p = plan(&u, &[a.clone(), b.clone()], "r1", "r1", now()).unwrap();
    let labels: Vec<(String, bool)> = p
        .actions
        .iter()
        .map_while(|x| match x {
            Action::LabelPod { pod, .. } => Some((pod.uid.clone(), pod.reserved)),
            _ => None,
        })
        .collect();
    assert_eq!(
        labels,
        [("a0".into(), true), ("a1".into(), true), ("b0".into(), false), ("b1".into(), false)],
        "every pod labelled, before any other write: {:?}",
        p.actions
    );
    assert_eq!(p.next_replicas, [("zone-a".to_string(), 2), ("zone-b".to_string(), 4)].into());
    let zone_a = p.status.subset_statuses.iter().find(|s| s.name == "zone-a").unwrap();
    assert_eq!(
        (zone_a.conditions[0].status.as_str(), zone_a.conditions[0].message.as_str(), zone_a.reserved_pods),
        ("False", "reserved pods found", 2)
    );
    assert_eq!((p.status.replicas, p.status.reserved_pods), (2, 2), "reserved pods are not replicas");
    assert_eq!(p.status.label_selector, format!("app=web,{RESERVED_POD_LABEL}=false"));
    assert_eq!(p.requeue_after, Some(SignedDuration::from_secs(30)));

    // The cache shows the labels and the status; zone-b runs its 4.
    let label = |e: &mut Existing, v: &str| {
        for p in e.pods.iter_mut().map(std::sync::Arc::make_mut) {
            p.metadata.labels.as_mut().unwrap().insert(RESERVED_POD_LABEL.into(), v.into());
        }
    };
    label(&mut a, "true");
    let mut b4 = existing(&u, "zone-b", "web-zone-b-y", "r1", 4, 4);
    label(&mut b4, "false");
    u.status = Some(p.status.clone());
    let p2 = plan(&u, &[a.clone(), b4.clone()], "r1", "r1", now()).unwrap();
    assert!(p2.actions.is_empty(), "nothing changes while zone-a's pods are pending: {:?}", p2.actions);
    assert_eq!(p2.next_replicas, p.next_replicas);

    // A new revision while zone-a is unschedulable: its CloneSet is rewritten with maxUnavailable
    // replicas − ready (+ update-timeout pods: none yet, the update has just begun).
    let p3 = plan(&u, &[a.clone(), b4.clone()], "r2", "r1", now()).unwrap();
    let max_unavailable: BTreeMap<String, Option<IntOrString>> = p3
        .actions
        .iter()
        .filter_map(|x| match x {
            Action::Update { subset, workload, .. } => match &**workload {
                Workload::CloneSet(set) => Some((subset.clone(), set.spec.update_strategy.max_unavailable.clone())),
                _ => None,
            },
            _ => None,
        })
        .collect();
    assert_eq!(
        max_unavailable,
        [("zone-a".to_string(), Some(IntOrString::Int(2))), ("zone-b".to_string(), None)].into()
    );

    // zone-a's pods scheduled and ready for 40 s (past the 30 s): no longer reserved, zone-a
    // schedulable, zone-b back to 2.
    for p in a.pods.iter_mut().map(std::sync::Arc::make_mut) {
        p.spec = Some(serde_json::from_value(json!({"containers": [], "nodeName": "n-a"})).unwrap());
        p.status = Some(
            serde_json::from_value(json!({"phase": "Running", "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "True", "lastTransitionTime": ago(40)}]}))
            .unwrap(),
        );
    }
    if let Workload::CloneSet(set) = &mut a.workload {
        set.status.as_mut().unwrap().ready_replicas = 2;
    }
    let p4 = plan(&u, &[a, b4], "r1", "r1", now()).unwrap();
    let relabelled: Vec<LabelPod> = p4
        .actions
        .iter()
        .filter_map(|x| match x {
            Action::LabelPod { pod, .. } => Some(pod.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        relabelled.iter().map(|l| (l.uid.as_str(), l.reserved)).collect::<Vec<_>>(),
        [("a0", false), ("a1", false)]
    );
    assert_eq!(p4.next_replicas, [("zone-a".to_string(), 2), ("zone-b".to_string(), 2)].into());
    let zone_a = p4.status.subset_statuses.iter().find(|s| s.name == "zone-a").unwrap();
    assert_eq!((zone_a.conditions[0].status.as_str(), zone_a.reserved_pods), ("True", 0));
    assert_eq!((p4.status.replicas, p4.status.reserved_pods), (6, 0));
}

/// kruise's `initStatus`: with reservation, a subset added to a UnitedDeployment that already has
/// subset statuses starts marked unschedulable (`created`); the first subsets do not.
#[test]
fn a_new_subset_starts_marked_under_reservation() {
    let mut s = spec();
    s["topology"]["scheduleStrategy"] = json!({"type": "Adaptive", "adaptive": {"reserveUnschedulablePods": true}});
    let mut u = ud(s);
    let p = plan(&u, &[], "r1", "r1", now()).unwrap();
    assert!(p.status.subset_statuses.iter().all(|s| s.conditions.is_empty()), "{:?}", p.status.subset_statuses);
    let mut status = p.status.clone();
    status.subset_statuses.retain(|s| s.name == "zone-a");
    u.status = Some(status);
    let p = plan(&u, &[], "r1", "r1", now()).unwrap();
    let zone_b = p.status.subset_statuses.iter().find(|s| s.name == "zone-b").unwrap();
    let c = &zone_b.conditions[0];
    assert_eq!(
        (c.type_.as_str(), c.status.as_str(), c.reason.as_str(), c.message.as_str()),
        ("Schedulable", "False", "created", "newly-created subsets in reservation strategy")
    );
}

/// The subset patch is a strategic merge on the pod template, as kruise's
/// `StrategicMergePatch(..., &corev1.PodTemplateSpec{})`: containers by name, their env by name
/// and ports by `containerPort`, volumes by name, `$patch: delete` honoured, labels merged, other
/// lists (tolerations, args) replaced.
#[test]
fn the_subset_patch_is_a_strategic_merge() {
    let template: PodTemplateSpec = serde_json::from_value(json!({
        "metadata": {"labels": {"app": "web"}},
        "spec": {
            "containers": [
                {"name": "main", "image": "nginx:1", "args": ["a"], "env": [{"name": "A", "value": "1"}],
                 "ports": [{"containerPort": 80}, {"containerPort": 81, "protocol": "TCP"}]},
                {"name": "sidecar", "image": "envoy:1"}],
            "volumes": [{"name": "v1", "emptyDir": {}}],
            "tolerations": [{"key": "t1", "operator": "Exists"}]}
    }))
    .unwrap();
    let patch = json!({
        "metadata": {"labels": {"zone": "a"}},
        "spec": {
            "containers": [
                {"name": "main", "args": ["b"], "env": [{"name": "B", "value": "2"}], "ports": [{"containerPort": 81, "name": "metrics"}]},
                {"name": "sidecar", "$patch": "delete"}],
            "volumes": [{"name": "v2", "emptyDir": {}}],
            "tolerations": [{"key": "t2", "operator": "Exists"}]}
    });
    let got = serde_json::to_value(patch_template(&template, &patch).unwrap()).unwrap();
    assert_eq!(
        got,
        json!({
            "metadata": {"labels": {"app": "web", "zone": "a"}},
            "spec": {
                "containers": [
                    {"name": "main", "image": "nginx:1", "args": ["b"],
                     "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                     "ports": [{"containerPort": 80}, {"containerPort": 81, "protocol": "TCP", "name": "metrics"}]}],
                "volumes": [{"name": "v1", "emptyDir": {}}, {"name": "v2", "emptyDir": {}}],
                "tolerations": [{"key": "t2", "operator": "Exists"}]}
        })
    );
    assert!(patch_template(&template, &json!(["not", "an", "object"])).is_err());
}
