//! Reaching a webhook server the way a cluster reaches a pod. The API server refuses loopback
//! endpoint addresses, so a server under test binds a loopback address `127.18.X.Y` and is
//! published in an EndpointSlice of its Service as the pod address `198.18.X.Y`; the control
//! plane's service resolver (testenv/controlplane/resolver.go) picks a ready endpoint exactly as
//! production's does and dials `198.18.X.Y` at `127.18.X.Y`. TLS names `<service>.<namespace>.svc`.

use crate::{Error, manifests};
use base64::Engine;
use serde_json::{Value, json};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::Path;

/// The label EndpointSlices published here carry as `endpointslice.kubernetes.io/managed-by`.
pub const MANAGED_BY: &str = "testenv.kruise.io";

/// A "pod address" for a server under test: it binds [`Self::bind`], the cluster reaches it
/// at [`Self::endpoint`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodAddress {
    /// `127.18.X.Y`: where the server listens.
    pub bind: Ipv4Addr,
    /// `198.18.X.Y`: the address in the EndpointSlice.
    pub endpoint: Ipv4Addr,
}

impl PodAddress {
    /// A free address pair, `port` on it not in use.
    pub fn allocate(port: u16) -> Result<Self, Error> {
        for _ in 0..100 {
            let (x, y) = (fastrand::u8(1..=254), fastrand::u8(1..=254));
            let bind = Ipv4Addr::new(127, 18, x, y);
            if std::net::TcpListener::bind(SocketAddrV4::new(bind, port)).is_ok() {
                return Ok(Self { bind, endpoint: Ipv4Addr::new(198, 18, x, y) });
            }
        }
        Err(Error::io("allocate a pod address", std::io::Error::other("no free 127.18.x.y address")))
    }

    /// `bind:port`.
    pub fn socket(&self, port: u16) -> SocketAddrV4 {
        SocketAddrV4::new(self.bind, port)
    }
}

/// One endpoint of a published Service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    /// The pod address.
    pub address: PodAddress,
    /// Whether it receives traffic (`conditions.ready`).
    pub ready: bool,
}

/// Publishes `endpoints` as the EndpointSlice `<service>-testenv` of Service `namespace/service`
/// (port name `port_name`, target port `port`), replacing what it held.
pub async fn publish_endpoints(
    client: &kube::Client,
    namespace: &str,
    service: &str,
    port_name: &str,
    port: u16,
    endpoints: &[Endpoint],
) -> Result<(), Error> {
    let slice = json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": format!("{service}-testenv"),
            "namespace": namespace,
            "labels": {
                "kubernetes.io/service-name": service,
                "endpointslice.kubernetes.io/managed-by": MANAGED_BY
            }
        },
        "addressType": "IPv4",
        "endpoints": endpoints.iter().map(|e| json!({
            "addresses": [e.address.endpoint.to_string()],
            "conditions": {"ready": e.ready, "serving": e.ready, "terminating": false}
        })).collect::<Vec<_>>(),
        "ports": [{"name": port_name, "port": port, "protocol": "TCP"}]
    });
    manifests::apply(client, slice).await?;
    Ok(())
}

/// Reads webhook configurations (a file or directory), puts `ca_pem` into every webhook's
/// `clientConfig.caBundle`, and applies them.
pub async fn register_webhooks(
    client: &kube::Client,
    path: &Path,
    ca_pem: &[u8],
) -> Result<Vec<manifests::Applied>, Error> {
    let objects = manifests::read_path(path)?.into_iter().map(|o| with_ca_bundle(o, ca_pem)).collect();
    manifests::apply_all(client, objects).await
}

/// `obj` with `caBundle` set in every webhook's clientConfig (other objects unchanged).
pub fn with_ca_bundle(mut obj: Value, ca_pem: &[u8]) -> Value {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    if !matches!(kind, "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration") {
        return obj;
    }
    let bundle = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    if let Some(hooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) {
        for hook in hooks {
            if let Some(cc) = hook.get_mut("clientConfig").and_then(Value::as_object_mut) {
                cc.insert("caBundle".into(), Value::String(bundle.clone()));
            }
        }
    }
    obj
}
