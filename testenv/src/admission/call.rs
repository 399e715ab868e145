//! One webhook call the way kube-apiserver makes it: HTTPS over HTTP/1.1 (ALPN pinned), TLS server
//! name `<service>.<namespace>.svc` (or the URL's host) verified against the webhook's `caBundle`,
//! `POST <path>?timeout=<N>s` with an AdmissionReview v1, the whole call bounded by
//! `timeoutSeconds`, and the answer checked like the apiserver checks it (200, `AdmissionReview`
//! v1, matching uid, `patch`/`patchType` both or neither).

use super::{Admission, ServiceRef};
use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Where and how to reach a webhook.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The address to connect to.
    pub addr: SocketAddr,
    /// TLS server name (SNI and certificate check).
    pub server_name: String,
    /// Port shown in the URL.
    pub port: u16,
    /// Request path.
    pub path: String,
    /// PEM bytes of the CA bundle.
    pub ca_bundle: Vec<u8>,
}

impl Endpoint {
    /// The URL as kube-apiserver prints it in errors.
    pub fn url(&self, timeout: Duration) -> String {
        format!("https://{}:{}{}?timeout={}s", self.server_name, self.port, self.path, timeout.as_secs())
    }
}

/// Resolves a webhook's `clientConfig` to an endpoint through the service map (services) or the
/// URL's literal loopback address (urls).
pub fn resolve(adm: &Admission, client_config: &Value) -> Result<Endpoint, String> {
    let ca_bundle = match client_config.get("caBundle").and_then(Value::as_str) {
        Some(b64) => base64::engine::general_purpose::STANDARD
            .decode(b64.trim())
            .map_err(|e| format!("invalid caBundle: {e}"))?,
        None => Vec::new(),
    };
    if let Some(svc) = client_config.get("service") {
        let namespace = svc.get("namespace").and_then(Value::as_str).unwrap_or("");
        let name = svc.get("name").and_then(Value::as_str).unwrap_or("");
        let port = svc.get("port").and_then(Value::as_u64).unwrap_or(443);
        let port = u16::try_from(port).map_err(|_| format!("invalid service port {port}"))?;
        let path = svc.get("path").and_then(Value::as_str).unwrap_or("/").to_string();
        let service = ServiceRef::new(namespace, name, port);
        let addr = adm.services.resolve(&service).ok_or_else(|| {
            format!("service \"{namespace}/{name}\" port {port} has no address in the test environment's service map")
        })?;
        return Ok(Endpoint { addr, server_name: format!("{name}.{namespace}.svc"), port, path, ca_bundle });
    }
    let url = client_config.get("url").and_then(Value::as_str).ok_or("clientConfig has neither service nor url")?;
    let uri: http::Uri = url.parse().map_err(|e| format!("invalid url {url:?}: {e}"))?;
    if uri.scheme_str() != Some("https") {
        return Err(format!("webhook url {url:?} must use https"));
    }
    let host = uri.host().ok_or("webhook url has no host")?.trim_matches(['[', ']']).to_string();
    let port = uri.port_u16().unwrap_or(443);
    let ip = if host == "localhost" {
        std::net::IpAddr::from([127, 0, 0, 1])
    } else {
        host.parse().map_err(|_| {
            format!("webhook url host {host:?} is not an IP address (the harness does not resolve names)")
        })?
    };
    Ok(Endpoint { addr: SocketAddr::new(ip, port), server_name: host, port, path: uri.path().to_string(), ca_bundle })
}

fn tls_config(adm: &Admission, ca_bundle: &[u8]) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut cache = adm.tls_configs.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(cfg) = cache.get(ca_bundle) {
        return Ok(cfg.clone());
    }
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_bundle) {
        let cert = cert.map_err(|e| format!("invalid caBundle PEM: {e}"))?;
        roots.add(cert).map_err(|e| format!("invalid caBundle certificate: {e}"))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    let cfg = Arc::new(cfg);
    cache.insert(ca_bundle.to_vec(), cfg.clone());
    Ok(cfg)
}

