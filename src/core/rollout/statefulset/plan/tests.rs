//! The planner round after round against the shared fake API and kubelet
//! ([`super::super::testkit`]): every write a plan asks for is applied exactly as given (pinned
//! JSON patches, delete preconditions), the kubelet runs the pods, and the next round plans on the
//! result.

use super::*;
use crate::core::inplace::refresh;
use crate::core::rollout::statefulset::testkit::{World, stateful_set};
use serde_json::json;
use std::collections::BTreeMap;

/// The readiness gate kruise's pod webhook injects into the set's pods.
fn with_gate(mut w: World) -> World {
    let spec = w.set.spec.template.spec.as_mut().unwrap();
    spec.readiness_gates = Some(vec![serde_json::from_value(json!({"conditionType": "InPlaceUpdateReady"})).unwrap()]);
    w
}

fn image(p: &Pod) -> &str {
    p.spec.as_ref().unwrap().containers[0].image.as_deref().unwrap()
}

fn uids(w: &World) -> BTreeMap<String, String> {
    w.pods.iter().map(|p| (pods::name(p).to_string(), p.metadata.uid.clone().unwrap())).collect()
}

fn set_image(w: &mut World, img: &str) {
    w.edit(|s| s.spec.template.spec.as_mut().unwrap().containers[0].image = Some(img.into()));
}

/// Replicas missing, not Ready, or with an in-place update not complete.
fn unavailable(w: &World) -> usize {
    let replicas = w.set.spec.replicas.unwrap_or(1) as usize;
    let present = w.pods.iter().filter(|p| p.metadata.deletion_timestamp.is_none()).count();
    let opts = in_place_options(&w.set, &w.gates);
    let busy = w.pods.iter().filter(|p| !pods::is_ready(p) || refresh::update_completed(p, opts).is_err()).count();
    replicas.saturating_sub(present) + busy
}

fn pods_of(p: &Plan, kind: ActionKind) -> Vec<String> {
    p.actions.iter().filter(|a| a.kind == kind).filter_map(|a| a.pod.clone()).collect()
}

#[test]
fn a_set_of_3_comes_up_one_pod_per_round_when_ordered_ready() {
    let mut w = World::new(stateful_set(3, "nginx:1", json!({})));
    let first = w.round();
    assert_eq!(first.actions[0].kind, ActionKind::CreateRevision, "the revision is created before its pods");
    let mut created = pods_of(&first, ActionKind::Create);
    // kruise counts a pod it creates at once: replicas and updatedReplicas 1 before it runs.
    assert_eq!((first.status.replicas, first.status.updated_replicas, first.status.ready_replicas), (1, 1, 0));
    for _ in 0..20 {
        let p = w.round();
        let now = pods_of(&p, ActionKind::Create);
        assert!(now.len() <= 1, "OrderedReady creates one pod per round: {now:?}");
        created.extend(now);
        if p.actions.is_empty() && p.status_write.is_none() {
            break;
        }
    }
    assert_eq!(created, ["web-0", "web-1", "web-2"]);
    assert_eq!(w.ordinals(), [0, 1, 2]);
    let st = w.set.status.clone().unwrap();
    assert_eq!((st.replicas, st.ready_replicas, st.available_replicas, st.updated_replicas), (3, 3, 3, 3));
    assert_eq!(st.current_revision, st.update_revision);
    assert_eq!(st.label_selector, "app=web");
    let pod = w.pod(1).unwrap();
    assert_eq!(pods::label(pod, identity::POD_NAME_LABEL), Some("web-1"));
    assert_eq!(pods::label(pod, identity::REVISION_LABEL), Some(st.update_revision.as_str()));
    assert_eq!(pod.spec.as_ref().unwrap().hostname.as_deref(), Some("web-1"));
}

#[test]
fn reserved_ordinals_are_skipped() {
    let mut w =
        World::new(stateful_set(3, "nginx:1", json!({"reserveOrdinals": [1], "podManagementPolicy": "Parallel"})));
    let plans = w.settle(20);
    assert_eq!(pods_of(&plans[0], ActionKind::Create), ["web-0", "web-2", "web-3"], "Parallel creates all at once");
    assert_eq!(w.ordinals(), [0, 2, 3]);
    // Un-reserving 1 and reserving 3 moves the replica: 1 is created, 3 condemned.
    w.edit(|s| s.spec.reserve_ordinals = vec![serde_json::from_value(json!(3)).unwrap()]);
    w.settle(20);
    assert_eq!(w.ordinals(), [0, 1, 2]);
}

