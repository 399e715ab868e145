//! One reconcile runner for every controller (issue 26 item 5; controller-runtime gives every
//! controller one loop and one set of metrics): `workers` reconciles at a time from one
//! [`WorkQueue`], never two of one key; per reconcile a span and controller-runtime's metrics
//! (`controller_runtime_reconcile_total{controller,result}`,
//! `controller_runtime_reconcile_time_seconds`, `controller_runtime_active_workers`); the requeue a
//! reconcile asks for; backoff per key after failures by error class (a 409 Conflict — the view
//! was stale — retries after 100 ms, a 429 after 1 s, anything else after 500 ms, doubling per
//! consecutive failure up to a minute); pacing (runs of one key are spaced by twice the last run's
//! time, at most [`Pacing::max_interval`], so a stream of events during a large rollout folds into
//! the next run and planning takes at most a third of a core per workload); and shutdown (no new
//! reconcile starts, those running finish).
//!
//! A reconcile is any `Fn(key) -> Future<Output = Result<Option<Duration>, ReconcileError>>`: the
//! key is `namespace/name` (`/name` for a cluster-scoped parent), `Ok(Some(d))` asks to run again
//! after `d`, `Ok(None)` only when something changes.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use tokio_util::sync::CancellationToken;

use super::ReconcileError;
use super::queue::WorkQueue;
use crate::metrics::{ControllerLabels, Metrics, ReconcileLabels};

/// Spacing of the runs of one key.
#[derive(Clone, Copy, Debug)]
pub struct Pacing {
    /// Runs of one key are spaced by this many times the last run's duration...
    pub factor: u32,
    /// ...and by no more than this.
    pub max_interval: Duration,
}

impl Default for Pacing {
    fn default() -> Self {
        Pacing { factor: 2, max_interval: Duration::from_secs(1) }
    }
}

/// The backoff after the `n`th consecutive failure of a key with HTTP status `code`.
pub fn backoff(code: Option<u16>, n: u32) -> Duration {
    let base = match code {
        Some(409) => Duration::from_millis(100),
        Some(429) => Duration::from_secs(1),
        _ => Duration::from_millis(500),
    };
    base.saturating_mul(1 << n.saturating_sub(1).min(10)).min(Duration::from_secs(60))
}

#[derive(Default)]
struct KeyState {
    failures: u32,
    /// When the last run started and how long it took.
    last: Option<(Instant, Duration)>,
}

/// Runs one controller's reconciles.
pub struct Runner {
    name: &'static str,
    queue: WorkQueue,
    metrics: Metrics,
    workers: usize,
    pacing: Pacing,
    keys: Mutex<HashMap<String, KeyState>>,
}

impl Runner {
    /// A runner of the controller `name` over `queue`.
    pub fn new(name: &'static str, queue: WorkQueue, metrics: Metrics, workers: usize, pacing: Pacing) -> Arc<Self> {
        Arc::new(Runner { name, queue, metrics, workers: workers.max(1), pacing, keys: Mutex::default() })
    }

    /// The queue (watch handlers add keys to it).
    pub fn queue(&self) -> &WorkQueue {
        &self.queue
    }

    fn key_state<R>(&self, key: &str, f: impl FnOnce(&mut KeyState) -> R) -> R {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        f(keys.entry(key.to_string()).or_default())
    }

    /// Forgets a key's failures and pacing (its object is gone).
    pub fn forget(&self, key: &str) {
        self.keys.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
    }

    /// Runs reconciles until `stop` is cancelled; reconciles running then finish first.
    pub async fn run<F, Fut>(self: Arc<Self>, reconcile: F, stop: CancellationToken)
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<Duration>, ReconcileError>> + Send,
    {
        let reconcile = Arc::new(reconcile);
        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..self.workers {
            let (me, reconcile) = (Arc::clone(&self), Arc::clone(&reconcile));
            workers.spawn(async move {
                while let Some(key) = me.queue.next().await {
                    me.run_one(&key, reconcile.as_ref()).await;
                    me.queue.done(&key);
                }
            });
        }
        stop.cancelled().await;
        self.queue.close();
        while workers.join_next().await.is_some() {}
        tracing::info!(controller = self.name, "stopped");
    }

