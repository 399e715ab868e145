//! The Advanced StatefulSet controller (spec §6, issue 27) as wiring only, on the platform the
//! CloneSet controller uses: the StatefulSet watch (`apps.kruise.io/v1beta1`) and the shared
//! informers' handlers feed the runner's queue; a reconcile hands the set, the pods and claims of
//! its namespace (adoption and claim matching are the planner's: a StatefulSet adopts orphans, and
//! its claims own nothing unless a retention policy says so) and its namespace's revisions to the
//! expectations gate and to [`crate::core::rollout::statefulset::plan::plan`], and has the act
//! half send the writes, the planned status and the Events. With gates
//! PreDownloadImageForInPlaceUpdate and KruiseDaemon, each round also plans image pre-download
//! ([`crate::core::rollout::statefulset::predownload`]) and sends it through
//! [`super::predownload`] before the rollout's writes (spec §7).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::{Client, Resource};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::act::{Actor, EXPECTATION_RECHECK, PlannedWrites};
use super::index::{meta_key, namespace_key};
use super::informers::{Change, Informer, Informers};
use super::predownload::PreDownload;
use super::queue::{WorkQueue, owners};
use super::runner::Runner;
use super::{ReconcileError, Settings};
use crate::apis::podunavailablebudget::PodUnavailableBudget;
use crate::apis::statefulset::v1beta1::StatefulSet;
use crate::cluster::ClusterView;
use crate::compat::selector::Selector;
use crate::core::rollout::ownership::controller_of;
use crate::core::rollout::plan::status_write;
use crate::core::rollout::statefulset::plan::{Input, plan};
use crate::core::rollout::statefulset::resize::OWNED_BY_ASTS;
use crate::core::rollout::statefulset::{conditions, predownload};
use crate::metrics::Metrics;
use crate::webhook::budget::{ApiStore, Budgets};

/// The controller's name in metrics and Events.
pub const CONTROLLER: &str = "statefulset";

struct Context {
    settings: Settings,
    sets: Informer<StatefulSet>,
    informers: Informers,
    actor: Actor,
    runner: Arc<Runner>,
    /// The admission view: the PodUnavailableBudgets a round asks before updating pods.
    view: Arc<dyn ClusterView>,
    /// Takes the budget units a plan names (the webhook's `checkAndDecrement`, on the API).
    budgets: Budgets,
    /// Image pre-download (spec §7), only with its gates on.
    predownload: Option<PreDownload>,
}

/// Registers the Advanced StatefulSet controller on `informers` (its sets on the shared
/// Advanced StatefulSet informer) and starts its runner, which stops when `token` is cancelled.
/// Start the informers after this.
pub fn start(
    informers: &Informers,
    client: &Client,
    settings: &Settings,
    metrics: &Metrics,
    view: Arc<dyn ClusterView>,
    token: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    let ns = settings.namespace.as_deref();
    let runner = super::runner_for(CONTROLLER, settings, metrics);
    // The shared Advanced StatefulSet watch (one per kind; the UnitedDeployment controller reads
    // it too), started with the other informers.
    let sets = informers.advanced_statefulsets.clone();
    let queue = runner.queue().clone();
    sets.on_change(move |c| queue.add(meta_key(c.meta())));
    informers.pods.on_change(pod_trigger(runner.queue().clone(), sets.clone()));
    informers.pvcs.on_change(super::owner_trigger("StatefulSet", runner.queue().clone()));
    informers.pvcs.on_change(resized_claim_trigger(runner.queue().clone()));
    informers.revisions.on_change(super::owner_trigger("StatefulSet", runner.queue().clone()));
    let actor = super::actor_for(CONTROLLER, client, settings, metrics);
    let ctx = Arc::new(Context {
        settings: settings.clone(),
        sets: sets.clone(),
        informers: informers.clone(),
        actor,
        runner: Arc::clone(&runner),
        view,
        budgets: Budgets::new(Arc::new(ApiStore::new(client.clone()))),
        predownload: PreDownload::for_gates(client, &settings.gates),
    });
    tracing::info!(controller = CONTROLLER, namespace = ns.unwrap_or("(all)"), "starting");
    let reconcile = move |key: String| {
        let ctx = Arc::clone(&ctx);
        async move { reconcile(&ctx, &key).await }
    };
    vec![tokio::spawn(runner.run(reconcile, token.clone()))]
}

