//! The ImageListPullJob controller (issue 29 item 3; kruise `imagelistpulljob_controller.go`) as
//! wiring: list jobs and their ImagePullJobs (filed under their owner's uid) from
//! [`ImageInformers`]; a round hands them to [`crate::core::imagepulljob::listjob::plan`] and
//! sends the result: the template-hash label, the children created (generateName) and deleted
//! (uid preconditions), the status (pinned to the version read), the TTL deletion. Children
//! created or deleted are expected, by image, until the cache shows them, so a lagging cache never
//! creates a second job for one image.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation, ReplaceOperation};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::imagepulljob::ImageInformers;
use super::index::meta_key;
use super::{ReconcileError, Settings};
use crate::apis::imagelistpulljob::v1beta1::ImageListPullJob;
use crate::apis::imagepulljob::v1beta1::ImagePullJob;
use crate::core::imagepulljob::listjob::{HASH_LABEL, plan};
use crate::metrics::{ControllerWriteLabels, Metrics};

/// The controller's name in metrics.
pub const CONTROLLER: &str = "imagelistpulljob";
const FIELD_MANAGER: &str = "kruise-manager";

/// Children awaited by a list job: (image, created, name), and since when.
type Pending = (BTreeSet<(String, bool, String)>, Instant);

struct Context {
    settings: Settings,
    client: Client,
    images: ImageInformers,
    metrics: Metrics,
    /// Per list job: images whose child was created (`true`) or deleted (`false`) and not yet
    /// shown so by the cache, and since when.
    pending: Mutex<HashMap<String, Pending>>,
}

/// Registers the controller and starts its runner. Start the informers after this.
pub fn start(
    images: &ImageInformers,
    client: &Client,
    settings: &Settings,
    metrics: &Metrics,
    token: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    let runner = super::runner_for(CONTROLLER, settings, metrics);
    let queue = runner.queue().clone();
    images.list_jobs.on_change(move |c| queue.add(meta_key(c.meta())));
    images.jobs.on_change(super::owner_trigger::<ImagePullJob>("ImageListPullJob", runner.queue().clone()));
    let ctx = Arc::new(Context {
        settings: settings.clone(),
        client: client.clone(),
        images: images.clone(),
        metrics: metrics.clone(),
        pending: Mutex::default(),
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
    let Some(list) = ctx.images.list_jobs.index().get_object(key) else {
        ctx.pending.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
        return Ok(None);
    };
    if !ctx.images.synced() {
        return Ok(Some(super::act::EXPECTATION_RECHECK));
    }
    let uid = list.metadata.uid.clone().unwrap_or_default();
    let children: Vec<Arc<ImagePullJob>> = ctx
        .images
        .jobs
        .index()
        .get(&uid)
        .into_iter()
        .filter(|j| j.metadata.deletion_timestamp.is_none())
        .filter(|j| j.metadata.owner_references.iter().flatten().any(|r| r.uid == uid && r.controller == Some(true)))
        .collect();
    {
        let mut pending = ctx.pending.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((set, since)) = pending.get_mut(key) {
            set.retain(|(image, created, name)| {
                let shown = if *created {
                    children
                        .iter()
                        .any(|c| c.spec.fields.image == *image && c.metadata.name.as_deref() == Some(name.as_str()))
                } else {
                    !children.iter().any(|c| c.metadata.name.as_deref() == Some(name.as_str()))
                };
                !shown
            });
            if set.is_empty() || since.elapsed() > ctx.settings.expectation_timeout {
                pending.remove(key);
            } else {
                return Ok(Some(super::act::EXPECTATION_RECHECK));
            }
        }
    }
    let ns = list.metadata.namespace.clone().unwrap_or_default();
    let name = list.metadata.name.clone().unwrap_or_default();
    let lists: Api<ImageListPullJob> = Api::namespaced(ctx.client.clone(), &ns);
    let jobs: Api<ImagePullJob> = Api::namespaced(ctx.client.clone(), &ns);
    let pp = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    let p = plan(&list, &children, Timestamp::now());
    let mut rv = list.metadata.resource_version.clone().unwrap_or_default();
    if let Some(hash) = &p.hash_label {
        ctx.count("patch");
        let merge = json!({"metadata": {"labels": {HASH_LABEL: hash}}});
        let done = lists
            .patch(&name, &pp, &Patch::Merge(&merge))
            .await
            .map_err(ReconcileError::api_err(format!("patch imagelistpulljob {key}")))?;
        rv = done.metadata.resource_version.unwrap_or_default();
    }
    if p.delete {
        ctx.count("delete");
        let dp = DeleteParams {
            preconditions: Some(Preconditions { uid: Some(uid), resource_version: None }),
            ..Default::default()
        };
        match lists.delete(&name, &dp).await {
            Ok(_) => return Ok(None),
            Err(kube::Error::Api(e)) if e.code == 404 => return Ok(None),
            Err(e) => return Err(ReconcileError::api_err(format!("delete imagelistpulljob {key}"))(e)),
        }
    }
    let mut expect = Vec::new();
    let mut failure = None;
    let post = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    for child in &p.create {
        ctx.count("createImagePullJob");
        match jobs.create(&post, child).await {
            Ok(created) => {
                expect.push((child.spec.fields.image.clone(), true, created.metadata.name.unwrap_or_default()))
            }
            Err(e) => {
                failure = Some(ReconcileError::api_err(format!("create imagepulljob for {key}"))(e));
                break;
            }
        }
    }
    for (child, child_uid) in &p.delete_children {
        ctx.count("deleteImagePullJob");
        let dp = DeleteParams {
            preconditions: Some(Preconditions { uid: child_uid.clone(), resource_version: None }),
            ..Default::default()
        };
        match jobs.delete(child, &dp).await {
            Ok(_) => expect.push((String::new(), false, child.clone())),
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => {
                failure = Some(ReconcileError::api_err(format!("delete imagepulljob {ns}/{child}"))(e));
                break;
            }
        }
    }
    if !expect.is_empty() {
        let mut pending = ctx.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.entry(key.to_string()).or_insert_with(|| (BTreeSet::new(), Instant::now())).0.extend(expect);
    }
    if let Some(e) = failure {
        return Err(e);
    }
    if let Some(status) = &p.status {
        ctx.count("patchStatus");
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
        lists
            .patch_status(&name, &pp, &Patch::Json::<()>(patch))
            .await
            .map_err(ReconcileError::api_err(format!("patch status of imagelistpulljob {key}")))?;
    }
    Ok(p.requeue.and_then(|d| Duration::try_from(d).ok()).map(|d| d.min(ctx.settings.resync)))
}
