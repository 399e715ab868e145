//! The planner round after round against the fake API and kubelet of
//! [`super::super::testkit`]: every write a plan asks for is applied exactly as given (pinned JSON
//! patches, delete preconditions), the kubelet runs the pods, and the next round plans on the
//! result. These are the controller's end-to-end scenarios of issue 11, without a cluster.

use super::*;
use crate::core::rollout::cloneset::testkit::{World, cloneset, spec};
use serde_json::json;
use std::collections::BTreeMap;

fn ready_world(replicas: i32, strategy: serde_json::Value) -> World {
    let mut w = World::new(cloneset(spec(replicas, "nginx:1", strategy)));
    for _ in 0..10 {
        w.round();
    }
    assert_eq!(w.pods.len() as i32, replicas);
    assert_eq!(w.unready(), 0, "all ready before the test starts");
    w
}

fn set_image(w: &mut World, image: &str) {
    w.cs.spec.template.spec.as_mut().unwrap().containers[0].image = Some(image.into());
    w.cs.metadata.generation = Some(w.cs.metadata.generation.unwrap_or(1) + 1);
}

fn kinds(p: &Plan) -> Vec<ActionKind> {
    p.actions.iter().map(|a| a.kind).collect()
}

#[test]
fn a_cloneset_of_5_gets_5_ready_pods_and_its_status() {
    let mut w = World::new(cloneset(spec(5, "nginx:1", json!({}))));
    let first = w.round();
    assert_eq!(kinds(&first)[0], ActionKind::CreateRevision, "the revision is created before its pods");
    let creates: Vec<&Action> = first.actions.iter().filter(|a| a.kind == ActionKind::Create).collect();
    assert_eq!(creates.len(), 5);
    assert_eq!(creates.iter().map(|a| a.batch.unwrap()).collect::<Vec<_>>(), [0, 1, 1, 2, 2], "slow start");
    let mut rounds = 1;
    while w.unready() > 0 || w.plan().status_changed {
        w.round();
        rounds += 1;
        assert!(rounds < 10, "converges");
    }
    let st = w.cs.status.clone().unwrap();
    assert_eq!((st.replicas, st.ready_replicas, st.available_replicas, st.updated_replicas), (5, 5, 5, 5));
    assert_eq!(st.updated_ready_replicas, 5);
    assert_eq!(st.expected_updated_replicas, 5);
    assert_eq!(st.current_revision, st.update_revision);
    assert_eq!(st.label_selector, "app=sample");
    assert_eq!(st.observed_generation, 1);
    for p in &w.pods {
        assert_eq!(crate::core::lifecycle::state(p), "Normal");
        assert!(p.metadata.name.as_deref().unwrap().starts_with("sample-"));
    }
    // A settled CloneSet plans nothing.
    let quiet = w.plan();
    assert!(quiet.actions.is_empty(), "{:#?}", quiet.actions);
    assert!(quiet.waiting.is_empty(), "{:?}", quiet.waiting);
}

