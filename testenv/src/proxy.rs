//! The fault proxy: a TLS reverse proxy between the clients under test and the real API server,
//! where a test injects what real clusters do to controllers — at the network boundary, so the
//! client sees exactly what it would see from a loaded or flaky apiserver:
//!
//! - added latency on every request;
//! - writes (POST/PUT/PATCH/DELETE) answered, without reaching the apiserver, with 409 Conflict,
//!   429 Too Many Requests with `Retry-After`, or a 5xx — the next N writes, or a share of them,
//!   optionally only for some resources;
//! - watch streams cut (the client must re-watch from its last resourceVersion);
//! - watch events delayed by a set time (the client's cache is stale by that much);
//! - the connection reset after a write was committed (the client cannot know it succeeded).
//!
//! Every injection is counted ([`FaultCounts`]). The proxy authenticates nobody itself: the
//! bearer token of the client passes through, so a proxied client keeps its identity (admin or a
//! ServiceAccount token).

use crate::Error;
use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderValue, Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper_util::client::legacy::Client as HttpClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls_pki_types::pem::PemObject;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

type Body = BoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;

/// What a faulted write is answered with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteFault {
    /// 409 Conflict (reason `Conflict`), as for a stale resourceVersion.
    Conflict,
    /// 429 Too Many Requests with `Retry-After: <seconds>`, as API priority and fairness answers.
    TooManyRequests {
        /// The `Retry-After` value.
        retry_after_seconds: u32,
    },
    /// A 5xx status (500 and 503 are the usual ones).
    ServerError(u16),
}

/// Which writes a [`WriteFault`] hits.
#[derive(Debug, Clone, PartialEq)]
pub enum Share {
    /// The next `n` matching writes.
    Next(u64),
    /// Each matching write with this probability (0..=1).
    Probability(f64),
}

#[derive(Debug, Clone)]
struct WriteRule {
    fault: WriteFault,
    share: Share,
    resources: Vec<String>,
}

/// Counters of what the proxy did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Requests seen.
    pub requests: u64,
    /// Watch requests seen (a watcher that resumes after a cut makes a new one).
    pub watches: u64,
    /// Writes answered 409.
    pub conflicts: u64,
    /// Writes answered 429.
    pub throttled: u64,
    /// Writes answered 5xx.
    pub server_errors: u64,
    /// Watch streams cut.
    pub cut_watches: u64,
    /// Watch events delivered late.
    pub delayed_events: u64,
    /// Connections reset after a committed write.
    pub resets: u64,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    watches: AtomicU64,
    conflicts: AtomicU64,
    throttled: AtomicU64,
    server_errors: AtomicU64,
    cut_watches: AtomicU64,
    delayed_events: AtomicU64,
    resets: AtomicU64,
}

struct State {
    upstream: Uri,
    client: HttpClient<hyper_rustls::HttpsConnector<HttpConnector>, Incoming>,
    latency: Mutex<Duration>,
    writes: Mutex<Option<WriteRule>>,
    resets: Mutex<(u64, Vec<String>)>,
    watch_delay: Mutex<Duration>,
    cut: watch::Sender<u64>,
    counters: Counters,
    rng: Mutex<fastrand::Rng>,
}

