//! The embedded reconcilers (issue 11, issue 26; spec §5): observe → decide → act around a pure
//! planner in `core/`, on one platform every controller shares:
//! - [`informers`]: one watch per kind (pods, PVCs, ControllerRevisions, nodes) on the leader,
//!   each object decoded on its own, feeding [`index`]es and fanning changes out to handlers;
//! - [`runner`]: one reconcile loop ([`queue`], workers, backoff, pacing, metrics, spans);
//! - [`act`]: the expectations gate, the plan's writes ([`apply`]) and Events.
//!
//! One thin file per controller wires them: [`cloneset`] (spec §5), [`statefulset`] (the Advanced
//! StatefulSet, spec §6), [`sidecarset`] (spec §4.12), [`podreadiness`] (kruise's
//! `podreadiness` controller), [`failopen`] (pods admitted without their sidecars),
//! [`nodeimage`], [`imagepulljob`] and [`imagelistpulljob`] (image pre-download, issue 29);
//! [`broadcastjob`] (issue 33); [`sidecarterminator`] (issue 30 item 3);
//! [`predownload`] is the image pre-download the CloneSet and StatefulSet rounds share (spec §7).
//! [`Leader`] starts them all on one set of informers while this replica leads.

pub mod act;
pub mod advancedcronjob;
pub mod apply;
pub mod broadcastjob;
pub mod budget_takes;
pub mod cloneset;
pub mod containerrecreaterequest;
pub mod daemonset;
pub mod discovery;
pub mod failopen;
pub mod imagelistpulljob;
pub mod imagepulljob;
pub mod index;
pub mod informers;
pub mod launchpriority;
pub mod nodeimage;
pub mod nodeimage_writer;
pub mod podprobe;
pub mod podreadiness;
pub mod podunavailablebudget;
pub mod predownload;
pub mod queue;
pub mod runner;
pub mod sidecarset;
pub mod sidecarterminator;
pub mod statefulset;
pub mod uniteddeployment;
pub mod workloadspread;

use std::sync::Arc;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::cluster::ClusterView;
use crate::metrics::Metrics;

use std::time::Duration;

use crate::core::expectations::EXPECTATION_TIMEOUT;
use crate::core::features::FeatureGates;

/// What a controller is started with (from the process settings).
#[derive(Clone, Debug)]
pub struct Settings {
    /// Feature gates, as for `serve`.
    pub gates: FeatureGates,
    /// Watch and reconcile only this namespace (all namespaces when `None`).
    pub namespace: Option<String>,
    /// Objects reconciled at the same time (kruise's `--cloneset-workers`; the default of every
    /// controller without an entry in `workers`).
    pub concurrency: u16,
    /// Objects reconciled at the same time by the controller named (kruise's `--<kind>-workers`).
    pub workers: std::collections::BTreeMap<&'static str, u16>,
    /// Writes one reconcile sends side by side (to different pods; one pod's writes stay in
    /// order). 1 by default: on the 2-core test machine, 16 made a 1,000-pod in-place rollout
    /// 2.5× slower and 4× costlier in controller CPU (more, shorter rounds; examples/cloneset_rollout.rs).
    pub writes_in_flight: usize,
    /// How long a created or deleted object may stay unseen by the cache before a warning
    /// (kruise's `--expectation-timeout`); the controller keeps waiting after it, as kruise does.
    pub expectation_timeout: Duration,
    /// The longest pause between two plans of one workload. Plans of one workload are spaced by
    /// twice the time the last one took, so planning takes at most a third of a core per
    /// workload (a rollout of many pods sends a stream of events; they fold into the next plan),
    /// and by no more than this.
    pub max_plan_interval: Duration,
    /// The safety-net requeue of a workload nothing asked to look at again.
    pub resync: Duration,
    /// The Events' reporting instance (the pod name in a cluster).
    pub instance: Option<String>,
    /// The manager namespace (`--manager-namespace`, kruise's `POD_NAMESPACE`): where the
    /// revisions of cluster-scoped parents (SidecarSets) live.
    pub manager_namespace: String,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            gates: FeatureGates::default(),
            namespace: None,
            concurrency: 3,
            workers: std::collections::BTreeMap::new(),
            writes_in_flight: 1,
            expectation_timeout: Duration::from_secs(EXPECTATION_TIMEOUT.as_secs().unsigned_abs()),
            resync: Duration::from_secs(300),
            max_plan_interval: Duration::from_secs(1),
            instance: None,
            manager_namespace: crate::config::DEFAULT_NAMESPACE.to_string(),
        }
    }
}

