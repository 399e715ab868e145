//! PodProbeMarker admission through the router, in-process (issue 30 item 4; kruise
//! `pkg/webhook/podprobemarker/validating`): a valid marker is admitted, kruise's messages on
//! bad ones (422, spec §11.1; kruise answers 400), the selector immutable on UPDATE, 403 with
//! either gate off. The rule table is in `core::validation::podprobemarker`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use common::app::App;
use kruise::cluster::EmptyView;
use kruise::core::features::{FeatureGates, Gate};
use kruise::webhook::request::ReviewRequest;
use kube::core::admission::Operation;
use serde_json::{Value, json};

const VALIDATE: &str = "/validate-apps-kruise-io-podprobemarker";

fn app() -> App {
    App::with(FeatureGates::default(), Arc::new(EmptyView))
}

fn ppm(probe: Value) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "PodProbeMarker",
        "metadata": {"name": "game", "namespace": "ns"},
        "spec": {"selector": {"matchLabels": {"app": "game"}}, "probes": [probe]}})
}

fn healthy() -> Value {
    json!({"name": "healthy", "containerName": "main",
        "probe": {"exec": {"command": ["/bin/sh", "-c", "/healthy.sh"]}, "periodSeconds": 5},
        "podConditionType": "game.kruise.io/healthy",
        "markerPolicy": [
            {"state": "Succeeded", "labels": {"server-healthy": "true"},
             "annotations": {"controller.kubernetes.io/pod-deletion-cost": "10"}},
            {"state": "Failed", "labels": {"server-healthy": "false"},
             "annotations": {"controller.kubernetes.io/pod-deletion-cost": "-10"}}]})
}

fn review(op: Operation, object: &Value) -> ReviewRequest {
    ReviewRequest::new(op, "apps.kruise.io", "v1alpha1", "PodProbeMarker", "podprobemarkers")
        .name("game")
        .namespace("ns")
        .object(object.clone())
}

#[tokio::test]
async fn valid_marker_is_admitted() {
    let r = app().send(VALIDATE, &review(Operation::Create, &ppm(healthy()))).await;
    assert_eq!(r["allowed"], true, "{r}");
    assert!(r.get("patch").is_none_or(Value::is_null), "{r}");
}

#[tokio::test]
async fn bad_markers_are_denied_with_kruises_messages() {
    let app = app();
    let mut tcp_with_host = healthy();
    tcp_with_host["probe"] = json!({"tcpSocket": {"port": 8080, "host": "10.0.0.1"}});
    let mut http_no_scheme = healthy();
    http_no_scheme["probe"] = json!({"httpGet": {"path": "/healthz", "port": 8080}});
    let mut unknown_state = healthy();
    unknown_state["markerPolicy"] = json!([{"state": "Unknown", "labels": {"a": "b"}}]);
    let mut neither = healthy();
    neither["podConditionType"] = json!("");
    neither["markerPolicy"] = json!([]);
    let cases = [
        (
            ppm(json!({"name": "Ready", "containerName": "main", "probe": {"exec": {"command": ["x"]}},
            "podConditionType": "a"})),
            r#"spec.probes: Invalid value: "Ready": probe name can't be Ready"#,
        ),
        (tcp_with_host, r#"spec.probe.tcpSocket.host: Invalid value: "10.0.0.1": host field in probes is not allowed"#),
        (http_no_scheme, r#"spec.probe.httpGet.scheme: Unsupported value: "": supported values: "HTTP", "HTTPS""#),
        (unknown_state, "spec.markerPolicy.state: Required value: marker policy state must be 'True' or 'False'"),
        (neither, "podConditionType and markerPolicy cannot be empty at the same time"),
    ];
    for (i, (probe, want)) in cases.into_iter().enumerate() {
        let object = if probe.get("spec").is_some() { probe } else { ppm(probe) };
        let r = app.send(VALIDATE, &review(Operation::Create, &object)).await;
        assert_eq!(r["allowed"], false, "case {i}: {r}");
        assert_eq!(r["status"]["code"], 422, "case {i}: {r}");
        let msg = r["status"]["message"].as_str().unwrap();
        assert!(msg.contains(want), "case {i}: {msg}");
    }
    let mut no_selector = ppm(healthy());
    no_selector["spec"].as_object_mut().unwrap().remove("selector");
    let r = app.send(VALIDATE, &review(Operation::Create, &no_selector)).await;
    assert_eq!(
        r["status"]["message"],
        "spec.selector: Invalid value: null: empty Selector is not valid for PodProbeMarker."
    );
}

#[tokio::test]
async fn selector_is_immutable() {
    let old = ppm(healthy());
    let mut new = old.clone();
    new["spec"]["probes"][0]["probe"]["periodSeconds"] = json!(10);
    let r = app().send(VALIDATE, &review(Operation::Update, &new).old_object(old.clone())).await;
    assert_eq!(r["allowed"], true, "{r}");
    new["spec"]["selector"] = json!({"matchLabels": {"app": "other"}});
    let r = app().send(VALIDATE, &review(Operation::Update, &new).old_object(old)).await;
    assert_eq!(r["allowed"], false, "{r}");
    assert_eq!(
        r["status"]["message"],
        r#"selector: Invalid value: {"matchLabels":{"app":"other"}}: selector must be immutable"#
    );
}

#[tokio::test]
async fn refused_with_either_gate_off() {
    for (gate, name) in [(Gate::PodProbeMarkerGate, "PodProbeMarkerGate"), (Gate::KruiseDaemon, "KruiseDaemon")] {
        let app = App::with(FeatureGates::default().with(gate, false), Arc::new(EmptyView));
        let r = app.send(VALIDATE, &review(Operation::Create, &ppm(healthy()))).await;
        assert_eq!(r["allowed"], false, "{r}");
        assert_eq!(r["status"]["code"], 403, "{r}");
        // KruiseDaemon off turns PodProbeMarkerGate off too, so that one is named first.
        assert!(r["status"]["message"].as_str().unwrap().starts_with("feature-gate "), "{r} ({name})");
    }
}

#[tokio::test]
async fn a_body_that_does_not_decode_is_400() {
    let object = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "PodProbeMarker",
        "metadata": {"name": "game"}, "spec": {"probes": "nope"}});
    let r = app().send(VALIDATE, &review(Operation::Create, &object)).await;
    assert_eq!(r["status"]["code"], 400, "{r}");
}
