//! PodUnavailableBudget admission through the router (issue 31; kruise v1.9
//! `pkg/webhook/pod/validating/pod_unavailable_budget_test.go`, `pkg/webhook/
//! podunavailablebudget/validating`): the PUB validating webhook, and `/validate-pod` for pod
//! DELETE, UPDATE and `pods/eviction` CREATE, taking budget units through a fake API server that
//! enforces resourceVersions (so a stale write is a 409, as on a real one). The view holds the
//! budgets as a watch would: stale after the webhook's own writes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use http_body_util::BodyExt;
use hyper::Request;
use kruise::apis::podunavailablebudget::PodUnavailableBudget;
use kruise::cluster::snapshot::Snapshot;
use kruise::core::features::FeatureGates;
use kruise::metrics::Metrics;
use kruise::webhook::Context;
use kruise::webhook::budget::{BudgetStore, Budgets, StoreFuture, WriteError};
use kruise::webhook::http::{AppState, router};
use serde_json::{Value, json};
use tower::ServiceExt;

/// A fake API server holding budgets: a status replace at a stale resourceVersion is a 409.
#[derive(Default)]
struct Store {
    budgets: Mutex<Vec<PodUnavailableBudget>>,
    /// Writes to fail with a conflict first (another writer got there), each bumping the version.
    conflicts: Mutex<usize>,
    writes: Mutex<usize>,
    gets: Mutex<usize>,
    /// The pods whose operation was refused (`PubPreventPodDeletion` Events).
    refused: Mutex<Vec<String>>,
}

impl Store {
    fn holding(b: &Value) -> Arc<Self> {
        let s = Store::default();
        s.budgets.lock().unwrap().push(serde_json::from_value(b.clone()).unwrap());
        Arc::new(s)
    }

    fn status(&self) -> Value {
        serde_json::to_value(&self.budgets.lock().unwrap()[0]).unwrap()["status"].clone()
    }
}

impl BudgetStore for Store {
    fn get<'a>(&'a self, _ns: &'a str, name: &'a str) -> StoreFuture<'a, Result<Option<PodUnavailableBudget>, String>> {
        *self.gets.lock().unwrap() += 1;
        let found = self.budgets.lock().unwrap().iter().find(|b| b.metadata.name.as_deref() == Some(name)).cloned();
        Box::pin(async move { Ok(found) })
    }

    fn replace_status<'a>(
        &'a self,
        budget: &'a PodUnavailableBudget,
    ) -> StoreFuture<'a, Result<PodUnavailableBudget, WriteError>> {
        let result = (|| {
            let mut held = self.budgets.lock().unwrap();
            let Some(current) = held.iter_mut().find(|b| b.metadata.name == budget.metadata.name) else {
                return Err(WriteError::NotFound);
            };
            let version = |b: &PodUnavailableBudget| b.metadata.resource_version.clone().unwrap_or_default();
            let mut conflicts = self.conflicts.lock().unwrap();
            if *conflicts > 0 {
                *conflicts -= 1;
                let next = version(current).parse::<u64>().unwrap() + 1;
                current.metadata.resource_version = Some(next.to_string());
            }
            if version(current) != version(budget) {
                return Err(WriteError::Conflict(format!(
                    "Operation cannot be fulfilled on podunavailablebudgets.policy.kruise.io {:?}: the object has been modified; please apply your changes to the latest version and try again",
                    budget.metadata.name.clone().unwrap_or_default()
                )));
            }
            let next = version(current).parse::<u64>().unwrap() + 1;
            current.status = budget.status.clone();
            current.metadata.resource_version = Some(next.to_string());
            *self.writes.lock().unwrap() += 1;
            Ok(current.clone())
        })();
        Box::pin(async move {
            tokio::task::yield_now().await;
            result
        })
    }

    fn refused(&self, check: &kruise::webhook::validate_pod::BudgetCheck) {
        self.refused.lock().unwrap().push(format!("{} {}", check.op.as_str(), check.pod_name()));
    }
}

