//! The leader's container-launch-priority controller (kruise's `containerlaunchpriority`
//! controller, ungated there and here): the shared pod informer's handler queues the pods
//! [`wants_launch`] passes (read off the pod alone: ordered containers not all ready, not marked
//! completed, active), and the reconcile reads the pod's barrier ConfigMap with a GET, asks
//! [`plan`] what to write, and writes it: the barrier created (owned by the pod) or one key merged
//! in, then the pod's `container-launch-priority-completed` mark; a barrier an earlier pod of the
//! same name left is deleted first (by uid).
//!
//! Why a GET and not a ConfigMap watch: kruise's predicate reads the barrier from the manager's
//! cache, which caches every ConfigMap of the cluster (often the largest objects in it) for a few
//! transient objects; barriers carry no label (kruise's have none either, and Go-kruise-created ones
//! must keep working), so no watch can be narrowed to them. A pod in launch sees a handful of
//! changes (its containers starting and turning ready), one GET each, and none once it is
//! completed or ready.
//!
//! Failures go back to the runner: a 409 (the barrier was created meanwhile — AlreadyExists) or any
//! failed write is retried with its backoff on a fresh GET. Key merges need no resourceVersion:
//! adding a key is idempotent and commutes with any other writer's.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::informers::{Change, Informer, Informers};
use super::queue::WorkQueue;
use super::runner::{Pacing, Runner};
use super::{ReconcileError, Settings};
use crate::core::launchpriority::{barrier_name, completed_patch, plan, release_patch, wants_launch};
use crate::core::pods;
use crate::metrics::Metrics;

/// The controller's name in metrics (kruise's `container-launch-priority-controller`).
pub const CONTROLLER: &str = "container-launch-priority";

/// Registers the controller on the shared pod informer and starts its runner.
pub fn start(
    informers: &Informers,
    client: &Client,
    settings: &Settings,
    metrics: &Metrics,
    token: &CancellationToken,
) -> JoinHandle<()> {
    let queue = WorkQueue::new(CONTROLLER, metrics.clone());
    // Kruise runs 4 workers; ours: an entry of `settings.workers` (none is set by a flag yet),
    // else the shared default.
    let workers = settings.workers.get(CONTROLLER).copied().unwrap_or(settings.concurrency);
    // No pacing: a round is one GET and at most two writes, and each pod is in launch briefly.
    let pacing = Pacing { factor: 0, max_interval: Duration::ZERO };
    let runner = Runner::new(CONTROLLER, queue, metrics.clone(), usize::from(workers), pacing);
    let r = Arc::clone(&runner);
    informers.pods.on_change(move |c| match c {
        Change::Applied(p) if wants_launch(p) => r.queue().add(super::index::meta_key(&p.metadata)),
        Change::Applied(_) => {}
        // Its failures and pacing go with it.
        Change::Deleted(m) => r.forget(&super::index::meta_key(m)),
    });
    let (pods, client) = (informers.pods.clone(), client.clone());
    let reconcile = move |key: String| {
        let (pods, client) = (pods.clone(), client.clone());
        async move { reconcile(&pods, &client, &key).await }
    };
    tokio::spawn(runner.run(reconcile, token.clone()))
}

