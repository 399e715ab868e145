//! `/convert` through the router, in-process (`router().oneshot()`): a ConversionReview of
//! CloneSets, SidecarSets, ImagePullJobs and Advanced StatefulSets is answered with every object
//! converted, in order, under the request's uid; an unconvertible object is a `Failure` result
//! (200); malformed bodies get the same transport answers as the admission paths (415, 413, 400
//! with a JSON `Status`), never a panic.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::app::App;
use serde_json::{Value, json};

fn review(uid: &str, desired: &str, objects: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objects}}))
    .unwrap()
}

#[tokio::test]
async fn converts_each_kind_both_ways() {
    let app = App::new();
    let v1alpha1 = json!([
        {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "metadata": {"name": "cs", "namespace": "ns"},
         "spec": {"replicas": 2, "updateStrategy": {"type": "InPlaceIfPossible", "partition": 1}, "scaleStrategy": {"disablePVCReuse": true},
                  "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}},
        {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet", "metadata": {"name": "ss"},
         "spec": {"namespace": "team", "containers": [{"name": "s", "image": "busybox"}]}},
        {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "ImagePullJob", "metadata": {"name": "j", "namespace": "ns"},
         "spec": {"image": "nginx", "completionPolicy": {"type": "Always"}}},
        {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "StatefulSet", "metadata": {"name": "s", "namespace": "ns"},
         "spec": {"replicas": 1, "serviceName": "svc"}},
    ]);
    let r = app
        .post_as("/convert", Some("application/json"), review("uid-7", "apps.kruise.io/v1beta1", v1alpha1.clone()))
        .await;
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let out = r.json();
    assert_eq!(out["kind"], "ConversionReview");
    assert_eq!(out["response"]["uid"], "uid-7");
    assert_eq!(out["response"]["result"]["status"], "Success");
    let beta = out["response"]["convertedObjects"].clone();
    assert_eq!(
        beta[0]["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "InPlaceIfPossible", "partition": 1}})
    );
    assert!(beta[0]["spec"].get("scaleStrategy").is_none(), "disablePVCReuse: true is v1beta1's default");
    assert_eq!(beta[1]["spec"]["namespaceSelector"], json!({"matchLabels": {"kubernetes.io/metadata.name": "team"}}));
    assert_eq!(beta[2]["spec"], v1alpha1[2]["spec"]);
    assert_eq!(beta[3]["spec"], v1alpha1[3]["spec"]);
    assert!(beta.as_array().unwrap().iter().all(|o| o["apiVersion"] == "apps.kruise.io/v1beta1"));

    // And back: the same objects.
    let r = app.post_as("/convert", Some("application/json"), review("uid-8", "apps.kruise.io/v1alpha1", beta)).await;
    let back = r.json()["response"]["convertedObjects"].clone();
    assert_eq!(back, v1alpha1);
}

#[tokio::test]
async fn failures_and_malformed_bodies() {
    let app = App::new();
    let unknown = review(
        "u",
        "apps.kruise.io/v1beta1",
        json!([{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment"}]),
    );
    let r = app.post_as("/convert", Some("application/json"), unknown).await;
    assert_eq!(r.status, 200);
    let out = r.json();
    assert_eq!(out["response"]["uid"], "u");
    assert_eq!(out["response"]["result"]["status"], "Failure");
    assert!(out["response"]["result"]["message"].as_str().unwrap().contains("\"UnitedDeployment\""));

    let cases: [(Option<&str>, Vec<u8>, u16, &str); 5] = [
        (Some("text/plain"), b"{}".to_vec(), 415, "Content-Type must be application/json"),
        (Some("application/json"), b"{\"apiVersion\":".to_vec(), 400, "not valid JSON"),
        (
            Some("application/json"),
            br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}"#.to_vec(),
            400,
            "no request",
        ),
        (
            Some("application/json"),
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}}"#.to_vec(),
            400,
            "not a ConversionReview",
        ),
        (Some("application/json"), vec![b' '; 7 * 1024 * 1024 + 1], 413, "larger than"),
    ];
    for (content_type, body, code, message) in cases {
        let r = app.post_as("/convert", content_type, body).await;
        assert_eq!(r.status, code, "{message}");
        assert_eq!(r.json()["kind"], "Status");
        assert!(r.json()["message"].as_str().unwrap().contains(message), "{}", r.json()["message"]);
    }
}
