//! The daemon's loop over its own NodeImage (kruise `imagepuller.Controller`): a watch of the one
//! object named after the node (field selector `metadata.name=<node>`, nothing else cached); each
//! change of its spec or status runs [`Pools::sync`] and starts or stops tag workers; worker
//! reports update the pools; the status is written with the status subresource (v1beta1, the
//! storage version; a PUT pinned to the object's resourceVersion as kruise's `UpdateStatus`)
//! when it differs from the object's, at most once per `--status-write-interval`. A conflict
//! (the manager wrote too) reads the object again and decides anew.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Api, PostParams};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::watcher::{self, Event};
use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::admin::{Health, Metrics};
use super::credential_provider::CredentialPlugins;
use super::runtime::ImageRuntime;
use super::secrets::SecretCache;
use super::worker::{self, Job, Report, Shared};
use crate::apis::nodeimage::v1beta1::NodeImage;
use crate::core::imagepuller::pools::{Pools, WorkerChange};
use crate::core::imagepuller::write::{WriteDecision, decide};

/// How the loop runs.
#[derive(Clone, Debug)]
pub struct Settings {
    /// This node (the NodeImage's name).
    pub node: String,
    /// Pulls at once across all images (`None`: no limit).
    pub max_concurrent_pulls: Option<usize>,
    /// The fewest time between two status writes.
    pub status_write_interval: Duration,
    /// Record Events (kruise's PullImageSucceed / PullImageFailed).
    pub events: bool,
    /// The kubelet's credential-provider plugins, asked after the pull secrets.
    pub credential_plugins: Option<Arc<CredentialPlugins>>,
}

struct State<R> {
    settings: Settings,
    api: Api<NodeImage>,
    shared: Arc<Shared<R>>,
    stop: CancellationToken,
    observed: Option<NodeImage>,
    pools: Pools,
    workers: BTreeMap<(String, String), CancellationToken>,
    last_write: Option<Instant>,
    write_at: Option<Instant>,
}

/// Runs until `stop` fires; every worker is stopped on the way out.
pub async fn run<R: ImageRuntime>(
    client: kube::Client,
    runtime: Arc<R>,
    settings: Settings,
    health: Arc<Health>,
    metrics: Metrics,
    stop: CancellationToken,
) {
    let api: Api<NodeImage> = Api::all(client.clone());
    let config = watcher::Config::default().fields(&format!("metadata.name={}", settings.node));
    let mut events = crate::cluster::watch_backoff::with_backoff(watcher(api.clone(), config)).boxed();
    let (tx, mut rx) = mpsc::unbounded_channel::<Report>();
    let recorder = settings.events.then(|| {
        let reporter =
            Reporter { controller: "kruise-daemon-imagepuller".into(), instance: Some(settings.node.clone()) };
        Recorder::new(client.clone(), reporter)
    });
    let shared = Arc::new(Shared {
        runtime,
        secrets: SecretCache::new(client),
        credential_plugins: settings.credential_plugins.clone(),
        limit: settings.max_concurrent_pulls.map(|n| Arc::new(Semaphore::new(n.max(1)))),
        reports: tx,
        metrics,
        recorder,
    });
    let mut state = State {
        settings,
        api,
        shared,
        stop: stop.clone(),
        observed: None,
        pools: Pools::default(),
        workers: BTreeMap::new(),
        last_write: None,
        write_at: None,
    };
    // Whether the current (re)list has shown the object.
    let mut listed = false;
    loop {
        let write_at = state.write_at;
        let due = async move {
            match write_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => futures::future::pending().await,
            }
        };
        tokio::select! {
            _ = stop.cancelled() => break,
            ev = events.next() => match ev {
                None => break,
                Some(Ok(Event::Init)) => listed = false,
                Some(Ok(Event::InitApply(ni))) => {
                    listed = true;
                    state.observe(Some(ni));
                }
                Some(Ok(Event::InitDone)) => {
                    if !listed {
                        state.observe(None);
                    }
                    health.set_synced(true);
                }
                Some(Ok(Event::Apply(ni))) => state.observe(Some(ni)),
                Some(Ok(Event::Delete(_))) => state.observe(None),
                Some(Err(e)) => tracing::warn!(error = %e, "NodeImage watch failed; retrying"),
            },
            Some(r) = rx.recv() => {
                if state.pools.update(&r.image, r.status) {
                    state.schedule_write();
                }
            }
            _ = due => state.write().await,
        }
    }
    for (_, token) in std::mem::take(&mut state.workers) {
        token.cancel();
    }
}

