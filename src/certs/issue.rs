//! Issuing and reading certificates (spec §8.4, improved per issue 10 item 3): every CA gets a
//! subject of its own (`CN=kruise-webhook-ca-<UTC time>-<random>`), so a client holding the old
//! and the new CA during a rotation picks the right one by name; serving certificates carry the
//! authority key identifier of their CA and name the Service. Keys are ECDSA P-256 (cheap
//! handshakes); CAs written by OpenKruise (RSA-2048, PKCS#1 `RSA PRIVATE KEY`) are read and can
//! keep signing. Also what the decision needs to know of a certificate: its fingerprint,
//! validity, and which CA verifies it.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    PKCS_ECDSA_P256_SHA256, PKCS_RSA_SHA256, PublicKeyData,
};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use sha2::{Digest, Sha256};

use crate::core::certs::{CaInfo, LeafInfo};

/// Why a certificate could not be issued.
#[derive(Debug, thiserror::Error)]
pub enum IssueError {
    /// rcgen refused.
    #[error("certificate generation failed: {0}")]
    Generate(#[from] rcgen::Error),
    /// The CA's key cannot sign (unknown format, or it does not belong to the CA).
    #[error("the CA key cannot be used: {0}")]
    CaKey(String),
}

/// A PEM certificate and its PEM private key.
#[derive(Clone, PartialEq, Eq)]
pub struct Pair {
    /// Certificate (PEM).
    pub cert: String,
    /// Private key (PEM, PKCS#8).
    pub key: String,
}

impl std::fmt::Debug for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pair").field("cert", &self.cert).finish_non_exhaustive()
    }
}

/// The SANs of the serving certificate of Service `service` in `namespace`, plus `hosts`.
pub fn service_names(service: &str, namespace: &str, hosts: &[String]) -> Vec<String> {
    let mut names = vec![
        service.to_string(),
        format!("{service}.{namespace}"),
        format!("{service}.{namespace}.svc"),
        format!("{service}.{namespace}.svc.cluster.local"),
        "localhost".to_string(),
        "127.0.0.1".to_string(),
    ];
    for h in hosts {
        if !names.contains(h) {
            names.push(h.clone());
        }
    }
    names
}

/// The SANs of a certificate served for every Service in `services` (the webhook Service and
/// the conversion Service) plus `hosts`, each once.
pub fn serving_names(services: &[&str], namespace: &str, hosts: &[String]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for service in services {
        for n in service_names(service, namespace, hosts) {
            if !names.contains(&n) {
                names.push(n);
            }
        }
    }
    names
}

/// The name the apiserver verifies: `<service>.<namespace>.svc`.
pub fn service_dns_name(service: &str, namespace: &str) -> String {
    format!("{service}.{namespace}.svc")
}

/// Certificates start a little in the past (clock skew between replicas and the apiserver), by
/// a tenth of their lifetime at most so that short test lifetimes keep their meaning.
fn backdate(lifetime: Duration) -> Duration {
    (lifetime / 10).min(Duration::from_secs(3600))
}

fn validity(now: SystemTime, lifetime: Duration) -> (time::OffsetDateTime, time::OffsetDateTime) {
    let from = now.checked_sub(backdate(lifetime)).unwrap_or(now);
    (time::OffsetDateTime::from(from), time::OffsetDateTime::from(now + lifetime))
}

/// A new self-signed CA valid for `lifetime` from `now`, with a subject of its own.
pub fn new_ca(now: SystemTime, lifetime: Duration) -> Result<Pair, IssueError> {
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.distinguished_name.push(DnType::CommonName, ca_common_name(now));
    params.distinguished_name.push(DnType::OrganizationName, "kruise");
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    (params.not_before, params.not_after) = validity(now, lifetime);
    let cert = params.self_signed(&key)?;
    Ok(Pair { cert: cert.pem(), key: key.serialize_pem() })
}

/// `kruise-webhook-ca-<UTC yyyymmddHHMMSS>-<4 random hex digits>`: distinct for every CA.
fn ca_common_name(now: SystemTime) -> String {
    let stamp = jiff::Timestamp::try_from(now)
        .map(|t| t.strftime("%Y%m%d%H%M%S").to_string())
        .unwrap_or_else(|_| "0".to_string());
    format!("kruise-webhook-ca-{stamp}-{:04x}", fastrand::u16(..))
}

