//! The daemon's plain-HTTP admin port (kruise-daemon's `--addr`, 10221): `/healthz` (the process
//! answers), `/readyz` (the node's NodeImage watch has listed, and a container runtime answered;
//! the body names the runtime chosen, or every endpoint tried and why it failed) and `/metrics`.
//! Metrics carry bounded labels only: pulls by result, pull seconds, status writes by result.

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// What `/readyz` reports.
#[derive(Debug)]
pub struct Health {
    synced: Mutex<bool>,
    runtime: Mutex<Result<String, String>>,
}

impl Health {
    /// Not synced, runtime unknown.
    pub fn new() -> Arc<Self> {
        Arc::new(Health { synced: Mutex::new(false), runtime: Mutex::new(Err("not probed yet".into())) })
    }

    /// The NodeImage watch listed (or lost its list).
    pub fn set_synced(&self, synced: bool) {
        if let Ok(mut s) = self.synced.lock() {
            *s = synced;
        }
    }

    /// The runtime chosen, or every endpoint tried.
    pub fn set_runtime(&self, runtime: Result<String, String>) {
        if let Ok(mut r) = self.runtime.lock() {
            *r = runtime;
        }
    }

    /// (ready, body).
    pub fn readyz(&self) -> (bool, String) {
        let synced = self.synced.lock().map(|s| *s).unwrap_or(false);
        let runtime = self.runtime.lock().map(|r| r.clone()).unwrap_or_else(|_| Err("lock poisoned".into()));
        let mut body = String::new();
        body.push_str(if synced { "nodeimage: synced\n" } else { "nodeimage: not synced\n" });
        match &runtime {
            Ok(r) => body.push_str(&format!("runtime: {r}\n")),
            Err(e) => body.push_str(&format!("runtime: {e}\n")),
        }
        (synced && runtime.is_ok(), body)
    }
}

/// Labels of a pull attempt.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PullLabels {
    /// `succeeded`, `present` (IfNotPresent found it), `auth_failed`, `not_found`, `timeout`,
    /// `no_runtime`, `error`.
    pub result: String,
}

/// Labels of a status write.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WriteLabels {
    /// `ok`, `conflict`, `error`.
    pub result: String,
}

/// The daemon's metrics.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    pulls: Family<PullLabels, Counter>,
    pull_seconds: Histogram,
    in_flight: Gauge,
    status_writes: Family<WriteLabels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let pulls = Family::<PullLabels, Counter>::default();
        let pull_seconds = Histogram::new([0.5, 1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0]);
        let in_flight = Gauge::default();
        let status_writes = Family::<WriteLabels, Counter>::default();
        registry.register("kruise_daemon_image_pulls", "Image pull attempts, by result", pulls.clone());
        registry.register("kruise_daemon_image_pull_seconds", "Time of an image pull attempt", pull_seconds.clone());
        registry.register("kruise_daemon_image_pulls_in_flight", "Image pulls running now", in_flight.clone());
        registry.register(
            "kruise_daemon_nodeimage_status_writes",
            "NodeImage status writes, by result",
            status_writes.clone(),
        );
        Metrics { registry: Arc::new(registry), pulls, pull_seconds, in_flight, status_writes }
    }

    /// Counts a pull attempt that took `seconds`.
    pub fn pull(&self, result: &str, seconds: f64) {
        self.pulls.get_or_create(&PullLabels { result: result.into() }).inc();
        self.pull_seconds.observe(seconds);
    }

    /// A pull started (+1) or ended (-1).
    pub fn in_flight(&self, delta: i64) {
        self.in_flight.inc_by(delta);
    }

    /// Counts a status write.
    pub fn status_write(&self, result: &str) {
        self.status_writes.get_or_create(&WriteLabels { result: result.into() }).inc();
    }

    /// Prometheus text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// The admin router.
pub fn router(health: Arc<Health>, metrics: Metrics) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/readyz",
            get(move || {
                let (ready, body) = health.readyz();
                async move { (if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE }, body) }
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

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    async fn get(app: &Router, path: &str) -> (u16, String) {
        let req = axum::http::Request::get(path).body(axum::body::Body::empty()).unwrap();
        let resp = app.clone().oneshot(req).await.unwrap();
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn readyz_names_the_runtime_or_every_endpoint_tried() {
        let health = Health::new();
        let metrics = Metrics::new();
        let app = router(health.clone(), metrics.clone());
        assert_eq!(get(&app, "/healthz").await, (200, "ok".into()));
        health.set_synced(true);
        health.set_runtime(Err("no container runtime answered; tried unix:///run/containerd/containerd.sock (no such file), unix:///var/run/crio/crio.sock (no such file)".into()));
        let (code, body) = get(&app, "/readyz").await;
        assert_eq!(code, 503);
        assert!(body.contains("containerd.sock (no such file)") && body.contains("crio.sock"), "{body}");
        health.set_runtime(Ok("containerd 1.7.2 (v1) at unix:///run/containerd/containerd.sock".into()));
        let (code, body) = get(&app, "/readyz").await;
        assert_eq!(code, 200);
        assert!(body.contains("runtime: containerd 1.7.2"), "{body}");
        metrics.pull("succeeded", 1.5);
        metrics.status_write("ok");
        let (_, text) = get(&app, "/metrics").await;
        assert!(text.contains("kruise_daemon_image_pulls_total{result=\"succeeded\"} 1"), "{text}");
        assert!(text.contains("kruise_daemon_image_pull_seconds_count 1"), "{text}");
        assert!(text.contains("kruise_daemon_nodeimage_status_writes_total{result=\"ok\"} 1"), "{text}");
    }
}
