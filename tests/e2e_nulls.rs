//! Explicit nulls through the real control plane and the webhook (issue 14, "Done means"): a
//! CloneSet written as real manifests are — `updateStrategy:` with its body commented out,
//! `scaleStrategy: null`, `volumeClaimTemplates: null` — applied with kubectl, is admitted and
//! stored with the nulls pruned (the generated CRDs declare no field nullable, as kruise's), its
//! defaults applied by the mutating webhook; nulls the apiserver keeps (inside the schemaless pod
//! template) reach the webhook, which decodes them as Go does.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use e2e_common::{Kruise, Kubectl, cluster, install, root};
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cloneset_with_explicit_nulls_is_admitted_and_stored_without_them() {
    let certs = tempfile::tempdir().unwrap();
    let kubeconfig = e2e_common::manager_kubeconfig(certs.path()).await;
    let kruise = Kruise::start(certs.path(), &kubeconfig, &[]);
    install(&[&kruise]).await;
    let ca = std::fs::read(certs.path().join("ca.crt")).unwrap();
    let c = cluster();
    kruise_testenv::register_webhooks(&c.client().await.unwrap(), &root().join("webhook-config"), &ca).await.unwrap();
    let ns = c.namespace("e2e-nulls").await.unwrap();
    let kubectl = Kubectl::new();

    let manifest = format!(
        "apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata:
  name: nulls
  namespace: {ns}
spec:
  replicas: 1
  selector:
    matchLabels: {{app: nulls}}
  scaleStrategy: null
  volumeClaimTemplates: null
  lifecycle: ~
  updateStrategy:
#   type: InPlaceIfPossible
#   maxUnavailable: 2
  template:
    metadata:
      labels: {{app: nulls}}
    spec:
      containers:
      - name: main
        image: nginx:1.27
        resources: null
"
    );
    let path = kubectl.dir().join("nulls.yaml");
    std::fs::write(&path, manifest).unwrap();
    let (ok, stdout, stderr) = kubectl.run(&["apply", "-f", path.to_str().unwrap()]).await;
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("cloneset.apps.kruise.io/nulls created"), "{stdout}");

    let (ok, stdout, stderr) =
        kubectl.run(&["-n", ns.name(), "get", "clonesets.v1alpha1.apps.kruise.io", "nulls", "-o", "json"]).await;
    assert!(ok, "{stderr}");
    let stored: Value = serde_json::from_str(&stdout).unwrap();
    let spec = stored["spec"].as_object().unwrap();
    for pruned in ["scaleStrategy", "volumeClaimTemplates", "lifecycle"] {
        assert!(!spec.contains_key(pruned), "{pruned} stored: {stdout}");
    }
    assert_eq!(spec["updateStrategy"]["type"], "ReCreate", "defaulted by the webhook");
    assert_eq!(spec["updateStrategy"]["maxUnavailable"], "20%");
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(spec["template"]["spec"]["containers"][0]["imagePullPolicy"], "Always");
}
