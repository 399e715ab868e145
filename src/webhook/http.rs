//! The HTTP face of the handlers: one axum [`router`] built from the path table, with the
//! transport rules of issue 2 and ADMISSION.md: JSON only (415 otherwise), bodies up to 7 MiB
//! (413 above), a body that is not an AdmissionReview gets 400 with a JSON `Status`, a path whose
//! handler does not exist yet gets 404, a panic is caught and answered 500. One log line and one
//! set of metric updates per review; the metric handles of a path are looked up once and kept
//! ([`PathMetrics`]), so counting a review neither allocates labels nor takes the family's lock.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::json;
use tower_http::catch_panic::CatchPanicLayer;

use super::budget::Budgets;
use super::paths::{self, Handler};
use super::review::{self, Verdict};
use super::{Context, Listed, Listing, handle, listing_needed};
use crate::cluster::{ListSource, PodSource, WithPods};
use crate::core::validation::protection::NamespaceContents;
use crate::metrics::{Metrics, RequestLabels, WebhookLabels};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;

/// Largest accepted body: two objects of up to 3 MiB plus slack (controller-runtime's limit).
pub const MAX_BODY_BYTES: usize = 7 * 1024 * 1024;

/// Shared state of the webhook routes.
pub struct AppState {
    /// What handlers read.
    pub ctx: Context,
    /// Where reviews are counted.
    pub metrics: Metrics,
    /// Where the pods a review names are read before it is handled (`None`: the view holds them).
    pub pods: Option<Arc<dyn PodSource>>,
    /// Where the objects a Cascading deletion-protection check counts are listed (`None`: the
    /// handlers count what the view holds).
    pub lists: Option<Arc<dyn ListSource>>,
    /// Where `/validate-pod` takes PodUnavailableBudget units (`None`: it answers as a dry run
    /// on the view's budgets).
    pub budgets: Option<Arc<Budgets>>,
    /// Where the pod hooks record WorkloadSpread placements (`None`: `/mutate-pod` decides on
    /// the view and writes nothing, `/validate-pod` records nothing).
    pub spreads: Option<Arc<super::spread::Spreads>>,
}

impl AppState {
    /// Handlers reading `ctx`, counted in `metrics`; pods come from the view.
    pub fn new(ctx: Context, metrics: Metrics) -> Self {
        Self { ctx, metrics, pods: None, lists: None, budgets: None, spreads: None }
    }

    /// PodUnavailableBudget units are taken through `budgets`.
    pub fn with_budgets(mut self, budgets: Arc<Budgets>) -> Self {
        self.budgets = Some(budgets);
        self
    }

    /// WorkloadSpread placements are recorded through `spreads`.
    pub fn with_spreads(mut self, spreads: Arc<super::spread::Spreads>) -> Self {
        self.spreads = Some(spreads);
        self
    }

    /// Objects counted by Cascading deletion protection are listed from `source`.
    pub fn with_lists(mut self, source: Arc<dyn ListSource>) -> Self {
        self.lists = Some(source);
        self
    }

    /// Pods named by reviews are fetched from `source`.
    pub fn with_pods(mut self, source: Arc<dyn PodSource>) -> Self {
        self.pods = Some(source);
        self
    }
}

/// The router serving every path of the webhook table.
pub fn router(state: Arc<AppState>) -> Router {
    let mut router = Router::new();
    for path in paths::routed_paths() {
        let metrics = Arc::new(PathMetrics::new(path));
        router = router.route(
            path,
            post(move |s: State<Arc<AppState>>, r: axum::extract::Request| serve(s, Arc::clone(&metrics), r)),
        );
    }
    router
        .route(paths::CONVERT, post(super::convert::serve))
        .route("/healthz", axum::routing::get(|| async { "ok" }))
        .fallback(|| async { error(StatusCode::NOT_FOUND, "NotFound", "no webhook is served on this path") })
        .with_state(Arc::clone(&state))
        .layer(panic_layer(state.metrics.clone()))
}

/// Answers a panic with a 500 JSON `Status` and counts it.
pub(crate) fn panic_layer(
    metrics: Metrics,
) -> CatchPanicLayer<impl Fn(Box<dyn std::any::Any + Send + 'static>) -> Response + Clone> {
    CatchPanicLayer::custom(move |_panic: Box<dyn std::any::Any + Send + 'static>| {
        metrics.panics.inc();
        tracing::error!("handler panicked; answered 500");
        error(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", "internal error while handling the review")
    })
}

/// A Kubernetes `Status` JSON error with an HTTP code.
pub fn error(code: StatusCode, reason: &str, message: &str) -> Response {
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code.as_u16(),
    });
    (code, axum::Json(body)).into_response()
}

/// Decrements the in-flight gauge when a review ends, however it ends.
struct InFlight(Gauge);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.dec();
    }
}