#[test]
fn in_place_update_with_partition_and_max_unavailable() {
    let mut w = ready_world(5, json!({"type": "InPlaceIfPossible", "partition": 2, "maxUnavailable": 1}));
    let before: BTreeMap<String, (String, i32)> = w
        .pods
        .iter()
        .map(|p| (p.metadata.uid.clone().unwrap(), (pods::name(p).to_string(), pods::max_restarts(p))))
        .collect();
    set_image(&mut w, "nginx:2");
    let mut seen_waiting = false;
    for _ in 0..30 {
        let p = w.round();
        assert!(w.unready() <= 1, "never more than maxUnavailable unready pods");
        seen_waiting |= p.waiting.iter().any(|m| m.contains("maxUnavailable 1"));
        for a in &p.actions {
            assert!(!matches!(a.kind, ActionKind::Create | ActionKind::Delete | ActionKind::Recreate), "{a:?}");
        }
    }
    let update_revision = w.cs.status.clone().unwrap().update_revision;
    let updated = w.at_revision(&update_revision);
    assert_eq!(updated.len(), 3, "exactly replicas - partition pods");
    assert!(seen_waiting, "the limit was explained");
    for p in &updated {
        let (name, restarts) = &before[p.metadata.uid.as_ref().unwrap()];
        assert_eq!(pods::name(p), name, "same pod");
        assert_eq!(pods::max_restarts(p), restarts + 1, "container restarted once");
        assert_eq!(p.spec.as_ref().unwrap().containers[0].image.as_deref(), Some("nginx:2"));
    }
    let st = w.cs.status.clone().unwrap();
    assert_eq!((st.updated_replicas, st.expected_updated_replicas), (3, 3));
    assert_ne!(st.current_revision, st.update_revision);

    // partition 0 finishes the rollout.
    w.cs.spec.update_strategy.partition = Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(0));
    for _ in 0..20 {
        w.round();
        assert!(w.unready() <= 1);
    }
    assert_eq!(w.at_revision(&update_revision).len(), 5);
    let st = w.cs.status.clone().unwrap();
    assert_eq!(st.current_revision, st.update_revision);
    assert_eq!(
        w.pods.iter().map(|p| p.metadata.uid.clone().unwrap()).collect::<std::collections::BTreeSet<_>>(),
        before.keys().cloned().collect()
    );
}

#[test]
fn an_env_change_recreates_pods() {
    let mut w = ready_world(3, json!({"type": "InPlaceIfPossible", "maxUnavailable": 1}));
    let old_uids: Vec<String> = w.pods.iter().map(|p| p.metadata.uid.clone().unwrap()).collect();
    w.cs.spec.template.spec.as_mut().unwrap().containers[0].env =
        Some(vec![k8s_openapi::api::core::v1::EnvVar { name: "A".into(), value: Some("1".into()), value_from: None }]);
    let first = w.round();
    let recreate: Vec<&Action> = first.actions.iter().filter(|a| a.kind == ActionKind::Recreate).collect();
    assert_eq!(recreate.len(), 1, "one at a time under maxUnavailable 1: {:#?}", first.actions);
    assert!(recreate[0].reason.contains("cannot update in place"), "{}", recreate[0].reason);
    for _ in 0..30 {
        w.round();
    }
    let update_revision = w.cs.status.clone().unwrap().update_revision;
    assert_eq!(w.at_revision(&update_revision).len(), 3);
    assert!(w.pods.iter().all(|p| !old_uids.contains(p.metadata.uid.as_ref().unwrap())), "every pod is new");
}

#[test]
fn in_place_only_refuses_a_change_it_cannot_do() {
    let mut w = ready_world(2, json!({"type": "InPlaceOnly"}));
    w.cs.spec.template.spec.as_mut().unwrap().containers[0].command = Some(vec!["sh".into()]);
    let p = w.plan();
    assert!(
        p.errors.iter().any(|e| e.starts_with("find Pod sample-")
            && e.ends_with("update strategy is InPlaceOnly but can not update in-place")),
        "{:?}",
        p.errors
    );
    let failed = p.status.conditions.iter().find(|c| c.type_ == "FailedUpdate").unwrap();
    assert_eq!(failed.status, "True");
    assert!(p.actions.iter().all(|a| a.kind != ActionKind::Recreate));
}

#[test]
fn pods_to_delete_replaces_exactly_the_named_pod() {
    let mut w = ready_world(3, json!({}));
    let victim = pods::name(&w.pods[1]).to_string();
    let others: Vec<String> = w.pods.iter().map(|p| pods::name(p).to_string()).filter(|n| *n != victim).collect();
    w.cs.spec.scale_strategy.pods_to_delete = vec![victim.clone()];
    let p = w.round();
    assert_eq!(
        p.actions.iter().filter(|a| a.kind == ActionKind::Delete).map(|a| a.pod.clone().unwrap()).collect::<Vec<_>>(),
        std::slice::from_ref(&victim)
    );
    for _ in 0..6 {
        w.round();
    }
    let names: Vec<String> = w.pods.iter().map(|p| pods::name(p).to_string()).collect();
    assert_eq!(names.len(), 3);
    assert!(!names.contains(&victim));
    assert!(others.iter().all(|o| names.contains(o)));
    assert!(w.cs.spec.scale_strategy.pods_to_delete.is_empty(), "the vanished name is trimmed");
}

