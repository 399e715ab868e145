//! The serving certificate: loaded from `tls.crt`/`tls.key` before the listener binds, handed to
//! every new TLS handshake through a resolver, and re-read when the files change on disk (polled,
//! so a Kubernetes Secret-volume `..data` symlink swap is seen too). A half-written or mismatched
//! pair is refused and the previous certificate keeps serving (ADMISSION.md, "certificate reload").

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arc_swap::ArcSwapOption;
use rustls::ServerConfig;
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// Why a certificate pair could not be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// `tls.crt` holds no PEM certificate.
    #[error("{path} holds no PEM certificate")]
    NoCertificate {
        /// The file.
        path: PathBuf,
    },
    /// `tls.key` holds no usable private key.
    #[error("{path} holds no usable private key: {reason}")]
    BadKey {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The key does not belong to the certificate.
    #[error("the private key does not match the certificate: {0}")]
    Mismatch(String),
    /// rustls refused the configuration.
    #[error("TLS configuration error: {0}")]
    Config(#[from] rustls::Error),
}

/// The crypto provider: ring (aws-lc-rs needs cmake and doubles build times).
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Parses a PEM certificate chain and private key (RSA, ECDSA or Ed25519) into a checked pair.
pub fn certified_key(
    cert_pem: &[u8],
    key_pem: &[u8],
    cert_path: &Path,
    key_path: &Path,
) -> Result<CertifiedKey, TlsError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert_pem).filter_map(Result::ok).collect();
    if chain.is_empty() {
        return Err(TlsError::NoCertificate { path: cert_path.to_path_buf() });
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|e| TlsError::BadKey { path: key_path.to_path_buf(), reason: e.to_string() })?;
    let signing_key = provider()
        .key_provider
        .load_private_key(key)
        .map_err(|e| TlsError::BadKey { path: key_path.to_path_buf(), reason: e.to_string() })?;
    let certified = CertifiedKey::new(chain, signing_key);
    certified.keys_match().map_err(|e| TlsError::Mismatch(e.to_string()))?;
    Ok(certified)
}

/// The certificate currently served. It comes from files (`tls.crt`/`tls.key` of a directory,
/// polled by [`CertStore::reload_if_changed`]) or from whoever calls [`CertStore::replace`] (the
/// certificate Secret's watcher in a cluster).
pub struct CertStore {
    files: Option<(PathBuf, PathBuf)>,
    current: ArcSwapOption<CertifiedKey>,
    last_bytes: Mutex<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for CertStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CertStore").field("files", &self.files).finish_non_exhaustive()
    }
}

impl CertStore {
    /// Loads `tls.crt` and `tls.key` from `dir`; fails when they are missing or unusable.
    pub fn load(dir: &Path) -> Result<Self, TlsError> {
        let cert_path = dir.join("tls.crt");
        let key_path = dir.join("tls.key");
        let (cert, key) = read_pair(&cert_path, &key_path)?;
        let certified = certified_key(&cert, &key, &cert_path, &key_path)?;
        Ok(CertStore {
            files: Some((cert_path, key_path)),
            current: ArcSwapOption::from_pointee(certified),
            last_bytes: Mutex::new((cert, key)),
        })
    }

    /// A store serving this PEM pair (`what` names its source in errors, e.g. the Secret).
    pub fn from_pem(cert: &[u8], key: &[u8], what: &str) -> Result<Self, TlsError> {
        let certified = certified_key(cert, key, Path::new(what), Path::new(what))?;
        Ok(CertStore {
            files: None,
            current: ArcSwapOption::from_pointee(certified),
            last_bytes: Mutex::new((cert.to_vec(), key.to_vec())),
        })
    }

    /// A store serving nothing yet: handshakes fail until [`CertStore::replace`] gives it a pair
    /// (a replica whose certificate Secret does not exist yet).
    pub fn empty() -> Self {
        CertStore { files: None, current: ArcSwapOption::empty(), last_bytes: Mutex::new((Vec::new(), Vec::new())) }
    }

    /// Whether a certificate is served.
    pub fn is_loaded(&self) -> bool {
        self.current.load().is_some()
    }

    /// Serves this PEM pair from the next handshake on, when it differs from the current one and
    /// is valid; a bad pair leaves the current one in place. `Ok(true)` when it was swapped.
    pub fn replace(&self, cert: &[u8], key: &[u8], what: &str) -> Result<bool, TlsError> {
        {
            let last = self.last_bytes.lock().map_err(|_| TlsError::Mismatch("poisoned lock".into()))?;
            if last.0 == cert && last.1 == key {
                return Ok(false);
            }
        }
        let certified = certified_key(cert, key, Path::new(what), Path::new(what))?;
        self.current.store(Some(Arc::new(certified)));
        if let Ok(mut last) = self.last_bytes.lock() {
            *last = (cert.to_vec(), key.to_vec());
        }
        Ok(true)
    }

    /// Re-reads the files (stores loaded from files only); swaps the certificate when they
    /// changed and are valid. Returns `Ok(true)` when a new certificate is now served, `Ok(false)`
    /// when nothing changed.
    pub fn reload_if_changed(&self) -> Result<bool, TlsError> {
        let Some((cert_path, key_path)) = &self.files else { return Ok(false) };
        let (cert, key) = read_pair(cert_path, key_path)?;
        {
            let last = self.last_bytes.lock().map_err(|_| TlsError::Mismatch("poisoned lock".into()))?;
            if last.0 == cert && last.1 == key {
                return Ok(false);
            }
        }
        let certified = certified_key(&cert, &key, cert_path, key_path)?;
        self.current.store(Some(Arc::new(certified)));
        if let Ok(mut last) = self.last_bytes.lock() {
            *last = (cert, key);
        }
        Ok(true)
    }

    /// The DER leaf certificate currently served.
    pub fn leaf(&self) -> Option<CertificateDer<'static>> {
        self.current.load().as_ref().and_then(|c| c.cert.first().cloned())
    }

    /// The PEM chain currently served.
    pub fn chain_pem(&self) -> Vec<u8> {
        self.last_bytes.lock().map(|l| l.0.clone()).unwrap_or_default()
    }
}

fn read_pair(cert_path: &Path, key_path: &Path) -> Result<(Vec<u8>, Vec<u8>), TlsError> {
    let read = |p: &Path| std::fs::read(p).map_err(|source| TlsError::Read { path: p.to_path_buf(), source });
    Ok((read(cert_path)?, read(key_path)?))
}

impl ResolvesServerCert for CertStore {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.current.load_full()
    }
}

/// A rustls server configuration: TLS 1.2 and 1.3, ALPN `http/1.1` (plus `h2` when enabled).
pub fn server_config(store: Arc<CertStore>, http2: bool) -> Result<Arc<ServerConfig>, TlsError> {
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?
        .with_no_client_auth()
        .with_cert_resolver(store);
    config.alpn_protocols = if http2 { vec![b"h2".to_vec(), b"http/1.1".to_vec()] } else { vec![b"http/1.1".to_vec()] };
    Ok(Arc::new(config))
}
