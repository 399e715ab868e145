//! Every replica's certificate loop (spec §8.4–8.5, issue 10 item 3): watch the certificate
//! Secret and serve its leaf from the next handshake on (no restart), report which CA signed what
//! it serves ([`super::report`]), and keep two readiness conditions:
//! - [`CERTIFICATE`]: a valid pair from the Secret is loaded (a new leaf that does not verify
//!   against the Secret's bundle is not loaded; the previous one keeps serving);
//! - [`SELF_CHECK`]: an HTTPS `GET /healthz` of this replica's own address, with SNI
//!   `<service>.<namespace>.svc`, verifies against the bundle the Secret says `caBundle` holds
//!   (kruise's readiness check, spec §8.5).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::watch_object;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

use super::secret::Material;
use super::{Settings, issue, report};
use crate::server::Readiness;
use crate::server::tls::CertStore;

/// Readiness condition: a valid certificate from the Secret is served.
pub const CERTIFICATE: &str = "certificate";
/// Readiness condition: this replica's own endpoint verifies against the published bundle.
pub const SELF_CHECK: &str = "self-check";

/// Follows the certificate Secret into `store` and keeps [`CERTIFICATE`] and [`SELF_CHECK`] in
/// `readiness` until `token` is cancelled; then withdraws this replica's report.
pub async fn follow(
    client: kube::Client,
    settings: Arc<Settings>,
    store: Arc<CertStore>,
    readiness: Arc<Readiness>,
    token: CancellationToken,
) {
    let api: Api<Secret> = Api::namespaced(client.clone(), &settings.namespace);
    let secrets = watch_object(api, &settings.secret).default_backoff();
    futures::pin_mut!(secrets);
    let mut replica = Replica { client, settings, store, readiness, material: None };
    replica.readiness.set(CERTIFICATE, Err(format!("waiting for Secret {}", replica.secret_name())));
    replica.readiness.set(SELF_CHECK, Err("no certificate yet".into()));
    let mut tick = tokio::time::interval(replica.settings.poll);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = token.cancelled() => break,
            event = secrets.next() => match event {
                Some(Ok(secret)) => {
                    if replica.observe(secret.as_ref()) {
                        replica.report_and_check().await;
                    }
                }
                Some(Err(e)) => {
                    tracing::warn!(error = %e, secret = %replica.secret_name(), "watching the certificate Secret");
                    if !replica.store.is_loaded() {
                        replica.readiness.set(CERTIFICATE, Err(format!("cannot watch Secret {}: {e}", replica.secret_name())));
                    }
                }
                None => break,
            },
            _ = tick.tick() => replica.report_and_check().await,
        }
    }
    match tokio::time::timeout(Duration::from_secs(2), report::withdraw(&replica.client, &replica.settings)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!(error = %e, "could not withdraw this replica's certificate report"),
        Err(_) => tracing::warn!("withdrawing this replica's certificate report timed out"),
    }
}

struct Replica {
    client: kube::Client,
    settings: Arc<Settings>,
    store: Arc<CertStore>,
    readiness: Arc<Readiness>,
    material: Option<Material>,
}

impl Replica {
    fn secret_name(&self) -> String {
        format!("{}/{}", self.settings.namespace, self.settings.secret)
    }

    /// Takes in the Secret as it is now; `true` when a new certificate is served.
    fn observe(&mut self, secret: Option<&Secret>) -> bool {
        let Some(secret) = secret else {
            self.material = None;
            if !self.store.is_loaded() {
                self.readiness.set(CERTIFICATE, Err(format!("Secret {} does not exist yet", self.secret_name())));
            }
            return false;
        };
        let m = Material::from_secret(secret, self.settings.mode);
        let service = self.settings.service_dns_name();
        let result = m.leaf_verifies(&service, SystemTime::now()).and_then(|()| {
            let leaf = m.leaf.as_ref().ok_or_else(|| "no serving certificate".to_string())?;
            self.store
                .replace(leaf.cert.as_bytes(), leaf.key.as_bytes(), &self.secret_name())
                .map_err(|e| e.to_string())
        });
        self.material = Some(m);
        match result {
            Ok(changed) => {
                if changed {
                    tracing::info!(secret = %self.secret_name(), "serving a new webhook certificate");
                    let conversion = self.settings.conversion_dns_name();
                    let material = self.material.as_ref();
                    if material.is_some_and(|m| m.leaf_verifies(&conversion, SystemTime::now()).is_err()) {
                        // Managed mode renews such a leaf; external certificates are the user's.
                        tracing::warn!(
                            secret = %self.secret_name(),
                            "the serving certificate does not name {conversion}: the apiserver cannot convert kruise \
                             objects between API versions until it does (add it to the certificate's DNS names)"
                        );
                    }
                }
                self.readiness.set(CERTIFICATE, Ok(()));
                changed
            }
            Err(why) => {
                if self.store.is_loaded() {
                    tracing::warn!(why = %why, "the certificate Secret changed but its certificate cannot be used; still serving the previous one");
                } else {
                    self.readiness.set(CERTIFICATE, Err(format!("Secret {}: {why}", self.secret_name())));
                }
                false
            }
        }
    }

