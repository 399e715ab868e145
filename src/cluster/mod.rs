//! The cluster view: the few other objects handlers read (Namespaces, Pods, SidecarSets,
//! ControllerRevisions, kruise's ConfigMap, PodUnavailableBudgets), behind one small interface with two implementations:
//! the live cluster ([`live::LiveView`], watches) and the file-backed view of `--standalone
//! --objects-dir` ([`files::FileView`]), both over one indexed store ([`snapshot::Snapshot`]).
//! Reads are synchronous lookups in memory: a handler never waits on the network. The pods one
//! review needs are fetched before it is handled ([`PodSource`]) and laid over the view
//! ([`WithPods`]).

pub mod files;
pub mod live;
pub mod sidecarset;
pub mod snapshot;
pub mod watch_backoff;
pub mod watch_errors;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::apis::SidecarSet;
use crate::apis::podunavailablebudget::PodUnavailableBudget;
use crate::apis::workloadspread::WorkloadSpread;

/// Read access to the objects handlers need.
pub trait ClusterView: Send + Sync {
    /// A Namespace by name.
    fn namespace(&self, name: &str) -> Option<Arc<Namespace>>;
    /// A Pod by namespace and name.
    fn pod(&self, namespace: &str, name: &str) -> Option<Arc<Pod>>;
    /// Every SidecarSet.
    fn sidecarsets(&self) -> Vec<Arc<SidecarSet>>;
    /// One SidecarSet by name.
    fn sidecarset(&self, name: &str) -> Option<Arc<SidecarSet>> {
        self.sidecarsets().into_iter().find(|s| s.metadata.name.as_deref() == Some(name))
    }
    /// Registers `handler`, called with each object the view takes in or lets go (a watch event,
    /// every object of a relist) after the view holds the change, so that the leader's
    /// controllers follow the objects the webhook already watches instead of watching them a
    /// second time (one watch per kind). A handler that returns `false` is dropped (its
    /// controller stopped: the view outlives each term of leadership). Views that never change
    /// ignore it.
    fn on_change(&self, _handler: ViewHandler) {}
    /// The ControllerRevisions of a namespace.
    fn controller_revisions(&self, namespace: &str) -> Vec<Arc<ControllerRevision>>;
    /// The SidecarSets that can inject into pods of `namespace` (spec §4.2, issue 4 item 4):
    /// those scoped to it, then the cluster-wide ones. Views index sets by scope so that a pod
    /// CREATE never looks at sets of other namespaces; this default filters the full list.
    fn sidecarsets_for_namespace(&self, namespace: &str) -> Vec<Arc<SidecarSet>> {
        let all = self.sidecarsets();
        let scoped = |s: &&Arc<SidecarSet>| match crate::core::sidecar::scope(s) {
            crate::core::sidecar::Scope::Namespaces(ns) => ns.iter().any(|n| n == namespace),
            crate::core::sidecar::Scope::Cluster => false,
        };
        let cluster = |s: &&Arc<SidecarSet>| crate::core::sidecar::scope(s) == crate::core::sidecar::Scope::Cluster;
        all.iter().filter(scoped).chain(all.iter().filter(cluster)).cloned().collect()
    }
    /// The candidates of [`ClusterView::sidecarsets_for_namespace`] that can apply to a pod of
    /// `namespace` with `labels`, in the same order: views may leave out sets whose valid
    /// selector requires a label the pod does not carry (they can neither match nor fail), so
    /// that a pod CREATE costs the same whatever the number of sets it does not match (issue 16).
    /// This default leaves out nothing.
    fn sidecarsets_for_pod(&self, namespace: &str, _labels: &BTreeMap<String, String>) -> Vec<Arc<SidecarSet>> {
        self.sidecarsets_for_namespace(namespace)
    }
    /// A ConfigMap by namespace and name (kruise's `kruise-configuration`).
    fn config_map(&self, _namespace: &str, _name: &str) -> Option<Arc<ConfigMap>> {
        None
    }
    /// Every pod the view holds in `namespace` (the file view's; the live view holds none: a
    /// review that needs them lists them through [`ListSource`]).
    fn pods_in_namespace(&self, _namespace: &str) -> Vec<Arc<Pod>> {
        Vec::new()
    }
    /// The PodUnavailableBudgets of `namespace`, in name order (what kruise lists from its cache).
    fn pod_unavailable_budgets(&self, _namespace: &str) -> Vec<Arc<PodUnavailableBudget>> {
        Vec::new()
    }
    /// The WorkloadSpreads of `namespace`, in name order (the pod webhook's index by namespace).
    fn workload_spreads(&self, _namespace: &str) -> Vec<Arc<WorkloadSpread>> {
        Vec::new()
    }
}

/// A [`ClusterView::on_change`] handler: given the kind and the metadata of the object that
/// changed, whether it still wants to hear of changes.
pub type ViewHandler = Box<dyn Fn(snapshot::ViewKind, &ObjectMeta) -> bool + Send + Sync>;

/// What a [`ListSource`] returns: the objects, or why they cannot be listed.
pub type ListFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Vec<T>, String>> + Send + 'a>>;

