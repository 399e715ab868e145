//! The SidecarSet controller (spec §4.12, issue 28) as wiring only, on the shared platform:
//! SidecarSets, Namespaces and the manager namespace's ControllerRevisions are the ones the
//! admission view already watches (one watch per kind: [`ClusterView::on_change`] queues the set a
//! change concerns), pods come from the shared pod informer, where each pod is filed under the
//! SidecarSets its `kruise.io/sidecarset-injected-list` names ([`sidecarset_key`]), so a round
//! reads the set's own pods and a pod change queues only its sets. A round hands them to
//! [`crate::core::rollout::sidecarset::plan::plan`] and sends the plan: revision writes in the
//! manager namespace, pod writes namespace by namespace, the status last (through the storage
//! version, v1beta1, so a status write needs no conversion), Events on the set and on pods.

use std::sync::{Arc, Weak};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ObjectReference, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::{Client, Resource};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::act::{Actor, EXPECTATION_RECHECK, PlannedWrites};
use super::index::{injected_sets, sidecarset_key};
use super::informers::{Change, Informers};
use super::queue::WorkQueue;
use super::runner::Runner;
use super::{ReconcileError, Settings};
use crate::apis::SidecarSet;
use crate::apis::sidecarset::v1beta1;
use crate::cluster::ClusterView;
use crate::cluster::sidecarset::round_objects;
use crate::cluster::snapshot::ViewKind;
use crate::core::rollout::actions::revision_actions;
use crate::core::rollout::plan::status_write;
use crate::core::rollout::sidecarset::plan::{Input, plan};
use crate::core::sidecar::SIDECARSET_NAME_LABEL;
use crate::metrics::Metrics;

/// The controller's name in metrics and Events.
pub const CONTROLLER: &str = "sidecarset";

struct Context {
    settings: Settings,
    view: Arc<dyn ClusterView>,
    informers: Informers,
    actor: Actor,
    runner: Arc<Runner>,
}

/// The queue key of a SidecarSet (cluster-scoped: `/name`).
fn key_of(name: &str) -> String {
    format!("/{name}")
}

/// Registers the SidecarSet controller on `informers` and on the admission `view` and starts its
/// runner; it stops when `token` is cancelled. Start the informers after this.
pub fn start(
    informers: &Informers,
    view: Arc<dyn ClusterView>,
    client: &Client,
    settings: &Settings,
    metrics: &Metrics,
    token: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    let runner = super::runner_for(CONTROLLER, settings, metrics);
    informers.pods.on_change(pod_trigger(runner.queue().clone()));
    view.on_change(Box::new(view_trigger(runner.queue().clone(), Arc::downgrade(&view))));
    let actor = super::actor_for(CONTROLLER, client, settings, metrics);
    let ctx = Arc::new(Context {
        settings: settings.clone(),
        view,
        informers: informers.clone(),
        actor,
        runner: Arc::clone(&runner),
    });
    tracing::info!(controller = CONTROLLER, manager_namespace = %settings.manager_namespace, "starting");
    let reconcile = move |key: String| {
        let ctx = Arc::clone(&ctx);
        async move { reconcile(&ctx, &key).await }
    };
    vec![tokio::spawn(runner.run(reconcile, token.clone()))]
}

/// A pod change queues the SidecarSets injected into it (kruise's `enqueueRequestForPod` looks the
/// sets up by selector; a set manages only pods whose injected list names it, spec §4.12 item 1).
fn pod_trigger(queue: WorkQueue) -> impl Fn(Change<'_, Pod>) + Send + Sync + 'static {
    move |c| injected_sets(c.meta()).for_each(|name| queue.add(key_of(name)))
}

/// A change the admission view takes in: a SidecarSet queues itself, one of its revisions queues
/// it, a Namespace (whose labels a `namespaceSelector` reads) queues the sets that select
/// namespaces by label. The handler lets go once the runner stopped (leadership lost).
fn view_trigger(
    queue: WorkQueue,
    view: Weak<dyn ClusterView>,
) -> impl Fn(ViewKind, &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> bool + Send + Sync + 'static {
    move |kind, meta| {
        if queue.is_closed() {
            return false;
        }
        match kind {
            ViewKind::SidecarSet => queue.add(key_of(meta.name.as_deref().unwrap_or(""))),
            ViewKind::ControllerRevision => {
                if let Some(set) = meta.labels.as_ref().and_then(|l| l.get(SIDECARSET_NAME_LABEL)) {
                    queue.add(key_of(set));
                }
            }
            ViewKind::Namespace => {
                let Some(view) = view.upgrade() else { return false };
                for set in view.sidecarsets() {
                    if set.spec.namespace_selector.is_some() {
                        queue.add(key_of(set.metadata.name.as_deref().unwrap_or("")));
                    }
                }
            }
            ViewKind::ConfigMap | ViewKind::Pod | ViewKind::PodUnavailableBudget | ViewKind::WorkloadSpread => {}
        }
        true
    }
}

fn pod_reference(namespace: &str, name: &str, uid: Option<&String>) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(namespace.into()),
        name: Some(name.into()),
        uid: uid.cloned(),
        ..Default::default()
    }
}