#[test]
fn scale_down_removes_the_ranked_pods() {
    let mut w = ready_world(4, json!({"maxUnavailable": 4}));
    // One pod is not ready: it goes first.
    let sick = pods::name(&w.pods[2]).to_string();
    w.pods[2].status.as_mut().unwrap().conditions.as_mut().unwrap().iter_mut().for_each(|c| c.status = "False".into());
    w.cs.spec.replicas = Some(2);
    let p = w.plan();
    let deleted: Vec<String> =
        p.actions.iter().filter(|a| a.kind == ActionKind::Delete).map(|a| a.pod.clone().unwrap()).collect();
    assert_eq!(deleted.len(), 2);
    assert_eq!(deleted[0], sick);
}

#[test]
fn each_pod_gets_its_pvc_and_a_replaced_pod_reuses_it() {
    let mut s = spec(2, "nginx:1", json!({"maxUnavailable": 1}));
    s["volumeClaimTemplates"] = json!([{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]);
    s["template"]["spec"]["containers"][0]["volumeMounts"] = json!([{"name": "data", "mountPath": "/data"}]);
    let mut w = World::new(cloneset(s));
    for _ in 0..8 {
        w.round();
    }
    assert_eq!(w.pvcs.len(), 2);
    for p in &w.pods {
        let id = super::super::pods::instance_id(p.metadata.labels.as_ref());
        let claim = format!("data-sample-{id}");
        assert!(w.pvcs.iter().any(|c| c.metadata.name.as_deref() == Some(claim.as_str())), "{claim}");
        let vol = &p.spec.as_ref().unwrap().volumes.as_ref().unwrap()[0];
        assert_eq!(vol.persistent_volume_claim.as_ref().unwrap().claim_name, claim);
    }
    // A pod deleted by someone else (eviction, `kubectl delete pod`) is replaced by a pod with its
    // instance id, which finds its PVC: nothing new is created but the pod.
    let gone = w.pods.remove(0);
    let id = super::super::pods::instance_id(gone.metadata.labels.as_ref()).to_string();
    let pvc_uids: Vec<String> = w.pvcs.iter().map(|c| c.metadata.uid.clone().unwrap()).collect();
    let p = w.round();
    let create = p.actions.iter().find(|a| a.kind == ActionKind::Create).unwrap();
    assert!(create.writes.iter().all(|w| !matches!(w, Write::CreatePvc { .. })), "{:#?}", create.writes);
    assert!(create.reason.contains(&format!("reuses the PVCs of instance {id}")), "{}", create.reason);
    assert_eq!(w.pods.iter().filter(|p| super::super::pods::instance_id(p.metadata.labels.as_ref()) == id).count(), 1);
    assert_eq!(w.pvcs.iter().map(|c| c.metadata.uid.clone().unwrap()).collect::<Vec<_>>(), pvc_uids, "the same PVCs");

    // Scale-in deletes a pod together with its PVCs (kruise's deletePods); so does a ReCreate
    // update, which goes through the same deletion.
    w.cs.spec.replicas = Some(1);
    for _ in 0..4 {
        w.round();
    }
    assert_eq!((w.pods.len(), w.pvcs.len()), (1, 1));
}

#[test]
fn rollback_reuses_the_old_revision() {
    let mut w = ready_world(2, json!({"type": "InPlaceIfPossible", "maxUnavailable": 2}));
    let first_revision = w.cs.status.clone().unwrap().update_revision;
    set_image(&mut w, "nginx:2");
    for _ in 0..10 {
        w.round();
    }
    assert_eq!(w.revisions.len(), 2);
    set_image(&mut w, "nginx:1");
    let p = w.plan();
    assert_eq!(p.update_revision, first_revision, "the old revision is the update revision again");
    assert_eq!(kinds(&p)[0], ActionKind::UpdateRevision);
    for _ in 0..10 {
        w.round();
    }
    assert_eq!(w.revisions.len(), 2, "no new revision");
    let newest = w.revisions.iter().max_by_key(|r| r.revision).unwrap();
    assert_eq!(newest.metadata.name.as_deref(), Some(first_revision.as_str()));
    assert_eq!(newest.revision, 3);
    assert_eq!(w.at_revision(&first_revision).len(), 2);
}

#[test]
fn history_is_truncated_to_the_limit() {
    let mut w = ready_world(1, json!({"type": "InPlaceIfPossible"}));
    w.cs.spec.revision_history_limit = Some(1);
    for v in 2..=5 {
        set_image(&mut w, &format!("nginx:{v}"));
        for _ in 0..8 {
            w.round();
        }
    }
    // Live: the current/update revision; plus one historic revision.
    assert_eq!(w.revisions.len(), 2, "{:?}", w.revisions.iter().map(|r| r.metadata.name.clone()).collect::<Vec<_>>());
}

#[test]
fn paused_and_grace_period_are_explained() {
    let mut w = ready_world(2, json!({"type": "InPlaceIfPossible", "maxUnavailable": 2, "paused": true}));
    set_image(&mut w, "nginx:2");
    let p = w.round();
    assert!(p.waiting.iter().any(|m| m.contains("paused")), "{:?}", p.waiting);
    assert!(p.actions.iter().all(|a| a.kind != ActionKind::UpdateInPlace));

    w.cs.spec.update_strategy.paused = false;
    w.cs.spec.update_strategy.in_place_update_strategy =
        Some(crate::apis::common::InPlaceUpdateStrategy { grace_period_seconds: 10, ..Default::default() });
    let p = w.round();
    assert_eq!(p.actions.iter().filter(|a| a.kind == ActionKind::UpdateInPlace).count(), 2);
    assert_eq!(p.requeue_after, Some(SignedDuration::from_secs(10)));
    let p = w.round();
    assert!(p.waiting.iter().any(|m| m.contains("grace period")), "{:?}", p.waiting);
    w.tick(10);
    let p = w.round();
    assert_eq!(p.actions.iter().filter(|a| a.kind == ActionKind::FinishGracePeriod).count(), 2, "{:#?}", p.actions);
    for _ in 0..5 {
        w.round();
    }
    assert!(w.pods.iter().all(|p| p.spec.as_ref().unwrap().containers[0].image.as_deref() == Some("nginx:2")));
    assert_eq!(w.unready(), 0);
}

#[test]
fn a_stale_view_conflicts_instead_of_overwriting() {
    let mut w = ready_world(1, json!({"type": "InPlaceIfPossible"}));
    set_image(&mut w, "nginx:2");
    let p = w.plan();
    // Someone else writes the pod between planning and applying.
    let rv = w.pods[0].metadata.resource_version.clone().unwrap();
    w.pods[0].metadata.resource_version = Some(format!("{rv}0"));
    assert!(w.apply(&p).is_err(), "the pinned patch is refused");
}

/// A world of `replicas` pods that carry `kruise.io/related-pub: web-pub` (as the pod mutating
/// webhook names the budget at CREATE), with gate PodUnavailableBudgetUpdateGate as given.
fn budgeted_world(replicas: i32, strategy: serde_json::Value, gate: bool) -> World {
    let mut s = spec(replicas, "nginx:1", strategy);
    s["template"]["metadata"]["annotations"] = json!({crate::core::budget::RELATED_PUB: "web-pub"});
    let mut w = World::new(cloneset(s));
    w.gates = w.gates.clone().with(crate::core::features::Gate::PodUnavailableBudgetUpdateGate, gate);
    for _ in 0..10 {
        w.round();
    }
    assert_eq!(w.unready(), 0, "all ready before the test starts");
    w
}

/// The budget `web-pub` as its controller would count the world's pods now: `desired` available
/// wanted, `unavailableAllowed` = available (ready and state consistent) − desired.
fn count_budget(w: &mut World, desired: i32) {
    let available = w
        .pods
        .iter()
        .filter(|p| crate::core::budget::pod::is_ready(p) && crate::core::budget::pod::is_state_consistent(p, false))
        .count() as i32;
    let b: crate::apis::podunavailablebudget::PodUnavailableBudget = serde_json::from_value(json!({
        "apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
        "metadata": {"namespace": "default", "name": "web-pub"},
        "spec": {"selector": {"matchLabels": {"app": "sample"}}, "maxUnavailable": 1},
        "status": {"observedGeneration": 1, "desiredAvailable": desired, "currentAvailable": available,
                   "unavailableAllowed": (available - desired).max(0), "totalReplicas": w.pods.len()}}))
    .unwrap();
    w.budgets = vec![b];
}

fn in_place(p: &Plan) -> usize {
    p.actions.iter().filter(|a| a.kind == ActionKind::UpdateInPlace).count()
}

/// Gate PodUnavailableBudgetUpdateGate (kruise `cloneset_update.go` step 6): the first round of
/// an image change under `maxUnavailable: 3`, by what the budget has left. Each row: gate,
/// budget's desired available (of 3 ready pods), pods updated in place, whether the round waits
/// for the budget (and looks again in a second).
#[test]
fn a_budget_limits_the_pods_updated_in_one_round() {
    let rows = [
        ("gate off: the budget is not asked", false, 3, 3, false),
        ("one unit left: one pod", true, 2, 1, true),
        ("two units left: two pods", true, 1, 2, true),
        ("no unit left: none", true, 3, 0, true),
        ("the budget wants none available: all three", true, 0, 3, false),
    ];
    for (name, gate, desired, updated, waits) in rows {
        let mut w = budgeted_world(3, json!({"type": "InPlaceIfPossible", "maxUnavailable": 3}), gate);
        count_budget(&mut w, desired);
        set_image(&mut w, "nginx:2");
        let p = w.plan();
        assert_eq!(in_place(&p), updated, "{name}: {:?}", kinds(&p));
        // Each pod updated takes a unit first, unless the budget is not asked or wants none.
        let takes = if gate && desired > 0 { updated } else { 0 };
        assert_eq!(p.budget_takes.len(), takes, "{name}: {:?}", p.budget_takes);
        assert!(p.budget_takes.iter().all(|t| t.budget == "web-pub"), "{name}");
        let waiting = p.waiting.iter().any(|m| m.contains("waits for its PodUnavailableBudget"));
        assert_eq!(waiting, waits, "{name}: {:?}", p.waiting);
        if waits {
            assert!(
                p.waiting.iter().any(|m| m.contains("\"web-pub\" is forbidden: pub unavailable allowed is negative")),
                "{name}: the budget's refusal is named: {:?}",
                p.waiting
            );
            assert_eq!(p.requeue_after, Some(k8s_openapi::jiff::SignedDuration::from_secs(1)), "{name}");
        }
    }
}

/// A whole rollout under a budget of one: every round updates at most one pod, at no time are
/// two pods unavailable, and all three reach the new image.
#[test]
fn a_rollout_under_a_budget_of_one_moves_one_pod_at_a_time() {
    let mut w = budgeted_world(3, json!({"type": "InPlaceIfPossible", "maxUnavailable": 3}), true);
    set_image(&mut w, "nginx:2");
    for _ in 0..40 {
        count_budget(&mut w, 2);
        let p = w.plan();
        assert!(in_place(&p) <= 1, "{:?}", kinds(&p));
        w.apply(&p).unwrap();
        count_budget(&mut w, 2);
        let unavailable = 3 - w.budgets[0].status.as_ref().unwrap().current_available;
        assert!(unavailable <= 1, "{unavailable} pods unavailable after {:?}", kinds(&p));
        w.kubelet();
        w.tick(1);
    }
    let images: Vec<String> =
        w.pods.iter().map(|p| p.spec.as_ref().unwrap().containers[0].image.clone().unwrap_or_default()).collect();
    assert_eq!(images, ["nginx:2"; 3], "the rollout completes");
    let st = w.cs.status.clone().unwrap();
    assert_eq!((st.updated_replicas, st.updated_ready_replicas), (3, 3));
}