/// Why a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// An API write failed; the next round decides again on a fresh view.
    #[error(transparent)]
    Write(#[from] apply::WriteError),
    /// Another API call failed.
    #[error("{what}: {message}")]
    Api { what: String, code: Option<u16>, message: String },
}

impl ReconcileError {
    /// A failed API call `what`, with the server's status code when it answered.
    pub fn api(what: String, e: &kube::Error) -> Self {
        let code = match e {
            kube::Error::Api(s) => Some(s.code),
            _ => None,
        };
        ReconcileError::Api { what, code, message: e.to_string() }
    }

    /// [`ReconcileError::api`] for `map_err`.
    pub fn api_err(what: String) -> impl FnOnce(kube::Error) -> Self {
        move |e| Self::api(what, &e)
    }

    /// The API status code, when the server answered (the runner's backoff class).
    pub fn code(&self) -> Option<u16> {
        match self {
            ReconcileError::Write(w) => w.code(),
            ReconcileError::Api { code, .. } => *code,
        }
    }
}

/// The runner of the controller `name`: its work queue, its workers (`settings.workers[name]`,
/// else `settings.concurrency`), and runs
/// of one key spaced by twice the last one's time (at most `settings.max_plan_interval`).
pub fn runner_for(name: &'static str, settings: &Settings, metrics: &Metrics) -> Arc<runner::Runner> {
    let queue = queue::WorkQueue::new(name, metrics.clone());
    let pacing = runner::Pacing { factor: 2, max_interval: settings.max_plan_interval };
    let workers = settings.workers.get(name).copied().unwrap_or(settings.concurrency);
    runner::Runner::new(name, queue, metrics.clone(), usize::from(workers), pacing)
}

/// The act half of the controller `name` with the process settings.
pub fn actor_for(name: &'static str, client: &kube::Client, settings: &Settings, metrics: &Metrics) -> act::Actor {
    let act = act::ActSettings {
        writes_in_flight: settings.writes_in_flight,
        expectation_timeout: settings.expectation_timeout,
        force_expectation_timeout: settings
            .gates
            .enabled(crate::core::features::Gate::ForceDeleteTimeoutExpectationFeatureGate),
    };
    act::Actor::new(name, client.clone(), act, metrics.clone(), settings.instance.clone())
}

