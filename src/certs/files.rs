//! `kruise certs`: a development/bootstrap CA and serving certificate in files (issue 2 item 5,
//! spec §8.4), issued as [`super::issue`] issues them.
//!
//! ECDSA P-256 keys (cheap handshakes). The CA lives 10 years, the serving certificate one year,
//! with SANs `NAME`, `NAME.NS`, `NAME.NS.svc`, `NAME.NS.svc.cluster.local`, the same four of the
//! conversion Service, `localhost`, `127.0.0.1` and every `--host`. Existing files are kept while the serving certificate still
//! verifies against `ca.crt` for every required name a third of its lifetime from now (kruise's
//! "verify at now + renewBefore" rule); otherwise the leaf is re-issued from the same CA when
//! `ca.key` is there and the CA outlives the new leaf, so `caBundle` stays valid. Files are
//! written atomically (temp file + rename); keys are mode 0600.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rustls_pki_types::ServerName;

use super::issue::{IssueError, Pair, issue_leaf, new_ca};

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
    /// The conversion Service's name (named by the certificate too).
    pub conversion_service: String,
    /// Service namespace.
    pub namespace: String,
    /// Extra SANs (DNS names or IP addresses).
    pub hosts: Vec<String>,
}

impl CertRequest {
    /// Every SAN of the serving certificate.
    pub fn names(&self) -> Vec<String> {
        super::issue::serving_names(&[&self.service, &self.conversion_service], &self.namespace, &self.hosts)
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
    #[error(transparent)]
    Generate(#[from] IssueError),
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
    let now = SystemTime::now();
    let later = now + RENEW_BEFORE;
    let read = |f: &str| std::fs::read(req.out.join(f)).ok();
    if let (Some(ca), Some(leaf), Some(_)) = (read("ca.crt"), read("tls.crt"), read("tls.key"))
        && verifies(&ca, &leaf, &names, later)
    {
        return Ok(Outcome::Kept);
    }
    std::fs::create_dir_all(&req.out).map_err(|source| CertError::Write { path: req.out.clone(), source })?;
    // Re-issue from the existing CA when it outlives the new leaf.
    let text = |f: &str| read(f).and_then(|b| String::from_utf8(b).ok());
    if let (Some(cert), Some(key)) = (text("ca.crt"), text("ca.key")) {
        let ca = Pair { cert, key };
        if let Ok(leaf) = issue_leaf(&ca, &names, now, LEAF_LIFETIME)
            && verifies(
                ca.cert.as_bytes(),
                leaf.cert.as_bytes(),
                &names,
                now + LEAF_LIFETIME - Duration::from_secs(3600),
            )
        {
            write(&req.out.join("tls.key"), leaf.key.as_bytes(), true)?;
            write(&req.out.join("tls.crt"), leaf.cert.as_bytes(), false)?;
            return Ok(Outcome::RenewedLeaf);
        }
    }
    let ca = new_ca(now, CA_LIFETIME)?;
    let leaf = issue_leaf(&ca, &names, now, LEAF_LIFETIME)?;
    write(&req.out.join("ca.key"), ca.key.as_bytes(), true)?;
    write(&req.out.join("ca.crt"), ca.cert.as_bytes(), false)?;
    write(&req.out.join("tls.key"), leaf.key.as_bytes(), true)?;
    write(&req.out.join("tls.crt"), leaf.cert.as_bytes(), false)?;
    Ok(Outcome::NewCa)
}

/// Whether `leaf_pem` (with its chain) verifies against `ca_pem` for every name at time `at`.
pub fn verifies(ca_pem: &[u8], leaf_pem: &[u8], names: &[String], at: SystemTime) -> bool {
    !names.is_empty() && names.iter().all(|n| super::issue::verifies(ca_pem, leaf_pem, n, at))
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
            conversion_service: "kruise-conversion-service".into(),
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
        assert!(names.contains(&"kruise-conversion-service.kruise-system.svc".to_string()));
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
