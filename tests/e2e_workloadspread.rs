//! WorkloadSpread admission end to end (issue 34 item 1) on the real control plane of `testenv/`:
//! `kruise serve` with exactly the rights `deploy/rbac.yaml` gives it (it now watches
//! WorkloadSpreads for its view, so readiness also covers that list) and the generated
//! `webhook-config/` registered. Asserted, through the apiserver:
//! - a valid WorkloadSpread over a Deployment is admitted;
//! - a second one over the same Deployment is denied by `vworkloadspread.kb.io` with kruise's
//!   conflict message (the other WorkloadSpreads are listed at admission time);
//! - a subset patch that breaks the Deployment's pods is denied (the Deployment's template is
//!   read at admission time), while the same patch on a workload that does not exist yet passes;
//! - the target cannot change on UPDATE; `kubectl get ws` prints kruise's columns.
//!
//! The pod hooks and the controller: tests/e2e_workloadspread_pods.rs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::time::Duration;

use e2e_common::{Kruise, cluster, eventually, install, manager_kubeconfig, root};
use k8s_openapi::api::apps::v1::Deployment;
use kruise::apis::workloadspread::WorkloadSpread;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

fn spread(name: &str, target: &str, patch: Value) -> WorkloadSpread {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
        "metadata": {"name": name},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "subsets": [
                {"name": "zone-a", "maxReplicas": 2, "patch": patch,
                    "requiredNodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["zone-a"]}]}},
                {"name": "zone-b",
                    "requiredNodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["zone-b"]}]}}]}
    }))
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workload_spreads_are_validated_by_kruise() {
    let c = cluster();
    let ns = c.namespace("e2e-ws").await.unwrap();
    let certs = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = manager_kubeconfig(dir.path()).await;
    let log = std::env::var("KRUISE_E2E_LOG").unwrap_or_else(|_| "warn".into());
    let made = std::process::Command::new(env!("CARGO_BIN_EXE_kruise"))
        .args(["certs", "--out"])
        .arg(certs.path())
        .status()
        .unwrap();
    assert!(made.success());
    let kruise = Kruise::spawn(certs.path(), &kubeconfig, &["--namespace", ns.name()], &log);
    install(&[&kruise]).await;
    let ca = std::fs::read(certs.path().join("ca.crt")).unwrap();
    let client = c.client().await.unwrap();
    kruise_testenv::register_webhooks(&client, &root().join("webhook-config"), &ca).await.unwrap();
    let spreads: Api<WorkloadSpread> = Api::namespaced(client.clone(), ns.name());
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns.name());

    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]}}}
    }))
    .unwrap();
    deployments.create(&PostParams::default(), &deployment).await.unwrap();

    // A patch emptying the image of the Deployment's container: denied (the webhook may take a
    // moment to be reachable after registration: retried until it answers).
    let broken = spread("broken", "web", json!({"spec": {"containers": [{"name": "main", "image": ""}]}}));
    let denied = eventually("the validating webhook to deny", Duration::from_secs(90), || {
        let (spreads, broken) = (spreads.clone(), broken.clone());
        async move {
            match spreads.create(&PostParams::default(), &broken).await {
                Err(kube::Error::Api(e)) if e.message.contains("denied the request") => Some(e.message),
                Err(_) => None,
                Ok(_) => panic!("a WorkloadSpread breaking its Deployment's pods was admitted"),
            }
        }
    })
    .await;
    assert!(denied.contains("admission webhook \"vworkloadspread.kb.io\" denied the request"), "{denied}");
    assert!(denied.contains("spec.subsets[0].patch.containers[0].image: Required value"), "{denied}");

    // The same patch before its workload exists: not checked, as kruise.
    let early = spread("early", "later", json!({"spec": {"containers": [{"name": "main", "image": ""}]}}));
    spreads.create(&PostParams::default(), &early).await.unwrap();

    // A valid one, then a second over the same Deployment.
    let good = spread("zones", "web", json!({"metadata": {"labels": {"subset": "zone-a"}}}));
    spreads.create(&PostParams::default(), &good).await.unwrap();
    let e = spreads.create(&PostParams::default(), &spread("again", "web", Value::Null)).await.unwrap_err().to_string();
    assert!(e.contains("ws.spec.targetRef is in conflict with other WorkloadSpread zones"), "{e}");

    // The target cannot change.
    // (The controller writes the status meanwhile: a 409 on a stale copy is read again.)
    let e = eventually("the target change refused", Duration::from_secs(60), || async {
        let mut moved = spreads.get("zones").await.ok()?;
        moved.spec.target_ref.as_mut().unwrap().name = "api".into();
        match spreads.replace("zones", &PostParams::default(), &moved).await {
            Err(kube::Error::Api(e)) if e.code == 409 => None,
            Err(e) => Some(e.to_string()),
            Ok(_) => panic!("the target of a WorkloadSpread changed"),
        }
    })
    .await;
    assert!(e.contains("change TargetReference is not permitted for WorkloadSpread"), "{e}");

    // Bad maxReplicas, with kruise's message.
    let mut pct = spread("pct", "other", Value::Null);
    pct.spec.subsets[0].max_replicas =
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String("0.2%".into()));
    let e = spreads.create(&PostParams::default(), &pct).await.unwrap_err().to_string();
    assert!(
        e.contains("spec.subsets[0].maxReplicas: Invalid value: \"0.2%\": maxReplicas is not valid for subset"),
        "{e}"
    );

    // Short name and printer columns, as kruise's.
    let kubectl = e2e_common::Kubectl::new();
    let (ok, stdout, stderr) = kubectl.run(&["-n", ns.name(), "get", "ws"]).await;
    let headers = stdout.lines().next().unwrap_or_default();
    assert!(ok && headers.contains("WORKLOADKIND") && headers.contains("ADAPTIVE"), "get ws: {stdout}{stderr}");
    assert!(stdout.contains("zones") && stdout.contains("Deployment"), "{stdout}");
    drop(kruise);
}
