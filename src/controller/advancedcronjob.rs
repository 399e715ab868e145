//! The AdvancedCronJob controller (issue 33 item 4; kruise `pkg/controller/advancedcronjob`,
//! v1.8.4) as wiring: a watch on AdvancedCronJobs, Jobs and BroadcastJobs (children filed under
//! `namespace/<owner name>` when their controller is an `apps.kruise.io/v1alpha1`
//! AdvancedCronJob, kruise's `.metadata.controller` index); a round hands the cached children and
//! the clock's now to [`crate::core::advancedcronjob::plan`] and sends the result: the status
//! (a merge patch of the whole status), the history deletions (background propagation; failures
//! are logged, as kruise does), under `Replace` the active children's deletion, the new child,
//! and a requeue at the next run.
//!
//! A created child is expected until the cache shows it, so a lagging cache never plans the same
//! run twice (a second create would only meet AlreadyExists, but under `Replace` it would delete
//! the child just made). Unlike kruise, whose Job watch is registered for Jobs owned by
//! BroadcastJobs, a Job's change queues its AdvancedCronJob (upstream CronJob's behaviour: a run
//! held back by `Forbid` starts when the active Job finishes, within `startingDeadlineSeconds`).
//!
//! The clock is a function so tests can drive the schedule.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::informers::{Informer, Invalid};
use super::{ReconcileError, Settings};
use crate::apis::advancedcronjob::AdvancedCronJob;
use crate::apis::broadcastjob::BroadcastJob;
use crate::core::advancedcronjob::{Child, Decision, OWNER_API_VERSION, OWNER_KIND, build, plan};
use crate::metrics::{ControllerWriteLabels, Metrics};

/// The controller's name in metrics.
pub const CONTROLLER: &str = "advancedcronjob";
const FIELD_MANAGER: &str = "kruise-manager";

/// Where now comes from (the system clock in `kruise serve`).
pub type Now = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// The system clock.
pub fn system_clock() -> Now {
    Arc::new(Timestamp::now)
}

/// `namespace/<owner name>` of a child whose controller is an AdvancedCronJob.
fn owner_keys<K: kube::Resource>(o: &K) -> Vec<String> {
    owner_meta_keys(o.meta())
}

/// Created children not yet shown by the cache, and since when.
type Pending = (BTreeSet<String>, Instant);

struct Context {
    settings: Settings,
    client: Client,
    metrics: Metrics,
    cron_jobs: Informer<AdvancedCronJob>,
    jobs: Informer<Job>,
    broadcast_jobs: Informer<BroadcastJob>,
    now: Now,
    pending: Mutex<HashMap<String, Pending>>,
}

impl Context {
    fn count(&self, write: &str) {
        let labels = ControllerWriteLabels { controller: CONTROLLER.into(), write: write.into() };
        self.metrics.controller_writes.get_or_create(&labels).inc();
    }

    fn synced(&self) -> bool {
        self.cron_jobs.index().is_synced() && self.jobs.index().is_synced() && self.broadcast_jobs.index().is_synced()
    }
}

/// Registers the controller on watches of its own and starts them with its runner (system clock).
pub fn start(
    client: &Client,
    settings: &Settings,
    metrics: &Metrics,
    token: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    start_with_clock(client, settings, metrics, system_clock(), token)
}

/// [`start`] with a clock of the caller's.
pub fn start_with_clock(
    client: &Client,
    settings: &Settings,
    metrics: &Metrics,
    now: Now,
    token: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    let runner = super::runner_for(CONTROLLER, settings, metrics);
    let cron_jobs = super::workload_informer::<AdvancedCronJob>("AdvancedCronJob", &runner);
    let jobs = Informer::<Job>::new("Job", owner_keys::<Job>, Invalid::KeepLast);
    let broadcast_jobs = Informer::<BroadcastJob>::new("BroadcastJob", owner_keys::<BroadcastJob>, Invalid::KeepLast);
    let queue = runner.queue().clone();
    jobs.on_change(move |c| owner_meta_keys(c.meta()).into_iter().for_each(|k| queue.add(k)));
    let queue = runner.queue().clone();
    broadcast_jobs.on_change(move |c| owner_meta_keys(c.meta()).into_iter().for_each(|k| queue.add(k)));
    let ctx = Arc::new(Context {
        settings: settings.clone(),
        client: client.clone(),
        metrics: metrics.clone(),
        cron_jobs: cron_jobs.clone(),
        jobs: jobs.clone(),
        broadcast_jobs: broadcast_jobs.clone(),
        now,
        pending: Mutex::default(),
    });
    tracing::info!(controller = CONTROLLER, "starting");
    let reconcile = move |key: String| {
        let ctx = Arc::clone(&ctx);
        async move { reconcile(&ctx, &key).await }
    };
    let ns = settings.namespace.as_deref();
    vec![
        tokio::spawn(runner.run(reconcile, token.clone())),
        cron_jobs.start(super::informers::scoped(client, ns), metrics.clone(), token.clone()),
        jobs.start(super::informers::scoped(client, ns), metrics.clone(), token.clone()),
        broadcast_jobs.start(super::informers::scoped(client, ns), metrics.clone(), token.clone()),
    ]
}

fn owner_meta_keys(meta: &ObjectMeta) -> Vec<String> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .filter(|r| r.api_version == OWNER_API_VERSION && r.kind == OWNER_KIND)
        .map(|r| vec![format!("{}/{}", meta.namespace.as_deref().unwrap_or(""), r.name)])
        .unwrap_or_default()
}