/// The metric handles of one path, each created in its family on first use (so `/metrics`
/// shows a series only once it counted something) and kept for the next reviews.
struct PathMetrics {
    path: &'static str,
    in_flight: OnceLock<Gauge>,
    latency: OnceLock<Histogram>,
    /// HTTP 200 with `allowed` true, and with `allowed` false: nearly every review.
    answered: [OnceLock<Counter>; 2],
}

impl PathMetrics {
    fn new(path: &'static str) -> Self {
        PathMetrics { path, in_flight: OnceLock::new(), latency: OnceLock::new(), answered: Default::default() }
    }

    fn labels(&self) -> WebhookLabels {
        WebhookLabels { webhook: self.path.to_string() }
    }

    fn in_flight(&self, metrics: &Metrics) -> Gauge {
        self.in_flight.get_or_init(|| metrics.in_flight.get_or_create(&self.labels()).clone()).clone()
    }

    fn observe(&self, metrics: &Metrics, code: StatusCode, allowed: Option<bool>, seconds: f64) {
        let request_labels = || RequestLabels {
            webhook: self.path.to_string(),
            code: code.as_u16().to_string(),
            allowed: match allowed {
                Some(true) => "true",
                Some(false) => "false",
                None => "none",
            }
            .into(),
        };
        match allowed {
            Some(a) if code == StatusCode::OK => self.answered[usize::from(a)]
                .get_or_init(|| metrics.requests.get_or_create(&request_labels()).clone())
                .inc(),
            _ => metrics.requests.get_or_create(&request_labels()).inc(),
        };
        self.latency.get_or_init(|| metrics.latency.get_or_create(&self.labels()).clone()).observe(seconds);
    }
}

/// Takes the request whole: a `HeaderMap` extractor would clone the headers of every review.
async fn serve(
    State(state): State<Arc<AppState>>,
    metrics: Arc<PathMetrics>,
    request: axum::extract::Request,
) -> Response {
    let started = Instant::now();
    let gauge = metrics.in_flight(&state.metrics);
    gauge.inc();
    let _in_flight = InFlight(gauge);

    let (parts, body) = request.into_parts();
    let (response, allowed) = answer(&state, metrics.path, &parts.headers, body).await;
    metrics.observe(&state.metrics, response.status(), allowed, started.elapsed().as_secs_f64());
    response
}

/// The body of a webhook request under the transport rules: JSON only (415), at most
/// [`MAX_BODY_BYTES`] (413), read whole (400 when it stops arriving). Shared with `/convert`.
pub(crate) async fn read_body(path: &str, headers: &HeaderMap, body: Body) -> Result<Bytes, Response> {
    if !is_json(headers) {
        let msg = "Content-Type must be application/json";
        return Err(error(StatusCode::UNSUPPORTED_MEDIA_TYPE, "UnsupportedMediaType", msg));
    }
    let too_large = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        .is_some_and(|len| len > MAX_BODY_BYTES);
    let too_large_response = || {
        let msg = format!("request body is larger than {MAX_BODY_BYTES} bytes");
        error(StatusCode::PAYLOAD_TOO_LARGE, "RequestEntityTooLarge", &msg)
    };
    if too_large {
        return Err(too_large_response());
    }
    match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => Ok(b),
        Err(e) if is_length_limit(&e) => Err(too_large_response()),
        // The body stopped arriving (the request-read timeout, a reset): not a size problem.
        Err(e) => {
            tracing::debug!(webhook = path, error = %e, "request body could not be read");
            let msg = format!("the request body could not be read: {e}");
            Err(error(StatusCode::BAD_REQUEST, "BadRequest", &msg))
        }
    }
}

/// The response and, when a verdict was reached, whether it allowed.
async fn answer(state: &AppState, path: &'static str, headers: &HeaderMap, body: Body) -> (Response, Option<bool>) {
    let bytes = match read_body(path, headers, body).await {
        Ok(b) => b,
        Err(response) => return (response, None),
    };
    let review = match review::decode(&bytes) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(webhook = path, error = %e, "bad admission request");
            return (error(StatusCode::BAD_REQUEST, "BadRequest", &e.to_string()), None);
        }
    };
    let handler = paths::handler_for(path).unwrap_or(Handler::Missing);
    let started = Instant::now();
    let fetched = match with_needed_pods(state, handler, &review).await {
        Ok(ctx) => ctx,
        Err(message) => {
            let verdict = Verdict::errored(500, message);
            log_review(path, &review, &verdict, started);
            let body = review::encode(&review.request, &verdict);
            let headers = [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))];
            return ((headers, body).into_response(), Some(verdict.allowed));
        }
    };
    let ctx = with_listing(state, fetched.unwrap_or_else(|| state.ctx.clone()), handler, &review).await;
    let verdict = match (&state.budgets, handler) {
        (Some(budgets), Handler::ValidatePod) => Some(match super::validate_pod::check(&ctx, &review) {
            super::validate_pod::PodCheck::Done(v) => spread_release(state, &ctx, &review, v).await,
            super::validate_pod::PodCheck::Budget(c) => {
                let v = budgets.take(&c, super::validate_pod::now(&ctx)).await;
                spread_release(state, &ctx, &review, v).await
            }
        }),
        (_, Handler::MutatePod) if state.spreads.is_some() => Some(spread_place(state, &ctx, &review).await),
        _ => handle(&ctx, handler, &review),
    };
    let Some(verdict) = verdict else {
        let msg = format!("the webhook on {path} is not implemented by this server yet");
        return (error(StatusCode::NOT_FOUND, "NotFound", &msg), None);
    };
    log_review(path, &review, &verdict, started);
    let body = review::encode(&review.request, &verdict);
    let headers = [(header::CONTENT_TYPE, HeaderValue::from_static("application/json"))];
    ((headers, body).into_response(), Some(verdict.allowed))
}