#[test]
fn parallel_in_place_update_respects_partition_and_max_unavailable() {
    let set = stateful_set(
        6,
        "nginx:1",
        json!({"podManagementPolicy": "Parallel", "updateStrategy": {"type": "RollingUpdate", "rollingUpdate":
            {"partition": 3, "maxUnavailable": 2, "podUpdatePolicy": "InPlaceIfPossible"}}}),
    );
    let mut w = with_gate(World::new(set));
    w.settle(20);
    assert_eq!(w.unready(), 0);
    let before = uids(&w);
    let old_revision = w.set.status.clone().unwrap().update_revision;
    set_image(&mut w, "nginx:2");

    let mut updated = Vec::new();
    let mut worst = 0;
    for round in 0.. {
        assert!(round < 40, "the rollout does not end");
        let p = w.plan();
        assert!(p.errors.is_empty(), "{:?}", p.errors);
        assert!(pods_of(&p, ActionKind::Recreate).is_empty() && pods_of(&p, ActionKind::Delete).is_empty());
        updated.extend(pods_of(&p, ActionKind::UpdateInPlace));
        w.apply(&p).unwrap();
        worst = worst.max(unavailable(&w));
        assert!(unavailable(&w) <= 2, "round {round}: {} unavailable", unavailable(&w));
        w.kubelet();
        w.advance(1);
        if p.actions.is_empty() && p.status_write.is_none() {
            break;
        }
    }
    assert_eq!(updated, ["web-5", "web-4", "web-3"], "highest ordinal first, down to the partition");
    assert_eq!(worst, 2, "two at a time");
    assert_eq!(uids(&w), before, "in place: no pod was recreated");
    let st = w.set.status.clone().unwrap();
    for o in 0..6 {
        let p = w.pod(o).unwrap();
        let (want_image, want_rev) =
            if o >= 3 { ("nginx:2", st.update_revision.as_str()) } else { ("nginx:1", old_revision.as_str()) };
        assert_eq!((image(p), identity::pod_revision(p)), (want_image, want_rev), "web-{o}");
        assert!(pods::is_ready(p), "web-{o} ready again");
    }
    assert_eq!((st.updated_replicas, st.current_replicas, st.ready_replicas), (3, 3, 6));
    assert_ne!(st.current_revision, st.update_revision, "the partition holds the rollout");
}

#[test]
fn an_env_change_recreates_from_the_highest_ordinal() {
    let mut w = World::new(stateful_set(
        3,
        "nginx:1",
        json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "InPlaceIfPossible"}}}),
    ));
    w.settle(20);
    let before = uids(&w);
    w.edit(|s| {
        s.spec.template.spec.as_mut().unwrap().containers[0].env =
            Some(vec![serde_json::from_value(json!({"name": "A", "value": "1"})).unwrap()])
    });
    let mut recreated = Vec::new();
    for round in 0.. {
        assert!(round < 40, "the rollout does not end");
        let p = w.round();
        assert!(pods_of(&p, ActionKind::UpdateInPlace).is_empty(), "env is not updated in place");
        let r = pods_of(&p, ActionKind::Recreate);
        assert!(r.len() <= 1);
        for a in p.actions.iter().filter(|a| a.kind == ActionKind::Recreate) {
            let Write::DeletePod { uid, resource_version, .. } = &a.writes[0] else { panic!("{a:?}") };
            assert!(uid.is_some() && resource_version.is_some(), "deletes carry preconditions");
            assert!(a.reason.contains("cannot update in place"), "{}", a.reason);
        }
        recreated.extend(r);
        if p.actions.is_empty() && p.status_write.is_none() {
            break;
        }
    }
    assert_eq!(recreated, ["web-2", "web-1", "web-0"]);
    let after = uids(&w);
    assert!(before.iter().all(|(n, u)| after.get(n) != Some(u)), "every pod is new");
    let st = w.set.status.clone().unwrap();
    assert_eq!(st.current_revision, st.update_revision, "the rollout completed");
    assert!(w.pods.iter().all(|p| p.spec.as_ref().unwrap().containers[0].env.is_some()));
}

#[test]
fn in_place_only_refuses_what_cannot_be_in_place() {
    let mut w = World::new(stateful_set(
        2,
        "nginx:1",
        json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "InPlaceOnly"}}}),
    ));
    w.settle(20);
    w.edit(|s| s.spec.template.spec.as_mut().unwrap().containers[0].command = Some(vec!["sh".into()]));
    let p = w.plan();
    assert!(p.errors.iter().any(|e| e.contains("InPlaceOnly") && e.contains("web-1")), "{:?}", p.errors);
    assert!(pods_of(&p, ActionKind::Recreate).is_empty());
}

