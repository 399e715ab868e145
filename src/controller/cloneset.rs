//! The CloneSet controller (spec §5, issue 11) as wiring only: the CloneSet watch and the shared
//! informers' handlers feed the runner's queue; a reconcile observes what the indexes hold for the
//! CloneSet ([`crate::core::rollout::ownership`]), passes the expectations gate, plans one round
//! with [`crate::core::rollout::cloneset::plan::plan`] (the function `kruise plan` calls), and
//! has the act half send its writes, planned status and Events. The requeue is the planner's
//! (min-ready, grace periods, progress deadline, a PodUnavailableBudget refusing an update) or
//! the resync safety net. With gate PodUnavailableBudgetUpdateGate a round reads the budgets of
//! the CloneSet's namespace from the admission view (the webhook's), as kruise's controller reads
//! its PUB cache. With gates PreDownloadImageForInPlaceUpdate and KruiseDaemon, each round also
//! plans image pre-download on what it observed ([`crate::core::rollout::cloneset::predownload`])
//! and sends it through [`super::predownload`] before the rollout's writes (spec §7).

use std::hash::BuildHasher;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::{Client, Resource};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::act::{Actor, EXPECTATION_RECHECK, PlannedWrites};
use super::informers::{Informer, Informers};
use super::predownload::PreDownload;

use super::runner::Runner;
use super::{ReconcileError, Settings};
use crate::apis::cloneset::CloneSet;
use crate::apis::podunavailablebudget::PodUnavailableBudget;
use crate::cluster::{ClusterView, EmptyView};
use crate::compat::selector::Selector;
use crate::core::rollout::cloneset::plan::{Input, RevisionSource, plan};
use crate::core::rollout::cloneset::{owner, predownload};
use crate::core::rollout::plan::status_write;
use crate::metrics::Metrics;
use crate::webhook::budget::{ApiStore, Budgets};

/// The controller's name in metrics and Events.
pub const CONTROLLER: &str = "cloneset";

