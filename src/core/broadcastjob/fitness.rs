//! Whether a BroadcastJob pod fits a node: kruise's `checkNodeFitness`
//! (`pkg/controller/broadcastjob/broadcastjob_controller.go`, v1.8.4), the scheduler predicates
//! it runs on a pod (a mock pod from the template bound to the node, or the job's existing pod):
//! `nodeName`, the required node affinity (`nodeSelector` and
//! `requiredDuringSchedulingIgnoredDuringExecution`, as `v1affinityhelper.GetRequiredNodeAffinity`),
//! untolerated NoSchedule / NoExecute taints, `spec.unschedulable` unless the pod tolerates
//! `node.kubernetes.io/unschedulable:NoSchedule`, and `noderesources.Fits` on a node seen without
//! its other pods (kruise builds the NodeInfo from the node alone): one pod slot (`allocatable.pods`
//! ≥ 1) and the pod's requests within the node's allocatable.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodSpec, Taint, Toleration};

use crate::compat::quantity::Quantity;

/// Why a pod does not fit a node (the scheduler's reasons).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unfit {
    /// `node(s) didn't match the requested node name`.
    NodeName,
    /// `node(s) didn't match Pod's node affinity/selector`.
    Affinity,
    /// `node(s) had taint {key: value}, that the pod didn't tolerate`.
    Taint(String, String),
    /// `node(s) were unschedulable`.
    Unschedulable,
    /// `Insufficient <resource>` (or `Too many pods`).
    Insufficient(Vec<String>),
}

impl std::fmt::Display for Unfit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unfit::NodeName => write!(f, "node(s) didn't match the requested node name"),
            Unfit::Affinity => write!(f, "node(s) didn't match Pod's node affinity/selector"),
            Unfit::Taint(k, v) => write!(f, "node(s) had taint {{{k}: {v}}}, that the pod didn't tolerate"),
            Unfit::Unschedulable => write!(f, "node(s) were unschedulable"),
            Unfit::Insufficient(r) => write!(f, "{}", r.join(", ")),
        }
    }
}

/// `checkNodeFitness(pod, node)`.
pub fn check(pod: &Pod, node: &Node) -> Result<(), Unfit> {
    let empty = PodSpec::default();
    let spec = pod.spec.as_ref().unwrap_or(&empty);
    let node_name = node.metadata.name.as_deref().unwrap_or("");
    if let Some(n) = spec.node_name.as_deref()
        && !n.is_empty()
        && n != node_name
    {
        return Err(Unfit::NodeName);
    }
    if !matches_required_affinity(spec, node) {
        return Err(Unfit::Affinity);
    }
    let tolerations = spec.tolerations.as_deref().unwrap_or(&[]);
    let taints = node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or(&[]);
    if let Some(t) = taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .find(|t| !tolerations.iter().any(|tol| tolerates(tol, t)))
    {
        return Err(Unfit::Taint(t.key.clone(), t.value.clone().unwrap_or_default()));
    }
    let unschedulable_taint =
        Taint { key: "node.kubernetes.io/unschedulable".into(), effect: "NoSchedule".into(), ..Default::default() };
    let unschedulable = node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false);
    if unschedulable && !tolerations.iter().any(|tol| tolerates(tol, &unschedulable_taint)) {
        return Err(Unfit::Unschedulable);
    }
    let insufficient = fits(spec, node);
    if !insufficient.is_empty() {
        return Err(Unfit::Insufficient(insufficient));
    }
    Ok(())
}

/// `GetRequiredNodeAffinity(pod).Match(node)`: the `nodeSelector` labels, then the required
/// terms (ORed; a term with no requirement matches nothing; no terms at all matches nothing).
pub fn matches_required_affinity(spec: &PodSpec, node: &Node) -> bool {
    let empty = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    if let Some(sel) = &spec.node_selector
        && !sel.iter().all(|(k, v)| labels.get(k) == Some(v))
    {
        return false;
    }
    let Some(required) = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| na.required_during_scheduling_ignored_during_execution.as_ref())
    else {
        return true;
    };
    let name = node.metadata.name.as_deref().unwrap_or("");
    required.node_selector_terms.iter().any(|t| term_matches(t, labels, name))
}