/// Where the objects a Cascading deletion-protection check counts are listed at admission time
/// (the live cluster; deletes of Namespaces and CRDs are rare, so they are never watched).
pub trait ListSource: Send + Sync {
    /// Every pod of `namespace`.
    fn pods<'a>(&'a self, namespace: &'a str) -> ListFuture<'a, Pod>;
    /// Every PersistentVolumeClaim of `namespace`.
    fn claims<'a>(&'a self, namespace: &'a str) -> ListFuture<'a, PersistentVolumeClaim>;
    /// The metadata of every custom resource of `group`/`version` `plural`, in all namespaces.
    fn custom_resources<'a>(&'a self, group: &'a str, version: &'a str, plural: &'a str) -> ListFuture<'a, ObjectMeta>;
    /// The objects of `group`/`version` `plural` in `namespace` as JSON — every one, or only the
    /// one called `name` (none when it does not exist). The WorkloadSpread webhook lists the
    /// other WorkloadSpreads and reads the target workload this way (writes of WorkloadSpreads
    /// are rare, so neither is watched). Sources that cannot list say so.
    fn namespaced_json<'a>(
        &'a self,
        _resource: &'a NamespacedResource,
        _namespace: &'a str,
        _name: Option<&'a str>,
    ) -> ListFuture<'a, serde_json::Value> {
        Box::pin(async { Err("this source cannot list namespaced objects".to_string()) })
    }
}

/// A namespaced resource by group, version and plural (for [`ListSource::namespaced_json`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NamespacedResource {
    /// API group ("" for core).
    pub group: &'static str,
    /// Version.
    pub version: &'static str,
    /// Plural resource name.
    pub plural: &'static str,
}

/// What [`PodSource::fetch`] returns: the pods found, or why they cannot be read.
pub type PodsFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Vec<Arc<Pod>>, String>> + Send + 'a>>;

/// Where pods are read on demand (the live view; the file view holds its pods).
pub trait PodSource: Send + Sync {
    /// The pods of `namespace` with these names that exist; `Err` when they cannot be read.
    fn fetch<'a>(&'a self, namespace: &'a str, names: &'a [String]) -> PodsFuture<'a>;
}

/// A view with some pods fetched for one review laid over another view.
pub struct WithPods {
    base: Arc<dyn ClusterView>,
    pods: Vec<Arc<Pod>>,
}

impl WithPods {
    /// `base` plus `pods`.
    pub fn new(base: Arc<dyn ClusterView>, pods: Vec<Arc<Pod>>) -> Self {
        Self { base, pods }
    }
}

impl ClusterView for WithPods {
    fn namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        self.base.namespace(name)
    }
    fn pod(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        let here = self.pods.iter().find(|p| {
            p.metadata.name.as_deref() == Some(name)
                && p.metadata.namespace.as_deref().unwrap_or("default") == namespace
        });
        here.cloned().or_else(|| self.base.pod(namespace, name))
    }
    fn sidecarsets(&self) -> Vec<Arc<SidecarSet>> {
        self.base.sidecarsets()
    }
    fn controller_revisions(&self, namespace: &str) -> Vec<Arc<ControllerRevision>> {
        self.base.controller_revisions(namespace)
    }
    fn sidecarsets_for_namespace(&self, namespace: &str) -> Vec<Arc<SidecarSet>> {
        self.base.sidecarsets_for_namespace(namespace)
    }
    fn sidecarsets_for_pod(&self, namespace: &str, labels: &BTreeMap<String, String>) -> Vec<Arc<SidecarSet>> {
        self.base.sidecarsets_for_pod(namespace, labels)
    }
    fn config_map(&self, namespace: &str, name: &str) -> Option<Arc<ConfigMap>> {
        self.base.config_map(namespace, name)
    }
    fn pods_in_namespace(&self, namespace: &str) -> Vec<Arc<Pod>> {
        self.base.pods_in_namespace(namespace)
    }
    fn pod_unavailable_budgets(&self, namespace: &str) -> Vec<Arc<PodUnavailableBudget>> {
        self.base.pod_unavailable_budgets(namespace)
    }
    fn workload_spreads(&self, namespace: &str) -> Vec<Arc<WorkloadSpread>> {
        self.base.workload_spreads(namespace)
    }
}

/// The labels a namespace is matched with: its own, plus `kubernetes.io/metadata.name`, which
/// Kubernetes always sets; a namespace the view does not hold has only that label (spec §4.2).
pub fn namespace_labels(view: &dyn ClusterView, name: &str) -> BTreeMap<String, String> {
    let mut labels = view.namespace(name).and_then(|ns| ns.metadata.labels.clone()).unwrap_or_default();
    labels.insert(crate::apis::keys::NAMESPACE_NAME_LABEL.to_string(), name.to_string());
    labels
}

/// A view holding nothing (tests, and `serve` without `--standalone` until the live view exists).
#[derive(Debug, Default, Clone, Copy)]
pub struct EmptyView;

impl ClusterView for EmptyView {
    fn namespace(&self, _: &str) -> Option<Arc<Namespace>> {
        None
    }
    fn pod(&self, _: &str, _: &str) -> Option<Arc<Pod>> {
        None
    }
    fn sidecarsets(&self) -> Vec<Arc<SidecarSet>> {
        Vec::new()
    }
    fn controller_revisions(&self, _: &str) -> Vec<Arc<ControllerRevision>> {
        Vec::new()
    }
}