/// A running fault proxy; stops when dropped.
pub struct FaultProxy {
    addr: SocketAddr,
    state: Arc<State>,
    ca_pem: String,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FaultProxy {
    /// Starts a proxy on `127.0.0.1:0` in front of `upstream` (the apiserver URL, whose serving
    /// certificate `upstream_ca_pem` verifies); `token` goes into the proxy's kubeconfig.
    pub async fn start(upstream: &str, upstream_ca_pem: &[u8], token: &str) -> Result<Self, Error> {
        let upstream: Uri = upstream.parse().map_err(|e| Error::Tls(format!("upstream {upstream}: {e}")))?;
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_pki_types::CertificateDer::pem_slice_iter(upstream_ca_pem) {
            let cert = cert.map_err(|e| Error::Tls(format!("upstream CA: {e}")))?;
            roots.add(cert).map_err(|e| Error::Tls(format!("upstream CA: {e}")))?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let client_tls = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::Tls(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let connector =
            hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(client_tls).https_only().enable_http1().build();
        let client = HttpClient::builder(TokioExecutor::new()).build(connector);

        let (ca_pem, server_tls) = proxy_tls(provider)?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server_tls));
        let listener =
            tokio::net::TcpListener::bind("127.0.0.1:0").await.map_err(|e| Error::io("bind the fault proxy", e))?;
        let addr = listener.local_addr().map_err(|e| Error::io("fault proxy address", e))?;
        let state = Arc::new(State {
            upstream,
            client,
            latency: Mutex::new(Duration::ZERO),
            writes: Mutex::new(None),
            resets: Mutex::new((0, Vec::new())),
            watch_delay: Mutex::new(Duration::ZERO),
            cut: watch::channel(0).0,
            counters: Counters::default(),
            rng: Mutex::new(fastrand::Rng::new()),
        });
        let dir = tempfile::tempdir().map_err(|e| Error::io("fault proxy directory", e))?;
        let kubeconfig = dir.path().join("kubeconfig");
        crate::cluster::write_kubeconfig(&kubeconfig, &format!("https://{addr}"), ca_pem.as_bytes(), token)?;
        let task = tokio::spawn(serve(listener, acceptor, state.clone()));
        Ok(Self { addr, state, ca_pem, kubeconfig, _dir: dir, task })
    }

    /// The proxy's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The CA of the proxy's serving certificate (PEM).
    pub fn ca_pem(&self) -> &str {
        &self.ca_pem
    }

    /// A kubeconfig that talks through the proxy (with the token given at start).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// A client through the proxy.
    pub async fn client(&self) -> Result<kube::Client, Error> {
        crate::cluster::client_from_kubeconfig(&self.kubeconfig).await
    }

    /// Delays every request by `latency`.
    pub fn set_latency(&self, latency: Duration) {
        *lock(&self.state.latency) = latency;
    }

    /// Answers writes with `fault` (`resources` empty: writes of every resource; otherwise the
    /// plural resource names, e.g. `["pods"]`).
    pub fn fail_writes(&self, fault: WriteFault, share: Share, resources: &[&str]) {
        *lock(&self.state.writes) =
            Some(WriteRule { fault, share, resources: resources.iter().map(|r| r.to_string()).collect() });
    }

    /// Stops failing writes.
    pub fn heal_writes(&self) {
        *lock(&self.state.writes) = None;
    }

    /// Lets the next `n` writes (of `resources`, or all when empty) reach the apiserver, then
    /// resets the connection instead of answering.
    pub fn reset_after_commit(&self, n: u64, resources: &[&str]) {
        *lock(&self.state.resets) = (n, resources.iter().map(|r| r.to_string()).collect());
    }

    /// Ends every watch stream open now.
    pub fn cut_watches(&self) {
        self.state.cut.send_modify(|g| *g += 1);
    }

    /// Delivers every watch event `delay` after the apiserver sent it (0 turns it off).
    pub fn delay_watch_events(&self, delay: Duration) {
        *lock(&self.state.watch_delay) = delay;
    }

    /// Turns every fault off.
    pub fn heal(&self) {
        self.set_latency(Duration::ZERO);
        self.heal_writes();
        self.reset_after_commit(0, &[]);
        self.delay_watch_events(Duration::ZERO);
    }

    /// What was injected so far.
    pub fn counts(&self) -> FaultCounts {
        let c = &self.state.counters;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        FaultCounts {
            requests: l(&c.requests),
            watches: l(&c.watches),
            conflicts: l(&c.conflicts),
            throttled: l(&c.throttled),
            server_errors: l(&c.server_errors),
            cut_watches: l(&c.cut_watches),
            delayed_events: l(&c.delayed_events),
            resets: l(&c.resets),
        }
    }
}

async fn serve(listener: tokio::net::TcpListener, acceptor: tokio_rustls::TlsAcceptor, state: Arc<State>) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let Ok((tcp, _)) = listener.accept().await else { continue };
        let (acceptor, state) = (acceptor.clone(), state.clone());
        connections.spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else { return };
            let service = hyper::service::service_fn(move |req| handle(state.clone(), req));
            let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tls), service).await;
        });
        while connections.try_join_next().is_some() {}
    }
}

