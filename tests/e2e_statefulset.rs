//! The Advanced StatefulSet controller end to end on the real control plane of `testenv/` (issue
//! 27): deploy/'s CRDs, the reconcilers run in-process scoped to the test's namespace (the shared
//! harness of `e2e_cloneset_support`), and a watcher recording every pod state, so assertions
//! hold for every moment it saw, not only the end state.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_cloneset_support;

use std::collections::BTreeMap;

use e2e_cloneset_support::*;
use k8s_openapi::api::core::v1::Pod;
use kruise::apis::statefulset::v1beta1::StatefulSet;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn asts(t: &Scenario) -> Api<StatefulSet> {
    Api::namespaced(t.client.clone(), t.ns())
}

/// An Advanced StatefulSet `web` as its mutating webhook leaves it, `extra` merged into the spec.
fn set(replicas: i32, image: &str, extra: Value) -> StatefulSet {
    let mut spec = json!({
        "replicas": replicas,
        "serviceName": "web",
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "readinessGates": [{"conditionType": "InPlaceUpdateReady"}],
                "containers": [{"name": "main", "image": image}]
            }
        },
        "podManagementPolicy": "Parallel",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
            "podUpdatePolicy": "InPlaceIfPossible", "partition": 0, "maxUnavailable": 1}},
        "revisionHistoryLimit": 10,
    });
    merge(&mut spec, extra);
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
        "metadata": {"name": "web"}, "spec": spec,
    }))
    .unwrap()
}

fn merge(into: &mut Value, from: Value) {
    match (into, from) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, v) in b {
                merge(a.entry(k).or_insert(Value::Null), v);
            }
        }
        (slot, v) => *slot = v,
    }
}

fn by_name(pods: &[Pod]) -> BTreeMap<String, (String, i32, String)> {
    pods.iter()
        .map(|p| {
            let image = p.spec.as_ref().unwrap().containers[0].image.clone().unwrap();
            (p.metadata.name.clone().unwrap(), (p.metadata.uid.clone().unwrap(), restarts(p), image))
        })
        .collect()
}

/// Issue 27's headline case: a Parallel set of 6 with `maxUnavailable: 2` and `partition: 3`
/// under InPlaceIfPossible updates pods 5, 4 and 3 in place (same uids, restartCount + 1), never
/// more than 2 unavailable at any moment the watcher saw, and leaves pods 0–2 untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parallel_set_updates_above_its_partition_in_place_within_max_unavailable() {
    let t = Scenario::start("asts-inplace").await;
    let api = asts(&t);
    api.create(&PostParams::default(), &set(6, "nginx:1.25", json!({}))).await.unwrap();
    poll("6 ready replicas", || async {
        let s = api.get("web").await.ok()?.status?;
        (s.ready_replicas == 6 && s.updated_replicas == 6).then_some(())
    })
    .await;
    let before = by_name(&t.pods().await);
    let names: Vec<&str> = before.keys().map(String::as_str).collect();
    assert_eq!(names, ["web-0", "web-1", "web-2", "web-3", "web-4", "web-5"]);
    t.history.mark().await;
    let patch = json!({"spec": {
        "updateStrategy": {"rollingUpdate": {"partition": 3, "maxUnavailable": 2}},
        "template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}
    }});
    api.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    let st = poll("3 pods updated and ready", || async {
        let s = api.get("web").await.ok()?.status?;
        (s.updated_replicas == 3 && s.updated_ready_replicas == 3 && s.ready_replicas == 6).then_some(s)
    })
    .await;
    assert_ne!(st.update_revision, st.current_revision);
    let after = by_name(&t.pods().await);
    for i in 0..6 {
        let name = format!("web-{i}");
        let (uid0, restarts0, _) = &before[&name];
        let (uid1, restarts1, image) = &after[&name];
        assert_eq!(uid0, uid1, "{name} kept its identity (in place, not recreated)");
        if i >= 3 {
            assert_eq!(image, "nginx:1.26", "{name}");
            assert_eq!(*restarts1, restarts0 + 1, "{name} restarted once in place");
        } else {
            assert_eq!(image, "nginx:1.25", "{name} is below the partition");
            assert_eq!(restarts1, restarts0, "{name}");
        }
    }
    t.history.assert_at_most_unready(2).await;
    assert_eq!(t.history.created().await, 6, "no pod was created twice");
}