/// `/mutate-pod` with the WorkloadSpread placement recorded first (kruise's order puts it after
/// the readiness gate, which writes nothing to the cluster).
async fn spread_place(state: &AppState, ctx: &Context, review: &review::Review) -> Verdict {
    let (Some(spreads), Some(check)) = (&state.spreads, super::mutate_pod::spread_check(ctx, review)) else {
        return super::mutate_pod::mutate_placed(ctx, review, None);
    };
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(super::validate_pod::now(ctx));
    match spreads.place(&check, &now).await {
        Ok(placement) => super::mutate_pod::mutate_placed(ctx, review, placement.as_ref()),
        Err(message) => Verdict::errored(500, message),
    }
}

/// `/validate-pod`'s WorkloadSpread part after the budget allowed: the deletion recorded.
async fn spread_release(state: &AppState, ctx: &Context, review: &review::Review, verdict: Verdict) -> Verdict {
    if !verdict.allowed {
        return verdict;
    }
    let (Some(spreads), Some(check)) = (&state.spreads, super::validate_pod::spread_check(ctx, review)) else {
        return verdict;
    };
    let now = k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(super::validate_pod::now(ctx));
    match spreads.release(&check, &now).await {
        Ok(()) => verdict,
        Err(message) => Verdict::errored(500, message),
    }
}

/// A context whose view also holds the pods `review` names (`None`: nothing to fetch); `Err` when
/// they cannot be read.
async fn with_needed_pods(
    state: &AppState,
    handler: Handler,
    review: &review::Review,
) -> Result<Option<Context>, String> {
    let Some(source) = &state.pods else { return Ok(None) };
    let Some((namespace, names)) = super::pods_needed(&state.ctx, handler, review) else { return Ok(None) };
    let pods = source.fetch(&namespace, &names).await?;
    let cluster = Arc::new(WithPods::new(Arc::clone(&state.ctx.cluster), pods));
    Ok(Some(Context::new(Arc::clone(&state.ctx.config), cluster)))
}

/// `ctx` with what the review's Cascading deletion-protection check counts, listed now (deletes
/// of Namespaces and CRDs are rare, so nothing is watched for them); a listing that fails is
/// carried to the decision, which refuses with kruise's message.
async fn with_listing(state: &AppState, ctx: Context, handler: Handler, review: &review::Review) -> Context {
    let Some(source) = &state.lists else { return ctx };
    let listed = match listing_needed(&ctx, handler, review) {
        None => return ctx,
        Some(Listing::Namespace(ns)) => {
            let (pods, claims) = futures::future::join(source.pods(&ns), source.claims(&ns)).await;
            Listed::Namespace(NamespaceContents { pods, claims })
        }
        Some(Listing::CustomResources(r)) => {
            Listed::CustomResources(source.custom_resources(&r.group, &r.version, &r.plural).await)
        }
        Some(Listing::WorkloadSpread(l)) => {
            Listed::WorkloadSpread(Box::new(super::validate_workloadspread::list(&**source, &l).await))
        }
    };
    ctx.with_listed(listed)
}

/// Whether reading the body failed because it passed [`MAX_BODY_BYTES`] (and not because the
/// connection failed or timed out while it was being read).
fn is_length_limit(e: &axum::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(s) = source {
        if s.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = s.source();
    }
    false
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"))
}

fn log_review(path: &str, review: &review::Review, verdict: &Verdict, started: Instant) {
    let req = &review.request;
    tracing::info!(
        webhook = path,
        uid = %req.uid,
        kind = %req.kind.kind,
        namespace = req.namespace.as_deref().unwrap_or(""),
        name = %req.name,
        operation = ?req.operation,
        dry_run = req.dry_run,
        allowed = verdict.allowed,
        code = verdict.code,
        patched = verdict.is_patched(),
        duration_us = started.elapsed().as_micros() as u64,
        message = %verdict.message,
        "admission review"
    );
}
