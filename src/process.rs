//! The process root of `kruise serve` (issue 10 item 1): one shutdown signal (SIGTERM/SIGINT
//! cancel one [`CancellationToken`]) and every task started, supervised and stopped here — the
//! HTTPS and admin servers, the cluster view, certificate handling, leader election and the
//! tasks that run only while this replica leads. `/readyz` is the conjunction of what those tasks
//! report ([`Readiness`]). Every replica serves admission and never waits for leadership.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::cli::{CertMode, ServeArgs};
use crate::cluster::{self, ClusterView};
use crate::config::{Clock, Config};
use crate::core::features::Gate;
use crate::core::leader::Timing;
use crate::metrics::{Metrics, NameLabels};
use crate::server::{self, Readiness, tls::CertStore};
use crate::{leader, webhook};

/// Readiness condition: every watch of the cluster view has listed once.
pub const CACHES: &str = "caches";
/// Readiness condition: a serving certificate is loaded.
pub const CERTIFICATE: &str = crate::certs::follow::CERTIFICATE;

/// How long stopping tasks get after the server stopped.
const TASK_STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// Why `serve` stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The server could not start.
    #[error(transparent)]
    Serve(#[from] server::ServeError),
    /// The objects directory cannot be read.
    #[error(transparent)]
    Objects(#[from] cluster::files::LoadError),
    /// Signal handlers cannot be installed.
    #[error("cannot install signal handlers: {0}")]
    Signal(std::io::Error),
    /// No cluster configuration.
    #[error("cannot configure the Kubernetes client: {0}")]
    Client(String),
    /// Flags that contradict each other.
    #[error("{0}")]
    Flags(String),
}

/// The settings every task shares, from the command line.
pub fn config(args: &ServeArgs) -> Config {
    Config { namespace: args.manager_namespace.clone(), gates: args.feature_gates.clone(), clock: Clock::System }
}

/// Serves until SIGTERM or SIGINT, then shuts down gracefully.
pub async fn serve(args: ServeArgs) -> Result<(), RunError> {
    let stop = CancellationToken::new();
    let signals = signal_task(stop.clone()).map_err(RunError::Signal)?;
    let result = if args.standalone { standalone(args, stop).await } else { in_cluster(args, stop).await };
    signals.abort();
    result
}

fn server_options(args: &ServeArgs) -> server::ServeOptions {
    server::ServeOptions {
        http2: args.enable_http2,
        cert_reload_interval: args.cert_reload_interval,
        request_read_timeout: args.header_read_timeout,
        idle_timeout: args.idle_timeout,
        shutdown_delay: args.shutdown_delay,
        shutdown_timeout: args.shutdown_timeout,
        ..server::ServeOptions::new(args.addr, args.admin_addr, args.cert_dir.clone())
    }
}

/// `--standalone`: the certificate of `--cert-dir`, the objects of `--objects-dir`, no cluster.
async fn standalone(args: ServeArgs, stop: CancellationToken) -> Result<(), RunError> {
    let metrics = Metrics::new();
    let config = Arc::new(config(&args));
    let view = files_view(&args, &stop)?;
    let state = Arc::new(webhook::http::AppState::new(webhook::Context::new(config, view), metrics.clone()));
    tracing::info!(feature_gates = %args.feature_gates, "starting (standalone)");
    let handle = server::start(server_options(&args), webhook::http::router(state), metrics).await?;
    stop.cancelled().await;
    handle.shutdown();
    handle.wait().await;
    Ok(())
}

/// In a cluster: the live view, leader election, and the certificate of `--cert-dir`.
async fn in_cluster(args: ServeArgs, stop: CancellationToken) -> Result<(), RunError> {
    let metrics = Metrics::new();
    let config = Arc::new(config(&args));
    let cert_mode = CertMode::effective(args.cert_mode, config.gates.enabled(Gate::EnableExternalCerts))
        .map_err(RunError::Flags)?;
    if cert_mode == CertMode::Managed {
        crate::core::cert_margin::check(&renewal(&args)).map_err(RunError::Flags)?;
    }
    let client = client(&args).await?;
    let readiness = match cert_mode {
        CertMode::Files => Readiness::new(&[CACHES, CERTIFICATE]),
        CertMode::Managed | CertMode::External => {
            Readiness::new(&[CACHES, CERTIFICATE, crate::certs::follow::SELF_CHECK])
        }
    };
    let mut tasks: Vec<JoinHandle<()>> = Vec::new();

    let view = cluster::live::LiveView::new(client.clone(), &config.namespace, metrics.clone());
    tasks.extend(view.start(&stop));
    tasks.push(tokio::spawn(follow_sync(Arc::clone(&view), Arc::clone(&readiness), stop.clone())));

    let identity = args.leader_identity.clone().unwrap_or_else(leader::default_identity);
    let (certs, managed) = match cert_mode {
        CertMode::Files => {
            let certs = Arc::new(CertStore::load(&args.cert_dir).map_err(server::ServeError::from)?);
            readiness.set(CERTIFICATE, Ok(()));
            let reload = server::reload_loop(Arc::clone(&certs), metrics.clone(), args.cert_reload_interval);
            tasks.push(tokio::spawn(until_cancelled(stop.clone(), reload)));
            (certs, None)
        }
        CertMode::Managed | CertMode::External => {
            let certs = Arc::new(CertStore::empty());
            let settings = Arc::new(cert_settings(&args, &config, &identity, cert_mode));
            let follow = crate::certs::follow(
                client.clone(),
                Arc::clone(&settings),
                Arc::clone(&certs),
                Arc::clone(&readiness),
                stop.clone(),
            );
            tasks.push(tokio::spawn(follow));
            (certs, Some(settings))
        }
    };
    let leader_tasks = LeaderTasks {
        client: client.clone(),
        certs: managed,
        view: view.clone(),
        metrics: metrics.clone(),
        identity: identity.clone(),
        gates: config.gates.clone(),
        scope: Some(args.scope.clone()).filter(|ns| !ns.is_empty()),
        manager_namespace: config.namespace.clone(),
        cloneset_workers: args.cloneset_workers,
        statefulset_workers: args.statefulset_workers,
    };

    if args.leader_elect {
        let timing = election_timing(&args);
        let elector = leader::Elector::new(client.clone(), &config.namespace, leader::LEASE_NAME, &identity, timing);
        let (leading, leading_rx) = watch::channel(false);
        tasks.push(tokio::spawn(elector.run(stop.clone(), leading)));
        tasks.push(tokio::spawn(lead(leading_rx, metrics.clone(), leader_tasks)));
    } else {
        // The only replica: it leads for as long as it runs.
        let (leading, leading_rx) = watch::channel(true);
        tasks.push(tokio::spawn(lead(leading_rx, metrics.clone(), leader_tasks)));
        let stop = stop.clone();
        tasks.push(tokio::spawn(async move {
            stop.cancelled().await;
            let _ = leading.send(false);
        }));
    }

    let cluster: Arc<dyn ClusterView> = view.clone();
    let state = webhook::http::AppState::new(webhook::Context::new(Arc::clone(&config), cluster), metrics.clone())
        .with_pods(view.clone())
        .with_lists(view)
        .with_budgets(Arc::new(
            webhook::budget::Budgets::new(Arc::new(webhook::budget::ApiStore::new(client.clone())))
                .with_metrics(metrics.clone()),
        ))
        .with_spreads(Arc::new(webhook::spread::Spreads::new(Arc::new(webhook::spread::ApiStore::new(
            client.clone(),
        )))));
    tracing::info!(namespace = %config.namespace, feature_gates = %config.gates, "starting");
    let handle =
        server::start_with(server_options(&args), certs, readiness, webhook::http::router(Arc::new(state)), metrics)
            .await?;
    stop.cancelled().await;
    handle.shutdown();
    handle.wait().await;
    let _ = tokio::time::timeout(TASK_STOP_TIMEOUT, futures::future::join_all(tasks)).await;
    Ok(())
}

/// What runs only while this replica leads (the writers: certificates and their `caBundle`, the
/// fail-open watch, the CloneSet controller, pod readiness). Each start gets a token cancelled the
/// moment leadership is lost.
struct LeaderTasks {
    client: kube::Client,
    certs: Option<Arc<crate::certs::Settings>>,
    view: Arc<dyn ClusterView>,
    metrics: Metrics,
    identity: String,
    gates: crate::core::features::FeatureGates,
    /// `--namespace`: the controllers' namespace (all when `None`).
    scope: Option<String>,
    /// `--manager-namespace`: where SidecarSet revisions live.
    manager_namespace: String,
    /// `--cloneset-workers`.
    cloneset_workers: u16,
    /// `--statefulset-workers`.
    statefulset_workers: u16,
}

impl LeaderTasks {
    fn start(&self, token: &CancellationToken) -> Vec<JoinHandle<()>> {
        let mut tasks = Vec::new();
        if let Some(settings) = &self.certs {
            tasks.push(tokio::spawn(crate::certs::lead(self.client.clone(), Arc::clone(settings), token.clone())));
        }
        let leader = crate::controller::Leader {
            client: self.client.clone(),
            settings: crate::controller::Settings {
                gates: self.gates.clone(),
                instance: Some(self.identity.clone()),
                namespace: self.scope.clone(),
                manager_namespace: self.manager_namespace.clone(),
                concurrency: self.cloneset_workers,
                workers: [(crate::controller::statefulset::CONTROLLER, self.statefulset_workers)].into(),
                ..crate::controller::Settings::default()
            },
            metrics: self.metrics.clone(),
            view: Arc::clone(&self.view),
        };
        tasks.extend(leader.start(token));
        tasks
    }
}

/// Leader-election timing from the command line.
fn election_timing(args: &ServeArgs) -> Timing {
    Timing {
        lease_duration: args.leader_lease_duration,
        renew_deadline: args.leader_renew_deadline,
        retry_period: args.leader_retry_period,
    }
}

/// What decides whether managed certificates can be renewed around leader handovers.
fn renewal(args: &ServeArgs) -> crate::core::cert_margin::Renewal {
    crate::core::cert_margin::Renewal {
        ca_lifetime: args.ca_lifetime,
        leaf_lifetime: args.cert_lifetime,
        check_interval: args.cert_check_interval,
        election: args.leader_elect.then(|| election_timing(args)),
    }
}

/// Certificate management settings from the command line.
fn cert_settings(args: &ServeArgs, config: &Config, identity: &str, mode: CertMode) -> crate::certs::Settings {
    let mut settings = crate::certs::Settings::new(&config.namespace, identity, args.addr);
    settings.secret = args.webhook_secret.clone();
    settings.service = args.webhook_service.clone();
    settings.conversion_service = args.conversion_service.clone();
    settings.hosts = args.webhook_hosts.clone();
    settings.mode = match mode {
        CertMode::External => crate::certs::Mode::External,
        CertMode::Managed | CertMode::Files => crate::certs::Mode::SelfManaged,
    };
    settings.lifetimes = crate::core::certs::Lifetimes { ca: args.ca_lifetime, leaf: args.cert_lifetime };
    settings.poll = args.cert_check_interval;
    settings
}

/// Starts the leader's tasks when `leading` turns true and cancels them as soon as it turns false
/// (or the elector stops).
async fn lead(mut leading: watch::Receiver<bool>, metrics: Metrics, tasks: LeaderTasks) {
    let gauge = metrics.leader.get_or_create(&NameLabels { name: leader::LEASE_NAME.into() }).clone();
    let mut running: Option<(CancellationToken, Vec<JoinHandle<()>>)> = None;
    loop {
        let now = *leading.borrow_and_update();
        match (now, running.is_some()) {
            (true, false) => {
                let token = CancellationToken::new();
                let handles = tasks.start(&token);
                running = Some((token, handles));
                gauge.set(1);
            }
            (false, true) => {
                if let Some((token, handles)) = running.take() {
                    token.cancel();
                    let _ = tokio::time::timeout(TASK_STOP_TIMEOUT, futures::future::join_all(handles)).await;
                    tracing::info!("stopped the leader's tasks");
                }
                gauge.set(0);
            }
            _ => {}
        }
        if leading.changed().await.is_err() {
            break;
        }
    }
    if let Some((token, handles)) = running.take() {
        token.cancel();
        let _ = tokio::time::timeout(TASK_STOP_TIMEOUT, futures::future::join_all(handles)).await;
    }
    gauge.set(0);
}

/// Keeps the [`CACHES`] condition current.
async fn follow_sync(view: Arc<cluster::live::LiveView>, readiness: Arc<Readiness>, stop: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_millis(200));
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        let state = view.synced();
        let done = state.is_ok();
        readiness.set(CACHES, state);
        if done {
            return;
        }
    }
}

