//! The CloneSet reconciler (spec §5, issue 11): observe → decide → act around the pure planner
//! [`crate::core::rollout::cloneset::plan::plan`], which `kruise plan` also calls.
//!
//! - **Observe.** A kube-runtime `Controller` over CloneSets; Pods and PVCs are indexed by owner
//!   uid and ControllerRevisions by namespace ([`super::index`]), Nodes kept in a reflector store
//!   (for topology-spread scale-down ranking); a change to any owned object requeues its CloneSet.
//!   Nothing is planned before every index has completed its first listing.
//! - **Expectations** (spec §5.1 items 2 and 7). Every pod and PVC this controller creates or
//!   deletes is remembered until the cache shows it (a pod being deleted counts as deleted, as in
//!   kruise's event handler), and every object it patches until the cache has the version the
//!   write returned; until then the CloneSet is not planned (it is looked at again shortly), so a
//!   stale or delayed cache can never double a pod or delete one too many.
//! - **Decide.** One planner round on what the indexes show ([`crate::plan::owned`]).
//! - **Act.** The plan's writes in order ([`super::apply`]): pinned patches (409 when the object
//!   changed), deletes with uid/resourceVersion preconditions, revisions with their exact bytes;
//!   the first failure ends the round and the error policy requeues with backoff. Then the status
//!   through the status subresource (pinned too), then the plan's Events; the requeue is the
//!   planner's (min-ready, grace periods, progress deadline) or the resync safety net.

use std::collections::HashMap;
use std::future::Future;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::Api;
use kube::runtime::controller::{self, Action, Controller};
use kube::runtime::events::{Event as KubeEvent, EventType, Recorder, Reporter};
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;

use super::Settings;
use super::apply::{Applier, Outcome, Wave, WriteError, waves};
use super::index::{Index, namespace_of, owner_uids};
use super::queue::{Queue, owners};
use crate::apis::cloneset::{CloneSet, CloneSetStatus};
use crate::core::expectations::{
    Expectations, FORCED_EXPECTATION_REQUEUE, OnLag, ScaleAction, cache_lag, on_lag, scale_name,
};
use crate::core::features::Gate;
use crate::core::rollout::actions::{Write, coalesce, object_patch};
use crate::core::rollout::cloneset::plan::{Input, Plan, RevisionSource, plan};
use crate::metrics::{ControllerLabels, ControllerWriteLabels, Metrics, ReconcileLabels, WorkloadLabels};

/// The controller's name in metrics and Events.
pub const CONTROLLER: &str = "cloneset";

/// How soon a CloneSet whose cache is behind (expectations pending) is looked at again; the watch
/// event that settles them usually comes first.
const EXPECTATION_RECHECK: Duration = Duration::from_millis(500);

/// Plans of one CloneSet are spaced by this many times the last plan's duration.
const PLAN_SPACING: u32 = 2;

/// Everything a reconcile reads and writes through: the only door to the world.
pub struct Context {
    client: Client,
    settings: Settings,
    pods: Index<Pod>,
    pvcs: Index<PersistentVolumeClaim>,
    revisions: Index<ControllerRevision>,
    nodes: Store<Node>,
    expectations: Mutex<Expectations>,
    /// When each CloneSet was last planned and how long that took (see
    /// [`Settings::max_plan_interval`]).
    last_plan: Mutex<HashMap<String, (Instant, Duration)>>,
    /// Consecutive failures per CloneSet, for the error policy's backoff.
    failures: Mutex<HashMap<String, u32>>,
    recorder: Recorder,
    metrics: Metrics,
    /// The work-queue metrics.
    queue: Queue,
}

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// An API write failed; the next round decides again on a fresh view.
    #[error(transparent)]
    Write(#[from] WriteError),
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn scoped<K>(client: Client, namespace: Option<&str>) -> Api<K>
where
    K: Resource<Scope = kube::core::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    match namespace {
        Some(ns) => Api::namespaced(client, ns),
        None => Api::all(client),
    }
}

/// A watch of `api` that keeps `index` up to date and yields the objects it touched (for the
/// controller's owner triggers). Managed fields are dropped: nothing reads them.
fn indexed<K>(api: Api<K>, index: Index<K>) -> impl Stream<Item = Result<K, watcher::Error>> + Send + 'static
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    watcher(api, watcher::Config::default())
        .default_backoff()
        .modify(|o| o.managed_fields_mut().clear())
        .inspect_ok(move |event| index.apply(event))
        .touched_objects()
}