#[test]
fn ordered_scale_down_deletes_the_highest_first_one_per_round() {
    let mut w = World::new(stateful_set(4, "nginx:1", json!({})));
    w.settle(30);
    w.edit(|s| s.spec.replicas = Some(1));
    let mut deleted = Vec::new();
    for _ in 0..20 {
        let p = w.round();
        let d = pods_of(&p, ActionKind::Delete);
        assert!(d.len() <= 1);
        deleted.extend(d);
        if p.actions.is_empty() && p.status_write.is_none() {
            break;
        }
    }
    assert_eq!(deleted, ["web-3", "web-2", "web-1"]);
    assert_eq!(w.ordinals(), [0]);
}

#[test]
fn a_pre_delete_hook_holds_a_condemned_pod_in_preparing_delete() {
    let mut w = World::new(stateful_set(
        2,
        "nginx:1",
        json!({"lifecycle": {"preDelete": {"labelsHandler": {"hold": "true"}}},
               "template": {"metadata": {"labels": {"app": "web", "hold": "true"}},
                  "spec": {"containers": [{"name": "main", "image": "nginx:1"}]}}}),
    ));
    w.settle(30);
    w.edit(|s| s.spec.replicas = Some(1));
    let p = w.round();
    let a = p.actions.iter().find(|a| a.pod.as_deref() == Some("web-1")).unwrap();
    assert_eq!(a.kind, ActionKind::SetLifecycle);
    assert_eq!(lifecycle::state(w.pod(1).unwrap()), State::PreparingDelete);
    let p = w.round();
    assert!(p.actions.iter().all(|a| a.pod.as_deref() != Some("web-1")), "held: {:?}", p.actions);
    // The hook lets go: the pod is deleted.
    let i = w.pods.iter().position(|p| pods::name(p) == "web-1").unwrap();
    w.pods[i].metadata.labels.as_mut().unwrap().remove("hold");
    let p = w.round();
    assert_eq!(pods_of(&p, ActionKind::Delete), ["web-1"]);
}

#[test]
fn orphans_are_adopted_and_strangers_released() {
    let mut w = World::new(stateful_set(2, "nginx:1", json!({})));
    w.settle(20);
    // An orphan web-1 (its owner reference gone) is adopted, not recreated.
    let i = w.pods.iter().position(|p| pods::name(p) == "web-1").unwrap();
    w.pods[i].metadata.owner_references = None;
    let uid = w.pods[i].metadata.uid.clone();
    let p = w.round();
    assert_eq!(pods_of(&p, ActionKind::AdoptPod), ["web-1"]);
    assert!(pods_of(&p, ActionKind::Create).is_empty());
    assert_eq!(w.pod(1).unwrap().metadata.uid, uid);
    assert!(w.pod(1).unwrap().metadata.owner_references.as_ref().is_some_and(|r| r[0].uid == "uid-web"));
    // web-0 stops matching the selector: released, and a new web-0 is created next.
    let i = w.pods.iter().position(|p| pods::name(p) == "web-0").unwrap();
    w.pods[i].metadata.labels.as_mut().unwrap().insert("app".into(), "other".into());
    let p = w.plan();
    assert_eq!(pods_of(&p, ActionKind::ReleasePod), ["web-0"]);
    w.apply_actions_of(&p, ActionKind::ReleasePod);
    assert!(
        w.pods
            .iter()
            .any(|p| pods::name(p) == "web-0" && p.metadata.owner_references.as_ref().is_none_or(|r| r.is_empty()))
    );
}

#[test]
fn a_stale_view_cannot_overwrite_or_delete() {
    let mut w = World::new(stateful_set(2, "nginx:1", json!({"podManagementPolicy": "Parallel"})));
    w.settle(20);
    set_image(&mut w, "nginx:2");
    let p = w.plan();
    assert_eq!(pods_of(&p, ActionKind::Recreate), ["web-1"]);
    // Someone changes web-1 between the plan and its delete: the precondition refuses it.
    w.kubelet();
    assert!(w.apply(&p).is_err());
}

