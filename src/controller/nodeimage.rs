//! The NodeImage controller (issue 29 item 2; kruise `nodeimage_controller.go`) as wiring: Nodes
//! from the shared node informer (no watch of its own), NodeImages and ImagePullJobs from
//! [`ImageInformers`]; a round hands the cached Node and NodeImage to
//! [`crate::core::imagepulljob::nodeimage::plan`] and sends the result. A NodeImage just created is
//! expected until the cache shows it, so a lagging cache never creates a second (the API's 409
//! AlreadyExists settles a race anyway); before deleting a NodeImage because its Node is not in the
//! cache, the Node is read from the API: a NodeImage whose Node exists is never deleted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation, ReplaceOperation};
use k8s_openapi::api::core::v1::{Node, ObjectReference, Secret};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::act::Actor;
use super::imagepulljob::ImageInformers;
use super::informers::{Change, Informers};
use super::{ReconcileError, Settings};
use crate::apis::nodeimage::v1beta1::NodeImage;
use crate::core::imagepulljob::nodeimage::{CREATION_DELAY, is_virtual, plan};
use crate::core::rollout::plan::{Event, EventType};
use crate::metrics::{ControllerWriteLabels, Metrics};

/// The controller's name in metrics and Events.
pub const CONTROLLER: &str = "nodeimage";
const FIELD_MANAGER: &str = "kruise-manager";

struct Context {
    settings: Settings,
    client: Client,
    informers: Informers,
    images: ImageInformers,
    actor: Actor,
    metrics: Metrics,
    /// NodeImages created and not yet in the cache.
    created: Mutex<HashMap<String, Instant>>,
}

/// Registers the NodeImage controller and starts its runner. Start the informers after this.
pub fn start(
    informers: &Informers,
    images: &ImageInformers,
    client: &Client,
    settings: &Settings,
    metrics: &Metrics,
    token: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    let runner = super::runner_for(CONTROLLER, settings, metrics);
    let queue = runner.queue().clone();
    let cached = images.node_images.clone();
    // `nodeHandler`: a Node without its NodeImage, relabelled, deleting or deleted.
    informers.nodes.on_change(move |c: Change<'_, Node>| {
        let name = c.meta().name.clone().unwrap_or_default();
        match c {
            Change::Applied(n) if is_virtual(n) => {}
            Change::Applied(n) => {
                let ni = cached.index().get_object(&format!("/{name}"));
                let relabelled = ni.is_none_or(|ni| {
                    ni.metadata.labels.clone().unwrap_or_default() != n.metadata.labels.clone().unwrap_or_default()
                });
                if relabelled || n.metadata.deletion_timestamp.is_some() {
                    queue.add(format!("/{name}"));
                }
            }
            Change::Deleted(_) => queue.add(format!("/{name}")),
        }
    });
    let queue = runner.queue().clone();
    images.node_images.on_change(move |c| queue.add(format!("/{}", c.meta().name.as_deref().unwrap_or(""))));
    // `imagePullJobHandler`: a deleted job's NodeImages drop its tags.
    let queue = runner.queue().clone();
    let cached = images.node_images.clone();
    images.jobs.on_change(move |c| {
        let Change::Deleted(meta) = c else { return };
        let Some(uid) = meta.uid.as_deref() else { return };
        for ni in cached.index().all() {
            let owned = ni
                .spec
                .images
                .values()
                .flat_map(|s| &s.tags)
                .flat_map(|t| &t.owner_references)
                .any(|r| r.uid.as_deref() == Some(uid));
            if owned {
                queue.add(format!("/{}", ni.metadata.name.as_deref().unwrap_or("")));
            }
        }
    });
    let ctx = Arc::new(Context {
        settings: settings.clone(),
        client: client.clone(),
        informers: informers.clone(),
        images: images.clone(),
        actor: super::actor_for(CONTROLLER, client, settings, metrics),
        metrics: metrics.clone(),
        created: Mutex::default(),
    });
    tracing::info!(controller = CONTROLLER, "starting");
    let reconcile = move |key: String| {
        let ctx = Arc::clone(&ctx);
        async move { reconcile(&ctx, &key).await }
    };
    vec![tokio::spawn(runner.run(reconcile, token.clone()))]
}

fn ptr(tokens: &[&str]) -> PointerBuf {
    PointerBuf::from_tokens(tokens.iter().copied())
}

impl Context {
    fn count(&self, write: &str) {
        let labels = ControllerWriteLabels { controller: CONTROLLER.into(), write: write.into() };
        self.metrics.controller_writes.get_or_create(&labels).inc();
    }
}

