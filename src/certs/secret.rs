//! The certificate Secret's format (spec §8.4): OpenKruise's key names, so an existing kruise
//! installation's Secret is understood and reused — `ca-cert.pem`/`ca-key.pem` (the CA),
//! `cert.pem`/`key.pem` and the same pair again as `tls.crt`/`tls.key` (the serving certificate)
//! — plus keys of our own that kruise ignores: `next-ca-cert.pem`/`next-ca-key.pem` (the CA a
//! rotation moves to) and `ca-bundle.pem` (what `caBundle` must hold; without it, the CA alone,
//! as kruise publishes). In external mode (cert-manager) the keys are `ca.crt`, `tls.crt`,
//! `tls.key`. Parsed into [`crate::core::certs::SecretState`] for the decision.

use std::collections::BTreeMap;
use std::time::SystemTime;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::issue::{self, Pair};
use crate::core::certs::SecretState;

/// kruise's CA certificate key.
pub const CA_CERT: &str = "ca-cert.pem";
/// kruise's CA key.
pub const CA_KEY: &str = "ca-key.pem";
/// kruise's serving certificate key (read first).
pub const CERT: &str = "cert.pem";
/// kruise's serving key (read first).
pub const KEY: &str = "key.pem";
/// The serving certificate again, under the name of `kubernetes.io/tls` Secrets.
pub const TLS_CERT: &str = "tls.crt";
/// The serving key again.
pub const TLS_KEY: &str = "tls.key";
/// Ours: the CA a rotation moves to.
pub const NEXT_CA_CERT: &str = "next-ca-cert.pem";
/// Ours: its key.
pub const NEXT_CA_KEY: &str = "next-ca-key.pem";
/// Ours: the CAs every `caBundle` must hold.
pub const CA_BUNDLE: &str = "ca-bundle.pem";
/// External mode (cert-manager): the CA.
pub const EXTERNAL_CA: &str = "ca.crt";

/// Who writes the Secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// kruise creates, renews and rotates (OpenKruise's default).
    SelfManaged,
    /// Someone else (cert-manager) writes `ca.crt`/`tls.crt`/`tls.key` and injects `caBundle`;
    /// kruise only reads and verifies (OpenKruise's `EnableExternalCerts`).
    External,
}

/// What the Secret holds, as PEM.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Material {
    /// The CA (certificate and key).
    pub ca: Option<Pair>,
    /// The CA a rotation moves to.
    pub next_ca: Option<Pair>,
    /// The serving certificate and key.
    pub leaf: Option<Pair>,
    /// What `caBundle` must hold (PEM).
    pub bundle: Option<String>,
}

fn text(data: &BTreeMap<String, ByteString>, key: &str) -> Option<String> {
    data.get(key).and_then(|v| String::from_utf8(v.0.clone()).ok()).filter(|s| !s.trim().is_empty())
}

fn pair(data: &BTreeMap<String, ByteString>, cert: &[&str], key: &[&str]) -> Option<Pair> {
    let cert = cert.iter().find_map(|k| text(data, k))?;
    let key = key.iter().find_map(|k| text(data, k))?;
    Some(Pair { cert, key })
}

impl Material {
    /// Reads a Secret's data in `mode`'s key names.
    pub fn from_secret(secret: &Secret, mode: Mode) -> Material {
        let empty = BTreeMap::new();
        let data = secret.data.as_ref().unwrap_or(&empty);
        match mode {
            Mode::SelfManaged => Material {
                ca: pair(data, &[CA_CERT], &[CA_KEY]),
                next_ca: pair(data, &[NEXT_CA_CERT], &[NEXT_CA_KEY]),
                leaf: pair(data, &[CERT, TLS_CERT], &[KEY, TLS_KEY]),
                bundle: text(data, CA_BUNDLE),
            },
            Mode::External => Material {
                // The CA's key is not needed (and cert-manager's CA issuer keeps it elsewhere).
                ca: None,
                next_ca: None,
                leaf: pair(data, &[TLS_CERT], &[TLS_KEY]),
                bundle: text(data, EXTERNAL_CA),
            },
        }
    }

    /// The PEM `caBundle` must hold: `ca-bundle.pem`, or else the CA alone (kruise's Secret).
    pub fn bundle_pem(&self) -> Option<String> {
        self.bundle.clone().or_else(|| self.ca.as_ref().map(|c| c.cert.clone()))
    }

