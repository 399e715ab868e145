//! `kruise daemon`: the node agent (kruise's `kruise-daemon`, issue 29 item 4), one per node from
//! a DaemonSet (`deploy/daemonset.yaml`). It watches only its own node's NodeImage, pulls the
//! images it lists through the container runtime's CRI image service (the `kruise-cri` crate),
//! and reports each tag in the NodeImage's status. The decisions are in
//! [`crate::core::imagepuller`]; here are the adapters:
//!
//! - [`puller`]: the watch, the workers' lifecycle and the status writes;
//! - [`worker`]: one tag's pull with its retries, credentials and Events; [`credential_provider`]:
//!   the kubelet's credential-provider plugins (`--plugin-config-file`, `--plugin-bin-dir`);
//! - [`runtime`]: the runtime as the puller sees it ([`runtime::ImageRuntime`]) and the node
//!   without one; [`cri`]: that trait over the node's CRI socket, with runtime discovery; [`secrets`]: the pull secrets, read with a short cache;
//! - [`crr`]: the ContainerRecreateRequests of this node, executed through the same CRI (issue 30);
//! - [`podprobe`]: the PodProbeMarker probes of this node's NodePodProbe, results in its status (issue 30);
//! - [`containermeta`]: this node's pods' runtime container meta, and the restarts of containers
//!   whose env from metadata changed (gate `DaemonWatchingPod`, issue 30 item 2);
//! - [`admin`]: `/healthz`, `/readyz` (names the runtime, or every endpoint tried), `/metrics`.
//!
//! A node where no runtime answers keeps its daemon running with pulls disabled (each tag
//! Failed, naming every endpoint tried) rather than crash-looping (kruise #1319, #1825, #851).

pub mod admin;
pub mod containermeta;
pub mod credential_provider;
pub mod cri;
pub mod crr;
pub mod httpget;
pub mod podprobe;
pub mod puller;
pub mod runtime;
pub mod secrets;
pub mod worker;

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::cli::DaemonArgs;
use crate::client::RateLimit;

/// Why the daemon could not start.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// No node name.
    #[error("no node name: pass --node-name or set NODE_NAME (the DaemonSet sets it from spec.nodeName)")]
    NoNodeName,
    /// No Kubernetes client.
    #[error("cannot configure the Kubernetes client: {0}")]
    Client(String),
    /// The admin port.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// Address.
        addr: std::net::SocketAddr,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// Signal handlers.
    #[error("cannot install signal handlers: {0}")]
    Signal(#[source] std::io::Error),
}

/// Runs the daemon until SIGTERM or SIGINT.
pub async fn run(args: DaemonArgs) -> Result<(), DaemonError> {
    if args.node_name.is_empty() {
        return Err(DaemonError::NoNodeName);
    }
    let limit = RateLimit { qps: args.rest_config_qps, burst: args.rest_config_burst };
    let client = crate::client::connect(args.kubeconfig.as_deref(), limit).await.map_err(DaemonError::Client)?;
    let listener = TcpListener::bind(args.admin_addr)
        .await
        .map_err(|source| DaemonError::Bind { addr: args.admin_addr, source })?;
    let stop = CancellationToken::new();
    let signals = signal_task(stop.clone()).map_err(DaemonError::Signal)?;
    let health = admin::Health::new();
    let metrics = admin::Metrics::new();
    let admin = tokio::spawn({
        let app = admin::router(Arc::clone(&health), metrics.clone());
        let stop = stop.clone();
        async move {
            if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(stop.cancelled_owned()).await {
                tracing::warn!(error = %e, "admin server stopped");
            }
        }
    });
    tracing::info!(node = %args.node_name, addr = %args.admin_addr, "kruise daemon starting");
    let settings = puller::Settings {
        node: args.node_name.clone(),
        max_concurrent_pulls: usize::try_from(args.max_concurrent_pulls).ok().filter(|n| *n > 0),
        status_write_interval: args.status_write_interval,
        events: true,
        credential_plugins: credential_provider::from_flags(&args.plugin_config_file, &args.plugin_bin_dir)
            .map(Arc::new),
    };
    let at = cri::Where { explicit: args.runtime_endpoint.clone(), kubelet_config: Some(args.kubelet_config.clone()) };
    let runtime = Arc::new(cri::CriRuntime::discover(&at).await);
    let rediscover = tokio::spawn(Arc::clone(&runtime).rediscover_until_found(at, Arc::clone(&health), stop.clone()));
    let recreate = tokio::spawn(crr::run(client.clone(), Arc::clone(&runtime), args.node_name.clone(), stop.clone()));
    let prober =
        tokio::spawn(podprobe::run(client.clone(), Arc::clone(&runtime), args.node_name.clone(), stop.clone()));
    let gates = &args.feature_gates;
    let meta = gates.enabled(crate::core::features::Gate::DaemonWatchingPod).then(|| {
        let env_gate = gates.enabled(crate::core::features::Gate::InPlaceUpdateEnvFromMetadata);
        tokio::spawn(containermeta::run(
            client.clone(),
            Arc::clone(&runtime),
            args.node_name.clone(),
            env_gate,
            stop.clone(),
        ))
    });
    puller::run(client, runtime, settings, health, metrics, stop.clone()).await;
    stop.cancel();
    let _ = recreate.await;
    let _ = prober.await;
    if let Some(meta) = meta {
        let _ = meta.await;
    }
    rediscover.abort();
    stop.cancel();
    let _ = admin.await;
    signals.abort();
    tracing::info!("kruise daemon stopped");
    Ok(())
}

/// Cancels `stop` on the first SIGTERM or SIGINT.
fn signal_task(stop: CancellationToken) -> std::io::Result<tokio::task::JoinHandle<()>> {
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