/// A pod change queues its StatefulSets; a pod without a controller queues every set of its
/// namespace that selects it (kruise's `getPodStatefulSets`: it may be adopted).
fn pod_trigger(queue: WorkQueue, sets: Informer<StatefulSet>) -> impl Fn(Change<'_, Pod>) + Send + Sync + 'static {
    move |c| {
        let meta = c.meta();
        if controller_of(meta).is_some() {
            owners(meta, "apps.kruise.io", "StatefulSet").into_iter().for_each(|k| queue.add(k));
            return;
        }
        let Change::Applied(pod) = c else { return };
        let empty = Default::default();
        let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
        for set in sets.index().get(pod.metadata.namespace.as_deref().unwrap_or("")) {
            if Selector::from_validated(set.spec.selector.as_ref()).is_ok_and(|s| s.matches(labels)) {
                queue.add(meta_key(&set.metadata));
            }
        }
    }
}

/// kruise's `FailedCreatePod` / `FailedUpdatePod` condition when a creation or an identity repair
/// of the round failed: the observed status with the condition set, written on the set as observed
/// (a conflict leaves it to the next failure; the counters are left to the next round, as this
/// one stopped half-way). The write's own error is what the round returns.
async fn record_failure(
    ctx: &Context,
    key: &str,
    set: &StatefulSet,
    planned: &crate::core::rollout::statefulset::plan::Plan,
    failed: &super::apply::WriteError,
    api: Api<StatefulSet>,
) {
    let error = match &failed.source {
        kube::Error::Api(s) => s.message.clone(),
        e => e.to_string(),
    };
    let Some(condition) = conditions::failure_condition(&planned.actions, &failed.what, &error, Timestamp::now())
    else {
        return;
    };
    let mut status = set.status.clone().unwrap_or_default();
    if !conditions::set_condition(&mut status, condition) {
        return;
    }
    let name = set.metadata.name.clone().unwrap_or_default();
    let rv = set.metadata.resource_version.as_deref().unwrap_or("");
    let Some(write) = status_write(set, &name, rv, |s| s.status = Some(status), false) else { return };
    let ns = set.metadata.namespace.clone().unwrap_or_default();
    let writes = PlannedWrites { actions: &[], status: Some(&write), on_collision: &|_| None };
    if let Err(e) = ctx.actor.apply(key, &ns, api, writes).await {
        tracing::debug!("the failure condition was not written: {e}");
    }
}

/// A claim the set resized (annotation `apps.kruise.io/owned-by-asts`, kruise's
/// `pvcEventHandler`) queues that set when it changes: its capacity growing lets the pod waiting
/// for it be updated. Such claims need not have an owner reference (retention policy Retain).
fn resized_claim_trigger(queue: WorkQueue) -> impl Fn(Change<'_, PersistentVolumeClaim>) + Send + Sync + 'static {
    move |c| {
        let Change::Applied(claim) = c else { return };
        if let Some(set) = claim.metadata.annotations.as_ref().and_then(|a| a.get(OWNED_BY_ASTS)) {
            queue.add(format!("{}/{set}", claim.metadata.namespace.as_deref().unwrap_or("")));
        }
    }
}

async fn reconcile(ctx: &Context, key: &str) -> Result<Option<Duration>, ReconcileError> {
    if !(ctx.sets.index().is_synced() && ctx.informers.synced()) {
        tracing::debug!("waiting for the first listing of StatefulSets, pods, PVCs, revisions and nodes");
        return Ok(Some(EXPECTATION_RECHECK));
    }
    let Some(set) = ctx.sets.index().get_object(key) else {
        // The set is gone (or no longer decodes): forget what was expected of it.
        ctx.actor.forget(key);
        ctx.runner.forget(key);
        return Ok(None);
    };
    let uid = set.metadata.uid.clone().unwrap_or_default();
    let ns = set.metadata.namespace.clone().unwrap_or_default();
    let cached_pods = ctx.informers.pods.index().get(&namespace_key(&ns));
    let cached_pvcs = ctx.informers.pvcs.index().get(&namespace_key(&ns));
    let cached_revisions = ctx.informers.revisions.index().get(&ns);
    let pods: Vec<&Pod> = cached_pods.iter().map(Arc::as_ref).collect();
    let pvcs: Vec<&PersistentVolumeClaim> = cached_pvcs.iter().map(Arc::as_ref).collect();
    let revisions: Vec<&ControllerRevision> = cached_revisions.iter().map(Arc::as_ref).collect();
    let cached_classes = ctx.informers.storage_classes.as_ref().map(|i| i.index().all()).unwrap_or_default();
    let storage_classes: Vec<&StorageClass> = cached_classes.iter().map(Arc::as_ref).collect();
    let rv = set.metadata.resource_version.as_deref().unwrap_or("");
    if let Some(wait) = ctx.actor.gate(key, &uid, rv, &pods, &pvcs) {
        return Ok(Some(wait));
    }
    let listed = super::budget_takes::for_round(ctx.view.as_ref(), &ctx.settings.gates, &ns);
    let budgets: Vec<&PodUnavailableBudget> = listed.iter().map(AsRef::as_ref).collect();
    let now = Timestamp::now();
    let mut planned = plan(&Input {
        set: &set,
        pods: &pods,
        pvcs: &pvcs,
        revisions: &revisions,
        storage_classes: &storage_classes,
        budgets: &budgets,
        gates: &ctx.settings.gates,
        now,
    });
    let held = super::budget_takes::Held {
        actions: &mut planned.actions,
        status_write: &mut planned.status_write,
        waiting: &mut planned.waiting,
        requeue_after: &mut planned.requeue_after,
    };
    super::budget_takes::take(&ctx.budgets, &ns, &planned.budget_takes, &pods, &listed, now, held).await;
    for e in &planned.errors {
        tracing::warn!("{e}");
    }
    // Before the rollout's writes, on the observed set and stored revisions, as kruise's
    // doPreDownload runs before updateStatefulSet.
    if let Some(pd) = &ctx.predownload {
        let api: Api<StatefulSet> = Api::namespaced(ctx.actor.client().clone(), &ns);
        let (current, update) = (planned.current_revision.as_str(), planned.update_revision.as_str());
        pd.round(&ctx.actor, api, set.as_ref(), set.spec.selector.as_ref(), current, update, |jobs| {
            predownload::round(&set, &ctx.settings.gates, &revisions, current, update, jobs)
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
    let api: Api<StatefulSet> = Api::namespaced(ctx.actor.client().clone(), &ns);
    let applied = ctx.actor.apply(key, &ns, api.clone(), writes).await;
    if let Err(ReconcileError::Write(failed)) = &applied {
        record_failure(ctx, key, &set, &planned, failed, api).await;
    }
    if let Some(again) = applied? {
        return Ok(Some(again));
    }
    tracing::debug!(actions = planned.actions.len(), waiting = ?planned.waiting, "round applied");
    ctx.actor.publish(&set.object_ref(&()), &planned.events).await;
    Ok(Some(super::next_round(planned.requeue_after, ctx.settings.resync)))
}