/// Runs the CloneSet controller until `shutdown` completes (reconciles in flight finish first).
pub async fn run(
    client: Client,
    settings: Settings,
    metrics: Metrics,
    shutdown: impl Future<Output = ()> + Send + Sync + 'static,
) {
    let ns = settings.namespace.clone();
    let pods = Index::new(owner_uids::<Pod>);
    let pvcs = Index::new(owner_uids::<PersistentVolumeClaim>);
    let revisions = Index::new(namespace_of::<ControllerRevision>);
    let (nodes, node_writer) = reflector::store::<Node>();
    let node_stream = reflector::reflector(node_writer, watcher(Api::<Node>::all(client.clone()), Default::default()))
        .default_backoff()
        .modify(|n| n.managed_fields_mut().clear())
        .touched_objects();
    let reporter = Reporter { controller: "kruise-manager".into(), instance: settings.instance.clone() };
    let concurrency = settings.concurrency;
    let ctx = Arc::new(Context {
        recorder: Recorder::new(client.clone(), reporter),
        pods: pods.clone(),
        pvcs: pvcs.clone(),
        revisions: revisions.clone(),
        nodes,
        expectations: Mutex::new(Expectations::default()),
        failures: Mutex::new(HashMap::new()),
        last_plan: Mutex::new(HashMap::new()),
        queue: Queue::new(CONTROLLER, metrics.clone()),
        metrics,
        settings,
        client: client.clone(),
    });
    tracing::info!(controller = CONTROLLER, namespace = ns.as_deref().unwrap_or("(all)"), "starting");
    let cleanup = Arc::clone(&ctx);
    let (reader, writer) = reflector::store::<CloneSet>();
    let queue = ctx.queue.clone();
    let clonesets =
        reflector::reflector(writer, watcher(scoped::<CloneSet>(client.clone(), ns.as_deref()), Default::default()))
            .default_backoff()
            .applied_objects()
            .inspect_ok(move |cs| queue.add(key_of(cs)));
    let (q1, q2, q3) = (ctx.queue.clone(), ctx.queue.clone(), ctx.queue.clone());
    Controller::for_stream(clonesets, reader)
        .watches_stream(indexed(scoped::<Pod>(client.clone(), ns.as_deref()), pods), move |p| owned_by(&p, &q1))
        .watches_stream(indexed(scoped::<PersistentVolumeClaim>(client.clone(), ns.as_deref()), pvcs), move |p| {
            owned_by(&p, &q2)
        })
        .watches_stream(indexed(scoped::<ControllerRevision>(client.clone(), ns.as_deref()), revisions), move |r| {
            owned_by(&r, &q3)
        })
        .watches_stream(node_stream, |_| std::iter::empty::<ObjectRef<CloneSet>>())
        .with_config(controller::Config::default().concurrency(concurrency))
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(move |result| {
            match result {
                Ok(_) => {}
                // The CloneSet is gone: forget what was expected of it.
                Err(controller::Error::ObjectNotFound(r)) => {
                    let key = format!("{}/{}", r.namespace.as_deref().unwrap_or(""), r.name);
                    lock(&cleanup.expectations).delete_scale(&key);
                    lock(&cleanup.failures).remove(&key);
                    lock(&cleanup.last_plan).remove(&key);
                }
                Err(controller::Error::ReconcilerFailed(e, r)) => tracing::debug!(cloneset = %r, "{e}"),
                Err(controller::Error::QueueError(e)) => crate::cluster::watch_errors::log(CONTROLLER, &e),
                Err(e) => tracing::warn!(controller = CONTROLLER, "{e}"),
            }
            std::future::ready(())
        })
        .await;
    tracing::info!(controller = CONTROLLER, "stopped");
}

/// The CloneSets owning `obj` (any version of `apps.kruise.io`), each counted as a queue add.
fn owned_by<O: Resource>(obj: &O, queue: &Queue) -> Vec<ObjectRef<CloneSet>> {
    owners(obj, "apps.kruise.io", "CloneSet", queue)
}

fn key_of(cs: &CloneSet) -> String {
    format!("{}/{}", cs.metadata.namespace.as_deref().unwrap_or(""), cs.metadata.name.as_deref().unwrap_or(""))
}

