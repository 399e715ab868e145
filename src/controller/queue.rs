//! Work-queue metrics of a controller, named as controller-runtime names them (`workqueue_depth`,
//! `workqueue_adds_total`, `workqueue_queue_duration_seconds`, labels `controller` and `name`), and
//! the triggers that feed them.
//!
//! kube-runtime's scheduler cannot be looked into, so the queue is followed from its inputs: every
//! watch event that names a workload is an add; a workload is waiting from its first trigger until
//! its reconcile starts (kube-runtime folds repeated triggers of one workload into one run, as
//! client-go's work queue folds repeated adds of one key). Requeues a reconcile asked for are not
//! in the depth before their run starts (client-go counts them once due; that moment is
//! kube-runtime's).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use kube::Resource;
use kube::runtime::reflector::ObjectRef;

use crate::metrics::{Metrics, QueueLabels};

/// The waiting workloads of one controller, by `namespace/name`.
#[derive(Clone)]
pub struct Queue {
    waiting: Arc<Mutex<HashMap<String, Instant>>>,
    labels: QueueLabels,
    metrics: Metrics,
}

impl Queue {
    /// An empty queue of the controller named `controller`.
    pub fn new(controller: &str, metrics: Metrics) -> Self {
        let labels = QueueLabels { controller: controller.into(), name: controller.into() };
        Queue { waiting: Arc::default(), labels, metrics }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Instant>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A watch event named the workload `key`.
    pub fn add(&self, key: String) {
        self.metrics.queue_adds.get_or_create(&self.labels).inc();
        let mut waiting = self.lock();
        waiting.entry(key).or_insert_with(Instant::now);
        self.metrics.queue_depth.get_or_create(&self.labels).set(i64::try_from(waiting.len()).unwrap_or(i64::MAX));
    }

    /// The reconcile of `key` starts: it leaves the queue.
    pub fn started(&self, key: &str) {
        let mut waiting = self.lock();
        if let Some(since) = waiting.remove(key) {
            self.metrics.queue_wait.get_or_create(&self.labels).observe(since.elapsed().as_secs_f64());
        }
        self.metrics.queue_depth.get_or_create(&self.labels).set(i64::try_from(waiting.len()).unwrap_or(i64::MAX));
    }

    /// Waiting workloads now.
    pub fn depth(&self) -> usize {
        self.lock().len()
    }
}

/// The workloads of kind `kind` in API group `group` that own `obj`, as references for the
/// controller, each also added to `queue`. Any version of the group matches (an object created
/// by a controller that wrote `apps.kruise.io/v1beta1` into its owner reference still belongs to
/// the workload a `v1alpha1` client reads); kube's own `owns` matches the exact apiVersion only.
pub fn owners<W, O>(obj: &O, group: &str, kind: &str, queue: &Queue) -> Vec<ObjectRef<W>>
where
    W: Resource<DynamicType = ()>,
    O: Resource,
{
    let meta = obj.meta();
    let ns = meta.namespace.as_deref().unwrap_or("");
    meta.owner_references
        .iter()
        .flatten()
        .filter(|r| r.kind == kind && r.api_version.split_once('/').is_some_and(|(g, _)| g == group))
        .map(|r| {
            queue.add(format!("{ns}/{}", r.name));
            ObjectRef::new(&r.name).within(ns)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::cloneset::CloneSet;
    use k8s_openapi::api::core::v1::Pod;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn pod(owners: &[(&str, &str, &str)]) -> Pod {
        let mut p = Pod::default();
        p.metadata.namespace = Some("ns".into());
        p.metadata.owner_references = Some(
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
        );
        p
    }

    #[test]
    fn owners_of_any_version_of_the_group_trigger_and_count() {
        let queue = Queue::new("cloneset", Metrics::new());
        let p = pod(&[
            ("apps.kruise.io/v1alpha1", "CloneSet", "web"),
            ("apps.kruise.io/v1beta1", "CloneSet", "api"),
            ("apps/v1", "CloneSet", "other-group"),
            ("apps.kruise.io/v1alpha1", "StatefulSet", "other-kind"),
            ("apps.kruise.io", "CloneSet", "no-version"),
        ]);
        let refs: Vec<ObjectRef<CloneSet>> = owners(&p, "apps.kruise.io", "CloneSet", &queue);
        let names: Vec<(&str, Option<&str>)> = refs.iter().map(|r| (r.name.as_str(), r.namespace.as_deref())).collect();
        assert_eq!(names, [("web", Some("ns")), ("api", Some("ns"))]);
        assert_eq!(queue.depth(), 2);
        // A second event for a waiting workload adds but does not deepen.
        let again: Vec<ObjectRef<CloneSet>> =
            owners(&pod(&[("apps.kruise.io/v1alpha1", "CloneSet", "web")]), "apps.kruise.io", "CloneSet", &queue);
        assert_eq!(again.len(), 1);
        assert_eq!(queue.depth(), 2);
        queue.started("ns/web");
        queue.started("ns/never-queued");
        assert_eq!(queue.depth(), 1);
        let text = queue.metrics.encode();
        for line in [
            "workqueue_depth{controller=\"cloneset\",name=\"cloneset\"} 1",
            "workqueue_adds_total{controller=\"cloneset\",name=\"cloneset\"} 3",
            "workqueue_queue_duration_seconds_count{controller=\"cloneset\",name=\"cloneset\"} 1",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
    }
}