    /// Every CA the Secret knows of (bundle, current, next), PEM.
    fn known_cas(&self) -> String {
        let Some(m) = &self.material else { return String::new() };
        let mut pem = m.bundle_pem().unwrap_or_default();
        for ca in [&m.ca, &m.next_ca].into_iter().flatten() {
            pem.push_str(&ca.cert);
        }
        pem
    }

    async fn report_and_check(&mut self) {
        let now = SystemTime::now();
        let service = self.settings.service_dns_name();
        let serving = self.store.chain_pem();
        let serving_ca = if serving.is_empty() {
            None
        } else {
            issue::signing_ca(self.known_cas().as_bytes(), &serving, &service, now)
        };
        if let Err(e) = report::report(&self.client, &self.settings, serving_ca.as_deref(), now).await {
            tracing::warn!(error = %e, "could not report the certificate this replica serves");
        }
        let bundle = self.material.as_ref().and_then(Material::bundle_pem).unwrap_or_default();
        let state = if !self.store.is_loaded() {
            Err("no certificate yet".to_string())
        } else {
            self_check(self.settings.webhook_addr, &service, bundle.as_bytes()).await
        };
        self.readiness.set(SELF_CHECK, state);
    }
}

/// `GET https://<addr>/healthz` with SNI `server_name`, trusting only `bundle_pem`; `Ok` on a 200.
pub async fn self_check(addr: SocketAddr, server_name: &str, bundle_pem: &[u8]) -> Result<(), String> {
    let mut roots = rustls::RootCertStore::empty();
    for ca in issue::certificates(bundle_pem) {
        roots.add(ca).map_err(|e| format!("the published bundle holds an unusable CA: {e}"))?;
    }
    if roots.is_empty() {
        return Err("no CA is published yet".into());
    }
    let config = rustls::ClientConfig::builder_with_provider(crate::server::tls::provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = ServerName::try_from(server_name.to_string()).map_err(|e| e.to_string())?;
    let target = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), addr.port()),
        IpAddr::V6(ip) if ip.is_unspecified() => SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), addr.port()),
        _ => addr,
    };
    let check = async {
        let tcp = tokio::net::TcpStream::connect(target).await.map_err(|e| format!("connect {target}: {e}"))?;
        let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config))
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS with {target} as {server_name}: {e}"))?;
        let request = format!("GET /healthz HTTP/1.1\r\nHost: {server_name}\r\nConnection: close\r\n\r\n");
        tls.write_all(request.as_bytes()).await.map_err(|e| e.to_string())?;
        let mut head = [0u8; 12];
        tls.read_exact(&mut head).await.map_err(|e| format!("reading the answer: {e}"))?;
        if head.starts_with(b"HTTP/1.1 200") {
            Ok(())
        } else {
            Err(format!("/healthz answered {:?}", String::from_utf8_lossy(&head)))
        }
    };
    tokio::time::timeout(Duration::from_secs(5), check).await.map_err(|_| "timed out".to_string())?
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::{ServeOptions, start_with};

    #[tokio::test]
    async fn the_self_check_verifies_against_the_given_bundle_only() {
        let now = SystemTime::now();
        let day = Duration::from_secs(86400);
        let ca = issue::new_ca(now, day).unwrap();
        let other = issue::new_ca(now, day).unwrap();
        let names = issue::service_names("kruise-webhook-service", "kruise-system", &[]);
        let leaf = issue::issue_leaf(&ca, &names, now, day).unwrap();
        let store = Arc::new(CertStore::from_pem(leaf.cert.as_bytes(), leaf.key.as_bytes(), "test").unwrap());
        let app = axum::Router::new().route("/healthz", axum::routing::get(|| async { "ok" }));
        let mut opts = ServeOptions::new(([127, 0, 0, 1], 0).into(), ([127, 0, 0, 1], 0).into(), Default::default());
        opts.shutdown_delay = Duration::ZERO;
        let server = start_with(opts, store, Readiness::new(&[]), app, crate::metrics::Metrics::new()).await.unwrap();
        let svc = "kruise-webhook-service.kruise-system.svc";
        let unspecified: SocketAddr = ([0, 0, 0, 0], server.addr.port()).into();

        assert_eq!(self_check(server.addr, svc, ca.cert.as_bytes()).await, Ok(()));
        assert_eq!(self_check(unspecified, svc, ca.cert.as_bytes()).await, Ok(()), "0.0.0.0 is checked on loopback");
        let both = format!("{}{}", other.cert, ca.cert);
        assert_eq!(self_check(server.addr, svc, both.as_bytes()).await, Ok(()), "a rotation's bundle");
        let err = self_check(server.addr, svc, other.cert.as_bytes()).await.unwrap_err();
        assert!(err.contains("TLS"), "{err}");
        assert!(self_check(server.addr, "other.kruise-system.svc", ca.cert.as_bytes()).await.is_err());
        assert_eq!(self_check(server.addr, svc, b"").await, Err("no CA is published yet".to_string()));
        server.shutdown();
        server.wait().await;
    }
}
