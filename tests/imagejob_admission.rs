//! ImageListPullJob and NodeImage admission through the router, in-process (issue 29 item 1;
//! kruise v1.9 `pkg/webhook/imagelistpulljob`, `pkg/webhook/nodeimage`): both API versions and
//! both path spellings, the gate refusals (403), defaults applied by patch (and then valid), and
//! field errors (422) as spec §11.1 has them. kruise has no handler tests for these kinds; the
//! rule tables are in `core::validation::{imagelistpulljob,nodeimage}`.

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

const GATES: &str = "ImagePullJobGate=true";

fn app(gates: &str) -> App {
    App::with(FeatureGates::parse(gates).unwrap(), Arc::new(EmptyView))
}

fn list_job(version: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("apps.kruise.io/{version}"), "kind": "ImageListPullJob",
        "metadata": {"name": "warm", "namespace": "ns"}, "spec": spec})
}

fn node_image(version: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("apps.kruise.io/{version}"), "kind": "NodeImage",
        "metadata": {"name": "node-1"}, "spec": spec})
}

fn review(kind: &str, version: &str, op: Operation, object: &Value) -> ReviewRequest {
    let resource = format!("{}s", kind.to_lowercase());
    let r = ReviewRequest::new(op, "apps.kruise.io", version, kind, &resource).name("x").object(object.clone());
    if kind == "NodeImage" { r.cluster_scoped() } else { r.namespace("ns") }
}

/// Mutates then validates, as the apiserver does: the defaulted object and the validating answer.
async fn admit(app: &App, kind: &str, version: &str, object: &Value, paths: [&str; 2]) -> (Value, Value) {
    let mutated = app.send(paths[0], &review(kind, version, Operation::Create, object)).await;
    assert_eq!(mutated["allowed"], true, "{mutated}");
    let defaulted = apply(object, response_patch(&mutated).as_ref());
    let validated = app.send(paths[1], &review(kind, version, Operation::Create, &defaulted)).await;
    (defaulted, validated)
}

#[tokio::test]
async fn image_list_pull_job_is_defaulted_then_valid_on_every_path_and_version() {
    let app = app(GATES);
    let spellings = [
        ["/mutate-apps-kruise-io-imagelistpulljob", "/validate-apps-kruise-io-imagelistpulljob"],
        ["/mutate-apps-kruise-io-v1alpha1-imagelistpulljob", "/validate-apps-kruise-io-v1alpha1-imagelistpulljob"],
    ];
    for paths in spellings {
        for version in ["v1alpha1", "v1beta1"] {
            let object = list_job(version, json!({"images": ["nginx:1.27", "busybox"], "completionPolicy": {}}));
            let (defaulted, validated) = admit(&app, "ImageListPullJob", version, &object, paths).await;
            assert_eq!(defaulted["spec"]["completionPolicy"], json!({"type": "Always"}));
            assert_eq!(defaulted["spec"]["pullPolicy"], json!({"timeoutSeconds": 600, "backoffLimit": 3}));
            assert_eq!(validated["allowed"], true, "{paths:?} {version}: {validated}");
        }
    }
}

#[tokio::test]
async fn image_list_pull_job_errors_are_field_errors() {
    let app = app(GATES);
    let object = list_job(
        "v1beta1",
        json!({"images": ["nginx:1", "nginx:1"], "completionPolicy": {"type": "Never", "ttlSecondsAfterFinished": 5},
               "selector": {"names": ["a"], "matchLabels": {"x": "y"}}, "podSelector": {"matchLabels": {"x": "y"}}}),
    );
    let response = app
        .send(
            "/validate-apps-kruise-io-imagelistpulljob",
            &review("ImageListPullJob", "v1beta1", Operation::Create, &object),
        )
        .await;
    assert_eq!(response["allowed"], false);
    assert_eq!(response["status"]["code"], 422);
    let message = response["status"]["message"].as_str().unwrap();
    for part in [
        "spec.selector: Invalid value: ",
        "can not set both names and labelSelector in this spec.selector",
        "spec.podSelector: Invalid value: ",
        "can not set both selector and podSelector",
        "spec.images[1]: Invalid value: \"nginx:1\": images cannot have duplicate values",
        "activeDeadlineSeconds and ttlSecondsAfterFinished can only work with Always CompletionPolicyType",
    ] {
        assert!(message.contains(part), "{part:?} not in {message}");
    }
    assert!(message.starts_with('['), "several errors are aggregated: {message}");
}

