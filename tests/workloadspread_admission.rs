//! WorkloadSpread admission through the router, in-process (issue 34 item 1; kruise v1.9.0
//! `pkg/webhook/workloadspread/validating`): both path spellings, kruise's field errors (422,
//! spec §11.1; kruise answers 400), the immutable target on UPDATE, the feature gate, the
//! conflict with another WorkloadSpread of the namespace (from the view, and from the listing
//! the router makes at admission time) and a subset patch checked against the target workload's
//! template. The rule table is in `core::validation::workloadspread`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use axum::body::Body;
use http_body_util::BodyExt;
use hyper::Request;
use kruise::cluster::snapshot::Snapshot;
use kruise::cluster::{ClusterView, EmptyView, ListFuture, ListSource, NamespacedResource};
use kruise::core::features::FeatureGates;
use kruise::metrics::Metrics;
use kruise::webhook::Context;
use kruise::webhook::http::{AppState, router};
use kruise::webhook::request::ReviewRequest;
use kube::core::admission::Operation;
use serde_json::{Value, json};
use tower::ServiceExt;

use common::app::App;

const VALIDATE: [&str; 2] =
    ["/validate-apps-kruise-io-workloadspread", "/validate-apps-kruise-io-v1alpha1-workloadspread"];

fn ws(name: &str, target: &str) -> Value {
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread",
        "metadata": {"name": name, "namespace": "ns"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": target},
            "subsets": [
                {"name": "zone-a", "maxReplicas": 2,
                    "requiredNodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["zone-a"]}]},
                    "patch": {"metadata": {"labels": {"subset": "zone-a"}}}},
                {"name": "zone-b",
                    "requiredNodeSelectorTerm": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["zone-b"]}]}}]}})
}

fn review(op: Operation, object: &Value) -> ReviewRequest {
    ReviewRequest::new(op, "apps.kruise.io", "v1alpha1", "WorkloadSpread", "workloadspreads")
        .name(object["metadata"]["name"].as_str().unwrap())
        .namespace("ns")
        .object(object.clone())
}

fn message(r: &Value) -> &str {
    r["status"]["message"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn valid_spreads_are_admitted_on_both_paths() {
    let app = App::new();
    for path in VALIDATE {
        let object = ws("spread", "web");
        let r = app.send(path, &review(Operation::Create, &object)).await;
        assert_eq!(r["allowed"], true, "{path}: {r}");
        let r = app.send(path, &review(Operation::Update, &object).old_object(object.clone())).await;
        assert_eq!(r["allowed"], true, "{path}: {r}");
    }
}

#[tokio::test]
async fn invalid_spreads_are_denied_with_kruise_messages() {
    let app = App::new();
    let mut bad = ws("spread", "web");
    bad["spec"]["subsets"][1]["name"] = json!("zone-a");
    bad["spec"]["subsets"][0]["tolerations"] = json!([{"operator": "Equal", "value": "x"}]);
    bad["spec"]["scheduleStrategy"] = json!({"type": "Sometimes"});
    let r = app.send(VALIDATE[0], &review(Operation::Create, &bad)).await;
    assert_eq!(r["allowed"], false);
    assert_eq!(r["status"]["code"], 422);
    for part in [
        "spec.subsets[0].tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty",
        "spec.subsets[1].name: Invalid value: \"zone-a\": duplicated subset name zone-a",
        "spec.scheduleStrategy.type: Invalid value: \"Sometimes\": ScheduleStrategy's type is not valid",
    ] {
        assert!(message(&r).contains(part), "{part}\n{}", message(&r));
    }

    let mut kind = ws("spread", "web");
    kind["spec"]["targetRef"] = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "web"});
    let r = app.send(VALIDATE[1], &review(Operation::Create, &kind)).await;
    assert!(message(&r).ends_with("TargetReference's GroupKind is not permitted."), "{r}");

    let mut pct = ws("spread", "web");
    pct["spec"]["subsets"][0]["maxReplicas"] = json!("40%");
    pct["spec"]["subsets"][1]["maxReplicas"] = json!("50%");
    let r = app.send(VALIDATE[0], &review(Operation::Create, &pct)).await;
    assert_eq!(
        message(&r),
        "spec.subsets[0].maxReplicas: Invalid value: \"40%\": maxReplicas sum of all subsets must equal 100% when type is specified as percent"
    );

    let r = app
        .send(VALIDATE[0], &review(Operation::Create, &json!({"metadata": {"name": "x"}, "spec": {"subsets": "many"}})))
        .await;
    assert_eq!(r["status"]["code"], 400, "{r}");
}

