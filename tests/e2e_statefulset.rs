//! The Advanced StatefulSet controller end to end on the real control plane of `testenv/` (issue
//! 27): deploy/'s CRDs, the reconcilers run in-process scoped to the test's namespace (the shared
//! harness of `e2e_cloneset_support`), and a watcher recording every pod state, so assertions
//! hold for every moment it saw, not only the end state, and about the order it saw things in
//! (which pod was recreated or updated first). Covered: in-place updates within maxUnavailable
//! above a partition, OrderedReady creation with reserveOrdinals, `ordinals.start`, PVC retention
//! on scale-down and set deletion, scale-up within `scaleStrategy.maxUnavailable`, recreate order,
//! weight priorities, faults, and (in `e2e_statefulset_takeover/`) the takeover of a set Go kruise
//! left.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_cloneset_support;
mod e2e_statefulset_takeover;

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
    named_set("web", replicas, image, extra)
}

/// [`set`] named `name`, its pods labelled `app: <name>`.
fn named_set(name: &str, replicas: i32, image: &str, extra: Value) -> StatefulSet {
    let mut spec = json!({
        "replicas": replicas,
        "serviceName": name,
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
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
        "metadata": {"name": name}, "spec": spec,
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

/// Polls until set `name` has `n` replicas, all ready and at the update revision.
async fn wait_rolled_out(
    api: &Api<StatefulSet>,
    name: &str,
    n: i32,
) -> kruise::apis::statefulset::v1beta1::StatefulSetStatus {
    poll(&format!("{name}: {n} ready replicas at the update revision"), || async {
        let s = api.get(name).await.ok()?.status?;
        (s.replicas == n
            && s.ready_replicas == n
            && s.updated_ready_replicas == n
            && s.current_revision == s.update_revision)
            .then_some(s)
    })
    .await
}

fn names(pods: &[Pod]) -> Vec<String> {
    pods.iter().map(|p| p.metadata.name.clone().unwrap()).collect()
}

/// `ordinals.start: 5` (gate StatefulSetStartOrdinal, alpha and off by default as in kruise,
/// turned on as `--feature-gates=StatefulSetStartOrdinal=true` turns it on) numbers 3 replicas
/// 5, 6 and 7: names, the pod-name and pod-index labels and the hostnames follow, no pod of a
/// lower ordinal is ever created, and scaling down removes the highest ordinal. Moving the start
/// to 3 (2 replicas: ordinals 3 and 4) condemns web-5 and web-6 and creates web-3 and web-4;
/// adding `reserveOrdinals: [4]` then moves the second replica to web-5.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ordinals_start_numbers_pods_from_the_start_ordinal() {
    let t = Scenario::start_with_gates("asts-start", "StatefulSetStartOrdinal=true").await;
    let api = asts(&t);
    api.create(&PostParams::default(), &set(3, "nginx:1.25", json!({"ordinals": {"start": 5}}))).await.unwrap();
    wait_rolled_out(&api, "web", 3).await;
    let pods = t.pods().await;
    assert_eq!(names(&pods), ["web-5", "web-6", "web-7"]);
    for p in &pods {
        let name = p.metadata.name.clone().unwrap();
        let spec = p.spec.as_ref().unwrap();
        assert_eq!(label(p, "statefulset.kubernetes.io/pod-name"), name);
        assert_eq!(label(p, "apps.kubernetes.io/pod-index"), name.trim_start_matches("web-"));
        assert_eq!((spec.hostname.as_deref(), spec.subdomain.as_deref()), (Some(name.as_str()), Some("web")));
    }
    let mut ever = t.history.names();
    ever.sort();
    assert_eq!(ever, ["web-5", "web-6", "web-7"], "no other pod was ever created");

    let kept: BTreeMap<String, String> =
        pods.iter().map(|p| (p.metadata.name.clone().unwrap(), p.metadata.uid.clone().unwrap())).collect();
    api.patch("web", &PatchParams::default(), &Patch::Merge(&json!({"spec": {"replicas": 2}}))).await.unwrap();
    wait_rolled_out(&api, "web", 2).await;
    let pods = t.eventually("web-7 gone", |pods| (pods.len() == 2).then(|| pods.to_vec())).await;
    assert_eq!(names(&pods), ["web-5", "web-6"]);
    for p in &pods {
        assert_eq!(p.metadata.uid, kept.get(p.metadata.name.as_deref().unwrap()).cloned(), "kept its pod");
    }
    assert_eq!(t.history.created().await, 3);

    api.patch("web", &PatchParams::default(), &Patch::Merge(&json!({"spec": {"ordinals": {"start": 3}}})))
        .await
        .unwrap();
    let pods = t
        .eventually("web-3 and web-4 ready, no other", |pods| {
            (names(pods) == ["web-3", "web-4"] && all_ready(pods)).then(|| pods.to_vec())
        })
        .await;
    wait_rolled_out(&api, "web", 2).await;
    assert_eq!(t.history.created().await, 5, "{:?}", t.history.names());
    let (three, four) = (pods[0].metadata.uid.clone(), pods[1].metadata.uid.clone());

    let reserve = json!({"spec": {"reserveOrdinals": [4]}});
    api.patch("web", &PatchParams::default(), &Patch::Merge(&reserve)).await.unwrap();
    let pods = t
        .eventually("web-3 and web-5 ready, no other", |pods| {
            (names(pods) == ["web-3", "web-5"] && all_ready(pods)).then(|| pods.to_vec())
        })
        .await;
    assert_eq!(pods[0].metadata.uid, three, "web-3 kept");
    assert_ne!(pods[1].metadata.uid, four);
    assert_eq!(label(&pods[1], "apps.kubernetes.io/pod-index"), "5");
    assert_eq!(t.history.created().await, 6, "{:?}", t.history.names());
}

/// `scaleStrategy.maxUnavailable: 2` under Parallel: with pods taking 1.5s to become ready, a set
/// of 6 is created two pods at a time — never more than 2 unready pods at any moment the
/// watcher saw — where Parallel alone creates all 6 at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_scale_up_keeps_within_scale_max_unavailable() {
    use kruise_testenv::KubeletSettings;
    let t = Scenario::start("asts-scale").await;
    let slow = KubeletSettings { ready_delay: std::time::Duration::from_millis(1500), ..KubeletSettings::default() };
    cluster().kubelet().configure_namespace(t.ns(), slow);
    t.history.mark().await;
    let api = asts(&t);
    let s = set(6, "nginx:1.25", json!({"scaleStrategy": {"maxUnavailable": 2}}));
    api.create(&PostParams::default(), &s).await.unwrap();
    wait_rolled_out(&api, "web", 6).await;
    let unready = t.history.max_unready().await;
    cluster().kubelet().forget_namespace(t.ns());
    assert_eq!(unready, 2, "two pods at a time, never more");
    assert_eq!(t.history.created().await, 6);
}

/// A set of `replicas` with a claim template `data` (1Gi, the cluster's default StorageClass,
/// which the simulated provisioner serves) mounted at /data, and the retention policy
/// `whenDeleted: when_deleted`, `whenScaled: when_scaled`.
fn set_with_claims(name: &str, replicas: i32, when_deleted: &str, when_scaled: &str) -> StatefulSet {
    named_set(
        name,
        replicas,
        "nginx:1.25",
        json!({
            "template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.25",
                "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}],
            "persistentVolumeClaimRetentionPolicy": {"whenDeleted": when_deleted, "whenScaled": when_scaled},
        }),
    )
}

fn claim_owners(claim: &k8s_openapi::api::core::v1::PersistentVolumeClaim) -> Vec<(String, String)> {
    claim.metadata.owner_references.iter().flatten().map(|o| (o.kind.clone(), o.name.clone())).collect()
}

/// `persistentVolumeClaimRetentionPolicy.whenScaled` (gate StatefulSetAutoDeletePVC, on by
/// default): two sets of 3 with a claim template scale down to 1. `Delete` has the condemned pods'
/// claims deleted (owned by their pods, collected with them) and leaves the live pod's claim
/// unowned; `Retain` keeps every claim. Scaled back up, the `Delete` set's new pods get new
/// claims, the `Retain` set's pods mount their old ones; both report their 3 claims bound in
/// `status.volumeClaims`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_scaled_delete_removes_the_condemned_claims_and_retain_keeps_them() {
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    let t = Scenario::start("asts-pvc").await;
    let api = asts(&t);
    let claims_api: Api<PersistentVolumeClaim> = Api::namespaced(t.client.clone(), t.ns());
    api.create(&PostParams::default(), &set_with_claims("del", 3, "Retain", "Delete")).await.unwrap();
    api.create(&PostParams::default(), &set_with_claims("keep", 3, "Retain", "Retain")).await.unwrap();
    wait_rolled_out(&api, "del", 3).await;
    wait_rolled_out(&api, "keep", 3).await;
    let before = t.claims().await;
    let expected: Vec<String> =
        ["del", "keep"].iter().flat_map(|s| (0..3).map(move |i| format!("data-{s}-{i}"))).collect();
    assert_eq!(before.keys().cloned().collect::<Vec<_>>(), expected);
    for p in t.pods().await {
        let claim = format!("data-{}", p.metadata.name.as_deref().unwrap());
        let volumes = p.spec.as_ref().unwrap().volumes.clone().unwrap_or_default();
        assert!(
            volumes.iter().any(|v| v.persistent_volume_claim.as_ref().is_some_and(|c| c.claim_name == claim)),
            "{:?} mounts {claim}",
            p.metadata.name
        );
    }

    for name in ["del", "keep"] {
        api.patch(name, &PatchParams::default(), &Patch::Merge(&json!({"spec": {"replicas": 1}}))).await.unwrap();
    }
    wait_rolled_out(&api, "del", 1).await;
    wait_rolled_out(&api, "keep", 1).await;
    t.eventually("the condemned pods gone", |pods| (pods.len() == 2).then_some(())).await;
    assert_eq!(names(&t.pods().await), ["del-0", "keep-0"]);
    let after = poll("the condemned claims of del deleted", || async {
        let c = t.claims().await;
        (!c.contains_key("data-del-1") && !c.contains_key("data-del-2")).then_some(c)
    })
    .await;
    assert_eq!(after.get("data-del-0"), before.get("data-del-0"), "the live pod's claim is kept");
    for i in 0..3 {
        let name = format!("data-keep-{i}");
        assert_eq!(after.get(&name), before.get(&name), "{name} retained");
    }
    let owners = claim_owners(&claims_api.get("data-del-0").await.unwrap());
    assert!(owners.is_empty(), "a live replica's claim is not owned: {owners:?}");
    for i in 1..3 {
        let name = format!("data-keep-{i}");
        let owners = claim_owners(&claims_api.get(&name).await.unwrap());
        assert!(owners.is_empty(), "{name}: Retain sets no owner: {owners:?}");
    }

    for name in ["del", "keep"] {
        api.patch(name, &PatchParams::default(), &Patch::Merge(&json!({"spec": {"replicas": 3}}))).await.unwrap();
    }
    wait_rolled_out(&api, "del", 3).await;
    wait_rolled_out(&api, "keep", 3).await;
    let again = t.claims().await;
    assert_eq!(again.keys().cloned().collect::<Vec<_>>(), expected);
    for i in 0..3 {
        let (del, keep) = (format!("data-del-{i}"), format!("data-keep-{i}"));
        assert_eq!(again[&keep], before[&keep], "{keep} is mounted again");
        if i == 0 {
            assert_eq!(again[&del], before[&del]);
        } else {
            assert_ne!(again[&del], before[&del], "{del} was created anew, not reused");
        }
    }
    // `status.volumeClaims`: the 3 claims of each set compatible with the template and bound.
    for name in ["del", "keep"] {
        poll(&format!("{name}: 3 compatible ready claims in the status"), || async {
            let claims = api.get(name).await.ok()?.status?.volume_claims;
            let c = claims.first()?;
            (claims.len() == 1
                && c.volume_claim_name == "data"
                && c.compatible_replicas == 3
                && c.compatible_ready_replicas == 3)
                .then_some(())
        })
        .await;
    }
}