/// A serving certificate for `names` valid for `lifetime` from `now` (never past the CA's own
/// end), signed by the CA `ca`, carrying its authority key identifier.
pub fn issue_leaf(ca: &Pair, names: &[String], now: SystemTime, lifetime: Duration) -> Result<Pair, IssueError> {
    let ca_key = load_key(&ca.key).map_err(IssueError::CaKey)?;
    let ca_der = CertificateDer::from_pem_slice(ca.cert.as_bytes()).map_err(|e| IssueError::CaKey(e.to_string()))?;
    if !key_matches(&ca_key, &ca_der) {
        return Err(IssueError::CaKey("the key does not belong to the CA certificate".into()));
    }
    let ca_end = validity_of(&ca_der).map(|(_, end)| end);
    let issuer = Issuer::from_ca_cert_der(&ca_der, ca_key)?;
    let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
    let mut params = CertificateParams::new(names.to_vec())?;
    let cn = names.get(2).or(names.first()).cloned().unwrap_or_default();
    params.distinguished_name.push(DnType::CommonName, cn);
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
    params.use_authority_key_identifier_extension = true;
    (params.not_before, params.not_after) = validity(now, lifetime);
    if let Some(end) = ca_end {
        params.not_after = params.not_after.min(time::OffsetDateTime::from(end));
    }
    let cert = params.signed_by(&key, &issuer)?;
    Ok(Pair { cert: cert.pem(), key: key.serialize_pem() })
}

/// Loads a private key for signing: PKCS#8 (any algorithm rcgen knows) or PKCS#1 RSA (what
/// OpenKruise writes; ring signs only PKCS#8, so it is re-wrapped).
pub fn load_key(pem: &str) -> Result<KeyPair, String> {
    match PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|e| e.to_string())? {
        PrivateKeyDer::Pkcs8(der) => KeyPair::try_from(&der).map_err(|e| e.to_string()),
        PrivateKeyDer::Pkcs1(der) => {
            let pkcs8 = pkcs1_to_pkcs8(der.secret_pkcs1_der());
            KeyPair::from_pkcs8_der_and_sign_algo(&PrivatePkcs8KeyDer::from(pkcs8), &PKCS_RSA_SHA256)
                .map_err(|e| e.to_string())
        }
        _ => Err("unsupported private key format (SEC1 EC keys are not read; use PKCS#8)".into()),
    }
}

/// PKCS#8 `PrivateKeyInfo { version 0, rsaEncryption, OCTET STRING pkcs1 }` around a PKCS#1 key.
fn pkcs1_to_pkcs8(pkcs1: &[u8]) -> Vec<u8> {
    // SEQUENCE { OID 1.2.840.113549.1.1.1, NULL }
    const RSA_ALGORITHM: &[u8] =
        &[0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00];
    let mut body = vec![0x02, 0x01, 0x00];
    body.extend_from_slice(RSA_ALGORITHM);
    body.extend(der_tlv(0x04, pkcs1));
    der_tlv(0x30, &body)
}

fn der_tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len.to_be_bytes().into_iter().skip_while(|b| *b == 0).collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

fn key_matches(key: &KeyPair, cert: &CertificateDer<'_>) -> bool {
    x509_parser::parse_x509_certificate(cert)
        .map(|(_, c)| c.public_key().raw == key.subject_public_key_info().as_slice())
        .unwrap_or(false)
}

/// SHA-256 of a DER certificate, lower-case hex.
pub fn fingerprint(der: &[u8]) -> String {
    Sha256::digest(der).iter().map(|b| format!("{b:02x}")).collect()
}

/// The certificates of a PEM bundle, in order (unparsable blocks skipped).
pub fn certificates(pem: &[u8]) -> Vec<CertificateDer<'static>> {
    CertificateDer::pem_slice_iter(pem).filter_map(Result::ok).collect()
}

/// The fingerprints of a PEM bundle, in order.
pub fn fingerprints(pem: &[u8]) -> Vec<String> {
    certificates(pem).iter().map(|c| fingerprint(c)).collect()
}

fn validity_of(der: &[u8]) -> Option<(SystemTime, SystemTime)> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let at = |secs: i64| {
        if secs >= 0 { SystemTime::UNIX_EPOCH + Duration::from_secs(secs as u64) } else { SystemTime::UNIX_EPOCH }
    };
    Some((at(cert.validity().not_before.timestamp()), at(cert.validity().not_after.timestamp())))
}

/// The CA of a PEM pair, when the certificate parses, is a CA and its key can sign with it.
pub fn ca_info(pair: &Pair) -> Option<CaInfo> {
    let der = CertificateDer::from_pem_slice(pair.cert.as_bytes()).ok()?;
    let (_, cert) = x509_parser::parse_x509_certificate(&der).ok()?;
    if !cert.is_ca() {
        return None;
    }
    let key = load_key(&pair.key).ok()?;
    if !key_matches(&key, &der) {
        return None;
    }
    let (not_before, not_after) = validity_of(&der)?;
    Some(CaInfo { fingerprint: fingerprint(&der), not_before, not_after })
}

