//! Which nodes an Advanced DaemonSet runs a pod on (spec §2.4's daemon pods; kruise's
//! `nodeShouldRunDaemonPod` and `Predicates` in `daemonset_controller.go` / `daemonset_util.go`,
//! which follow the upstream DaemonSet controller):
//! - the template's `nodeName`, when set, must be the node's;
//! - the template's `nodeSelector` and required node affinity must match the node
//!   (`nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)`: terms ORed, each term's
//!   `matchExpressions` on labels and `matchFields` on `metadata.name` ANDed);
//! - every `NoSchedule`/`NoExecute` taint of the node must be tolerated by the template's
//!   tolerations plus the ones every daemon pod gets (`AddOrUpdateDaemonPodTolerations`:
//!   not-ready/unreachable NoExecute, disk/memory/pid-pressure and unschedulable NoSchedule,
//!   network-unavailable for host-network pods). So an unschedulable (cordoned) node still runs
//!   its daemon pod, as upstream's does.
//!   A node whose only untolerated taints are NoSchedule keeps a pod it already runs
//!   (`shouldContinueRunning`).
//!
//! Also here: how a daemon pod is bound to its node (`ReplaceDaemonSetPodNodeNameNodeAffinity`)
//! and which node a pod is for (`GetTargetNodeName`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodSpec, Taint,
    Toleration,
};

/// `metav1.ObjectNameField`.
pub const OBJECT_NAME_FIELD: &str = "metadata.name";

/// What a node is to a daemon set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Eligibility {
    /// A daemon pod should be created on the node if there is none.
    pub should_run: bool,
    /// A daemon pod already there should keep running.
    pub should_continue_running: bool,
}

/// `v1helper.ToleratesTaint`.
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    let effect = t.effect.as_deref().unwrap_or("");
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = t.key.as_deref().unwrap_or("");
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match t.operator.as_deref().unwrap_or("") {
        "" | "Equal" => t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        "Exists" => true,
        _ => false,
    }
}

/// `FindMatchingUntoleratedTaint`: whether a taint `filter` keeps is tolerated by none.
fn has_untolerated(taints: &[Taint], tolerations: &[Toleration], filter: impl Fn(&Taint) -> bool) -> bool {
    taints.iter().filter(|t| filter(t)).any(|taint| !tolerations.iter().any(|t| tolerates(t, taint)))
}

/// `AddOrUpdateTolerationInPodSpec` for each toleration every daemon pod gets
/// (`AddOrUpdateDaemonPodTolerations`).
pub fn add_daemon_tolerations(spec: &mut PodSpec) {
    let mut wanted = vec![
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if spec.host_network == Some(true) {
        wanted.push(("node.kubernetes.io/network-unavailable", "NoSchedule"));
    }
    let list = spec.tolerations.get_or_insert_with(Vec::new);
    for (key, effect) in wanted {
        let t = Toleration {
            key: Some(key.into()),
            operator: Some("Exists".into()),
            effect: Some(effect.into()),
            ..Default::default()
        };
        // MatchToleration: same key, operator, value and effect — an equal one is kept.
        let same = |o: &Toleration| {
            o.key == t.key
                && o.operator.as_deref().unwrap_or("") == "Exists"
                && o.value.as_deref().unwrap_or("").is_empty()
                && o.effect == t.effect
        };
        if !list.iter().any(same) {
            list.push(t);
        }
    }
}

fn label_requirement_matches(r: &NodeSelectorRequirement, labels: &BTreeMap<String, String>) -> bool {
    let values = r.values.as_deref().unwrap_or(&[]);
    let got = labels.get(&r.key);
    match r.operator.as_str() {
        "In" => got.is_some_and(|v| values.contains(v)),
        "NotIn" => got.is_none_or(|v| !values.contains(v)),
        "Exists" => got.is_some(),
        "DoesNotExist" => got.is_none(),
        op @ ("Gt" | "Lt") => {
            let (Some(v), [bound]) = (got, values) else { return false };
            match (v.parse::<i64>(), bound.parse::<i64>()) {
                (Ok(v), Ok(b)) => {
                    if op == "Gt" {
                        v > b
                    } else {
                        v < b
                    }
                }
                _ => false,
            }
        }
        _ => false,
    }
}

fn field_requirement_matches(r: &NodeSelectorRequirement, node_name: &str) -> bool {
    if r.key != OBJECT_NAME_FIELD {
        return false;
    }
    let values = r.values.as_deref().unwrap_or(&[]);
    match r.operator.as_str() {
        "In" => values.len() == 1 && values[0] == node_name,
        "NotIn" => values.len() == 1 && values[0] != node_name,
        _ => false,
    }
}

/// One `NodeSelectorTerm`: a term with neither expressions nor fields matches nothing.
pub fn term_matches(term: &NodeSelectorTerm, labels: &BTreeMap<String, String>, node_name: &str) -> bool {
    let exprs = term.match_expressions.as_deref().unwrap_or(&[]);
    let fields = term.match_fields.as_deref().unwrap_or(&[]);
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    exprs.iter().all(|r| label_requirement_matches(r, labels))
        && fields.iter().all(|r| field_requirement_matches(r, node_name))
}

/// `GetRequiredNodeAffinity(pod).Match(node)`: `nodeSelector` and the required node affinity.
pub fn node_affinity_matches(spec: &PodSpec, node: &Node) -> bool {
    let empty = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    let node_name = node.metadata.name.as_deref().unwrap_or("");
    if let Some(sel) = &spec.node_selector
        && !sel.iter().all(|(k, v)| labels.get(k) == Some(v))
    {
        return false;
    }
    let required = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| n.required_during_scheduling_ignored_during_execution.as_ref());
    match required {
        None => true,
        Some(sel) => sel.node_selector_terms.iter().any(|t| term_matches(t, labels, node_name)),
    }
}