#[test]
fn the_status_is_written_only_when_it_changes() {
    let mut w = World::new(stateful_set(1, "nginx:1", json!({})));
    w.settle(20);
    let p = w.plan();
    assert!(p.actions.is_empty() && p.status_write.is_none(), "{p:?}");
    w.edit(|_| {});
    let p = w.plan();
    let Some(Write::PatchWorkloadStatus { pin, .. }) = &p.status_write else { panic!("{p:?}") };
    assert_eq!(pin, &Pin::Observed(w.set.metadata.resource_version.clone().unwrap()));
    assert_eq!(p.status.observed_generation, 2);
}

#[test]
fn a_failed_replica_is_deleted_and_created_again() {
    let mut w = World::new(stateful_set(2, "nginx:1", json!({})));
    w.settle(20);
    let i = w.pods.iter().position(|p| pods::name(p) == "web-0").unwrap();
    w.pods[i].status.as_mut().unwrap().phase = Some("Failed".into());
    let old_uid = w.pods[i].metadata.uid.clone();
    let p = w.plan();
    assert_eq!(pods_of(&p, ActionKind::Delete), ["web-0"]);
    assert!(
        p.events
            .iter()
            .any(|e| e.reason == "RecreatingFailedPod" && e.type_ == crate::core::rollout::plan::EventType::Warning)
    );
    assert_eq!(
        (p.status.replicas, p.status.current_replicas, p.status.updated_replicas),
        (1, 1, 1),
        "the deleted pod is not counted"
    );
    w.apply(&p).unwrap();
    w.kubelet();
    w.settle(20);
    assert_eq!(w.ordinals(), [0, 1]);
    assert_ne!(w.pod(0).unwrap().metadata.uid, old_uid);
    assert_eq!(w.set.status.clone().unwrap().ready_replicas, 2);
}

#[test]
fn a_rollback_bumps_the_old_revision_and_history_is_truncated() {
    let mut w = World::new(stateful_set(1, "nginx:1", json!({"revisionHistoryLimit": 1})));
    w.settle(20);
    let first = w.set.status.clone().unwrap().update_revision;
    set_image(&mut w, "nginx:2");
    w.settle(20);
    set_image(&mut w, "nginx:1");
    let p = w.plan();
    assert!(pods_of(&p, ActionKind::Create).is_empty());
    let bump = p.actions.iter().find(|a| a.kind == ActionKind::UpdateRevision).expect("a rollback bumps the revision");
    assert_eq!(bump.revision, first);
    assert!(!p.actions.iter().any(|a| a.kind == ActionKind::CreateRevision));
    assert_eq!(p.update_revision, first);
    w.apply(&p).unwrap();
    w.kubelet();
    w.settle(20);
    assert_eq!(identity::pod_revision(w.pod(0).unwrap()), first);
    assert_eq!(image(w.pod(0).unwrap()), "nginx:1");
    // nginx:3 then: three revisions, one live, one kept: the oldest non-live one goes.
    set_image(&mut w, "nginx:3");
    w.settle(20);
    assert_eq!(w.revisions.len(), 2, "the live revision and one more with revisionHistoryLimit 1");
}

#[test]
fn on_delete_and_paused_wait() {
    let mut w = World::new(stateful_set(2, "nginx:1", json!({"updateStrategy": {"type": "OnDelete"}})));
    w.settle(20);
    set_image(&mut w, "nginx:2");
    let p = w.round();
    assert!(pods_of(&p, ActionKind::Recreate).is_empty());
    assert!(p.waiting.iter().any(|m| m.contains("OnDelete")), "{:?}", p.waiting);
    // Deleting a pod by hand brings it back at the update revision.
    let i = w.pods.iter().position(|p| pods::name(p) == "web-1").unwrap();
    w.pods.remove(i);
    w.settle(20);
    assert_eq!(image(w.pod(1).unwrap()), "nginx:2");
    assert_eq!(image(w.pod(0).unwrap()), "nginx:1");

    let mut w = World::new(stateful_set(
        2,
        "nginx:1",
        json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"paused": true}}}),
    ));
    w.settle(20);
    set_image(&mut w, "nginx:2");
    let p = w.round();
    assert!(pods_of(&p, ActionKind::Recreate).is_empty());
    assert!(p.waiting.iter().any(|m| m.contains("paused")), "{:?}", p.waiting);
}

#[test]
fn a_scale_budget_that_does_not_parse_is_an_error_and_touches_no_pod() {
    let mut w = World::new(stateful_set(2, "nginx:1", json!({"podManagementPolicy": "Parallel"})));
    w.settle(20);
    set_image(&mut w, "nginx:2");
    w.edit(|s| s.spec.scale_strategy = serde_json::from_value(json!({"maxUnavailable": "x%"})).unwrap());
    let p = w.plan();
    assert!(!p.errors.is_empty());
    assert!(p.actions.iter().all(|a| a.pod.is_none()), "{:?}", p.actions);
}