fn budget(allowed: i32, annotations: Value) -> Value {
    json!({"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
        "metadata": {"name": "web-pub", "namespace": "ns", "uid": "pub-uid", "resourceVersion": "10", "generation": 1,
                     "annotations": annotations},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1},
        "status": {"observedGeneration": 1, "unavailableAllowed": allowed, "desiredAvailable": 2,
                   "currentAvailable": 2 + allowed, "totalReplicas": 3}})
}

fn pod(name: &str, related: bool) -> Value {
    let annotations = if related { json!({"kruise.io/related-pub": "web-pub"}) } else { json!({}) };
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "labels": {"app": "web"}, "annotations": annotations},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                   "containerStatuses": [{"name": "main", "image": "nginx:1.25", "imageID": "nginx@sha256:1",
                                          "ready": true, "restartCount": 0}]}})
}

struct Rig {
    router: axum::Router,
    store: Arc<Store>,
    metrics: Metrics,
}

impl Rig {
    fn new(gates: &str, objects: &[Value], store: Arc<Store>) -> Self {
        let mut view = Snapshot::default();
        for o in objects {
            assert!(view.insert(o.clone()).unwrap(), "{o}");
        }
        let ctx = Context::with_gates(FeatureGates::parse(gates).unwrap(), Arc::new(view));
        let metrics = Metrics::new();
        let budgets = Budgets::with_retry_delay(Arc::clone(&store) as Arc<dyn BudgetStore>, Duration::from_millis(1))
            .with_metrics(metrics.clone());
        let state = AppState::new(ctx, metrics.clone()).with_budgets(Arc::new(budgets));
        Rig { router: router(Arc::new(state)), store, metrics }
    }

    /// The refusal counter's value for `kind` and `operation`.
    fn refusals(&self, kind: &str, operation: &str) -> u64 {
        let labels = kruise::metrics::BudgetRefusalLabels { kind: kind.into(), operation: operation.into() };
        self.metrics.budget_refusals.get_or_create(&labels).get()
    }

    /// POSTs a review; returns the status code and the review's `response`.
    async fn send(&self, path: &str, request: Value) -> (u16, Value) {
        let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request});
        let http = Request::post(path)
            .header("content-type", "application/json")
            .body(Body::from(serde_json::to_vec(&review).unwrap()))
            .unwrap();
        let response = self_router(&self.router).oneshot(http).await.unwrap();
        assert_eq!(response.status().as_u16(), 200);
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let out: Value = serde_json::from_slice(&body).unwrap();
        let code = out["response"]["status"]["code"].as_u64().unwrap_or(200) as u16;
        (code, out["response"].clone())
    }

    async fn evict(&self, name: &str, dry_run: bool) -> (u16, Value) {
        let mut eviction =
            json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "ns"}});
        if dry_run {
            eviction["deleteOptions"] = json!({"dryRun": ["All"]});
        }
        self.send(
            "/validate-pod",
            json!({
            "uid": "u", "kind": {"group": "policy", "version": "v1", "kind": "Eviction"},
            "resource": {"group": "", "version": "v1", "resource": "pods"}, "subResource": "eviction",
            "name": name, "namespace": "ns", "operation": "CREATE", "userInfo": {"username": "drain"},
            "object": eviction}),
        )
        .await
    }

    async fn delete(&self, old: Value, dry_run: bool) -> (u16, Value) {
        let mut request = json!({
            "uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "name": old["metadata"]["name"], "namespace": "ns", "operation": "DELETE", "userInfo": {"username": "alice"},
            "oldObject": old});
        if dry_run {
            request["dryRun"] = json!(true);
            request["options"] = json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "dryRun": ["All"]});
        }
        self.send("/validate-pod", request).await
    }

    async fn update(&self, old: Value, new: Value) -> (u16, Value) {
        self.send("/validate-pod", json!({
            "uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "name": old["metadata"]["name"], "namespace": "ns", "operation": "UPDATE", "userInfo": {"username": "alice"},
            "object": new, "oldObject": old}))
        .await
    }
}

