//! The v1beta1 API on the real control plane (issue 15): the CRDs of `deploy/crds` (and the
//! opt-in CloneSet CRD of `deploy/components/cloneset-v1beta1`) serve v1alpha1 and v1beta1 and convert through `kruise serve`'s `/convert`, reached through Service
//! `kruise-webhook-service` as the admission webhooks are. A v1beta1 CloneSet as the docs write
//! it is applied with kubectl, defaulted and validated by our webhooks, and reads back as
//! v1alpha1 (its storage version) and v1beta1 with the same meaning; a SidecarSet stored as
//! v1alpha1 under kruise v1.8.4's CRD is still readable, in both versions, once the storage
//! version is v1beta1; the InPlaceOnly guard and the maxUnavailable ⇒ Parallel rule deny the
//! same edits whichever version they are sent in; an Advanced DaemonSet (stored as v1beta1, as
//! kruise v1.9) written as v1alpha1 with the progressive-create-pod annotation and the deprecated
//! `Surging` type reads as v1beta1 with `partitionedScaling` and `Standard`, and one written as
//! v1beta1 reads as v1alpha1 with the annotation; with the opt-in PodUnavailableBudget CRD, a
//! v1alpha1 budget's protection annotations read as v1beta1 fields, a v1beta1 budget keeps its
//! `ignoredPodSelector` (stored as v1beta1), and our webhook validates v1beta1 budgets.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use e2e_common::{Kruise, Kubectl, cluster, install, manager_kubeconfig, root};
use kruise::core::conversion::{V1ALPHA1, V1BETA1, convert};
use serde_json::{Value, json};

const CLONESET: &str = r#"apiVersion: apps.kruise.io/v1beta1
kind: CloneSet
metadata:
  labels:
    app: sample
  name: sample
  namespace: NS
spec:
  replicas: 2
  selector:
    matchLabels:
      app: sample
  template:
    metadata:
      labels:
        app: sample
    spec:
      containers:
      - name: nginx
        image: nginx:alpine
        env:
        - name: MODE
          value: a
  scaleStrategy:
    excludePreparingDelete: true
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      podUpdatePolicy: POLICY
      maxUnavailable: 1
      inPlaceUpdateStrategy:
        imagePreDownloadParallelism: 3
"#;

async fn get(kubectl: &Kubectl, ns: &str, resource: &str, name: &str) -> Value {
    let (ok, out, err) = kubectl.run(&["-n", ns, "get", resource, name, "-o", "json"]).await;
    assert!(ok, "get {resource} {name}: {err}");
    serde_json::from_str(&out).unwrap()
}

/// What two reads of one object in two versions must share (server-set fields apart).
fn meaning(v: &Value) -> Value {
    json!({"labels": v["metadata"]["labels"], "annotations": v["metadata"]["annotations"], "spec": v["spec"]})
}

