//! The HTTPS admission server and the plain-HTTP admin server (spec §8.1, §8.5): TLS via
//! tokio-rustls, HTTP/1.1 via hyper-util (HTTP/2 only when enabled), one axum router, per-connection
//! timeouts ([`io::TimedIo`]), certificate hot reload ([`tls::CertStore`]), and graceful shutdown:
//! `/readyz` turns false, serving continues for a delay while endpoints drain, then connections are
//! closed after their in-flight requests (`Connection: close` / GOAWAY) and the server stops.

pub mod admin;
pub mod io;
pub mod tls;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::{GracefulShutdown, Watcher};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use crate::metrics::Metrics;
pub use admin::Readiness;
use tls::{CertStore, TlsError};

/// Transport settings of the HTTPS server.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Where to listen.
    pub addr: SocketAddr,
    /// Where `/healthz`, `/readyz` and `/metrics` are served.
    pub admin_addr: SocketAddr,
    /// Directory holding `tls.crt` and `tls.key`.
    pub cert_dir: PathBuf,
    /// Offer HTTP/2 through ALPN.
    pub http2: bool,
    /// How often the certificate files are re-read.
    pub cert_reload_interval: Duration,
    /// Time allowed to read a request once it started (the header-read timeout).
    pub request_read_timeout: Duration,
    /// Time an idle keep-alive connection is kept (at least 90 s: the apiserver's idle timeout).
    pub idle_timeout: Duration,
    /// Time allowed for a TLS handshake.
    pub handshake_timeout: Duration,
    /// Time serving goes on after SIGTERM with `/readyz` false, while endpoints drain.
    pub shutdown_delay: Duration,
    /// Time in-flight requests get to finish once connections are told to close.
    pub shutdown_timeout: Duration,
}

impl ServeOptions {
    /// Defaults for a given address pair and certificate directory.
    pub fn new(addr: SocketAddr, admin_addr: SocketAddr, cert_dir: PathBuf) -> Self {
        ServeOptions {
            addr,
            admin_addr,
            cert_dir,
            http2: false,
            cert_reload_interval: Duration::from_secs(2),
            request_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            handshake_timeout: Duration::from_secs(10),
            shutdown_delay: Duration::from_secs(5),
            shutdown_timeout: Duration::from_secs(20),
        }
    }
}

/// Why the server could not start or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Certificates are missing or unusable.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// A listener cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// Address.
        addr: SocketAddr,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
}

/// A running server.
pub struct ServerHandle {
    /// Bound HTTPS address.
    pub addr: SocketAddr,
    /// Bound admin address.
    pub admin_addr: SocketAddr,
    /// The certificate store (tests read the served leaf).
    pub certs: Arc<CertStore>,
    readiness: Arc<Readiness>,
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
    reload: Option<JoinHandle<()>>,
}

impl ServerHandle {
    /// Starts the shutdown sequence (what SIGTERM does).
    pub fn shutdown(&self) {
        self.readiness.shutting_down();
        let _ = self.stop.send(true);
    }

    /// Whether `/readyz` answers ok.
    pub fn is_ready(&self) -> bool {
        self.readiness.is_ready()
    }

    /// The readiness conditions behind `/readyz`.
    pub fn readiness(&self) -> &Arc<Readiness> {
        &self.readiness
    }

    /// Waits until the server stopped.
    pub async fn wait(self) {
        let _ = self.task.await;
        if let Some(reload) = self.reload {
            reload.abort();
        }
    }
}

/// The certificate of `--cert-dir`, both listeners and `app`, until [`ServerHandle::shutdown`]
/// (`kruise serve --standalone` and the transport tests). The files are re-read every
/// `cert_reload_interval`.
pub async fn start(opts: ServeOptions, app: Router, metrics: Metrics) -> Result<ServerHandle, ServeError> {
    let certs = Arc::new(CertStore::load(&opts.cert_dir)?);
    let reload = tokio::spawn(reload_loop(Arc::clone(&certs), metrics.clone(), opts.cert_reload_interval));
    let handle = start_with(opts, certs, Readiness::new(&[]), app, metrics).await;
    if handle.is_err() {
        reload.abort();
    }
    let mut handle = handle?;
    handle.reload = Some(reload);
    Ok(handle)
}

/// Both listeners and `app`, serving whatever `certs` holds (the process root in a cluster,
/// where the certificate Secret's watcher fills the store) and answering `/readyz` from
/// `readiness`, until [`ServerHandle::shutdown`].
pub async fn start_with(
    opts: ServeOptions,
    certs: Arc<CertStore>,
    readiness: Arc<Readiness>,
    app: Router,
    metrics: Metrics,
) -> Result<ServerHandle, ServeError> {
    let admin = bind(opts.admin_addr).await?;
    let admin_addr = local_addr(&admin, opts.admin_addr)?;
    let listener = bind(opts.addr).await?;
    let addr = local_addr(&listener, opts.addr)?;
    let (stop, stop_rx) = watch::channel(false);
    // The admin server outlives the drain so that `/readyz` answers false meanwhile.
    let (admin_stop, admin_stop_rx) = watch::channel(false);
    let admin_task = tokio::spawn(admin::serve(admin, Arc::clone(&readiness), metrics.clone(), admin_stop_rx));
    let config = tls::server_config(Arc::clone(&certs), opts.http2)?;
    let task = tokio::spawn(async move {
        serve_https(listener, config, app, opts, stop_rx).await;
        let _ = admin_stop.send(true);
        let _ = admin_task.await;
    });
    tracing::info!(%addr, %admin_addr, "serving admission webhooks");
    Ok(ServerHandle { addr, admin_addr, certs, readiness, stop, task, reload: None })
}

