//! The leader's pod-readiness controller (kruise's `podreadiness` controller): every pod the shared
//! pod informer shows that [`crate::core::podreadiness::needs_condition`] picks is queued, and its
//! reconcile gives it `KruisePodReady=True` through `pods/status`, so pods of kruise workloads —
//! which the pod webhook gives that readiness gate — can turn Ready. A failed patch is retried
//! with the runner's backoff; a pod gone meanwhile needs nothing.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::informers::{Change, Informer, Informers};
use super::queue::WorkQueue;
use super::runner::{Pacing, Runner};
use super::{ReconcileError, Settings};
use crate::core::podreadiness::{condition_patch, needs_condition};
use crate::metrics::Metrics;

/// The controller's name in metrics.
pub const CONTROLLER: &str = "podreadiness";

/// Registers the controller on the shared pod informer and starts its runner.
pub fn start(
    informers: &Informers,
    client: &Client,
    settings: &Settings,
    metrics: &Metrics,
    token: &CancellationToken,
) -> JoinHandle<()> {
    let queue = WorkQueue::new(CONTROLLER, metrics.clone());
    let q = queue.clone();
    informers.pods.on_change(move |c| {
        if let Change::Applied(p) = c
            && needs_condition(p)
        {
            q.add(super::index::meta_key(&p.metadata));
        }
    });
    let pacing = Pacing { factor: 0, max_interval: Duration::ZERO };
    let runner = Runner::new(CONTROLLER, queue, metrics.clone(), usize::from(settings.concurrency), pacing);
    let (pods, client) = (informers.pods.clone(), client.clone());
    let reconcile = move |key: String| {
        let (pods, client) = (pods.clone(), client.clone());
        async move { reconcile(&pods, &client, &key).await }
    };
    tokio::spawn(runner.run(reconcile, token.clone()))
}

async fn reconcile(pods: &Informer<Pod>, client: &Client, key: &str) -> Result<Option<Duration>, ReconcileError> {
    let Some(pod) = pods.index().get_object(key).filter(|p| needs_condition(p)) else {
        return Ok(None);
    };
    let pod: Arc<Pod> = pod;
    let (namespace, name) =
        (pod.metadata.namespace.clone().unwrap_or_default(), pod.metadata.name.clone().unwrap_or_default());
    let api: Api<Pod> = Api::namespaced(client.clone(), &namespace);
    let now = k8s_openapi::jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    match api.patch_status(&name, &PatchParams::default(), &Patch::Strategic(&condition_patch(&now))).await {
        Ok(_) => {
            tracing::debug!(pod = %key, "KruisePodReady set");
            Ok(None)
        }
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
        Err(e) => {
            let code = match &e {
                kube::Error::Api(s) => Some(s.code),
                _ => None,
            };
            Err(ReconcileError::Api { what: format!("set KruisePodReady on pod {key}"), code, message: e.to_string() })
        }
    }
}