/// `whenDeleted: Delete` has the set own its claims, so they go with it; `Retain` leaves them
/// unowned, and they outlive their set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_deleted_delete_has_the_claims_go_with_the_set_and_retain_keeps_them() {
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    use kube::api::DeleteParams;
    let t = Scenario::start("asts-pvc-del").await;
    let api = asts(&t);
    let claims_api: Api<PersistentVolumeClaim> = Api::namespaced(t.client.clone(), t.ns());
    api.create(&PostParams::default(), &set_with_claims("gone", 2, "Delete", "Retain")).await.unwrap();
    api.create(&PostParams::default(), &set_with_claims("stay", 2, "Retain", "Retain")).await.unwrap();
    wait_rolled_out(&api, "gone", 2).await;
    wait_rolled_out(&api, "stay", 2).await;
    for i in 0..2 {
        let name = format!("data-gone-{i}");
        let owners = poll(&format!("{name} owned by its set"), || async {
            let owners = claim_owners(&claims_api.get(&name).await.ok()?);
            (!owners.is_empty()).then_some(owners)
        })
        .await;
        assert_eq!(owners, [("StatefulSet".to_string(), "gone".to_string())]);
        let name = format!("data-stay-{i}");
        let owners = claim_owners(&claims_api.get(&name).await.unwrap());
        assert!(owners.is_empty(), "{name}: {owners:?}");
    }
    let before = t.claims().await;
    for name in ["gone", "stay"] {
        api.delete(name, &DeleteParams::background()).await.unwrap();
    }
    t.eventually("the pods of both sets collected", |pods| pods.is_empty().then_some(())).await;
    let after = poll("the claims of gone collected", || async {
        let c = t.claims().await;
        c.keys().all(|k| !k.starts_with("data-gone-")).then_some(c)
    })
    .await;
    let stay: BTreeMap<String, String> = before.into_iter().filter(|(k, _)| k.starts_with("data-stay-")).collect();
    assert_eq!(after, stay, "the claims of stay outlive it");
}