/// Posts the review and returns the raw response body of a 200 answer.
async fn post(adm: &Admission, ep: &Endpoint, timeout: Duration, body: Vec<u8>) -> Result<Bytes, String> {
    let cfg = tls_config(adm, &ep.ca_bundle)?;
    let tcp = tokio::net::TcpStream::connect(ep.addr).await.map_err(|e| format!("dial tcp {}: {e}", ep.addr))?;
    let name = ServerName::try_from(ep.server_name.clone()).map_err(|e| format!("invalid server name: {e}"))?;
    let tls = tokio_rustls::TlsConnector::from(cfg)
        .connect(name, tcp)
        .await
        .map_err(|e| format!("tls: failed to verify certificate: {e}"))?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        // The connection ends when the response is read or the call is abandoned.
        let _ = conn.await;
    });
    let req = http::Request::post(format!("{}?timeout={}s", ep.path, timeout.as_secs()))
        .header(http::header::HOST, format!("{}:{}", ep.server_name, ep.port))
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| e.to_string())?;
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status();
    let bytes = resp.into_body().collect().await.map_err(|e| e.to_string())?.to_bytes();
    if status != http::StatusCode::OK {
        let text = String::from_utf8_lossy(&bytes);
        let excerpt: String = text.chars().take(200).collect();
        return Err(format!("the server responded with status {}: {excerpt}", status.as_u16()));
    }
    Ok(bytes)
}

/// A webhook's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// `allowed`.
    pub allowed: bool,
    /// `status` (for denials).
    pub status: Value,
    /// The decoded JSON patch, if any.
    pub patch: Option<json_patch::Patch>,
    /// `warnings`.
    pub warnings: Vec<String>,
}

/// Calls the webhook; `Err` is a call failure (the failure policy decides what it means).
pub async fn call(
    adm: &Admission,
    ep: &Endpoint,
    timeout: Duration,
    review: &Value,
    uid: &str,
) -> Result<Verdict, String> {
    let url = ep.url(timeout);
    let body = serde_json::to_vec(review).map_err(|e| e.to_string())?;
    let bytes = match tokio::time::timeout(timeout, post(adm, ep, timeout, body)).await {
        Err(_) => return Err(format!("failed to call webhook: Post \"{url}\": context deadline exceeded")),
        Ok(Err(e)) => return Err(format!("failed to call webhook: Post \"{url}\": {e}")),
        Ok(Ok(b)) => b,
    };
    parse_response(&bytes, uid)
}

/// Checks and decodes an AdmissionReview answer.
pub fn parse_response(bytes: &[u8], uid: &str) -> Result<Verdict, String> {
    let review: Value = serde_json::from_slice(bytes).map_err(|e| format!("received invalid webhook response: {e}"))?;
    let api_version = review.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = review.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {api_version}, Kind={kind}"
        ));
    }
    let resp = review.get("response").ok_or("webhook response was absent")?;
    let got_uid = resp.get("uid").and_then(Value::as_str).unwrap_or("");
    if got_uid != uid {
        return Err(format!("expected response.uid=\"{uid}\", got \"{got_uid}\""));
    }
    let allowed = resp.get("allowed").and_then(Value::as_bool).unwrap_or(false);
    let patch_type = resp.get("patchType").and_then(Value::as_str);
    let raw = resp.get("patch").filter(|p| !p.is_null());
    let patch = match (raw, patch_type) {
        (None, None) => None,
        (Some(_), None) => return Err("webhook returned response.patch but not response.patchType".into()),
        (None, Some(_)) => return Err("webhook returned response.patchType but not response.patch".into()),
        (Some(_), Some(t)) if t != "JSONPatch" => {
            return Err(format!("webhook returned invalid response.patchType of {t:?}"));
        }
        (Some(p), Some(_)) => Some(decode_patch(p)?),
    };
    let warnings = resp
        .get("warnings")
        .and_then(Value::as_array)
        .map(|w| w.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    Ok(Verdict { allowed, status: resp.get("status").cloned().unwrap_or(Value::Null), patch, warnings })
}

