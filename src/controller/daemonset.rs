//! The Advanced DaemonSet controller (issue 33 item 2) as wiring only, on the platform the other
//! workload controllers use: the DaemonSet watch (`apps.kruise.io/v1beta1`, the storage version
//! kruise reconciles) and the shared informers' handlers (pods, revisions, nodes) feed the
//! runner's queue; a reconcile hands the set, the pods and revisions of its namespace and every
//! node to the expectations gate and to [`crate::core::rollout::daemonset::plan::plan`], and has
//! the act half send the writes, the planned status and the Events. The failed-pod backoff the
//! planner advances is kept here between rounds, per set. A node change queues every set unless
//! only what kruise's `shouldIgnoreNodeUpdate` ignores changed (heartbeats: condition times, the
//! resourceVersion).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::{Client, Resource};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::act::{Actor, EXPECTATION_RECHECK, PlannedWrites};
use super::index::{meta_key, namespace_key};
use super::informers::{Change, Informer, Informers, scoped};
use super::predownload::PreDownload;
use super::queue::{WorkQueue, owners};
use super::runner::Runner;
use super::{ReconcileError, Settings};
use crate::apis::daemonset::v1beta1::DaemonSet;
use crate::compat::selector::Selector;
use crate::core::rollout::daemonset::backoff::Backoff;
use crate::core::rollout::daemonset::plan::{Input, plan};
use crate::core::rollout::daemonset::predownload;
use crate::core::rollout::ownership::controller_of;
use crate::core::rollout::plan::status_write;
use crate::metrics::Metrics;

/// The controller's name in metrics and Events.
pub const CONTROLLER: &str = "daemonset";

struct Context {
    settings: Settings,
    sets: Informer<DaemonSet>,
    informers: Informers,
    actor: Actor,
    runner: Arc<Runner>,
    /// The failed-pod backoff of each set (`namespace/name`).
    backoff: Mutex<BTreeMap<String, Backoff>>,
    /// Image pre-download, when its gates are on.
    predownload: Option<PreDownload>,
}

/// Registers the Advanced DaemonSet controller on `informers` and starts its DaemonSet watch and
/// runner; both stop when `token` is cancelled. Start the informers after this.
pub fn start(
    informers: &Informers,
    client: &Client,
    settings: &Settings,
    metrics: &Metrics,
    token: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    let ns = settings.namespace.as_deref();
    let runner = super::runner_for(CONTROLLER, settings, metrics);
    let sets = super::workload_informer::<DaemonSet>("DaemonSet", &runner);
    informers.pods.on_change(pod_trigger(runner.queue().clone(), sets.clone()));
    informers.revisions.on_change(super::owner_trigger("DaemonSet", runner.queue().clone()));
    informers.nodes.on_change(node_trigger(runner.queue().clone(), sets.clone()));
    let actor = super::actor_for(CONTROLLER, client, settings, metrics);
    let ctx = Arc::new(Context {
        settings: settings.clone(),
        sets: sets.clone(),
        informers: informers.clone(),
        actor,
        runner: Arc::clone(&runner),
        backoff: Mutex::default(),
        predownload: PreDownload::for_daemonset_gates(client, &settings.gates),
    });
    tracing::info!(controller = CONTROLLER, namespace = ns.unwrap_or("(all)"), "starting");
    let watch = sets.start(scoped(client, ns), metrics.clone(), token.clone());
    let reconcile = move |key: String| {
        let ctx = Arc::clone(&ctx);
        async move { reconcile(&ctx, &key).await }
    };
    vec![watch, tokio::spawn(runner.run(reconcile, token.clone()))]
}