    async fn run_one<F, Fut>(&self, key: &str, reconcile: &F)
    where
        F: Fn(String) -> Fut,
        Fut: Future<Output = Result<Option<Duration>, ReconcileError>>,
    {
        // Pacing: too soon after the last run of this key, it waits its turn.
        if let Some((at, took)) = self.key_state(key, |s| s.last) {
            let spacing = took.saturating_mul(self.pacing.factor).min(self.pacing.max_interval);
            let since = at.elapsed();
            if since < spacing {
                self.queue.add_after(key.to_string(), spacing - since);
                return;
            }
        }
        let labels = ControllerLabels { controller: self.name.into() };
        let active = self.metrics.reconciles_active.get_or_create(&labels).clone();
        active.inc();
        let started = Instant::now();
        let span = tracing::info_span!("reconcile", controller = self.name, object = %key);
        let result = tracing::Instrument::instrument(reconcile(key.to_string()), span).await;
        let took = started.elapsed();
        active.dec();
        self.metrics.reconcile_time.get_or_create(&labels).observe(took.as_secs_f64());
        let (result_label, requeue) = match result {
            Ok(requeue) => {
                self.key_state(key, |s| {
                    s.failures = 0;
                    s.last = Some((started, took));
                });
                // Every reconcile that did not fail is a `success` (as before the runner; the
                // resync requeue would make nearly every one a controller-runtime `requeue_after`).
                ("success", requeue)
            }
            Err(e) => {
                let n = self.key_state(key, |s| {
                    s.failures = s.failures.saturating_add(1);
                    s.last = Some((started, took));
                    s.failures
                });
                let delay = backoff(e.code(), n);
                if e.code() == Some(409) {
                    tracing::debug!(controller = self.name, object = %key, failures = n, "{e}; retrying in {delay:?}");
                } else {
                    tracing::warn!(controller = self.name, object = %key, failures = n, "{e}; retrying in {delay:?}");
                }
                ("error", Some(delay))
            }
        };
        self.metrics
            .reconciles
            .get_or_create(&ReconcileLabels { controller: self.name.into(), result: result_label.into() })
            .inc();
        if let Some(d) = requeue {
            self.queue.add_after(key.to_string(), d);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn conflict() -> ReconcileError {
        ReconcileError::Api { what: "patch pod ns/a".into(), code: Some(409), message: "Conflict".into() }
    }

    #[test]
    fn backoff_by_class_doubles_up_to_a_minute() {
        assert_eq!(backoff(Some(409), 1), Duration::from_millis(100));
        assert_eq!(backoff(Some(409), 3), Duration::from_millis(400));
        assert_eq!(backoff(Some(429), 1), Duration::from_secs(1));
        assert_eq!(backoff(None, 2), Duration::from_secs(1));
        assert_eq!(backoff(Some(500), 30), Duration::from_secs(60));
    }

    /// Records when each run of each key started (in paused time since the test began).
    #[derive(Default)]
    struct Log(Mutex<Vec<(String, Duration)>>);

    impl Log {
        fn runs(&self, key: &str) -> Vec<Duration> {
            self.0.lock().unwrap().iter().filter(|(k, _)| k == key).map(|(_, d)| *d).collect()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn failures_back_off_per_key_and_success_resets_and_requeues_as_asked() {
        let metrics = Metrics::new();
        let runner =
            Runner::new("test", WorkQueue::new("test", metrics.clone()), metrics.clone(), 2, Pacing::default());
        let log = Arc::new(Log::default());
        let t0 = tokio::time::Instant::now();
        let calls = Arc::new(AtomicUsize::new(0));
        let (l, c) = (Arc::clone(&log), Arc::clone(&calls));
        let reconcile = move |key: String| {
            let (l, c) = (Arc::clone(&l), Arc::clone(&c));
            async move {
                l.0.lock().unwrap().push((key.clone(), t0.elapsed()));
                match key.as_str() {
                    // Fails three times with 409, then asks to be looked at in 30 s.
                    "ns/flaky" if c.fetch_add(1, Ordering::SeqCst) < 3 => Err(conflict()),
                    "ns/flaky" => Ok(Some(Duration::from_secs(30))),
                    _ => Ok(None),
                }
            }
        };
        let stop = CancellationToken::new();
        let task = tokio::spawn(Arc::clone(&runner).run(reconcile, stop.clone()));
        runner.queue().add("ns/flaky".into());
        runner.queue().add("ns/calm".into());
        tokio::time::sleep(Duration::from_secs(40)).await;
        let ms = |v: &[u64]| v.iter().map(|m| Duration::from_millis(*m)).collect::<Vec<_>>();
        // 100 ms, 200 ms, 400 ms of backoff, then the 30 s requeue.
        assert_eq!(log.runs("ns/flaky"), ms(&[0, 100, 300, 700, 30_700]));
        assert_eq!(log.runs("ns/calm"), ms(&[0]), "no requeue asked: it runs once");
        stop.cancel();
        task.await.unwrap();
        let text = metrics.encode();
        for line in [
            "controller_runtime_reconcile_total{controller=\"test\",result=\"error\"} 3",
            "controller_runtime_reconcile_total{controller=\"test\",result=\"success\"} 3",
            "controller_runtime_active_workers{controller=\"test\"} 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn runs_of_one_key_are_paced_by_their_duration_and_never_overlap() {
        let metrics = Metrics::new();
        let pacing = Pacing { factor: 2, max_interval: Duration::from_secs(1) };
        let runner = Runner::new("test", WorkQueue::new("test", metrics.clone()), metrics, 4, pacing);
        let log = Arc::new(Log::default());
        let running = Arc::new(AtomicUsize::new(0));
        let t0 = tokio::time::Instant::now();
        let (l, r) = (Arc::clone(&log), Arc::clone(&running));
        let reconcile = move |key: String| {
            let (l, r) = (Arc::clone(&l), Arc::clone(&r));
            async move {
                assert_eq!(r.fetch_add(1, Ordering::SeqCst), 0, "two reconciles of one key at once");
                l.0.lock().unwrap().push((key, t0.elapsed()));
                // A reconcile that takes 300 ms.
                tokio::time::sleep(Duration::from_millis(300)).await;
                r.fetch_sub(1, Ordering::SeqCst);
                Ok(None)
            }
        };
        let stop = CancellationToken::new();
        let task = tokio::spawn(Arc::clone(&runner).run(reconcile, stop.clone()));
        // A stream of events: every 50 ms for 2 s.
        for _ in 0..40 {
            runner.queue().add("ns/busy".into());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tokio::time::sleep(Duration::from_secs(3)).await;
        let runs = log.runs("ns/busy");
        // Each run takes 300 ms, and the next starts no sooner than 600 ms after the last started.
        for pair in runs.windows(2) {
            assert!(pair[1] - pair[0] >= Duration::from_millis(600), "{runs:?}");
        }
        assert!(runs.len() >= 3 && runs.len() <= 5, "40 events folded into a few runs: {runs:?}");
        stop.cancel();
        task.await.unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_lets_running_reconciles_finish_and_starts_no_more() {
        let metrics = Metrics::new();
        let runner = Runner::new("test", WorkQueue::new("test", metrics.clone()), metrics, 1, Pacing::default());
        let finished = Arc::new(AtomicUsize::new(0));
        let f = Arc::clone(&finished);
        let reconcile = move |_key: String| {
            let f = Arc::clone(&f);
            async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                f.fetch_add(1, Ordering::SeqCst);
                Ok(None)
            }
        };
        let stop = CancellationToken::new();
        let task = tokio::spawn(Arc::clone(&runner).run(reconcile, stop.clone()));
        runner.queue().add("ns/a".into());
        runner.queue().add("ns/b".into());
        tokio::time::sleep(Duration::from_millis(500)).await;
        stop.cancel();
        task.await.unwrap();
        assert_eq!(finished.load(Ordering::SeqCst), 1, "a finished, b never started");
    }
}