fn self_router(r: &axum::Router) -> axum::Router {
    r.clone()
}

const REFUSED: &str =
    "podunavailablebudget.policy.kruise.io \"web-pub\" is forbidden: pub unavailable allowed is negative";

/// Drain: the first eviction takes the one unit and records the pod; the second is a 429
/// TooManyRequests naming the budget, which `kubectl drain` retries; a DELETE is a 403.
#[tokio::test]
async fn evictions_and_deletes_take_the_budget() {
    let b = budget(1, json!({}));
    let rig = Rig::new("", &[b.clone(), pod("web-0", true), pod("web-1", true)], Store::holding(&b));
    let (code, r) = rig.evict("web-0", false).await;
    assert_eq!((code, r["allowed"].as_bool()), (200, Some(true)), "{r}");
    let status = rig.store.status();
    assert_eq!(status["unavailableAllowed"], 0);
    assert!(status["disruptedPods"]["web-0"].is_string(), "{status}");
    let (code, r) = rig.evict("web-1", false).await;
    assert_eq!(
        (code, r["allowed"].as_bool(), r["status"]["reason"].as_str()),
        (429, Some(false), Some("TooManyRequests"))
    );
    assert_eq!(r["status"]["message"], REFUSED);
    let (code, r) = rig.delete(pod("web-1", true), false).await;
    assert_eq!(
        (code, r["status"]["reason"].as_str(), r["status"]["message"].as_str()),
        (403, Some("Forbidden"), Some(REFUSED))
    );
    // web-0 is recorded: its own delete (the eviction's) passes without another unit.
    assert_eq!(rig.delete(pod("web-0", true), false).await.0, 200);
    assert_eq!(*rig.store.writes.lock().unwrap(), 1);
    // Each refusal is told to the store (kruise's PubPreventPodDeletion Event on the pod) and
    // counted by the pod's workload kind (these pods have no controller) and operation.
    assert_eq!(*rig.store.refused.lock().unwrap(), ["EVICT web-1", "DELETE web-1"]);
    assert_eq!((rig.refusals("unknown", "EVICT"), rig.refusals("unknown", "DELETE")), (1, 1));
    assert_eq!(rig.refusals("unknown", "UPDATE"), 0);
}

/// A dry run is answered as the real request would be, and takes nothing.
#[tokio::test]
async fn dry_runs_consume_nothing() {
    let b = budget(1, json!({}));
    let rig = Rig::new("", &[b.clone(), pod("web-0", true), pod("web-1", true)], Store::holding(&b));
    assert_eq!(rig.evict("web-0", true).await.0, 200);
    assert_eq!(rig.delete(pod("web-1", true), true).await.0, 200);
    assert_eq!(*rig.store.writes.lock().unwrap(), 0);
    assert_eq!(rig.store.status()["unavailableAllowed"], 1);
    let none = budget(0, json!({}));
    let rig = Rig::new("", &[none.clone(), pod("web-0", true)], Store::holding(&none));
    assert_eq!(rig.evict("web-0", true).await.0, 429, "a dry run that would be refused is refused");
}

/// Another writer between our read and our write: the write conflicts, the budget is read again
/// and the unit taken from the fresh copy.
#[tokio::test]
async fn conflicts_are_retried_on_a_fresh_copy() {
    let b = budget(2, json!({}));
    let store = Store::holding(&b);
    *store.conflicts.lock().unwrap() = 2;
    let rig = Rig::new("", &[b.clone(), pod("web-0", true)], Arc::clone(&store));
    let (code, r) = rig.evict("web-0", false).await;
    assert_eq!(code, 200, "{r}");
    assert_eq!((*store.writes.lock().unwrap(), *store.gets.lock().unwrap()), (1, 2));
    assert_eq!(store.status()["unavailableAllowed"], 1);
    // Conflicts on every attempt: refused with the apiserver's conflict message.
    let store = Store::holding(&b);
    *store.conflicts.lock().unwrap() = 10;
    let rig = Rig::new("", &[b, pod("web-0", true)], Arc::clone(&store));
    let (code, r) = rig.evict("web-0", false).await;
    assert_eq!(code, 429);
    assert!(r["status"]["message"].as_str().unwrap().contains("the object has been modified"), "{r}");
}

