//! SidecarSet webhooks end to end through HTTPS, with the file-backed cluster view of
//! `examples/` that `make run` serves (`--standalone --objects-dir examples`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::sync::Arc;

use common::*;
use kruise::cluster::files::FileView;
use kruise::core::features::FeatureGates;
use serde_json::{Value, json};

async fn examples_server() -> TestServer {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let (view, problems) = FileView::load(&dir).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    TestServer::start_with(FeatureGates::default(), Arc::new(view), |_| {}).await
}

#[tokio::test]
async fn example_pod_review_gets_the_sample_sidecar() {
    let server = examples_server().await;
    let review = example_review("pod-create.json");
    let resp =
        post_once(server.handle.addr, &server.ca, "/mutate-pod", serde_json::to_vec(&review).unwrap()).await.unwrap();
    assert_eq!(resp.status, 200);
    let out = resp.json();
    assert_eq!(out["response"]["uid"], review["request"]["uid"]);
    assert_eq!(out["response"]["allowed"], true);
    let pod = apply_patch(&review["request"]["object"], &out["response"]);

    let sidecar = &pod["spec"]["containers"][0];
    assert_eq!(sidecar["name"], "log-agent");
    assert_eq!(sidecar["image"], "busybox:1.36");
    assert_eq!(sidecar["imagePullPolicy"], "IfNotPresent");
    assert_eq!(
        sidecar["env"],
        json!([{"name": "IS_INJECTED", "value": "true"}, {"name": "LOG_LEVEL", "value": "info"}])
    );
    assert_eq!(sidecar["volumeMounts"], json!([{"name": "logs", "mountPath": "/var/log/app"}]), "shared from the app");
    assert_eq!(
        pod["spec"]["containers"][1], review["request"]["object"]["spec"]["containers"][0],
        "the app is untouched"
    );
    let annotations = &pod["metadata"]["annotations"];
    assert_eq!(annotations["kruise.io/sidecarset-injected-list"], "sample");
    let hashes: Value = serde_json::from_str(annotations["kruise.io/sidecarset-hash"].as_str().unwrap()).unwrap();
    assert_eq!(hashes["sample"]["sidecarList"], json!(["log-agent"]));
    assert_eq!(hashes["sample"]["hash"].as_str().unwrap().len(), 64);

    // Re-invocation (reinvocationPolicy: IfNeeded): the injected pod comes back unchanged.
    let mut again = review.clone();
    again["request"]["object"] = pod;
    let resp =
        post_once(server.handle.addr, &server.ca, "/mutate-pod", serde_json::to_vec(&again).unwrap()).await.unwrap();
    let out = resp.json();
    assert_eq!(out["response"]["allowed"], true);
    assert!(out["response"].get("patch").is_none(), "{out}");

    // A pod the sample set does not select is left alone.
    let mut other = review.clone();
    other["request"]["object"]["metadata"]["labels"] = json!({"app": "other"});
    let resp =
        post_once(server.handle.addr, &server.ca, "/mutate-pod", serde_json::to_vec(&other).unwrap()).await.unwrap();
    assert!(resp.json()["response"].get("patch").is_none());
    server.handle.shutdown();
}

#[tokio::test]
async fn sidecarset_webhooks_over_https() {
    let server = examples_server().await;
    let set = serde_yaml_ng::from_str::<Value>(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sidecarset.yaml")).unwrap(),
    )
    .unwrap();
    let review = |object: &Value| {
        serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "u-1", "kind": {"group": "apps.kruise.io", "version": "v1alpha1", "kind": "SidecarSet"},
                        "resource": {"group": "apps.kruise.io", "version": "v1alpha1", "resource": "sidecarsets"},
                        "name": "sample", "operation": "CREATE", "userInfo": {"username": "me"}, "object": object}
        }))
        .unwrap()
    };
    let resp =
        post_once(server.handle.addr, &server.ca, "/mutate-apps-kruise-io-sidecarset", review(&set)).await.unwrap();
    let mutated = apply_patch(&set, &resp.json()["response"]);
    assert_eq!(mutated["spec"]["containers"][0]["podInjectPolicy"], "BeforeAppContainer");
    assert!(mutated["metadata"]["annotations"]["kruise.io/sidecarset-hash"].is_string());

    // The sample set is in the view already: the same set validates (it does not conflict with
    // itself), a copy under another name conflicts on the container name.
    let resp =
        post_once(server.handle.addr, &server.ca, "/validate-apps-kruise-io-v1alpha1-sidecarset", review(&mutated))
            .await
            .unwrap();
    assert_eq!(resp.json()["response"]["allowed"], true, "{}", resp.json());
    let mut copy = mutated.clone();
    copy["metadata"]["name"] = json!("copy");
    let resp =
        post_once(server.handle.addr, &server.ca, "/validate-apps-kruise-io-sidecarset", review(&copy)).await.unwrap();
    let out = resp.json();
    assert_eq!(out["response"]["allowed"], false);
    assert_eq!(out["response"]["status"]["code"], 422);
    assert_eq!(
        out["response"]["status"]["message"],
        "spec.containers: Invalid value: \"log-agent\": container log-agent already exist in sample"
    );
    server.handle.shutdown();
}
