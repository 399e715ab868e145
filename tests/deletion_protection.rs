//! The deletion-protection webhooks of kinds kruise does not own (spec §8.2, §11.1; kruise
//! `pkg/webhook/{builtinworkloads,namespace,service,ingress,customresourcedefinition}/validating`)
//! through the router: an AdmissionReview in, allowed or a 403 with kruise's message out. The
//! Cascading checks of Namespaces and CRDs count what a `ListSource` lists for the review (a fake
//! here that records what it was asked), or, without one, what the view holds.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};

use axum::body::Body;
use http_body_util::BodyExt;
use hyper::Request;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kruise::cluster::snapshot::Snapshot;
use kruise::cluster::{ClusterView, EmptyView, ListFuture, ListSource};
use kruise::core::features::FeatureGates;
use kruise::metrics::Metrics;
use kruise::webhook::Context;
use kruise::webhook::http::{AppState, router};
use serde_json::{Value, json};
use tower::ServiceExt;

const ALWAYS: &str = "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Always";

/// A list source answering fixed lists, recording each call.
struct Lists {
    pods: Vec<Value>,
    claims: Vec<Value>,
    crs: Result<Vec<Value>, String>,
    calls: Mutex<Vec<String>>,
}

impl Default for Lists {
    fn default() -> Self {
        Self { pods: Vec::new(), claims: Vec::new(), crs: Ok(Vec::new()), calls: Mutex::new(Vec::new()) }
    }
}

fn decode<T: serde::de::DeserializeOwned>(items: &[Value]) -> Vec<T> {
    items.iter().map(|v| serde_json::from_value(v.clone()).unwrap()).collect()
}

impl ListSource for Lists {
    fn pods<'a>(&'a self, namespace: &'a str) -> ListFuture<'a, Pod> {
        self.calls.lock().unwrap().push(format!("pods {namespace}"));
        Box::pin(async move { Ok(decode(&self.pods)) })
    }
    fn claims<'a>(&'a self, namespace: &'a str) -> ListFuture<'a, PersistentVolumeClaim> {
        self.calls.lock().unwrap().push(format!("claims {namespace}"));
        Box::pin(async move { Ok(decode(&self.claims)) })
    }
    fn custom_resources<'a>(&'a self, group: &'a str, version: &'a str, plural: &'a str) -> ListFuture<'a, ObjectMeta> {
        self.calls.lock().unwrap().push(format!("{plural}.{group}/{version}"));
        Box::pin(async move { self.crs.clone().map(|items| decode(&items)) })
    }
}

struct Rig {
    router: axum::Router,
}

impl Rig {
    fn new(gates: &str, cluster: Arc<dyn ClusterView>, lists: Option<Arc<Lists>>) -> Self {
        let ctx = Context::with_gates(FeatureGates::parse(gates).unwrap(), cluster);
        let mut state = AppState::new(ctx, Metrics::new());
        if let Some(l) = lists {
            state = state.with_lists(l);
        }
        Rig { router: router(Arc::new(state)) }
    }

    /// POSTs a review; returns the HTTP status and the review's `response`.
    async fn send(&self, path: &str, review: Value) -> (u16, Value) {
        let request = Request::post(path)
            .header("content-type", "application/json")
            .body(Body::from(serde_json::to_vec(&review).unwrap()))
            .unwrap();
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status().as_u16();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let out: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        assert_eq!(status, 200, "{out}");
        assert_eq!(out["response"]["uid"], "u-1");
        let code = out["response"]["status"]["code"].as_u64().unwrap_or(200) as u16;
        (code, out["response"].clone())
    }
}