struct Context {
    settings: Settings,
    clonesets: Informer<CloneSet>,
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

/// Registers the CloneSet controller on `informers` (the shared CloneSet watch among them) and
/// starts its runner; it stops when `token` is cancelled. Start the informers after this.
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
    let clonesets = informers.clonesets.clone();
    let queue = runner.queue().clone();
    clonesets.on_change(move |c| queue.add(super::index::meta_key(c.meta())));
    informers.pods.on_change(super::owner_trigger("CloneSet", runner.queue().clone()));
    informers.pvcs.on_change(super::owner_trigger("CloneSet", runner.queue().clone()));
    informers.revisions.on_change(super::owner_trigger("CloneSet", runner.queue().clone()));
    let actor = super::actor_for(CONTROLLER, client, settings, metrics);
    let ctx = Arc::new(Context {
        settings: settings.clone(),
        clonesets: clonesets.clone(),
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

/// Runs the CloneSet controller alone (its own informers; tests and benchmarks) until `shutdown`
/// completes; reconciles in flight finish first. In `kruise serve` it runs on the leader's shared
/// informers ([`super::Leader`]).
pub async fn run(
    client: Client,
    settings: Settings,
    metrics: Metrics,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let token = CancellationToken::new();
    let informers = Informers::for_gates(&settings.gates);
    let mut tasks = start(&informers, &client, &settings, &metrics, Arc::new(EmptyView), &token);
    tasks.extend(informers.start(&client, settings.namespace.as_deref(), &metrics, &token));
    shutdown.await;
    token.cancel();
    futures::future::join_all(tasks).await;
}

async fn reconcile(ctx: &Context, key: &str) -> Result<Option<Duration>, ReconcileError> {
    if !(ctx.clonesets.index().is_synced() && ctx.informers.synced()) {
        tracing::debug!("waiting for the first listing of CloneSets, pods, PVCs, revisions and nodes");
        return Ok(Some(EXPECTATION_RECHECK));
    }
    let Some(cs) = ctx.clonesets.index().get_object(key) else {
        // The CloneSet is gone (or no longer decodes): forget what was expected of it.
        ctx.actor.forget(key);
        ctx.runner.forget(key);
        return Ok(None);
    };
    let uid = cs.metadata.uid.clone().unwrap_or_default();
    let ns = cs.metadata.namespace.clone().unwrap_or_default();
    let cached_pods = ctx.informers.pods.index().get(&uid);
    let cached_pvcs = ctx.informers.pvcs.index().get(&uid);
    let cached_revisions = ctx.informers.revisions.index().get(&ns);
    let selector = Selector::from_validated(cs.spec.selector.as_ref()).ok();
    let owned = owner(&cs, selector.as_ref()).sort(
        cached_pods.iter().map(Arc::as_ref),
        cached_pvcs.iter().map(Arc::as_ref),
        cached_revisions.iter().map(Arc::as_ref),
    );
    let rv = cs.metadata.resource_version.as_deref().unwrap_or("");
    if let Some(wait) = ctx.actor.gate(key, &uid, rv, &owned.pods, &owned.pvcs) {
        return Ok(Some(wait));
    }
    let spreads = cs.spec.template.spec.as_ref().is_some_and(|s| s.topology_spread_constraints.is_some());
    let nodes: Vec<Node> =
        if spreads { ctx.informers.nodes.index().all().iter().map(|n| (**n).clone()).collect() } else { Vec::new() };
    // Only read when gate PodUnavailableBudgetUpdateGate is on; the view keeps them per namespace.
    let listed = super::budget_takes::for_round(ctx.view.as_ref(), &ctx.settings.gates, &ns);
    let budgets: Vec<&PodUnavailableBudget> = listed.iter().map(AsRef::as_ref).collect();
    let now = Timestamp::now();
    let pods: &[&Pod] = &owned.pods;
    let pvcs: &[&PersistentVolumeClaim] = &owned.pvcs;
    let revisions: &[&ControllerRevision] = &owned.revisions;
    let mut planned = plan(&Input {
        cloneset: &cs,
        pods,
        pvcs,
        revisions,
        nodes: &nodes,
        budgets: &budgets,
        gates: &ctx.settings.gates,
        now,
        seed: std::collections::hash_map::RandomState::new().hash_one(now.as_nanosecond()),
        revision_source: RevisionSource::Compute,
    });
    // Before the rollout's writes, on the observed CloneSet and stored revisions, as kruise's
    // doReconcile does before syncCloneSet.
    if let Some(pd) = &ctx.predownload {
        let api: Api<CloneSet> = Api::namespaced(ctx.actor.client().clone(), &ns);
        let (current, update) = (planned.current_revision.as_str(), planned.update_revision.as_str());
        pd.round(&ctx.actor, api, cs.as_ref(), cs.spec.selector.as_ref(), current, update, |jobs| {
            predownload::round(&cs, &ctx.settings.gates, revisions, current, update, jobs)
        })
        .await;
    }
    let held = super::budget_takes::Held {
        actions: &mut planned.actions,
        status_write: &mut planned.status_write,
        waiting: &mut planned.waiting,
        requeue_after: &mut planned.requeue_after,
    };
    super::budget_takes::take(&ctx.budgets, &ns, &planned.budget_takes, pods, &listed, now, held).await;
    for e in &planned.errors {
        tracing::warn!("{e}");
    }
    let name = cs.metadata.name.clone().unwrap_or_default();
    let on_collision = |count: i32| {
        let mut status = cs.status.clone().unwrap_or_default();
        status.collision_count = Some(count);
        status_write(cs.as_ref(), &name, rv, |c| c.status = Some(status), false)
    };
    let writes =
        PlannedWrites { actions: &planned.actions, status: planned.status_write.as_ref(), on_collision: &on_collision };
    let api: Api<CloneSet> = Api::namespaced(ctx.actor.client().clone(), &ns);
    if let Some(again) = ctx.actor.apply(key, &ns, api, writes).await? {
        return Ok(Some(again));
    }
    tracing::debug!(actions = planned.actions.len(), waiting = ?planned.waiting, "round applied");
    ctx.actor.publish(&cs.object_ref(&()), &planned.events).await;
    Ok(Some(super::next_round(planned.requeue_after, ctx.settings.resync)))
}
