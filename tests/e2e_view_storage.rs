//! The live view reads SidecarSets at their storage version (issue 15): readiness waits for that
//! view to sync, and the apiserver calls our `/convert` only through the Service's ready
//! endpoints, so a view listing v1alpha1 would deadlock a fresh start on a cluster that has
//! SidecarSets. Here no endpoint serves `/convert` (a v1alpha1 read fails), yet `kruise serve`
//! lists the SidecarSet, converted in-process, and /readyz no longer waits for it. A SidecarSet
//! written under kruise v1.8's CRD stays stored as v1alpha1 after our CRDs change the storage
//! version: a v1beta1 list of it needs `/convert`, so the view lists v1alpha1 instead. With
//! SidecarSets stored in both versions every list needs `/convert`: deploy/'s conversion Service
//! publishes replicas that are not ready yet, so the first replica gets ready.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::time::Duration;

use e2e_common::{Kruise, Kubectl, eventually, install, manager_kubeconfig};
use kruise_testenv::Endpoint;

/// The view's SidecarSet count in `/metrics` reaches `n`, and /readyz stops naming SidecarSet.
async fn view_holds(kruise: &Kruise, n: usize) {
    let line = format!("kruise_cluster_view_objects{{kind=\"SidecarSet\"}} {n}");
    eventually("the view to hold the SidecarSets", Duration::from_secs(30), || async {
        let (code, body) = kruise.admin_get("/metrics").await;
        (code == 200 && body.lines().any(|l| l.trim() == line)).then_some(())
    })
    .await;
    // Readiness no longer waits for the SidecarSet list (it may wait for other things: the
    // self-check through the Service, which has no endpoint here).
    eventually("/readyz to stop waiting for the SidecarSet list", Duration::from_secs(30), || async {
        let (_, readyz) = kruise.admin_get("/readyz").await;
        (!readyz.contains("SidecarSet")).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_view_syncs_while_convert_is_unreachable() {
    let kubectl = Kubectl::new();
    let certs = tempfile::tempdir().unwrap();
    let kubeconfig = manager_kubeconfig(certs.path()).await;

    // 1. Stored as v1alpha1 under kruise v1.8.4's CRD (v1alpha1 only), then our CRDs.
    let c = e2e_common::cluster();
    c.apply_path(e2e_common::root().join("tests/fixtures/crds/kruise-v1.8.4/apps.kruise.io_sidecarsets.yaml"))
        .await
        .unwrap();
    let old = "apiVersion: apps.kruise.io/v1alpha1\nkind: SidecarSet\nmetadata:\n  name: old\nspec:\n  \
               selector:\n    matchLabels:\n      app: web\n  containers:\n  - name: log\n    image: busybox:1.36\n";
    let old_path = kubectl.dir().join("old.yaml");
    std::fs::write(&old_path, old).unwrap();
    eventually("the v1.8.4 SidecarSet CRD to serve", Duration::from_secs(20), || async {
        kubectl.run(&["create", "-f", old_path.to_str().unwrap()]).await.0.then_some(())
    })
    .await;
    install(&[]).await;
    eventually(
        "a v1beta1 read of the v1alpha1-stored SidecarSet to need /convert",
        Duration::from_secs(20),
        || async {
            let (ok, _, err) = kubectl.run(&["get", "sidecarsets.v1beta1.apps.kruise.io", "old"]).await;
            (!ok && err.contains("conversion webhook")).then_some(())
        },
    )
    .await;
    {
        let kruise = Kruise::start(certs.path(), &kubeconfig, &[]);
        view_holds(&kruise, 1).await;
        // Deleting it needs /convert too (the apiserver decodes it to the storage version): now
        // that the server is up, publish it behind the Service.
        install(&[&kruise]).await;
        eventually("the v1alpha1-stored SidecarSet to be deleted", Duration::from_secs(30), || async {
            kubectl.run(&["delete", "sidecarsets.v1alpha1.apps.kruise.io", "old"]).await.0.then_some(())
        })
        .await;
    }

    // 2. Stored as v1beta1: deploy/'s CRDs and Service, with no endpoint behind the Service.
    install(&[]).await;
    let set = "apiVersion: apps.kruise.io/v1beta1\nkind: SidecarSet\nmetadata:\n  name: stored\nspec:\n  \
               customVersion: v2\n  selector:\n    matchLabels:\n      app: web\n  containers:\n  - name: log\n    \
               image: busybox:1.36\n";
    let path = kubectl.dir().join("set.yaml");
    std::fs::write(&path, set).unwrap();
    eventually("the SidecarSet CRD to serve v1beta1", Duration::from_secs(20), || async {
        kubectl.run(&["create", "-f", path.to_str().unwrap()]).await.0.then_some(())
    })
    .await;
    let (ok, _, err) = kubectl.run(&["get", "sidecarsets.v1alpha1.apps.kruise.io", "stored"]).await;
    assert!(!ok && err.contains("conversion webhook"), "a v1alpha1 read needs /convert, unreachable here: {err}");

    {
        let kruise = Kruise::start(certs.path(), &kubeconfig, &[]);
        view_holds(&kruise, 1).await;
    }

    // 3. Mixed storage: `stored` as v1beta1, `mixed` as v1alpha1 (written while the CRD stored
    //    v1alpha1). Now a list of either version needs /convert, so no replica gets ready until
    //    the apiserver can call one that is not ready yet: the conversion Service's job.
    set_storage(&c.client().await.unwrap(), "v1alpha1").await;
    let mixed = old.replace("name: old", "name: mixed");
    let mixed_path = kubectl.dir().join("mixed.yaml");
    std::fs::write(&mixed_path, mixed).unwrap();
    eventually("a SidecarSet stored as v1alpha1 beside the v1beta1 one", Duration::from_secs(20), || async {
        kubectl.run(&["create", "-f", mixed_path.to_str().unwrap()]).await.0.then_some(())
    })
    .await;
    install(&[]).await;
    for version in ["v1alpha1", "v1beta1"] {
        let resource = format!("sidecarsets.{version}.apps.kruise.io");
        eventually(&format!("a {version} list to need /convert"), Duration::from_secs(20), || async {
            let (ok, _, err) = kubectl.run(&["get", &resource]).await;
            (!ok && err.contains("conversion webhook")).then_some(())
        })
        .await;
    }
    let kruise = Kruise::start(certs.path(), &kubeconfig, &[]);
    e2e_common::trust_conversion(kruise.ca.as_deref().unwrap()).await;
    // Behind a Service without publishNotReadyAddresses the replica is published not ready: the
    // apiserver does not call it, and the replica never gets ready (the deadlock). Nothing here
    // waits for something to happen, so a slow apiserver cannot make this pass wrongly.
    e2e_common::publish_conversion(&[Endpoint { address: kruise.address, ready: false }]).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (_, readyz) = kruise.admin_get("/readyz").await;
    assert!(readyz.contains("SidecarSet"), "not ready while /convert is unreachable: {readyz}");
    let (ok, _, err) = kubectl.run(&["get", "sidecarsets.v1beta1.apps.kruise.io"]).await;
    assert!(!ok && err.contains("conversion webhook"), "a not-ready endpoint is not called: {err}");
    // With publishNotReadyAddresses the EndpointSlice controller marks it ready there (as
    // endpointslice's podToEndpoint does), while the webhook Service still has no endpoint.
    e2e_common::publish_conversion(&[Endpoint { address: kruise.address, ready: true }]).await;
    view_holds(&kruise, 2).await;
    for version in ["v1alpha1", "v1beta1"] {
        let (ok, out, err) =
            kubectl.run(&["get", &format!("sidecarsets.{version}.apps.kruise.io"), "-o", "name"]).await;
        assert!(ok && out.contains("mixed") && out.contains("stored"), "both read as {version}: {out}{err}");
    }
}

/// Makes `version` the storage version of our SidecarSet CRD (the other stays served).
async fn set_storage(client: &kube::Client, version: &str) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crds: kube::Api<CustomResourceDefinition> = kube::Api::all(client.clone());
    let mut crd = crds.get("sidecarsets.apps.kruise.io").await.unwrap();
    for v in &mut crd.spec.versions {
        v.storage = v.name == version;
    }
    crds.replace("sidecarsets.apps.kruise.io", &kube::api::PostParams::default(), &crd).await.unwrap();
}