/// One round for the pod `key`: observe (the cached pod, the barrier by GET), decide, write.
pub async fn reconcile(pods: &Informer<Pod>, client: &Client, key: &str) -> Result<Option<Duration>, ReconcileError> {
    let Some(pod) = pods.index().get_object(key).filter(|p| wants_launch(p)) else {
        return Ok(None);
    };
    let pod: Arc<Pod> = pod;
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pods::name(&pod).to_string();
    let barriers: Api<ConfigMap> = Api::namespaced(client.clone(), &namespace);
    let barrier_name = barrier_name(&name);
    let barrier = barriers
        .get_opt(&barrier_name)
        .await
        .map_err(|e| ReconcileError::api(format!("get {namespace}/{barrier_name}"), &e))?;
    let plan = plan(&pod, barrier.as_ref());
    if let Some(uid) = &plan.replace {
        // An earlier pod's barrier (the garbage collector's job, done sooner); by uid, so a
        // barrier created meanwhile for this pod is never the one deleted.
        let params = DeleteParams {
            preconditions: Some(Preconditions { uid: Some(uid.clone()), resource_version: None }),
            ..DeleteParams::default()
        };
        match barriers.delete(&barrier_name, &params).await {
            Ok(_) => tracing::debug!(pod = %key, "an earlier pod's barrier deleted"),
            Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
            Err(e) => return Err(ReconcileError::api(format!("delete {namespace}/{barrier_name}"), &e)),
        }
        return Ok(Some(Duration::ZERO));
    }
    if let Some(cm) = &plan.create {
        // A 409 here is AlreadyExists (created since the GET): the retry reads it and patches.
        barriers
            .create(&PostParams::default(), cm)
            .await
            .map_err(|e| ReconcileError::api(format!("create {namespace}/{barrier_name}"), &e))?;
        tracing::debug!(pod = %key, released = ?cm.data.as_ref().map(|d| d.keys().collect::<Vec<_>>()), "barrier created");
    }
    if let Some(k) = &plan.release {
        barriers
            .patch(&barrier_name, &PatchParams::default(), &Patch::Merge(release_patch(k)))
            .await
            .map_err(|e| ReconcileError::api(format!("release {k} in {namespace}/{barrier_name}"), &e))?;
        tracing::debug!(pod = %key, released = %k, "priority released");
    }
    if plan.complete {
        let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
        match api.patch(&name, &PatchParams::default(), &Patch::Merge(completed_patch())).await {
            Ok(_) => tracing::debug!(pod = %key, "launch priority completed"),
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(ReconcileError::api(format!("mark pod {key} completed"), &e)),
        }
    }
    Ok(None)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};
    use kube::core::DeserializeGuard;
    use kube::runtime::watcher::Event;
    use serde_json::{Value, json};
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Fake {
        /// ConfigMaps by name (one namespace).
        config_maps: BTreeMap<String, Value>,
        /// Requests seen: (method, path, body).
        seen: Vec<(String, String, Value)>,
        /// The next ConfigMap creations answered 409 AlreadyExists.
        conflicts: u32,
    }

    fn answer(code: u16, body: Value) -> axum::http::Response<Full<Bytes>> {
        axum::http::Response::builder()
            .status(code)
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .unwrap()
    }

    fn status(code: u16, reason: &str) -> Value {
        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": reason, "reason": reason, "code": code})
    }

    /// A fake API server holding ConfigMaps of namespace `ns`: GET, POST (409 while `conflicts`
    /// lasts), merge PATCH of `data`; pod patches are recorded and answered with a pod.
    fn fake_api(fake: Arc<Mutex<Fake>>) -> Client {
        let svc = tower::service_fn(move |req: axum::http::Request<kube::client::Body>| {
            let fake = Arc::clone(&fake);
            async move {
                let (parts, body) = req.into_parts();
                let bytes = body.collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                let path = parts.uri.path().to_string();
                let method = parts.method.to_string();
                let mut f = fake.lock().unwrap();
                f.seen.push((method.clone(), path.clone(), body.clone()));
                let name = path.rsplit('/').next().unwrap_or_default().to_string();
                let response = match (method.as_str(), path.contains("/configmaps")) {
                    ("GET", true) => match f.config_maps.get(&name) {
                        Some(cm) => answer(200, cm.clone()),
                        None => answer(404, status(404, "NotFound")),
                    },
                    ("POST", true) if f.conflicts > 0 => {
                        f.conflicts -= 1;
                        answer(409, status(409, "AlreadyExists"))
                    }
                    ("POST", true) => {
                        let name = body["metadata"]["name"].as_str().unwrap().to_string();
                        f.config_maps.insert(name, body.clone());
                        answer(201, body)
                    }
                    ("DELETE", true) => match f.config_maps.get(&name) {
                        Some(cm) if cm["metadata"]["uid"] == body["preconditions"]["uid"] => {
                            f.config_maps.remove(&name);
                            answer(200, json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}))
                        }
                        Some(_) => answer(409, status(409, "Conflict")),
                        None => answer(404, status(404, "NotFound")),
                    },
                    ("PATCH", true) => match f.config_maps.get_mut(&name) {
                        Some(cm) => {
                            json_patch::merge(cm, &body);
                            answer(200, cm.clone())
                        }
                        None => answer(404, status(404, "NotFound")),
                    },
                    _ => answer(200, json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}})),
                };
                Ok::<_, std::convert::Infallible>(response)
            }
        });
        Client::new(svc, "default")
    }

    /// The webhook's Ordered pod `web` (c0 p_0, c1 p_-1, c2 p_-2) with these containers ready.
    fn pod(ready: &[&str]) -> DeserializeGuard<Pod> {
        let env = |p: i64| {
            json!([{"name": "KRUISE_CONTAINER_BARRIER",
            "valueFrom": {"configMapKeyRef": {"name": "web-barrier", "key": format!("p_{p}")}}}])
        };
        let statuses: Vec<Value> = ["c0", "c1", "c2"]
            .iter()
            .map(|c| json!({"name": c, "ready": ready.contains(c), "restartCount": 0, "image": "x", "imageID": ""}))
            .collect();
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "ns", "uid": "pod-uid"},
            "spec": {"containers": [
                {"name": "c0", "env": env(0)}, {"name": "c1", "env": env(-1)}, {"name": "c2", "env": env(-2)}]},
            "status": {"containerStatuses": statuses}
        }))
        .unwrap()
    }

    fn writes(fake: &Mutex<Fake>) -> Vec<(String, String, Value)> {
        fake.lock().unwrap().seen.iter().filter(|(m, _, _)| m != "GET").cloned().collect()
    }

    async fn until(fake: &Mutex<Fake>, n: usize) -> Vec<(String, String, Value)> {
        for _ in 0..200 {
            let w = writes(fake);
            if w.len() >= n {
                return w;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        writes(fake)
    }

    /// The pod informer's handler queues the ordered pod, the runner reconciles it: the barrier
    /// created with p_0 and owned by the pod (after two 409s, retried with the runner's backoff),
    /// then p_-1 once c0 is ready, then p_-2 and the completed mark once c1 is; a pod without
    /// priorities queues nothing and a deleted pod is forgotten.
    #[tokio::test]
    async fn the_handler_queues_ordered_pods_and_the_runner_releases_one_priority_at_a_time() {
        let fake = Arc::new(Mutex::new(Fake { conflicts: 2, ..Fake::default() }));
        let client = fake_api(Arc::clone(&fake));
        let informers = Informers::default();
        let metrics = Metrics::new();
        let token = CancellationToken::new();
        let task = start(&informers, &client, &Settings::default(), &metrics, &token);
        let pods = informers.pods.clone();
        pods.handle(Event::Init, &metrics);
        pods.handle(Event::InitApply(pod(&[])), &metrics);
        let plain: DeserializeGuard<Pod> = serde_json::from_value(
            json!({"metadata": {"name": "plain", "namespace": "ns"}, "spec": {"containers": [{"name": "a"}]}}),
        )
        .unwrap();
        pods.handle(Event::InitApply(plain), &metrics);
        pods.handle(Event::InitDone, &metrics);

        let w = until(&fake, 3).await;
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w.iter().all(|(m, p, _)| m == "POST" && p == "/api/v1/namespaces/ns/configmaps"), "{w:?}");
        assert_eq!(
            w[2].2,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"p_0": "true"}, "metadata": {"name": "web-barrier",
                "namespace": "ns", "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "pod-uid"}]}})
        );
        assert!(
            fake.lock().unwrap().seen.iter().all(|(_, p, _)| !p.contains("plain")),
            "a pod without priorities is not queued"
        );

        // c0 ready: p_-1 merged in, nothing else.
        pods.handle(Event::Apply(pod(&["c0"])), &metrics);
        let w = until(&fake, 4).await;
        assert_eq!(
            w[3],
            ("PATCH".into(), "/api/v1/namespaces/ns/configmaps/web-barrier".into(), json!({"data": {"p_-1": "true"}}))
        );
        // The same pod again (a status write that changes nothing of ours): no write.
        pods.handle(Event::Apply(pod(&["c0"])), &metrics);
        // c1 ready: p_-2, the last, and the completed mark.
        pods.handle(Event::Apply(pod(&["c0", "c1"])), &metrics);
        let w = until(&fake, 6).await;
        assert_eq!(w.len(), 6, "{w:?}");
        assert_eq!(w[4].2, json!({"data": {"p_-2": "true"}}));
        assert_eq!(
            (w[5].0.as_str(), w[5].1.as_str(), &w[5].2),
            (
                "PATCH",
                "/api/v1/namespaces/ns/pods/web",
                &json!({"metadata": {"annotations": {"apps.kruise.io/container-launch-priority-completed": "true"}}})
            )
        );
        let barrier = fake.lock().unwrap().config_maps["web-barrier"].clone();
        assert_eq!(barrier["data"], json!({"p_0": "true", "p_-1": "true", "p_-2": "true"}));

        token.cancel();
        task.await.unwrap();
        let text = metrics.encode();
        for line in [
            "controller_runtime_reconcile_total{controller=\"container-launch-priority\",result=\"error\"} 2",
            "workqueue_adds_total{controller=\"container-launch-priority\",name=\"container-launch-priority\"} 4",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
    }

    /// A barrier an earlier `web` left (owned by another uid, every key released) is deleted by
    /// its uid, and the pod gets its own with p_0 only.
    #[tokio::test]
    async fn an_earlier_pods_barrier_is_deleted_and_replaced() {
        let old = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web-barrier", "namespace": "ns",
            "uid": "old-cm", "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "web", "uid": "old-pod"}]},
            "data": {"p_0": "true", "p_-1": "true", "p_-2": "true"}});
        let fake =
            Arc::new(Mutex::new(Fake { config_maps: [("web-barrier".to_string(), old)].into(), ..Fake::default() }));
        let client = fake_api(Arc::clone(&fake));
        let informers = Informers::default();
        let metrics = Metrics::new();
        let token = CancellationToken::new();
        let task = start(&informers, &client, &Settings::default(), &metrics, &token);
        informers.pods.handle(Event::Apply(pod(&[])), &metrics);
        let w = until(&fake, 2).await;
        assert_eq!((w[0].0.as_str(), w[0].1.as_str()), ("DELETE", "/api/v1/namespaces/ns/configmaps/web-barrier"));
        assert_eq!(w[0].2["preconditions"]["uid"], "old-cm");
        assert_eq!(w[1].0, "POST");
        assert_eq!(w[1].2["data"], json!({"p_0": "true"}));
        assert_eq!(w[1].2["metadata"]["ownerReferences"][0]["uid"], "pod-uid");
        token.cancel();
        task.await.unwrap();
        assert_eq!(writes(&fake).len(), 2, "nothing more: c0 is not ready");
    }
}