async fn reconcile(cs: Arc<CloneSet>, ctx: Arc<Context>) -> Result<Action, ReconcileError> {
    let labels = ControllerLabels { controller: CONTROLLER.into() };
    let active = ctx.metrics.reconciles_active.get_or_create(&labels).clone();
    active.inc();
    let started = Instant::now();
    let key = key_of(&cs);
    ctx.queue.started(&key);
    let span = tracing::info_span!("reconcile", controller = CONTROLLER, cloneset = %key);
    let result = tracing::Instrument::instrument(reconcile_once(&cs, &ctx, &key), span).await;
    active.dec();
    ctx.metrics.reconcile_time.get_or_create(&labels).observe(started.elapsed().as_secs_f64());
    let result_label = match &result {
        Ok(_) => "success",
        Err(_) => "error",
    };
    ctx.metrics
        .reconciles
        .get_or_create(&ReconcileLabels { controller: CONTROLLER.into(), result: result_label.into() })
        .inc();
    if result.is_ok() {
        lock(&ctx.failures).remove(&key);
    }
    result
}

/// Backoff after failures: 409s retry soon (the view was stale), 429s and other errors later,
/// doubling per consecutive failure up to a minute.
fn error_policy(cs: Arc<CloneSet>, error: &ReconcileError, ctx: Arc<Context>) -> Action {
    let key = key_of(&cs);
    let n = {
        let mut failures = lock(&ctx.failures);
        let n = failures.entry(key.clone()).or_insert(0);
        *n = n.saturating_add(1);
        *n
    };
    let ReconcileError::Write(w) = error;
    let base = match w.code() {
        Some(409) => Duration::from_millis(100),
        Some(429) => Duration::from_secs(1),
        _ => Duration::from_millis(500),
    };
    let delay = base.saturating_mul(1 << n.saturating_sub(1).min(10)).min(Duration::from_secs(60));
    if w.is_conflict() {
        tracing::debug!(cloneset = %key, failures = n, "{error}; retrying in {delay:?}");
    } else {
        tracing::warn!(cloneset = %key, failures = n, "{error}; retrying in {delay:?}");
    }
    Action::requeue(delay)
}