/// A pod change queues its DaemonSet; a pod without a controller queues every set of its
/// namespace that selects it (it may be adopted).
fn pod_trigger(queue: WorkQueue, sets: Informer<DaemonSet>) -> impl Fn(Change<'_, Pod>) + Send + Sync + 'static {
    move |c| {
        let meta = c.meta();
        if controller_of(meta).is_some() {
            owners(meta, "apps.kruise.io", "DaemonSet").into_iter().for_each(|k| queue.add(k));
            return;
        }
        let Change::Applied(pod) = c else { return };
        let empty = Default::default();
        let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
        for set in sets.index().get(pod.metadata.namespace.as_deref().unwrap_or("")) {
            if Selector::from_validated(set.spec.selector.as_ref()).is_ok_and(|s| !s.is_empty() && s.matches(labels)) {
                queue.add(meta_key(&set.metadata));
            }
        }
    }
}

/// What of a node decides where daemon pods run: labels, spec (taints, unschedulable) and the
/// condition types that are True.
fn node_fingerprint(node: &Node) -> String {
    let conditions: Vec<&str> = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .map(|c| c.iter().filter(|c| c.status == "True").map(|c| c.type_.as_str()).collect())
        .unwrap_or_default();
    serde_json::to_string(&(&node.metadata.labels, &node.spec, conditions)).unwrap_or_default()
}

/// A node added, deleted or changed in what matters queues every set.
fn node_trigger(queue: WorkQueue, sets: Informer<DaemonSet>) -> impl Fn(Change<'_, Node>) + Send + Sync + 'static {
    let seen: Mutex<BTreeMap<String, String>> = Mutex::default();
    move |c| {
        let name = c.meta().name.clone().unwrap_or_default();
        let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
        match c {
            Change::Applied(node) => {
                let print = node_fingerprint(node);
                if seen.get(&name) == Some(&print) {
                    return;
                }
                seen.insert(name, print);
            }
            Change::Deleted(_) => {
                seen.remove(&name);
            }
        }
        drop(seen);
        for set in sets.index().all() {
            queue.add(meta_key(&set.metadata));
        }
    }
}

async fn reconcile(ctx: &Context, key: &str) -> Result<Option<Duration>, ReconcileError> {
    if !(ctx.sets.index().is_synced() && ctx.informers.synced()) {
        tracing::debug!("waiting for the first listing of DaemonSets, pods, revisions and nodes");
        return Ok(Some(EXPECTATION_RECHECK));
    }
    let Some(set) = ctx.sets.index().get_object(key) else {
        ctx.actor.forget(key);
        ctx.runner.forget(key);
        ctx.backoff.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
        return Ok(None);
    };
    let uid = set.metadata.uid.clone().unwrap_or_default();
    let ns = set.metadata.namespace.clone().unwrap_or_default();
    let cached_pods = ctx.informers.pods.index().get(&namespace_key(&ns));
    let cached_revisions = ctx.informers.revisions.index().get(&ns);
    let cached_nodes = ctx.informers.nodes.index().all();
    let pods: Vec<&Pod> = cached_pods.iter().map(Arc::as_ref).collect();
    let revisions: Vec<&ControllerRevision> = cached_revisions.iter().map(Arc::as_ref).collect();
    let nodes: Vec<&Node> = cached_nodes.iter().map(Arc::as_ref).collect();
    let rv = set.metadata.resource_version.as_deref().unwrap_or("");
    if let Some(wait) = ctx.actor.gate(key, &uid, rv, &pods, &[]) {
        return Ok(Some(wait));
    }
    let backoff = ctx.backoff.lock().unwrap_or_else(|e| e.into_inner()).get(key).cloned().unwrap_or_default();
    let planned = plan(&Input {
        ds: &set,
        pods: &pods,
        revisions: &revisions,
        nodes: &nodes,
        gates: &ctx.settings.gates,
        now: Timestamp::now(),
        backoff: &backoff,
        seed: fastrand::u64(..),
    });
    ctx.backoff.lock().unwrap_or_else(|e| e.into_inner()).insert(key.to_string(), planned.backoff.clone());
    for e in &planned.errors {
        tracing::warn!("{e}");
    }
    // Before manage and the rolling update, with the expectations satisfied, as kruise's
    // Reconcile does.
    if let Some(pd) = &ctx.predownload {
        let api: Api<DaemonSet> = Api::namespaced(ctx.actor.client().clone(), &ns);
        let (hash, update) = (planned.hash.as_str(), planned.update_revision.as_str());
        let complete = predownload::complete(&set, hash);
        pd.round_when(&ctx.actor, api, set.as_ref(), set.spec.selector.as_ref(), complete, update, |jobs| {
            predownload::round(&set, &revisions, hash, update, jobs)
        })
        .await;
    }
    let name = set.metadata.name.clone().unwrap_or_default();
    let on_collision = |count: i32| {
        let mut status = set.status.clone().unwrap_or_default();
        status.collision_count = Some(count);
        status_write(set.as_ref(), &name, rv, |s| s.status = Some(status), false)
    };
    let writes =
        PlannedWrites { actions: &planned.actions, status: planned.status_write.as_ref(), on_collision: &on_collision };
    let api: Api<DaemonSet> = Api::namespaced(ctx.actor.client().clone(), &ns);
    let applied = ctx.actor.apply(key, &ns, api, writes).await;
    ctx.actor.publish(&set.object_ref(&()), &planned.events).await;
    if let Some(again) = applied? {
        return Ok(Some(again));
    }
    tracing::debug!(actions = planned.actions.len(), waiting = ?planned.waiting, "round applied");
    Ok(Some(super::next_round(planned.requeue_after, ctx.settings.resync)))
}

/// Runs the Advanced DaemonSet controller alone, on informers of its own, until `shutdown`
/// completes (benchmarks; `kruise serve` runs it through [`super::Leader`]).
pub async fn run_alone(
    client: Client,
    settings: Settings,
    metrics: Metrics,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let token = CancellationToken::new();
    let informers = Informers::for_gates(&settings.gates);
    let mut tasks = start(&informers, &client, &settings, &metrics, &token);
    tasks.extend(informers.start(&client, settings.namespace.as_deref(), &metrics, &token));
    shutdown.await;
    token.cancel();
    futures::future::join_all(tasks).await;
}
