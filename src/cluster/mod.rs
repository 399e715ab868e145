//! The cluster view: the few other objects handlers read (Namespaces, Pods, SidecarSets,
//! ControllerRevisions), behind one small interface with two implementations: the live cluster
//! (kube-runtime reflectors, a later issue) and the file-backed view of `--standalone
//! --objects-dir` ([`files::FileView`]). Reads are synchronous lookups in memory: a handler never
//! waits on the network.

pub mod files;

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Namespace, Pod};

use crate::apis::SidecarSet;

/// Read access to the objects handlers need.
pub trait ClusterView: Send + Sync {
    /// A Namespace by name.
    fn namespace(&self, name: &str) -> Option<Arc<Namespace>>;
    /// A Pod by namespace and name.
    fn pod(&self, namespace: &str, name: &str) -> Option<Arc<Pod>>;
    /// Every SidecarSet.
    fn sidecarsets(&self) -> Vec<Arc<SidecarSet>>;
    /// The ControllerRevisions of a namespace.
    fn controller_revisions(&self, namespace: &str) -> Vec<Arc<ControllerRevision>>;
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
