//! The ImagePullJob controller (issue 29 item 3; kruise `imagepulljob_controller.go`) as wiring:
//! the image informers ([`ImageInformers`]: NodeImages, ImagePullJobs and ImageListPullJobs, one
//! watch each, shared by the three image controllers) and the shared pod informer feed the
//! runner; a round reads the cache, syncs the job's pull secrets into `kruise-daemon-config`
//! through the API ([`crate::core::imagepulljob::secrets`]), and sends the plan of
//! [`crate::core::imagepulljob::plan::plan`]: the NodeImages to write, handed to the one writer
//! per NodeImage ([`super::nodeimage_writer`]) that merges every job's wishes into one patch
//! pinned to the version it was computed from, retrying a 409 on a fresh read; the finalizer,
//! the status (pinned), the TTL deletion.
//!
//! Triggers are narrow, so a storm of events does not become a storm of rounds (kruise PR #2483:
//! 887 reconciles/s for 198 jobs × 989 nodes): a NodeImage change queues only the jobs owning a
//! tag whose spec or status changed (the handler keeps a fingerprint per NodeImage to tell), and,
//! when the NodeImage is new, gone or relabelled, the running jobs that target it; a pod change
//! queues the running `podSelector` jobs of its namespace it matches, only when its node or labels
//! changed. The runner folds what remains into one round per job at a time (its pacing).
//!
//! Written versions are expectations: until the writer has answered every NodeImage write of a
//! round, and the cache shows every NodeImage and the job at the version a write returned, the job
//! is not planned again (it would count too few active pulls: `parallelism` is counted atomically
//! across rounds). The round itself does not wait for the writer; the answers queue the job.
//!
//! Secrets are not watched (kruise watches every Secret in the cluster): a job with pull secrets
//! re-syncs them every resync period.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation, ReplaceOperation};
use k8s_openapi::api::core::v1::{Namespace, Pod, Secret};
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::Value;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::index::{meta_key, namespace_key, node_key, owner_uids};
use super::informers::{Change, Informer, Informers, Invalid};
use super::nodeimage_writer::{Outcome as WriteOutcome, Writer};
use super::queue::WorkQueue;
use super::runner::Runner;
use super::{ReconcileError, Settings};
use crate::apis::imagelistpulljob::v1beta1::ImageListPullJob;
use crate::apis::imagepulljob::v1beta1::ImagePullJob;
use crate::apis::nodeimage::v1beta1::{NodeImage, ReferenceObject};
use crate::core::expectations::resource_version_newer;
use crate::core::imagepulljob::PROTECTION_FINALIZER;
use crate::core::imagepulljob::coalesce::Intent;
use crate::core::imagepulljob::plan::{Input, plan};
use crate::core::imagepulljob::secrets::{self, DAEMON_CONFIG_NAMESPACE, SecretWrite};
use crate::core::imagepulljob::targets::{Targeting, concerns_node, targeting};
use crate::metrics::{ControllerWriteLabels, Metrics};

/// The controller's name in metrics.
pub const CONTROLLER: &str = "imagepulljob";
const FIELD_MANAGER: &str = "kruise-manager";
const RECHECK: Duration = Duration::from_millis(500);
/// How soon a job whose NodeImage writes are still unanswered is looked at again (their answers
/// queue it; this is a fallback).
const IN_FLIGHT_FALLBACK: Duration = Duration::from_secs(10);
/// How soon a job a NodeImage write of which failed is looked at again.
const FAILED_RECHECK: Duration = Duration::from_secs(5);
/// How soon a job whose NodeImage patches met conflicts is looked at again.
const CONFLICT_RECHECK: Duration = Duration::from_millis(200);

/// A job's keys: its owners' uids (the ImageListPullJob finds its children) and its namespace.
fn job_keys(j: &ImagePullJob) -> Vec<String> {
    let mut keys = owner_uids(j);
    keys.push(namespace_key(j.metadata.namespace.as_deref().unwrap_or("")));
    keys
}