/// The serving certificate of a PEM pair, when it parses and its key matches: its validity, which
/// of `cas` (PEM) verifies it (`issuer` is that CA's fingerprint), and whether it names every
/// name of `required` (the `<service>.<namespace>.svc` the apiserver verifies, one per Service).
pub fn leaf_info(pair: &Pair, cas: &[&str], required: &[String]) -> Option<LeafInfo> {
    crate::server::tls::certified_key(
        pair.cert.as_bytes(),
        pair.key.as_bytes(),
        std::path::Path::new("tls.crt"),
        std::path::Path::new("tls.key"),
    )
    .ok()?;
    let der = CertificateDer::from_pem_slice(pair.cert.as_bytes()).ok()?;
    let (not_before, not_after) = validity_of(&der)?;
    let (_, cert) = x509_parser::parse_x509_certificate(&der).ok()?;
    let dns_names: Vec<String> = cert
        .subject_alternative_name()
        .ok()
        .flatten()
        .map(|san| {
            san.value
                .general_names
                .iter()
                .filter_map(|n| match n {
                    x509_parser::extensions::GeneralName::DNSName(d) => Some(d.to_string()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let covers_service = required.iter().all(|r| dns_names.contains(r));
    // Which CA signed it is a question of signatures, not of time: ask at a moment inside the
    // leaf's validity, for a name it carries.
    let name = required.iter().find(|r| dns_names.contains(r)).or(dns_names.first()).cloned();
    let at = not_before + (not_after.duration_since(not_before).unwrap_or_default() / 2);
    let issuer = name.and_then(|name| {
        cas.iter()
            .find(|ca| verifies(ca.as_bytes(), pair.cert.as_bytes(), &name, at))
            .and_then(|ca| CertificateDer::from_pem_slice(ca.as_bytes()).ok().map(|d| fingerprint(&d)))
    });
    Some(LeafInfo { not_before, not_after, issuer, covers_service })
}

/// Whether `chain_pem` (leaf first) verifies against the CAs of `cas_pem` for `name` at `at`.
pub fn verifies(cas_pem: &[u8], chain_pem: &[u8], name: &str, at: SystemTime) -> bool {
    let mut roots = rustls::RootCertStore::empty();
    for ca in certificates(cas_pem) {
        let _ = roots.add(ca);
    }
    let chain = certificates(chain_pem);
    let Some((leaf, intermediates)) = chain.split_first() else { return false };
    let Ok(verifier) =
        WebPkiServerVerifier::builder_with_provider(Arc::new(roots), crate::server::tls::provider()).build()
    else {
        return false;
    };
    let Ok(since_epoch) = at.duration_since(SystemTime::UNIX_EPOCH) else { return false };
    let Ok(name) = ServerName::try_from(name.to_string()) else { return false };
    verifier.verify_server_cert(leaf, intermediates, &name, &[], UnixTime::since_unix_epoch(since_epoch)).is_ok()
}

/// The fingerprint of the CA among `cas_pem` that verifies `chain_pem` for `name` now.
pub fn signing_ca(cas_pem: &[u8], chain_pem: &[u8], name: &str, now: SystemTime) -> Option<String> {
    certificates(cas_pem).into_iter().find_map(|ca| {
        let pem = pem_of(&ca);
        verifies(pem.as_bytes(), chain_pem, name, now).then(|| fingerprint(&ca))
    })
}

/// A DER certificate as PEM.
pub fn pem_of(der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(86400);

    fn names() -> Vec<String> {
        service_names("kruise-webhook-service", "kruise-system", &[])
    }

    #[test]
    fn every_ca_has_its_own_subject_and_leaves_name_their_ca() {
        let now = SystemTime::now();
        let a = new_ca(now, DAY * 10).unwrap();
        let b = new_ca(now, DAY * 10).unwrap();
        let subject = |p: &Pair| {
            let der = CertificateDer::from_pem_slice(p.cert.as_bytes()).unwrap();
            let (_, c) = x509_parser::parse_x509_certificate(&der).unwrap();
            c.subject().to_string()
        };
        assert_ne!(subject(&a), subject(&b));
        assert!(subject(&a).contains("kruise-webhook-ca-"), "{}", subject(&a));

        let leaf = issue_leaf(&b, &names(), now, DAY).unwrap();
        let der = CertificateDer::from_pem_slice(leaf.cert.as_bytes()).unwrap();
        let (_, c) = x509_parser::parse_x509_certificate(&der).unwrap();
        let aki = c
            .extensions()
            .iter()
            .find_map(|e| match e.parsed_extension() {
                x509_parser::extensions::ParsedExtension::AuthorityKeyIdentifier(a) => a.key_identifier.clone(),
                _ => None,
            })
            .expect("the leaf carries an authority key identifier");
        let ca_der = CertificateDer::from_pem_slice(b.cert.as_bytes()).unwrap();
        let (_, ca) = x509_parser::parse_x509_certificate(&ca_der).unwrap();
        let ski = ca
            .extensions()
            .iter()
            .find_map(|e| match e.parsed_extension() {
                x509_parser::extensions::ParsedExtension::SubjectKeyIdentifier(k) => Some(k.0.to_vec()),
                _ => None,
            })
            .expect("the CA carries a subject key identifier");
        assert_eq!(aki.0, ski.as_slice());
        assert_eq!(c.issuer().to_string(), subject(&b));

        // With both CAs trusted (a rotation), the leaf verifies, and only against its own CA.
        let both = format!("{}{}", a.cert, b.cert);
        let svc = "kruise-webhook-service.kruise-system.svc";
        assert!(verifies(both.as_bytes(), leaf.cert.as_bytes(), svc, now));
        assert!(!verifies(a.cert.as_bytes(), leaf.cert.as_bytes(), svc, now));
        assert_eq!(signing_ca(both.as_bytes(), leaf.cert.as_bytes(), svc, now), Some(fingerprint(&ca_der)));
    }

    #[test]
    fn infos_of_what_was_issued() {
        let now = SystemTime::now();
        let ca = new_ca(now, DAY * 10).unwrap();
        let info = ca_info(&ca).unwrap();
        assert!(info.not_before < now && info.not_after > now + DAY * 9);
        assert_eq!(fingerprints(ca.cert.as_bytes()), vec![info.fingerprint.clone()]);

        let leaf = issue_leaf(&ca, &names(), now, DAY).unwrap();
        let svc = &["kruise-webhook-service.kruise-system.svc".to_string()][..];
        let l = leaf_info(&leaf, &[ca.cert.as_str()], svc).unwrap();
        assert_eq!(l.issuer.as_deref(), Some(info.fingerprint.as_str()));
        assert!(l.covers_service);
        let l = leaf_info(&leaf, &[ca.cert.as_str()], &["other.ns.svc".to_string()]).unwrap();
        assert!(!l.covers_service);
        assert_eq!(l.issuer.as_deref(), Some(info.fingerprint.as_str()), "the issuer does not depend on the name");
        // Every required name must be there: the webhook Service's alone is not enough when the
        // conversion Service is required too.
        let both = [
            "kruise-webhook-service.kruise-system.svc".to_string(),
            "kruise-conversion-service.kruise-system.svc".to_string(),
        ];
        assert!(!leaf_info(&leaf, &[ca.cert.as_str()], &both).unwrap().covers_service);
        let both_names = serving_names(&["kruise-webhook-service", "kruise-conversion-service"], "kruise-system", &[]);
        let leaf_of_both = issue_leaf(&ca, &both_names, now, DAY).unwrap();
        assert!(leaf_info(&leaf_of_both, &[ca.cert.as_str()], &both).unwrap().covers_service);
        let other = new_ca(now, DAY).unwrap();
        assert_eq!(leaf_info(&leaf, &[other.cert.as_str()], svc).unwrap().issuer, None);

        // A leaf is not a CA; a key of another certificate makes neither usable.
        assert_eq!(ca_info(&leaf), None);
        assert_eq!(ca_info(&Pair { cert: ca.cert.clone(), key: other.key.clone() }), None);
        assert_eq!(leaf_info(&Pair { cert: leaf.cert.clone(), key: ca.key.clone() }, &[ca.cert.as_str()], svc), None);
        assert!(matches!(
            issue_leaf(&Pair { cert: ca.cert.clone(), key: other.key.clone() }, &names(), now, DAY),
            Err(IssueError::CaKey(_))
        ));
    }

    #[test]
    fn short_lifetimes_keep_their_meaning_and_leaves_end_with_their_ca() {
        let now = SystemTime::now();
        let ca = new_ca(now, Duration::from_secs(60)).unwrap();
        let info = ca_info(&ca).unwrap();
        // Backdated by a tenth of the lifetime (6 s), not by an hour.
        assert!(now.duration_since(info.not_before).unwrap() <= Duration::from_secs(7));
        let leaf = issue_leaf(&ca, &names(), now, Duration::from_secs(600)).unwrap();
        let l =
            leaf_info(&leaf, &[ca.cert.as_str()], &["kruise-webhook-service.kruise-system.svc".to_string()]).unwrap();
        assert!(l.not_after <= info.not_after);
    }

    #[test]
    fn der_lengths() {
        assert_eq!(der_tlv(0x04, &[1, 2]), vec![0x04, 2, 1, 2]);
        let long = vec![0u8; 300];
        assert_eq!(&der_tlv(0x04, &long)[..4], &[0x04, 0x82, 0x01, 0x2c]);
        let mid = vec![0u8; 200];
        assert_eq!(&der_tlv(0x04, &mid)[..3], &[0x04, 0x81, 200]);
    }
}