#[test]
fn a_pod_written_this_round_is_deleted_the_next() {
    let mut w = with_gate(World::new(stateful_set(1, "nginx:1", json!({}))));
    w.settle(20);
    // The InPlaceUpdateReady condition is gone (the refresh sets it again) and the image changes.
    let conditions = w.pods[0].status.as_mut().unwrap().conditions.as_mut().unwrap();
    conditions.retain(|c| c.type_ != "InPlaceUpdateReady");
    set_image(&mut w, "nginx:2");
    let p = w.plan();
    assert_eq!(pods_of(&p, ActionKind::MarkInPlaceUpdateReady), ["web-0"]);
    assert!(pods_of(&p, ActionKind::Recreate).is_empty(), "not on the version the refresh replaces");
    assert!(p.waiting.iter().any(|m| m.contains("web-0 is deleted next round")), "{:?}", p.waiting);
    w.apply(&p).unwrap();
    w.kubelet();
    let p = w.plan();
    assert_eq!(pods_of(&p, ActionKind::Recreate), ["web-0"]);
    w.apply(&p).unwrap();
}

/// A set whose claims of template `data` (class `class`) are resized as it rolls
/// (`StatefulSetAutoResizePVCGate`, `volumeClaimUpdateStrategy: OnPodRollingUpdate`), brought up
/// with every claim bound at 1Gi.
fn resizing_world(class: &str, expandable: Option<bool>) -> World {
    let set = stateful_set(
        4,
        "nginx:1",
        json!({"podManagementPolicy": "Parallel",
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate":
                {"maxUnavailable": 2, "podUpdatePolicy": "InPlaceIfPossible"}},
            "volumeClaimUpdateStrategy": {"type": "OnPodRollingUpdate"},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                "storageClassName": class, "resources": {"requests": {"storage": "1Gi"}}}}]}),
    );
    let mut w = with_gate(World::new(set));
    w.gates = w.gates.clone().with(crate::core::features::Gate::StatefulSetAutoResizePVCGate, true);
    let mut sc = json!({"metadata": {"name": class}, "provisioner": "csi.example.com"});
    if let Some(e) = expandable {
        sc["allowVolumeExpansion"] = json!(e);
    }
    w.storage_classes.push(serde_json::from_value(sc).unwrap());
    w.settle(20);
    for c in w.pvcs.iter_mut() {
        grow(c);
    }
    w.settle(5);
    assert_eq!((w.unready(), w.pvcs.len()), (0, 4));
    w
}

/// The CSI driver's part: a claim's capacity reaches its request.
fn grow(c: &mut PersistentVolumeClaim) {
    let request = c.spec.as_ref().unwrap().resources.as_ref().unwrap().requests.as_ref().unwrap()["storage"].clone();
    c.status = Some(serde_json::from_value(json!({"phase": "Bound", "capacity": {"storage": request}})).unwrap());
}

fn request(c: &PersistentVolumeClaim) -> &str {
    &c.spec.as_ref().unwrap().resources.as_ref().unwrap().requests.as_ref().unwrap()["storage"].0
}

fn grow_template(w: &mut World, size: &str) {
    w.edit(|s| {
        let spec = s.spec.volume_claim_templates[0].spec.as_mut().unwrap();
        spec.resources = Some(serde_json::from_value(json!({"requests": {"storage": size}})).unwrap());
    });
}

