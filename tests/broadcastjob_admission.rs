//! BroadcastJob admission through the router, in-process (issue 33 item 1; kruise v1.8.4
//! `pkg/webhook/broadcastjob`): both API versions and both path spellings, kruise's mutating
//! `TestHandle` row (applied as a patch), template defaults only when the template changed on
//! UPDATE, and the field errors (422, spec §11.1; kruise answers 500). The rule tables are in
//! `core::validation::broadcastjob` and `core::defaults::broadcastjob`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::app::App;
use common::{apply, response_patch};
use kruise::cluster::EmptyView;
use kruise::core::features::FeatureGates;
use kruise::webhook::request::ReviewRequest;
use kube::core::admission::Operation;
use serde_json::{Value, json};

const MUTATE: [&str; 2] = ["/mutate-apps-kruise-io-broadcastjob", "/mutate-apps-kruise-io-v1alpha1-broadcastjob"];
const VALIDATE: [&str; 2] = ["/validate-apps-kruise-io-broadcastjob", "/validate-apps-kruise-io-v1alpha1-broadcastjob"];

fn app() -> App {
    App::with(FeatureGates::default(), Arc::new(EmptyView))
}

fn job(version: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("apps.kruise.io/{version}"), "kind": "BroadcastJob",
        "metadata": {"name": "warm", "namespace": "ns"}, "spec": spec})
}

fn review(version: &str, op: Operation, object: &Value) -> ReviewRequest {
    ReviewRequest::new(op, "apps.kruise.io", version, "BroadcastJob", "broadcastjobs")
        .name("warm")
        .namespace("ns")
        .object(object.clone())
}