async fn reconcile(ctx: &Context, key: &str) -> Result<Option<Duration>, ReconcileError> {
    if !ctx.informers.synced() {
        tracing::debug!("waiting for the first listing of pods");
        return Ok(Some(EXPECTATION_RECHECK));
    }
    let name = key.trim_start_matches('/');
    let Some(set) = ctx.view.sidecarset(name) else {
        ctx.actor.forget(key);
        ctx.runner.forget(key);
        return Ok(None);
    };
    let uid = set.metadata.uid.clone().unwrap_or_default();
    let rv = set.metadata.resource_version.clone().unwrap_or_default();
    let cached_pods = ctx.informers.pods.index().get(&sidecarset_key(name));
    let pods: Vec<&Pod> = cached_pods.iter().map(Arc::as_ref).collect();
    if let Some(wait) = ctx.actor.gate(key, &uid, &rv, &pods, &[]) {
        return Ok(Some(wait));
    }
    let manager_namespace = ctx.settings.manager_namespace.as_str();
    let read = round_objects(ctx.view.as_ref(), name, &pods, manager_namespace);
    let revisions = read.revision_refs();
    let planned = plan(&Input {
        set: &set,
        pods: &pods,
        namespace_labels: &read.namespace_labels,
        revisions: &revisions,
        manager_namespace,
        gates: &ctx.settings.gates,
        now: Timestamp::now(),
    });
    let api: Api<v1beta1::SidecarSet> = Api::all(ctx.actor.client().clone());
    let on_collision = |count: i32| {
        let mut status = set.status.clone().unwrap_or_default();
        status.collision_count = Some(count);
        status_write(set.as_ref(), name, &rv, |s: &mut SidecarSet| s.status = Some(status), false)
    };
    // 1. Revisions, in the manager namespace.
    let revision_actions = revision_actions(&planned.revision_writes, "SidecarSet revision history");
    if !revision_actions.is_empty() {
        let writes = PlannedWrites { actions: &revision_actions, status: None, on_collision: &on_collision };
        if let Some(again) = ctx.actor.apply(key, manager_namespace, api.clone(), writes).await? {
            return Ok(Some(again));
        }
    }
    // 2. Pods, namespace by namespace.
    for (namespace, actions) in &planned.pod_actions {
        let writes = PlannedWrites { actions, status: None, on_collision: &|_| None };
        ctx.actor.apply(key, namespace, api.clone(), writes).await?;
    }
    // 3. The status.
    if let Some(status) = &planned.status_write {
        let writes = PlannedWrites { actions: &[], status: Some(status), on_collision: &|_| None };
        ctx.actor.apply(key, manager_namespace, api, writes).await?;
    }
    tracing::debug!(
        pods = planned.pod_actions.values().map(Vec::len).sum::<usize>(),
        waiting = ?planned.waiting,
        "round applied"
    );
    ctx.actor.publish(&set.object_ref(&()), &planned.events).await;
    for e in &planned.pod_events {
        let reference = pod_reference(&e.namespace, &e.name, e.uid.as_ref());
        ctx.actor.publish(&reference, std::slice::from_ref(&e.event)).await;
    }
    Ok(Some(super::next_round(planned.requeue_after, ctx.settings.resync)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_pod_change_queues_the_sets_injected_into_it() {
        let queue = WorkQueue::new("sidecarset", Metrics::new());
        let trigger = pod_trigger(queue.clone());
        let pod: Pod = serde_json::from_value(json!({"metadata": {"name": "p", "namespace": "ns",
            "annotations": {"kruise.io/sidecarset-injected-list": "logs,mesh"}}}))
        .unwrap();
        trigger(Change::Applied(&pod));
        let plain: Pod = serde_json::from_value(json!({"metadata": {"name": "q", "namespace": "ns"}})).unwrap();
        trigger(Change::Applied(&plain));
        assert_eq!(queue.depth(), 2, "the pod without an injected list queues nothing");
        let mut keys = vec![queue.next().await.unwrap(), queue.next().await.unwrap()];
        keys.sort();
        assert_eq!(keys, ["/logs", "/mesh"]);
    }

    #[tokio::test]
    async fn view_changes_queue_their_set_until_the_runner_stops() {
        let queue = WorkQueue::new("sidecarset", Metrics::new());
        let view: Arc<dyn ClusterView> = Arc::new(crate::cluster::EmptyView);
        let trigger = view_trigger(queue.clone(), Arc::downgrade(&view));
        let set: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta =
            serde_json::from_value(json!({"name": "logs"})).unwrap();
        let revision = serde_json::from_value(json!({"name": "logs-abc", "namespace": "kruise-system",
            "labels": {"kruise.io/sidecarset-name": "mesh"}}))
        .unwrap();
        assert!(trigger(ViewKind::SidecarSet, &set));
        assert!(trigger(ViewKind::ControllerRevision, &revision));
        assert!(trigger(ViewKind::ConfigMap, &set));
        let mut keys = vec![queue.next().await.unwrap(), queue.next().await.unwrap()];
        keys.sort();
        assert_eq!(keys, ["/logs", "/mesh"]);
        queue.close();
        assert!(!trigger(ViewKind::SidecarSet, &set), "a stopped controller's handler lets go");
    }
}