#[tokio::test]
async fn image_list_pull_job_gates() {
    let object = list_job("v1alpha1", json!({"images": ["nginx"], "completionPolicy": {"type": "Always"}}));
    let path = "/validate-apps-kruise-io-imagelistpulljob";
    let r = review("ImageListPullJob", "v1alpha1", Operation::Create, &object);
    let off = app("").send(path, &r).await;
    assert_eq!((off["allowed"].clone(), off["status"]["code"].clone()), (json!(false), json!(403)));
    assert_eq!(off["status"]["message"], "feature-gate ImagePullJobGate is not enabled");
    let no_daemon = app("ImagePullJobGate=true,KruiseDaemon=false").send(path, &r).await;
    assert_eq!(no_daemon["status"]["message"], "feature-gate KruiseDaemon is not enabled");
    // PreDownloadImageForInPlaceUpdate forces ImagePullJobGate on.
    let predownload = app("PreDownloadImageForInPlaceUpdate=true").send(path, &r).await;
    assert_eq!(predownload["allowed"], true, "{predownload}");
    // Defaulting needs no gate, as kruise's mutating handler checks none.
    let mutated = app("").send("/mutate-apps-kruise-io-imagelistpulljob", &r).await;
    assert_eq!(mutated["allowed"], true);
}

#[tokio::test]
async fn image_list_pull_job_update_is_validated_on_the_new_object() {
    let app = app(GATES);
    let old = list_job("v1alpha1", json!({"images": ["nginx"], "completionPolicy": {"type": "Always"}}));
    let new = list_job("v1alpha1", json!({"images": [], "completionPolicy": {"type": "Always"}}));
    let r = review("ImageListPullJob", "v1alpha1", Operation::Update, &new).old_object(old);
    let response = app.send("/validate-apps-kruise-io-imagelistpulljob", &r).await;
    assert_eq!(response["status"]["code"], 422);
    assert_eq!(response["status"]["message"], "spec.images: Required value: image can not be empty");
}

#[tokio::test]
async fn node_image_is_defaulted_sorted_then_valid() {
    let app = app("");
    let spellings = [
        ["/mutate-apps-kruise-io-nodeimage", "/validate-apps-kruise-io-nodeimage"],
        ["/mutate-apps-kruise-io-v1alpha1-nodeimage", "/validate-apps-kruise-io-v1alpha1-nodeimage"],
    ];
    for paths in spellings {
        for version in ["v1alpha1", "v1beta1"] {
            let object = node_image(
                version,
                json!({"images": {"nginx": {
                "pullSecrets": [{"namespace": "ns", "name": "regcred", "mode": "Always"}],
                "tags": [
                    {"tag": "latest", "pullPolicy": {"ttlSecondsAfterFinished": 300}},
                    {"tag": "1.27", "createdAt": "2024-01-01T00:00:00Z", "pullPolicy": {"ttlSecondsAfterFinished": 300, "timeoutSeconds": 5}}
                ]}}}),
            );
            let (defaulted, validated) = admit(&app, "NodeImage", version, &object, paths).await;
            let tags = &defaulted["spec"]["images"]["nginx"]["tags"];
            assert_eq!(tags[0]["tag"], "1.27", "sorted by tag: {tags}");
            assert_eq!(tags[0]["createdAt"], "2024-01-01T00:00:00Z");
            assert_eq!(
                tags[0]["pullPolicy"],
                json!({"ttlSecondsAfterFinished": 300, "timeoutSeconds": 5, "backoffLimit": 3})
            );
            assert_eq!(tags[1]["tag"], "latest");
            assert!(tags[1]["createdAt"].is_string(), "createdAt defaulted: {tags}");
            assert_eq!(tags[1]["pullPolicy"]["timeoutSeconds"], 600);
            assert_eq!(
                defaulted["spec"]["images"]["nginx"]["pullSecrets"][0]["mode"], "Always",
                "v1beta1's mode is left as sent"
            );
            assert_eq!(validated["allowed"], true, "{paths:?} {version}: {validated}");
        }
    }
}