/// Binds a listener.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, ServeError> {
    TcpListener::bind(addr).await.map_err(|source| ServeError::Bind { addr, source })
}

/// The address a listener is bound to.
pub fn local_addr(listener: &TcpListener, requested: SocketAddr) -> Result<SocketAddr, ServeError> {
    listener.local_addr().map_err(|source| ServeError::Bind { addr: requested, source })
}

/// Re-reads the certificate files every `every`, counting reloads.
pub async fn reload_loop(certs: Arc<CertStore>, metrics: Metrics, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match certs.reload_if_changed() {
            Ok(false) => {}
            Ok(true) => {
                metrics.cert_reload(true);
                tracing::info!("serving certificate reloaded");
            }
            Err(e) => {
                metrics.cert_reload(false);
                tracing::warn!(error = %e, "certificate files changed but cannot be used yet; still serving the previous one");
            }
        }
    }
}

/// Serves `app` over TLS on `listener` until `stop` fires, then drains: keeps serving for the
/// shutdown delay (new connections serve one request and close), then closes connections after
/// their in-flight requests, waiting at most the shutdown timeout.
pub async fn serve_https(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
    app: Router,
    opts: ServeOptions,
    stop: watch::Receiver<bool>,
) {
    serve_tls(listener, TlsAcceptor::from(config), app, opts, stop).await;
}

async fn serve_tls(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    app: Router,
    opts: ServeOptions,
    mut stop: watch::Receiver<bool>,
) {
    let graceful = GracefulShutdown::new();
    // Once draining, every response says `Connection: close`, on connections opened before too:
    // the apiserver then drops them instead of reusing one this server is about to close (a POST
    // sent on a connection the server closes is not retried: "failed to call webhook: EOF").
    // Set in `answer` (below) on each response, rather than by a router layer, which boxes
    // every request's future once more (issue 16).
    let closing = Arc::new(AtomicBool::new(false));
    let mut draining = false;
    let drain = tokio::time::sleep(Duration::MAX / 4);
    tokio::pin!(drain);
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, peer)) => {
                    let settings = (acceptor.clone(), app.clone(), Arc::clone(&closing), opts.clone(), !draining);
                    tokio::spawn(connection(tcp, peer, settings, graceful.watcher()));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = stop.changed(), if !draining => {
                // Keep accepting during the delay: the apiserver may still route here until the
                // endpoints update; new connections serve one request and close.
                tracing::info!(delay = ?opts.shutdown_delay, "shutting down: not ready, still serving while endpoints drain");
                draining = true;
                closing.store(true, Ordering::Relaxed);
                drain.as_mut().reset(tokio::time::Instant::now() + opts.shutdown_delay);
            }
            _ = &mut drain, if draining => break,
        }
    }
    drop(listener);
    tracing::info!(timeout = ?opts.shutdown_timeout, "closing connections after their in-flight requests");
    if tokio::time::timeout(opts.shutdown_timeout, graceful.shutdown()).await.is_err() {
        tracing::warn!("in-flight requests did not finish in time; stopping anyway");
    }
    tracing::info!("server stopped");
}

/// The router's response to `request`, with `Connection: close` once the server drains.
fn answer(
    app: &Router,
    closing: &Arc<AtomicBool>,
    request: hyper::Request<hyper::body::Incoming>,
) -> impl Future<Output = Result<axum::response::Response, Infallible>> + use<> {
    // A router is always ready, and a clone of it is a reference count.
    let response = tower::ServiceExt::oneshot(app.clone(), request);
    let closing = Arc::clone(closing);
    async move {
        let mut response = response.await?;
        if closing.load(Ordering::Relaxed) {
            response
                .headers_mut()
                .insert(axum::http::header::CONNECTION, axum::http::HeaderValue::from_static("close"));
        }
        Ok(response)
    }
}

/// Serves one accepted TCP connection: TLS handshake, then HTTP/1.1 (or HTTP/2 when negotiated).
async fn connection(
    tcp: tokio::net::TcpStream,
    peer: SocketAddr,
    (acceptor, app, closing, opts, keep_alive): (TlsAcceptor, Router, Arc<AtomicBool>, ServeOptions, bool),
    watcher: Watcher,
) {
    let _ = tcp.set_nodelay(true);
    let tls = match tokio::time::timeout(opts.handshake_timeout, acceptor.accept(tcp)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(e)) => return tracing::debug!(%peer, error = %e, "TLS handshake failed"),
        Err(_) => return tracing::debug!(%peer, "TLS handshake timed out"),
    };
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    let service = hyper::service::service_fn(move |request| answer(&app, &closing, request));
    let result = if h2 {
        let mut builder = auto::Builder::new(TokioExecutor::new()).http2_only();
        builder.http2().timer(TokioTimer::new()).keep_alive_interval(Some(Duration::from_secs(30)));
        let conn = builder.serve_connection(TokioIo::new(tls), service);
        watcher.watch(conn.into_owned()).await
    } else {
        let mut builder = auto::Builder::new(TokioExecutor::new()).http1_only();
        builder.http1().keep_alive(keep_alive);
        let io = io::TimedIo::new(tls, opts.idle_timeout, opts.request_read_timeout);
        let conn = builder.serve_connection(TokioIo::new(io), service);
        watcher.watch(conn.into_owned()).await
    };
    if let Err(e) = result {
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}