async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Box<dyn std::error::Error + Send + Sync>> {
    let c = &state.counters;
    c.requests.fetch_add(1, Ordering::Relaxed);
    let latency = *lock(&state.latency);
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let write = matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH | Method::DELETE);
    let resource = resource_of(req.uri().path());
    if write && let Some(fault) = state.write_fault(&resource) {
        return Ok(fault_response(&state, fault, &resource));
    }
    let reset = write && state.take_reset(&resource);
    let watching = is_watch(req.uri());
    if watching {
        c.watches.fetch_add(1, Ordering::Relaxed);
    }

    let (mut parts, body) = req.into_parts();
    let path_and_query = parts.uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let mut upstream = state.upstream.clone().into_parts();
    upstream.path_and_query = Some(path_and_query.parse()?);
    parts.uri = Uri::from_parts(upstream)?;
    parts.headers.remove(http::header::HOST);
    let response = state.client.request(Request::from_parts(parts, body)).await?;
    if reset {
        // The write is committed; the client never learns it.
        let _ = response.into_body().collect().await;
        c.resets.fetch_add(1, Ordering::Relaxed);
        return Err("connection reset after a committed write (kruise-testenv fault proxy)".into());
    }
    let (parts, body) = response.into_parts();
    let body: Body = if watching { watch_body(&state, body) } else { body.map_err(Into::into).boxed() };
    Ok(Response::from_parts(parts, body))
}

impl State {
    fn write_fault(&self, resource: &str) -> Option<WriteFault> {
        let mut rule = lock(&self.writes);
        let r = rule.as_mut()?;
        if !r.resources.is_empty() && !r.resources.iter().any(|x| x == resource) {
            return None;
        }
        let hit = match &mut r.share {
            Share::Next(0) => false,
            Share::Next(n) => {
                *n -= 1;
                true
            }
            Share::Probability(p) => lock(&self.rng).f64() < *p,
        };
        hit.then_some(r.fault)
    }

    fn take_reset(&self, resource: &str) -> bool {
        let mut resets = lock(&self.resets);
        let (n, resources) = &mut *resets;
        if *n == 0 || (!resources.is_empty() && !resources.iter().any(|x| x == resource)) {
            return false;
        }
        *n -= 1;
        true
    }
}

fn fault_response(state: &State, fault: WriteFault, resource: &str) -> Response<Body> {
    let c = &state.counters;
    let (code, reason, retry_after) = match fault {
        WriteFault::Conflict => {
            c.conflicts.fetch_add(1, Ordering::Relaxed);
            (409, "Conflict", None)
        }
        WriteFault::TooManyRequests { retry_after_seconds } => {
            c.throttled.fetch_add(1, Ordering::Relaxed);
            (429, "TooManyRequests", Some(retry_after_seconds))
        }
        WriteFault::ServerError(code) => {
            c.server_errors.fetch_add(1, Ordering::Relaxed);
            (code, if code == 503 { "ServiceUnavailable" } else { "InternalError" }, None)
        }
    };
    let message = match fault {
        WriteFault::Conflict => format!(
            "Operation cannot be fulfilled on {resource}: the object has been modified; please apply your changes to the latest version and try again (injected by the kruise-testenv fault proxy)"
        ),
        WriteFault::TooManyRequests { .. } => {
            "the server has received too many requests and has asked us to try again later (injected by the kruise-testenv fault proxy)".into()
        }
        WriteFault::ServerError(_) => "an error on the server (injected by the kruise-testenv fault proxy)".into(),
    };
    let status = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code,
        "details": retry_after.map(|s| serde_json::json!({"retryAfterSeconds": s})),
    });
    let mut response =
        Response::new(Full::new(Bytes::from(status.to_string())).map_err(|never| match never {}).boxed());
    *response.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Some(s) = retry_after
        && let Ok(v) = HeaderValue::from_str(&s.to_string())
    {
        response.headers_mut().insert(http::header::RETRY_AFTER, v);
    }
    response
}