/// Ten evictions at once against three units: exactly three pass.
#[tokio::test]
async fn concurrent_evictions_never_break_the_budget() {
    let b = budget(3, json!({}));
    let mut objects = vec![b.clone()];
    objects.extend((0..10).map(|i| pod(&format!("web-{i}"), true)));
    let rig = Arc::new(Rig::new("", &objects, Store::holding(&b)));
    let answers = futures::future::join_all((0..10).map(|i| {
        let rig = Arc::clone(&rig);
        async move { rig.evict(&format!("web-{i}"), false).await.0 }
    }))
    .await;
    assert_eq!(answers.iter().filter(|c| **c == 200).count(), 3, "{answers:?}");
    assert_eq!(answers.iter().filter(|c| **c == 429).count(), 7, "{answers:?}");
    let status = rig.store.status();
    assert_eq!(status["unavailableAllowed"], 0);
    assert_eq!(status["disruptedPods"].as_object().unwrap().len(), 3);
}

/// What needs no unit: a pod naming no budget, a pod not ready, an operation the budget does not
/// protect, a pod marked no-protect, a status sub-resource DELETE, and everything with the
/// delete gate off.
#[tokio::test]
async fn what_passes_without_a_unit() {
    let none = budget(0, json!({}));
    let rig = Rig::new("", &[none.clone(), pod("web-0", true), pod("free", false)], Store::holding(&none));
    assert_eq!(rig.delete(pod("free", false), false).await.0, 200, "no related-pub");
    let mut not_ready = pod("web-0", true);
    not_ready["status"]["conditions"][0]["status"] = json!("False");
    assert_eq!(rig.delete(not_ready, false).await.0, 200, "already unavailable");
    let mut forced = pod("web-0", true);
    forced["metadata"]["annotations"]["pub.kruise.io/no-protect"] = json!("true");
    assert_eq!(rig.delete(forced, false).await.0, 200, "no-protect");
    assert_eq!(*rig.store.gets.lock().unwrap() + *rig.store.writes.lock().unwrap(), 0);

    let evict_only = budget(0, json!({"kruise.io/pub-protect-operations": "EVICT"}));
    let rig = Rig::new("", &[evict_only.clone(), pod("web-0", true)], Store::holding(&evict_only));
    assert_eq!(rig.delete(pod("web-0", true), false).await.0, 200, "DELETE not protected");
    assert_eq!(rig.evict("web-0", false).await.0, 429, "EVICT protected");

    let rig =
        Rig::new("PodUnavailableBudgetDeleteGate=false", &[none.clone(), pod("web-0", true)], Store::holding(&none));
    assert_eq!(rig.delete(pod("web-0", true), false).await.0, 200, "gate off");
    assert_eq!(rig.evict("web-0", false).await.0, 200, "gate off");
}