    /// Writes our keys into `data` (other keys are kept); keys of an absent part are removed.
    pub fn write_into(&self, data: &mut BTreeMap<String, ByteString>) {
        let mut set = |key: &str, value: Option<&String>| match value {
            Some(v) => {
                data.insert(key.to_string(), ByteString(v.clone().into_bytes()));
            }
            None => {
                data.remove(key);
            }
        };
        set(CA_CERT, self.ca.as_ref().map(|p| &p.cert));
        set(CA_KEY, self.ca.as_ref().map(|p| &p.key));
        set(NEXT_CA_CERT, self.next_ca.as_ref().map(|p| &p.cert));
        set(NEXT_CA_KEY, self.next_ca.as_ref().map(|p| &p.key));
        for (c, k) in [(CERT, KEY), (TLS_CERT, TLS_KEY)] {
            set(c, self.leaf.as_ref().map(|p| &p.cert));
            set(k, self.leaf.as_ref().map(|p| &p.key));
        }
        set(CA_BUNDLE, self.bundle.as_ref());
    }

    /// A new Secret `namespace/name` (type Opaque, as kruise creates it) holding this.
    pub fn to_secret(&self, namespace: &str, name: &str) -> Secret {
        let mut data = BTreeMap::new();
        self.write_into(&mut data);
        Secret {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(namespace.to_string()),
                labels: Some(BTreeMap::from([(
                    "app.kubernetes.io/managed-by".to_string(),
                    "kruise-webhook-certs".to_string(),
                )])),
                ..ObjectMeta::default()
            },
            type_: Some("Opaque".to_string()),
            data: Some(data),
            ..Secret::default()
        }
    }

    /// What the decision needs of it, for a serving certificate that must name every name of
    /// `required`.
    pub fn state(&self, required: &[String]) -> SecretState {
        let ca = self.ca.as_ref().and_then(issue::ca_info);
        let next_ca = self.next_ca.as_ref().and_then(issue::ca_info);
        let cas: Vec<&str> = [&self.ca, &self.next_ca].into_iter().flatten().map(|p| p.cert.as_str()).collect();
        let leaf = self.leaf.as_ref().and_then(|l| issue::leaf_info(l, &cas, required));
        let bundle = self.bundle_pem().map(|b| issue::fingerprints(b.as_bytes())).unwrap_or_default();
        SecretState { ca, next_ca, bundle, leaf }
    }

    /// Whether the serving certificate verifies against the bundle for `service_name` at `now`
    /// (external mode's check, and every replica's before it serves).
    pub fn leaf_verifies(&self, service_name: &str, now: SystemTime) -> Result<(), String> {
        let Some(leaf) = &self.leaf else { return Err("the Secret holds no serving certificate".into()) };
        let Some(bundle) = self.bundle_pem() else { return Err("the Secret holds no CA".into()) };
        if issue::verifies(bundle.as_bytes(), leaf.cert.as_bytes(), service_name, now) {
            Ok(())
        } else {
            Err(format!("the serving certificate does not verify against the CA for {service_name} now"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    const SVC: &str = "kruise-webhook-service.kruise-system.svc";

    fn kruise_secret() -> Secret {
        let yaml = include_str!("../../tests/data/certs/kruise-secret.yaml");
        serde_yaml_ng::from_str(yaml).unwrap()
    }

    #[test]
    fn a_secret_as_kruise_writes_it_is_understood() {
        let secret = kruise_secret();
        let m = Material::from_secret(&secret, Mode::SelfManaged);
        let state = m.state(&[SVC.to_string()]);
        let ca = state.ca.clone().expect("kruise's RSA CA with its PKCS#1 key is usable");
        assert_eq!(state.bundle, vec![ca.fingerprint.clone()], "without ca-bundle.pem the bundle is the CA");
        assert_eq!(state.next_ca, None);
        let leaf = state.leaf.clone().expect("kruise's leaf and PKCS#1 key load");
        assert_eq!(leaf.issuer.as_deref(), Some(ca.fingerprint.as_str()));
        assert!(leaf.covers_service);
        m.leaf_verifies(SVC, SystemTime::now()).unwrap();
        // So nothing is to be done with it, for the default lifetimes.
        let observed = crate::core::certs::Observed {
            secret: Some(state),
            trusted: vec![vec![ca.fingerprint.clone()]],
            replicas: vec![],
            now: SystemTime::now(),
        };
        assert_eq!(
            crate::core::certs::next_step(&observed, crate::core::certs::Lifetimes::default()),
            crate::core::certs::CertStep::Done
        );
        // kruise's leaf names its webhook Service only: where our conversion Service is required
        // too (the managed mode), the leaf is renewed from the same CA, which keeps caBundle.
        let conversion = "kruise-conversion-service.kruise-system.svc".to_string();
        let observed =
            crate::core::certs::Observed { secret: Some(m.state(&[SVC.to_string(), conversion])), ..observed };
        assert_eq!(
            crate::core::certs::next_step(&observed, crate::core::certs::Lifetimes::default()),
            crate::core::certs::CertStep::RenewLeaf("the serving certificate does not name every service")
        );
        // And its RSA CA can sign a renewed leaf.
        let names = issue::service_names("kruise-webhook-service", "kruise-system", &[]);
        let ca_pair = m.ca.clone().unwrap();
        let renewed = issue::issue_leaf(&ca_pair, &names, SystemTime::now(), Duration::from_secs(3600)).unwrap();
        assert!(issue::verifies(ca_pair.cert.as_bytes(), renewed.cert.as_bytes(), SVC, SystemTime::now()));
    }

    #[test]
    fn round_trip_keeps_kruise_keys_and_foreign_ones() {
        let now = SystemTime::now();
        let a = issue::new_ca(now, Duration::from_secs(86400 * 10)).unwrap();
        let b = issue::new_ca(now, Duration::from_secs(86400 * 10)).unwrap();
        let names = issue::service_names("kruise-webhook-service", "kruise-system", &[]);
        let leaf = issue::issue_leaf(&a, &names, now, Duration::from_secs(86400)).unwrap();
        let m = Material {
            ca: Some(a.clone()),
            next_ca: Some(b.clone()),
            leaf: Some(leaf.clone()),
            bundle: Some(format!("{}{}", a.cert, b.cert)),
        };
        let mut secret = m.to_secret("kruise-system", "kruise-webhook-certs");
        assert_eq!(secret.type_.as_deref(), Some("Opaque"));
        let data = secret.data.as_mut().unwrap();
        for key in [CA_CERT, CA_KEY, CERT, KEY, TLS_CERT, TLS_KEY, NEXT_CA_CERT, NEXT_CA_KEY, CA_BUNDLE] {
            assert!(data.contains_key(key), "{key}");
        }
        assert_eq!(data[CERT], data[TLS_CERT]);
        assert_eq!(data[KEY], data[TLS_KEY]);
        data.insert("extra".into(), ByteString(b"kept".to_vec()));
        assert_eq!(Material::from_secret(&secret, Mode::SelfManaged), m);

        // The rotation ends: next-ca keys go, foreign keys stay.
        let done = Material { next_ca: None, bundle: Some(a.cert.clone()), ..m.clone() };
        let mut data = secret.data.clone().unwrap();
        done.write_into(&mut data);
        assert!(!data.contains_key(NEXT_CA_CERT) && !data.contains_key(NEXT_CA_KEY));
        assert_eq!(data["extra"].0, b"kept");
        let state = done.state(&[SVC.to_string()]);
        assert_eq!(state.bundle, issue::fingerprints(a.cert.as_bytes()));
        assert_eq!(state.next_ca, None);
    }

    #[test]
    fn external_secrets_use_cert_managers_keys() {
        let now = SystemTime::now();
        let a = issue::new_ca(now, Duration::from_secs(86400 * 10)).unwrap();
        let names = issue::service_names("kruise-webhook-service", "kruise-system", &[]);
        let leaf = issue::issue_leaf(&a, &names, now, Duration::from_secs(86400)).unwrap();
        let secret = Secret {
            data: Some(BTreeMap::from([
                (EXTERNAL_CA.to_string(), ByteString(a.cert.clone().into_bytes())),
                (TLS_CERT.to_string(), ByteString(leaf.cert.clone().into_bytes())),
                (TLS_KEY.to_string(), ByteString(leaf.key.clone().into_bytes())),
            ])),
            ..Secret::default()
        };
        let m = Material::from_secret(&secret, Mode::External);
        assert_eq!(m.leaf.as_ref(), Some(&leaf));
        assert_eq!(m.bundle_pem().as_deref(), Some(a.cert.as_str()));
        m.leaf_verifies(SVC, now).unwrap();
        assert!(m.leaf_verifies("other.ns.svc", now).is_err());
        // In self-managed key names the same Secret has no CA.
        assert_eq!(Material::from_secret(&secret, Mode::SelfManaged).state(&[SVC.to_string()]).ca, None);
        assert!(Material::default().leaf_verifies(SVC, now).is_err());
    }
}
