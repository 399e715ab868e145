//! The leader's container-launch-priority controller (kruise's `containerlaunchpriority`
//! controller, ungated there and here): the shared pod informer's handler queues the pods
//! [`wants_launch`] passes (read off the pod alone: ordered containers not all ready, not marked
//! completed, active), and the reconcile reads the pod's barrier ConfigMap with a GET, asks
//! [`plan`] what to write, and writes it: the barrier created (owned by the pod) or one key merged
//! in, then the pod's `container-launch-priority-completed` mark.
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
use kube::api::{Api, Patch, PatchParams, PostParams};
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
    // Kruise runs 4 workers; ours follow `--<name>-workers` or the shared default.
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

fn api_error(what: String, e: kube::Error) -> ReconcileError {
    let code = match &e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    };
    ReconcileError::Api { what, code, message: e.to_string() }
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
    let barrier =
        barriers.get_opt(&barrier_name).await.map_err(|e| api_error(format!("get {namespace}/{barrier_name}"), e))?;
    let plan = plan(&pod, barrier.as_ref());
    if let Some(cm) = &plan.create {
        // A 409 here is AlreadyExists (created since the GET): the retry reads it and patches.
        barriers
            .create(&PostParams::default(), cm)
            .await
            .map_err(|e| api_error(format!("create {namespace}/{barrier_name}"), e))?;
        tracing::debug!(pod = %key, released = ?cm.data.as_ref().map(|d| d.keys().collect::<Vec<_>>()), "barrier created");
    }
    if let Some(k) = &plan.release {
        barriers
            .patch(&barrier_name, &PatchParams::default(), &Patch::Merge(release_patch(k)))
            .await
            .map_err(|e| api_error(format!("release {k} in {namespace}/{barrier_name}"), e))?;
        tracing::debug!(pod = %key, released = %k, "priority released");
    }
    if plan.complete {
        let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
        match api.patch(&name, &PatchParams::default(), &Patch::Merge(completed_patch())).await {
            Ok(_) => tracing::debug!(pod = %key, "launch priority completed"),
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(api_error(format!("mark pod {key} completed"), e)),
        }
    }
    Ok(None)
}