/// Go's `[]byte` JSON form is a base64 string; a JSON array of byte values also decodes.
fn decode_patch(p: &Value) -> Result<json_patch::Patch, String> {
    let bytes: Vec<u8> = match p {
        Value::String(s) => base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(|e| format!("response.patch is not base64: {e}"))?,
        Value::Array(a) => a
            .iter()
            .map(|b| b.as_u64().and_then(|n| u8::try_from(n).ok()).ok_or("response.patch array holds a non-byte"))
            .collect::<Result<_, _>>()?,
        _ => return Err("response.patch must be a base64 string".into()),
    };
    serde_json::from_slice(&bytes).map_err(|e| format!("response.patch is not a JSON patch: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn response_checks() {
        let ok = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": "u", "allowed": true, "warnings": ["w"],
                "patchType": "JSONPatch",
                "patch": base64::engine::general_purpose::STANDARD.encode(br#"[{"op":"add","path":"/a","value":1}]"#)}});
        let v = parse_response(&serde_json::to_vec(&ok).unwrap(), "u").unwrap();
        assert!(v.allowed && v.patch.is_some());
        assert_eq!(v.warnings, ["w"]);
        assert!(parse_response(&serde_json::to_vec(&ok).unwrap(), "other").unwrap_err().contains("response.uid"));
        let bytes_array = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": "u", "allowed": true, "patchType": "JSONPatch", "patch": b"[]".to_vec()}});
        assert!(parse_response(&serde_json::to_vec(&bytes_array).unwrap(), "u").is_ok());
        let half = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": "u", "allowed": true, "patch": "W10="}});
        assert!(parse_response(&serde_json::to_vec(&half).unwrap(), "u").is_err());
        let v1beta1 = json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "response": {"uid": "u", "allowed": true}});
        assert!(parse_response(&serde_json::to_vec(&v1beta1).unwrap(), "u").is_err());
    }

    /// What a kube-rs webhook answers (kube-core's AdmissionResponse) is accepted as it is.
    #[test]
    fn kube_core_responses_are_understood() {
        use kube::core::DynamicObject;
        use kube::core::admission::{AdmissionRequest, AdmissionResponse, AdmissionReview};
        let review = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
            "uid": "u1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "operation": "CREATE", "userInfo": {}, "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}},
            "dryRun": false}});
        let review: AdmissionReview<DynamicObject> = serde_json::from_value(review).unwrap();
        let req: AdmissionRequest<DynamicObject> = review.try_into().unwrap();
        let patch: json_patch::Patch =
            serde_json::from_value(json!([{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}])).unwrap();
        let resp = AdmissionResponse::from(&req).with_patch(patch.clone()).unwrap().into_review();
        let v = parse_response(&serde_json::to_vec(&resp).unwrap(), "u1").unwrap();
        assert!(v.allowed);
        assert_eq!(v.patch, Some(patch));
        let denied = AdmissionResponse::from(&req).deny("no").into_review();
        let v = parse_response(&serde_json::to_vec(&denied).unwrap(), "u1").unwrap();
        assert!(!v.allowed);
        assert_eq!(v.status["message"], "no");
    }

    #[test]
    fn resolves_services_through_the_map() {
        let adm = Admission::default();
        let cc =
            json!({"service": {"namespace": "kruise-system", "name": "kruise-webhook-service", "path": "/validate"}});
        assert!(resolve(&adm, &cc).unwrap_err().contains("service map"));
        adm.services
            .insert(ServiceRef::new("kruise-system", "kruise-webhook-service", 443), "127.0.0.1:9443".parse().unwrap());
        let ep = resolve(&adm, &cc).unwrap();
        assert_eq!(ep.server_name, "kruise-webhook-service.kruise-system.svc");
        assert_eq!(
            ep.url(Duration::from_secs(10)),
            "https://kruise-webhook-service.kruise-system.svc:443/validate?timeout=10s"
        );
        let url = resolve(&adm, &json!({"url": "https://127.0.0.1:8443/m"})).unwrap();
        assert_eq!(url.addr, "127.0.0.1:8443".parse().unwrap());
    }
}