/// `nodeShouldRunDaemonPod` for a template (`NewPod` adds the daemon tolerations).
pub fn node_should_run_daemon_pod(node: &Node, template: &PodSpec) -> Eligibility {
    let never = Eligibility { should_run: false, should_continue_running: false };
    let node_name = node.metadata.name.as_deref().unwrap_or("");
    if let Some(n) = template.node_name.as_deref().filter(|n| !n.is_empty())
        && n != node_name
    {
        return never;
    }
    let mut spec = template.clone();
    add_daemon_tolerations(&mut spec);
    if !node_affinity_matches(&spec, node) {
        return never;
    }
    let taints = node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or(&[]);
    let tolerations = spec.tolerations.as_deref().unwrap_or(&[]);
    if has_untolerated(taints, tolerations, |t| t.effect == "NoExecute" || t.effect == "NoSchedule") {
        let continues = !has_untolerated(taints, tolerations, |t| t.effect == "NoExecute");
        return Eligibility { should_run: false, should_continue_running: continues };
    }
    Eligibility { should_run: true, should_continue_running: true }
}

/// `ReplaceDaemonSetPodNodeNameNodeAffinity`: the pod's required node affinity becomes exactly
/// "metadata.name In [node]" (other affinity kinds are kept).
pub fn bind_to_node(affinity: Option<Affinity>, node: &str) -> Affinity {
    let term = NodeSelectorTerm {
        match_fields: Some(vec![NodeSelectorRequirement {
            key: OBJECT_NAME_FIELD.into(),
            operator: "In".into(),
            values: Some(vec![node.into()]),
        }]),
        ..Default::default()
    };
    let mut affinity = affinity.unwrap_or_default();
    let na = affinity.node_affinity.get_or_insert_with(NodeAffinity::default);
    match na.required_during_scheduling_ignored_during_execution.as_mut() {
        None => {
            na.required_during_scheduling_ignored_during_execution =
                Some(NodeSelector { node_selector_terms: vec![term] })
        }
        Some(sel) => sel.node_selector_terms = vec![term],
    }
    affinity
}