async fn reconcile(ctx: &Context, key: &str) -> Result<Option<Duration>, ReconcileError> {
    let name = key.trim_start_matches('/').to_string();
    if !ctx.images.synced() || !ctx.informers.nodes.index().is_synced() {
        return Ok(Some(super::act::EXPECTATION_RECHECK));
    }
    let node = ctx.informers.nodes.index().get_object(key);
    let ni = ctx.images.node_images.index().get_object(key);
    {
        let mut created = ctx.created.lock().unwrap_or_else(|e| e.into_inner());
        if ni.is_some() {
            created.remove(&name);
        } else if let Some(at) = created.get(&name) {
            if at.elapsed() < ctx.settings.expectation_timeout {
                return Ok(Some(super::act::EXPECTATION_RECHECK));
            }
            created.remove(&name);
        }
    }
    // Old-style pull secrets (no `mode: batch`) are checked against the API (rare).
    let mut secret_exists: HashMap<(String, String), Option<bool>> = HashMap::new();
    for r in ni.iter().flat_map(|ni| ni.spec.images.values()).flat_map(|s| &s.pull_secrets) {
        if r.mode == "batch" || secret_exists.contains_key(&(r.namespace.clone(), r.name.clone())) {
            continue;
        }
        let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &r.namespace);
        let exists = match api.get_opt(&r.name).await {
            Ok(s) => Some(s.is_some()),
            Err(e) => {
                tracing::warn!(secret = %r.name, "get secret failed: {e}");
                None
            }
        };
        secret_exists.insert((r.namespace.clone(), r.name.clone()), exists);
    }
    let jobs = ctx.images.jobs.clone();
    let job_uid =
        move |ns: &str, n: &str| jobs.index().get_object(&format!("{ns}/{n}")).and_then(|j| j.metadata.uid.clone());
    let secrets = |ns: &str, n: &str| secret_exists.get(&(ns.to_string(), n.to_string())).copied().flatten();
    let now = Timestamp::now();
    let round = plan(node.as_deref(), ni.as_deref(), &job_uid, &secrets, now, CREATION_DELAY);
    let api: Api<NodeImage> = Api::all(ctx.client.clone());
    let pp = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    if let Some(labels) = round.create {
        let mut new = NodeImage::new(&name, Default::default());
        new.metadata.labels = Some(labels);
        ctx.count("create");
        ctx.created.lock().unwrap_or_else(|e| e.into_inner()).insert(name.clone(), Instant::now());
        let post = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
        match api.create(&post, &new).await {
            Ok(_) => tracing::info!(node_image = %name, "created"),
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => {
                ctx.created.lock().unwrap_or_else(|e| e.into_inner()).remove(&name);
                return Err(ReconcileError::api_err(format!("create nodeimage {name}"))(e));
            }
        }
        return Ok(None);
    }
    if round.delete {
        let Some(ni) = ni else { return Ok(None) };
        // The cache may lag behind the Node: never delete a NodeImage whose Node exists.
        let nodes: Api<Node> = Api::all(ctx.client.clone());
        if let Some(live) = nodes.get_opt(&name).await.map_err(ReconcileError::api_err(format!("get node {name}")))?
            && live.metadata.deletion_timestamp.is_none()
        {
            return Ok(Some(super::act::EXPECTATION_RECHECK));
        }
        ctx.count("delete");
        let dp = DeleteParams {
            preconditions: Some(Preconditions { uid: ni.metadata.uid.clone(), resource_version: None }),
            ..Default::default()
        };
        match api.delete(&name, &dp).await {
            Ok(_) => tracing::info!(node_image = %name, "deleted: its Node is gone"),
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(ReconcileError::api_err(format!("delete nodeimage {name}"))(e)),
        }
        return Ok(None);
    }
    if let Some((patch, why)) = round.update {
        ctx.count("patch");
        api.patch(&name, &pp, &Patch::Json::<()>(patch))
            .await
            .map_err(ReconcileError::api_err(format!("patch nodeimage {name}")))?;
        tracing::info!(node_image = %name, message = ?why, "updated");
        return Ok(None);
    }
    if let Some((status, warnings)) = round.status {
        let rv = ni.as_ref().and_then(|n| n.metadata.resource_version.clone()).unwrap_or_default();
        let patch = json_patch::Patch(vec![
            PatchOperation::Replace(ReplaceOperation {
                path: ptr(&["metadata", "resourceVersion"]),
                value: Value::String(rv),
            }),
            PatchOperation::Add(AddOperation {
                path: ptr(&["status"]),
                value: serde_json::to_value(&status).unwrap_or(Value::Null),
            }),
        ]);
        ctx.count("patchStatus");
        api.patch_status(&name, &pp, &Patch::Json::<()>(patch))
            .await
            .map_err(ReconcileError::api_err(format!("patch status of nodeimage {name}")))?;
        for w in warnings {
            let reference = w.on.clone().unwrap_or_else(|| ObjectReference {
                api_version: Some("apps.kruise.io/v1beta1".into()),
                kind: Some("NodeImage".into()),
                name: Some(name.clone()),
                uid: ni.as_ref().and_then(|n| n.metadata.uid.clone()),
                ..Default::default()
            });
            let event = Event { type_: EventType::Warning, reason: "PullImageFailed", message: w.message };
            ctx.actor.publish(&reference, &[event]).await;
        }
    }
    Ok(round.requeue.and_then(|d| Duration::try_from(d).ok()).map(|d| d.min(ctx.settings.resync)))
}
