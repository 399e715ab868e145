//! Webhook certificates (spec §8.4, issue 10 item 3): `kruise certs` writes files for a
//! standalone server ([`files`]); in a cluster, the leader keeps Secret `kruise-webhook-certs` and
//! every `caBundle` as [`crate::core::certs::next_step`] decides ([`lead`]), and every replica
//! serves what the Secret holds, reports what it serves and checks its own endpoint
//! ([`follow`]).
//!
//! - [`issue`]: issuing and reading certificates (distinct CA subjects, authority key ids);
//! - [`secret`]: the Secret's key names (kruise's, plus ours) and what it holds;
//! - [`publish`]: what every `caBundle` trusts, and server-side apply of `caBundle` alone;
//! - [`report`]: each replica's report of the CA it serves (a Lease per replica);
//! - [`manage`]: the leader's loop (observe, decide, write once, repeat);
//! - [`follow`]: the replica's loop (watch the Secret, swap the certificate, readiness).

pub mod files;
pub mod follow;
pub mod issue;
pub mod manage;
pub mod publish;
pub mod report;
pub mod secret;

use std::net::SocketAddr;
use std::time::Duration;

pub use files::{CA_LIFETIME, CertError, CertRequest, LEAF_LIFETIME, Outcome, RENEW_BEFORE, ensure, verifies};
pub use follow::follow;
pub use manage::lead;
pub use secret::Mode;

use crate::core::certs::Lifetimes;

/// The certificate Secret's name (kruise's `SECRET_NAME` default).
pub const SECRET_NAME: &str = "kruise-webhook-certs";
/// The webhook Service (kruise's `SERVICE_NAME` default).
pub const SERVICE_NAME: &str = "kruise-webhook-service";
/// The Service the CRDs' conversion webhooks call (ours; kruise uses the webhook Service). It
/// publishes replicas that are not ready yet (`publishNotReadyAddresses`): a replica becomes
/// ready only once its view of the cluster has listed SidecarSets, and that list needs
/// `/convert` when SidecarSets are stored in both versions — through the webhook Service, whose
/// endpoints are ready replicas only, no replica would ever get there (issue 15).
pub const CONVERSION_SERVICE_NAME: &str = "kruise-conversion-service";
/// The mutating webhook configuration.
pub const MUTATING_CONFIGURATION: &str = "kruise-mutating-webhook-configuration";
/// The validating webhook configuration.
pub const VALIDATING_CONFIGURATION: &str = "kruise-validating-webhook-configuration";
/// The API groups whose CRDs' conversion webhooks get the bundle (kruise's).
pub const CRD_GROUPS: [&str; 2] = ["apps.kruise.io", "policy.kruise.io"];
/// The field manager of every `caBundle` write (and nothing else).
pub const FIELD_MANAGER: &str = "kruise-webhook-certs";

/// What certificate management works on.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The manager namespace (where the Secret, the Service and the replica reports live).
    pub namespace: String,
    /// The Secret.
    pub secret: String,
    /// The webhook Service (the serving certificate names `<service>.<namespace>.svc`).
    pub service: String,
    /// The conversion Service (named by the serving certificate too).
    pub conversion_service: String,
    /// Extra SANs of the serving certificate.
    pub hosts: Vec<String>,
    /// Webhook configurations whose every webhook gets `caBundle`.
    pub mutating: String,
    /// Idem.
    pub validating: String,
    /// CRDs of these groups with `spec.conversion.strategy: Webhook` get `caBundle` too.
    pub crd_groups: Vec<String>,
    /// This replica (its report is named after it).
    pub identity: String,
    /// Who writes the Secret.
    pub mode: Mode,
    /// Lifetimes of what is issued.
    pub lifetimes: Lifetimes,
    /// How often the leader observes and replicas report and self-check.
    pub poll: Duration,
    /// How long a replica's report counts as live without renewal.
    pub report_ttl: Duration,
    /// How long the leader lets a `caBundle` write reach the apiserver's webhook clients before
    /// moving on (the apiserver reads configurations through an informer).
    pub settle: Duration,
    /// This replica's HTTPS address (its `/healthz` is the self-check; an unspecified address
    /// is reached on loopback).
    pub webhook_addr: SocketAddr,
}

impl Settings {
    /// kruise's names in `namespace`, for replica `identity` serving on `webhook_addr`.
    pub fn new(namespace: &str, identity: &str, webhook_addr: SocketAddr) -> Self {
        Settings {
            namespace: namespace.to_string(),
            secret: SECRET_NAME.to_string(),
            service: SERVICE_NAME.to_string(),
            conversion_service: CONVERSION_SERVICE_NAME.to_string(),
            hosts: Vec::new(),
            mutating: MUTATING_CONFIGURATION.to_string(),
            validating: VALIDATING_CONFIGURATION.to_string(),
            crd_groups: CRD_GROUPS.iter().map(|g| g.to_string()).collect(),
            identity: identity.to_string(),
            mode: Mode::SelfManaged,
            lifetimes: Lifetimes::default(),
            poll: Duration::from_secs(5),
            report_ttl: Duration::from_secs(30),
            settle: Duration::from_secs(2),
            webhook_addr,
        }
    }

    /// `<service>.<namespace>.svc`: the name the apiserver verifies.
    pub fn service_dns_name(&self) -> String {
        issue::service_dns_name(&self.service, &self.namespace)
    }

    /// `<conversion service>.<namespace>.svc`: the name the apiserver verifies when it converts.
    pub fn conversion_dns_name(&self) -> String {
        issue::service_dns_name(&self.conversion_service, &self.namespace)
    }

    /// The names a managed serving certificate must carry (one per Service the apiserver calls).
    pub fn required_names(&self) -> Vec<String> {
        vec![self.service_dns_name(), self.conversion_dns_name()]
    }

    /// Every SAN of the serving certificate.
    pub fn names(&self) -> Vec<String> {
        issue::serving_names(&[&self.service, &self.conversion_service], &self.namespace, &self.hosts)
    }
}
