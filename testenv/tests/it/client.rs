//! The real `kube::Client` against the harness: create/get/list with selectors and pagination,
//! AlreadyExists/NotFound/Conflict as Status errors, generateName, the three patch kinds plus
//! server-side apply, status and scale subresource separation with generation, finalizers,
//! dry run, namespaces, and watches (ordering, selector transitions, 410 after compaction).

use crate::common::*;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kruise_testenv::TestEnv;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

fn cm(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}})).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_get_list_and_errors() {
    let env = TestEnv::start().await.unwrap();
    let client = env.client().unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let a = cms.create(&PostParams::default(), &cm("a", json!({"app": "x"}))).await.unwrap();
    assert!(a.metadata.uid.is_some() && a.metadata.creation_timestamp.is_some());
    let rv_a: u64 = a.metadata.resource_version.clone().unwrap().parse().unwrap();
    cms.create(&PostParams::default(), &cm("b", json!({"app": "x", "tier": "db"}))).await.unwrap();
    let c = cms.create(&PostParams::default(), &cm("c", json!({"app": "y"}))).await.unwrap();
    assert!(
        c.metadata.resource_version.unwrap().parse::<u64>().unwrap() > rv_a,
        "resourceVersion is cluster-wide monotonic"
    );

    let dup = api_error(cms.create(&PostParams::default(), &cm("a", json!({}))).await.unwrap_err());
    assert_eq!((dup.code, dup.reason.as_str()), (409, "AlreadyExists"));
    assert_eq!(dup.message, "configmaps \"a\" already exists");
    let missing = api_error(cms.get("nope").await.unwrap_err());
    assert_eq!((missing.code, missing.reason.as_str()), (404, "NotFound"));
    assert_eq!(missing.message, "configmaps \"nope\" not found");

    let mut generated = cm("", json!({}));
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("gen-".into());
    let g = cms.create(&PostParams::default(), &generated).await.unwrap();
    let gname = g.metadata.name.unwrap();
    assert!(gname.starts_with("gen-") && gname.len() == 9, "{gname}");

    let names = |l: kube::core::ObjectList<ConfigMap>| {
        l.items.into_iter().map(|c| c.metadata.name.unwrap()).collect::<Vec<_>>()
    };
    assert_eq!(names(cms.list(&ListParams::default().labels("app=x")).await.unwrap()), ["a", "b"]);
    assert_eq!(names(cms.list(&ListParams::default().labels("app in (x,y),tier!=db")).await.unwrap()), ["a", "c"]);
    assert_eq!(names(cms.list(&ListParams::default().fields("metadata.name=b")).await.unwrap()), ["b"]);
    let all: Api<ConfigMap> = Api::all(client.clone());
    assert_eq!(all.list(&ListParams::default().fields("metadata.namespace=default")).await.unwrap().items.len(), 4);
    assert!(all.list(&ListParams::default().fields("metadata.namespace=kube-system")).await.unwrap().items.is_empty());

    // Pagination.
    let page1 = cms.list(&ListParams::default().limit(3)).await.unwrap();
    assert_eq!(page1.items.len(), 3);
    let token = page1.metadata.continue_.clone().unwrap();
    let page2 = cms.list(&ListParams::default().limit(3).continue_token(&token)).await.unwrap();
    assert_eq!(page2.items.len(), 1);
    assert!(page2.metadata.continue_.is_none_or(|c| c.is_empty()));

    // Optimistic concurrency.
    let mut stale = cms.get("a").await.unwrap();
    let mut fresh = stale.clone();
    fresh.data = Some([("k".to_string(), "fresh".to_string())].into());
    cms.replace("a", &PostParams::default(), &fresh).await.unwrap();
    stale.data = Some([("k".to_string(), "stale".to_string())].into());
    let conflict = api_error(cms.replace("a", &PostParams::default(), &stale).await.unwrap_err());
    assert_eq!((conflict.code, conflict.reason.as_str()), (409, "Conflict"));
    assert!(conflict.message.contains("the object has been modified"), "{}", conflict.message);
    assert_eq!(cms.get("a").await.unwrap().data.unwrap()["k"], "fresh");

    // A no-op update writes nothing.
    let current = cms.get("a").await.unwrap();
    let same = cms.replace("a", &PostParams::default(), &current).await.unwrap();
    assert_eq!(same.metadata.resource_version, current.metadata.resource_version);

    // Namespaces carry their name label; objects need an existing namespace.
    let nss: Api<Namespace> = Api::all(client.clone());
    let ns = nss
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "team-a"}})).unwrap())
        .await
        .unwrap();
    assert_eq!(ns.metadata.labels.unwrap()["kubernetes.io/metadata.name"], "team-a");
    let nowhere: Api<ConfigMap> = Api::namespaced(client.clone(), "nowhere");
    let e = api_error(nowhere.create(&PostParams::default(), &cm("x", json!({}))).await.unwrap_err());
    assert_eq!(e.code, 404);

    // Dry run stores nothing.
    let dry = cms.create(&PostParams { dry_run: true, ..Default::default() }, &cm("dry", json!({}))).await.unwrap();
    assert_eq!(dry.metadata.name.as_deref(), Some("dry"));
    assert_eq!(api_error(cms.get("dry").await.unwrap_err()).code, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches_of_all_kinds() {
    let env = env_with_crd().await;
    let client = env.client().unwrap();
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p", "labels": {"a": "1"}},
        "spec": {"containers": [
            {"name": "main", "image": "nginx:1", "env": [{"name": "A", "value": "1"}]},
            {"name": "side", "image": "envoy:1"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let pp = PatchParams::default();

    let merged =
        pods.patch("p", &pp, &Patch::Merge(json!({"metadata": {"labels": {"b": "2", "a": null}}}))).await.unwrap();
    assert_eq!(merged.metadata.labels.unwrap(), [("b".to_string(), "2".to_string())].into());

    let json_patch: json_patch::Patch = serde_json::from_value(json!([
        {"op": "replace", "path": "/spec/containers/1/image", "value": "envoy:2"},
        {"op": "add", "path": "/metadata/annotations", "value": {"x": "y"}}
    ]))
    .unwrap();
    let jp = pods.patch("p", &pp, &Patch::<()>::Json(json_patch)).await.unwrap();
    assert_eq!(jp.spec.as_ref().unwrap().containers[1].image.as_deref(), Some("envoy:2"));

    let smp = pods
        .patch(
            "p",
            &pp,
            &Patch::Strategic(
                json!({"spec": {"containers": [{"name": "main", "env": [{"name": "B", "value": "2"}]}]}}),
            ),
        )
        .await
        .unwrap();
    let containers = smp.spec.unwrap().containers;
    assert_eq!(containers.len(), 2, "strategic merge keeps the other container");
    let env_names: Vec<_> = containers[0].env.clone().unwrap().into_iter().map(|e| e.name).collect();
    assert_eq!(env_names, ["A", "B"]);
    assert_eq!(containers[1].image.as_deref(), Some("envoy:2"));

    // Patches with a stale resourceVersion precondition conflict.
    let stale = api_error(
        pods.patch("p", &pp, &Patch::Merge(json!({"metadata": {"resourceVersion": "1", "labels": {"c": "3"}}})))
            .await
            .unwrap_err(),
    );
    assert_eq!(stale.code, 409);

    // Server-side apply creates, then merges.
    let cms: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let apply = PatchParams::apply("testenv-test");
    let doc = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"a": "1"}});
    cms.patch("applied", &apply, &Patch::Apply(&doc)).await.unwrap();
    let doc2 = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"b": "2"}});
    let applied = cms.patch("applied", &apply, &Patch::Apply(&doc2)).await.unwrap();
    assert_eq!(applied.data.unwrap().len(), 2);

    // Custom resources accept merge and JSON patches, not strategic ones (415, as kube-apiserver).
    let sets = clonesets(&client, "default");
    sets.create(&PostParams::default(), &cloneset("cs", 1)).await.unwrap();
    let e = api_error(sets.patch("cs", &pp, &Patch::Strategic(json!({"spec": {"replicas": 2}}))).await.unwrap_err());
    assert_eq!(e.code, 415);
    let cs = sets.patch("cs", &pp, &Patch::Merge(json!({"spec": {"replicas": 2}}))).await.unwrap();
    assert_eq!(cs.data["spec"]["replicas"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_and_scale_subresources() {
    let env = env_with_crd().await;
    let client = env.client().unwrap();
    let sets = clonesets(&client, "default");
    let mut obj = cloneset("cs", 2);
    obj.data["status"] = json!({"replicas": 99});
    let created = sets.create(&PostParams::default(), &obj).await.unwrap();
    assert!(created.data.get("status").is_none(), "status is dropped on create");
    assert_eq!(created.metadata.generation, Some(1));

    let status = sets
        .patch_status(
            "cs",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 2, "labelSelector": "app=cs"}, "spec": {"replicas": 7}})),
        )
        .await
        .unwrap();
    assert_eq!(status.data["status"]["replicas"], 2);
    assert_eq!(status.data["spec"]["replicas"], 2, "status writes touch only status");
    assert_eq!(status.metadata.generation, Some(1), "status writes do not bump generation");

    let mut main = status.clone();
    main.data["spec"]["replicas"] = json!(3);
    main.data["status"]["replicas"] = json!(0);
    let replaced = sets.replace("cs", &PostParams::default(), &main).await.unwrap();
    assert_eq!(replaced.data["status"]["replicas"], 2, "main writes never touch status");
    assert_eq!(replaced.metadata.generation, Some(2));
    let labelled = sets
        .patch("cs", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})))
        .await
        .unwrap();
    assert_eq!(labelled.metadata.generation, Some(2), "metadata changes do not bump generation");

    // A custom resource PUT needs a resourceVersion.
    let mut unversioned = labelled.clone();
    unversioned.metadata.resource_version = None;
    assert_eq!(api_error(sets.replace("cs", &PostParams::default(), &unversioned).await.unwrap_err()).code, 422);

    let scale = sets.get_scale("cs").await.unwrap();
    assert_eq!(scale.spec.unwrap().replicas, Some(3));
    assert_eq!(scale.status.unwrap().selector.as_deref(), Some("app=cs"));
    sets.patch_scale("cs", &PatchParams::default(), &Patch::Merge(json!({"spec": {"replicas": 5}}))).await.unwrap();
    let scaled = sets.get("cs").await.unwrap();
    assert_eq!(scaled.data["spec"]["replicas"], 5);
    assert_eq!(scaled.metadata.generation, Some(3));

    // Built-in status subresources behave the same way.
    let pods: Api<Pod> = Api::default_namespaced(client.clone());
    let pod: Pod = serde_json::from_value(
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}),
    )
    .unwrap();
    let p = pods.create(&PostParams::default(), &pod).await.unwrap();
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Pending"));
    let p = pods
        .patch_status(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Running"}, "metadata": {"labels": {"no": "pe"}}})),
        )
        .await
        .unwrap();
    assert_eq!(p.status.unwrap().phase.as_deref(), Some("Running"));
    assert!(p.metadata.labels.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finalizers_hold_deletion() {
    let env = TestEnv::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(env.client().unwrap());
    let mut held = cm("held", json!({}));
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    cms.create(&PostParams::default(), &held).await.unwrap();
    cms.delete("held", &DeleteParams::default()).await.unwrap();
    let deleting = cms.get("held").await.unwrap();
    assert!(deleting.metadata.deletion_timestamp.is_some());
    let e = api_error(
        cms.patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/hold", "example.com/new"]}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(e.code, 422, "no new finalizers while deleting");
    cms.patch("held", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"finalizers": null}}))).await.unwrap();
    assert_eq!(api_error(cms.get("held").await.unwrap_err()).code, 404);
    // Preconditions.
    let c = cms.create(&PostParams::default(), &cm("pre", json!({}))).await.unwrap();
    let wrong = DeleteParams {
        preconditions: Some(kube::api::Preconditions { uid: Some("other".into()), resource_version: None }),
        ..Default::default()
    };
    assert_eq!(api_error(cms.delete("pre", &wrong).await.unwrap_err()).code, 409);
    let right = DeleteParams {
        preconditions: Some(kube::api::Preconditions { uid: c.metadata.uid.clone(), resource_version: None }),
        ..Default::default()
    };
    cms.delete("pre", &right).await.unwrap();
    cms.create(&PostParams::default(), &cm("l1", json!({"del": "yes"}))).await.unwrap();
    cms.create(&PostParams::default(), &cm("l2", json!({"del": "yes"}))).await.unwrap();
    cms.delete_collection(&DeleteParams::default(), &ListParams::default().labels("del=yes")).await.unwrap();
    assert!(cms.list(&ListParams::default()).await.unwrap().items.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches() {
    let env = TestEnv::start().await.unwrap();
    let cms: Api<ConfigMap> = Api::default_namespaced(env.client().unwrap());
    cms.create(&PostParams::default(), &cm("before", json!({"w": "1"}))).await.unwrap();
    let rv = cms.list(&ListParams::default()).await.unwrap().metadata.resource_version.unwrap();
    let mut all = cms.watch(&WatchParams::default().timeout(60), &rv).await.unwrap().boxed();
    let mut selected = cms.watch(&WatchParams::default().labels("w=1").timeout(60), &rv).await.unwrap().boxed();

    cms.create(&PostParams::default(), &cm("x", json!({"w": "1"}))).await.unwrap();
    cms.patch("x", &PatchParams::default(), &Patch::Merge(json!({"data": {"k": "2"}}))).await.unwrap();
    cms.patch("x", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"labels": {"w": "2"}}}))).await.unwrap();
    cms.delete("x", &DeleteParams::default()).await.unwrap();

    let mut kinds = Vec::new();
    while kinds.len() < 4 {
        match within("watch events", all.try_next()).await.unwrap().unwrap() {
            WatchEvent::Added(o) => kinds.push(("ADDED", o.metadata.name.unwrap())),
            WatchEvent::Modified(o) => kinds.push(("MODIFIED", o.metadata.name.unwrap())),
            WatchEvent::Deleted(o) => kinds.push(("DELETED", o.metadata.name.unwrap())),
            WatchEvent::Bookmark(_) => {}
            WatchEvent::Error(e) => panic!("{e:?}"),
        }
    }
    let x = |k: &'static str| (k, "x".to_string());
    assert_eq!(kinds, [x("ADDED"), x("MODIFIED"), x("MODIFIED"), x("DELETED")]);

    let mut kinds = Vec::new();
    while kinds.len() < 3 {
        match within("selected watch events", selected.try_next()).await.unwrap().unwrap() {
            WatchEvent::Added(_) => kinds.push("ADDED"),
            WatchEvent::Modified(_) => kinds.push("MODIFIED"),
            WatchEvent::Deleted(_) => kinds.push("DELETED"),
            _ => {}
        }
    }
    assert_eq!(kinds, ["ADDED", "MODIFIED", "DELETED"], "leaving the selection is a DELETED event");

    // Bookmarks keep an idle watcher's resourceVersion current.
    let now = env.resource_version().to_string();
    let mut idle = cms.watch(&WatchParams::default().timeout(60), &now).await.unwrap().boxed();
    let ev = within("a bookmark", idle.try_next()).await.unwrap().unwrap();
    assert!(matches!(ev, WatchEvent::Bookmark(_)), "{ev:?}");

    // After compaction, resuming from an old version is 410 Gone.
    env.compact_history();
    let mut gone = cms.watch(&WatchParams::default().timeout(60), &rv).await.unwrap().boxed();
    match within("a 410", gone.try_next()).await.unwrap().unwrap() {
        WatchEvent::Error(e) => assert_eq!(e.code, 410),
        other => panic!("expected 410, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeconfig_works_for_kube_clients() {
    let env = TestEnv::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    env.write_kubeconfig(&path).unwrap();
    let kubeconfig = kube::config::Kubeconfig::read_from(&path).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await.unwrap();
    assert_eq!(config.default_namespace, "default");
    let client = kube::Client::try_from(config).unwrap();
    let version = client.apiserver_version().await.unwrap();
    assert_eq!(version.major, "1");
    let nss: Api<Namespace> = Api::all(client);
    let names: Vec<_> =
        nss.list(&ListParams::default()).await.unwrap().items.into_iter().map(|n| n.metadata.name.unwrap()).collect();
    assert_eq!(names, ["default", "kube-node-lease", "kube-public", "kube-system"]);
}