/// UPDATE needs `PodUnavailableBudgetUpdateGate` (off by default); with it, a spec change takes a
/// unit and records the pod in `unavailablePods`; a label change takes nothing.
#[tokio::test]
async fn updates_follow_the_update_gate() {
    let b = budget(1, json!({}));
    let old = pod("web-0", true);
    let mut new = old.clone();
    new["spec"]["containers"][0]["image"] = json!("nginx:1.26");
    let mut relabelled = old.clone();
    relabelled["metadata"]["labels"]["tier"] = json!("front");

    let rig = Rig::new("", &[b.clone(), old.clone()], Store::holding(&b));
    assert_eq!(rig.update(old.clone(), new.clone()).await.0, 200, "gate off by default");
    assert_eq!(*rig.store.writes.lock().unwrap(), 0);

    let rig = Rig::new("PodUnavailableBudgetUpdateGate=true", &[b.clone(), old.clone()], Store::holding(&b));
    assert_eq!(rig.update(old.clone(), relabelled).await.0, 200);
    assert_eq!(*rig.store.writes.lock().unwrap(), 0, "labels never make a pod unavailable");
    assert_eq!(rig.update(old.clone(), new.clone()).await.0, 200);
    let status = rig.store.status();
    assert!(status["unavailablePods"]["web-0"].is_string(), "{status}");
    let mut other = pod("web-1", true);
    let mut other_new = other.clone();
    other_new["spec"]["containers"][0]["image"] = json!("nginx:1.26");
    let (code, r) = rig.update(other.take(), other_new).await;
    assert_eq!((code, r["status"]["message"].as_str()), (403, Some(REFUSED)));
}

/// The PUB validating webhook: kruise's rules as field errors (422), the conflict with another
/// budget of the view, and the gate refusal.
#[tokio::test]
async fn budget_objects_are_validated() {
    let other = json!({"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
        "metadata": {"name": "other", "namespace": "ns"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "minAvailable": 1}});
    let rig = Rig::new("", &[other], Arc::new(Store::default()));
    let send = |object: Value| {
        rig.send("/validate-policy-kruise-io-podunavailablebudget", json!({
            "uid": "u", "kind": {"group": "policy.kruise.io", "version": "v1alpha1", "kind": "PodUnavailableBudget"},
            "resource": {"group": "policy.kruise.io", "version": "v1alpha1", "resource": "podunavailablebudgets"},
            "name": object["metadata"]["name"], "namespace": "ns", "operation": "CREATE", "userInfo": {"username": "alice"},
            "object": object}))
    };
    let make = |spec: Value| {
        json!({"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
        "metadata": {"name": "web-pub", "namespace": "ns"}, "spec": spec})
    };
    let ok = make(
        json!({"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxUnavailable": "25%"}),
    );
    assert_eq!(send(ok).await.0, 200);
    let (code, r) = send(make(json!({"maxUnavailable": 1}))).await;
    assert_eq!(code, 422);
    assert_eq!(
        r["status"]["message"],
        "spec.selector, targetRef: Required value: no selector or targetRef defined in PodUnavailableBudget"
    );
    let (code, r) = send(make(json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}))).await;
    assert_eq!(code, 422);
    assert!(
        r["status"]["message"]
            .as_str()
            .unwrap()
            .ends_with("pub.spec.selector is in conflict with other PodUnavailableBudget other"),
        "{r}"
    );

    // kruise HEAD's v1beta1 (the opt-in CRD): validated on its v1alpha1 conversion, plus its own
    // fields; the v1alpha1 budget `other` in the view conflicts with it just the same.
    let send_beta = |object: Value| {
        rig.send("/validate-policy-kruise-io-podunavailablebudget", json!({
            "uid": "u", "kind": {"group": "policy.kruise.io", "version": "v1beta1", "kind": "PodUnavailableBudget"},
            "resource": {"group": "policy.kruise.io", "version": "v1beta1", "resource": "podunavailablebudgets"},
            "name": object["metadata"]["name"], "namespace": "ns", "operation": "CREATE", "userInfo": {"username": "alice"},
            "object": object}))
    };
    let beta = |annotations: Value, spec: Value| {
        json!({"apiVersion": "policy.kruise.io/v1beta1", "kind": "PodUnavailableBudget",
        "metadata": {"name": "beta-pub", "namespace": "ns", "annotations": annotations}, "spec": spec})
    };
    let target = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"});
    let good = beta(
        json!({}),
        json!({"targetRef": target, "maxUnavailable": 1, "protectOperations": ["DELETE", "EVICT"],
               "protectTotalReplicas": 4, "ignoredPodSelector": {"matchLabels": {"kruise.io/force-deletable": "true"}}}),
    );
    let (code, r) = send_beta(good).await;
    assert_eq!(code, 200, "{r}");
    let (code, r) = send_beta(beta(
        json!({"pub.kruise.io/protect-total-replicas": "5"}),
        json!({"targetRef": target, "maxUnavailable": 1, "protectTotalReplicas": 4, "ignoredPodSelector": {}}),
    ))
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        r["status"]["message"],
        "[metadata.annotations[pub.kruise.io/protect-total-replicas]: Invalid value: \"5\": must match spec.protectTotalReplicas when both are set, spec.ignoredPodSelector: Invalid value: {}: empty ignoredPodSelector is not valid for PodUnavailableBudget]"
    );
    let (code, r) =
        send_beta(beta(json!({}), json!({"selector": {"matchLabels": {"app": "web"}}, "maxUnavailable": 1}))).await;
    assert_eq!(code, 422);
    assert!(
        r["status"]["message"].as_str().unwrap().contains("in conflict with other PodUnavailableBudget other"),
        "{r}"
    );
    let (code, r) =
        send_beta(beta(json!({}), json!({"targetRef": target, "maxUnavailable": 1, "protectOperations": ["KILL"]})))
            .await;
    assert_eq!(code, 400, "an operation the type does not know does not decode: {r}");

    let off = Rig::new(
        "PodUnavailableBudgetDeleteGate=false,PodUnavailableBudgetUpdateGate=false",
        &[],
        Arc::new(Store::default()),
    );
    let (code, _) = off
        .send(
            "/validate-policy-kruise-io-podunavailablebudget",
            json!({
            "uid": "u", "kind": {"group": "policy.kruise.io", "version": "v1alpha1", "kind": "PodUnavailableBudget"},
            "resource": {"group": "policy.kruise.io", "version": "v1alpha1", "resource": "podunavailablebudgets"},
            "name": "x", "namespace": "ns", "operation": "CREATE", "userInfo": {"username": "alice"},
            "object": make(json!({"maxUnavailable": 1}))}),
        )
        .await;
    assert_eq!(code, 403);
}

