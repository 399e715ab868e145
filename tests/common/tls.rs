//! The transport side: a real server on 127.0.0.1:0 with fresh certificates, and a TLS client
//! that verifies the CA and the service DNS name as the apiserver does.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use kruise::certs::{CertRequest, ensure};
use kruise::cluster::{ClusterView, EmptyView};
use kruise::core::features::FeatureGates;
use kruise::metrics::Metrics;
use kruise::server::{ServeOptions, ServerHandle, start};
use kruise::webhook::Context;
use kruise::webhook::http::{AppState, router};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// The name the apiserver puts in SNI for the default service.
pub const SERVICE_DNS: &str = "kruise-webhook-service.kruise-system.svc";

/// Writes fresh certificates into `dir`.
pub fn make_certs(dir: &Path) {
    let req = CertRequest {
        out: dir.to_path_buf(),
        service: "kruise-webhook-service".into(),
        conversion_service: "kruise-conversion-service".into(),
        namespace: "kruise-system".into(),
        hosts: vec![],
    };
    ensure(&req).expect("certificates");
}

/// A server under test.
pub struct TestServer {
    pub handle: ServerHandle,
    pub metrics: Metrics,
    pub ca: Vec<u8>,
    pub dir: tempfile::TempDir,
}

impl TestServer {
    pub async fn start() -> Self {
        Self::start_with(FeatureGates::default(), Arc::new(EmptyView), |_| {}).await
    }

    pub async fn start_with(
        gates: FeatureGates,
        cluster: Arc<dyn ClusterView>,
        tune: impl FnOnce(&mut ServeOptions),
    ) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let dir = tempfile::tempdir().expect("tempdir");
        make_certs(dir.path());
        let ca = std::fs::read(dir.path().join("ca.crt")).expect("ca");
        let local: SocketAddr = "127.0.0.1:0".parse().expect("addr");
        let mut opts = ServeOptions::new(local, local, dir.path().to_path_buf());
        opts.shutdown_delay = Duration::from_millis(300);
        opts.shutdown_timeout = Duration::from_secs(5);
        opts.cert_reload_interval = Duration::from_millis(50);
        tune(&mut opts);
        let metrics = Metrics::new();
        let state = Arc::new(AppState::new(Context::with_gates(gates, cluster), metrics.clone()));
        let handle = start(opts, router(state), metrics.clone()).await.expect("server starts");
        TestServer { handle, metrics, ca, dir }
    }

    pub fn cert_dir(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }
}

/// A TLS client configuration trusting `ca_pem`, offering `alpn`.
pub fn tls_config(ca_pem: &[u8], alpn: &[&[u8]]) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca_pem) {
        roots.add(c.expect("pem")).expect("root");
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

/// Opens a verified TLS connection.
pub async fn connect(
    addr: SocketAddr,
    ca_pem: &[u8],
    server_name: &str,
    alpn: &[&[u8]],
) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from(server_name.to_string()).map_err(std::io::Error::other)?;
    TlsConnector::from(tls_config(ca_pem, alpn)).connect(name, tcp).await
}

/// A keep-alive HTTP/1.1 connection.
pub struct Conn {
    pub sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    pub peer_leaf: Option<Vec<u8>>,
}

impl Conn {
    pub async fn open(addr: SocketAddr, ca_pem: &[u8]) -> std::io::Result<Conn> {
        let tls = connect(addr, ca_pem, SERVICE_DNS, &[b"http/1.1"]).await?;
        let peer_leaf = tls.get_ref().1.peer_certificates().and_then(|c| c.first()).map(|c| c.to_vec());
        let (sender, conn) =
            hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.map_err(std::io::Error::other)?;
        tokio::spawn(conn);
        Ok(Conn { sender, peer_leaf })
    }

    /// POSTs a body; returns status, headers and body.
    pub async fn post(
        &mut self,
        path: &str,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> Result<Response, hyper::Error> {
        let mut req = Request::post(path).header("host", SERVICE_DNS);
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        let req = req.body(Full::new(Bytes::from(body))).expect("request");
        let resp = self.sender.send_request(req).await?;
        let (parts, body) = resp.into_parts();
        let body = body.collect().await?.to_bytes().to_vec();
        Ok(Response { status: parts.status.as_u16(), headers: parts.headers, body })
    }
}

/// A response.
pub struct Response {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
}

/// One request on a fresh connection.
pub async fn post_once(addr: SocketAddr, ca: &[u8], path: &str, body: Vec<u8>) -> std::io::Result<Response> {
    let mut conn = Conn::open(addr, ca).await?;
    conn.post(path, Some("application/json"), body).await.map_err(std::io::Error::other)
}

/// GET on the plain-HTTP admin port.
pub async fn admin_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let tcp = TcpStream::connect(addr).await.expect("admin connect");
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await.expect("handshake");
    tokio::spawn(conn);
    let req = Request::get(path).header("host", "localhost").body(Full::new(Bytes::new())).expect("req");
    let resp = sender.send_request(req).await.expect("admin request");
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    (status, String::from_utf8_lossy(&body).to_string())
}
