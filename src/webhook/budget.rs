//! Taking one unit of a PodUnavailableBudget for `/validate-pod` (kruise v1.9
//! `PodUnavailableBudgetValidatePod`'s retry loop): an optimistic-concurrency replace of the
//! budget's status, so two replicas (or two reviews) never both take the last unit.
//!
//! Each attempt holds the budget's lock in this process (kruise's `GlobalKeyedMutex`), so reviews
//! of one budget take turns here and conflict only with other replicas and the controller. The
//! first attempt starts from the newest of the view's copy and the copy this process last wrote
//! (kruise's `GlobalCache`: the view may not have seen our own write yet); after a conflict the
//! budget is read from the API server. Up to [`ATTEMPTS`] attempts, [`RETRY_DELAY`] apart
//! (kruise's `ConflictRetry`); a budget deleted meanwhile allows, any other failure refuses with
//! its message, as kruise does. Unlike kruise, a pod the fresh copy already records passes
//! without a second unit (kruise checks the record on the cached copy only, so the delete that
//! carries out an eviction could be refused while the cache lags behind the eviction's record).
//!
//! A refusal is counted (`kruise_pod_unavailable_budget_refusals_total`) and, through the store,
//! recorded as kruise's Warning Event `PubPreventPodDeletion` on the pod, off the answer's path.

use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, PostParams};

use super::review::Verdict;
use super::validate_pod::{BudgetCheck, refusal};
use crate::apis::podunavailablebudget::PodUnavailableBudget;
use crate::core::budget::admit::{consume, is_recorded};

/// Attempts of one review (kruise's `ConflictRetry.Steps`).
pub const ATTEMPTS: usize = 4;
/// Pause after a conflict (kruise's `ConflictRetry.Duration`, without its 10% jitter).
pub const RETRY_DELAY: Duration = Duration::from_millis(500);

/// Why a status write failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError {
    /// 409: someone wrote the budget since the copy was read; the apiserver's message.
    Conflict(String),
    /// 404: the budget is gone.
    NotFound,
    /// Anything else, with its message.
    Other(String),
}

/// What a store call returns.
pub type StoreFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// Where budgets are read and their status written (the API server; a fake in tests).
pub trait BudgetStore: Send + Sync {
    /// The budget now (`None` when it does not exist).
    fn get<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> StoreFuture<'a, Result<Option<PodUnavailableBudget>, String>>;
    /// Replaces the status of `budget` at its resourceVersion; the budget as written.
    fn replace_status<'a>(
        &'a self,
        budget: &'a PodUnavailableBudget,
    ) -> StoreFuture<'a, Result<PodUnavailableBudget, WriteError>>;
    /// Told of a refused pod operation (kruise's `PubPreventPodDeletion` Event); must not block.
    fn refused(&self, _check: &BudgetCheck) {}
}

/// A budget's `(namespace, name)`.
use super::written::Written;

/// The budget writer of one process: its store, the per-budget locks and the copies it wrote.
pub struct Budgets {
    store: Arc<dyn BudgetStore>,
    written: Written<PodUnavailableBudget>,
    retry_delay: Duration,
    metrics: Option<crate::metrics::Metrics>,
}

impl Budgets {
    /// A writer over `store`.
    pub fn new(store: Arc<dyn BudgetStore>) -> Self {
        Self::with_retry_delay(store, RETRY_DELAY)
    }

    /// A writer pausing `retry_delay` after a conflict (tests).
    pub fn with_retry_delay(store: Arc<dyn BudgetStore>, retry_delay: Duration) -> Self {
        Self { store, written: Written::default(), retry_delay, metrics: None }
    }