/// The pods' deletions (first seen terminating or gone) and creations, in the order the watcher
/// saw them, as `-name` and `+name`, from the log index `from` on.
async fn recreations(t: &Scenario, from: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut terminating = std::collections::BTreeSet::new();
    for e in &t.history.log().await[from..] {
        match e.kind {
            PodEventKind::Added => out.push(format!("+{}", e.name())),
            PodEventKind::Modified | PodEventKind::Deleted
                if (e.terminating() || e.kind == PodEventKind::Deleted) && terminating.insert(e.uid().to_string()) =>
            {
                out.push(format!("-{}", e.name()))
            }
            _ => {}
        }
    }
    out
}

/// An env change cannot be made in place: each pod is deleted and created again at the update
/// revision, highest ordinal first, the next one only once the one before is back and ready.
async fn env_change_recreates_highest_ordinal_first(prefix: &str, extra: Value) {
    let t = Scenario::start(prefix).await;
    let api = asts(&t);
    api.create(&PostParams::default(), &set(3, "nginx:1.25", extra)).await.unwrap();
    let first = wait_rolled_out(&api, "web", 3).await;
    let before = by_name(&t.pods().await);
    t.history.mark().await;
    let from = t.history.seen();
    let env = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.25",
        "env": [{"name": "MODE", "value": "b"}]}]}}}});
    api.patch("web", &PatchParams::default(), &Patch::Merge(&env)).await.unwrap();
    poll("3 recreated pods ready", || async {
        let s = api.get("web").await.ok()?.status?;
        (s.update_revision != first.update_revision
            && s.current_revision == s.update_revision
            && s.updated_ready_replicas == 3
            && s.ready_replicas == 3)
            .then_some(())
    })
    .await;
    assert_eq!(recreations(&t, from).await, ["-web-2", "+web-2", "-web-1", "+web-1", "-web-0", "+web-0"]);
    let pods = t.pods().await;
    for p in &pods {
        let name = p.metadata.name.clone().unwrap();
        assert_ne!(p.metadata.uid.as_ref(), Some(&before[&name].0), "{name} is a new pod");
        let env = p.spec.as_ref().unwrap().containers[0].env.clone().unwrap_or_default();
        assert_eq!(
            env.iter().map(|e| (e.name.as_str(), e.value.as_deref())).collect::<Vec<_>>(),
            [("MODE", Some("b"))]
        );
    }
    t.history.assert_at_most_unready(1).await;
    assert_eq!(t.history.created().await, 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_env_change_recreates_pods_highest_ordinal_first_under_parallel() {
    env_change_recreates_highest_ordinal_first("asts-env-par", json!({})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_env_change_recreates_pods_highest_ordinal_first_under_ordered_ready() {
    env_change_recreates_highest_ordinal_first(
        "asts-env-ord",
        json!({"podManagementPolicy": "OrderedReady", "updateStrategy": {"rollingUpdate": {"maxUnavailable": null}}}),
    )
    .await;
}

/// `unorderedUpdate.priorityStrategy.weightPriority` under Parallel: with web-0 and web-1
/// labelled `tier=hot` (weight 50), an in-place image update goes web-1, web-0 (the weighted
/// pods, ordinal descending between equals), then web-3, web-2 — where the ordinal order would
/// have been 3, 2, 1, 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weight_priority_updates_the_heavier_pods_first() {
    let t = Scenario::start("asts-weight").await;
    let api = asts(&t);
    let strategy = json!({"updateStrategy": {"rollingUpdate": {"unorderedUpdate": {"priorityStrategy": {
        "weightPriority": [{"weight": 50, "matchSelector": {"matchLabels": {"tier": "hot"}}}]}}}}});
    api.create(&PostParams::default(), &set(4, "nginx:1.25", strategy)).await.unwrap();
    wait_rolled_out(&api, "web", 4).await;
    let pods_api: Api<Pod> = Api::namespaced(t.client.clone(), t.ns());
    for name in ["web-0", "web-1"] {
        let labels = json!({"metadata": {"labels": {"tier": "hot"}}});
        pods_api.patch(name, &PatchParams::default(), &Patch::Merge(&labels)).await.unwrap();
    }
    poll("the watcher to see the labels", || async {
        let log = t.history.log().await;
        let hot: std::collections::BTreeSet<&str> =
            log.iter().filter(|e| label(&e.pod, "tier") == "hot").map(|e| e.name()).collect();
        (hot.len() == 2).then_some(())
    })
    .await;
    let before = by_name(&t.pods().await);
    t.history.mark().await;
    let from = t.history.seen();
    let first = api.get("web").await.unwrap().status.unwrap();
    let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}});
    api.patch("web", &PatchParams::default(), &Patch::Merge(&image)).await.unwrap();
    poll("4 pods updated and ready", || async {
        let s = api.get("web").await.ok()?.status?;
        (s.update_revision != first.update_revision
            && s.current_revision == s.update_revision
            && s.updated_ready_replicas == 4
            && s.ready_replicas == 4)
            .then_some(())
    })
    .await;
    let mut order: Vec<String> = Vec::new();
    for e in &t.history.log().await[from..] {
        if e.image() == "nginx:1.26" && !order.iter().any(|n| n == e.name()) {
            order.push(e.name().to_string());
        }
    }
    assert_eq!(order, ["web-1", "web-0", "web-3", "web-2"]);
    let after = by_name(&t.pods().await);
    for (name, (uid, restarts, image)) in &after {
        assert_eq!(uid, &before[name].0, "{name} updated in place");
        assert_eq!((restarts, image.as_str()), (&(before[name].1 + 1), "nginx:1.26"), "{name}");
    }
    t.history.assert_at_most_unready(1).await;
}