/// kruise's `rollingUpdateStatefulsetPods` with auto-resize: a target's claims are expanded first
/// (highest ordinal first, within maxUnavailable), the pod waits, unavailable, until the driver
/// has resized them, and only then is it updated in place; `status.volumeClaims` follows.
#[test]
fn claims_are_expanded_before_their_pods_are_updated() {
    let mut w = resizing_world("fast", Some(true));
    let before = uids(&w);
    let vc = &w.set.status.clone().unwrap().volume_claims;
    assert_eq!((vc.len(), vc[0].compatible_replicas, vc[0].compatible_ready_replicas), (1, 4, 4));
    grow_template(&mut w, "2Gi");
    set_image(&mut w, "nginx:2");

    let first = w.plan();
    assert!(first.errors.is_empty(), "{:?}", first.errors);
    assert_eq!(pods_of(&first, ActionKind::ResizeClaims), ["web-3", "web-2"], "two at a time, highest first");
    assert!(pods_of(&first, ActionKind::UpdateInPlace).is_empty(), "no pod before its claims");
    assert!(first.events.iter().any(|e| e.reason == "SuccessfulResize"));
    assert!(
        first.waiting.iter().any(|m| m.contains("web-3 waits for its claims to be resized")),
        "{:?}",
        first.waiting
    );
    assert_eq!(first.status.volume_claims[0].compatible_replicas, 0, "1Gi claims against a 2Gi template");
    w.apply(&first).unwrap();
    let resized: Vec<&str> = w.pvcs.iter().map(request).collect();
    assert_eq!(resized, ["1Gi", "1Gi", "2Gi", "2Gi"], "data-web-2 and data-web-3 expanded");
    let claim3 = w.pvcs.iter().find(|c| c.metadata.name.as_deref() == Some("data-web-3")).unwrap();
    assert_eq!(claim3.metadata.annotations.as_ref().unwrap()[resize::OWNED_BY_ASTS], "web");

    // The driver has not resized them yet: nothing moves, the two still count unavailable.
    let waiting = w.plan();
    assert!(waiting.actions.iter().all(|a| a.kind != ActionKind::UpdateInPlace && a.kind != ActionKind::ResizeClaims));
    let vc = &waiting.status.volume_claims[0];
    assert_eq!((vc.compatible_replicas, vc.compatible_ready_replicas), (2, 0), "two expanded, neither resized yet");
    w.apply(&waiting).unwrap();

    // web-3's claim is resized: web-3 is updated in place; web-1 still waits for the budget.
    let idx = w.pvcs.iter().position(|c| c.metadata.name.as_deref() == Some("data-web-3")).unwrap();
    grow(&mut w.pvcs[idx]);
    let next = w.plan();
    assert_eq!(pods_of(&next, ActionKind::UpdateInPlace), ["web-3"]);
    assert!(pods_of(&next, ActionKind::ResizeClaims).is_empty(), "web-2 waits, web-1 is out of budget");
    w.apply(&next).unwrap();

    for round in 0.. {
        assert!(round < 40, "the rollout does not end");
        for c in w.pvcs.iter_mut() {
            grow(c);
        }
        w.kubelet();
        w.advance(1);
        let p = w.plan();
        assert!(p.errors.is_empty(), "{:?}", p.errors);
        w.apply(&p).unwrap();
        if p.actions.is_empty() && p.status_write.is_none() {
            break;
        }
    }
    assert_eq!(uids(&w), before, "in place: no pod recreated");
    assert!(w.pvcs.iter().all(|c| request(c) == "2Gi"), "every claim expanded");
    assert!((0..4).all(|o| image(w.pod(o).unwrap()) == "nginx:2"));
    let st = w.set.status.clone().unwrap();
    assert_eq!((st.volume_claims[0].compatible_replicas, st.volume_claims[0].compatible_ready_replicas), (4, 4));
    assert_eq!(st.current_revision, st.update_revision);
}

/// A claim whose class does not allow expansion, or that differs from its template in more than
/// its size, stops the round with kruise's error (and Warning), and no pod is touched.
#[test]
fn claims_that_cannot_be_expanded_stop_the_round() {
    let mut w = resizing_world("fixed", Some(false));
    grow_template(&mut w, "2Gi");
    set_image(&mut w, "nginx:2");
    let p = w.plan();
    assert_eq!(p.errors, ["storage class fixed for web-3 does not support volume expansion"]);
    assert!(p.actions.iter().all(|a| a.kind != ActionKind::UpdateInPlace && a.kind != ActionKind::ResizeClaims));

    let mut w = resizing_world("fast", Some(true));
    w.edit(|s| {
        s.spec.volume_claim_templates[0].spec.as_mut().unwrap().access_modes = Some(vec!["ReadWriteMany".into()])
    });
    set_image(&mut w, "nginx:2");
    let p = w.plan();
    assert_eq!(
        p.errors,
        ["can not patch pvc data-web-3: contains diff other than spec resource, wait pvc to be deleted"]
    );
    assert!(p.events.iter().any(|e| e.reason == "FailedUpdatePVC" && e.message.contains("data-web-3")));
    assert!(pods_of(&p, ActionKind::UpdateInPlace).is_empty());

    // Without the gate the same set rolls its pods and leaves the claims alone.
    let mut w = resizing_world("fixed", Some(false));
    w.gates = w.gates.clone().with(crate::core::features::Gate::StatefulSetAutoResizePVCGate, false);
    grow_template(&mut w, "2Gi");
    set_image(&mut w, "nginx:2");
    let p = w.plan();
    assert!(p.errors.is_empty(), "{:?}", p.errors);
    assert_eq!(pods_of(&p, ActionKind::UpdateInPlace), ["web-3", "web-2"]);
}