    /// Counts refusals in `metrics`.
    #[must_use]
    pub fn with_metrics(mut self, metrics: crate::metrics::Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// A refusal of `check`: counted, told to the store, answered.
    fn refuse(&self, check: &BudgetCheck, message: String) -> Verdict {
        if let Some(metrics) = &self.metrics {
            let kind = crate::core::budget::controller_of(&check.pod).map_or("unknown", |o| o.kind.as_str());
            let labels = crate::metrics::BudgetRefusalLabels { kind: kind.into(), operation: check.op.as_str().into() };
            metrics.budget_refusals.get_or_create(&labels).inc();
        }
        self.store.refused(check);
        refusal(check.op, message)
    }

    /// Takes one unit of the budget for `check` (or only decides, for a dry run); the answer.
    /// `now` is the time recorded for the pod.
    pub async fn take(&self, check: &BudgetCheck, now: k8s_openapi::jiff::Timestamp) -> Verdict {
        let name = check.budget.metadata.name.clone().unwrap_or_default();
        let key = (check.namespace.clone(), name.clone());
        let lock = self.written.lock_of(&key);
        let mut fresh: Option<Arc<PodUnavailableBudget>> = None;
        let mut last_conflict = String::new();
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                tokio::time::sleep(self.retry_delay).await;
            }
            let _turn = lock.lock().await;
            let current = match fresh.take() {
                Some(b) => b,
                None => self.written.newest(&key, &check.budget),
            };
            // The view's copy may predate our own record of this pod (its eviction, then the
            // delete that carries it out): the pod is judged on the fresh copy too.
            if is_recorded(check.pod_name(), &current) {
                return Verdict::allow();
            }
            let status = match consume(check.pod_name(), &current, check.op, now) {
                Ok(s) => s,
                Err(message) => return self.refuse(check, message),
            };
            if check.dry_run {
                return Verdict::allow();
            }
            let mut next = (*current).clone();
            next.status = Some(status);
            match self.store.replace_status(&next).await {
                Ok(written) => {
                    self.written.remember(key, written);
                    return Verdict::allow();
                }
                Err(WriteError::NotFound) => return Verdict::allow(),
                Err(WriteError::Other(message)) => return refusal(check.op, message),
                Err(WriteError::Conflict(message)) => {
                    tracing::debug!(budget = %name, attempt, "budget status conflict; reading it again");
                    last_conflict = message;
                    match self.store.get(&check.namespace, &name).await {
                        Ok(Some(b)) => fresh = Some(Arc::new(b)),
                        Ok(None) => return Verdict::allow(),
                        Err(message) => return refusal(check.op, message),
                    }
                }
            }
        }
        refusal(check.op, last_conflict)
    }
}

/// The API server as a [`BudgetStore`].
pub struct ApiStore {
    client: kube::Client,
}

impl ApiStore {
    /// Budgets through `client`.
    pub fn new(client: kube::Client) -> Self {
        Self { client }
    }
}

impl BudgetStore for ApiStore {
    fn refused(&self, check: &BudgetCheck) {
        let reporter = kube::runtime::events::Reporter { controller: "kruise-manager".into(), instance: None };
        let recorder = kube::runtime::events::Recorder::new(self.client.clone(), reporter);
        let reference = k8s_openapi::api::core::v1::ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Pod".into()),
            namespace: Some(check.namespace.clone()),
            name: check.pod.metadata.name.clone(),
            uid: check.pod.metadata.uid.clone(),
            ..Default::default()
        };
        let event = kube::runtime::events::Event {
            type_: kube::runtime::events::EventType::Warning,
            reason: "PubPreventPodDeletion".into(),
            note: Some("openkruise pub prevents pod deletion".into()),
            action: "PubPreventPodDeletion".into(),
            secondary: None,
        };
        // Off the answer's path: the review does not wait on the Event.
        tokio::spawn(async move {
            if let Err(e) = recorder.publish(&event, &reference).await {
                tracing::debug!("cannot record Event PubPreventPodDeletion: {e}");
            }
        });
    }

    fn get<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> StoreFuture<'a, Result<Option<PodUnavailableBudget>, String>> {
        Box::pin(async move {
            let api: Api<PodUnavailableBudget> = Api::namespaced(self.client.clone(), namespace);
            api.get_opt(name).await.map_err(|e| e.to_string())
        })
    }

    fn replace_status<'a>(
        &'a self,
        budget: &'a PodUnavailableBudget,
    ) -> StoreFuture<'a, Result<PodUnavailableBudget, WriteError>> {
        Box::pin(async move {
            let namespace = budget.metadata.namespace.as_deref().unwrap_or("default");
            let name = budget.metadata.name.as_deref().unwrap_or("");
            let api: Api<PodUnavailableBudget> = Api::namespaced(self.client.clone(), namespace);
            match api.replace_status(name, &PostParams::default(), budget).await {
                Ok(b) => Ok(b),
                Err(kube::Error::Api(e)) if e.code == 409 => Err(WriteError::Conflict(e.message)),
                Err(kube::Error::Api(e)) if e.code == 404 => Err(WriteError::NotFound),
                Err(e) => Err(WriteError::Other(e.to_string())),
            }
        })
    }
}