/// A watch response body that ends when the test cuts watches and delivers each chunk
/// `watch_delay` after it arrived.
fn watch_body(state: &Arc<State>, body: Incoming) -> Body {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<(tokio::time::Instant, Duration, Bytes)>();
    let mut cut = state.cut.subscribe();
    cut.mark_unchanged();
    let reader_state = state.clone();
    tokio::spawn(async move {
        let mut body = body;
        loop {
            tokio::select! {
                frame = body.frame() => match frame {
                    Some(Ok(frame)) => {
                        if let Ok(data) = frame.into_data() {
                            let delay = *lock(&reader_state.watch_delay);
                            if tx.send((tokio::time::Instant::now(), delay, data)).is_err() { return; }
                        }
                    }
                    _ => return,
                },
                changed = cut.changed() => {
                    if changed.is_ok() {
                        reader_state.counters.cut_watches.fetch_add(1, Ordering::Relaxed);
                    }
                    return;
                }
            }
        }
    });
    let delivered = state.clone();
    let stream = tokio_stream_from(rx).then(move |(at, delay, data)| {
        let delivered = delivered.clone();
        async move {
            if !delay.is_zero() {
                tokio::time::sleep_until(at + delay).await;
                delivered.counters.delayed_events.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(Frame::data(data))
        }
    });
    BodyExt::boxed(StreamBody::new(stream))
}

fn tokio_stream_from<T: Send + 'static>(
    mut rx: tokio::sync::mpsc::UnboundedReceiver<T>,
) -> impl futures::Stream<Item = T> + Send + 'static {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

fn is_watch(uri: &Uri) -> bool {
    uri.path().contains("/watch/")
        || uri.query().is_some_and(|q| q.split('&').any(|kv| kv == "watch=true" || kv == "watch=1"))
}

/// The plural resource a request path names (`/api/v1/namespaces/ns/pods/x/status` → `pods`).
pub fn resource_of(path: &str) -> String {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let rest = match parts.as_slice() {
        ["api", _version, rest @ ..] => rest,
        ["apis", _group, _version, rest @ ..] => rest,
        _ => return String::new(),
    };
    let rest = match rest {
        ["watch", rest @ ..] => rest,
        r => r,
    };
    match rest {
        ["namespaces", _ns, resource, ..] => resource.to_string(),
        [resource, ..] => resource.to_string(),
        [] => String::new(),
    }
}

fn proxy_tls(provider: Arc<rustls::crypto::CryptoProvider>) -> Result<(String, rustls::ServerConfig), Error> {
    let tls = |e: rcgen::Error| Error::Tls(e.to_string());
    let ca_key = rcgen::KeyPair::generate().map_err(tls)?;
    let mut ca_params = rcgen::CertificateParams::new(Vec::new()).map_err(tls)?;
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "kruise-testenv-fault-proxy-ca");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).map_err(tls)?;
    let key = rcgen::KeyPair::generate().map_err(tls)?;
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()]).map_err(tls)?;
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let leaf = params.signed_by(&key, &issuer).map_err(tls)?;
    let key_der =
        rustls_pki_types::PrivateKeyDer::try_from(key.serialize_der()).map_err(|e| Error::Tls(e.to_string()))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone(), ca.der().clone()], key_der)
        .map_err(|e| Error::Tls(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((ca.pem(), config))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::resource_of;

    #[test]
    fn resources_of_request_paths() {
        for (path, want) in [
            ("/api/v1/namespaces/ns/pods", "pods"),
            ("/api/v1/namespaces/ns/pods/web-1/status", "pods"),
            ("/api/v1/namespaces/ns", "namespaces"),
            ("/api/v1/nodes/n1", "nodes"),
            ("/apis/apps.kruise.io/v1alpha1/namespaces/ns/clonesets/web", "clonesets"),
            ("/apis/apps.kruise.io/v1alpha1/clonesets", "clonesets"),
            ("/api/v1/watch/namespaces/ns/pods", "pods"),
            ("/apis", ""),
            ("/version", ""),
        ] {
            assert_eq!(resource_of(path), want, "{path}");
        }
    }
}