async fn until_cancelled(stop: CancellationToken, task: impl std::future::Future<Output = ()>) {
    tokio::select! {
        () = stop.cancelled() => {}
        () = task => {}
    }
}

async fn client(args: &ServeArgs) -> Result<kube::Client, RunError> {
    let limit = crate::client::RateLimit { qps: args.rest_config_qps, burst: args.rest_config_burst };
    crate::client::connect(args.kubeconfig.as_deref(), limit).await.map_err(RunError::Client)
}

fn files_view(args: &ServeArgs, stop: &CancellationToken) -> Result<Arc<dyn ClusterView>, RunError> {
    let Some(dir) = args.objects_dir.as_ref() else {
        return Ok(Arc::new(cluster::EmptyView));
    };
    let (view, problems) = cluster::files::FileView::load(dir)?;
    for p in &problems {
        tracing::warn!(file = %p.file, line = ?p.line, "{}", p.message);
    }
    tracing::info!(dir = %dir.display(), objects = view.len(), "standalone cluster view loaded");
    let view = Arc::new(view);
    let poller = Arc::clone(&view);
    let stop = stop.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(2));
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            match poller.reload_if_changed() {
                Ok(Some(problems)) => {
                    for p in &problems {
                        tracing::warn!(file = %p.file, line = ?p.line, "{}", p.message);
                    }
                    tracing::info!(objects = poller.len(), "standalone cluster view reloaded");
                }
                Ok(None) => {}
                Err(e) => tracing::warn!("{e}"),
            }
        }
    });
    Ok(view)
}

/// Cancels `stop` on the first SIGTERM or SIGINT.
fn signal_task(stop: CancellationToken) -> std::io::Result<JoinHandle<()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;
        Ok(tokio::spawn(async move {
            tokio::select! {
                _ = term.recv() => tracing::info!("SIGTERM received"),
                _ = int.recv() => tracing::info!("SIGINT received"),
            }
            stop.cancel();
        }))
    }
    #[cfg(not(unix))]
    {
        Ok(tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            stop.cancel();
        }))
    }
}
