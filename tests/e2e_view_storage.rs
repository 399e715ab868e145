//! The live view reads SidecarSets at their storage version (issue 15): readiness waits for that
//! view to sync, and the apiserver calls our `/convert` only through the Service's ready
//! endpoints, so a view listing v1alpha1 would deadlock a fresh start on a cluster that has
//! SidecarSets. Here no endpoint serves `/convert` (a v1alpha1 read fails), yet `kruise serve`
//! lists the SidecarSet, converted in-process, and /readyz no longer waits for it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::time::Duration;

use e2e_common::{Kruise, Kubectl, eventually, install, manager_kubeconfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_view_syncs_while_convert_is_unreachable() {
    // deploy/'s CRDs and Service, with no endpoint behind the Service.
    install(&[]).await;
    let kubectl = Kubectl::new();
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

    let certs = tempfile::tempdir().unwrap();
    let kubeconfig = manager_kubeconfig(certs.path()).await;
    let kruise = Kruise::start(certs.path(), &kubeconfig, &[]);
    let line = "kruise_cluster_view_objects{kind=\"SidecarSet\"} 1";
    eventually("the view to hold the SidecarSet", Duration::from_secs(30), || async {
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