async fn reconcile_once(cs: &CloneSet, ctx: &Context, key: &str) -> Result<Action, ReconcileError> {
    if !(ctx.pods.is_synced() && ctx.pvcs.is_synced() && ctx.revisions.is_synced()) {
        tracing::debug!("waiting for the first listing of pods, PVCs and revisions");
        return Ok(Action::requeue(EXPECTATION_RECHECK));
    }
    let uid = cs.metadata.uid.clone().unwrap_or_default();
    let ns = cs.metadata.namespace.clone().unwrap_or_default();
    let cached_pods = ctx.pods.get(&uid);
    let cached_pvcs = ctx.pvcs.get(&uid);
    let lag = {
        let pods: Vec<&Pod> = cached_pods.iter().map(Arc::as_ref).collect();
        let pvcs: Vec<&PersistentVolumeClaim> = cached_pvcs.iter().map(Arc::as_ref).collect();
        let rv = cs.metadata.resource_version.as_deref().unwrap_or("");
        cache_lag(&mut lock(&ctx.expectations), key, &uid, rv, &pods, &pvcs, Timestamp::now())
    };
    if let Some(lag) = lag {
        let waited = Duration::try_from(lag.waited).unwrap_or_default();
        let timeout = SignedDuration::try_from(ctx.settings.expectation_timeout).unwrap_or(SignedDuration::MAX);
        let force = ctx.settings.gates.enabled(Gate::ForceDeleteTimeoutExpectationFeatureGate);
        let decision = on_lag(&lag, timeout, force);
        if decision != OnLag::Wait && lag.scale {
            let (namespace, name) = key.split_once('/').unwrap_or(("", key));
            let labels = WorkloadLabels { namespace: namespace.into(), name: name.into() };
            ctx.metrics.scale_expectation_leakage.get_or_create(&labels).inc();
        }
        match decision {
            OnLag::Wait => tracing::debug!(?waited, "waiting for the cache to show {}", lag.waiting_for),
            OnLag::Overdue => tracing::warn!(
                ?waited,
                "the cache has not shown {} for longer than the expectation timeout",
                lag.waiting_for
            ),
            OnLag::ForgetScale => {
                tracing::warn!(
                    ?waited,
                    "the cache has not shown {} for longer than the expectation timeout: \
                     ForceDeleteTimeoutExpectationGate drops the scale expectations",
                    lag.waiting_for
                );
                lock(&ctx.expectations).delete_scale(key);
                return Ok(Action::requeue(
                    Duration::try_from(FORCED_EXPECTATION_REQUEUE).unwrap_or(EXPECTATION_RECHECK),
                ));
            }
        }
        return Ok(Action::requeue(EXPECTATION_RECHECK));
    }
    if let Some((at, took)) = lock(&ctx.last_plan).get(key).copied() {
        let spacing = took.saturating_mul(PLAN_SPACING).min(ctx.settings.max_plan_interval);
        let since = at.elapsed();
        if since < spacing {
            return Ok(Action::requeue(spacing - since));
        }
    }
    let planning = Instant::now();
    let cached_revisions = ctx.revisions.get(&ns);
    let view = crate::plan::owned(
        cs,
        cached_pods.iter().map(Arc::as_ref),
        cached_pvcs.iter().map(Arc::as_ref),
        cached_revisions.iter().map(Arc::as_ref),
    );
    let spreads = cs.spec.template.spec.as_ref().is_some_and(|s| s.topology_spread_constraints.is_some());
    let nodes: Vec<Node> = if spreads { ctx.nodes.state().iter().map(|n| (**n).clone()).collect() } else { Vec::new() };
    let now = Timestamp::now();
    let planned = plan(&Input {
        cloneset: cs,
        pods: &view.pods,
        pvcs: &view.pvcs,
        revisions: &view.revisions,
        nodes: &nodes,
        gates: &ctx.settings.gates,
        now,
        seed: std::collections::hash_map::RandomState::new().hash_one(now.as_nanosecond()),
        revision_source: RevisionSource::Compute,
    });
    lock(&ctx.last_plan).insert(key.to_string(), (planning, planning.elapsed()));
    for e in &planned.errors {
        tracing::warn!("{e}");
    }
    let mut applier = Applier::<CloneSet>::new(ctx.client.clone(), &ns);
    if let Some(action) = apply_plan(ctx, cs, key, &planned, &mut applier).await? {
        return Ok(action);
    }
    tracing::debug!(actions = planned.actions.len(), waiting = ?planned.waiting, "round applied");
    let reference = cs.object_ref(&());
    for e in &planned.events {
        let event = KubeEvent {
            type_: if e.type_ == "Warning" { EventType::Warning } else { EventType::Normal },
            reason: e.reason.into(),
            note: Some(e.message.clone()),
            action: e.reason.into(),
            secondary: None,
        };
        if let Err(err) = ctx.recorder.publish(&event, &reference).await {
            tracing::debug!("cannot record Event {}: {err}", e.reason);
        }
    }
    let requeue = planned
        .requeue_after
        .and_then(|d| Duration::try_from(d).ok())
        .map_or(ctx.settings.resync, |d| d.min(ctx.settings.resync));
    Ok(Action::requeue(requeue))
}

/// Applies the plan's actions, then its status; `Some` when the round must end early with that
/// action (a revision hash collision raised `status.collisionCount`).
async fn apply_plan(
    ctx: &Context,
    cs: &CloneSet,
    key: &str,
    planned: &Plan,
    applier: &mut Applier<CloneSet>,
) -> Result<Option<Action>, ReconcileError> {
    if let Some(action) = act(ctx, cs, key, planned, applier).await? {
        return Ok(Some(action));
    }
    if planned.status_changed {
        write_status(ctx, cs, applier, planned.status.clone()).await?;
    }
    Ok(None)
}

/// Applies the plan's actions; `Some` when the round must end early with that action (a revision
/// hash collision raised `status.collisionCount`).
async fn act(
    ctx: &Context,
    cs: &CloneSet,
    key: &str,
    planned: &Plan,
    applier: &mut Applier<CloneSet>,
) -> Result<Option<Action>, ReconcileError> {
    let ns = cs.metadata.namespace.clone().unwrap_or_default();
    for wave in waves(&planned.actions) {
        match wave {
            Wave::Alone(action) => {
                log_action(action);
                for write in &action.writes {
                    if let Outcome::Collision { collision_count } = apply_write(ctx, key, applier, write).await? {
                        tracing::info!(collision_count, "revision hash collision: raising status.collisionCount");
                        let mut status = cs.status.clone().unwrap_or_default();
                        status.collision_count = Some(collision_count);
                        write_status(ctx, cs, applier, status).await?;
                        return Ok(Some(Action::requeue(Duration::ZERO)));
                    }
                }
            }
            Wave::Together(groups) => {
                // Each pod's actions in order on an applier of its own; pods side by side. Every
                // write is pinned or preconditioned, so a failure of one pod harms no other; the
                // wave ends before its error is returned.
                let sends: Vec<_> = groups.into_iter().map(|group| apply_group(ctx, key, &ns, group)).collect();
                let results: Vec<Result<(), ReconcileError>> =
                    futures::stream::iter(sends).buffer_unordered(ctx.settings.writes_in_flight.max(1)).collect().await;
                if let Some(Err(e)) = results.into_iter().find(Result::is_err) {
                    return Err(e);
                }
            }
        }
    }
    Ok(None)
}

