//! `kruise certs`: a development/bootstrap CA and serving certificate (issue 2 item 5, spec §8.4).
//!
//! ECDSA P-256 keys (cheap handshakes). The CA lives 10 years, the serving certificate one year,
//! with SANs `NAME`, `NAME.NS`, `NAME.NS.svc`, `NAME.NS.svc.cluster.local`, `localhost`,
//! `127.0.0.1` and every `--host`. Existing files are kept while the serving certificate still
//! verifies against `ca.crt` for every required name a third of its lifetime from now (kruise's
//! "verify at now + renewBefore" rule); otherwise the leaf is re-issued from the same CA when
//! `ca.key` is there and the CA outlives the new leaf, so `caBundle` stays valid. Files are
//! written atomically (temp file + rename); keys are mode 0600.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    PKCS_ECDSA_P256_SHA256,
};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

/// Lifetime of the serving certificate.
pub const LEAF_LIFETIME: Duration = Duration::from_secs(365 * 24 * 3600);
/// Lifetime of the CA.
pub const CA_LIFETIME: Duration = Duration::from_secs(10 * 365 * 24 * 3600);
/// A leaf is renewed when less than this is left (a third of its lifetime).
pub const RENEW_BEFORE: Duration = Duration::from_secs(LEAF_LIFETIME.as_secs() / 3);

/// What to issue.
#[derive(Clone, Debug)]
pub struct CertRequest {
    /// Output directory (`ca.crt`, `ca.key`, `tls.crt`, `tls.key`).
    pub out: PathBuf,
    /// Service name.
    pub service: String,
    /// Service namespace.
    pub namespace: String,
    /// Extra SANs (DNS names or IP addresses).
    pub hosts: Vec<String>,
}

impl CertRequest {
    /// Every SAN of the serving certificate.
    pub fn names(&self) -> Vec<String> {
        let (s, ns) = (&self.service, &self.namespace);
        let mut names = vec![
            s.clone(),
            format!("{s}.{ns}"),
            format!("{s}.{ns}.svc"),
            format!("{s}.{ns}.svc.cluster.local"),
            "localhost".to_string(),
            "127.0.0.1".to_string(),
        ];
        for h in &self.hosts {
            if !names.contains(h) {
                names.push(h.clone());
            }
        }
        names
    }
}

/// What `ensure` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The existing files are still good.
    Kept,
    /// A new serving certificate from the existing CA.
    RenewedLeaf,
    /// A new CA and serving certificate.
    NewCa,
}

/// Why certificates could not be issued.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// Generation failed.
    #[error("certificate generation failed: {0}")]
    Generate(#[from] rcgen::Error),
    /// Files cannot be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// File.
        path: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// A SAN is neither a DNS name nor an IP address.
    #[error("invalid host {0:?}: not a DNS name or IP address")]
    BadHost(String),
}

/// Makes sure `out` holds a CA and a serving certificate valid for the request.
pub fn ensure(req: &CertRequest) -> Result<Outcome, CertError> {
    let names = req.names();
    for n in &names {
        if ServerName::try_from(n.as_str()).is_err() {
            return Err(CertError::BadHost(n.clone()));
        }
    }
    let later = SystemTime::now() + RENEW_BEFORE;
    let read = |f: &str| std::fs::read(req.out.join(f)).ok();
    if let (Some(ca), Some(leaf), Some(_)) = (read("ca.crt"), read("tls.crt"), read("tls.key"))
        && verifies(&ca, &leaf, &names, later)
    {
        return Ok(Outcome::Kept);
    }
    std::fs::create_dir_all(&req.out).map_err(|source| CertError::Write { path: req.out.clone(), source })?;
    // Re-issue from the existing CA when it outlives the new leaf.
    if let (Some(ca_pem), Some(ca_key_pem)) = (read("ca.crt"), read("ca.key"))
        && let Some((leaf, key)) = issue_from_existing(&ca_pem, &ca_key_pem, &names)
        && verifies(&ca_pem, leaf.as_bytes(), &names, SystemTime::now() + LEAF_LIFETIME - Duration::from_secs(3600))
    {
        write(&req.out.join("tls.key"), key.as_bytes(), true)?;
        write(&req.out.join("tls.crt"), leaf.as_bytes(), false)?;
        return Ok(Outcome::RenewedLeaf);
    }
    let ca_key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let ca_params = ca_params()?;
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);
    let (leaf, key) = issue(&issuer, &names)?;
    write(&req.out.join("ca.key"), issuer.key().serialize_pem().as_bytes(), true)?;
    write(&req.out.join("ca.crt"), ca_cert.pem().as_bytes(), false)?;
    write(&req.out.join("tls.key"), key.as_bytes(), true)?;
    write(&req.out.join("tls.crt"), leaf.as_bytes(), false)?;
    Ok(Outcome::NewCa)
}

