//! What the real API server enforces that a controller must live with: CRD structural schemas,
//! finalizers through kube-runtime's helper, server-side apply ownership, RBAC, and garbage
//! collection by the controller-manager.

use crate::common::{cluster, crds, eventually, repo};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{Event, finalizer};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

fn clonesets(client: kube::Client, ns: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apps.kruise.io", "v1alpha1", "CloneSet"),
        "clonesets",
    );
    Api::namespaced_with(client, ns, &ar)
}

fn cloneset(name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx"}]}
            }
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn status_fields_the_crd_schema_does_not_declare_are_pruned() {
    crds().await;
    let c = cluster();
    let ns = c.namespace("api-prune").await.unwrap();
    let api = clonesets(c.client().await.unwrap(), ns.name());
    api.create(&PostParams::default(), &cloneset("web")).await.unwrap();
    let status = json!({"status": {"replicas": 3, "observedGeneration": 1, "bogusField": "dropped"}});
    api.patch_status("web", &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
    let stored = api.get("web").await.unwrap();
    assert_eq!(stored.data["status"]["replicas"], 3);
    assert!(stored.data["status"].get("bogusField").is_none(), "pruned: {}", stored.data["status"]);
    // And a type the schema refuses is refused.
    let wrong = json!({"spec": {"replicas": "three"}});
    match api.patch("web", &PatchParams::default(), &Patch::Merge(&wrong)).await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 422, "{s:?}"),
        other => panic!("a string for replicas must be refused, got {other:?}"),
    }
}

#[tokio::test]
async fn kube_runtime_finalizer_adds_and_removes_its_finalizer() {
    crds().await;
    let c = cluster();
    let ns = c.namespace("api-finalizer").await.unwrap();
    let api = clonesets(c.client().await.unwrap(), ns.name());
    api.create(&PostParams::default(), &cloneset("web")).await.unwrap();
    const NAME: &str = "apps.kruise.io/testenv-cleanup";
    // Which branch ran, told apart by the requeue each returns.
    const APPLIED: Action = Action::requeue(Duration::from_secs(1));
    const CLEANED: Action = Action::requeue(Duration::from_secs(2));
    let run = |obj: DynamicObject| {
        let api = api.clone();
        async move {
            finalizer(&api, NAME, Arc::new(obj), |event| async move {
                Ok::<_, std::convert::Infallible>(match event {
                    Event::Apply(_) => APPLIED,
                    Event::Cleanup(_) => CLEANED,
                })
            })
            .await
        }
    };
    // The first call only adds the finalizer (a JSON patch with `test /metadata/finalizers`
    // against a missing list, which the real apiserver accepts).
    run(api.get("web").await.unwrap()).await.unwrap();
    let obj = api.get("web").await.unwrap();
    assert_eq!(obj.metadata.finalizers.as_deref(), Some(&[NAME.to_string()][..]));
    assert_eq!(run(obj).await.unwrap(), APPLIED);
    api.delete("web", &DeleteParams::default()).await.unwrap();
    let deleting = api.get("web").await.unwrap();
    assert!(deleting.metadata.deletion_timestamp.is_some());
    assert_eq!(run(deleting).await.unwrap(), CLEANED);
    eventually("the CloneSet gone", Duration::from_secs(20), || async {
        api.get_opt("web").await.ok()?.is_none().then_some(())
    })
    .await;
}

#[tokio::test]
async fn two_field_managers_conflict_without_force() {
    let c = cluster();
    let ns = c.namespace("api-ssa").await.unwrap();
    let api: Api<ConfigMap> = Api::namespaced(c.client().await.unwrap(), ns.name());
    let cm =
        |v: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shared"}, "data": {"mode": v}});
    api.patch("shared", &PatchParams::apply("writer-a"), &Patch::Apply(cm("a"))).await.unwrap();
    match api.patch("shared", &PatchParams::apply("writer-b"), &Patch::Apply(cm("b"))).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 409, "{s:?}");
            assert!(s.message.contains("conflict with \"writer-a\""), "{}", s.message);
        }
        other => panic!("a second manager must conflict, got {other:?}"),
    }
    api.patch("shared", &PatchParams::apply("writer-b").force(), &Patch::Apply(cm("b"))).await.unwrap();
    let stored = api.get("shared").await.unwrap();
    assert_eq!(stored.data.unwrap()["mode"], "b");
    let managers: Vec<String> =
        stored.metadata.managed_fields.unwrap().iter().filter_map(|m| m.manager.clone()).collect();
    assert!(managers.contains(&"writer-b".to_string()), "{managers:?}");
}

#[tokio::test]
async fn deploy_rbac_lets_the_manager_list_sidecarsets_and_not_delete_namespaces() {
    crds().await;
    let c = cluster();
    c.apply_path(repo().join("deploy/namespace.yaml")).await.unwrap();
    c.apply_path(repo().join("deploy/rbac.yaml")).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = c.service_account_kubeconfig("kruise-system", "kruise-manager", dir.path()).await.unwrap();
    let manager = kruise_testenv::client_from_kubeconfig(&kubeconfig).await.unwrap();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("apps.kruise.io", "v1alpha1", "SidecarSet"),
        "sidecarsets",
    );
    let sidecarsets: Api<DynamicObject> = Api::all_with(manager.clone(), &ar);
    // RBAC changes reach the authorizer's cache within a moment.
    eventually("the manager may list SidecarSets", Duration::from_secs(20), || async {
        sidecarsets.list(&Default::default()).await.ok()
    })
    .await;
    let ns = c.namespace("api-rbac").await.unwrap();
    match Api::<Namespace>::all(manager).delete(ns.name(), &DeleteParams::default()).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 403, "{s:?}");
            assert!(s.message.contains("system:serviceaccount:kruise-system:kruise-manager"), "{}", s.message);
        }
        other => panic!("deleting a namespace must be forbidden, got {other:?}"),
    }
}

#[tokio::test]
async fn deleting_an_owner_garbage_collects_its_pods() {
    let c = cluster();
    let ns = c.namespace("api-gc").await.unwrap();
    let client = c.client().await.unwrap();
    let owners: Api<ConfigMap> = Api::namespaced(client.clone(), ns.name());
    let owner: ConfigMap =
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}}))
            .unwrap();
    let owner = owners.create(&PostParams::default(), &owner).await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client, ns.name());
    for i in 0..2 {
        let p: Pod = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("owned-{i}"), "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                "uid": owner.metadata.uid, "controller": true, "blockOwnerDeletion": true
            }]},
            "spec": {"containers": [{"name": "app", "image": "nginx"}]}
        }))
        .unwrap();
        pods.create(&PostParams::default(), &p).await.unwrap();
    }
    owners.delete("owner", &DeleteParams::background()).await.unwrap();
    eventually("the garbage collector to delete both pods", Duration::from_secs(60), || async {
        let left = pods.list(&Default::default()).await.ok()?;
        left.items.is_empty().then_some(())
    })
    .await;
}