#[tokio::test]
async fn node_image_errors_and_gate() {
    let object = node_image(
        "v1alpha1",
        json!({"images": {"nginx": {"tags": [{"tag": "1", "createdAt": "2024-01-01T00:00:00Z", "pullPolicy": {}}]}}}),
    );
    let path = "/validate-apps-kruise-io-nodeimage";
    let r = review("NodeImage", "v1alpha1", Operation::Create, &object);
    let response = app("").send(path, &r).await;
    assert_eq!(response["status"]["code"], 422);
    assert_eq!(
        response["status"]["message"],
        "spec.images[nginx].tags[0].pullPolicy.ttlSecondsAfterFinished: Required value: pullPolicy.ttlSecondsAfterFinished for nginx/1 must set"
    );
    let off = app("KruiseDaemon=false").send(path, &r).await;
    assert_eq!(off["status"]["code"], 403);
    assert_eq!(off["status"]["message"], "feature-gate KruiseDaemon is not enabled");
}

#[tokio::test]
async fn an_unserved_version_is_a_bad_request() {
    let object = list_job("v2", json!({"images": ["nginx"]}));
    let r = review("ImageListPullJob", "v2", Operation::Create, &object);
    for path in ["/mutate-apps-kruise-io-imagelistpulljob", "/validate-apps-kruise-io-imagelistpulljob"] {
        let response = app(GATES).send(path, &r).await;
        assert_eq!(response["status"]["code"], 400, "{path}: {response}");
    }
}

fn pull_job(version: &str, pull_secrets: Option<Vec<&str>>) -> Value {
    let mut spec = json!({"image": "nginx:latest", "completionPolicy": {"type": "Always"},
                          "pullPolicy": {"timeoutSeconds": 600}});
    if let Some(s) = pull_secrets {
        spec["pullSecrets"] = json!(s);
    }
    json!({"apiVersion": format!("apps.kruise.io/{version}"), "kind": "ImagePullJob",
        "metadata": {"name": "test-job", "namespace": "default"}, "spec": spec})
}

/// kruise's `TestPullSecretsImmutability` (v1.9, through the v1beta1 handler), row by row, on
/// both versions.
#[tokio::test]
async fn image_pull_job_pull_secrets_are_immutable() {
    let app = app(GATES);
    /// (name, new pullSecrets, old pullSecrets on UPDATE, allowed)
    type Row<'a> = (&'a str, Option<Vec<&'a str>>, Option<Option<Vec<&'a str>>>, bool);
    let rows: Vec<Row> = vec![
        ("create with pullSecrets is allowed", Some(vec!["secret1"]), None, true),
        ("update with unchanged pullSecrets is allowed", Some(vec!["secret1"]), Some(Some(vec!["secret1"])), true),
        ("update with changed pullSecrets is denied", Some(vec!["secret2"]), Some(Some(vec!["secret1"])), false),
        ("update adding pullSecrets is denied", Some(vec!["secret1"]), Some(None), false),
        ("update removing pullSecrets is denied", None, Some(Some(vec!["secret1"])), false),
        ("update with both nil pullSecrets is allowed", None, Some(None), true),
    ];
    for version in ["v1alpha1", "v1beta1"] {
        for (name, new, old, allowed) in &rows {
            let object = pull_job(version, new.clone());
            let r = match old {
                None => review("ImagePullJob", version, Operation::Create, &object),
                Some(old) => review("ImagePullJob", version, Operation::Update, &object)
                    .old_object(pull_job(version, old.clone())),
            };
            let response = app.send("/validate-apps-kruise-io-imagepulljob", &r).await;
            assert_eq!(response["allowed"], *allowed, "{version} {name}: {response}");
            if !allowed {
                assert_eq!(response["status"]["code"], 403);
                assert_eq!(response["status"]["message"], "spec.pullSecrets is immutable");
            }
        }
    }
}