fn term_matches(term: &NodeSelectorTerm, labels: &BTreeMap<String, String>, name: &str) -> bool {
    let exprs = term.match_expressions.as_deref().unwrap_or(&[]);
    let fields = term.match_fields.as_deref().unwrap_or(&[]);
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    exprs.iter().all(|r| requirement_matches(r, labels.get(&r.key).map(String::as_str)))
        && fields.iter().all(|r| {
            // Only `metadata.name` with In / NotIn is a valid field requirement.
            r.key == "metadata.name"
                && matches!(r.operator.as_str(), "In" | "NotIn")
                && requirement_matches(r, Some(name))
        })
}

fn requirement_matches(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = r.values.as_deref().unwrap_or(&[]);
    let int = |s: &str| s.parse::<i64>().ok();
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(v), [bound]) = (value.and_then(int), values) else { return false };
            let Some(bound) = int(bound) else { return false };
            if r.operator == "Gt" { v > bound } else { v < bound }
        }
        _ => false,
    }
}

/// `Toleration.ToleratesTaint`.
pub fn tolerates(tol: &Toleration, taint: &Taint) -> bool {
    let effect = tol.effect.as_deref().unwrap_or("");
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = tol.key.as_deref().unwrap_or("");
    let operator = tol.operator.as_deref().unwrap_or("");
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match operator {
        "Exists" => true,
        "" | "Equal" => !key.is_empty() && tol.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        _ => false,
    }
}

/// `noderesources.Fits` against a node holding no pod: the reasons it does not fit.
fn fits(spec: &PodSpec, node: &Node) -> Vec<String> {
    let empty = BTreeMap::new();
    let allocatable = node.status.as_ref().and_then(|s| s.allocatable.as_ref()).unwrap_or(&empty);
    let parse = |q: Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity>| {
        q.and_then(|q| Quantity::parse(&q.0).ok()).and_then(|q| q.milli_value()).unwrap_or(0)
    };
    let mut reasons = Vec::new();
    if parse(allocatable.get("pods")) < 1000 {
        reasons.push("Too many pods".to_string());
    }
    for (resource, wanted) in requests(spec) {
        if wanted > 0 && wanted > parse(allocatable.get(&resource)) {
            reasons.push(format!("Insufficient {resource}"));
        }
    }
    reasons
}