fn good_spec() -> Value {
    json!({"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}})
}

/// kruise `TestHandle`: the policies' defaults are added; the parallelism sent is kept. (kruise
/// also removes `paused: false`, as Go re-marshals the object; we never remove a field the user
/// sent, spec §11.7.)
#[tokio::test]
async fn kruise_mutating_handle() {
    let object = json!({
        "metadata": {"creationTimestamp": null},
        "spec": {"parallelism": 100, "template": {"metadata": {"creationTimestamp": null}, "spec": {
            "containers": null, "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "securityContext": {}, "schedulerName": "fake-scheduler"}},
            "paused": false},
        "status": {"active": 0, "succeeded": 0, "failed": 0, "desired": 0, "phase": ""}
    });
    let r = app().send(MUTATE[0], &review("v1alpha1", Operation::Create, &object)).await;
    assert_eq!(r["allowed"], true, "{r}");
    let mut ops: Vec<Value> = serde_json::to_value(response_patch(&r).unwrap()).unwrap().as_array().unwrap().clone();
    ops.sort_by_key(|o| o["path"].as_str().unwrap().to_string());
    assert_eq!(
        ops,
        [
            json!({"op": "add", "path": "/spec/completionPolicy", "value": {"type": "Always"}}),
            json!({"op": "add", "path": "/spec/failurePolicy", "value": {"type": "FailFast"}}),
        ]
    );
}

#[tokio::test]
async fn defaulted_then_valid_on_every_path_and_version() {
    let app = app();
    for (mutate, validate) in MUTATE.into_iter().zip(VALIDATE) {
        for version in ["v1alpha1", "v1beta1"] {
            let object = job(version, good_spec());
            let r = app.send(mutate, &review(version, Operation::Create, &object)).await;
            assert_eq!(r["allowed"], true, "{r}");
            let defaulted = apply(&object, response_patch(&r).as_ref());
            assert_eq!(defaulted["spec"]["parallelism"], 2147483647);
            assert_eq!(defaulted["spec"]["completionPolicy"]["type"], "Always");
            assert_eq!(defaulted["spec"]["failurePolicy"]["type"], "FailFast");
            let pod = &defaulted["spec"]["template"]["spec"];
            assert_eq!(
                (pod["dnsPolicy"].as_str(), pod["restartPolicy"].as_str()),
                (Some("ClusterFirst"), Some("Never"))
            );
            assert_eq!(pod["containers"][0]["imagePullPolicy"], "Always");
            let v = app.send(validate, &review(version, Operation::Create, &defaulted)).await;
            assert_eq!(v["allowed"], true, "{mutate} {version}: {v}");
            // Defaulting a defaulted object changes nothing.
            let again = app.send(mutate, &review(version, Operation::Create, &defaulted)).await;
            assert!(again.get("patch").is_none_or(Value::is_null), "{again}");
        }
    }
}

#[tokio::test]
async fn template_defaults_only_when_the_template_changed_on_update() {
    let app = app();
    let old = job("v1alpha1", good_spec());
    let mut new = old.clone();
    new["spec"]["paused"] = json!(true);
    let r = app.send(MUTATE[0], &review("v1alpha1", Operation::Update, &new).old_object(old.clone())).await;
    let out = apply(&new, response_patch(&r).as_ref());
    assert!(out["spec"]["template"]["spec"].get("dnsPolicy").is_none(), "{out}");
    assert_eq!(out["spec"]["failurePolicy"]["type"], "FailFast");
    new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("busybox:2");
    let r = app.send(MUTATE[0], &review("v1alpha1", Operation::Update, &new).old_object(old)).await;
    let out = apply(&new, response_patch(&r).as_ref());
    assert_eq!(out["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");
}

#[tokio::test]
async fn invalid_jobs_are_denied_with_field_errors() {
    let app = app();
    let bad = job(
        "v1alpha1",
        json!({"completionPolicy": {"type": "Never", "ttlSecondsAfterFinished": 1, "activeDeadlineSeconds": 2},
            "template": {"metadata": {"labels": {"broadcastjob-controller-uid": "1234"}},
                "spec": {"restartPolicy": "Always", "containers": [{"name": "c", "image": "busybox"}]}}}),
    );
    let r = app.send(VALIDATE[1], &review("v1alpha1", Operation::Update, &bad).old_object(bad.clone())).await;
    assert_eq!(r["allowed"], false);
    assert_eq!(r["status"]["code"], 422);
    let message = r["status"]["message"].as_str().unwrap();
    for part in [
        "spec.completionPolicy.ttlSecondsAfterFinished: Invalid value: 1: ttlSecondsAfterFinished can just work with Always CompletionPolicyType",
        "spec.completionPolicy.activeDeadlineSeconds: Invalid value: 2: activeDeadlineSeconds can just work with Always CompletionPolicyType",
        "spec.template.spec.restartPolicy: Invalid value: \"Always\": pod restartPolicy can only be Never or OnFailure",
        "spec.template.metadata.labels: Invalid value:",
        "\\\"broadcastjob-name\\\" and \\\"broadcastjob-controller-uid\\\" are not allowed to preset in pod labels",
    ] {
        assert!(message.contains(&part.replace("\\\"", "\"")), "{part}\n{message}");
    }
    let mut named = job("v1beta1", good_spec());
    named["metadata"]["name"] = json!("a.b");
    let r = app.send(VALIDATE[0], &review("v1beta1", Operation::Create, &named)).await;
    assert_eq!(r["status"]["code"], 422);
    assert!(
        r["status"]["message"].as_str().unwrap().contains(
            "metadata.name: Invalid value: \"a.b\": BroadcastJob name must consist of alphanumeric characters or '-'"
        ),
        "{r}"
    );
    let undecodable = job("v1alpha1", json!({"parallelism": {"x": 1}}));
    let r = app.send(VALIDATE[0], &review("v1alpha1", Operation::Create, &undecodable)).await;
    assert_eq!(r["status"]["code"], 400, "{r}");
    let r = app.send(MUTATE[0], &review("v1alpha1", Operation::Create, &undecodable)).await;
    assert_eq!(r["status"]["code"], 400, "{r}");
}
