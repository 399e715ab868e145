//! The plain-HTTP admin server (spec §8.5, kubert's layout): `/healthz` (the process runs),
//! `/readyz` (a certificate is loaded, the listener is bound and no shutdown has started) and
//! `/metrics` (Prometheus text format). Kept off the webhook port and out of its request log.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::metrics::Metrics;

/// The admin router.
pub fn router(ready: Arc<AtomicBool>, metrics: Metrics) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(move || {
                let ready = ready.load(Ordering::SeqCst);
                async move {
                    if ready {
                        (StatusCode::OK, "ok")
                    } else {
                        (StatusCode::SERVICE_UNAVAILABLE, "shutting down")
                    }
                }
            }),
        )
        .route(
            "/metrics",
            get(move || {
                let body = metrics.encode();
                async move { ([(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], body).into_response() }
            }),
        )
}

/// Serves the admin router until `stop` fires (after the webhook server stopped).
pub async fn serve(listener: TcpListener, ready: Arc<AtomicBool>, metrics: Metrics, mut stop: watch::Receiver<bool>) {
    let app = router(ready, metrics);
    let shutdown = async move {
        let _ = stop.changed().await;
    };
    if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(shutdown).await {
        tracing::warn!(error = %e, "admin server stopped");
    }
}
