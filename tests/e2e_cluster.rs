//! End to end on the real control plane (kube-apiserver, etcd, controller-manager, scheduler of
//! `testenv/`): the CRDs of `deploy/crds`, the webhook configurations of `webhook-config/`
//! registered with the CA, and `kruise serve` (certificates from `kruise certs`) reached through
//! Service `kruise-webhook-service` as a pod is — driven by the real kubectl, as a user would.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use e2e_common::{Kruise, Kubectl, cluster, install, manager_kubeconfig, root};
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_goes_through_kruise_webhooks() {
    let certs = tempfile::tempdir().unwrap();
    let kubeconfig = manager_kubeconfig(certs.path()).await;
    let kruise = Kruise::start(certs.path(), &kubeconfig, &[]);
    install(&[&kruise]).await;
    let ca = std::fs::read(certs.path().join("ca.crt")).unwrap();
    let c = cluster();
    kruise_testenv::register_webhooks(&c.client().await.unwrap(), &root().join("webhook-config"), &ca).await.unwrap();
    let ns = c.namespace("e2e-kubectl").await.unwrap();
    let kubectl = Kubectl::new();
    let n = ["-n", ns.name()];

    // An Advanced StatefulSet with maxUnavailable 2 and OrderedReady is denied with the webhook's message.
    let asts = root().join("tests/fixtures/e2e/asts-ordered-maxunavailable.yaml");
    let asts = std::fs::read_to_string(asts).unwrap().replace("namespace: default", &format!("namespace: {ns}"));
    let asts_path = kubectl.dir().join("asts.yaml");
    std::fs::write(&asts_path, asts).unwrap();
    let (ok, _, stderr) = kubectl.run(&["apply", "-f", asts_path.to_str().unwrap()]).await;
    assert!(!ok, "the StatefulSet must be denied");
    assert!(stderr.contains("admission webhook \"vstatefulset.kb.io\" denied the request"), "{stderr}");
    assert!(stderr.contains("can only work with Parallel PodManagementPolicyType"), "{stderr}");
    let (ok, _, _) = kubectl.run(&[&n[..], &["get", "statefulsets.apps.kruise.io", "ordered"]].concat()).await;
    assert!(!ok, "nothing stored");

    // The same with server dry run: admission runs, nothing is stored either way.
    let (ok, _, stderr) = kubectl.run(&["apply", "--dry-run=server", "-f", asts_path.to_str().unwrap()]).await;
    assert!(!ok && stderr.contains("can only work with Parallel"), "{stderr}");

    // A CloneSet is stored with its defaults applied by the mutating webhook.
    let cloneset = std::fs::read_to_string(root().join("examples/cloneset.yaml"))
        .unwrap()
        .replace("namespace: default", &format!("namespace: {ns}"));
    let cloneset_path = kubectl.dir().join("cloneset.yaml");
    std::fs::write(&cloneset_path, &cloneset).unwrap();
    let (ok, stdout, stderr) = kubectl.run(&["apply", "-f", cloneset_path.to_str().unwrap()]).await;
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("cloneset.apps.kruise.io/sample created"), "{stdout}");
    let (ok, stdout, stderr) =
        kubectl.run(&[&n[..], &["get", "clonesets.v1alpha1.apps.kruise.io", "sample", "-o", "json"]].concat()).await;
    assert!(ok, "{stderr}");
    let stored: Value = serde_json::from_str(&stdout).unwrap();
    let spec = &stored["spec"];
    assert_eq!(spec["updateStrategy"]["type"], "InPlaceIfPossible");
    assert_eq!(spec["updateStrategy"]["maxUnavailable"], "20%");
    assert_eq!(spec["updateStrategy"]["partition"], 0);
    assert_eq!(spec["updateStrategy"]["inPlaceUpdateStrategy"], serde_json::json!({}));
    assert_eq!(spec["revisionHistoryLimit"], 10);
    let c0 = &spec["template"]["spec"]["containers"][0];
    assert_eq!(c0["imagePullPolicy"], "Always");
    assert_eq!(c0["resources"]["requests"]["cpu"], "500m", "quantities normalised");
    assert_eq!(spec["template"]["spec"]["schedulerName"], "default-scheduler");

    // Issue 32: a v1.8 user's merge patch without a version reaches v1alpha1 (the only version
    // deploy/ serves, as released kruise) and is kept, not pruned as v1beta1 would prune it.
    let patch = r#"{"spec":{"updateStrategy":{"paused":true}}}"#;
    let (ok, stdout, stderr) =
        kubectl.run(&[&n[..], &["patch", "cloneset", "sample", "--type", "merge", "-p", patch]].concat()).await;
    assert!(ok && stdout.contains("cloneset.apps.kruise.io/sample patched"), "{stdout}{stderr}");
    let (ok, stdout, stderr) = kubectl
        .run(&[&n[..], &["get", "cloneset", "sample", "-o", "jsonpath={.spec.updateStrategy.paused}"]].concat())
        .await;
    assert!(ok, "{stderr}");
    assert_eq!(stdout.trim(), "true", "the patch was kept");

    // A dry-run UPDATE that would break InPlaceOnly is refused with the path of the change.
    let edited = cloneset.replace("type: InPlaceIfPossible", "type: InPlaceOnly").replace("cpu: \"0.5\"", "cpu: \"1\"");
    let path = kubectl.dir().join("edited.yaml");
    std::fs::write(&path, edited).unwrap();
    let (ok, _, stderr) = kubectl.run(&["apply", "--dry-run=server", "-f", path.to_str().unwrap()]).await;
    assert!(!ok, "InPlaceOnly resources change must be denied");
    assert!(stderr.contains("admission webhook \"vcloneset.kb.io\" denied the request"), "{stderr}");
    assert!(stderr.contains("/containers/0/resources"), "{stderr}");
}