/// kruise #1389, #2343: a volumeClaimTemplate added to a running set. kruise patches the volume
/// into each pod and the API server refuses it forever (a pod's volumes never change); here the
/// claims are created and the rolling update recreates the pods, highest first within
/// maxUnavailable, and no write ever changes a live pod's volumes.
#[test]
fn an_added_claim_template_recreates_the_pods_instead_of_patching_their_volumes() {
    let set = stateful_set(
        3,
        "nginx:1",
        json!({"podManagementPolicy": "Parallel", "updateStrategy": {"type": "RollingUpdate", "rollingUpdate":
            {"maxUnavailable": 1, "podUpdatePolicy": "InPlaceIfPossible"}}}),
    );
    let mut w = with_gate(World::new(set));
    w.settle(20);
    let before = uids(&w);
    let revision = w.set.status.clone().unwrap().update_revision;
    w.edit(|s| {
        s.spec.volume_claim_templates = vec![
            serde_json::from_value(json!({"metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}))
            .unwrap(),
        ]
    });
    let mut recreated = Vec::new();
    for round in 0.. {
        assert!(round < 60, "the rollout does not end");
        let p = w.plan();
        assert!(p.errors.is_empty(), "{:?}", p.errors);
        recreated.extend(pods_of(&p, ActionKind::Recreate));
        w.apply(&p).unwrap();
        for pod in &w.pods {
            let has = identity::storage_matches(&w.set, pod);
            let uid = pod.metadata.uid.as_deref().unwrap();
            assert!(!(has && before.values().any(|u| u == uid)), "a live pod's volumes were changed");
        }
        assert!(unavailable(&w) <= 1, "round {round}: {} unavailable", unavailable(&w));
        w.kubelet();
        w.advance(1);
        if p.actions.is_empty() && p.status_write.is_none() {
            break;
        }
    }
    assert_eq!(recreated, ["web-2", "web-1", "web-0"]);
    assert_eq!(w.pvcs.len(), 3);
    for o in 0..3 {
        let p = w.pod(o).unwrap();
        assert!(identity::storage_matches(&w.set, p), "web-{o} mounts its claim");
        assert_eq!(identity::pod_revision(p), revision, "the template did not change");
    }
}

/// `status.volumeClaims` as kruise's `updatePVCStatus` reports it: over every replica slot, the
/// claims (from the cache: the ones a round creates count from the next) compatible with their
/// template and, once bound to enough capacity, ready. A set taken over with Go's entries keeps
/// them (no status write when nothing differs); a set whose old status has none gets them with
/// the next write that is due anyway, as in Go.
#[test]
fn the_status_reports_the_volume_claims() {
    let claims = json!({"volumeClaimTemplates": [{"metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]});
    let mut w = World::new(stateful_set(2, "nginx:1", claims));
    w.settle(20);
    assert_eq!(w.pvcs.len(), 2);
    let entry = |compatible, ready| {
        vec![crate::apis::statefulset::VolumeClaimStatus {
            volume_claim_name: "data".into(),
            compatible_replicas: compatible,
            compatible_ready_replicas: ready,
        }]
    };
    let p = w.plan();
    assert_eq!(p.status.volume_claims, entry(2, 0), "not bound: no capacity yet");
    assert_eq!(w.set.status.as_ref().unwrap().volume_claims, entry(2, 0), "written with the pods' status");
    for c in &mut w.pvcs {
        c.status = Some(serde_json::from_value(json!({"phase": "Bound", "capacity": {"storage": "1Gi"}})).unwrap());
    }
    let p = w.plan();
    assert_eq!(p.status.volume_claims, entry(2, 2));
    assert!(p.status_write.is_some(), "the counts the old status has changed");
    w.apply(&p).unwrap();
    let p = w.plan();
    assert!(p.actions.is_empty() && p.status_write.is_none(), "{p:?}");

    // Scaled to 3: the new replica's claim counts once the cache has it, whatever its pod does.
    w.edit(|s| s.spec.replicas = Some(3));
    let p = w.round();
    assert_eq!(p.status.volume_claims, entry(2, 2), "the claim created this round is not in the cache yet");
    let p = w.plan();
    assert_eq!(p.status.volume_claims, entry(3, 2));
}

/// The budget `web-pub` as its controller would count the world's pods now: `desired` available
/// wanted, `unavailableAllowed` = available (ready and state consistent) − desired, the pods it
/// recorded kept (the webhook's and the controller's units).
fn count_budget(w: &mut World, desired: i32, recorded: &BTreeMap<String, String>) {
    let available = w
        .pods
        .iter()
        .filter(|p| crate::core::budget::pod::is_ready(p) && crate::core::budget::pod::is_state_consistent(p, false))
        .count() as i32;
    let b: crate::apis::podunavailablebudget::PodUnavailableBudget = serde_json::from_value(json!({
        "apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
        "metadata": {"namespace": "default", "name": "web-pub"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1},
        "status": {"observedGeneration": 1, "desiredAvailable": desired, "currentAvailable": available,
                   "unavailableAllowed": (available - desired - recorded.len() as i32).max(0),
                   "totalReplicas": w.pods.len(), "unavailablePods": recorded}}))
    .unwrap();
    w.budgets = vec![b];
}

/// Gate PodUnavailableBudgetUpdateGate on an Advanced StatefulSet (as on the CloneSet, kruise
/// `cloneset_update.go` step 6): a Parallel in-place rollout with `maxUnavailable: 3` under a
/// budget that keeps 2 of 3 available updates one pod at a time — each update names the unit it
/// takes first, the next pod waits with the budget's refusal and a look again in a second — and
/// still reaches every pod; with the gate off the budget is not asked and all three go at once.
#[test]
fn a_budget_of_one_paces_an_in_place_rollout() {
    let strategy = json!({"podManagementPolicy": "Parallel", "updateStrategy": {"type": "RollingUpdate",
        "rollingUpdate": {"partition": 0, "maxUnavailable": 3, "podUpdatePolicy": "InPlaceIfPossible"}}});
    for gate in [false, true] {
        let mut set = stateful_set(3, "nginx:1", strategy.clone());
        set.spec.template.metadata.get_or_insert_default().annotations =
            Some([(crate::core::budget::RELATED_PUB.to_string(), "web-pub".to_string())].into());
        let mut w = with_gate(World::new(set));
        w.gates = w.gates.clone().with(crate::core::features::Gate::PodUnavailableBudgetUpdateGate, gate);
        w.settle(20);
        assert_eq!(w.unready(), 0);
        set_image(&mut w, "nginx:2");
        let mut recorded: BTreeMap<String, String> = BTreeMap::new();
        let (mut worst, mut updated) = (0, Vec::new());
        for round in 0.. {
            assert!(round < 60, "gate {gate}: the rollout does not end");
            // A recorded pod is released once it is available again (the budget's controller).
            recorded.retain(|name, _| {
                w.pods.iter().any(|p| {
                    pods::name(p) == name
                        && !(pods::is_ready(p)
                            && refresh::update_completed(p, in_place_options(&w.set, &w.gates)).is_ok())
                })
            });
            count_budget(&mut w, 2, &recorded);
            let p = w.plan();
            assert!(p.errors.is_empty(), "{:?}", p.errors);
            let now = pods_of(&p, ActionKind::UpdateInPlace);
            if gate {
                assert!(now.len() <= 1, "round {round}: {now:?} updated at once under a budget of one");
                let takes: Vec<&str> = p.budget_takes.iter().map(|t| t.pod.as_str()).collect();
                assert_eq!(takes, now.iter().map(String::as_str).collect::<Vec<_>>(), "each update takes its unit");
                let refused = p
                    .waiting
                    .iter()
                    .any(|m| m.contains("\"web-pub\" is forbidden: pub unavailable allowed is negative"));
                if refused {
                    assert_eq!(p.requeue_after, Some(SignedDuration::from_secs(1)));
                }
                for t in &p.budget_takes {
                    recorded.insert(t.pod.clone(), "2026-01-01T00:00:00Z".into());
                }
            } else {
                assert!(p.budget_takes.is_empty(), "the gate is off: no unit is taken");
            }
            updated.extend(now);
            w.apply(&p).unwrap();
            worst = worst.max(unavailable(&w));
            w.kubelet();
            w.advance(1);
            if p.actions.is_empty() && p.status_write.is_none() && p.waiting.is_empty() {
                break;
            }
        }
        updated.sort();
        assert_eq!(updated, ["web-0", "web-1", "web-2"], "gate {gate}: every pod updated once");
        assert!(w.pods.iter().all(|p| image(p) == "nginx:2"), "gate {gate}");
        assert_eq!(worst, if gate { 1 } else { 3 }, "gate {gate}: most pods unavailable at once");
    }
}
