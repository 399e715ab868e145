//! What one SidecarSet round reads of the cluster view besides the set and its pods (spec §4.12,
//! kruise `sidecarset_processor.go`): the manager namespace's ControllerRevisions labelled
//! `kruise.io/sidecarset-name=<set>` (`registerLatestRevision` lists them by that label) and the
//! labels of the pods' namespaces (a `namespaceSelector` is evaluated on them). The controller
//! and `kruise plan sidecarset` both build the planner's input with it, so the plan shows what
//! the controller would see.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::Pod;

use super::ClusterView;
use crate::core::sidecar::{SIDECARSET_NAME_LABEL, pod_namespace};

/// The objects of [`round_objects`].
#[derive(Debug, Default)]
pub struct RoundObjects {
    /// The set's revisions in the manager namespace.
    pub revisions: Vec<Arc<ControllerRevision>>,
    /// Namespace name → labels, for each namespace of the pods that the view holds.
    pub namespace_labels: BTreeMap<String, BTreeMap<String, String>>,
}

impl RoundObjects {
    /// The revisions as the planner takes them.
    pub fn revision_refs(&self) -> Vec<&ControllerRevision> {
        self.revisions.iter().map(Arc::as_ref).collect()
    }
}

/// Whether `revision` belongs to SidecarSet `set` (its `kruise.io/sidecarset-name` label).
pub fn is_revision_of(revision: &ControllerRevision, set: &str) -> bool {
    revision.metadata.labels.as_ref().and_then(|l| l.get(SIDECARSET_NAME_LABEL)).map(String::as_str) == Some(set)
}

/// The revisions and namespace labels a round of SidecarSet `set` over `pods` reads. A namespace
/// the view does not hold is left out: a `namespaceSelector` does not match it, as kruise's
/// failed Namespace GET does not.
pub fn round_objects(view: &dyn ClusterView, set: &str, pods: &[&Pod], manager_namespace: &str) -> RoundObjects {
    let revisions =
        view.controller_revisions(manager_namespace).into_iter().filter(|r| is_revision_of(r, set)).collect();
    let mut namespace_labels = BTreeMap::new();
    for pod in pods {
        let ns = pod_namespace(pod.metadata.namespace.as_deref());
        if namespace_labels.contains_key(ns) {
            continue;
        }
        if view.namespace(ns).is_some() {
            namespace_labels.insert(ns.to_string(), super::namespace_labels(view, ns));
        }
    }
    RoundObjects { revisions, namespace_labels }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::snapshot::Snapshot;
    use serde_json::json;

    #[test]
    fn revisions_of_the_set_in_the_manager_namespace_and_labels_of_known_namespaces() {
        let mut view = Snapshot::default();
        for object in [
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "web", "labels": {"team": "a"}}}),
            json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "revision": 1, "metadata": {"name": "logs-1",
                "namespace": "kruise-system", "labels": {"kruise.io/sidecarset-name": "logs"}}}),
            json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "revision": 1, "metadata": {"name": "mesh-1",
                "namespace": "kruise-system", "labels": {"kruise.io/sidecarset-name": "mesh"}}}),
            json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "revision": 1, "metadata": {"name": "logs-2",
                "namespace": "web", "labels": {"kruise.io/sidecarset-name": "logs"}}}),
        ] {
            assert!(view.insert(object).unwrap());
        }
        let pod =
            |ns: &str| -> Pod { serde_json::from_value(json!({"metadata": {"name": "p", "namespace": ns}})).unwrap() };
        let (a, b, c) = (pod("web"), pod("web"), pod("other"));
        let got = round_objects(&view, "logs", &[&a, &b, &c], "kruise-system");
        let names: Vec<_> = got.revision_refs().iter().map(|r| r.metadata.name.clone().unwrap()).collect();
        assert_eq!(names, ["logs-1"], "only the set's revisions, only in the manager namespace");
        let want: BTreeMap<String, BTreeMap<String, String>> = [(
            "web".to_string(),
            [("team", "a"), ("kubernetes.io/metadata.name", "web")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )]
        .into();
        assert_eq!(got.namespace_labels, want, "a namespace the view does not hold is left out");
    }
}
