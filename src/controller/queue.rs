//! The work queue of one controller, as client-go's rate-limited work queue behaves: a key added
//! several times before its reconcile starts runs once; a key added while it runs runs again after
//! (never two reconciles of one key at a time); a key can be added for later (`add_after`), the
//! earliest time wins. Its metrics are controller-runtime's (`workqueue_depth`,
//! `workqueue_adds_total`, `workqueue_queue_duration_seconds`, labels `controller` and `name`):
//! watch triggers count as adds and the depth is the keys they put in waiting; a requeue a
//! reconcile asked for is not counted until its time comes (client-go's `AddAfter`).
//!
//! [`owners`] turns a watch event of an owned object into the keys of its owners.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::time::Instant;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio::sync::Notify;

use crate::metrics::{Metrics, QueueLabels};

#[derive(Default)]
struct State {
    /// When each scheduled key is due (with a sequence number for a stable order).
    due: BTreeMap<(Instant, u64), String>,
    slot: HashMap<String, (Instant, u64)>,
    /// Keys a watch trigger put in waiting, since when (for the depth and wait metrics).
    triggered: HashMap<String, Instant>,
    running: HashSet<String>,
    /// Keys added while running: scheduled again at this time when their reconcile ends.
    again: HashMap<String, Instant>,
    seq: u64,
    closed: bool,
}

/// One controller's queue; clones share it.
#[derive(Clone)]
pub struct WorkQueue {
    state: Arc<Mutex<State>>,
    notify: Arc<Notify>,
    labels: QueueLabels,
    metrics: Metrics,
}

