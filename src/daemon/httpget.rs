//! The daemon's HTTP GET for probes and preStop hooks (issue 30 items 1 and 4), as the kubelet
//! sends them: one request per connection (`Connection: close`), HTTP/1.1 over plain TCP, or over
//! TLS for `scheme: HTTPS` **without verifying the server's certificate** (the kubelet's prober
//! and lifecycle runner set `InsecureSkipVerify`: pods serve self-signed certificates the node
//! cannot know). The answer is read until the server closes or `limit` bytes past the head.

use std::sync::Arc;
use std::time::Duration;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

pub use crate::core::crr::prestop::HttpGet;

/// Why a GET got no answer.
#[derive(Debug, thiserror::Error)]
pub enum GetError {
    /// Connecting, the TLS handshake, writing or reading failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The server answered an HTTPS request in plain HTTP (Go: "server gave HTTP response to
    /// HTTPS client"); the kubelet's lifecycle runner then retries in HTTP.
    #[error("http: server gave HTTP response to HTTPS client")]
    PlainAnswer,
    /// No answer within the time limit.
    #[error("context deadline exceeded")]
    Timeout,
}

/// A raw answer: the status code (0 when the head is not HTTP) and the body bytes read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Status code.
    pub code: u16,
    /// Body (possibly cut).
    pub body: Vec<u8>,
}

/// Sends `request` (over TLS when `request.https`) within `timeout`; reads at most `max_body`
/// body bytes (more is cut).
pub async fn get(request: &HttpGet, timeout: Duration, max_body: usize) -> Result<Answer, GetError> {
    let HttpGet { https, host, port, path, headers, host_header } = request;
    let (https, host, port) = (*https, host.as_str(), *port);
    let mut request = format!("GET {path} HTTP/1.1\r\nHost: {host_header}\r\n");
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("Connection: close\r\n\r\n");
    let exchange = async {
        let tcp = TcpStream::connect((host, port)).await?;
        let raw = if https {
            let name = ServerName::try_from(host.trim_start_matches('[').trim_end_matches(']').to_string())
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
            let tls = tokio_rustls::TlsConnector::from(Arc::new(insecure_client_config()?));
            let stream = tls.connect(name, tcp).await.map_err(|e| {
                let plain = e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()).is_some_and(|r| {
                    matches!(r, rustls::Error::InvalidMessage(_) | rustls::Error::InappropriateMessage { .. })
                });
                if plain { GetError::PlainAnswer } else { GetError::Io(e) }
            })?;
            exchange(stream, request.as_bytes(), max_body).await?
        } else {
            exchange(tcp, request.as_bytes(), max_body).await?
        };
        Ok::<_, GetError>(raw)
    };
    let raw = tokio::time::timeout(timeout, exchange).await.map_err(|_| GetError::Timeout)??;
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n");
    let (head, body) = match split {
        Some(i) => (&raw[..i], raw[i + 4..].to_vec()),
        None => (&raw[..], Vec::new()),
    };
    let head = String::from_utf8_lossy(head);
    let code = head
        .split_whitespace()
        .next()
        .filter(|v| v.starts_with("HTTP/"))
        .and_then(|_| head.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok(Answer { code, body: body.into_iter().take(max_body).collect() })
}

async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    request: &[u8],
    max_body: usize,
) -> std::io::Result<Vec<u8>> {
    stream.write_all(request).await?;
    stream.flush().await?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = match stream.read(&mut chunk).await {
            Ok(n) => n,
            // A TLS server that closes without close_notify: what was read is the answer.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !buf.is_empty() => 0,
            Err(e) => return Err(e),
        };
        if n == 0 || buf.len() > max_body + 8192 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Ok(buf)
}

/// A TLS client that accepts any server certificate (the kubelet's `InsecureSkipVerify`).
fn insecure_client_config() -> std::io::Result<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let schemes = provider.signature_verification_algorithms.supported_schemes();
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)
        .map(|b| b.dangerous().with_custom_certificate_verifier(Arc::new(SkipVerify(schemes))).with_no_client_auth())
}

#[derive(Debug)]
struct SkipVerify(Vec<SignatureScheme>);

impl ServerCertVerifier for SkipVerify {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn verify_tls13_signature(
        &self,
        _: &[u8],
        _: &CertificateDer<'_>,
        _: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        Ok(HandshakeSignatureValid::assertion())
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.clone()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
pub(crate) mod tests {
    use super::*;
    use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
    use tokio::net::TcpListener;

    /// A loopback HTTPS server with a fresh self-signed certificate for `not-this-host.test`,
    /// answering every `GET /healthz` with `status` and `body`; its port.
    pub(crate) async fn tls_server(status: &'static str, body: &'static str) -> u16 {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let cert =
            rcgen::CertificateParams::new(vec!["not-this-host.test".to_string()]).unwrap().self_signed(&key).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { return };
                let acceptor = acceptor.clone();
                tokio::spawn(async move {
                    let Ok(mut s) = acceptor.accept(tcp).await else { return };
                    let mut buf = [0u8; 2048];
                    let n = s.read(&mut buf).await.unwrap_or(0);
                    let req = String::from_utf8_lossy(&buf[..n]).to_string();
                    let status = if req.starts_with("GET /healthz HTTP/1.1\r\n") { status } else { "404 Not Found" };
                    let resp = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n\r\n{body}", body.len());
                    let _ = s.write_all(resp.as_bytes()).await;
                    let _ = s.shutdown().await;
                });
            }
        });
        port
    }

    fn request(https: bool, port: u16) -> HttpGet {
        HttpGet {
            https,
            host: "127.0.0.1".into(),
            port,
            path: "/healthz".into(),
            headers: vec![("Accept".into(), "*/*".into())],
            host_header: format!("127.0.0.1:{port}"),
        }
    }

    #[tokio::test]
    async fn https_without_verification_and_plain_http() {
        let port = tls_server("204 No Content", "").await;
        let answer = get(&request(true, port), Duration::from_secs(20), 1024).await.unwrap();
        assert_eq!(answer, Answer { code: 204, body: Vec::new() });
        let secure = tls_server("200 OK", "0123456789").await;
        let answer = get(&request(true, secure), Duration::from_secs(20), 4).await.unwrap();
        assert_eq!(answer, Answer { code: 200, body: b"0123".to_vec() }, "the body is cut at max_body");
        // The same server spoken to in plain HTTP gives no HTTP answer.
        let plain = get(&request(false, secure), Duration::from_secs(20), 1024).await;
        assert!(!matches!(plain, Ok(Answer { code: 200, .. })), "{plain:?}");
    }

    #[tokio::test]
    async fn a_closed_port_is_an_error() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        assert!(matches!(get(&request(true, port), Duration::from_secs(20), 1024).await, Err(GetError::Io(_))));
    }
}
