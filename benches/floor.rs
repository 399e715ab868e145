//! The Rust floor of `make bench` (issue 16): a bare axum + rustls webhook doing the same
//! simplified injection as the Go baseline (`benches/go-webhook`), to show what the stack itself
//! costs. POST /mutate-pod decodes the AdmissionReview with the Pod typed (kube-core's
//! `AdmissionReview<Pod>` over k8s-openapi, one pass), adds the sample sidecar container (the app
//! containers' mounts shared, LOG_LEVEL transferred, IS_INJECTED=true), a volume and an
//! annotation, and answers a 3-operation JSON patch. TLS via tokio-rustls (ring), HTTP/1.1 via
//! hyper-util, keep-alive; no logging, no metrics, no cluster view.
//!
//! `cargo run --release --example floor -- --addr 127.0.0.1:9444 --cert-dir DIR`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use base64::Engine;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use k8s_openapi::api::core::v1::{
    Container, EmptyDirVolumeSource, EnvVar, Pod, ResourceRequirements, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::core::admission::{AdmissionRequest, AdmissionReview};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde::Serialize;

#[derive(Serialize)]
#[serde(untagged)]
enum Value<'a> {
    Container(Box<Container>),
    Volume(Volume),
    Volumes([Volume; 1]),
    Map(BTreeMap<&'a str, &'a str>),
    Str(&'a str),
}

#[derive(Serialize)]
struct Op<'a> {
    op: &'static str,
    path: String,
    value: Value<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ReviewOut<'a> {
    api_version: &'a str,
    kind: &'static str,
    response: ResponseOut<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ResponseOut<'a> {
    uid: &'a str,
    allowed: bool,
    status: StatusOut,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    patch: Option<String>,
}

#[derive(Serialize)]
struct StatusOut {
    code: u16,
    #[serde(skip_serializing_if = "String::is_empty")]
    message: String,
}

fn sidecar(pod: &Pod) -> Container {
    let mut mounts = vec![VolumeMount {
        name: "sidecar-shared".into(),
        mount_path: "/var/run/sidecar".into(),
        ..Default::default()
    }];
    let mut env = vec![EnvVar { name: "IS_INJECTED".into(), value: Some("true".into()), value_from: None }];
    for app in pod.spec.iter().flat_map(|s| &s.containers) {
        mounts.extend(app.volume_mounts.iter().flatten().cloned());
        if app.name == "web" {
            env.extend(app.env.iter().flatten().filter(|e| e.name == "LOG_LEVEL").cloned());
        }
    }
    Container {
        name: "log-agent".into(),
        image: Some("busybox:1.36".into()),
        command: Some(vec!["sh".into(), "-c".into(), "tail -F /var/log/app/access.log".into()]),
        env: Some(env),
        resources: Some(ResourceRequirements {
            requests: Some([("cpu".into(), Quantity("10m".into())), ("memory".into(), Quantity("16Mi".into()))].into()),
            ..Default::default()
        }),
        volume_mounts: Some(mounts),
        ..Default::default()
    }
}

fn inject(pod: &Pod) -> Vec<Op<'static>> {
    let mut ops =
        vec![Op { op: "add", path: "/spec/containers/0".into(), value: Value::Container(Box::new(sidecar(pod))) }];
    let volume = Volume {
        name: "sidecar-shared".into(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Default::default()
    };
    if pod.spec.as_ref().and_then(|s| s.volumes.as_ref()).is_none_or(Vec::is_empty) {
        ops.push(Op { op: "add", path: "/spec/volumes".into(), value: Value::Volumes([volume]) });
    } else {
        ops.push(Op { op: "add", path: "/spec/volumes/-".into(), value: Value::Volume(volume) });
    }
    const KEY: &str = "kruise.io/sidecarset-injected-list";
    if pod.metadata.annotations.as_ref().is_none_or(BTreeMap::is_empty) {
        ops.push(Op { op: "add", path: "/metadata/annotations".into(), value: Value::Map([(KEY, "sample")].into()) });
    } else {
        let escaped = KEY.replace('~', "~0").replace('/', "~1");
        ops.push(Op { op: "add", path: format!("/metadata/annotations/{escaped}"), value: Value::Str("sample") });
    }
    ops
}

async fn mutate_pod(headers: axum::http::HeaderMap, body: Bytes) -> Response {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json")));
    if !json {
        return (StatusCode::UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json").into_response();
    }
    let review: AdmissionReview<Pod> = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return (StatusCode::BAD_REQUEST, e.to_string()).into_response(),
    };
    let api_version = review.types.api_version.clone();
    let Ok(request): Result<AdmissionRequest<Pod>, _> = review.try_into() else {
        return (StatusCode::BAD_REQUEST, "no request").into_response();
    };
    let mut response = ResponseOut {
        uid: &request.uid,
        allowed: true,
        status: StatusOut { code: 200, message: String::new() },
        patch_type: None,
        patch: None,
    };
    match request.object.as_ref() {
        None => {
            response.allowed = false;
            response.status = StatusOut { code: 400, message: "there is no content to decode".into() };
        }
        Some(pod) => {
            let patch = serde_json::to_vec(&inject(pod)).unwrap();
            response.patch_type = Some("JSONPatch");
            response.patch = Some(base64::engine::general_purpose::STANDARD.encode(patch));
        }
    }
    let out = ReviewOut { api_version: &api_version, kind: "AdmissionReview", response };
    ([(header::CONTENT_TYPE, "application/json")], serde_json::to_vec(&out).unwrap()).into_response()
}

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned()).unwrap_or_else(|| default.to_string())
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let addr = arg("--addr", "127.0.0.1:9444");
    let dir = std::path::PathBuf::from(arg("--cert-dir", "certs"));
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(dir.join("tls.crt")).unwrap().map(Result::unwrap).collect();
    let key = PrivateKeyDer::from_pem_file(dir.join("tls.key")).unwrap();
    let mut config = rustls::ServerConfig::builder().with_no_client_auth().with_single_cert(chain, key).unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let app =
        Router::new().route("/mutate-pod", post(mutate_pod)).route("/healthz", axum::routing::get(|| async { "ok" }));
    let listener = tokio::net::TcpListener::bind(&addr).await.unwrap();
    eprintln!("floor serving on {addr}");
    loop {
        let Ok((tcp, _)) = listener.accept().await else { continue };
        let (acceptor, app) = (acceptor.clone(), app.clone());
        tokio::spawn(async move {
            let _ = tcp.set_nodelay(true);
            let Ok(tls) = acceptor.accept(tcp).await else { return };
            let service = TowerToHyperService::new(app);
            let _ = auto::Builder::new(TokioExecutor::new())
                .http1_only()
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}