async fn reconcile(ctx: &Context, key: &str) -> Result<Option<Duration>, ReconcileError> {
    let Some(acj) = ctx.cron_jobs.index().get_object(key) else {
        ctx.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
        return Ok(None);
    };
    if !ctx.synced() {
        return Ok(Some(super::act::EXPECTATION_RECHECK));
    }
    let name = acj.metadata.name.clone().unwrap_or_default();
    let ns = acj.metadata.namespace.clone().unwrap_or_default();
    let is_job = acj.spec.template.job_template.is_some();
    let children: Vec<Child> = if is_job {
        ctx.jobs.index().get(key).iter().map(|j| Child::from_job(j)).collect()
    } else {
        ctx.broadcast_jobs.index().get(key).iter().map(|b| Child::from_broadcast_job(b)).collect()
    };
    {
        let mut pending = ctx.pending.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((set, since)) = pending.get_mut(key) {
            set.retain(|n| !children.iter().any(|c| c.reference.name.as_deref() == Some(n.as_str())));
            if set.is_empty() || since.elapsed() > ctx.settings.expectation_timeout {
                pending.remove(key);
            } else {
                return Ok(Some(super::act::EXPECTATION_RECHECK));
            }
        }
    }
    let now = (ctx.now)();
    let p = plan(&acj, &children, now);
    let cron_jobs: Api<AdvancedCronJob> = Api::namespaced(ctx.client.clone(), &ns);
    let pp = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    if acj.status.as_ref() != Some(&p.status) {
        ctx.count("patchStatus");
        let status = &p.status;
        let merge = json!({"status": {
            "type": status.type_,
            "active": if status.active.is_empty() { serde_json::Value::Null } else { json!(status.active) },
            "lastScheduleTime": status.last_schedule_time,
        }});
        cron_jobs
            .patch_status(&name, &pp, &Patch::Merge(&merge))
            .await
            .map_err(ReconcileError::api_err(format!("patch status of advancedcronjob {key}")))?;
    }
    for child in &p.delete_history {
        ctx.count("deleteHistory");
        if let Err(e) = delete_child(ctx, &ns, child, is_job).await {
            tracing::warn!(advancedcronjob = key, child, error = %e, "cannot delete an old finished run");
        }
    }
    match &p.decision {
        Decision::Unschedulable(e) => {
            tracing::warn!(advancedcronjob = key, error = e.as_str(), "cannot figure out the schedule");
        }
        d => tracing::debug!(advancedcronjob = key, decision = ?d, "planned"),
    }
    for child in &p.replace {
        ctx.count("deleteActive");
        delete_child(ctx, &ns, child, is_job)
            .await
            .map_err(ReconcileError::api_err(format!("delete active run {ns}/{child}")))?;
    }
    if let Some(scheduled) = p.create {
        let child_name = build::child_name(&acj, scheduled);
        let pp = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
        let created = if is_job {
            match build::job(&acj, scheduled) {
                Some(job) => {
                    ctx.count("createJob");
                    Api::<Job>::namespaced(ctx.client.clone(), &ns).create(&pp, &job).await.map(|_| ())
                }
                None => Ok(()),
            }
        } else {
            match build::broadcast_job(&acj, scheduled) {
                Some(job) => {
                    ctx.count("createBroadcastJob");
                    Api::<BroadcastJob>::namespaced(ctx.client.clone(), &ns).create(&pp, &job).await.map(|_| ())
                }
                None => Ok(()),
            }
        };
        match created {
            Ok(()) => {}
            // Made by an earlier round the cache does not show yet.
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(ReconcileError::api_err(format!("create run {ns}/{child_name}"))(e)),
        }
        tracing::info!(advancedcronjob = key, child = child_name.as_str(), "created the run");
        let mut pending = ctx.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.entry(key.to_string()).or_insert_with(|| (BTreeSet::new(), Instant::now())).0.insert(child_name);
    }
    Ok(Some(super::next_round(p.requeue_after, ctx.settings.resync)))
}

async fn delete_child(ctx: &Context, ns: &str, name: &str, is_job: bool) -> Result<(), kube::Error> {
    let dp = DeleteParams::background();
    let done = if is_job {
        Api::<Job>::namespaced(ctx.client.clone(), ns).delete(name, &dp).await.map(|_| ())
    } else {
        Api::<BroadcastJob>::namespaced(ctx.client.clone(), ns).delete(name, &dp).await.map(|_| ())
    };
    match done {
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn job_owned_by(api_version: &str, kind: &str, controller: bool) -> Job {
        Job {
            metadata: ObjectMeta {
                name: Some("j".into()),
                namespace: Some("ns".into()),
                owner_references: Some(vec![OwnerReference {
                    api_version: api_version.into(),
                    kind: kind.into(),
                    name: "nightly".into(),
                    uid: "u".into(),
                    controller: Some(controller),
                    block_owner_deletion: None,
                }]),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn children_are_filed_under_their_advanced_cron_job() {
        assert_eq!(owner_keys(&job_owned_by(OWNER_API_VERSION, OWNER_KIND, true)), ["ns/nightly"]);
        assert!(owner_keys(&job_owned_by(OWNER_API_VERSION, OWNER_KIND, false)).is_empty());
        assert!(owner_keys(&job_owned_by("batch/v1", "CronJob", true)).is_empty());
        assert!(owner_keys(&job_owned_by("apps.kruise.io/v1beta1", OWNER_KIND, true)).is_empty());
    }
}