/// `kubectl kustomize deploy` renders, and every rendered object passes the real API server's
/// validation (server-side dry run: schemas, RBAC objects, the webhook configurations).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_renders_and_every_object_passes_server_dry_run() {
    let kubectl = Kubectl::new();
    let (ok, rendered, err) = kubectl.run(&["kustomize", root().join("deploy").to_str().unwrap()]).await;
    assert!(ok, "{err}");
    let kinds: Vec<&str> = rendered.lines().filter_map(|l| l.strip_prefix("kind: ")).collect();
    for kind in [
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "Role",
        "CustomResourceDefinition",
        "Service",
        "Deployment",
        "PodDisruptionBudget",
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ] {
        assert!(kinds.contains(&kind), "deploy/ renders a {kind}: {kinds:?}");
    }
    // The namespace must exist for the namespaced objects' dry run.
    cluster().apply_path(root().join("deploy/namespace.yaml")).await.unwrap();
    let path = kubectl.dir().join("rendered.yaml");
    std::fs::write(&path, &rendered).unwrap();
    let (ok, out, err) = kubectl
        .run(&["apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", path.to_str().unwrap()])
        .await;
    assert!(ok, "{out}{err}");
    assert_eq!(out.lines().filter(|l| l.contains("(server dry run)")).count(), kinds.len(), "{out}");
}

/// Every flag the Deployment passes exists in `kruise serve --help`.
#[tokio::test]
async fn deployment_flags_exist_in_serve_help() {
    let deployment: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(root().join("deploy/deployment.yaml")).unwrap()).unwrap();
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<&str> = container["args"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert_eq!(args.first(), Some(&"serve"));
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_kruise")).args(["serve", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    let flags: Vec<&str> =
        args.iter().filter_map(|a| a.strip_prefix("--")).map(|a| a.split('=').next().unwrap()).collect();
    assert!(!flags.is_empty());
    for flag in flags {
        assert!(help.contains(&format!("--{flag}")), "--{flag} is not a flag of kruise serve:\n{help}");
    }
    let env: Vec<&str> = container["env"].as_array().unwrap().iter().filter_map(|e| e["name"].as_str()).collect();
    assert_eq!(env, ["POD_NAME", "POD_NAMESPACE"]);
    assert!(help.contains("POD_NAMESPACE"), "the manager namespace comes from POD_NAMESPACE");
}