/// OrderedReady creates pods strictly one after another, and `reserveOrdinals: [1]` skips
/// ordinal 1: 3 replicas are -0, -2 and -3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordered_ready_creates_one_by_one_skipping_reserved_ordinals() {
    let t = Scenario::start("asts-ordered").await;
    let api = asts(&t);
    let s = set(
        3,
        "nginx:1.25",
        json!({"podManagementPolicy": "OrderedReady", "reserveOrdinals": [1],
        "updateStrategy": {"rollingUpdate": {"maxUnavailable": null}}}),
    );
    api.create(&PostParams::default(), &s).await.unwrap();
    poll("3 ready replicas", || async {
        let s = api.get("web").await.ok()?.status?;
        (s.ready_replicas == 3).then_some(())
    })
    .await;
    let pods = t.pods().await;
    let names: Vec<&str> = pods.iter().map(|p| p.metadata.name.as_deref().unwrap()).collect();
    assert_eq!(names, ["web-0", "web-2", "web-3"]);
    // Each pod was created only once the one before it was ready.
    let mut created: Vec<_> = pods.iter().map(|p| (p.metadata.creation_timestamp.clone().unwrap().0, p)).collect();
    created.sort_by_key(|(at, _)| *at);
    for pair in created.windows(2) {
        let ready_at = pair[0]
            .1
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
            .and_then(|c| c.last_transition_time.clone())
            .unwrap()
            .0;
        assert!(
            pair[1].0 >= ready_at,
            "{:?} created before {:?} was ready",
            pair[1].1.metadata.name,
            pair[0].1.metadata.name
        );
    }
    assert_eq!(t.history.created().await, 3);
}

/// Faults never produce an extra or a missing pod: a Parallel set scales up, rolls out a recreate
/// update (env change) and an in-place one, and scales down, while a third of its writes answer
/// 409 or 429 and its watches lag and are cut. Exactly the expected pods are ever created, each
/// ordinal has one pod at a time (the API server refuses a second pod of one name; the planner
/// must never create another name), and the end state is exact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_never_produce_an_extra_or_a_missing_pod() {
    use kruise_testenv::{Share, WriteFault};
    use std::time::Duration;
    let t = Scenario::start_behind_fault_proxy("asts-faults").await;
    let proxy = t.proxy.as_ref().unwrap();
    let api = asts(&t);
    proxy.fail_writes(WriteFault::Conflict, Share::Probability(0.3), &["pods", "statefulsets"]);
    proxy.delay_watch_events(Duration::from_millis(500));
    api.create(
        &PostParams::default(),
        &set(4, "nginx:1.25", json!({"updateStrategy": {"rollingUpdate": {"maxUnavailable": 2}}})),
    )
    .await
    .unwrap();
    let first = poll("4 ready replicas", || async {
        let s = api.get("web").await.ok()?.status?;
        (s.ready_replicas == 4 && s.replicas == 4).then_some(s)
    })
    .await;
    proxy.cut_watches();

    // An env change cannot be in place: pods are recreated, highest ordinal first.
    // The controller's next 3 writes answer 429 (Too Many Requests).
    proxy.fail_writes(WriteFault::TooManyRequests { retry_after_seconds: 1 }, Share::Next(3), &[]);
    let env = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.25",
        "env": [{"name": "MODE", "value": "b"}]}]}}}});
    api.patch("web", &PatchParams::default(), &Patch::Merge(&env)).await.unwrap();
    proxy.cut_watches();
    let recreated = poll("4 recreated", || async {
        let s = api.get("web").await.ok()?.status?;
        (s.update_revision != first.update_revision
            && s.updated_ready_replicas == 4
            && s.ready_replicas == 4
            && s.replicas == 4)
            .then_some(s)
    })
    .await;

    // An image change goes in place; then scale down to 2.
    proxy.fail_writes(WriteFault::Conflict, Share::Probability(0.3), &["pods", "statefulsets"]);
    let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26",
        "env": [{"name": "MODE", "value": "b"}]}]}}}});
    api.patch("web", &PatchParams::default(), &Patch::Merge(&image)).await.unwrap();
    poll("4 updated in place", || async {
        let s = api.get("web").await.ok()?.status?;
        (s.update_revision != recreated.update_revision && s.updated_ready_replicas == 4 && s.ready_replicas == 4)
            .then_some(())
    })
    .await;
    api.patch("web", &PatchParams::default(), &Patch::Merge(&json!({"spec": {"replicas": 2}}))).await.unwrap();
    poll("2 replicas", || async {
        let s = api.get("web").await.ok()?.status?;
        (s.replicas == 2 && s.ready_replicas == 2 && s.current_revision == s.update_revision).then_some(())
    })
    .await;
    proxy.heal();
    let counts = proxy.counts();
    assert!(counts.conflicts > 0 && counts.throttled > 0, "the faults happened: {counts:?}");
    assert!(counts.delayed_events > 0 && counts.cut_watches > 0, "{counts:?}");

    // 4 pods, 4 recreated for the env change, none for the image change.
    assert_eq!(t.history.created().await, 8, "no pod was doubled: {:?}", t.history.names());
    t.history.assert_never_more_live_than(4).await;
    let pods = t.pods().await;
    let names: Vec<&str> = pods.iter().map(|p| p.metadata.name.as_deref().unwrap()).collect();
    assert_eq!(names, ["web-0", "web-1"]);
    for p in &pods {
        assert_eq!(p.spec.as_ref().unwrap().containers[0].image.as_deref(), Some("nginx:1.26"));
    }
    eprintln!("faults injected: {counts:?}");
}