/// `GetTargetNodeName`: `spec.nodeName`, or the one node the required affinity names.
pub fn target_node(pod: &Pod) -> Option<&str> {
    let spec = pod.spec.as_ref()?;
    if let Some(n) = spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        return Some(n);
    }
    let terms = &spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    let [term] = terms.as_slice() else { return None };
    let [field] = term.match_fields.as_deref()? else { return None };
    if field.key != OBJECT_NAME_FIELD || field.operator != "In" {
        return None;
    }
    match field.values.as_deref() {
        Some([one]) => Some(one.as_str()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn node(name: &str, labels: Value, taints: Value) -> Node {
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}}))
            .unwrap()
    }

    fn spec(v: Value) -> PodSpec {
        let mut v = v;
        v["containers"] = json!([{"name": "c", "image": "i"}]);
        serde_json::from_value(v).unwrap()
    }

    /// Upstream's `TestNodeShouldRunDaemonPod`, `TestNodeAffinityDaemonLaunchesPods`,
    /// `TestTaintedNodeDaemonDoesNotLaunchIntolerantPods` and friends, row by row as they decide a
    /// node: (name, node, template spec, shouldRun, shouldContinueRunning).
    #[test]
    fn node_eligibility_rows() {
        let rows: Vec<(&str, Node, PodSpec, bool, bool)> = vec![
            ("plain node", node("n", json!({}), json!([])), spec(json!({})), true, true),
            ("nodeName matches", node("n", json!({}), json!([])), spec(json!({"nodeName": "n"})), true, true),
            ("nodeName elsewhere", node("n", json!({}), json!([])), spec(json!({"nodeName": "m"})), false, false),
            (
                "nodeSelector matches",
                node("n", json!({"a": "b"}), json!([])),
                spec(json!({"nodeSelector": {"a": "b"}})),
                true,
                true,
            ),
            (
                "nodeSelector does not match",
                node("n", json!({"a": "c"}), json!([])),
                spec(json!({"nodeSelector": {"a": "b"}})),
                false,
                false,
            ),
            (
                "affinity In matches",
                node("n", json!({"zone": "z1"}), json!([])),
                spec(json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                    {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1", "z2"]}]}]}}}})),
                true,
                true,
            ),
            (
                "affinity terms are ORed",
                node("n", json!({"zone": "z3"}), json!([])),
                spec(json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                    {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]},
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}]}}}})),
                true,
                true,
            ),
            (
                "affinity NotIn/Gt",
                node("n", json!({"zone": "z1", "cpu": "8"}), json!([])),
                spec(json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                    {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z2"]},
                        {"key": "cpu", "operator": "Gt", "values": ["4"]}]}]}}}})),
                true,
                true,
            ),
            (
                "empty term matches nothing",
                node("n", json!({}), json!([])),
                spec(json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                    {"nodeSelectorTerms": [{}]}}}})),
                false,
                false,
            ),
            (
                "untolerated NoSchedule: keeps a running pod",
                node("n", json!({}), json!([{"key": "k", "value": "v", "effect": "NoSchedule"}])),
                spec(json!({})),
                false,
                true,
            ),
            (
                "untolerated NoExecute: evicted",
                node("n", json!({}), json!([{"key": "k", "value": "v", "effect": "NoExecute"}])),
                spec(json!({})),
                false,
                false,
            ),
            (
                "tolerated NoExecute",
                node("n", json!({}), json!([{"key": "k", "value": "v", "effect": "NoExecute"}])),
                spec(json!({"tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoExecute"}]})),
                true,
                true,
            ),
            (
                "Exists without key tolerates all",
                node("n", json!({}), json!([{"key": "k", "value": "v", "effect": "NoSchedule"}])),
                spec(json!({"tolerations": [{"operator": "Exists"}]})),
                true,
                true,
            ),
            (
                "PreferNoSchedule is ignored",
                node("n", json!({}), json!([{"key": "k", "value": "v", "effect": "PreferNoSchedule"}])),
                spec(json!({})),
                true,
                true,
            ),
            (
                "unschedulable taint tolerated by daemon pods",
                node("n", json!({}), json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}])),
                spec(json!({})),
                true,
                true,
            ),
            (
                "not-ready NoExecute tolerated by daemon pods",
                node("n", json!({}), json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}])),
                spec(json!({})),
                true,
                true,
            ),
            (
                "network-unavailable only for host network",
                node(
                    "n",
                    json!({}),
                    json!([{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]),
                ),
                spec(json!({})),
                false,
                true,
            ),
            (
                "network-unavailable tolerated with hostNetwork",
                node(
                    "n",
                    json!({}),
                    json!([{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]),
                ),
                spec(json!({"hostNetwork": true})),
                true,
                true,
            ),
        ];
        for (name, n, s, run, cont) in rows {
            let e = node_should_run_daemon_pod(&n, &s);
            assert_eq!((e.should_run, e.should_continue_running), (run, cont), "{name}");
        }
    }

    #[test]
    fn a_pod_is_bound_to_its_node_and_found_there_again() {
        let keep = serde_json::from_value::<Affinity>(json!({"podAntiAffinity": {}, "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "a", "operator": "Exists"}]}]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}]}}))
        .unwrap();
        for affinity in [None, Some(Affinity::default()), Some(keep)] {
            let had_anti = affinity.as_ref().is_some_and(|a| a.pod_anti_affinity.is_some());
            let a = bind_to_node(affinity, "node-1");
            assert_eq!(a.pod_anti_affinity.is_some(), had_anti);
            let pod: Pod = serde_json::from_value(json!({"spec": {"containers": [], "affinity": a}})).unwrap();
            assert_eq!(target_node(&pod), Some("node-1"));
            let n = node("node-1", json!({}), json!([]));
            assert!(node_affinity_matches(pod.spec.as_ref().unwrap(), &n));
            assert!(!node_affinity_matches(pod.spec.as_ref().unwrap(), &node("node-2", json!({}), json!([]))));
        }
        let scheduled: Pod = serde_json::from_value(json!({"spec": {"containers": [], "nodeName": "x"}})).unwrap();
        assert_eq!(target_node(&scheduled), Some("x"));
        assert_eq!(target_node(&Pod::default()), None);
    }

    #[test]
    fn daemon_tolerations_are_added_once() {
        let mut s = spec(json!({"tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
            "effect": "NoSchedule"}]}));
        add_daemon_tolerations(&mut s);
        add_daemon_tolerations(&mut s);
        assert_eq!(s.tolerations.as_ref().unwrap().len(), 6);
    }
}
