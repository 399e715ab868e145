//! Advanced DaemonSet admission through the router, in-process (issue 33 item 1; kruise v1.9.0
//! `pkg/webhook/daemonset`): both API versions and both path spellings, defaults applied by patch
//! (then valid), field errors (422), the immutable selector on UPDATE, and 400 for an unknown
//! version. The rule tables are in `core::validation::daemonset` and `core::defaults::daemonset`.

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

fn app() -> App {
    App::with(FeatureGates::default(), Arc::new(EmptyView))
}

fn daemonset(version: &str, strategy: Value) -> Value {
    json!({"apiVersion": format!("apps.kruise.io/{version}"), "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "ns"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "template": {"metadata": {"labels": {"app": "agent"}},
                              "spec": {"containers": [{"name": "agent", "image": "agent:1"}]}},
                 "updateStrategy": strategy}})
}

fn review(version: &str, op: Operation, object: &Value, old: Option<&Value>) -> ReviewRequest {
    ReviewRequest::new(op, "apps.kruise.io", version, "DaemonSet", "daemonsets")
        .name("agent")
        .namespace("ns")
        .objects(Some(object), old)
}

const SPELLINGS: [[&str; 2]; 2] = [
    ["/mutate-apps-kruise-io-daemonset", "/validate-apps-kruise-io-daemonset"],
    ["/mutate-apps-kruise-io-v1alpha1-daemonset", "/validate-apps-kruise-io-v1alpha1-daemonset"],
];

#[tokio::test]
async fn defaulted_then_valid_on_every_path_and_version() {
    let app = app();
    for paths in SPELLINGS {
        for version in ["v1alpha1", "v1beta1"] {
            let object = daemonset(version, json!({}));
            let mutated = app.send(paths[0], &review(version, Operation::Create, &object, None)).await;
            assert_eq!(mutated["allowed"], true, "{mutated}");
            let defaulted = apply(&object, response_patch(&mutated).as_ref());
            assert_eq!(defaulted["spec"]["burstReplicas"], 250);
            assert_eq!(defaulted["spec"]["revisionHistoryLimit"], 10);
            assert_eq!(
                defaulted["spec"]["updateStrategy"],
                json!({"type": "RollingUpdate",
                       "rollingUpdate": {"rollingUpdateType": "Standard", "maxUnavailable": 1, "maxSurge": 0}})
            );
            // kruise leaves the pod template alone here.
            assert_eq!(defaulted["spec"]["template"], object["spec"]["template"]);
            let validated = app.send(paths[1], &review(version, Operation::Create, &defaulted, None)).await;
            assert_eq!(validated["allowed"], true, "{paths:?} {version}: {validated}");
            // Defaulting a defaulted object changes nothing: no patch.
            let again = app.send(paths[0], &review(version, Operation::Create, &defaulted, None)).await;
            assert!(response_patch(&again).is_none_or(|p| p.0.is_empty()), "{again}");
        }
    }
}

#[tokio::test]
async fn surging_is_converted_in_v1alpha1_and_refused_in_v1beta1() {
    let app = app();
    let strategy = json!({"type": "RollingUpdate", "rollingUpdate": {"rollingUpdateType": "Surging"}});
    let alpha = daemonset("v1alpha1", strategy.clone());
    let mutated = app.send(SPELLINGS[0][0], &review("v1alpha1", Operation::Create, &alpha, None)).await;
    let defaulted = apply(&alpha, response_patch(&mutated).as_ref());
    assert_eq!(
        defaulted["spec"]["updateStrategy"]["rollingUpdate"],
        json!({"rollingUpdateType": "Standard", "maxSurge": 1, "maxUnavailable": 0})
    );
    let beta = daemonset("v1beta1", strategy);
    let mutated = app.send(SPELLINGS[0][0], &review("v1beta1", Operation::Create, &beta, None)).await;
    let defaulted = apply(&beta, response_patch(&mutated).as_ref());
    let validated = app.send(SPELLINGS[0][1], &review("v1beta1", Operation::Create, &defaulted, None)).await;
    assert_eq!(validated["status"]["code"], 422);
    assert_eq!(
        validated["status"]["message"],
        "spec.updateStrategy.rollingUpdate.rollingUpdate.type: Unsupported value: \"Surging\": supported values: \"Standard\", \"InPlaceIfPossible\""
    );
}

#[tokio::test]
async fn invalid_objects_get_field_errors() {
    let app = app();
    let mut object = daemonset(
        "v1beta1",
        json!({"type": "RollingUpdate", "rollingUpdate": {"rollingUpdateType": "InPlaceIfPossible", "maxSurge": 1, "maxUnavailable": "150%"}}),
    );
    object["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
    object["spec"]["template"]["metadata"]["labels"] = json!({"app": "other"});
    let r = app.send(SPELLINGS[0][1], &review("v1beta1", Operation::Create, &object, None)).await;
    assert_eq!((r["allowed"].clone(), r["status"]["code"].clone()), (json!(false), json!(422)), "{r}");
    let message = r["status"]["message"].as_str().unwrap();
    for part in [
        "spec.template.metadata.labels: Invalid value: {\"app\":\"other\"}: `selector` does not match template `labels`",
        "spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"",
        "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: \"150%\": must not be greater than 100%",
        "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero",
        "spec.updateStrategy.rollingUpdate.maxSurge: Required value: must be 0 for InPlaceIfPossible type",
    ] {
        assert!(message.contains(part), "{part:?} not in {message}");
    }
}

#[tokio::test]
async fn update_may_not_change_the_selector() {
    let app = app();
    let strategy = json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}});
    let old = daemonset("v1alpha1", strategy.clone());
    let mut new = old.clone();
    new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("agent:2");
    new["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = json!(2);
    let r = app.send(SPELLINGS[0][1], &review("v1alpha1", Operation::Update, &new, Some(&old))).await;
    assert_eq!(r["allowed"], true, "template, strategy may change: {r}");
    new["spec"]["selector"]["matchLabels"]["tier"] = json!("node");
    new["spec"]["template"]["metadata"]["labels"]["tier"] = json!("node");
    let r = app.send(SPELLINGS[0][1], &review("v1alpha1", Operation::Update, &new, Some(&old))).await;
    assert_eq!(r["status"]["code"], 422);
    assert!(
        r["status"]["message"]
            .as_str()
            .unwrap()
            .starts_with("spec: Forbidden: updates to daemonset spec for fields other than")
    );
}

#[tokio::test]
async fn unknown_version_is_a_bad_request() {
    let app = app();
    let object = daemonset("v2", json!({}));
    for path in SPELLINGS[0] {
        let r = app.send(path, &review("v2", Operation::Create, &object, None)).await;
        assert_eq!(r["status"]["code"], 400, "{path}: {r}");
        assert_eq!(r["status"]["message"], "unsupported version: v2");
    }
}