/// One pod's actions, in order, on an applier of its own; writes that can be one are one
/// ([`coalesce`]).
async fn apply_group(
    ctx: &Context,
    key: &str,
    ns: &str,
    group: Vec<&crate::core::rollout::actions::Action>,
) -> Result<(), ReconcileError> {
    let mut own = Applier::<CloneSet>::new(ctx.client.clone(), ns);
    group.iter().for_each(|action| log_action(action));
    for write in coalesce(group.iter().flat_map(|action| &action.writes)) {
        apply_write(ctx, key, &mut own, &write).await?;
    }
    Ok(())
}

fn log_action(action: &crate::core::rollout::actions::Action) {
    tracing::debug!(action = ?action.kind, pod = action.pod.as_deref().unwrap_or(""), revision = %action.revision, "{}", action.reason);
}

fn count_write(ctx: &Context, write: &str) {
    let labels = ControllerWriteLabels { controller: CONTROLLER.into(), write: write.into() };
    ctx.metrics.controller_writes.get_or_create(&labels).inc();
}

/// One write with its expectations: creations and deletions are expected before the call (and
/// forgotten when it fails), patched objects' returned versions after it.
async fn apply_write(
    ctx: &Context,
    key: &str,
    applier: &mut Applier<CloneSet>,
    write: &Write,
) -> Result<Outcome, ReconcileError> {
    let scale = match write {
        Write::CreatePod { pod } => Some((ScaleAction::Create, scale_name("pod", &pod.name_any()))),
        Write::CreatePvc { pvc } => Some((ScaleAction::Create, scale_name("pvc", &pvc.name_any()))),
        Write::DeletePod { name, .. } => Some((ScaleAction::Delete, scale_name("pod", name))),
        Write::DeletePvc { name, .. } => Some((ScaleAction::Delete, scale_name("pvc", name))),
        _ => None,
    };
    if let Some((a, n)) = &scale {
        lock(&ctx.expectations).expect_scale(key, *a, n);
    }
    let outcome = applier.apply(write).await;
    count_write(ctx, write.kind());
    let mut exp = lock(&ctx.expectations);
    match (&outcome, &scale) {
        // Nothing will show up (or go away) in the cache for a failed call, nor for a PVC that
        // was there already.
        (Err(_), Some((a, n))) | (Ok(Outcome::Exists), Some((a, n))) => exp.observe_scale(key, *a, n),
        _ => {}
    }
    match (&outcome, write) {
        (
            Ok(Outcome::Done { uid: Some(uid), resource_version: Some(rv) }),
            Write::PatchPod { .. }
            | Write::PatchPodStatus { .. }
            | Write::PatchPodResize { .. }
            | Write::PatchWorkload { .. },
        ) => exp.expect_version(uid, rv),
        (Ok(Outcome::Done { uid: Some(uid), .. }), Write::DeletePod { .. }) => exp.delete_version(uid),
        _ => {}
    }
    Ok(outcome?)
}

/// Writes the CloneSet's status (a JSON patch of `status` pinned to the observed version, or to
/// this round's own write of the CloneSet).
async fn write_status(
    ctx: &Context,
    cs: &CloneSet,
    applier: &mut Applier<CloneSet>,
    status: CloneSetStatus,
) -> Result<(), ReconcileError> {
    let mut after = cs.clone();
    after.status = Some(status);
    let ops = object_patch(cs, &after).0.into_iter().filter(|op| op.path().as_str().starts_with("/status")).collect();
    let name = cs.name_any();
    count_write(ctx, "workload_status");
    let outcome = applier
        .patch_status(&name, cs.metadata.resource_version.as_deref().unwrap_or(""), json_patch::Patch(ops))
        .await?;
    if let Outcome::Done { uid: Some(uid), resource_version: Some(rv) } = outcome {
        lock(&ctx.expectations).expect_version(&uid, &rv);
    }
    Ok(())
}