/// Issue 27 item 7 (a stalled rollout explains itself): an admission policy refuses pod web-2 of a
/// set of 3; the set's status gets kruise's `FailedCreatePod` condition with the API server's
/// words, and once the policy is gone web-2 is created.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_pod_creation_sets_the_failed_create_pod_condition() {
    use k8s_openapi::api::admissionregistration::v1::{ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding};
    let t = Scenario::start("asts-refused").await;
    let name = format!("refuse-web-2-{}", t.ns());
    let policies: Api<ValidatingAdmissionPolicy> = Api::all(t.client.clone());
    let bindings: Api<ValidatingAdmissionPolicyBinding> = Api::all(t.client.clone());
    let policy = serde_json::from_value(json!({"metadata": {"name": name}, "spec": {
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
            "operations": ["CREATE"], "resources": ["pods"]}]},
        "validations": [{"expression": "!(object.metadata.name in ['web-2', 'probe'])",
            "message": "pod name refused by the test's policy"}]}}))
    .unwrap();
    policies.create(&PostParams::default(), &policy).await.unwrap();
    let binding = serde_json::from_value(json!({"metadata": {"name": name}, "spec": {
        "policyName": name, "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": t.ns()}}}}}))
    .unwrap();
    bindings.create(&PostParams::default(), &binding).await.unwrap();
    // The policy takes effect once the API server has loaded it: a probe pod is refused.
    let pods: Api<Pod> = Api::namespaced(t.client.clone(), t.ns());
    let probe: Pod = serde_json::from_value(
        json!({"metadata": {"name": "probe"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}),
    )
    .unwrap();
    poll("the policy to refuse pods", || async {
        match pods.create(&PostParams::default(), &probe).await {
            Err(kube::Error::Api(e)) if e.code == 422 || e.code == 403 => Some(()),
            Ok(_) => {
                let _ = pods.delete("probe", &Default::default()).await;
                None
            }
            Err(_) => None,
        }
    })
    .await;

    let api = asts(&t);
    api.create(&PostParams::default(), &set(3, "nginx:1.25", json!({}))).await.unwrap();
    let condition = poll("the FailedCreatePod condition", || async {
        let s = api.get("web").await.ok()?.status?;
        s.conditions.into_iter().find(|c| c.type_ == "FailedCreatePod")
    })
    .await;
    assert_eq!(condition.status, "True");
    let message = condition.message.unwrap_or_default();
    assert!(message.starts_with("StatefulPodControl failed to create Pod error: "), "{message}");
    assert!(message.contains("pod name refused by the test's policy"), "{message}");
    // The set's pods (a probe created before the policy loaded may still be terminating).
    let names = |pods: Vec<Pod>| -> Vec<String> {
        pods.iter().map(|p| p.metadata.name.clone().unwrap()).filter(|n| n.starts_with("web-")).collect()
    };
    assert!(!names(t.pods().await).contains(&"web-2".to_string()), "the policy holds web-2 back");

    bindings.delete(&name, &Default::default()).await.unwrap();
    policies.delete(&name, &Default::default()).await.unwrap();
    poll("3 ready replicas once the policy is gone", || async {
        let s = api.get("web").await.ok()?.status?;
        (s.ready_replicas == 3).then_some(())
    })
    .await;
    assert_eq!(names(t.pods().await), ["web-0", "web-1", "web-2"]);
}

