//! The BroadcastJob controller (issue 33 item 3; kruise `broadcastjob_controller.go`, v1.8.4) as
//! wiring: the BroadcastJob watch, the shared pod informer (pods filed under their owner's uid)
//! and node informer feed the queue; a round hands the job, its pods and every node to
//! [`crate::core::broadcastjob::plan`] and sends the result: the TTL deletion (uid
//! precondition), pod deletions (uid preconditions), pod creations (generateName, in node order,
//! stopping at the first failure), the status (a JSON patch pinned to the resourceVersion read)
//! and the Events. As kruise's scale expectations, every node a pod was created or deleted on is
//! awaited until the cache shows it, so a lagging cache never puts a second pod on one node.
//! Node changes that can change where a job runs (new node, labels, taints, unschedulable,
//! allocatable) queue every job, as kruise's `enqueueBroadcastJobForNode`.

use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation, ReplaceOperation};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::{Client, Resource};
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::act::{Actor, EXPECTATION_RECHECK};
use super::index::meta_key;
use super::informers::{Change, Informer, Informers, scoped};
use super::{ReconcileError, Settings};
use crate::apis::broadcastjob::BroadcastJob;
use crate::core::broadcastjob::{Input, assigned_node, owns, plan};
use crate::metrics::{ControllerWriteLabels, Metrics};

/// The controller's name in metrics and Events.
pub const CONTROLLER: &str = "broadcastjob";
const FIELD_MANAGER: &str = "kruise-manager";

/// Nodes awaited by a job: (node, created) — a pod created there not yet seen, or a pod deleted
/// there (by name) not yet gone — and since when.
type Pending = (BTreeSet<(String, bool, String)>, Instant);

struct Context {
    settings: Settings,
    client: Client,
    jobs: Informer<BroadcastJob>,
    informers: Informers,
    actor: Actor,
    metrics: Metrics,
    pending: Mutex<HashMap<String, Pending>>,
}

/// Registers the controller on `informers` and starts its BroadcastJob watch and runner. Start
/// the informers after this.
pub fn start(
    informers: &Informers,
    client: &Client,
    settings: &Settings,
    metrics: &Metrics,
    token: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    let ns = settings.namespace.as_deref();
    let runner = super::runner_for(CONTROLLER, settings, metrics);
    let jobs = super::workload_informer::<BroadcastJob>("BroadcastJob", &runner);
    informers.pods.on_change(super::owner_trigger("BroadcastJob", runner.queue().clone()));
    informers.nodes.on_change(node_trigger(runner.queue().clone(), jobs.clone()));
    let ctx = Arc::new(Context {
        settings: settings.clone(),
        client: client.clone(),
        jobs: jobs.clone(),
        informers: informers.clone(),
        actor: super::actor_for(CONTROLLER, client, settings, metrics),
        metrics: metrics.clone(),
        pending: Mutex::default(),
    });
    tracing::info!(controller = CONTROLLER, namespace = ns.unwrap_or("(all)"), "starting");
    let watch = jobs.start(scoped(client, ns), metrics.clone(), token.clone());
    let reconcile = move |key: String| {
        let ctx = Arc::clone(&ctx);
        async move { reconcile(&ctx, &key).await }
    };
    vec![watch, tokio::spawn(runner.run(reconcile, token.clone()))]
}

/// What of a node decides whether a job's pod fits it.
fn node_fingerprint(node: &Node) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let spec = node.spec.as_ref();
    let text = serde_json::to_string(&(
        &node.metadata.labels,
        spec.and_then(|s| s.taints.as_ref()),
        spec.and_then(|s| s.unschedulable),
        node.status.as_ref().and_then(|s| s.allocatable.as_ref()),
    ))
    .unwrap_or_default();
    text.hash(&mut h);
    h.finish()
}

