//! The manager's ContainerRecreateRequest controller (issue 30 item 1; kruise
//! `pkg/controller/containerrecreaterequest`) as wiring: requests from a watch of their own,
//! filed by their pod (`namespace/podName`) so a pod's change queues its requests (kruise
//! `podEventHandler`); a round hands the cached request and pod to
//! [`crate::core::crr::manager::plan`] and sends its writes in order. A pod missing from the cache
//! is read from the API before a request is completed as "pod has gone". Status writes carry the
//! cached resourceVersion (the daemon writes the status too): a conflict retries on a fresh view.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::informers::{Change, Informer, Informers, Invalid};
use super::{ReconcileError, Settings};
use crate::apis::containerrecreaterequest::{
    ACTIVE_KEY, ContainerRecreateRequest, PHASE_COMPLETED, SYNC_CONTAINER_STATUSES_KEY, UNREADY_ACQUIRED_KEY,
};
use crate::apis::keys::KRUISE_POD_READY;
use crate::core::crr::manager::{Action, holds_not_ready, plan, readiness_message};
use crate::core::lifecycle::{add_not_ready_key, remove_not_ready_key};
use crate::core::pods;
use crate::metrics::{ControllerWriteLabels, Metrics};

/// The controller's name in metrics.
pub const CONTROLLER: &str = "containerrecreaterequest";
const FIELD_MANAGER: &str = "kruise-manager";

/// The key requests are filed under: their pod.
fn pod_of(c: &ContainerRecreateRequest) -> Vec<String> {
    vec![format!("{}/{}", c.metadata.namespace.as_deref().unwrap_or_default(), c.spec.pod_name)]
}

struct Context {
    client: Client,
    settings: Settings,
    informers: Informers,
    requests: Informer<ContainerRecreateRequest>,
    metrics: Metrics,
}

impl Context {
    fn count(&self, write: &str) {
        let labels = ControllerWriteLabels { controller: CONTROLLER.into(), write: write.into() };
        self.metrics.controller_writes.get_or_create(&labels).inc();
    }
}

/// Registers the controller on the shared pod informer, starts its own request watch and its
/// runner. Start the shared informers after this.
pub fn start(
    informers: &Informers,
    client: &Client,
    settings: &Settings,
    metrics: &Metrics,
    token: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    let runner = super::runner_for(CONTROLLER, settings, metrics);
    let requests: Informer<ContainerRecreateRequest> = Informer::new("ContainerRecreateRequest", pod_of, Invalid::Drop);
    let queue = runner.queue().clone();
    requests.on_change(move |c| queue.add(super::index::meta_key(c.meta())));
    let queue = runner.queue().clone();
    let index = requests.index().clone();
    informers.pods.on_change(move |c: Change<'_, Pod>| {
        let key = super::index::meta_key(c.meta());
        for r in index.get(&key) {
            queue.add(super::index::meta_key(&r.metadata));
        }
    });
    let ctx = Arc::new(Context {
        client: client.clone(),
        settings: settings.clone(),
        informers: informers.clone(),
        requests: requests.clone(),
        metrics: metrics.clone(),
    });
    tracing::info!(controller = CONTROLLER, "starting");
    let reconcile = move |key: String| {
        let ctx = Arc::clone(&ctx);
        async move { reconcile(&ctx, &key).await }
    };
    let api = super::informers::scoped(client, settings.namespace.as_deref());
    vec![requests.start(api, metrics.clone(), token.clone()), tokio::spawn(runner.run(reconcile, token.clone()))]
}