async fn apply(kubectl: &Kubectl, name: &str, text: &str, extra: &[&str]) -> (bool, String, String) {
    let path = kubectl.dir().join(name);
    std::fs::write(&path, text).unwrap();
    kubectl.run(&[&["apply", "-f", path.to_str().unwrap()][..], extra].concat()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1beta1_api_through_the_conversion_webhook() {
    let c = cluster();
    let admin = c.client().await.unwrap();
    let kubectl = Kubectl::new();

    // A cluster that ran kruise v1.8: its SidecarSet CRD serves and stores v1alpha1 only.
    c.apply_path(root().join("tests/fixtures/crds/kruise-v1.8.4/apps.kruise.io_sidecarsets.yaml")).await.unwrap();
    let old = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
        "metadata": {"name": "legacy", "labels": {"apps.kruise.io/sidecarset-custom-version": "v7"}},
        "spec": {"selector": {"matchLabels": {"app": "legacy"}}, "namespace": "team",
                 "containers": [{"name": "log", "image": "busybox:1.36", "command": ["sleep", "999d"]}]}});
    let old_path = kubectl.dir().join("legacy.yaml");
    std::fs::write(&old_path, serde_json::to_string(&old).unwrap()).unwrap();
    e2e_common::eventually("the v1.8.4 SidecarSet CRD to serve", std::time::Duration::from_secs(20), || async {
        kubectl.run(&["create", "-f", old_path.to_str().unwrap()]).await.0.then_some(())
    })
    .await;

    // Our CRDs (storage: CloneSet v1alpha1, the others v1beta1) and webhooks.
    let certs = tempfile::tempdir().unwrap();
    let kubeconfig = manager_kubeconfig(certs.path()).await;
    let kruise = Kruise::start(certs.path(), &kubeconfig, &[]);
    install(&[&kruise]).await;
    // CloneSet v1beta1 is opt-in (kruise HEAD's version): the Component's CRD serves both.
    c.apply_path(root().join(kruise::manifests::CLONESET_V1BETA1_COMPONENT)).await.unwrap();
    let ca = std::fs::read(certs.path().join("ca.crt")).unwrap();
    e2e_common::trust_conversion(&ca).await;
    kruise_testenv::register_webhooks(&admin, &root().join("webhook-config"), &ca).await.unwrap();
    let ns = c.namespace("e2e-conversion").await.unwrap();
    let ns = ns.name().to_string();

    // The SidecarSet stored as v1alpha1 reads in both versions: v1beta1 through /convert.
    let legacy_beta =
        e2e_common::eventually("the SidecarSet to read as v1beta1", std::time::Duration::from_secs(30), || async {
            let (ok, out, _) =
                kubectl.run(&["get", "sidecarsets.v1beta1.apps.kruise.io", "legacy", "-o", "json"]).await;
            ok.then(|| serde_json::from_str::<Value>(&out).unwrap())
        })
        .await;
    assert_eq!(legacy_beta["apiVersion"], "apps.kruise.io/v1beta1");
    assert_eq!(
        legacy_beta["spec"]["namespaceSelector"],
        json!({"matchLabels": {"kubernetes.io/metadata.name": "team"}})
    );
    assert_eq!(legacy_beta["spec"]["customVersion"], "v7");
    assert!(legacy_beta["spec"].get("namespace").is_none());
    let legacy_alpha = get(&kubectl, &ns, "sidecarsets.v1alpha1.apps.kruise.io", "legacy").await;
    assert_eq!(legacy_alpha["spec"]["namespace"], "team");
    assert_eq!(legacy_alpha["metadata"]["labels"]["apps.kruise.io/sidecarset-custom-version"], "v7");
    // Rewritten (now stored as v1beta1), it still reads as it was written in v1alpha1.
    let (ok, _, err) = kubectl.run(&["label", "sidecarsets.v1alpha1.apps.kruise.io", "legacy", "touched=yes"]).await;
    assert!(ok, "{err}");
    let rewritten = get(&kubectl, &ns, "sidecarsets.v1alpha1.apps.kruise.io", "legacy").await;
    assert_eq!(rewritten["spec"]["namespace"], "team");
    assert_eq!(rewritten["spec"]["containers"][0]["image"], "busybox:1.36");
    assert_eq!(rewritten["metadata"]["labels"]["touched"], "yes");

    // A v1beta1 CloneSet as the docs write it: applied, defaulted and validated by our webhooks.
    let manifest = CLONESET.replace("NS", &ns).replace("POLICY", "InPlaceIfPossible");
    let (ok, out, err) = apply(&kubectl, "cloneset.yaml", &manifest, &[]).await;
    assert!(ok && out.contains("cloneset.apps.kruise.io/sample created"), "{out}{err}");
    let beta = get(&kubectl, &ns, "clonesets.v1beta1.apps.kruise.io", "sample").await;
    let alpha = get(&kubectl, &ns, "clonesets.v1alpha1.apps.kruise.io", "sample").await;
    assert_eq!(
        beta["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "InPlaceIfPossible", "maxUnavailable": 1,
            "partition": 0, "maxSurge": 0, "inPlaceUpdateStrategy": {"imagePreDownloadParallelism": 3}}})
    );
    assert_eq!(beta["spec"]["scaleStrategy"], json!({"excludePreparingDelete": true}));
    assert_eq!(beta["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(beta["spec"]["template"]["spec"]["containers"][0]["terminationMessagePath"], "/dev/termination-log");
    // v1alpha1, the storage version: kruise's v1alpha1 spelling of the same object.
    assert_eq!(alpha["spec"]["updateStrategy"]["type"], "InPlaceIfPossible");
    assert_eq!(alpha["spec"]["updateStrategy"]["partition"], 0);
    assert_eq!(alpha["spec"]["scaleStrategy"], json!({"disablePVCReuse": true}));
    assert_eq!(alpha["metadata"]["annotations"]["apps.kruise.io/image-predownload-parallelism"], "3");
    assert_eq!(alpha["metadata"]["labels"]["apps.kruise.io/cloneset-scaling-exclude-preparing-delete"], "true");
    // Same meaning: each read converts to the other.
    assert_eq!(meaning(&convert(0, &alpha, V1BETA1).unwrap()), meaning(&beta));
    assert_eq!(meaning(&convert(0, &beta, V1ALPHA1).unwrap()), meaning(&alpha));

    // A v1beta1 CloneSet our validation refuses, with v1beta1 field names.
    let bad = manifest
        .replace("name: sample\n", "name: bad\n")
        .replace("maxUnavailable: 1", "maxUnavailable: 1\n      maxSurge: 1")
        .replace("InPlaceIfPossible", "InPlaceOnly");
    let (ok, _, err) = apply(&kubectl, "bad.yaml", &bad, &[]).await;
    assert!(!ok && err.contains("admission webhook \"vcloneset.kb.io\" denied the request"), "{err}");
    assert!(err.contains("spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: \"1\": can not use maxSurge with podUpdatePolicy InPlaceOnly"), "{err}");

    // The InPlaceOnly guard denies the same edit in both versions, and allows an image change.
    let manifest =
        CLONESET.replace("NS", &ns).replace("name: sample\n", "name: guarded\n").replace("POLICY", "InPlaceOnly");
    let (ok, out, err) = apply(&kubectl, "guarded.yaml", &manifest, &[]).await;
    assert!(ok, "{out}{err}");
    for (resource, field) in [
        ("clonesets.v1beta1.apps.kruise.io", "spec.updateStrategy.rollingUpdate.podUpdatePolicy"),
        ("clonesets.v1alpha1.apps.kruise.io", "spec.updateStrategy.type"),
    ] {
        let patch = |path: &str, value: &str| format!(r#"[{{"op": "replace", "path": "{path}", "value": "{value}"}}]"#);
        let env = patch("/spec/template/spec/containers/0/env/0/value", "b");
        let (ok, _, err) = kubectl
            .run(&["-n", &ns, "patch", resource, "guarded", "--type", "json", "-p", &env, "--dry-run=server"])
            .await;
        assert!(!ok, "{resource}: an env change under InPlaceOnly must be denied");
        assert!(err.contains("only allowed to update images in spec for InPlaceOnly"), "{resource}: {err}");
        assert!(err.contains(&format!("set {field} to")), "{resource}: {err}");
        let image = patch("/spec/template/spec/containers/0/image", "nginx:1.27");
        let (ok, out, err) = kubectl
            .run(&["-n", &ns, "patch", resource, "guarded", "--type", "json", "-p", &image, "--dry-run=server"])
            .await;
        assert!(ok, "{resource}: an image change is allowed: {out}{err}");
    }

    // maxUnavailable ⇒ Parallel: the same Advanced StatefulSet is denied in both versions, and
    // so is the same edit of a stored one.
    let asts = std::fs::read_to_string(root().join("tests/fixtures/e2e/asts-ordered-maxunavailable.yaml"))
        .unwrap()
        .replace("namespace: default", &format!("namespace: {ns}"));
    for version in ["v1beta1", "v1alpha1"] {
        let text = asts.replace("apps.kruise.io/v1beta1", &format!("apps.kruise.io/{version}"));
        let (ok, _, err) = apply(&kubectl, "asts.yaml", &text, &[]).await;
        assert!(!ok && err.contains("can only work with Parallel PodManagementPolicyType"), "{version}: {err}");
    }
    let parallel = asts.replace("OrderedReady", "Parallel");
    let (ok, out, err) = apply(&kubectl, "parallel.yaml", &parallel, &[]).await;
    assert!(ok, "{out}{err}");
    for resource in ["statefulsets.v1beta1.apps.kruise.io", "statefulsets.v1alpha1.apps.kruise.io"] {
        let edit = r#"[{"op": "replace", "path": "/spec/updateStrategy/rollingUpdate/maxUnavailable", "value": 3}, {"op": "replace", "path": "/spec/podManagementPolicy", "value": "OrderedReady"}]"#;
        let (ok, _, err) = kubectl
            .run(&["-n", &ns, "patch", resource, "ordered", "--type", "json", "-p", edit, "--dry-run=server"])
            .await;
        assert!(!ok && err.contains("can only work with Parallel PodManagementPolicyType"), "{resource}: {err}");
    }

    // Advanced DaemonSet (kruise v1.9's daemonset_conversion.go): v1alpha1 -> stored v1beta1.
    // Surging with maxUnavailable 0: our mutating webhook turns it into Standard with maxSurge 1
    // (kruise's SetDefaultsDaemonSet); with maxUnavailable 1 validation would refuse both set.
    let alpha_ds = DAEMONSET.replace("NS", &ns).replace("maxUnavailable: 1", "maxUnavailable: 0");
    let (ok, out, err) = apply(&kubectl, "ds-alpha.yaml", &alpha_ds, &[]).await;
    assert!(ok, "{out}{err}");
    let beta = get(&kubectl, &ns, "daemonsets.v1beta1.apps.kruise.io", "agent").await;
    assert_eq!(beta["apiVersion"], "apps.kruise.io/v1beta1");
    assert_eq!(beta["spec"]["scaleStrategy"], json!({"partitionedScaling": true}));
    assert_eq!(
        beta["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"rollingUpdateType": "Standard", "partition": "50%", "maxUnavailable": 0, "maxSurge": 1}})
    );
    assert_eq!(beta["spec"]["template"]["spec"]["containers"][0]["futureField"], "kept");
    let alpha = get(&kubectl, &ns, "daemonsets.v1alpha1.apps.kruise.io", "agent").await;
    assert_eq!(alpha["metadata"]["annotations"]["daemonset.kruise.io/progressive-create-pod"], "true");
    assert!(alpha["spec"].get("scaleStrategy").is_none(), "{alpha}");
    assert_eq!(alpha["spec"]["updateStrategy"]["rollingUpdate"]["rollingUpdateType"], "Standard");
    // Written as v1beta1: reads as v1alpha1 with the annotation, the rest as written.
    let written = DAEMONSET
        .replace("NS", &ns)
        .replace("  name: agent\n  namespace", "  name: beta\n  namespace")
        .replace("apps.kruise.io/v1alpha1", "apps.kruise.io/v1beta1")
        .replace("  annotations:\n    daemonset.kruise.io/progressive-create-pod: \"true\"\n", "")
        .replace("Surging", "InPlaceIfPossible")
        .replace("  updateStrategy:", "  scaleStrategy:\n    partitionedScaling: true\n  updateStrategy:");
    assert!(!written.contains("progressive") && written.contains("partitionedScaling"), "{written}");
    let (ok, out, err) = apply(&kubectl, "ds-beta.yaml", &written, &[]).await;
    assert!(ok, "{out}{err}");
    let alpha = get(&kubectl, &ns, "daemonsets.v1alpha1.apps.kruise.io", "beta").await;
    assert_eq!(alpha["apiVersion"], "apps.kruise.io/v1alpha1");
    assert_eq!(alpha["metadata"]["annotations"]["daemonset.kruise.io/progressive-create-pod"], "true");
    assert!(alpha["spec"].get("scaleStrategy").is_none(), "{alpha}");
    assert_eq!(alpha["spec"]["updateStrategy"]["rollingUpdate"]["rollingUpdateType"], "InPlaceIfPossible");
    let beta = get(&kubectl, &ns, "daemonsets.v1beta1.apps.kruise.io", "beta").await;
    assert_eq!(beta["spec"]["scaleStrategy"], json!({"partitionedScaling": true}));
    // Each read is the other converted; going to v1beta1 the annotation stays (shared metadata,
    // as in kruise), so only the spec is compared that way.
    assert_eq!(convert(0, &alpha, V1BETA1).unwrap()["spec"], beta["spec"]);
    assert!(beta["metadata"]["annotations"].get("daemonset.kruise.io/progressive-create-pod").is_none(), "{beta}");
    assert_eq!(meaning(&convert(0, &beta, V1ALPHA1).unwrap()), meaning(&alpha));

    // PodUnavailableBudget v1beta1 (kruise HEAD) through the opt-in CRD, stored as v1beta1.
    c.apply_path(root().join(kruise::manifests::PUB_V1BETA1_COMPONENT)).await.unwrap();
    e2e_common::trust_conversion(&ca).await;
    let alpha_pub = format!(
        "apiVersion: policy.kruise.io/v1alpha1\nkind: PodUnavailableBudget\nmetadata:\n  name: alpha-pub\n  namespace: {ns}\n  annotations:\n    kruise.io/pub-protect-operations: DELETE,EVICT\n    pub.kruise.io/protect-total-replicas: \"5\"\nspec:\n  selector:\n    matchLabels:\n      app: alpha\n  maxUnavailable: 1\n"
    );
    let applied =
        e2e_common::eventually("the v1beta1 PUB CRD to serve", std::time::Duration::from_secs(30), || async {
            let (ok, out, err) = apply(&kubectl, "pub-alpha.yaml", &alpha_pub, &[]).await;
            ok.then_some(()).or_else(|| {
                eprintln!("pub-alpha: {out}{err}");
                None
            })
        });
    applied.await;
    let beta = get(&kubectl, &ns, "podunavailablebudgets.v1beta1.policy.kruise.io", "alpha-pub").await;
    assert_eq!(beta["spec"]["protectOperations"], json!(["DELETE", "EVICT"]), "{beta}");
    assert_eq!(beta["spec"]["protectTotalReplicas"], 5);
    let beta_pub = format!(
        "apiVersion: policy.kruise.io/v1beta1\nkind: PodUnavailableBudget\nmetadata:\n  name: beta-pub\n  namespace: {ns}\nspec:\n  selector:\n    matchLabels:\n      app: beta\n  minAvailable: 2\n  protectOperations: [EVICT]\n  ignoredPodSelector:\n    matchLabels:\n      kruise.io/force-deletable: \"true\"\n"
    );
    let (ok, out, err) = apply(&kubectl, "pub-beta.yaml", &beta_pub, &[]).await;
    assert!(ok, "{out}{err}");
    let beta = get(&kubectl, &ns, "podunavailablebudgets.v1beta1.policy.kruise.io", "beta-pub").await;
    assert_eq!(beta["spec"]["ignoredPodSelector"], json!({"matchLabels": {"kruise.io/force-deletable": "true"}}));
    let alpha = get(&kubectl, &ns, "podunavailablebudgets.v1alpha1.policy.kruise.io", "beta-pub").await;
    assert_eq!(alpha["metadata"]["annotations"]["kruise.io/pub-protect-operations"], "EVICT", "{alpha}");
    assert!(alpha["spec"].get("ignoredPodSelector").is_none(), "{alpha}");
    // Our validating webhook sees v1beta1 objects: an empty ignoredPodSelector is refused.
    let (ok, _, err) = apply(
        &kubectl,
        "pub-bad.yaml",
        &beta_pub
            .replace("beta-pub", "bad-pub")
            .replace(
                "  ignoredPodSelector:\n    matchLabels:\n      kruise.io/force-deletable: \"true\"\n",
                "  ignoredPodSelector: {}\n",
            )
            .replace("app: beta", "app: bad"),
        &[],
    )
    .await;
    assert!(!ok, "an empty ignoredPodSelector must be refused");
    assert!(err.contains("empty ignoredPodSelector is not valid for PodUnavailableBudget"), "{err}");
    drop(kruise);
}

/// An Advanced DaemonSet as a kruise v1.8 user writes it: v1alpha1, the progressive-create-pod
/// annotation and the deprecated `Surging` rolling-update type.
const DAEMONSET: &str = r#"apiVersion: apps.kruise.io/v1alpha1
kind: DaemonSet
metadata:
  name: agent
  namespace: NS
  annotations:
    daemonset.kruise.io/progressive-create-pod: "true"
spec:
  selector:
    matchLabels:
      app: agent
  template:
    metadata:
      labels:
        app: agent
    spec:
      containers:
      - name: agent
        image: nginx:alpine
        futureField: kept
  updateStrategy:
    type: RollingUpdate
    rollingUpdate:
      rollingUpdateType: Surging
      partition: "50%"
      maxUnavailable: 1
"#;