/// The watches of the image kinds (storage versions, v1beta1), shared by the NodeImage,
/// ImagePullJob and ImageListPullJob controllers.
#[derive(Clone)]
pub struct ImageInformers {
    pub node_images: Informer<NodeImage>,
    pub jobs: Informer<ImagePullJob>,
    pub list_jobs: Informer<ImageListPullJob>,
}

impl Default for ImageInformers {
    fn default() -> Self {
        ImageInformers {
            node_images: Informer::new("NodeImage", super::index::no_keys::<NodeImage>, Invalid::KeepLast),
            jobs: Informer::new("ImagePullJob", job_keys, Invalid::Drop),
            list_jobs: Informer::new("ImageListPullJob", super::index::namespace_of::<ImageListPullJob>, Invalid::Drop),
        }
    }
}

impl ImageInformers {
    /// Starts the watches (jobs in `namespace` or everywhere; NodeImages cluster-wide).
    pub fn start(
        &self,
        client: &Client,
        namespace: Option<&str>,
        metrics: &Metrics,
        token: &CancellationToken,
    ) -> Vec<JoinHandle<()>> {
        vec![
            self.node_images.start(Api::all(client.clone()), metrics.clone(), token.clone()),
            self.jobs.start(super::informers::scoped(client, namespace), metrics.clone(), token.clone()),
            self.list_jobs.start(super::informers::scoped(client, namespace), metrics.clone(), token.clone()),
        ]
    }

    /// The image kinds' controllers' start as kruise's (`DiscoverGVK` in each controller's
    /// `Add`): once the API server is found to serve NodeImage, ImagePullJob and
    /// ImageListPullJob ([`super::discovery`]), the watches start; when it does not, `controllers`
    /// (the token the image controllers' runners were started with) is cancelled and they stop.
    pub fn start_when_served(
        &self,
        client: &Client,
        namespace: Option<&str>,
        metrics: &Metrics,
        controllers: &CancellationToken,
    ) -> JoinHandle<()> {
        let (images, client, metrics, token) = (self.clone(), client.clone(), metrics.clone(), controllers.clone());
        let namespace = namespace.map(str::to_string);
        tokio::spawn(async move {
            let kinds = ["NodeImage", "ImagePullJob", "ImageListPullJob"];
            let served = tokio::select! {
                s = super::discovery::served(&client, "apps.kruise.io/v1beta1", &kinds) => s,
                () = token.cancelled() => return,
            };
            if !served {
                tracing::warn!(
                    "the image kinds are not served: the NodeImage, ImagePullJob and ImageListPullJob controllers are off"
                );
                token.cancel();
                return;
            }
            let tasks = images.start(&client, namespace.as_deref(), &metrics, &token);
            futures::future::join_all(tasks).await;
        })
    }

    /// Whether every kind has been listed once.
    pub fn synced(&self) -> bool {
        self.node_images.index().is_synced() && self.jobs.index().is_synced() && self.list_jobs.index().is_synced()
    }
}

fn running(j: &ImagePullJob) -> bool {
    j.metadata.deletion_timestamp.is_none() && j.status.as_ref().and_then(|s| s.completion_time.as_ref()).is_none()
}

/// A NodeImage as the trigger last saw it: its labels, and per tag the hash of its spec and
/// status with the jobs owning it.
#[derive(Default, PartialEq)]
struct Fingerprint {
    labels: u64,
    tags: BTreeMap<(String, String), (u64, Vec<String>)>,
}

fn hash_of<T: serde::Serialize>(v: &T) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    serde_json::to_string(v).unwrap_or_default().hash(&mut h);
    h.finish()
}