/// Issue 27 item 5 on the real API server: with `StatefulSetAutoResizePVCGate` and
/// `volumeClaimUpdateStrategy: OnPodRollingUpdate`, a template of 2Gi instead of 1Gi and a new
/// image expand each target's claim first (the apiserver accepts the bound claim's growth: the
/// default StorageClass allows expansion), the pod waits until the driver has resized it (the
/// test plays the driver: volume and claim capacity to 2Gi), then it is updated in place; highest
/// ordinal first, one at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_are_expanded_before_their_pods_are_updated() {
    use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
    let t = Scenario::start_with_gates("asts-resize", "StatefulSetAutoResizePVCGate=true").await;
    let api = asts(&t);
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(t.client.clone(), t.ns());
    let volumes: Api<PersistentVolume> = Api::all(t.client.clone());
    let mut web = set_with_claims("web", 2, "Retain", "Retain");
    web.spec.volume_claim_update_strategy.type_ = "OnPodRollingUpdate".into();
    api.create(&PostParams::default(), &web).await.unwrap();
    wait_rolled_out(&api, "web", 2).await;
    let before = by_name(&t.pods().await);
    let request = |c: &PersistentVolumeClaim| {
        c.spec.as_ref().unwrap().resources.as_ref().unwrap().requests.as_ref().unwrap()["storage"].0.clone()
    };
    let image = |name: &'static str| {
        let t = &t;
        async move {
            let pods = t.pods().await;
            let pod = pods.iter().find(|p| p.metadata.name.as_deref() == Some(name)).unwrap();
            pod.spec.as_ref().unwrap().containers[0].image.clone().unwrap()
        }
    };
    let grow = json!({"spec": {
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}}}],
        "template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26",
            "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]}}}});
    api.patch("web", &PatchParams::default(), &Patch::Merge(&grow)).await.unwrap();

    for (pod, claim) in [("web-1", "data-web-1"), ("web-0", "data-web-0")] {
        let expanded = poll(&format!("{claim} expanded to 2Gi"), || async {
            let c = claims.get(claim).await.ok()?;
            (request(&c) == "2Gi").then_some(c)
        })
        .await;
        let annotations = expanded.metadata.annotations.clone().unwrap_or_default();
        assert_eq!(annotations.get("apps.kruise.io/owned-by-asts").map(String::as_str), Some("web"));
        assert_eq!(image(pod).await, "nginx:1.25", "{pod} waits for its claim's resize");
        if claim == "data-web-1" {
            let other = claims.get("data-web-0").await.unwrap();
            assert_eq!(request(&other), "1Gi", "maxUnavailable 1: web-0's claim waits for web-1");
        }
        // The driver's part: the volume and the claim's capacity grow.
        let volume = expanded.spec.as_ref().unwrap().volume_name.clone().unwrap();
        let capacity = json!({"spec": {"capacity": {"storage": "2Gi"}}});
        volumes.patch(&volume, &PatchParams::default(), &Patch::Merge(&capacity)).await.unwrap();
        let status = json!({"status": {"capacity": {"storage": "2Gi"}}});
        claims.patch_status(claim, &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
        poll(&format!("{pod} updated once its claim is resized"), || async {
            (image(pod).await == "nginx:1.26").then_some(())
        })
        .await;
    }
    let done = wait_rolled_out(&api, "web", 2).await;
    assert_eq!(
        done.volume_claims.iter().map(|v| (v.compatible_replicas, v.compatible_ready_replicas)).collect::<Vec<_>>(),
        [(2, 2)]
    );
    let after = by_name(&t.pods().await);
    for (name, (uid, _, _)) in &before {
        assert_eq!(&after[name].0, uid, "{name} updated in place");
    }
}