/// Queues every job when a node appears or changes what fitness reads.
fn node_trigger(
    queue: super::queue::WorkQueue,
    jobs: Informer<BroadcastJob>,
) -> impl Fn(Change<'_, Node>) + Send + Sync + 'static {
    let seen: Mutex<HashMap<String, u64>> = Mutex::default();
    move |c| {
        let name = c.meta().name.clone().unwrap_or_default();
        let changed = {
            let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
            match c {
                Change::Applied(node) => seen.insert(name, node_fingerprint(node)) != Some(node_fingerprint(node)),
                Change::Deleted(_) => seen.remove(&name).is_some(),
            }
        };
        if changed {
            for job in jobs.index().all() {
                queue.add(meta_key(&job.metadata));
            }
        }
    }
}

fn ptr(tokens: &[&str]) -> PointerBuf {
    PointerBuf::from_tokens(tokens.iter().copied())
}

impl Context {
    fn count(&self, write: &str) {
        let labels = ControllerWriteLabels { controller: CONTROLLER.into(), write: write.into() };
        self.metrics.controller_writes.get_or_create(&labels).inc();
    }

    /// Whether the cache shows every pod this job created or deleted; drops what it shows.
    fn expectations_met(&self, key: &str, pods: &[Arc<Pod>]) -> bool {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let Some((set, since)) = pending.get_mut(key) else { return true };
        set.retain(|(node, created, name)| {
            let shown = if *created {
                pods.iter().any(|p| assigned_node(p) == *node)
            } else {
                !pods
                    .iter()
                    .any(|p| p.metadata.name.as_deref() == Some(name) && p.metadata.deletion_timestamp.is_none())
            };
            !shown
        });
        if set.is_empty() {
            pending.remove(key);
            return true;
        }
        if since.elapsed() > self.settings.expectation_timeout {
            tracing::info!(job = key, awaited = ?set, "expectations unmet past the timeout; deciding on the cache");
            pending.remove(key);
            return true;
        }
        false
    }

    fn expect(&self, key: &str, awaited: Vec<(String, bool, String)>) {
        if awaited.is_empty() {
            return;
        }
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.entry(key.to_string()).or_insert_with(|| (BTreeSet::new(), Instant::now())).0.extend(awaited);
    }
}

async fn reconcile(ctx: &Context, key: &str) -> Result<Option<Duration>, ReconcileError> {
    if !(ctx.jobs.index().is_synced()
        && ctx.informers.pods.index().is_synced()
        && ctx.informers.nodes.index().is_synced())
    {
        return Ok(Some(EXPECTATION_RECHECK));
    }
    let Some(job) = ctx.jobs.index().get_object(key) else {
        ctx.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
        return Ok(None);
    };
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let pods: Vec<Arc<Pod>> = ctx.informers.pods.index().get(&uid).into_iter().filter(|p| owns(&job, p)).collect();
    if !ctx.expectations_met(key, &pods) {
        return Ok(Some(EXPECTATION_RECHECK));
    }
    let nodes = ctx.informers.nodes.index().all();
    let p = plan(&Input { job: &job, pods: &pods, nodes: &nodes, now: Timestamp::now() });
    let ns = job.metadata.namespace.clone().unwrap_or_default();
    let name = job.metadata.name.clone().unwrap_or_default();
    let jobs: Api<BroadcastJob> = Api::namespaced(ctx.client.clone(), &ns);
    let pod_api: Api<Pod> = Api::namespaced(ctx.client.clone(), &ns);
    if p.delete_job {
        ctx.count("delete");
        tracing::info!(job = key, "deleting BroadcastJob: ttlSecondsAfterFinished passed");
        let dp = DeleteParams {
            preconditions: Some(Preconditions { uid: Some(uid), resource_version: None }),
            ..Default::default()
        };
        return match jobs.delete(&name, &dp).await {
            Ok(_) => Ok(None),
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(None),
            Err(e) => Err(ReconcileError::api_err(format!("delete broadcastjob {key}"))(e)),
        };
    }
    let mut awaited = Vec::new();
    let mut failure = None;
    for d in &p.delete {
        ctx.count("deletePod");
        let dp = DeleteParams {
            preconditions: Some(Preconditions { uid: d.uid.clone(), resource_version: None }),
            ..Default::default()
        };
        match pod_api.delete(&d.name, &dp).await {
            Ok(_) => awaited.push((d.node.clone(), false, d.name.clone())),
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => {
                failure = Some(ReconcileError::api_err(format!("delete pod {ns}/{}", d.name))(e));
                break;
            }
        }
    }
    let post = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    if failure.is_none() {
        for c in &p.create {
            ctx.count("createPod");
            match pod_api.create(&post, &c.pod).await {
                Ok(created) => awaited.push((c.node.clone(), true, created.metadata.name.unwrap_or_default())),
                Err(e) => {
                    failure = Some(ReconcileError::api_err(format!("create pod for {key} on {}", c.node))(e));
                    break;
                }
            }
        }
    }
    ctx.expect(key, awaited);
    if let Some(status) = &p.status {
        ctx.count("patchStatus");
        let rv = job.metadata.resource_version.clone().unwrap_or_default();
        let patch = json_patch::Patch(vec![
            PatchOperation::Replace(ReplaceOperation {
                path: ptr(&["metadata", "resourceVersion"]),
                value: Value::String(rv),
            }),
            PatchOperation::Add(AddOperation {
                path: ptr(&["status"]),
                value: serde_json::to_value(status).unwrap_or(Value::Null),
            }),
        ]);
        let pp = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
        jobs.patch_status(&name, &pp, &Patch::Json::<()>(patch))
            .await
            .map_err(ReconcileError::api_err(format!("patch status of broadcastjob {key}")))?;
    }
    ctx.actor.publish(&job.object_ref(&()), &p.events).await;
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(Some(super::next_round(p.requeue, ctx.settings.resync)))
}
