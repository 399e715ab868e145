//! SidecarSet webhooks through the router, in-process, with the file-backed cluster view of
//! `examples/` that `make run` serves (`--standalone --objects-dir examples`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::sync::Arc;

use common::app::App;
use common::*;
use kruise::cluster::files::FileView;
use kruise::core::features::FeatureGates;
use kruise::webhook::request::ReviewRequest;
use kube::core::admission::Operation;
use serde_json::{Value, json};

fn examples_app() -> App {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let (view, problems) = FileView::load(&dir).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    App::with(FeatureGates::default(), Arc::new(view))
}

#[tokio::test]
async fn example_pod_review_gets_the_sample_sidecar() {
    let app = examples_app();
    let review = example_review("pod-create.json");
    let resp = app.post("/mutate-pod", serde_json::to_vec(&review).unwrap()).await;
    assert_eq!(resp.status, 200);
    let out = resp.json();
    assert_eq!(out["response"]["uid"], review["request"]["uid"]);
    assert_eq!(out["response"]["allowed"], true);
    let pod = apply(&review["request"]["object"], response_patch(&out["response"]).as_ref());

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
    let resp = app.post("/mutate-pod", serde_json::to_vec(&again).unwrap()).await;
    let out = resp.json();
    assert_eq!(out["response"]["allowed"], true);
    assert!(out["response"].get("patch").is_none(), "{out}");

    // A pod the sample set does not select is left alone.
    let mut other = review.clone();
    other["request"]["object"]["metadata"]["labels"] = json!({"app": "other"});
    let resp = app.post("/mutate-pod", serde_json::to_vec(&other).unwrap()).await;
    assert!(resp.json()["response"].get("patch").is_none());
}

#[tokio::test]
async fn sidecarset_webhooks_through_the_router() {
    let app = examples_app();
    let set = serde_yaml_ng::from_str::<Value>(
        &std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sidecarset.yaml")).unwrap(),
    )
    .unwrap();
    let review = |object: &Value| ReviewRequest::for_object(Operation::Create, object);
    let resp = app.post("/mutate-apps-kruise-io-sidecarset", review(&set).to_bytes()).await;
    let mutated = apply(&set, response_patch(&resp.json()["response"]).as_ref());
    assert_eq!(mutated["spec"]["containers"][0]["podInjectPolicy"], "BeforeAppContainer");
    assert!(mutated["metadata"]["annotations"]["kruise.io/sidecarset-hash"].is_string());

    // The sample set is in the view already: the same set validates (it does not conflict with
    // itself), a copy under another name conflicts on the container name.
    let resp = app.post("/validate-apps-kruise-io-v1alpha1-sidecarset", review(&mutated).to_bytes()).await;
    assert_eq!(resp.json()["response"]["allowed"], true, "{}", resp.json());
    let mut copy = mutated.clone();
    copy["metadata"]["name"] = json!("copy");
    let resp = app.post("/validate-apps-kruise-io-sidecarset", review(&copy).to_bytes()).await;
    let out = resp.json();
    assert_eq!(out["response"]["allowed"], false);
    assert_eq!(out["response"]["status"]["code"], 422);
    assert_eq!(
        out["response"]["status"]["message"],
        "spec.containers: Invalid value: \"log-agent\": container log-agent already exist in sample"
    );
}
