//! The webhook router in-process: the same `router()` the server serves, driven through
//! `tower::ServiceExt::oneshot` with no socket and no TLS. Handler answers, paths and the HTTP
//! rules of the router are tested here; the transport contract is tested over TLS (`tls`).

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use http_body_util::BodyExt;
use hyper::Request;
use kruise::cluster::{ClusterView, EmptyView};
use kruise::core::features::FeatureGates;
use kruise::metrics::Metrics;
use kruise::webhook::Context;
use kruise::webhook::http::{AppState, router};
use kruise::webhook::request::ReviewRequest;
use serde_json::Value;
use tower::ServiceExt;

use super::Response;

/// The router over a cluster view, with feature gates.
#[derive(Clone)]
pub struct App {
    router: Router,
}

impl App {
    /// Default gates, no other objects.
    pub fn new() -> Self {
        Self::with(FeatureGates::default(), Arc::new(EmptyView))
    }

    pub fn with(gates: FeatureGates, cluster: Arc<dyn ClusterView>) -> Self {
        let state = Arc::new(AppState::new(Context::with_gates(gates, cluster), Metrics::new()));
        App { router: router(state) }
    }

    /// POSTs `body` as JSON to `path`.
    pub async fn post(&self, path: &str, body: Vec<u8>) -> Response {
        self.post_as(path, Some("application/json"), body).await
    }

    /// POSTs `body` to `path` with a `Content-Type` (or none).
    pub async fn post_as(&self, path: &str, content_type: Option<&str>, body: Vec<u8>) -> Response {
        let mut request = Request::post(path);
        if let Some(ct) = content_type {
            request = request.header("content-type", ct);
        }
        self.request(request.body(Body::from(body)).expect("request")).await
    }

    /// Sends a request as it is (a body that fails halfway, odd headers).
    pub async fn request(&self, request: Request<Body>) -> Response {
        let response = self.router.clone().oneshot(request).await.expect("the router is infallible");
        let (parts, body) = response.into_parts();
        let body = body.collect().await.expect("body").to_bytes().to_vec();
        Response { status: parts.status.as_u16(), headers: parts.headers, body }
    }

    /// Sends a review body to `path`; asserts HTTP 200 and the request's uid, and returns the
    /// review's `response`.
    pub async fn send_body(&self, path: &str, review: &Value) -> Value {
        let resp = self.post(path, serde_json::to_vec(review).unwrap()).await;
        assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
        let out = resp.json();
        assert_eq!(out["response"]["uid"], review["request"]["uid"]);
        out["response"].clone()
    }

    /// [`Self::send_body`] of a built review.
    pub async fn send(&self, path: &str, review: &ReviewRequest) -> Value {
        self.send_body(path, &review.to_json()).await
    }
}
