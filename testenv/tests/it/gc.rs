//! Garbage collection through ownerReferences (background, orphan, foreground), dangling owner
//! references, and namespace deletion removing the namespace's content.

use crate::common::*;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kruise_testenv::TestEnv;
use kube::api::{Api, DeleteParams, PostParams, PropagationPolicy, Resource};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::json;

fn owned_pod(name: &str, owner: &ConfigMap) -> Pod {
    let owner_ref = owner.controller_owner_ref(&()).unwrap();
    serde_json::from_value(json!({
        "metadata": {"name": name, "ownerReferences": [owner_ref]},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}
    }))
    .unwrap()
}

async fn owner(api: &Api<ConfigMap>, name: &str) -> ConfigMap {
    api.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": name}})).unwrap())
        .await
        .unwrap()
}

async fn gone<K>(api: &Api<K>, name: &str)
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let uid = match api.get_opt(name).await.unwrap() {
        Some(o) => o.meta().uid.clone().unwrap(),
        None => return,
    };
    within(&format!("{name} to be deleted"), await_condition(api.clone(), name, conditions::is_deleted(&uid)))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owned_objects_follow_their_owners() {
    let env = TestEnv::start().await.unwrap();
    let client = env.client().unwrap();
    let owners: Api<ConfigMap> = Api::default_namespaced(client.clone());
    let pods: Api<Pod> = Api::default_namespaced(client.clone());

    // Background (the default): the owner goes at once, its pods after it.
    let bg = owner(&owners, "bg").await;
    for i in 0..3 {
        pods.create(&PostParams::default(), &owned_pod(&format!("bg-{i}"), &bg)).await.unwrap();
    }
    owners.delete("bg", &DeleteParams::default()).await.unwrap();
    for i in 0..3 {
        gone(&pods, &format!("bg-{i}")).await;
    }

    // Orphan: the pods stay, without the owner reference.
    let orphan = owner(&owners, "orphan").await;
    pods.create(&PostParams::default(), &owned_pod("orphan-0", &orphan)).await.unwrap();
    owners
        .delete("orphan", &DeleteParams { propagation_policy: Some(PropagationPolicy::Orphan), ..Default::default() })
        .await
        .unwrap();
    gone(&owners, "orphan").await;
    let kept = pods.get("orphan-0").await.unwrap();
    assert!(kept.metadata.owner_references.unwrap_or_default().is_empty());

    // Foreground: the owner waits, marked for deletion, until its dependents are gone.
    let fg = owner(&owners, "fg").await;
    pods.create(&PostParams::default(), &owned_pod("fg-0", &fg)).await.unwrap();
    owners.delete("fg", &DeleteParams::foreground()).await.unwrap();
    gone(&pods, "fg-0").await;
    gone(&owners, "fg").await;

    // A dangling reference (owner uid that never existed) is garbage too.
    let mut ghost = fg.clone();
    ghost.metadata.uid = Some("00000000-0000-4000-8000-000000000000".into());
    pods.create(&PostParams::default(), &owned_pod("dangling", &ghost)).await.unwrap();
    gone(&pods, "dangling").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_namespace_deletes_its_content() {
    let env = TestEnv::start().await.unwrap();
    let client = env.client().unwrap();
    let nss: Api<Namespace> = Api::all(client.clone());
    nss.create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "doomed"}})).unwrap())
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "doomed");
    for i in 0..3 {
        cms.create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": format!("c{i}")}})).unwrap(),
        )
        .await
        .unwrap();
    }
    nss.delete("doomed", &DeleteParams::default()).await.unwrap();
    gone(&nss, "doomed").await;
    for i in 0..3 {
        assert!(cms.get_opt(&format!("c{i}")).await.unwrap().is_none());
    }
}