/// The pod mutating webhook names the budget that selects a new pod (kruise `pubMutatingPod`).
#[tokio::test]
async fn new_pods_name_their_budget() {
    let b = budget(1, json!({}));
    let rig = Rig::new("", std::slice::from_ref(&b), Store::holding(&b));
    let mut new = pod("web-5", false);
    new["metadata"].as_object_mut().unwrap().remove("annotations");
    let (code, r) = rig
        .send(
            "/mutate-pod",
            json!({
            "uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "name": "web-5", "namespace": "ns", "operation": "CREATE", "userInfo": {"username": "rs"},
            "object": new.clone()}),
        )
        .await;
    assert_eq!(code, 200);
    let patch: json_patch::Patch = {
        use base64::Engine;
        let raw = base64::engine::general_purpose::STANDARD.decode(r["patch"].as_str().expect("a patch")).unwrap();
        serde_json::from_slice(&raw).unwrap()
    };
    let mut patched = new.clone();
    json_patch::patch(&mut patched, &patch).unwrap();
    assert_eq!(patched["metadata"]["annotations"]["kruise.io/related-pub"], "web-pub");
    let mut other = new.clone();
    other["metadata"]["labels"] = json!({"app": "db"});
    let (_, r) = rig
        .send(
            "/mutate-pod",
            json!({
            "uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "name": "db-0", "namespace": "ns", "operation": "CREATE", "userInfo": {"username": "rs"},
            "object": other}),
        )
        .await;
    assert!(r.get("patch").is_none_or(Value::is_null), "{r}");
}
