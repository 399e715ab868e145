//! Prometheus metrics with bounded labels (webhook path, HTTP code, allowed; never object names —
//! except kruise's own `cloneset_scale_expectation_leakage{namespace,name}`, which only a CloneSet
//! stuck past its expectation timeout gets), named as controller-runtime and kruise name them so
//! kruise dashboards keep working (ADMISSION.md).

use std::sync::Arc;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Labels of a finished review.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// Route path.
    pub webhook: String,
    /// HTTP status code of the webhook call.
    pub code: String,
    /// "true", "false", or "none" when no verdict was reached.
    pub allowed: String,
}

/// Labels naming a route.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WebhookLabels {
    /// Route path.
    pub webhook: String,
}

/// Labels of a certificate reload attempt.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabels {
    /// "success" or "error".
    pub result: String,
}

/// Labels naming a kind of the cluster view.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    /// The kind (`SidecarSet`, `Namespace`, ...).
    pub kind: String,
}

/// Labels of a pod operation a PodUnavailableBudget refused.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BudgetRefusalLabels {
    /// The kind of the pod's controller (`CloneSet`, `ReplicaSet`, ...; `unknown` for none).
    pub kind: String,
    /// kruise's spelling: `DELETE`, `EVICT`, `UPDATE` or `RESIZE`.
    pub operation: String,
}

/// Labels naming a lease.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NameLabels {
    /// The name.
    pub name: String,
}

/// Labels of a finished reconcile (controller-runtime's `controller_runtime_reconcile_total`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReconcileLabels {
    /// The controller (`cloneset`).
    pub controller: String,
    /// `success`, `requeue_after` or `error`.
    pub result: String,
}

/// Labels naming a controller.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    /// The controller (`cloneset`).
    pub controller: String,
}

/// Labels of a controller's API write: the controller and what was written (`create_pod`,
/// `patch_pod_status`, `workload_status`, … — [`crate::core::rollout::actions::Write::kind`]).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerWriteLabels {
    /// The controller (`cloneset`).
    pub controller: String,
    /// The kind of write.
    pub write: String,
}

/// Labels of a controller's work queue (controller-runtime's `workqueue_*`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabels {
    /// The controller (`cloneset`).
    pub controller: String,
    /// The queue's name (the controller's).
    pub name: String,
}

/// Labels naming a workload.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WorkloadLabels {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// Every metric of the process.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Registry>,
    /// Reviews answered.
    pub requests: Family<RequestLabels, Counter>,
    /// Review latency in seconds.
    pub latency: Family<WebhookLabels, Histogram>,
    /// Reviews being processed.
    pub in_flight: Family<WebhookLabels, Gauge>,
    /// Handler panics caught (each answered 500).
    pub panics: Counter,
    /// Certificate reloads.
    pub cert_reloads: Family<ResultLabels, Counter>,
    /// Objects of the live cluster view that failed to decode (skipped), by kind.
    pub view_decode_failures: Family<KindLabels, Counter>,
    /// Objects the live cluster view holds, by kind.
    pub view_objects: Family<KindLabels, Gauge>,
    /// 1 while this replica leads (controller-runtime's name), by lease name.
    pub leader: Family<NameLabels, Gauge>,
    /// Pods found matching a SidecarSet without its injection (created while admission failed open).
    pub uninjected_pods: Counter,
    /// Pod operations refused by a PodUnavailableBudget (kruise's `pod_unavailable_budget`, whose
    /// labels name each workload and user; ours stay bounded: the workload kind and operation).
    pub budget_refusals: Family<BudgetRefusalLabels, Counter>,
    /// Reconciles finished, by controller and result.
    pub reconciles: Family<ReconcileLabels, Counter>,
    /// Reconcile time in seconds, by controller.
    pub reconcile_time: Family<ControllerLabels, Histogram>,
    /// Reconciles running now, by controller.
    pub reconciles_active: Family<ControllerLabels, Gauge>,
    /// API writes of the controllers' plans (creates, patches, deletes, status; not Events).
    pub controller_writes: Family<ControllerWriteLabels, Counter>,
    /// kruise's `cloneset_scale_expectation_leakage{namespace,name}`: reconciles that found a
    /// CloneSet's scale expectations past the expectation timeout. A gauge that only grows, so
    /// the exposed name is kruise's (a counter would gain `_total`).
    pub scale_expectation_leakage: Family<WorkloadLabels, Gauge>,
    /// Workloads waiting for a reconcile, by controller (`workqueue_depth`).
    pub queue_depth: Family<QueueLabels, Gauge>,
    /// Triggers of a reconcile, by controller (`workqueue_adds_total`).
    pub queue_adds: Family<QueueLabels, Counter>,
    /// Seconds from a workload's first trigger to its reconcile (`workqueue_queue_duration_seconds`).
    pub queue_wait: Family<QueueLabels, Histogram>,
    /// Watches the leader's shared informers run, by kind (one each while leading).
    pub informer_watches: Family<KindLabels, Gauge>,
    /// Objects the shared informers hold, by kind.
    pub informer_objects: Family<KindLabels, Gauge>,
    /// Objects of the shared informers that did not decode and were skipped, by kind.
    pub informer_decode_failures: Family<KindLabels, Counter>,
}

/// Reconcile time buckets in seconds (controller-runtime's are 5 ms to 60 s).
const RECONCILE_BUCKETS: [f64; 12] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0, 30.0];