#[tokio::test]
async fn the_target_cannot_change() {
    let app = App::new();
    let old = ws("spread", "web");
    let new = ws("spread", "api");
    let r = app.send(VALIDATE[0], &review(Operation::Update, &new).old_object(old)).await;
    assert_eq!(r["allowed"], false);
    assert!(message(&r).starts_with("spec.targetRef: Invalid value: "), "{r}");
    assert!(message(&r).ends_with(": change TargetReference is not permitted for WorkloadSpread"), "{r}");
}

#[tokio::test]
async fn the_gate_off_refuses_every_write() {
    let app = App::with(FeatureGates::parse("WorkloadSpread=false").unwrap(), Arc::new(EmptyView));
    let r = app.send(VALIDATE[0], &review(Operation::Create, &ws("spread", "web"))).await;
    assert_eq!(r["allowed"], false);
    assert_eq!(r["status"]["code"], 403);
    assert_eq!(message(&r), "feature-gate WorkloadSpread is not enabled");
}

#[tokio::test]
async fn one_spread_per_workload_from_the_view() {
    let mut view = Snapshot::default();
    view.insert(ws("first", "web")).unwrap();
    let app = App::with(FeatureGates::default(), Arc::new(view));
    let r = app.send(VALIDATE[0], &review(Operation::Create, &ws("second", "web"))).await;
    assert_eq!(r["allowed"], false);
    assert!(message(&r).ends_with("ws.spec.targetRef is in conflict with other WorkloadSpread first"), "{r}");
    // Itself (an UPDATE) and another target are fine.
    let me = ws("first", "web");
    let r = app.send(VALIDATE[0], &review(Operation::Update, &me).old_object(me.clone())).await;
    assert_eq!(r["allowed"], true, "{r}");
    let r = app.send(VALIDATE[0], &review(Operation::Create, &ws("second", "api"))).await;
    assert_eq!(r["allowed"], true, "{r}");
}

/// What the router lists at admission time: the WorkloadSpreads of the namespace and the target
/// Deployment.
struct Lists {
    spreads: Result<Vec<Value>, String>,
    deployment: Value,
}

impl ListSource for Lists {
    fn pods<'a>(&'a self, _: &'a str) -> ListFuture<'a, k8s_openapi::api::core::v1::Pod> {
        Box::pin(async { Ok(vec![]) })
    }
    fn claims<'a>(&'a self, _: &'a str) -> ListFuture<'a, k8s_openapi::api::core::v1::PersistentVolumeClaim> {
        Box::pin(async { Ok(vec![]) })
    }
    fn custom_resources<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: &'a str,
    ) -> ListFuture<'a, k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta> {
        Box::pin(async { Ok(vec![]) })
    }
    fn namespaced_json<'a>(
        &'a self,
        resource: &'a NamespacedResource,
        namespace: &'a str,
        name: Option<&'a str>,
    ) -> ListFuture<'a, Value> {
        Box::pin(async move {
            assert_eq!(namespace, "ns");
            match (resource.plural, name) {
                ("workloadspreads", None) => self.spreads.clone(),
                ("deployments", Some("web")) => Ok(vec![self.deployment.clone()]),
                ("deployments", Some(_)) => Ok(vec![]),
                other => panic!("unexpected listing {other:?}"),
            }
        })
    }
}

async fn send_listed(lists: Lists, review: &ReviewRequest) -> Value {
    let state = AppState::new(
        Context::with_gates(FeatureGates::default(), Arc::new(EmptyView) as Arc<dyn ClusterView>),
        Metrics::new(),
    )
    .with_lists(Arc::new(lists));
    let request = Request::post(VALIDATE[0])
        .header("content-type", "application/json")
        .body(Body::from(review.to_bytes()))
        .unwrap();
    let response = router(Arc::new(state)).oneshot(request).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice::<Value>(&body).unwrap()["response"].clone()
}

#[tokio::test]
async fn listed_at_admission_time() {
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "ns"},
        "spec": {"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "main", "image": "nginx"}]}}}});
    let lists = || Lists { spreads: Ok(vec![ws("first", "web")]), deployment: deployment.clone() };

    // A conflict seen in the listing.
    let r = send_listed(lists(), &review(Operation::Create, &ws("second", "web"))).await;
    assert!(message(&r).ends_with("ws.spec.targetRef is in conflict with other WorkloadSpread first"), "{r}");

    // A patch that breaks the Deployment's pods: an empty image for its container.
    let mut broken = ws("first", "web");
    broken["spec"]["subsets"][0]["patch"] = json!({"spec": {"containers": [{"name": "main", "image": ""}]}});
    let r = send_listed(lists(), &review(Operation::Create, &broken)).await;
    assert_eq!(message(&r), "spec.subsets[0].patch.containers[0].image: Required value", "{r}");
    // The same patch on a workload that does not exist yet: not checked, as kruise.
    let mut later = broken.clone();
    later["spec"]["targetRef"]["name"] = json!("later");
    let r = send_listed(lists(), &review(Operation::Create, &later)).await;
    assert_eq!(r["allowed"], true, "{r}");

    // A list that fails is kruise's internal error.
    let failing = Lists { spreads: Err("connection refused".into()), deployment };
    let r = send_listed(failing, &review(Operation::Create, &ws("first", "web"))).await;
    assert_eq!(message(&r), ": Internal error: query other WorkloadSpread failed, err: connection refused", "{r}");
}