impl<R: ImageRuntime> State<R> {
    /// The object as the API server has it now (`None`: gone).
    fn observe(&mut self, ni: Option<NodeImage>) {
        let Some(ni) = ni else {
            if self.observed.take().is_some() || !self.workers.is_empty() {
                tracing::info!(node = %self.settings.node, "NodeImage gone: stopping every pull");
            }
            for (_, token) in std::mem::take(&mut self.workers) {
                token.cancel();
            }
            self.pools = Pools::default();
            self.write_at = None;
            return;
        };
        // kruise leaves an object being deleted alone.
        if ni.metadata.deletion_timestamp.is_some() {
            self.observed = Some(ni);
            return;
        }
        let changed = self.observed.as_ref().is_none_or(|o| o.spec != ni.spec || o.status != ni.status);
        self.observed = Some(ni);
        if changed {
            self.sync();
        }
    }

    fn sync(&mut self) {
        let Some(ni) = &self.observed else { return };
        let changes = self.pools.sync(&ni.spec, ni.status.as_ref());
        let reference = ObjectReference {
            api_version: Some("apps.kruise.io/v1beta1".into()),
            kind: Some("NodeImage".into()),
            name: ni.metadata.name.clone(),
            uid: ni.metadata.uid.clone(),
            ..Default::default()
        };
        for change in changes {
            match change {
                WorkerChange::Stop { image, tag, version, reason } => {
                    tracing::debug!(image = %image, tag = %tag, version, ?reason, "stopping pull worker");
                    if let Some(token) = self.workers.remove(&(image, tag)) {
                        token.cancel();
                    }
                }
                WorkerChange::Start { image, tag } => {
                    let image_spec = ni.spec.images.get(&image);
                    let job = Job {
                        image: image.clone(),
                        pull_secrets: image_spec.map(|s| s.pull_secrets.clone()).unwrap_or_default(),
                        sandbox: image_spec.and_then(|s| s.sandbox_config.clone()),
                        node_image: reference.clone(),
                        tag: tag.clone(),
                    };
                    let token = self.stop.child_token();
                    self.workers.insert((image, tag.tag), token.clone());
                    tokio::spawn(worker::run(Arc::clone(&self.shared), job, token));
                }
            }
        }
        self.schedule_write();
    }

    fn schedule_write(&mut self) {
        let Some(ni) = &self.observed else { return };
        let new = self.pools.status(&ni.spec, ni.status.as_ref());
        let now = Instant::now();
        let since = self.last_write.map(|t| now.duration_since(t));
        match decide(&new, ni.status.as_ref(), since, self.settings.status_write_interval) {
            WriteDecision::Skip => self.write_at = None,
            WriteDecision::Now => self.write_at = Some(now),
            WriteDecision::After(d) => {
                let at = now + d;
                self.write_at = Some(self.write_at.map_or(at, |w| w.min(at)));
            }
        }
    }

    async fn write(&mut self) {
        self.write_at = None;
        let Some(ni) = &self.observed else { return };
        let new = self.pools.status(&ni.spec, ni.status.as_ref());
        let since = self.last_write.map(|t| Instant::now().duration_since(t));
        match decide(&new, ni.status.as_ref(), since, self.settings.status_write_interval) {
            WriteDecision::Skip => return,
            WriteDecision::After(d) => {
                self.write_at = Some(Instant::now() + d);
                return;
            }
            WriteDecision::Now => {}
        }
        let name = self.settings.node.clone();
        let mut object = ni.clone();
        object.status = Some(new);
        self.last_write = Some(Instant::now());
        match self.api.replace_status(&name, &PostParams::default(), &object).await {
            Ok(updated) => {
                self.shared.metrics.status_write("ok");
                self.observed = Some(updated);
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                self.shared.metrics.status_write("conflict");
                tracing::debug!("NodeImage status conflict; reading it again");
                match self.api.get(&name).await {
                    Ok(fresh) => self.observe(Some(fresh)),
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot read NodeImage");
                        self.write_at = Some(Instant::now() + self.settings.status_write_interval);
                    }
                }
                self.schedule_write();
            }
            Err(e) => {
                self.shared.metrics.status_write("error");
                tracing::warn!(error = %e, "cannot write NodeImage status; retrying");
                let retry = self.settings.status_write_interval.max(Duration::from_secs(1));
                self.write_at = Some(Instant::now() + retry);
            }
        }
    }
}

/// The watcher, as a function so the field selector stays next to its use.
fn watcher(
    api: Api<NodeImage>,
    config: watcher::Config,
) -> impl futures::Stream<Item = watcher::Result<Event<NodeImage>>> {
    kube::runtime::watcher(api, config)
}