fn ca_params() -> Result<CertificateParams, rcgen::Error> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.distinguished_name.push(DnType::CommonName, "kruise-webhook-ca");
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + CA_LIFETIME;
    Ok(params)
}

/// Issues a serving certificate; returns (certificate PEM, key PEM).
fn issue(issuer: &Issuer<'_, KeyPair>, names: &[String]) -> Result<(String, String), rcgen::Error> {
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let mut params = CertificateParams::new(names.to_vec())?;
    params.distinguished_name.push(DnType::CommonName, names.get(2).cloned().unwrap_or_default());
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + LEAF_LIFETIME;
    let cert = params.signed_by(&key, issuer)?;
    Ok((cert.pem(), key.serialize_pem()))
}

fn issue_from_existing(ca_pem: &[u8], ca_key_pem: &[u8], names: &[String]) -> Option<(String, String)> {
    let key = KeyPair::from_pem(std::str::from_utf8(ca_key_pem).ok()?).ok()?;
    let issuer = Issuer::from_ca_cert_pem(std::str::from_utf8(ca_pem).ok()?, key).ok()?;
    issue(&issuer, names).ok()
}

/// Whether `leaf_pem` (with its chain) verifies against `ca_pem` for every name at time `at`.
pub fn verifies(ca_pem: &[u8], leaf_pem: &[u8], names: &[String], at: SystemTime) -> bool {
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(ca_pem).filter_map(Result::ok) {
        let _ = roots.add(ca);
    }
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(leaf_pem).filter_map(Result::ok).collect();
    let Some((leaf, intermediates)) = chain.split_first() else { return false };
    let Ok(verifier) =
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), crate::server::tls::provider()).build()
    else {
        return false;
    };
    let Ok(since_epoch) = at.duration_since(SystemTime::UNIX_EPOCH) else { return false };
    let at = UnixTime::since_unix_epoch(since_epoch);
    names.iter().all(|n| {
        ServerName::try_from(n.as_str())
            .map(|name| verifier.verify_server_cert(leaf, intermediates, &name, &[], at).is_ok())
            .unwrap_or(false)
    })
}

fn write(path: &Path, bytes: &[u8], private: bool) -> Result<(), CertError> {
    let err = |source| CertError::Write { path: path.to_path_buf(), source };
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes).map_err(err)?;
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600)).map_err(err)?;
    }
    #[cfg(not(unix))]
    let _ = private;
    std::fs::rename(&tmp, path).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(dir: &Path) -> CertRequest {
        CertRequest {
            out: dir.to_path_buf(),
            service: "kruise-webhook-service".into(),
            namespace: "kruise-system".into(),
            hosts: vec!["webhook.example.com".into(), "10.0.0.7".into()],
        }
    }

    #[test]
    fn issues_then_keeps_then_renews_leaf() {
        let dir = tempfile::tempdir().unwrap();
        let req = request(dir.path());
        assert_eq!(ensure(&req).unwrap(), Outcome::NewCa);
        let ca = std::fs::read(dir.path().join("ca.crt")).unwrap();
        let leaf = std::fs::read(dir.path().join("tls.crt")).unwrap();
        let names = req.names();
        assert!(names.contains(&"kruise-webhook-service.kruise-system.svc".to_string()));
        assert!(verifies(&ca, &leaf, &names, SystemTime::now()));
        assert!(!verifies(&ca, &leaf, &["other.example.com".into()], SystemTime::now()));
        assert!(!verifies(&ca, &leaf, &names, SystemTime::now() + LEAF_LIFETIME + Duration::from_secs(86400)));

        assert_eq!(ensure(&req).unwrap(), Outcome::Kept);
        assert_eq!(std::fs::read(dir.path().join("tls.crt")).unwrap(), leaf);

        // A new host is not covered: the leaf is re-issued from the same CA.
        let mut more = req.clone();
        more.hosts.push("new.example.com".into());
        assert_eq!(ensure(&more).unwrap(), Outcome::RenewedLeaf);
        assert_eq!(std::fs::read(dir.path().join("ca.crt")).unwrap(), ca, "CA kept");
        let leaf2 = std::fs::read(dir.path().join("tls.crt")).unwrap();
        assert!(verifies(&ca, &leaf2, &more.names(), SystemTime::now()));

        // The key is private and the pair loads as a serving certificate.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("tls.key")).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        crate::server::tls::CertStore::load(dir.path()).unwrap();
    }

    #[test]
    fn bad_host_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut req = request(dir.path());
        req.hosts = vec!["not a host".into()];
        assert!(matches!(ensure(&req), Err(CertError::BadHost(_))));
    }
}