fn pod_review(op: Operation, pod: &Value, namespace: &str) -> ReviewRequest {
    let delete = matches!(op, Operation::Delete);
    let r = ReviewRequest::new(op, "", "v1", "Pod", "pods").name("").namespace(namespace);
    if delete { r.old_object(pod.clone()) } else { r.object(pod.clone()) }
}

/// A pod whose controller is Deployment `web` itself (the offline view cannot walk a ReplicaSet
/// up to its Deployment).
fn web_pod(namespace: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": "web-", "namespace": namespace, "labels": {"app": "web"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u", "controller": true}]},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

/// `/mutate-pod` places a targeted pod in the first subset with room (offline: decided on the
/// view's copy, nothing written): node affinity, the subset's patch and kruise's annotation; a
/// pod of a namespace without WorkloadSpreads, or with the gate off, is left as it was.
#[tokio::test]
async fn the_pod_webhook_places_targeted_pods() {
    let mut view = Snapshot::default();
    view.insert(ws("spread", "web")).unwrap();
    let view = Arc::new(view);
    let app = App::with(FeatureGates::default(), view.clone());
    let pod = web_pod("ns");
    let r = app.send("/mutate-pod", &pod_review(Operation::Create, &pod, "ns")).await;
    assert_eq!(r["allowed"], true, "{r}");
    let placed = common::apply(&pod, common::response_patch(&r).as_ref());
    assert_eq!(placed["metadata"]["labels"]["subset"], "zone-a", "{placed}");
    let matched: Value = serde_json::from_str(
        placed["metadata"]["annotations"]["apps.kruise.io/matched-workloadspread"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(matched["name"], "spread");
    assert_eq!(matched["subset"], "zone-a");
    assert!(matched["uid"].as_str().is_some_and(|u| !u.is_empty()), "a nameless pod gets a uid: {matched}");
    let term = &placed["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        [0]["matchExpressions"][0];
    assert_eq!(term["values"], json!(["zone-a"]), "{placed}");

    // Another namespace, another owner, the gate off: no WorkloadSpread part.
    let elsewhere = web_pod("other");
    let r = app.send("/mutate-pod", &pod_review(Operation::Create, &elsewhere, "other")).await;
    let same = common::apply(&elsewhere, common::response_patch(&r).as_ref());
    assert!(same["metadata"]["annotations"].get("apps.kruise.io/matched-workloadspread").is_none(), "{same}");
    let mut other_owner = web_pod("ns");
    other_owner["metadata"]["ownerReferences"][0]["name"] = json!("api");
    let r = app.send("/mutate-pod", &pod_review(Operation::Create, &other_owner, "ns")).await;
    let same = common::apply(&other_owner, common::response_patch(&r).as_ref());
    assert!(
        same["metadata"].get("annotations").is_none_or(|a| a.get("apps.kruise.io/matched-workloadspread").is_none()),
        "{same}"
    );
    let off = App::with(FeatureGates::parse("WorkloadSpread=false").unwrap(), view);
    let r = off.send("/mutate-pod", &pod_review(Operation::Create, &pod, "ns")).await;
    let same = common::apply(&pod, common::response_patch(&r).as_ref());
    assert!(
        same["metadata"].get("annotations").is_none_or(|a| a.get("apps.kruise.io/matched-workloadspread").is_none()),
        "{same}"
    );
}

/// `/validate-pod` allows the DELETE of a placed pod (offline there is nothing to record).
#[tokio::test]
async fn the_pod_webhook_allows_deleting_placed_pods() {
    let mut view = Snapshot::default();
    view.insert(ws("spread", "web")).unwrap();
    let app = App::with(FeatureGates::default(), Arc::new(view));
    let mut pod = web_pod("ns");
    pod["metadata"]["name"] = json!("web-1");
    pod["metadata"]["annotations"] =
        json!({"apps.kruise.io/matched-workloadspread": "{\"name\":\"spread\",\"subset\":\"zone-a\"}"});
    let r = app.send("/validate-pod", &pod_review(Operation::Delete, &pod, "ns")).await;
    assert_eq!(r["allowed"], true, "{r}");
}