/// A review of `operation` on `object` (the old object of a DELETE).
fn review(group: &str, version: &str, kind: &str, resource: &str, operation: &str, object: Value) -> Value {
    let mut request = json!({
        "uid": "u-1",
        "kind": {"group": group, "version": version, "kind": kind},
        "resource": {"group": group, "version": version, "resource": resource},
        "name": object["metadata"]["name"],
        "operation": operation,
        "userInfo": {"username": "alice"},
    });
    if let Some(ns) = object["metadata"].get("namespace") {
        request["namespace"] = ns.clone();
    }
    if operation == "DELETE" {
        request["oldObject"] = object;
    } else {
        request["object"] = object;
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
}

fn labelled(mut object: Value, protection: Option<&str>) -> Value {
    if let Some(p) = protection {
        object["metadata"]["labels"] = json!({"policy.kruise.io/delete-protection": p});
    }
    object
}

fn message(response: &Value) -> &str {
    response["status"]["message"].as_str().unwrap_or("")
}

const ON: &str = "ResourcesDeletionProtection=true";

#[tokio::test]
async fn builtin_workloads_follow_replicas() {
    let rig = Rig::new(ON, Arc::new(EmptyView), None);
    for (path, kind, resource) in [
        ("/validate-apps-deployment", "Deployment", "deployments"),
        ("/validate-apps-replicaset", "ReplicaSet", "replicasets"),
        ("/validate-apps-statefulset", "StatefulSet", "statefulsets"),
    ] {
        let object = |replicas: i64| json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "w", "namespace": "ns"}, "spec": {"replicas": replicas, "selector": {"matchLabels": {"a": "b"}}, "template": {}}});
        let send = |p: Option<&str>, replicas: i64, op: &str| {
            rig.send(path, review("apps", "v1", kind, resource, op, labelled(object(replicas), p)))
        };
        let (code, r) = send(Some("Always"), 0, "DELETE").await;
        assert_eq!((code, message(&r), r["allowed"].as_bool()), (403, ALWAYS, Some(false)), "{kind}");
        let (code, r) = send(Some("Cascading"), 2, "DELETE").await;
        let want = "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and replicas 2>0";
        assert_eq!((code, message(&r)), (403, want), "{kind}");
        let (code, r) = send(Some("Cascading"), 0, "DELETE").await;
        assert_eq!((code, r["allowed"].as_bool()), (200, Some(true)), "{kind}");
        let (code, _) = send(None, 3, "DELETE").await;
        assert_eq!(code, 200, "{kind}");
        // Only DELETE is decided on.
        let (code, r) = send(Some("Always"), 3, "UPDATE").await;
        assert_eq!((code, r["allowed"].as_bool()), (200, Some(true)), "{kind}");
    }
    // A body that does not decode is a 400; another kind on the path is allowed.
    let bad = json!({"metadata": {"name": "w"}, "spec": {"replicas": "two"}});
    let (code, _) =
        rig.send("/validate-apps-deployment", review("apps", "v1", "Deployment", "deployments", "DELETE", bad)).await;
    assert_eq!(code, 400);
    let other = labelled(json!({"metadata": {"name": "d"}}), Some("Always"));
    let (code, _) =
        rig.send("/validate-apps-deployment", review("apps", "v1", "DaemonSet", "daemonsets", "DELETE", other)).await;
    assert_eq!(code, 200);
    // The gate off: nothing is protected.
    let off = Rig::new("", Arc::new(EmptyView), None);
    let object =
        labelled(json!({"metadata": {"name": "w", "namespace": "ns"}, "spec": {"replicas": 2}}), Some("Always"));
    let (code, _) = off
        .send("/validate-apps-deployment", review("apps", "v1", "Deployment", "deployments", "DELETE", object))
        .await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn services_and_ingresses_know_only_always() {
    let rig = Rig::new(ON, Arc::new(EmptyView), None);
    let svc =
        |p| labelled(json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "ns"}}), p);
    let (code, r) =
        rig.send("/validate-service", review("", "v1", "Service", "services", "DELETE", svc(Some("Always")))).await;
    assert_eq!((code, message(&r)), (403, ALWAYS));
    let (code, _) =
        rig.send("/validate-service", review("", "v1", "Service", "services", "DELETE", svc(Some("Cascading")))).await;
    assert_eq!(code, 200);
    let ing = |p| labelled(json!({"metadata": {"name": "i", "namespace": "ns"}}), p);
    for version in ["v1", "v1beta1"] {
        let r = review("networking.k8s.io", version, "Ingress", "ingresses", "DELETE", ing(Some("Always")));
        let (code, r) = rig.send("/validate-ingress", r).await;
        assert_eq!((code, message(&r)), (403, ALWAYS), "{version}");
    }
    let deleting = with_deletion(ing(Some("Always")));
    let (code, _) = rig
        .send("/validate-ingress", review("networking.k8s.io", "v1", "Ingress", "ingresses", "DELETE", deleting))
        .await;
    assert_eq!(code, 200, "an object already being deleted");
}