/// The pod's requests in milli-units: the containers' sum, at least every init container's,
/// plus the overhead (`resource.PodRequests`).
fn requests(spec: &PodSpec) -> BTreeMap<String, i128> {
    let milli = |q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity| {
        Quantity::parse(&q.0).ok().and_then(|q| q.milli_value()).unwrap_or(0)
    };
    let mut total: BTreeMap<String, i128> = BTreeMap::new();
    for c in &spec.containers {
        for (k, q) in c.resources.as_ref().and_then(|r| r.requests.as_ref()).into_iter().flatten() {
            *total.entry(k.clone()).or_default() += milli(q);
        }
    }
    for c in spec.init_containers.iter().flatten() {
        for (k, q) in c.resources.as_ref().and_then(|r| r.requests.as_ref()).into_iter().flatten() {
            let e = total.entry(k.clone()).or_default();
            *e = (*e).max(milli(q));
        }
    }
    for (k, q) in spec.overhead.iter().flatten() {
        *total.entry(k.clone()).or_default() += milli(q);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(v: serde_json::Value) -> Node {
        let mut n: Node = serde_json::from_value(v).unwrap();
        n.status
            .get_or_insert_with(Default::default)
            .allocatable
            .get_or_insert_with(BTreeMap::new)
            .insert("pods".into(), k8s_openapi::apimachinery::pkg::api::resource::Quantity("10".into()));
        n
    }

    fn pod(spec: serde_json::Value) -> Pod {
        serde_json::from_value(json!({"spec": spec})).unwrap()
    }

    #[test]
    fn node_name_selector_and_affinity() {
        let n = node(json!({"metadata": {"name": "n1", "labels": {"zone": "a", "gen": "5"}}}));
        assert_eq!(check(&pod(json!({"containers": []})), &n), Ok(()));
        assert_eq!(check(&pod(json!({"nodeName": "n2", "containers": []})), &n), Err(Unfit::NodeName));
        assert_eq!(check(&pod(json!({"nodeSelector": {"zone": "b"}, "containers": []})), &n), Err(Unfit::Affinity));
        assert_eq!(check(&pod(json!({"nodeSelector": {"zone": "a"}, "containers": []})), &n), Ok(()));
        let aff = |terms: serde_json::Value| {
            pod(json!({"containers": [], "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}}))
        };
        let rows = [
            (json!([{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]), true),
            (json!([{"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}]), false),
            (json!([{"matchExpressions": [{"key": "gpu", "operator": "DoesNotExist"}]}]), true),
            (json!([{"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]), false),
            (json!([{"matchExpressions": [{"key": "gen", "operator": "Gt", "values": ["4"]}]}]), true),
            (json!([{"matchExpressions": [{"key": "gen", "operator": "Lt", "values": ["4"]}]}]), false),
            (json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]), true),
            (json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]), false),
            (json!([{}]), false),
            (json!([]), false),
            (
                json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]},
                        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]),
                true,
            ),
        ];
        for (terms, fit) in rows {
            assert_eq!(check(&aff(terms.clone()), &n).is_ok(), fit, "{terms}");
        }
    }

    #[test]
    fn taints_and_unschedulable() {
        let n = node(json!({"metadata": {"name": "n1"}, "spec": {"taints": [
            {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
            {"key": "soft", "effect": "PreferNoSchedule"}]}}));
        assert_eq!(
            check(&pod(json!({"containers": []})), &n),
            Err(Unfit::Taint("dedicated".into(), "gpu".into())),
            "PreferNoSchedule is ignored, NoSchedule is not"
        );
        let tol = |t: serde_json::Value| pod(json!({"containers": [], "tolerations": [t]}));
        assert_eq!(check(&tol(json!({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"})), &n), Ok(()));
        assert_eq!(check(&tol(json!({"key": "dedicated", "operator": "Exists"})), &n), Ok(()));
        assert_eq!(check(&tol(json!({"operator": "Exists"})), &n), Ok(()));
        assert!(check(&tol(json!({"key": "dedicated", "value": "cpu"})), &n).is_err());
        assert!(check(&tol(json!({"key": "dedicated", "operator": "Exists", "effect": "NoExecute"})), &n).is_err());
        // kruise TestPodsOnUnschedulableNodes: an unschedulable node is not desired.
        let cordoned = node(json!({"metadata": {"name": "n2"}, "spec": {"unschedulable": true}}));
        assert_eq!(check(&pod(json!({"containers": []})), &cordoned), Err(Unfit::Unschedulable));
        let t = tol(json!({"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}));
        assert_eq!(check(&t, &cordoned), Ok(()));
    }

    #[test]
    fn resources_against_an_empty_node() {
        let mut n = node(json!({"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "2", "memory": "1Gi"}}}));
        let req = |cpu: &str| {
            pod(json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
                "initContainers": [{"name": "i", "resources": {"requests": {"memory": "2Gi"}}}]}))
        };
        assert_eq!(
            check(&req("1"), &n),
            Err(Unfit::Insufficient(vec!["Insufficient memory".into()])),
            "an init container's request counts alone"
        );
        n.status
            .as_mut()
            .unwrap()
            .allocatable
            .as_mut()
            .unwrap()
            .insert("memory".into(), k8s_openapi::apimachinery::pkg::api::resource::Quantity("4Gi".into()));
        assert_eq!(check(&req("1500m"), &n), Ok(()));
        assert_eq!(check(&req("3"), &n), Err(Unfit::Insufficient(vec!["Insufficient cpu".into()])));
        let no_slots: Node = serde_json::from_value(json!({"metadata": {"name": "n3"}})).unwrap();
        assert_eq!(
            check(&pod(json!({"containers": []})), &no_slots),
            Err(Unfit::Insufficient(vec!["Too many pods".into()]))
        );
    }
}