#[tokio::test]
async fn image_pull_job_defaults_add_the_finalizer_only_on_a_v1alpha1_create() {
    let app = app(GATES);
    for (version, op, finalizer) in [
        ("v1alpha1", Operation::Create, true),
        ("v1beta1", Operation::Create, false),
        ("v1alpha1", Operation::Update, false),
    ] {
        let object = json!({"apiVersion": format!("apps.kruise.io/{version}"), "kind": "ImagePullJob",
            "metadata": {"name": "j", "namespace": "default"}, "spec": {"image": "nginx", "completionPolicy": {}}});
        let mut r = review("ImagePullJob", version, op.clone(), &object);
        if op == Operation::Update {
            r = r.old_object(object.clone());
        }
        let response = app.send("/mutate-apps-kruise-io-v1alpha1-imagepulljob", &r).await;
        let defaulted = apply(&object, response_patch(&response).as_ref());
        assert_eq!(defaulted["spec"]["completionPolicy"], json!({"type": "Always"}));
        assert_eq!(defaulted["spec"]["pullPolicy"], json!({"timeoutSeconds": 600, "backoffLimit": 3}));
        assert_eq!(defaulted["spec"]["imagePullPolicy"], "IfNotPresent");
        let want = if finalizer { json!(["apps.kruise.io/deletion-protection"]) } else { Value::Null };
        assert_eq!(defaulted["metadata"]["finalizers"], want, "{version} {op:?}");
        let validated = app
            .send(
                "/validate-apps-kruise-io-imagepulljob",
                &review("ImagePullJob", version, Operation::Create, &defaulted),
            )
            .await;
        assert_eq!(validated["allowed"], true, "{validated}");
    }
}

#[tokio::test]
async fn image_pull_job_errors_and_gates() {
    let mut object = pull_job("v1alpha1", None);
    object["spec"]["parallelism"] = json!("50%");
    object["spec"]["completionPolicy"]["activeDeadlineSeconds"] = json!(10);
    let r = review("ImagePullJob", "v1alpha1", Operation::Create, &object);
    let response = app(GATES).send("/validate-apps-kruise-io-imagepulljob", &r).await;
    assert_eq!(response["status"]["code"], 422);
    let message = response["status"]["message"].as_str().unwrap();
    assert!(
        message.contains("spec.parallelism: Invalid value: \"50%\": parallelism does not support percentage value"),
        "{message}"
    );
    assert!(
        message.contains(
            "completionPolicy.activeDeadlineSeconds must be greater than pullPolicy.timeoutSeconds(default 600)"
        ),
        "{message}"
    );
    let off = app("").send("/validate-apps-kruise-io-imagepulljob", &r).await;
    assert_eq!(off["status"]["code"], 403);
    assert_eq!(off["status"]["message"], "feature-gate ImagePullJobGate is not enabled");
}

/// The jobs pre-download creates pass the ImagePullJob webhooks unchanged but for
/// `imagePullPolicy` (they are created at v1beta1: no finalizer).
#[tokio::test]
async fn a_pre_download_job_is_admitted() {
    let object = json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "ImagePullJob",
        "metadata": {"name": "web-7c9f-main", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"image": "nginx:2", "parallelism": 2,
                 "podSelector": {"matchLabels": {"app": "web"}, "matchExpressions": [
                     {"key": "controller-revision-hash", "operator": "NotIn", "values": ["web-7c9f", "7c9f"]}]},
                 "pullPolicy": {"timeoutSeconds": 300, "backoffLimit": 1},
                 "completionPolicy": {"type": "Always", "ttlSecondsAfterFinished": 600}}});
    let app = app("PreDownloadImageForInPlaceUpdate=true");
    let paths = ["/mutate-apps-kruise-io-imagepulljob", "/validate-apps-kruise-io-imagepulljob"];
    let (defaulted, validated) = admit(&app, "ImagePullJob", "v1beta1", &object, paths).await;
    assert_eq!(validated["allowed"], true, "{validated}");
    let mut want = object.clone();
    want["spec"]["imagePullPolicy"] = json!("IfNotPresent");
    assert_eq!(defaulted, want);
}
