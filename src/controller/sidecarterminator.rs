//! The SidecarTerminator controller (issue 30 item 3, gate `SidecarTerminator`; kruise
//! `pkg/controller/sidecarterminator`) as wiring: pods from the shared informer that
//! [`crate::core::sidecarterminator::is_interesting`] picks are queued (kruise's
//! `enqueueRequestForPod`: creations and updates, not deletions); a round reads the pod, its node
//! (virtual-kubelet or not) and, when the plan stops containers, whether the request exists, then
//! sends [`crate::core::sidecarterminator::plan`]'s writes in order: the in-place image update
//! (a JSON patch pinned to the pod's resourceVersion), the ContainerRecreateRequest, the status
//! patch (strategic merge on `pods/status`, as kruise's `markJobPodTerminated`).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, Resource};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::informers::{Change, Informers};
use super::{ReconcileError, Settings};
use crate::apis::containerrecreaterequest::ContainerRecreateRequest;
use crate::core::rollout::plan::Event;
use crate::core::sidecarterminator::{
    Action, EVENT_REASON, SIDECAR_TERMINATED, TERMINATED_MESSAGE, in_place_message, is_interesting, is_virtual_kubelet,
    plan, request, request_name, stop_message,
};
use crate::metrics::{ControllerWriteLabels, Metrics};

/// The controller's name in metrics (kruise's `sidecarterminator-controller`).
pub const CONTROLLER: &str = "sidecarterminator";

struct Context {
    client: Client,
    informers: Informers,
    actor: super::act::Actor,
    metrics: Metrics,
}

impl Context {
    fn count(&self, write: &str) {
        let labels = ControllerWriteLabels { controller: CONTROLLER.into(), write: write.into() };
        self.metrics.controller_writes.get_or_create(&labels).inc();
    }
}

/// Registers the controller on the shared pod informer and starts its runner. Start the shared
/// informers after this.
pub fn start(
    informers: &Informers,
    client: &Client,
    settings: &Settings,
    metrics: &Metrics,
    token: &CancellationToken,
) -> JoinHandle<()> {
    let runner = super::runner_for(CONTROLLER, settings, metrics);
    let queue = runner.queue().clone();
    informers.pods.on_change(move |c| {
        if let Change::Applied(p) = c
            && is_interesting(p)
        {
            queue.add(super::index::meta_key(&p.metadata));
        }
    });
    let ctx = Arc::new(Context {
        client: client.clone(),
        informers: informers.clone(),
        actor: super::actor_for(CONTROLLER, client, settings, metrics),
        metrics: metrics.clone(),
    });
    tracing::info!(controller = CONTROLLER, "starting");
    let reconcile = move |key: String| {
        let ctx = Arc::clone(&ctx);
        async move { reconcile(&ctx, &key).await }
    };
    tokio::spawn(runner.run(reconcile, token.clone()))
}

fn pod_reference(pod: &Pod) -> ObjectReference {
    let mut reference = pod.object_ref(&());
    reference.api_version = Some("v1".into());
    reference.kind = Some("Pod".into());
    reference
}

async fn reconcile(ctx: &Context, key: &str) -> Result<Option<Duration>, ReconcileError> {
    if !ctx.informers.pods.index().is_synced() || !ctx.informers.nodes.index().is_synced() {
        return Ok(Some(super::act::EXPECTATION_RECHECK));
    }
    let Some(pod) = ctx.informers.pods.index().get_object(key) else { return Ok(None) };
    if !is_interesting(&pod) {
        return Ok(None);
    }
    let node_name = pod.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
    let Some(node) = ctx.informers.nodes.index().get_object(&format!("/{node_name}")) else {
        // kruise fails the round when the node cannot be read; look again soon.
        tracing::warn!(pod = %key, node = %node_name, "SidecarTerminator: node of the pod not found");
        return Ok(Some(Duration::from_secs(5)));
    };
    let vk = is_virtual_kubelet(node.metadata.labels.as_ref());
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let requests: Api<ContainerRecreateRequest> = Api::namespaced(ctx.client.clone(), &ns);
    let mut actions = plan(&pod, vk, false);
    if actions.iter().any(|a| matches!(a, Action::StopContainers(_))) {
        let crr = request_name(&pod);
        let exists = requests
            .get_opt(&crr)
            .await
            .map_err(ReconcileError::api_err(format!("get containerrecreaterequest {ns}/{crr}")))?
            .is_some();
        if exists {
            tracing::debug!(pod = %key, request = %crr, "SidecarTerminator: request exists, waiting for it");
            actions = plan(&pod, vk, true);
        }
    }
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ns);
    let reference = pod_reference(&pod);
    for action in actions {
        match action {
            Action::InPlaceUpdate(updates) => {
                let rv = pod.metadata.resource_version.clone().unwrap_or_default();
                let mut ops = vec![json!({"op": "test", "path": "/metadata/resourceVersion", "value": rv})];
                ops.extend(updates.iter().map(|(i, _, image)| {
                    json!({"op": "replace", "path": format!("/spec/containers/{i}/image"), "value": image})
                }));
                let patch: json_patch::Patch = serde_json::from_value(serde_json::Value::Array(ops)).map_err(|e| {
                    ReconcileError::Api { what: format!("patch pod {key}"), code: None, message: e.to_string() }
                })?;
                ctx.count("patch");
                pods.patch(&name, &PatchParams::default(), &Patch::<()>::Json(patch))
                    .await
                    .map_err(ReconcileError::api_err(format!("in-place update pod {key}")))?;
                let names: Vec<String> = updates.into_iter().map(|(_, n, _)| n).collect();
                tracing::info!(pod = %key, sidecars = ?names, "SidecarTerminator: in-place update of the sidecars");
                ctx.actor.publish(&reference, &[Event::normal(EVENT_REASON, in_place_message(&names))]).await;
            }
            Action::StopContainers(names) => {
                let crr = request(&pod, &names);
                ctx.count("create");
                match requests.create(&PostParams::default(), &crr).await {
                    Ok(_) => {
                        tracing::info!(pod = %key, sidecars = ?names, "SidecarTerminator: request created");
                        ctx.actor.publish(&reference, &[Event::normal(EVENT_REASON, stop_message(&names))]).await;
                    }
                    Err(kube::Error::Api(e)) if e.code == 409 => {}
                    Err(e) => {
                        return Err(ReconcileError::api(format!("create containerrecreaterequest for pod {key}"), &e));
                    }
                }
            }
            Action::MarkTerminated(phase) => {
                let now = k8s_openapi::jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
                let patch = json!({"status": {
                    "conditions": [{"type": SIDECAR_TERMINATED, "status": "True", "lastProbeTime": null,
                        "lastTransitionTime": now, "message": TERMINATED_MESSAGE}],
                    "phase": phase}});
                ctx.count("patch-status");
                pods.patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch))
                    .await
                    .map_err(ReconcileError::api_err(format!("failed to patch pod status {key}")))?;
                tracing::info!(pod = %key, phase, "SidecarTerminator: terminated the job pod");
            }
        }
    }
    Ok(None)
}
