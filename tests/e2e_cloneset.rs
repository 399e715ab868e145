//! The CloneSet reconciler end to end on the real control plane of `testenv/` (kube-apiserver,
//! etcd, controller-manager with its garbage collector, scheduler, simulated kubelet): the CRDs of
//! `deploy/crds`, the reconciler run in-process (`kruise::controller::cloneset::run`, scoped to
//! the test's namespace so tests run side by side), and assertions on what the API server holds.
//! Nothing sleeps and hopes: every wait polls for a condition with a deadline, and a watcher
//! started before each scenario records every state the pods went through.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_cloneset_support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use e2e_cloneset_support::*;
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kruise::apis::cloneset::CloneSet;
use kruise_testenv::{Share, WriteFault};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams};
use serde_json::json;

const INSTANCE_ID: &str = "apps.kruise.io/cloneset-instance-id";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_up_gives_ready_pods_with_instance_ids_pvcs_and_status() {
    let t = Scenario::start("cs-scale-up").await;
    let mut spec = spec(5, "nginx:1.25", json!({"type": "ReCreate"}));
    spec["volumeClaimTemplates"] = json!([{
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    }]);
    let cs = t.create("web", spec).await;
    let st = t.wait_status("web", "5 ready replicas", |s| s.ready_replicas == 5 && s.available_replicas == 5).await;
    assert_eq!((st.replicas, st.updated_replicas, st.updated_ready_replicas), (5, 5, 5));
    assert_eq!(st.observed_generation, 1);
    assert_eq!(st.current_revision, st.update_revision);
    assert!(st.update_revision.starts_with("web-"), "{}", st.update_revision);
    assert_eq!(st.label_selector, "app=web");
    assert_eq!(st.expected_updated_replicas, 5);

    let pods = t.pods().await;
    assert_eq!(pods.len(), 5);
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(t.client.clone(), t.ns());
    let pvcs = pvcs.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(pvcs.len(), 5, "one PVC per pod per volumeClaimTemplate");
    for p in &pods {
        let name = p.metadata.name.clone().unwrap();
        let id = label(p, INSTANCE_ID);
        assert_eq!(id.len(), 5, "{name}");
        assert_eq!(name, format!("web-{id}"), "pods are named after their instance id");
        assert_eq!(label(p, "controller-revision-hash"), st.update_revision);
        let owner = &p.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.uid.as_str(), owner.controller), ("CloneSet", uid(&cs), Some(true)));
        let claim = format!("data-web-{id}");
        let volume = p.spec.as_ref().unwrap().volumes.as_ref().unwrap().iter().find(|v| v.name == "data").unwrap();
        assert_eq!(volume.persistent_volume_claim.as_ref().unwrap().claim_name, claim);
        let pvc = pvcs.iter().find(|c| c.metadata.name.as_deref() == Some(claim.as_str())).expect("its PVC");
        assert_eq!(pvc.metadata.labels.as_ref().unwrap()[INSTANCE_ID], id);
        assert_eq!(pvc.metadata.owner_references.as_ref().unwrap()[0].uid, uid(&cs));
        assert_eq!(condition(p, "InPlaceUpdateReady").as_deref(), Some("True"), "{name}");
    }
    let revisions: Api<ControllerRevision> = Api::namespaced(t.client.clone(), t.ns());
    let revisions = revisions.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(revisions.len(), 1);
    assert_eq!(revisions[0].metadata.name.as_deref(), Some(st.update_revision.as_str()));
    t.history.assert_never_more_live_than(5).await;
    assert_eq!(t.history.created().await, 5, "no pod was created twice");

    // Events as kruise names them, one per pod (folded into a series by kube's recorder).
    let (notes, count) = poll("5 SuccessfulCreate events", || async {
        let (notes, count) = t.events("web", "SuccessfulCreate").await;
        (count == 5).then_some((notes, count))
    })
    .await;
    assert_eq!(count, 5);
    let names: BTreeSet<String> =
        pods.iter().map(|p| format!("succeed to create pod {}", p.metadata.name.as_deref().unwrap())).collect();
    assert!(!notes.is_empty() && notes.is_subset(&names), "{notes:?}");
    let metrics = t.metrics.encode();
    assert!(
        metrics.contains("controller_runtime_reconcile_total{controller=\"cloneset\",result=\"success\"}"),
        "{metrics}"
    );
    assert!(metrics.contains("controller_runtime_reconcile_time_seconds_count{controller=\"cloneset\"}"), "{metrics}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_to_delete_and_specified_delete_replace_exactly_those_pods() {
    let t = Scenario::start("cs-delete").await;
    t.create("web", spec(4, "nginx:1.25", json!({"type": "ReCreate"}))).await;
    t.wait_status("web", "4 ready", |s| s.ready_replicas == 4).await;
    let before = t.pods().await;
    let named = before[0].metadata.name.clone().unwrap();
    t.patch_spec("web", json!({"scaleStrategy": {"podsToDelete": [named]}})).await;
    t.eventually("the named pod replaced", |pods| {
        (pods.len() == 4 && pods.iter().all(|p| p.metadata.name.as_deref() != Some(named.as_str())) && all_ready(pods))
            .then_some(())
    })
    .await;
    let names_after: BTreeSet<String> = t.pods().await.iter().map(|p| p.metadata.name.clone().unwrap()).collect();
    let kept: BTreeSet<String> = before[1..].iter().map(|p| p.metadata.name.clone().unwrap()).collect();
    assert!(kept.is_subset(&names_after), "only the named pod was replaced: {kept:?} vs {names_after:?}");
    t.eventually_cs("podsToDelete trimmed once the pod is gone", |cs| {
        cs.spec.scale_strategy.pods_to_delete.is_empty().then_some(())
    })
    .await;

    // The specified-delete label does the same.
    let marked = before[1].metadata.name.clone().unwrap();
    let pods: Api<Pod> = Api::namespaced(t.client.clone(), t.ns());
    pods.patch(
        &marked,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"apps.kruise.io/specified-delete": "true"}}})),
    )
    .await
    .unwrap();
    t.eventually("the labelled pod replaced", |pods| {
        (pods.len() == 4 && pods.iter().all(|p| p.metadata.name.as_deref() != Some(marked.as_str())) && all_ready(pods))
            .then_some(())
    })
    .await;
    t.history.assert_never_more_live_than(4).await;
    assert_eq!(t.history.created().await, 6, "4 pods, then exactly one replacement each");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_down_removes_the_pods_kruise_plan_ranks_first() {
    let t = Scenario::start("cs-scale-down").await;
    t.create("web", spec(5, "nginx:1.25", json!({"type": "ReCreate", "maxUnavailable": "100%"}))).await;
    t.wait_status("web", "5 ready", |s| s.ready_replicas == 5 && s.available_replicas == 5).await;
    let pods_before = t.pods().await;
    let before: BTreeSet<String> = pods_before.iter().map(|p| p.metadata.name.clone().unwrap()).collect();

    // What `kruise plan` says on a kubectl snapshot with replicas 3.
    t.stop_reconciler().await;
    t.history.mark().await;
    t.patch_spec("web", json!({"replicas": 3})).await;
    let snapshot = t.kubectl_snapshot().await;
    let predicted = kruise_plan(&snapshot, "delete");
    assert_eq!(predicted.len(), 2, "kruise plan deletes 2 pods: {predicted:?}");
    assert_eq!(
        kruise_plan_live(t.ns(), "web", "delete"),
        predicted,
        "kruise plan cloneset reads the same from the cluster"
    );
    t.start_reconciler().await;

    t.eventually("3 pods left", |pods| (pods.len() == 3 && all_ready(pods)).then_some(())).await;
    let after: BTreeSet<String> = t.pods().await.iter().map(|p| p.metadata.name.clone().unwrap()).collect();
    let removed: BTreeSet<String> = before.difference(&after).cloned().collect();
    let facts: Vec<String> = pods_before
        .iter()
        .map(|p| {
            let ready = p.status.as_ref().and_then(|s| s.conditions.as_ref()).and_then(|c| {
                c.iter().find(|c| c.type_ == "Ready").and_then(|c| c.last_transition_time.as_ref()).map(|t| t.0)
            });
            format!(
                "{} node={:?} ready={ready:?} created={:?} restarts={}",
                p.metadata.name.as_deref().unwrap(),
                node(p),
                p.metadata.creation_timestamp.as_ref().map(|t| t.0),
                restarts(p)
            )
        })
        .collect();
    assert_eq!(removed.len(), 2);
    // The ranking reads readiness and ready times: the prediction holds when no pod changed
    // readiness between the snapshot and the deletion (on a loaded machine the node lifecycle
    // controller may mark pods NotReady when a simulated node's heartbeat is late).
    if t.history.max_unready().await == 0 {
        assert_eq!(removed, predicted, "the controller removed what kruise plan printed; pods: {facts:#?}");
    } else {
        eprintln!(
            "pods changed readiness after the snapshot: the prediction {predicted:?} is void; removed {removed:?}"
        );
    }
    t.wait_status("web", "status of 3", |s| s.replicas == 3 && s.ready_replicas == 3 && s.observed_generation == 2)
        .await;
    assert_eq!(t.history.created().await, 5, "scaling down creates nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_place_update_respects_partition_and_max_unavailable() {
    let t = Scenario::start("cs-inplace").await;
    let strategy = json!({"type": "InPlaceIfPossible", "partition": 2, "maxUnavailable": 1});
    t.create("web", spec(5, "nginx:1.25", strategy)).await;
    let st0 = t.wait_status("web", "5 ready", |s| s.ready_replicas == 5 && s.available_replicas == 5).await;
    let before: BTreeMap<String, Pod> =
        t.pods().await.into_iter().map(|p| (p.metadata.name.clone().unwrap(), p)).collect();
    t.history.mark().await;

    t.history.watch_image("nginx:1.26");
    t.patch_spec("web", json!({"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}})).await;
    let st = t
        .wait_status("web", "3 updated in place", |s| {
            s.observed_generation == 2
                && s.updated_replicas == 3
                && s.updated_ready_replicas == 3
                && s.ready_replicas == 5
        })
        .await;
    assert_ne!(st.update_revision, st0.update_revision);
    assert_eq!(st.current_revision, st0.current_revision, "the rollout is not complete");
    let mid = t.pods().await;
    let updated: Vec<&Pod> =
        mid.iter().filter(|p| label(p, "controller-revision-hash") == st.update_revision).collect();
    assert_eq!(updated.len(), 3, "partition 2 keeps 2 pods at the old revision");
    for p in &mid {
        let name = p.metadata.name.clone().unwrap();
        let old = before.get(&name).unwrap_or_else(|| panic!("{name} is not one of the original pods"));
        assert_eq!(p.metadata.uid, old.metadata.uid, "{name} updated in place: same uid");
        assert_eq!(node(p), node(old), "{name} on the same node");
        let is_updated = updated.iter().any(|u| u.metadata.name == p.metadata.name);
        let image = p.spec.as_ref().unwrap().containers[0].image.clone().unwrap();
        assert_eq!(image, if is_updated { "nginx:1.26" } else { "nginx:1.25" }, "{name}");
        assert_eq!(restarts(p), restarts(old) + i32::from(is_updated), "{name}: restartCount + 1 when updated");
        if is_updated {
            assert!(
                p.metadata.annotations.as_ref().unwrap().contains_key("apps.kruise.io/inplace-update-state"),
                "{name} records its in-place update state"
            );
        }
    }
    t.history.assert_at_most_unready(1).await;
    t.history.assert_image_patched_only_when_not_ready();

    t.patch_spec("web", json!({"updateStrategy": {"partition": 0}})).await;
    let st = t
        .wait_status("web", "all 5 updated", |s| {
            s.observed_generation == 3
                && s.updated_replicas == 5
                && s.updated_ready_replicas == 5
                && s.ready_replicas == 5
        })
        .await;
    assert_eq!(st.current_revision, st.update_revision, "rollout complete");
    for p in t.pods().await {
        let name = p.metadata.name.clone().unwrap();
        assert_eq!(p.metadata.uid, before[&name].metadata.uid, "{name} kept its uid");
        assert_eq!(restarts(&p), restarts(&before[&name]) + 1, "{name}");
        assert_eq!(condition(&p, "InPlaceUpdateReady").as_deref(), Some("True"));
        // Sent in the same pods/status write as the condition (actions::coalesce): the status
        // endpoint must have kept the label.
        assert_eq!(label(&p, "lifecycle.apps.kruise.io/state"), "Normal", "{name}: lifecycle state after the update");
    }
    t.history.assert_at_most_unready(1).await;
    t.history.assert_image_patched_only_when_not_ready();
    assert_eq!(t.history.created().await, 5, "in place: no pod created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_env_change_recreates_pods_and_a_deleted_pod_comes_back_with_its_pvc() {
    let t = Scenario::start("cs-recreate").await;
    let mut spec = spec(3, "nginx:1.25", json!({"type": "InPlaceIfPossible", "maxUnavailable": 1}));
    spec["volumeClaimTemplates"] = json!([{
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    }]);
    t.create("web", spec).await;
    t.wait_status("web", "3 ready", |s| s.ready_replicas == 3 && s.available_replicas == 3).await;

    // A pod deleted by someone else is recreated with its instance id, and reuses its PVC.
    let before = t.pods().await;
    let victim = before[0].clone();
    let id = label(&victim, INSTANCE_ID);
    let claims = t.claims().await;
    let pods: Api<Pod> = Api::namespaced(t.client.clone(), t.ns());
    pods.delete(victim.metadata.name.as_deref().unwrap(), &DeleteParams::default()).await.unwrap();
    let back = t
        .eventually("the deleted pod recreated", |pods| {
            pods.iter()
                .find(|p| label(p, INSTANCE_ID) == id && p.metadata.uid != victim.metadata.uid && is_ready(p))
                .cloned()
        })
        .await;
    assert_eq!(back.metadata.name, victim.metadata.name, "same instance id, same name");
    assert_eq!(t.claims().await, claims, "the recreated pod reuses its PVC (same names and uids)");
    t.wait_status("web", "3 ready again", |s| s.ready_replicas == 3 && s.replicas == 3).await;

    // An env change cannot be applied in place: the pods are recreated (kruise deletes a pod's
    // PVCs with it when it deletes the pod itself, so the new pods get new ones).
    let before = t.pods().await;
    let env = json!([{"name": "main", "image": "nginx:1.25", "env": [{"name": "MODE", "value": "b"}]}]);
    t.patch_spec("web", json!({"template": {"spec": {"containers": env}}})).await;
    let st = t
        .wait_status("web", "3 recreated", |s| {
            s.observed_generation == 2 && s.updated_ready_replicas == 3 && s.replicas == 3 && s.ready_replicas == 3
        })
        .await;
    let after = t.pods().await;
    let uids_before: BTreeSet<_> = before.iter().map(|p| p.metadata.uid.clone().unwrap()).collect();
    for p in &after {
        assert!(!uids_before.contains(p.metadata.uid.as_ref().unwrap()), "a new pod, not updated in place");
        assert_eq!(label(p, "controller-revision-hash"), st.update_revision);
        assert_eq!(restarts(p), 0);
    }
    let claims: BTreeMap<String, String> = t.claims().await;
    let wanted: BTreeSet<String> = after.iter().map(|p| format!("data-web-{}", label(p, INSTANCE_ID))).collect();
    assert_eq!(claims.keys().cloned().collect::<BTreeSet<_>>(), wanted, "one PVC per pod, none left behind");
    assert_eq!(t.history.created().await, 7, "3 pods, 1 recreated after its deletion, 3 recreated by the update");
    t.history.assert_never_more_live_than(3).await;
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_never_produce_an_extra_or_a_missing_pod() {
    let t = Scenario::start_behind_fault_proxy("cs-faults").await;
    let proxy = t.proxy.as_ref().unwrap();
    proxy.fail_writes(WriteFault::Conflict, Share::Probability(0.25), &[]);
    proxy.delay_watch_events(Duration::from_millis(700));
    t.create("web", spec(6, "nginx:1.25", json!({"type": "ReCreate", "maxUnavailable": 2}))).await;
    t.wait_status("web", "6 ready", |s| s.ready_replicas == 6 && s.replicas == 6).await;
    proxy.cut_watches();

    proxy.fail_writes(WriteFault::TooManyRequests { retry_after_seconds: 1 }, Share::Probability(0.2), &[]);
    t.patch_spec("web", json!({"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}})).await;
    proxy.cut_watches();
    t.wait_status("web", "6 recreated at the new image", |s| {
        s.observed_generation == 2 && s.updated_ready_replicas == 6 && s.replicas == 6
    })
    .await;

    proxy.fail_writes(WriteFault::Conflict, Share::Probability(0.3), &["pods"]);
    t.patch_spec("web", json!({"replicas": 4})).await;
    t.wait_status("web", "4 replicas", |s| s.observed_generation == 3 && s.replicas == 4 && s.ready_replicas == 4)
        .await;
    proxy.heal();
    let counts = proxy.counts();
    assert!(counts.conflicts > 0 && counts.throttled > 0, "the faults happened: {counts:?}");
    assert!(counts.delayed_events > 0 && counts.cut_watches > 0, "{counts:?}");

    // 6 pods, 6 replacements, then 2 deletions: exactly 12 pods were ever created.
    assert_eq!(t.history.created().await, 12, "no pod was doubled: {:?}", t.history.names());
    t.history.assert_never_more_live_than(6).await;
    assert_eq!(t.pods().await.len(), 4);
    eprintln!("faults injected: {counts:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_place_rollout_under_conflicts_and_stale_watches_keeps_every_pod() {
    let t = Scenario::start_behind_fault_proxy("cs-faults-inplace").await;
    let proxy = t.proxy.as_ref().unwrap();
    t.create("web", spec(4, "nginx:1.25", json!({"type": "InPlaceIfPossible", "maxUnavailable": 2}))).await;
    t.wait_status("web", "4 ready", |s| s.ready_replicas == 4 && s.available_replicas == 4).await;
    let before: BTreeMap<String, Pod> =
        t.pods().await.into_iter().map(|p| (p.metadata.name.clone().unwrap(), p)).collect();
    t.history.mark().await;

    // Pod and status writes fail a third of the time; the controller's watches lag.
    proxy.fail_writes(WriteFault::Conflict, Share::Probability(0.35), &["pods", "clonesets"]);
    proxy.delay_watch_events(Duration::from_millis(500));
    t.history.watch_image("nginx:1.26");
    t.patch_spec("web", json!({"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}})).await;
    proxy.cut_watches();
    let st = t
        .wait_status("web", "4 updated in place", |s| {
            s.observed_generation == 2 && s.updated_ready_replicas == 4 && s.ready_replicas == 4
        })
        .await;
    assert_eq!(st.current_revision, st.update_revision);
    proxy.heal();
    assert!(proxy.counts().conflicts > 0, "conflicts were injected: {:?}", proxy.counts());
    for p in t.pods().await {
        let name = p.metadata.name.clone().unwrap();
        let old = before.get(&name).unwrap_or_else(|| panic!("{name} is not one of the original pods"));
        assert_eq!(p.metadata.uid, old.metadata.uid, "{name} updated in place");
        assert_eq!(restarts(&p), restarts(old) + 1, "{name} restarted exactly once");
    }
    assert_eq!(t.history.created().await, 4, "no pod was recreated");
    t.history.assert_at_most_unready(2).await;
    t.history.assert_image_patched_only_when_not_ready();
    eprintln!("faults injected: {:?}", proxy.counts());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_cloneset_removes_its_pods() {
    let t = Scenario::start("cs-gc").await;
    t.create("web", spec(2, "nginx:1.25", json!({"type": "ReCreate"}))).await;
    t.wait_status("web", "2 ready", |s| s.ready_replicas == 2).await;
    let api: Api<CloneSet> = Api::namespaced(t.client.clone(), t.ns());
    api.delete("web", &DeleteParams::background()).await.unwrap();
    t.eventually_all("every pod gone", |pods| pods.is_empty().then_some(())).await;
    assert_eq!(t.history.created().await, 2, "nothing was recreated while the CloneSet went away");
}

/// Issue 26 item 8: env read from a pod label changes under InPlaceIfPossible. In place, only a
/// kruise-daemon on the node could restart the container and confirm it; no daemon runs here, so
/// the controller recreates the pods (with an Event saying why) and the rollout finishes instead
/// of waiting forever.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_env_from_metadata_change_without_a_daemon_recreates_and_finishes() {
    let t = Scenario::start("cs-env-meta").await;
    let mut s = spec(3, "nginx:1.25", json!({"type": "InPlaceIfPossible"}));
    s["template"]["metadata"]["labels"]["ver"] = json!("v1");
    s["template"]["spec"]["containers"][0]["env"] =
        json!([{"name": "VER", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['ver']"}}}]);
    t.create("web", s).await;
    let first = t.wait_status("web", "3 ready replicas", |s| s.ready_replicas == 3 && s.updated_replicas == 3).await;
    let before: BTreeSet<String> = t.pods().await.iter().map(|p| p.metadata.uid.clone().unwrap()).collect();
    t.patch_spec("web", json!({"template": {"metadata": {"labels": {"app": "web", "ver": "v2"}}}})).await;
    let st = t
        .wait_status("web", "the rollout to finish", |s| {
            s.update_revision != first.update_revision
                && s.updated_ready_replicas == 3
                && s.ready_replicas == 3
                && s.replicas == 3
                && s.current_revision == s.update_revision
        })
        .await;
    let pods = t.pods().await;
    assert_eq!(pods.len(), 3);
    for p in &pods {
        assert_eq!(label(p, "ver"), "v2");
        assert_eq!(label(p, "controller-revision-hash"), st.update_revision);
        assert!(!before.contains(p.metadata.uid.as_deref().unwrap()), "recreated, not updated in place");
    }
    let (notes, count) = poll("RecreateForEnvFromMetadata events", || async {
        let (notes, count) = t.events("web", "RecreateForEnvFromMetadata").await;
        (count >= 1).then_some((notes, count))
    })
    .await;
    assert!(count >= 1);
    assert!(notes.iter().all(|n| n.contains("kruise-daemon")), "{notes:?}");
    t.history.assert_never_more_live_than(3 + 1).await;
}

/// Issue 26: a stored CloneSet that does not decode (its schemaless template holds a string where
/// containers are a list) is skipped and counted, and another CloneSet of the same namespace still
/// rolls out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_undecodable_cloneset_is_skipped_while_another_rolls_out() {
    let t = Scenario::start("cs-undecodable").await;
    let dynamic: Api<kube::api::DynamicObject> =
        Api::namespaced_with(t.client.clone(), t.ns(), &kube::api::ApiResource::erase::<CloneSet>(&()));
    let mut broken = spec(2, "nginx:1.25", json!({}));
    broken["selector"] = json!({"matchLabels": {"app": "broken"}});
    broken["template"] = json!({"metadata": {"labels": {"app": "broken"}}, "spec": {"containers": "oops"}});
    let broken: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "broken"}, "spec": broken,
    }))
    .unwrap();
    dynamic.create(&kube::api::PostParams::default(), &broken).await.unwrap();
    t.create("web", spec(2, "nginx:1.25", json!({"type": "InPlaceIfPossible"}))).await;
    t.wait_status("web", "2 ready replicas", |s| s.ready_replicas == 2).await;
    t.patch_spec("web", json!({"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}})).await;
    t.wait_status("web", "the update to finish", |s| s.updated_ready_replicas == 2 && s.ready_replicas == 2).await;
    assert!(t.pods().await.iter().all(|p| label(p, "app") == "web"), "nothing was made for the broken CloneSet");
    let metrics = t.metrics.encode();
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("kruise_informer_decode_failures_total{kind=\"CloneSet\"}") && !l.ends_with(" 0")),
        "{metrics}"
    );
}