/// Latency buckets in seconds, from 50 µs: most reviews take well under a millisecond.
const LATENCY_BUCKETS: [f64; 14] =
    [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 5.0];

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Registers every metric in a fresh registry.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let requests = Family::<RequestLabels, Counter>::default();
        let latency: Family<WebhookLabels, Histogram> =
            Family::new_with_constructor(|| Histogram::new(LATENCY_BUCKETS));
        let in_flight = Family::<WebhookLabels, Gauge>::default();
        let panics = Counter::default();
        let cert_reloads = Family::<ResultLabels, Counter>::default();
        registry.register(
            "controller_runtime_webhook_requests",
            "Admission reviews answered, by webhook path, HTTP code and verdict",
            requests.clone(),
        );
        registry.register(
            "controller_runtime_webhook_latency_seconds",
            "Time to answer an admission review",
            latency.clone(),
        );
        registry.register(
            "controller_runtime_webhook_requests_in_flight",
            "Admission reviews being answered",
            in_flight.clone(),
        );
        registry.register("kruise_webhook_panics", "Handler panics caught and answered with HTTP 500", panics.clone());
        registry.register(
            "kruise_webhook_certificate_reloads",
            "Serving certificate reloads from disk, by result",
            cert_reloads.clone(),
        );
        let view_decode_failures = Family::<KindLabels, Counter>::default();
        let view_objects = Family::<KindLabels, Gauge>::default();
        let uninjected_pods = Counter::default();
        let budget_refusals = Family::<BudgetRefusalLabels, Counter>::default();
        registry.register(
            "kruise_pod_unavailable_budget_refusals",
            "Pod deletions, evictions and updates a PodUnavailableBudget refused, by the pod's workload kind and operation",
            budget_refusals.clone(),
        );
        let leader = Family::<NameLabels, Gauge>::default();
        registry.register("leader_election_master_status", "1 while this replica holds the lease", leader.clone());
        registry.register(
            "kruise_cluster_view_decode_failures",
            "Objects of the cluster view that could not be decoded and were skipped, by kind",
            view_decode_failures.clone(),
        );
        registry.register(
            "kruise_cluster_view_objects",
            "Objects the cluster view holds, by kind",
            view_objects.clone(),
        );
        registry.register(
            "kruise_sidecarset_uninjected_pods",
            "Pods found matching a SidecarSet without its sidecars (created while admission failed open)",
            uninjected_pods.clone(),
        );
        let reconciles = Family::<ReconcileLabels, Counter>::default();
        let reconcile_time: Family<ControllerLabels, Histogram> =
            Family::new_with_constructor(|| Histogram::new(RECONCILE_BUCKETS));
        let reconciles_active = Family::<ControllerLabels, Gauge>::default();
        let controller_writes = Family::<ControllerWriteLabels, Counter>::default();
        registry.register(
            "controller_runtime_reconcile",
            "Reconciles finished, by controller and result",
            reconciles.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Time of one reconcile, by controller",
            reconcile_time.clone(),
        );
        registry.register(
            "controller_runtime_active_workers",
            "Reconciles running now, by controller",
            reconciles_active.clone(),
        );
        registry.register(
            "kruise_controller_api_writes",
            "API writes of the controllers' plans (not Events), by controller and kind of write",
            controller_writes.clone(),
        );
        let scale_expectation_leakage = Family::<WorkloadLabels, Gauge>::default();
        registry.register(
            "cloneset_scale_expectation_leakage",
            "CloneSet Scale Expectation Leakage Metrics",
            scale_expectation_leakage.clone(),
        );
        let queue_depth = Family::<QueueLabels, Gauge>::default();
        let queue_adds = Family::<QueueLabels, Counter>::default();
        let queue_wait: Family<QueueLabels, Histogram> =
            Family::new_with_constructor(|| Histogram::new(RECONCILE_BUCKETS));
        registry.register("workqueue_depth", "Current depth of workqueue", queue_depth.clone());
        registry.register("workqueue_adds", "Total number of adds handled by workqueue", queue_adds.clone());
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            queue_wait.clone(),
        );
        let informer_watches = Family::<KindLabels, Gauge>::default();
        let informer_objects = Family::<KindLabels, Gauge>::default();
        let informer_decode_failures = Family::<KindLabels, Counter>::default();
        registry.register(
            "kruise_informer_watches",
            "Watches the leader's shared informers run, by kind",
            informer_watches.clone(),
        );
        registry.register(
            "kruise_informer_objects",
            "Objects the shared informers hold, by kind",
            informer_objects.clone(),
        );
        registry.register(
            "kruise_informer_decode_failures",
            "Objects of the shared informers that could not be decoded and were skipped, by kind",
            informer_decode_failures.clone(),
        );
        Metrics {
            registry: Arc::new(registry),
            requests,
            latency,
            in_flight,
            panics,
            cert_reloads,
            view_decode_failures,
            view_objects,
            uninjected_pods,
            budget_refusals,
            leader,
            reconciles,
            reconcile_time,
            reconciles_active,
            controller_writes,
            scale_expectation_leakage,
            queue_depth,
            queue_adds,
            queue_wait,
            informer_watches,
            informer_objects,
            informer_decode_failures,
        }
    }

    /// Prometheus text exposition.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }

    /// Counts a reload attempt.
    pub fn cert_reload(&self, ok: bool) {
        let result = if ok { "success" } else { "error" };
        self.cert_reloads.get_or_create(&ResultLabels { result: result.into() }).inc();
    }
}