fn with_deletion(mut object: Value) -> Value {
    object["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    object
}

fn pod(name: &str, phase: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "team"}, "status": {"phase": phase}})
}

fn claim(phase: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c", "namespace": "team"}, "status": {"phase": phase}})
}

fn namespace_review(protection: Option<&str>) -> Value {
    let ns = labelled(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}), protection);
    review("", "v1", "Namespace", "namespaces", "DELETE", ns)
}

#[tokio::test]
async fn namespaces_count_what_is_listed() {
    let lists = Arc::new(Lists {
        pods: vec![pod("a", "Running"), pod("b", "Succeeded")],
        claims: vec![claim("Bound")],
        ..Default::default()
    });
    let rig = Rig::new(ON, Arc::new(EmptyView), Some(Arc::clone(&lists)));
    let (code, r) = rig.send("/validate-namespace", namespace_review(Some("Always"))).await;
    assert_eq!((code, message(&r)), (403, ALWAYS));
    assert!(lists.calls.lock().unwrap().is_empty(), "Always lists nothing");
    let (code, r) = rig.send("/validate-namespace", namespace_review(Some("Cascading"))).await;
    let want =
        "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and active pods 1>0";
    assert_eq!((code, message(&r)), (403, want));
    assert_eq!(*lists.calls.lock().unwrap(), ["pods team", "claims team"]);

    let lists = Arc::new(Lists { pods: vec![pod("b", "Failed")], claims: vec![claim("Bound")], ..Default::default() });
    let rig = Rig::new(ON, Arc::new(EmptyView), Some(Arc::clone(&lists)));
    let (code, r) = rig.send("/validate-namespace", namespace_review(Some("Cascading"))).await;
    let want = "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and \"Bound\" status pvc 1>0";
    assert_eq!((code, message(&r)), (403, want));

    let lists = Arc::new(Lists { claims: vec![claim("Pending")], ..Default::default() });
    let rig = Rig::new(ON, Arc::new(EmptyView), Some(Arc::clone(&lists)));
    let (code, _) = rig.send("/validate-namespace", namespace_review(Some("Cascading"))).await;
    assert_eq!(code, 200);
    let (code, _) = rig.send("/validate-namespace", namespace_review(None)).await;
    assert_eq!(code, 200);
    assert_eq!(lists.calls.lock().unwrap().len(), 2, "an unlabelled namespace lists nothing");
}

#[tokio::test]
async fn without_a_list_source_namespaces_count_the_pods_of_the_view() {
    let mut snap = Snapshot::default();
    snap.insert(pod("a", "Running")).unwrap();
    let rig = Rig::new(ON, Arc::new(snap), None);
    let (code, r) = rig.send("/validate-namespace", namespace_review(Some("Cascading"))).await;
    let want =
        "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and active pods 1>0";
    assert_eq!((code, message(&r)), (403, want));
    let rig = Rig::new(ON, Arc::new(EmptyView), None);
    let (code, _) = rig.send("/validate-namespace", namespace_review(Some("Cascading"))).await;
    assert_eq!(code, 200);
}

