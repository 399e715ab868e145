//! Shared test helpers: CRD fixtures, a dynamic CloneSet API, event-driven waits, and a tiny
//! HTTPS admission webhook server with its own CA whose serving certificate names
//! `<service>.<namespace>.svc`, like a webhook deployed in a cluster.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use kruise_testenv::TestEnv;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use rustls_pki_types::pem::PemObject;
use serde_json::{Value, json};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Generous bound for anything event-driven on a loaded 2-core machine.
pub const WAIT: Duration = Duration::from_secs(30);

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

pub async fn env_with_crd() -> TestEnv {
    let env = TestEnv::start().await.unwrap();
    env.apply_path(fixture("cloneset-crd.yaml")).await.unwrap();
    env
}

pub fn cloneset_resource(version: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("apps.kruise.io", version, "CloneSet"), "clonesets")
}

pub fn clonesets(client: &kube::Client, ns: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), ns, &cloneset_resource("v1alpha1"))
}

pub fn cloneset(name: &str, replicas: i64) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1",
        "kind": "CloneSet",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}}},
    }))
    .unwrap()
}

/// Awaits a future with the generous bound, failing the test with `what` on timeout.
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, fut).await.unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

pub fn api_error(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

type Handler = dyn Fn(&str, &Value) -> Value + Send + Sync;

/// An HTTPS admission webhook for tests.
pub struct TestWebhook {
    pub addr: SocketAddr,
    pub ca_pem: String,
    /// Every (path, request) received.
    pub requests: Arc<Mutex<Vec<(String, Value)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TestWebhook {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub struct Certs {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

/// A CA and a serving certificate for `dns_name`.
pub fn certs(dns_name: &str) -> Certs {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "testenv webhook CA");
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec![dns_name.to_string()]).unwrap().signed_by(&key, &ca).unwrap();
    Certs { ca_pem: ca.pem(), cert_pem: cert.pem(), key_pem: key.serialize_pem() }
}

impl TestWebhook {
    /// Serves `handler(path, request) -> response fields` (`allowed`, `status`, `patch` as a JSON
    /// patch value, `warnings`; the uid is filled in) for the service `name.namespace.svc`.
    pub async fn start(
        namespace: &str,
        name: &str,
        handler: impl Fn(&str, &Value) -> Value + Send + Sync + 'static,
    ) -> Self {
        let certs = certs(&format!("{name}.{namespace}.svc"));
        let chain = rustls_pki_types::CertificateDer::pem_slice_iter(certs.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = rustls_pki_types::PrivateKeyDer::from_pem_slice(certs.key_pem.as_bytes()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
        let handler: Arc<Handler> = Arc::new(handler);
        let seen = requests.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else { continue };
                let acceptor = acceptor.clone();
                let handler = handler.clone();
                let seen = seen.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else { return };
                    let service = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let handler = handler.clone();
                        let seen = seen.clone();
                        async move {
                            let path = req.uri().path().to_string();
                            let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                            let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                            let request = review.get("request").cloned().unwrap_or(Value::Null);
                            seen.lock().unwrap().push((path.clone(), request.clone()));
                            let h = handler.clone();
                            let req_for_handler = request.clone();
                            let p = path.clone();
                            let mut response =
                                tokio::task::spawn_blocking(move || h(&p, &req_for_handler)).await.unwrap();
                            response["uid"] = request["uid"].clone();
                            if let Some(patch) = response.get("patch").cloned() {
                                use base64::Engine;
                                response["patch"] = json!(
                                    base64::engine::general_purpose::STANDARD
                                        .encode(serde_json::to_vec(&patch).unwrap())
                                );
                                response["patchType"] = json!("JSONPatch");
                            }
                            let out = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response});
                            Ok::<_, std::convert::Infallible>(
                                http::Response::builder()
                                    .header("content-type", "application/json")
                                    .body(Full::new(Bytes::from(serde_json::to_vec(&out).unwrap())))
                                    .unwrap(),
                            )
                        }
                    });
                    let _ =
                        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tls), service).await;
                });
            }
        });
        Self { addr, ca_pem: certs.ca_pem, requests, task }
    }

    /// Requests received on `path`.
    pub fn requests_on(&self, path: &str) -> Vec<Value> {
        self.requests.lock().unwrap().iter().filter(|(p, _)| p == path).map(|(_, r)| r.clone()).collect()
    }
}

/// A webhook configuration document.
pub fn webhook_config(kind: &str, config_name: &str, hooks: Vec<Value>) -> String {
    serde_yaml_ng::to_string(&json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": config_name},
        "webhooks": hooks,
    }))
    .unwrap()
}

/// One webhook entry calling `svc-ns/svc-name:443<path>`.
pub fn hook(name: &str, path: &str, rules: Value, extra: Value) -> Value {
    let mut h = json!({
        "name": name,
        "clientConfig": {"service": {"namespace": "webhooks", "name": "admission", "path": path}},
        "rules": rules,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "failurePolicy": "Fail",
        "timeoutSeconds": 10,
    });
    if let (Some(m), Value::Object(e)) = (h.as_object_mut(), extra) {
        m.extend(e);
    }
    h
}

pub fn rule(groups: &[&str], versions: &[&str], resources: &[&str], operations: &[&str]) -> Value {
    json!([{"apiGroups": groups, "apiVersions": versions, "resources": resources, "operations": operations}])
}