impl WorkQueue {
    /// An empty queue of the controller named `controller`.
    pub fn new(controller: &str, metrics: Metrics) -> Self {
        let labels = QueueLabels { controller: controller.into(), name: controller.into() };
        WorkQueue { state: Arc::default(), notify: Arc::new(Notify::new()), labels, metrics }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set_depth(&self, st: &State) {
        self.metrics.queue_depth.get_or_create(&self.labels).set(i64::try_from(st.triggered.len()).unwrap_or(i64::MAX));
    }

    fn schedule(st: &mut State, key: String, at: Instant) -> bool {
        if st.running.contains(&key) {
            let e = st.again.entry(key).or_insert(at);
            *e = (*e).min(at);
            return false;
        }
        if let Some(&(due, seq)) = st.slot.get(&key) {
            if due <= at {
                return false;
            }
            st.due.remove(&(due, seq));
        }
        st.seq += 1;
        let seq = st.seq;
        st.due.insert((at, seq), key.clone());
        st.slot.insert(key, (at, seq));
        true
    }

    /// A watch event named `key`: reconcile it as soon as possible.
    pub fn add(&self, key: String) {
        self.metrics.queue_adds.get_or_create(&self.labels).inc();
        let now = Instant::now();
        let mut st = self.lock();
        st.triggered.entry(key.clone()).or_insert(now);
        let woke = Self::schedule(&mut st, key, now);
        self.set_depth(&st);
        drop(st);
        if woke {
            self.notify.notify_one();
        }
    }

    /// Reconcile `key` again after `delay` (or earlier if something else asks).
    pub fn add_after(&self, key: String, delay: Duration) {
        let at = Instant::now() + delay;
        let woke = Self::schedule(&mut self.lock(), key, at);
        if woke {
            self.notify.notify_one();
        }
    }

    /// The next due key, waiting until one is; `None` once the queue is closed.
    pub async fn next(&self) -> Option<String> {
        loop {
            let wait = {
                let mut st = self.lock();
                if st.closed {
                    return None;
                }
                let now = Instant::now();
                match st.due.first_key_value().map(|(k, v)| (*k, v.clone())) {
                    Some(((due, seq), key)) if due <= now => {
                        st.due.remove(&(due, seq));
                        st.slot.remove(&key);
                        st.running.insert(key.clone());
                        if let Some(since) = st.triggered.remove(&key) {
                            self.metrics.queue_wait.get_or_create(&self.labels).observe(since.elapsed().as_secs_f64());
                        }
                        self.set_depth(&st);
                        return Some(key);
                    }
                    Some(((due, _), _)) => Some(due - now),
                    None => None,
                }
            };
            match wait {
                Some(d) => {
                    tokio::select! {
                        () = tokio::time::sleep(d) => {}
                        () = self.notify.notified() => {}
                    }
                }
                None => self.notify.notified().await,
            }
        }
    }

    /// The reconcile of `key` ended; a key added meanwhile is scheduled again.
    pub fn done(&self, key: &str) {
        let mut st = self.lock();
        st.running.remove(key);
        if let Some(at) = st.again.remove(key) {
            Self::schedule(&mut st, key.to_string(), at);
            drop(st);
            self.notify.notify_one();
        }
    }

    /// Stops handing out keys (workers see `None`).
    pub fn close(&self) {
        self.lock().closed = true;
        self.notify.notify_waiters();
    }

    /// Whether [`WorkQueue::close`] was called (its runner has stopped).
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// Keys waiting because a watch event named them.
    pub fn depth(&self) -> usize {
        self.lock().triggered.len()
    }

    /// Keys scheduled (now or later), not counting those running.
    pub fn scheduled(&self) -> usize {
        self.lock().due.len()
    }
}

/// The keys (`namespace/name`) of the owners of kind `kind` in API group `group` of an object in
/// namespace `meta.namespace`. Any version of the group matches (an object created by a
/// controller that wrote `apps.kruise.io/v1beta1` into its owner reference still belongs to the
/// workload a `v1alpha1` client reads); kube's own `owns` matches the exact apiVersion only.
pub fn owners(meta: &ObjectMeta, group: &str, kind: &str) -> Vec<String> {
    let ns = meta.namespace.as_deref().unwrap_or("");
    meta.owner_references
        .iter()
        .flatten()
        .filter(|r| r.kind == kind && r.api_version.split_once('/').is_some_and(|(g, _)| g == group))
        .map(|r| format!("{ns}/{}", r.name))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn meta(owners: &[(&str, &str, &str)]) -> ObjectMeta {
        ObjectMeta {
            namespace: Some("ns".into()),
            owner_references: Some(
                owners
                    .iter()
                    .map(|(api_version, kind, name)| OwnerReference {
                        api_version: (*api_version).into(),
                        kind: (*kind).into(),
                        name: (*name).into(),
                        uid: format!("uid-{name}"),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn owners_of_any_version_of_the_group() {
        let m = meta(&[
            ("apps.kruise.io/v1alpha1", "CloneSet", "web"),
            ("apps.kruise.io/v1beta1", "CloneSet", "api"),
            ("apps/v1", "CloneSet", "other-group"),
            ("apps.kruise.io/v1alpha1", "StatefulSet", "other-kind"),
            ("apps.kruise.io", "CloneSet", "no-version"),
        ]);
        assert_eq!(owners(&m, "apps.kruise.io", "CloneSet"), ["ns/web", "ns/api"]);
    }

    #[tokio::test(start_paused = true)]
    async fn adds_fold_a_running_key_runs_again_and_metrics_follow() {
        let q = WorkQueue::new("cloneset", Metrics::new());
        q.add("ns/a".into());
        q.add("ns/b".into());
        q.add("ns/a".into());
        assert_eq!(q.depth(), 2, "a second add of a waiting key does not deepen");
        assert_eq!(q.next().await.as_deref(), Some("ns/a"));
        // Added while running: not handed out again until done.
        q.add("ns/a".into());
        assert_eq!(q.next().await.as_deref(), Some("ns/b"));
        q.done("ns/a");
        assert_eq!(q.next().await.as_deref(), Some("ns/a"));
        q.done("ns/a");
        q.done("ns/b");
        // Later requeues: the earliest wins, and the key comes when due.
        q.add_after("ns/c".into(), Duration::from_secs(10));
        q.add_after("ns/c".into(), Duration::from_secs(2));
        q.add_after("ns/c".into(), Duration::from_secs(5));
        let started = tokio::time::Instant::now();
        assert_eq!(q.next().await.as_deref(), Some("ns/c"));
        assert_eq!(started.elapsed(), Duration::from_secs(2));
        assert_eq!(q.scheduled(), 0);
        let text = q.metrics.encode();
        for line in [
            "workqueue_depth{controller=\"cloneset\",name=\"cloneset\"} 0",
            "workqueue_adds_total{controller=\"cloneset\",name=\"cloneset\"} 4",
            "workqueue_queue_duration_seconds_count{controller=\"cloneset\",name=\"cloneset\"} 3",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
        q.close();
        assert_eq!(q.next().await, None);
    }
}
