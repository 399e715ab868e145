//! Which NodeImages an ImagePullJob pulls on (kruise `imagejob_reader.go`
//! `GetNodeImagesForJob`), and which jobs a NodeImage or a pod change concerns
//! (`GetActiveJobsForNodeImage`, `GetActiveJobsForPod`):
//! - `spec.podSelector`: the nodes of the job namespace's active, scheduled pods it matches
//!   (a node without a NodeImage is skipped);
//! - no `spec.selector`: every NodeImage;
//! - `spec.selector.names`: those NodeImages that exist;
//! - otherwise the selector's labels over the NodeImages' labels (copied from their Nodes).
//!
//! kruise orders pods of a job owned by a workload with its sorting control first; the order only
//! matters for which nodes come first under `parallelism`, and kruise then sorts the names
//! anyway (`notSynced.List()`), so we do not.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;

use crate::apis::imagepulljob::v1beta1::ImagePullJob;
use crate::apis::nodeimage::v1beta1::NodeImage;
use crate::compat::selector::{Selector, SelectorError};
use crate::core::pods;

/// How a job picks its nodes.
#[derive(Clone, Debug, PartialEq)]
pub enum Targeting {
    /// Nodes of matching pods in `namespace`.
    Pods { namespace: String, selector: Selector },
    /// Every NodeImage.
    All,
    /// These NodeImages.
    Names(Vec<String>),
    /// NodeImages whose labels match.
    Labels(Selector),
}

/// The job's targeting, or why its selector cannot be read.
pub fn targeting(job: &ImagePullJob) -> Result<Targeting, SelectorError> {
    let spec = &job.spec.fields;
    if let Some(sel) = &spec.pod_selector {
        let namespace = job.metadata.namespace.clone().unwrap_or_default();
        return Ok(Targeting::Pods { namespace, selector: Selector::from_validated(Some(sel))? });
    }
    match &spec.selector {
        None => Ok(Targeting::All),
        Some(s) if !s.names.is_empty() => Ok(Targeting::Names(s.names.clone())),
        Some(s) => Ok(Targeting::Labels(Selector::from_validated(Some(&s.label_selector))?)),
    }
}

fn labels(ni: &NodeImage) -> &std::collections::BTreeMap<String, String> {
    static EMPTY: std::collections::BTreeMap<String, String> = std::collections::BTreeMap::new();
    ni.metadata.labels.as_ref().unwrap_or(&EMPTY)
}

fn name(ni: &NodeImage) -> &str {
    ni.metadata.name.as_deref().unwrap_or("")
}

/// The NodeImages `targeting` picks out of `node_images` (sorted by name), given the pods of the
/// job's namespace; in name order, each once.
pub fn select(targeting: &Targeting, node_images: &[Arc<NodeImage>], pods: &[Arc<Pod>]) -> Vec<Arc<NodeImage>> {
    let find = |n: &str| node_images.binary_search_by(|ni| name(ni).cmp(n)).ok().map(|i| Arc::clone(&node_images[i]));
    match targeting {
        Targeting::All => node_images.to_vec(),
        Targeting::Names(names) => {
            let wanted: BTreeSet<&str> = names.iter().map(String::as_str).collect();
            wanted.into_iter().filter_map(find).collect()
        }
        Targeting::Labels(sel) => node_images.iter().filter(|ni| sel.matches(labels(ni))).cloned().collect(),
        Targeting::Pods { namespace, selector } => {
            let nodes: BTreeSet<&str> = pods
                .iter()
                .filter(|p| p.metadata.namespace.as_deref() == Some(namespace.as_str()))
                .filter(|p| pods::is_active(p) && selector.matches(pods::labels(p)))
                .filter_map(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()).filter(|n| !n.is_empty()))
                .collect();
            nodes.into_iter().filter_map(find).collect()
        }
    }
}