async fn reconcile(ctx: &Context, key: &str) -> Result<Option<Duration>, ReconcileError> {
    if !ctx.requests.index().is_synced() || !ctx.informers.pods.index().is_synced() {
        return Ok(Some(super::act::EXPECTATION_RECHECK));
    }
    let Some(crr) = ctx.requests.index().get_object(key) else { return Ok(None) };
    let ns = crr.metadata.namespace.clone().unwrap_or_default();
    let name = crr.metadata.name.clone().unwrap_or_default();
    let pod_key = format!("{ns}/{}", crr.spec.pod_name);
    let mut pod = ctx.informers.pods.index().get_object(&pod_key).map(|p| (*p).clone());
    let unfinished = crr.status.as_ref().and_then(|s| s.completion_time.as_ref()).is_none();
    if pod.is_none() && unfinished && crr.metadata.deletion_timestamp.is_none() {
        // The cache may lag behind a pod the webhook just saw: ask the API before "pod has gone".
        let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ns);
        pod = pods.get_opt(&crr.spec.pod_name).await.map_err(ReconcileError::api_err(format!("get pod {pod_key}")))?;
    }
    let now = Timestamp::now();
    let round = plan(&crr, pod.as_ref(), now);
    let api: Api<ContainerRecreateRequest> = Api::namespaced(ctx.client.clone(), &ns);
    let pp = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    let rv = crr.metadata.resource_version.clone().unwrap_or_default();
    let what = |w: &str| format!("{w} containerrecreaterequest {ns}/{name}");
    for action in round.actions {
        match action {
            Action::ReleaseNotReady => {
                if let Some(p) = pod.as_ref().filter(|p| p.metadata.deletion_timestamp.is_none()) {
                    let mut after = p.clone();
                    remove_not_ready_key(&mut after, &readiness_message(&crr), now);
                    write_ready_condition(ctx, p, &after).await?;
                }
                if holds_not_ready(&crr) {
                    let kept: Vec<&String> =
                        crr.metadata.finalizers.iter().flatten().filter(|f| *f != UNREADY_ACQUIRED_KEY).collect();
                    let patch = json!({"metadata": {"resourceVersion": rv, "finalizers": kept}});
                    ctx.count("patch");
                    api.patch(&name, &pp, &Patch::Merge(&patch))
                        .await
                        .map_err(ReconcileError::api_err(what("patch")))?;
                    // The next round sees the request without its finalizer.
                    return Ok(None);
                }
            }
            Action::RemoveActiveLabel => {
                let patch = json!({"metadata": {"labels": {ACTIVE_KEY: Value::Null}}});
                ctx.count("patch");
                api.patch(&name, &pp, &Patch::Merge(&patch)).await.map_err(ReconcileError::api_err(what("patch")))?;
            }
            Action::Delete => {
                let dp = DeleteParams {
                    preconditions: Some(Preconditions { uid: crr.metadata.uid.clone(), resource_version: None }),
                    ..Default::default()
                };
                ctx.count("delete");
                match api.delete(&name, &dp).await {
                    Ok(_) => tracing::info!(request = %key, "deleted after ttlSecondsAfterFinished"),
                    Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
                    Err(e) => return Err(ReconcileError::api(what("delete"), &e)),
                }
            }
            Action::Complete(message) => {
                let patch = json!({"metadata": {"resourceVersion": rv}, "status": {
                    "phase": PHASE_COMPLETED, "completionTime": Time(pods::whole_seconds(now)), "message": message}});
                ctx.count("patchStatus");
                api.patch_status(&name, &pp, &Patch::Merge(&patch))
                    .await
                    .map_err(ReconcileError::api_err(what("complete")))?;
                tracing::info!(request = %key, message = %message, "completed");
                return Ok(None);
            }
            Action::SyncStatuses(text) => {
                let patch = json!({"metadata": {"annotations": {SYNC_CONTAINER_STATUSES_KEY: text}}});
                ctx.count("patch");
                api.patch(&name, &pp, &Patch::Merge(&patch)).await.map_err(ReconcileError::api_err(what("patch")))?;
            }
            Action::AcquireNotReady { gated } => {
                if gated && let Some(p) = pod.as_ref() {
                    if !holds_not_ready(&crr) {
                        let mut finalizers = crr.metadata.finalizers.clone().unwrap_or_default();
                        finalizers.push(UNREADY_ACQUIRED_KEY.into());
                        let patch = json!({"metadata": {"resourceVersion": rv, "finalizers": finalizers}});
                        ctx.count("patch");
                        api.patch(&name, &pp, &Patch::Merge(&patch))
                            .await
                            .map_err(ReconcileError::api_err(what("patch")))?;
                    }
                    let mut after = p.clone();
                    add_not_ready_key(&mut after, &readiness_message(&crr), now);
                    write_ready_condition(ctx, p, &after).await?;
                }
                let at = pods::rfc3339(now);
                let patch = json!({"metadata": {"annotations": {UNREADY_ACQUIRED_KEY: at}}});
                ctx.count("patch");
                api.patch(&name, &pp, &Patch::Merge(&patch)).await.map_err(ReconcileError::api_err(what("patch")))?;
            }
        }
    }
    Ok(Some(super::next_round(round.requeue, ctx.settings.resync)))
}

/// Writes the pod's `KruisePodReady` condition as `after` has it, when it changed (a strategic
/// merge of `pods/status`, conditions merge by type; the resourceVersion makes a concurrent
/// change of the message list a conflict rather than a lost key).
async fn write_ready_condition(ctx: &Context, before: &Pod, after: &Pod) -> Result<(), ReconcileError> {
    let (Some(c), old) = (pods::condition(after, KRUISE_POD_READY), pods::condition(before, KRUISE_POD_READY)) else {
        return Ok(());
    };
    if Some(c) == old {
        return Ok(());
    }
    let ns = before.metadata.namespace.clone().unwrap_or_default();
    let name = before.metadata.name.clone().unwrap_or_default();
    let patch = json!({"metadata": {"resourceVersion": before.metadata.resource_version},
        "status": {"conditions": [c]}});
    let api: Api<Pod> = Api::namespaced(ctx.client.clone(), &ns);
    ctx.count("patchPodStatus");
    api.patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .map_err(ReconcileError::api_err(format!("patch status of pod {ns}/{name}")))?;
    Ok(())
}