/// A workload controller's own watch (its workloads, by namespace; one that stops decoding is
/// dropped), every change queued on `runner`.
pub fn workload_informer<W>(kind: &'static str, runner: &runner::Runner) -> informers::Informer<W>
where
    W: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync + 'static,
{
    let informer = informers::Informer::<W>::new(kind, index::namespace_of::<W>, informers::Invalid::Drop);
    let queue = runner.queue().clone();
    informer.on_change(move |c| queue.add(index::meta_key(c.meta())));
    informer
}

/// A change of an object owned by a workload of `kind` (any version of `apps.kruise.io`) queues
/// that workload.
pub fn owner_trigger<K: kube::Resource>(
    kind: &'static str,
    queue: queue::WorkQueue,
) -> impl Fn(informers::Change<'_, K>) + Send + Sync + 'static {
    move |c| queue::owners(c.meta(), "apps.kruise.io", kind).into_iter().for_each(|k| queue.add(k))
}

/// Queues every `K` there is (in `namespace`, else everywhere) when a controller starts: a
/// controller triggered by the admission view (which announces only what changes after the
/// trigger is registered) would otherwise leave an object created before this term of leadership
/// to the resync. One metadata list, retried (2 s doubling to a minute, so a missing CRD is not
/// warned about every 2 s) until it answers or the token is cancelled.
pub fn queue_existing<K>(
    controller: &'static str,
    client: &kube::Client,
    settings: &Settings,
    queue: &queue::WorkQueue,
    token: &tokio_util::sync::CancellationToken,
) -> impl std::future::Future<Output = ()> + Send + 'static
where
    K: kube::Resource<DynamicType = (), Scope = kube::core::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    let (client, namespace, queue, token) = (client.clone(), settings.namespace.clone(), queue.clone(), token.clone());
    async move {
        let api: kube::Api<K> = match &namespace {
            Some(ns) => kube::Api::namespaced(client, ns),
            None => kube::Api::all(client),
        };
        let mut wait = Duration::from_secs(2);
        loop {
            match api.list_metadata(&kube::api::ListParams::default()).await {
                Ok(list) => {
                    for item in &list.items {
                        queue.add(index::meta_key(&item.metadata));
                    }
                    return;
                }
                Err(e) => tracing::warn!(controller, kind = %K::kind(&()), "cannot list, retrying: {e}"),
            }
            tokio::select! {
                () = token.cancelled() => return,
                () = tokio::time::sleep(wait) => {}
            }
            wait = (wait * 2).min(Duration::from_secs(60));
        }
    }
}

/// When a workload is looked at again after a round: the planner's requeue, at most the resync.
pub fn next_round(requeue_after: Option<k8s_openapi::jiff::SignedDuration>, resync: Duration) -> Duration {
    requeue_after.and_then(|d| Duration::try_from(d).ok()).map_or(resync, |d| d.min(resync))
}

/// Everything that runs on the leader: the shared informers and every controller on them.
pub struct Leader {
    pub client: kube::Client,
    pub settings: Settings,
    pub metrics: Metrics,
    /// The admission view (SidecarSets, namespaces) the fail-open watch reads.
    pub view: Arc<dyn ClusterView>,
}

impl Leader {
    /// Registers every controller on one set of informers, then starts the watches; all stop when
    /// `token` is cancelled.
    pub fn start(&self, token: &CancellationToken) -> Vec<JoinHandle<()>> {
        let informers = informers::Informers::for_gates(&self.settings.gates);
        let ns = self.settings.namespace.as_deref();
        let mut tasks = Vec::new();
        tasks.extend(cloneset::start(
            &informers,
            &self.client,
            &self.settings,
            &self.metrics,
            Arc::clone(&self.view),
            token,
        ));
        tasks.extend(statefulset::start(
            &informers,
            &self.client,
            &self.settings,
            &self.metrics,
            Arc::clone(&self.view),
            token,
        ));
        tasks.extend(daemonset::start(&informers, &self.client, &self.settings, &self.metrics, token));
        tasks.extend(sidecarset::start(
            &informers,
            Arc::clone(&self.view),
            &self.client,
            &self.settings,
            &self.metrics,
            token,
        ));
        tasks.push(podreadiness::start(&informers, &self.client, &self.settings, &self.metrics, token));
        tasks.push(launchpriority::start(&informers, &self.client, &self.settings, &self.metrics, token));
        tasks.extend(podunavailablebudget::start(
            &informers,
            Arc::clone(&self.view),
            &self.client,
            &self.settings,
            &self.metrics,
            token,
        ));
        tasks.push(failopen::start(
            &informers,
            &self.client,
            Arc::clone(&self.view),
            &self.settings,
            &self.metrics,
            token,
        ));
        tasks.extend(broadcastjob::start(&informers, &self.client, &self.settings, &self.metrics, token));
        // Image pre-download (issue 29): the NodeImage controller with KruiseDaemon, the job
        // controllers with ImagePullJobGate too, on one watch per image kind.
        if self.settings.gates.enabled(crate::core::features::Gate::KruiseDaemon) {
            let images = imagepulljob::ImageInformers::default();
            // Cancelled when the image kinds are not served (kruise's `DiscoverGVK`).
            let token = &token.child_token();
            tasks.extend(nodeimage::start(&informers, &images, &self.client, &self.settings, &self.metrics, token));
            if self.settings.gates.enabled(crate::core::features::Gate::ImagePullJobGate) {
                tasks.extend(imagepulljob::start(
                    &informers,
                    &images,
                    &self.client,
                    &self.settings,
                    &self.metrics,
                    token,
                ));
                tasks.extend(imagelistpulljob::start(&images, &self.client, &self.settings, &self.metrics, token));
            }
            tasks.push(images.start_when_served(&self.client, ns, &self.metrics, token));
            tasks.extend(containerrecreaterequest::start(
                &informers,
                &self.client,
                &self.settings,
                &self.metrics,
                token,
            ));
        }
        if self.settings.gates.enabled(crate::core::features::Gate::SidecarTerminator) {
            tasks.push(sidecarterminator::start(&informers, &self.client, &self.settings, &self.metrics, token));
        }
        tasks.extend(advancedcronjob::start(&self.client, &self.settings, &self.metrics, token));
        // PodProbeMarker and NodePodProbe (issue 30 item 4), with their gate (it needs KruiseDaemon).
        if self.settings.gates.enabled(crate::core::features::Gate::PodProbeMarkerGate) {
            tasks.extend(podprobe::start(&informers, &self.client, &self.settings, &self.metrics, token));
        }
        tasks.extend(uniteddeployment::start(&informers, &self.client, &self.settings, &self.metrics, token));
        let view = Arc::clone(&self.view);
        tasks.extend(workloadspread::start(&informers, view, &self.client, &self.settings, &self.metrics, token));
        tasks.extend(informers.start(&self.client, ns, &self.metrics, token));
        tasks
    }
}

/// Runs the workload controllers (CloneSet and Advanced StatefulSet) alone, on informers of their
/// own, until `shutdown` completes (tests; `kruise serve` runs them through [`Leader`]).
pub async fn run_workloads(
    client: kube::Client,
    settings: Settings,
    metrics: Metrics,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let token = CancellationToken::new();
    let informers = informers::Informers::for_gates(&settings.gates);
    let view: Arc<dyn crate::cluster::ClusterView> = Arc::new(crate::cluster::EmptyView);
    let mut tasks = cloneset::start(&informers, &client, &settings, &metrics, Arc::clone(&view), &token);
    tasks.extend(statefulset::start(&informers, &client, &settings, &metrics, view, &token));
    tasks.extend(informers.start(&client, settings.namespace.as_deref(), &metrics, &token));
    shutdown.await;
    token.cancel();
    futures::future::join_all(tasks).await;
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::apis::podunavailablebudget::PodUnavailableBudget;
    use bytes::Bytes;
    use http_body_util::Full;
    use serde_json::json;
    use std::sync::Mutex;

    /// A fake API server: the first `failures` requests are answered 404 (a CRD not there yet),
    /// then a metadata list of two budgets; every request path is recorded.
    fn fake(failures: usize, paths: Arc<Mutex<Vec<String>>>) -> kube::Client {
        let svc = tower::service_fn(move |req: axum::http::Request<kube::client::Body>| {
            let paths = Arc::clone(&paths);
            async move {
                let n = {
                    let mut p = paths.lock().unwrap();
                    p.push(req.uri().path().to_string());
                    p.len()
                };
                let (code, body) = if n <= failures {
                    (
                        404,
                        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404,
                        "message": "the server could not find the requested resource"}),
                    )
                } else {
                    let item = |name: &str| {
                        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                        "metadata": {"name": name, "namespace": "team"}})
                    };
                    (
                        200,
                        json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1",
                        "metadata": {}, "items": [item("a"), item("b")]}),
                    )
                };
                let response = axum::http::Response::builder()
                    .status(code)
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(body.to_string())))
                    .unwrap();
                Ok::<_, std::convert::Infallible>(response)
            }
        });
        kube::Client::new(svc, "default")
    }

    /// A controller started after its objects were created queues each of them once the list
    /// answers; failed lists are retried 2 s, then 4 s later (doubling), and only in its namespace.
    #[tokio::test(start_paused = true)]
    async fn existing_objects_are_queued_once_the_list_answers() {
        let paths = Arc::new(Mutex::new(Vec::new()));
        let queue = queue::WorkQueue::new("test", Metrics::new());
        let token = tokio_util::sync::CancellationToken::new();
        let started = tokio::time::Instant::now();
        let settings = Settings { namespace: Some("team".into()), ..Settings::default() };
        queue_existing::<PodUnavailableBudget>("test", &fake(2, Arc::clone(&paths)), &settings, &queue, &token).await;
        assert_eq!(started.elapsed(), Duration::from_secs(2 + 4), "waits of 2 s then 4 s");
        let paths = paths.lock().unwrap().clone();
        assert_eq!(paths.len(), 3);
        assert!(paths.iter().all(|p| p == "/apis/policy.kruise.io/v1alpha1/namespaces/team/podunavailablebudgets"));
        assert_eq!(queue.depth(), 2);
        let mut keys = vec![queue.next().await.unwrap(), queue.next().await.unwrap()];
        keys.sort();
        assert_eq!(keys, ["team/a", "team/b"]);
    }

    /// A list that never answers stops with the controller.
    #[tokio::test(start_paused = true)]
    async fn the_retries_stop_with_the_controller() {
        let paths = Arc::new(Mutex::new(Vec::new()));
        let queue = queue::WorkQueue::new("test", Metrics::new());
        let token = tokio_util::sync::CancellationToken::new();
        let cancel = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(31)).await;
            cancel.cancel();
        });
        let client = fake(usize::MAX, Arc::clone(&paths));
        queue_existing::<PodUnavailableBudget>("test", &client, &Settings::default(), &queue, &token).await;
        // Lists at 0, 2, 6, 14 and 30 s, cancelled at 31 s while waiting for the next.
        assert_eq!(paths.lock().unwrap().len(), 5);
        assert_eq!(paths.lock().unwrap()[0], "/apis/policy.kruise.io/v1alpha1/podunavailablebudgets");
        assert_eq!(queue.depth(), 0);
    }
}