fn fingerprint(ni: &NodeImage) -> Fingerprint {
    let mut tags = BTreeMap::new();
    let statuses = ni.status.as_ref().map(|s| &s.image_statuses);
    for (image, spec) in &ni.spec.images {
        for t in &spec.tags {
            let st = statuses.and_then(|s| s.get(image)).and_then(|s| s.tags.iter().find(|s| s.tag == t.tag));
            let owners = t
                .owner_references
                .iter()
                .filter(|r| r.kind.as_deref() == Some("ImagePullJob"))
                .map(|r| format!("{}/{}", r.namespace.as_deref().unwrap_or(""), r.name.as_deref().unwrap_or("")))
                .collect();
            // Secrets and sandbox config are the image's: a change there concerns every tag.
            let h = hash_of(&(t, st, &spec.pull_secrets, &spec.sandbox_config));
            tags.insert((image.clone(), t.tag.clone()), (h, owners));
        }
    }
    Fingerprint { labels: hash_of(&ni.metadata.labels), tags }
}

/// The NodeImage trigger (see the module note).
fn node_image_trigger(
    queue: WorkQueue,
    jobs: Informer<ImagePullJob>,
    pods: Informer<Pod>,
) -> impl Fn(Change<'_, NodeImage>) + Send + Sync + 'static {
    let seen: Mutex<HashMap<String, Fingerprint>> = Mutex::default();
    move |c| {
        let name = c.meta().name.clone().unwrap_or_default();
        let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
        let old = seen.remove(&name);
        let new = match c {
            Change::Applied(ni) => Some(fingerprint(ni)),
            Change::Deleted(_) => None,
        };
        let mut keys = BTreeSet::new();
        let empty = Fingerprint::default();
        let (o, n) = (old.as_ref().unwrap_or(&empty), new.as_ref().unwrap_or(&empty));
        for (tag, (h, owners)) in &n.tags {
            if o.tags.get(tag).map(|(oh, _)| oh) != Some(h) {
                keys.extend(owners.iter().cloned());
            }
        }
        for (tag, (_, owners)) in &o.tags {
            if !n.tags.contains_key(tag) {
                keys.extend(owners.iter().cloned());
            }
        }
        if old.is_none() || new.is_none() || o.labels != n.labels {
            let labels = match c {
                Change::Applied(ni) => ni.metadata.labels.clone().unwrap_or_default(),
                Change::Deleted(m) => m.labels.clone().unwrap_or_default(),
            };
            let on_node = pods.index().get(&node_key(&name));
            for j in jobs.index().all() {
                if running(&j) && targeting(&j).is_ok_and(|t| concerns_node(&t, &name, &labels, &on_node)) {
                    keys.insert(meta_key(&j.metadata));
                }
            }
        }
        if let Some(n) = new {
            seen.insert(name, n);
        }
        keys.into_iter().for_each(|k| queue.add(k));
    }
}

/// The pod trigger: a pod whose node or labels changed queues the running `podSelector` jobs of
/// its namespace it matches.
fn pod_trigger(queue: WorkQueue, jobs: Informer<ImagePullJob>) -> impl Fn(Change<'_, Pod>) + Send + Sync + 'static {
    let seen: Mutex<HashMap<String, u64>> = Mutex::default();
    move |c| {
        let key = meta_key(c.meta());
        let ns = c.meta().namespace.clone().unwrap_or_default();
        let (labels, node) = match c {
            Change::Applied(p) => (
                p.metadata.labels.clone().unwrap_or_default(),
                p.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default(),
            ),
            Change::Deleted(m) => (m.labels.clone().unwrap_or_default(), String::new()),
        };
        let fp = hash_of(&(&labels, &node));
        {
            let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
            let old = match c {
                Change::Applied(_) => seen.insert(key, fp),
                Change::Deleted(_) => seen.remove(&key),
            };
            if old == Some(fp) || (old.is_none() && node.is_empty()) {
                return;
            }
        }
        for j in jobs.index().get(&namespace_key(&ns)) {
            if !running(&j) {
                continue;
            }
            if let Ok(Targeting::Pods { selector, .. }) = targeting(&j)
                && selector.matches(&labels)
            {
                queue.add(meta_key(&j.metadata));
            }
        }
    }
}

/// Versions a job's writes returned (NodeImage name, `""` for the job; resourceVersion), and
/// since when they are awaited.
type Written = (Vec<(String, String)>, Instant);

struct Context {
    settings: Settings,
    client: Client,
    informers: Informers,
    images: ImageInformers,
    metrics: Metrics,
    /// The per-NodeImage coalescing writer.
    writer: Writer,
    /// The runner's queue (a job whose NodeImage writes are done is queued again).
    queue: WorkQueue,
    /// Per job: NodeImage writes handed to the writer and not answered yet. A job is not
    /// planned again before they are (its next round must count the pulls they start).
    in_flight: Mutex<HashMap<String, usize>>,
    /// Per job: the versions its writes returned (NodeImage name or `""` for the job itself)
    /// and since when they are awaited.
    written: Mutex<HashMap<String, Written>>,
}

/// Registers the ImagePullJob controller and starts its runner. Start the informers after this.
pub fn start(
    informers: &Informers,
    images: &ImageInformers,
    client: &Client,
    settings: &Settings,
    metrics: &Metrics,
    token: &CancellationToken,
) -> Vec<JoinHandle<()>> {
    let runner: Arc<Runner> = super::runner_for(CONTROLLER, settings, metrics);
    let queue = runner.queue().clone();
    images.jobs.on_change(move |c| queue.add(meta_key(c.meta())));
    images.node_images.on_change(node_image_trigger(
        runner.queue().clone(),
        images.jobs.clone(),
        informers.pods.clone(),
    ));
    informers.pods.on_change(pod_trigger(runner.queue().clone(), images.jobs.clone()));
    let ctx = Arc::new(Context {
        settings: settings.clone(),
        client: client.clone(),
        informers: informers.clone(),
        images: images.clone(),
        metrics: metrics.clone(),
        writer: Writer::new(Api::all(client.clone()), &images.node_images, metrics, CONTROLLER, FIELD_MANAGER),
        queue: runner.queue().clone(),
        in_flight: Mutex::default(),
        written: Mutex::default(),
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

fn pinned(rv: &str, mut ops: Vec<PatchOperation>) -> json_patch::Patch {
    ops.insert(
        0,
        PatchOperation::Replace(ReplaceOperation {
            path: ptr(&["metadata", "resourceVersion"]),
            value: Value::String(rv.into()),
        }),
    );
    json_patch::Patch(ops)
}

impl Context {
    fn count(&self, write: &str) {
        let labels = ControllerWriteLabels { controller: CONTROLLER.into(), write: write.into() };
        self.metrics.controller_writes.get_or_create(&labels).inc();
    }

    /// Whether the cache shows every version this job's last writes returned.
    fn caught_up(&self, key: &str, job: &ImagePullJob) -> bool {
        let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
        let Some((pending, since)) = written.get_mut(key) else { return true };
        // Keep what the cache has not shown yet.
        pending.retain(|(name, rv)| {
            let cached = if name.is_empty() {
                job.metadata.resource_version.clone()
            } else {
                self.images
                    .node_images
                    .index()
                    .get_object(&format!("/{name}"))
                    .and_then(|ni| ni.metadata.resource_version.clone())
            };
            // A NodeImage gone from the cache awaits nothing more.
            cached.is_some_and(|c| !resource_version_newer(rv, &c))
        });
        if pending.is_empty() {
            written.remove(key);
            return true;
        }
        if since.elapsed() > self.settings.expectation_timeout {
            tracing::warn!(
                job = key,
                "the cache has not shown this job's writes for longer than the expectation timeout"
            );
            written.remove(key);
            return true;
        }
        false
    }

    fn expect(&self, key: &str, name: &str, rv: Option<String>) {
        if let Some(rv) = rv {
            let mut written = self.written.lock().unwrap_or_else(|e| e.into_inner());
            written
                .entry(key.to_string())
                .or_insert_with(|| (Vec::new(), Instant::now()))
                .0
                .push((name.to_string(), rv));
        }
    }

    /// `syncJobPullSecrets`: the references the NodeImages get.
    async fn sync_secrets(&self, job: &ImagePullJob) -> Result<Vec<ReferenceObject>, ReconcileError> {
        // A running job syncs its secrets; a finished or deleted one releases its copies once,
        // while it still holds the protection finalizer (kruise's `finalize`).
        let finalizing = job.metadata.finalizers.iter().flatten().any(|f| f == PROTECTION_FINALIZER);
        let needed = if secrets::running(job) { !job.spec.fields.pull_secrets.is_empty() } else { finalizing };
        if !needed {
            return Ok(Vec::new());
        }
        let ns = job.metadata.namespace.clone().unwrap_or_default();
        if ns == DAEMON_CONFIG_NAMESPACE {
            return Ok(job
                .spec
                .fields
                .pull_secrets
                .iter()
                .map(|n| ReferenceObject { namespace: ns.clone(), name: n.clone(), mode: String::new() })
                .collect());
        }
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let config = namespaces
            .get_opt(DAEMON_CONFIG_NAMESPACE)
            .await
            .map_err(ReconcileError::api_err(format!("get namespace {DAEMON_CONFIG_NAMESPACE}")))?;
        let Some(config) = config else {
            if !secrets::running(job) {
                // No namespace, no copies to release.
                return Ok(Vec::new());
            }
            return Err(ReconcileError::Api {
                what: format!("namespace({DAEMON_CONFIG_NAMESPACE})"),
                code: Some(404),
                message: "not found: pull secrets cannot be synced for kruise-daemon".into(),
            });
        };
        if config.metadata.deletion_timestamp.is_some() {
            return Err(ReconcileError::Api {
                what: format!("namespace({DAEMON_CONFIG_NAMESPACE})"),
                code: None,
                message: "is being deleted".into(),
            });
        }
        let copies: Api<Secret> = Api::namespaced(self.client.clone(), DAEMON_CONFIG_NAMESPACE);
        let listed = copies
            .list(&ListParams::default())
            .await
            .map_err(ReconcileError::api_err(format!("list secrets in {DAEMON_CONFIG_NAMESPACE}")))?;
        let (desired, released) = secrets::classify(job, &listed.items);
        for s in &released {
            self.send_secret(&copies, secrets::release(job, s)).await?;
        }
        let sources: Api<Secret> = Api::namespaced(self.client.clone(), &ns);
        let mut refs = Vec::new();
        for ((_, name), copy) in desired {
            let Some(source) =
                sources.get_opt(&name).await.map_err(ReconcileError::api_err(format!("get secret {ns}/{name}")))?
            else {
                tracing::warn!(job = %meta_key(&job.metadata), "pullSecret {name} not found");
                continue;
            };
            let seed =
                format!("{}{name}{}", job.metadata.uid.as_deref().unwrap_or(""), Timestamp::now().as_nanosecond());
            let suffix = format!("{:06x}", crate::core::history::fnv1a_32(seed.as_bytes()) & 0xff_ffff);
            let (r, write) = secrets::claim(job, &source, copy.as_ref(), &suffix);
            if let Some(w) = write {
                self.send_secret(&copies, w).await?;
            }
            refs.push(r);
        }
        Ok(refs)
    }

    async fn send_secret(&self, api: &Api<Secret>, w: SecretWrite) -> Result<(), ReconcileError> {
        let pp = PostParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
        match w {
            SecretWrite::Create(s) => {
                self.count("createSecret");
                let name = s.metadata.name.clone().unwrap_or_default();
                api.create(&pp, &s)
                    .await
                    .map_err(ReconcileError::api_err(format!("create secret {DAEMON_CONFIG_NAMESPACE}/{name}")))?;
            }
            SecretWrite::Update(s) => {
                self.count("updateSecret");
                let name = s.metadata.name.clone().unwrap_or_default();
                match api.replace(&name, &pp, &s).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(e)) if e.code == 404 => {}
                    Err(e) => {
                        return Err(ReconcileError::api(format!("update secret {DAEMON_CONFIG_NAMESPACE}/{name}"), &e));
                    }
                }
            }
            SecretWrite::Delete { name, uid, resource_version } => {
                self.count("deleteSecret");
                let dp =
                    DeleteParams { preconditions: Some(Preconditions { uid, resource_version }), ..Default::default() };
                match api.delete(&name, &dp).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(e)) if e.code == 404 => {}
                    Err(e) => {
                        return Err(ReconcileError::api(format!("delete secret {DAEMON_CONFIG_NAMESPACE}/{name}"), &e));
                    }
                }
            }
        }
        Ok(())
    }

    async fn set_finalizer(
        &self,
        api: &Api<ImagePullJob>,
        job: &ImagePullJob,
        present: bool,
    ) -> Result<Option<String>, ReconcileError> {
        let mut list: Vec<String> = job.metadata.finalizers.clone().unwrap_or_default();
        list.retain(|f| f != PROTECTION_FINALIZER);
        if present {
            list.push(PROTECTION_FINALIZER.into());
        }
        let rv = job.metadata.resource_version.clone().unwrap_or_default();
        let patch = pinned(
            &rv,
            vec![PatchOperation::Add(AddOperation {
                path: ptr(&["metadata", "finalizers"]),
                value: serde_json::json!(list),
            })],
        );
        let name = job.metadata.name.clone().unwrap_or_default();
        self.count(if present { "addFinalizer" } else { "removeFinalizer" });
        let pp = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
        let done = api
            .patch(&name, &pp, &Patch::Json::<()>(patch))
            .await
            .map_err(ReconcileError::api_err(format!("patch imagepulljob {}", meta_key(&job.metadata))))?;
        Ok(done.metadata.resource_version)
    }
}

async fn reconcile(ctx_arc: &Arc<Context>, key: &str) -> Result<Option<Duration>, ReconcileError> {
    let ctx: &Context = ctx_arc;
    let Some(job) = ctx.images.jobs.index().get_object(key) else {
        ctx.written.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
        return Ok(None);
    };
    if !ctx.images.synced() || !ctx.informers.pods.index().is_synced() {
        return Ok(Some(RECHECK));
    }
    if ctx.in_flight.lock().unwrap_or_else(|e| e.into_inner()).get(key).is_some_and(|n| *n > 0) {
        // Its writes' answers queue the job; this is only the fallback.
        return Ok(Some(IN_FLIGHT_FALLBACK));
    }
    if !ctx.caught_up(key, &job) {
        return Ok(Some(RECHECK));
    }
    let ns = job.metadata.namespace.clone().unwrap_or_default();
    let api: Api<ImagePullJob> = Api::namespaced(ctx.client.clone(), &ns);
    let secrets = ctx.sync_secrets(&job).await?;
    let mut node_images = ctx.images.node_images.index().all();
    node_images.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let pods = if job.spec.fields.pod_selector.is_some() {
        ctx.informers.pods.index().get(&namespace_key(&ns))
    } else {
        Vec::new()
    };
    let now = Timestamp::now();
    let p =
        plan(&Input { job: &job, node_images: &node_images, pods: &pods, secrets: &secrets, now }).map_err(|e| {
            ReconcileError::Api { what: format!("plan imagepulljob {key}"), code: None, message: e.to_string() }
        })?;
    let mut job_rv = job.metadata.resource_version.clone();
    if p.finalize {
        job_rv = ctx.set_finalizer(&api, &job, false).await?;
    }
    if p.delete {
        tracing::info!(job = key, "deleting ImagePullJob for ttlSecondsAfterFinished");
        ctx.count("delete");
        let dp = DeleteParams {
            preconditions: Some(Preconditions { uid: job.metadata.uid.clone(), resource_version: None }),
            ..Default::default()
        };
        match api.delete(job.metadata.name.as_deref().unwrap_or(""), &dp).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(ReconcileError::api(format!("delete imagepulljob {key}"), &e)),
        }
        return Ok(None);
    }
    if p.add_finalizer {
        job_rv = ctx.set_finalizer(&api, &job, true).await?;
    }
    let pp = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    // The NodeImages this round picked go to their writers, which merge every job's wishes for a
    // NodeImage into one write (see `nodeimage_writer`). The round does not wait for them (a
    // worker waiting would hold back every other job's wishes); until they are answered the job
    // counts as not caught up, so its next round counts the pulls they start.
    if !p.node_images.is_empty() {
        let waits: Vec<_> = p
            .node_images
            .iter()
            .map(|w| {
                let intent = Intent { job: Arc::clone(&job), secrets: secrets.clone() };
                let rx = ctx.writer.submit(&w.name, intent);
                let name = w.name.clone();
                async move { (name, rx.await) }
            })
            .collect();
        *ctx.in_flight.lock().unwrap_or_else(|e| e.into_inner()).entry(key.to_string()).or_default() += waits.len();
        let done = Arc::clone(ctx_arc);
        let key = key.to_string();
        tokio::spawn(async move {
            let results = futures::future::join_all(waits).await;
            let (mut conflicts, mut failures) = (0, 0);
            let n = results.len();
            for (name, result) in results {
                match result {
                    Ok(Ok(WriteOutcome::At(rv) | WriteOutcome::Unchanged(rv))) => done.expect(&key, &name, Some(rv)),
                    // The NodeImage kept changing under its writer: contention, not failure. It
                    // is decided again on its new version.
                    Ok(Err(e)) if e.code == Some(409) => conflicts += 1,
                    Ok(Err(e)) => {
                        failures += 1;
                        tracing::warn!(job = %key, "{}", ReconcileError::from(e));
                    }
                    // The writer went away (shutdown).
                    Err(_) => conflicts += 1,
                }
            }
            {
                let mut in_flight = done.in_flight.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(c) = in_flight.get_mut(&key) {
                    *c = c.saturating_sub(n);
                    if *c == 0 {
                        in_flight.remove(&key);
                    }
                }
            }
            if failures > 0 {
                done.queue.add_after(key, FAILED_RECHECK);
            } else if conflicts > 0 {
                tracing::debug!(job = %key, conflicts, "NodeImages changed under this round's writes; looking again");
                done.queue.add_after(key, CONFLICT_RECHECK);
            } else {
                done.queue.add(key);
            }
        });
    }
    if let Some(status) = &p.status {
        ctx.count("patchStatus");
        let patch = pinned(
            job_rv.as_deref().unwrap_or(""),
            vec![PatchOperation::Add(AddOperation {
                path: ptr(&["status"]),
                value: serde_json::to_value(status).unwrap_or(Value::Null),
            })],
        );
        let done = api
            .patch_status(job.metadata.name.as_deref().unwrap_or(""), &pp, &Patch::Json::<()>(patch))
            .await
            .map_err(ReconcileError::api_err(format!("patch status of imagepulljob {key}")))?;
        job_rv = done.metadata.resource_version;
    }
    if job_rv != job.metadata.resource_version {
        ctx.expect(key, "", job_rv);
    }
    let mut requeue = p.requeue.and_then(|d| Duration::try_from(d).ok());
    if !job.spec.fields.pull_secrets.is_empty() && requeue.is_none() && p.status.is_none() {
        requeue = Some(ctx.settings.resync);
    }
    Ok(requeue.map(|d| d.min(ctx.settings.resync)))
}

/// Runs the NodeImage, ImagePullJob and ImageListPullJob controllers alone, on informers of their
/// own, until `shutdown` completes (benchmarks; `kruise serve` runs them through
/// [`super::Leader`]).
pub async fn run_alone(
    client: Client,
    settings: Settings,
    metrics: Metrics,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let token = CancellationToken::new();
    let informers = Informers::for_gates(&settings.gates);
    let images = ImageInformers::default();
    let image_token = token.child_token();
    let mut tasks = super::nodeimage::start(&informers, &images, &client, &settings, &metrics, &image_token);
    tasks.extend(start(&informers, &images, &client, &settings, &metrics, &image_token));
    tasks.extend(super::imagelistpulljob::start(&images, &client, &settings, &metrics, &image_token));
    tasks.push(images.start_when_served(&client, settings.namespace.as_deref(), &metrics, &image_token));
    tasks.extend(informers.start(&client, settings.namespace.as_deref(), &metrics, &token));
    shutdown.await;
    token.cancel();
    futures::future::join_all(tasks).await;
}
