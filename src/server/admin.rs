//! The plain-HTTP admin server (spec §8.5, kubert's layout): `/healthz` (the process runs),
//! `/readyz` (every readiness condition holds — in a cluster: the certificate is loaded, the
//! caches synced, and the server's own `/healthz` verified over HTTPS against the CA it publishes
//! — and no shutdown has started) and `/metrics` (Prometheus text format). Kept off the webhook
//! port and out of its request log. `/readyz` names what is missing when it answers 503.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::metrics::Metrics;

/// The conjunction of what every task reports: each condition is met or says why not.
#[derive(Debug)]
pub struct Readiness {
    conditions: Mutex<BTreeMap<&'static str, Option<String>>>,
}

/// The condition shutdown clears.
pub const SERVING: &str = "serving";

impl Readiness {
    /// Readiness with `conditions` not yet met (plus [`SERVING`], met until shutdown).
    pub fn new(conditions: &[&'static str]) -> Arc<Self> {
        let mut map: BTreeMap<&'static str, Option<String>> =
            conditions.iter().map(|c| (*c, Some("not yet known".to_string()))).collect();
        map.insert(SERVING, None);
        Arc::new(Self { conditions: Mutex::new(map) })
    }

    /// Records whether `condition` holds (`Err` says why not).
    pub fn set(&self, condition: &'static str, state: Result<(), String>) {
        if let Ok(mut map) = self.conditions.lock() {
            let now = state.err();
            if map.get(condition) != Some(&now) {
                match &now {
                    None => tracing::info!(condition, "ready"),
                    Some(why) => tracing::info!(condition, why = %why, "not ready"),
                }
            }
            map.insert(condition, now);
        }
    }

    /// Shutdown has started: never ready again.
    pub fn shutting_down(&self) {
        self.set(SERVING, Err("shutting down".into()));
    }

    /// Whether every condition holds.
    pub fn is_ready(&self) -> bool {
        self.conditions.lock().map(|m| m.values().all(Option::is_none)).unwrap_or(false)
    }

    /// `condition: why` for every unmet condition.
    pub fn unmet(&self) -> Vec<String> {
        self.conditions
            .lock()
            .map(|m| m.iter().filter_map(|(c, why)| why.as_ref().map(|w| format!("{c}: {w}"))).collect())
            .unwrap_or_else(|_| vec!["readiness lock poisoned".into()])
    }
}

/// The admin router.
pub fn router(readiness: Arc<Readiness>, metrics: Metrics) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(move || {
                let unmet = readiness.unmet();
                async move {
                    if unmet.is_empty() {
                        (StatusCode::OK, "ok".to_string())
                    } else {
                        (StatusCode::SERVICE_UNAVAILABLE, unmet.join("\n"))
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
pub async fn serve(
    listener: TcpListener,
    readiness: Arc<Readiness>,
    metrics: Metrics,
    mut stop: watch::Receiver<bool>,
) {
    let app = router(readiness, metrics);
    let shutdown = async move {
        let _ = stop.changed().await;
    };
    if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(shutdown).await {
        tracing::warn!(error = %e, "admin server stopped");
    }
}