fn crd_review(version: &str, protection: Option<&str>) -> Value {
    let crd = labelled(
        json!({"apiVersion": format!("apiextensions.k8s.io/{version}"), "kind": "CustomResourceDefinition",
            "metadata": {"name": "foos.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "foos", "kind": "Foo", "listKind": "FooList"},
                "versions": [{"name": "v1alpha1", "served": true, "storage": false},
                             {"name": "v1", "served": true, "storage": true}]}}),
        protection,
    );
    review("apiextensions.k8s.io", version, "CustomResourceDefinition", "customresourcedefinitions", "DELETE", crd)
}

#[tokio::test]
async fn crds_count_their_custom_resources() {
    let cr = |deleting: bool| {
        let o = json!({"metadata": {"name": "f", "namespace": "team"}});
        // The source lists metadata only.
        if deleting { with_deletion(o)["metadata"].clone() } else { o["metadata"].clone() }
    };
    let lists = Arc::new(Lists { crs: Ok(vec![cr(false), cr(true)]), ..Default::default() });
    let path = "/validate-customresourcedefinition";

    let base = Rig::new(ON, Arc::new(EmptyView), Some(Arc::clone(&lists)));
    let (code, r) = base.send(path, crd_review("v1", Some("Always"))).await;
    assert_eq!((code, message(&r)), (403, ALWAYS));
    let (code, r) = base.send(path, crd_review("v1", Some("Cascading"))).await;
    assert_eq!((code, message(&r)), (403, "feature-gate DeletionProtectionForCRDCascadingGate is not enabled"));
    assert!(lists.calls.lock().unwrap().is_empty());

    let rig = Rig::new(
        "ResourcesDeletionProtection=true,DeletionProtectionForCRDCascadingGate=true",
        Arc::new(EmptyView),
        Some(Arc::clone(&lists)),
    );
    for version in ["v1", "v1beta1"] {
        let (code, r) = rig.send(path, crd_review(version, Some("Cascading"))).await;
        let want = "forbidden by ResourcesProtectionDeletion for policy.kruise.io/delete-protection=Cascading and active CRs 1>0";
        assert_eq!((code, message(&r)), (403, want), "{version}");
    }
    assert_eq!(*lists.calls.lock().unwrap(), ["foos.example.com/v1", "foos.example.com/v1"], "the storage version");

    let failing = Arc::new(Lists { crs: Err("forbidden".into()), ..Default::default() });
    let rig = Rig::new(
        "ResourcesDeletionProtection=true,DeletionProtectionForCRDCascadingGate=true",
        Arc::new(EmptyView),
        Some(failing),
    );
    let (code, r) = rig.send(path, crd_review("v1", Some("Cascading"))).await;
    assert_eq!((code, message(&r)), (403, "failed to list CRs of example.com/v1, Kind=FooList: forbidden"));

    let empty = Arc::new(Lists { crs: Ok(vec![cr(true)]), ..Default::default() });
    let rig = Rig::new(
        "ResourcesDeletionProtection=true,DeletionProtectionForCRDCascadingGate=true",
        Arc::new(EmptyView),
        Some(empty),
    );
    let (code, _) = rig.send(path, crd_review("v1", Some("Cascading"))).await;
    assert_eq!(code, 200);
}

#[tokio::test]
async fn no_old_object_and_subresources_are_allowed() {
    let rig = Rig::new(ON, Arc::new(EmptyView), None);
    let mut r = namespace_review(Some("Always"));
    r["request"].as_object_mut().unwrap().remove("oldObject");
    let (code, resp) = rig.send("/validate-namespace", r).await;
    assert_eq!((code, resp["allowed"].as_bool()), (200, Some(true)));
    let mut r = namespace_review(Some("Always"));
    r["request"]["subResource"] = json!("status");
    let (code, _) = rig.send("/validate-namespace", r).await;
    assert_eq!(code, 200);
}