/// Whether a change of `ni` (labels `labels`) concerns a job of `targeting` whose pods on that
/// node are `pods_on_node` (`GetActiveJobsForNodeImage`).
pub fn concerns_node(
    targeting: &Targeting,
    node: &str,
    labels: &std::collections::BTreeMap<String, String>,
    pods_on_node: &[Arc<Pod>],
) -> bool {
    match targeting {
        Targeting::All => true,
        Targeting::Names(names) => names.iter().any(|n| n == node),
        Targeting::Labels(sel) => sel.matches(labels),
        Targeting::Pods { namespace, selector } => pods_on_node
            .iter()
            .any(|p| p.metadata.namespace.as_deref() == Some(namespace.as_str()) && selector.matches(pods::labels(p))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::imagepulljob::testkit::{job, node_image, pod};
    use serde_json::json;

    fn names(v: &[Arc<NodeImage>]) -> Vec<&str> {
        v.iter().map(|n| name(n)).collect()
    }

    fn world() -> Vec<Arc<NodeImage>> {
        vec![
            Arc::new(node_image("n1", &[("zone", "a")])),
            Arc::new(node_image("n2", &[("zone", "b")])),
            Arc::new(node_image("n3", &[("zone", "a"), ("gpu", "true")])),
        ]
    }

    #[test]
    fn selection_rows() {
        let nis = world();
        let pods = vec![
            Arc::new(pod("p1", "ns", "n2", &[("app", "web")], "Running")),
            Arc::new(pod("p2", "ns", "n2", &[("app", "web")], "Running")),
            Arc::new(pod("p3", "ns", "n3", &[("app", "web")], "Succeeded")),
            Arc::new(pod("p4", "other", "n1", &[("app", "web")], "Running")),
            Arc::new(pod("p5", "ns", "", &[("app", "web")], "Pending")),
            Arc::new(pod("p6", "ns", "gone", &[("app", "web")], "Running")),
            Arc::new(pod("p7", "ns", "n1", &[("app", "db")], "Running")),
        ];
        let rows: Vec<(&str, serde_json::Value, Vec<&str>)> = vec![
            ("no selector: every NodeImage", json!({}), vec!["n1", "n2", "n3"]),
            (
                "names that exist, each once",
                json!({"selector": {"names": ["n3", "missing", "n1", "n3"]}}),
                vec!["n1", "n3"],
            ),
            ("label selector", json!({"selector": {"matchLabels": {"zone": "a"}}}), vec!["n1", "n3"]),
            (
                "label expressions",
                json!({"selector": {"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}}),
                vec!["n1", "n2"],
            ),
            ("empty label selector: everything", json!({"selector": {}}), vec!["n1", "n2", "n3"]),
            (
                "pod selector: nodes of active scheduled pods of the namespace, NodeImage present",
                json!({"podSelector": {"matchLabels": {"app": "web"}}}),
                vec!["n2"],
            ),
            (
                "pod selector wins over selector",
                json!({"podSelector": {"matchLabels": {"app": "db"}}, "selector": {"names": ["n2"]}}),
                vec!["n1"],
            ),
        ];
        for (what, spec, want) in rows {
            let t = targeting(&job("j", spec)).unwrap();
            assert_eq!(names(&select(&t, &nis, &pods)), want, "{what}");
        }
    }

    #[test]
    fn a_node_change_concerns_the_jobs_that_pick_it() {
        let zone_a: std::collections::BTreeMap<String, String> = [("zone".to_string(), "a".to_string())].into();
        let web = vec![Arc::new(pod("p1", "ns", "n1", &[("app", "web")], "Running"))];
        let t = |spec| targeting(&job("j", spec)).unwrap();
        assert!(concerns_node(&t(json!({})), "n1", &zone_a, &[]));
        assert!(concerns_node(&t(json!({"selector": {"names": ["n1"]}})), "n1", &zone_a, &[]));
        assert!(!concerns_node(&t(json!({"selector": {"names": ["n2"]}})), "n1", &zone_a, &[]));
        assert!(concerns_node(&t(json!({"selector": {"matchLabels": {"zone": "a"}}})), "n1", &zone_a, &[]));
        assert!(!concerns_node(&t(json!({"selector": {"matchLabels": {"zone": "b"}}})), "n1", &zone_a, &[]));
        assert!(concerns_node(&t(json!({"podSelector": {"matchLabels": {"app": "web"}}})), "n1", &zone_a, &web));
        assert!(!concerns_node(&t(json!({"podSelector": {"matchLabels": {"app": "db"}}})), "n1", &zone_a, &web));
    }
}
