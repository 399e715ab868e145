//! Pods created before their WorkloadSpread (kruise v1.9.0 `pkg/controller/workloadspread/
//! workloadspread_controller.go` `getAndUpdateSuitableSubsetName` and
//! `workloadspread_controller_utils.go` `matchesSubset`; issue 34 item 3): a pod of the target
//! that carries no `apps.kruise.io/matched-workloadspread` annotation of this spread, and runs on
//! a node the controller knows, is adopted into the subset its node matches best, and the
//! annotation (with the subset patch's `metadata`) is patched onto it.
//!
//! A subset matches when every taint of the node (any effect) is tolerated by the pod's
//! tolerations plus the subset's, and the node matches the subset's `requiredNodeSelectorTerm`
//! ANDed into each of the pod's own required node-affinity terms (the term alone when the pod
//! has none), as the pod webhook would have injected it. Among matching subsets the highest score
//! wins, the first on a tie: `100 ×` the weights of the subset's preferred terms the node matches,
//! `+ 10` when the subset's patch would not change the pod (annotations aside), `+ 1` while the
//! subset still has room.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod, PodSpec};
use serde_json::{Map, Value};

use super::{Injected, MATCHED_ANNOTATION};
use crate::apis::workloadspread::{WorkloadSpread, WorkloadSpreadSubset};
use crate::compat::strategic::apply_pod_patch;
use crate::core::rollout::daemonset::eligibility::{term_matches, tolerates};

/// kruise's `IgnorePatchExistingPodsAnnotation`: `"true"` on the WorkloadSpread keeps the subset
/// patch's metadata off adopted pods.
pub const IGNORE_PATCH_EXISTING_PODS: &str = "workloadspread.kruise.io/ignore-patch-existing-pods-metadata";

/// `matchesSubsetRequiredAndToleration`.
fn required_and_tolerated(pod: &Pod, node: &Node, subset: &WorkloadSpreadSubset) -> bool {
    let empty = PodSpec::default();
    let spec = pod.spec.as_ref().unwrap_or(&empty);
    let mut tolerations = spec.tolerations.clone().unwrap_or_default();
    tolerations.extend(subset.tolerations.iter().cloned());
    let taints = node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or(&[]);
    // `FindMatchingUntoleratedTaint` without a filter: every effect counts.
    if taints.iter().any(|taint| !tolerations.iter().any(|t| tolerates(t, taint))) {
        return false;
    }
    let Some(required) = &subset.required_node_selector_term else { return true };
    let mut terms = spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|n| n.required_during_scheduling_ignored_during_execution.as_ref())
        .map(|s| s.node_selector_terms.clone())
        .unwrap_or_default();
    if terms.is_empty() {
        terms = vec![required.clone()];
    } else {
        for t in &mut terms {
            t.match_expressions
                .get_or_insert_with(Vec::new)
                .extend(required.match_expressions.iter().flatten().cloned());
            t.match_fields.get_or_insert_with(Vec::new).extend(required.match_fields.iter().flatten().cloned());
        }
    }
    let no_labels = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&no_labels);
    let name = node.metadata.name.as_deref().unwrap_or("");
    terms.iter().any(|t| term_matches(t, labels, name))
}

/// `podPreferredScore`: 1 when the subset's patch leaves the pod as it is (annotations aside).
fn pod_preferred_score(subset: &WorkloadSpreadSubset, patch: &Value, pod: &Pod) -> i64 {
    let Ok(raw) = serde_json::to_value(pod) else { return 0 };
    let merged = match apply_pod_patch(&raw, patch) {
        Ok(m) => m,
        Err(e) => {
            tracing::debug!(subset = subset.name.as_str(), "subset patch does not apply to the pod: {e}");
            return 0;
        }
    };
    let Ok(mut patched) = crate::compat::decode::from_value::<Pod>(&merged) else { return 0 };
    patched.metadata.annotations = pod.metadata.annotations.clone();
    i64::from(patched == *pod)
}

/// `matchesSubset`: the score of the subset for `pod` on `node` (`None`: it does not match);
/// `missing` is what the subset may still take.
pub fn matches_subset(pod: &Pod, node: &Node, subset: &WorkloadSpreadSubset, missing: i64) -> Option<i64> {
    if !required_and_tolerated(pod, node, subset) {
        return None;
    }
    let no_labels = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&no_labels);
    let name = node.metadata.name.as_deref().unwrap_or("");
    let node_score: i64 = subset
        .preferred_node_selector_terms
        .iter()
        .filter(|t| t.weight != 0 && term_matches(&t.preference, labels, name))
        .map(|t| i64::from(t.weight))
        .sum();
    let pod_score = subset.patch.as_ref().map_or(0, |p| pod_preferred_score(subset, p, pod));
    let quota_score = i64::from(missing > 0);
    Some(node_score * 100 + pod_score * 10 + quota_score)
}

/// The subset (index) `pod` on `node` is adopted into: the best score, the first on a tie;
/// `missing` by subset name.
pub fn suitable_subset(ws: &WorkloadSpread, pod: &Pod, node: &Node, missing: &BTreeMap<String, i64>) -> Option<usize> {
    let mut best: Option<(usize, i64)> = None;
    for (i, subset) in ws.spec.subsets.iter().enumerate() {
        let Some(score) = matches_subset(pod, node, subset, missing.get(&subset.name).copied().unwrap_or(0)) else {
            continue;
        };
        if best.is_none_or(|(_, b)| score > b) {
            best = Some((i, score));
        }
    }
    best.map(|(i, _)| i)
}

/// `patchFavoriteSubsetMetadataToPod`'s strategic merge patch: the subset patch's `metadata`
/// (unless the WorkloadSpread says [`IGNORE_PATCH_EXISTING_PODS`]) with the annotation naming
/// the spread and subset.
pub fn adoption_patch(ws: &WorkloadSpread, subset: &WorkloadSpreadSubset) -> Value {
    let ignore = ws
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(IGNORE_PATCH_EXISTING_PODS))
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let mut metadata = match (&subset.patch, ignore) {
        (Some(Value::Object(p)), false) => match p.get("metadata") {
            Some(Value::Object(m)) => m.clone(),
            _ => Map::new(),
        },
        _ => Map::new(),
    };
    let injected = Injected {
        name: ws.metadata.name.clone().unwrap_or_default(),
        subset: subset.name.clone(),
        uid: String::new(),
    };
    match metadata.get_mut("annotations") {
        Some(Value::Object(a)) => {
            a.insert(MATCHED_ANNOTATION.into(), Value::from(injected.to_annotation()));
        }
        _ => {
            let mut a = Map::new();
            a.insert(MATCHED_ANNOTATION.into(), Value::from(injected.to_annotation()));
            metadata.insert("annotations".into(), Value::Object(a));
        }
    }
    serde_json::json!({ "metadata": metadata })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    //! kruise v1.9.0 `workloadspread_controller_utils_test.go` `TestMatchSubset`, row by row.

    use super::*;
    use serde_json::json;

    const REQUIRED: &str = "apps.kruise.io/schedule-required";
    const PREFERRED: &str = "apps.kruise.io/schedule-preferred";
    const TEST: &str = "apps.kruise.io/is-test";
    const UNIT_TEST: &str = "apps.kruise.io/is-unit-test";
    const TOLERATION: &str = "apps.kruise.io/toleration";
    const PATCH_LABEL: &str = "apps.kruise.io/patch-label";
    const PATCH_ANNO: &str = "apps.kruise.io/patch-annotation";

    fn subset() -> WorkloadSpreadSubset {
        serde_json::from_value(json!({
            "name": "subset-a", "maxReplicas": 5,
            "tolerations": [{"key": TOLERATION, "operator": "Equal", "value": "true"}],
            "requiredNodeSelectorTerm": {"matchExpressions": [{"key": REQUIRED, "operator": "In", "values": ["true"]}]},
            "preferredNodeSelectorTerms": [{"weight": 100,
                "preference": {"matchExpressions": [{"key": PREFERRED, "operator": "In", "values": ["true"]}]}}],
            "patch": {"metadata": {"labels": {PATCH_LABEL: "true"}, "annotations": {PATCH_ANNO: "true"}}}
        }))
        .unwrap()
    }

    fn pod() -> Pod {
        serde_json::from_value(json!({
            "metadata": {"annotations": {PATCH_ANNO: "true"}, "labels": {PATCH_LABEL: "true"}},
            "spec": {"containers": [], "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": TEST, "operator": "In", "values": ["true"]},
                    {"key": UNIT_TEST, "operator": "In", "values": ["true"]}]}]}}}}
        }))
        .unwrap()
    }

    fn node() -> Node {
        serde_json::from_value(json!({
            "metadata": {"labels": {TEST: "true", UNIT_TEST: "true", REQUIRED: "true", PREFERRED: "true"}},
            "spec": {"taints": [{"key": TOLERATION, "value": "true", "effect": "NoSchedule"}]}
        }))
        .unwrap()
    }

    fn label(n: &mut Node, key: &str, value: &str) {
        n.metadata.labels.as_mut().unwrap().insert(key.into(), value.into());
    }

    #[test]
    fn match_subset_rows() {
        // "match=true, Score=10010"
        assert_eq!(matches_subset(&pod(), &node(), &subset(), 0), Some(10010));
        // "match=true, Score=10000": the patch would change the label (the annotation is ignored)
        let mut p = pod();
        p.metadata.labels.as_mut().unwrap().insert(PATCH_LABEL.into(), "false".into());
        p.metadata.annotations.as_mut().unwrap().insert(PATCH_ANNO.into(), "false".into());
        assert_eq!(matches_subset(&p, &node(), &subset(), 0), Some(10000));
        // "match=true, Score=10, preferred key not match"
        let mut n = node();
        label(&mut n, PREFERRED, "false");
        assert_eq!(matches_subset(&pod(), &n, &subset(), 0), Some(10));
        // "match=false, Score=-1, required key not match"
        let mut n = node();
        label(&mut n, REQUIRED, "false");
        assert_eq!(matches_subset(&pod(), &n, &subset(), 0), None);
        // "match=false, Score=-1, toleration key not match" (kruise's row uses `subsetDemo`, which
        // tolerates nothing)
        let plain: WorkloadSpreadSubset =
            serde_json::from_value(json!({"name": "subset-a", "maxReplicas": 5})).unwrap();
        assert_eq!(matches_subset(&pod(), &node(), &plain, 0), None);
        let mut wrong = subset();
        wrong.tolerations[0].value = Some("false".into());
        assert_eq!(matches_subset(&pod(), &node(), &wrong, 0), None);
    }

    #[test]
    fn room_left_adds_one_and_the_pod_affinity_is_anded() {
        assert_eq!(matches_subset(&pod(), &node(), &subset(), 3), Some(10011));
        // The pod's own term must still hold on the node.
        let mut n = node();
        label(&mut n, UNIT_TEST, "false");
        assert_eq!(matches_subset(&pod(), &n, &subset(), 3), None);
        // A PreferNoSchedule taint counts too (kruise passes no effect filter).
        let mut n = node();
        n.spec
            .as_mut()
            .unwrap()
            .taints
            .as_mut()
            .unwrap()
            .push(serde_json::from_value(json!({"key": "soft", "effect": "PreferNoSchedule"})).unwrap());
        assert_eq!(matches_subset(&pod(), &n, &subset(), 3), None);
    }

    #[test]
    fn the_adoption_patch_carries_the_patch_metadata_and_the_annotation() {
        let mut ws: WorkloadSpread =
            crate::compat::decode::from_value(&json!({"metadata": {"name": "ws"}, "spec": {"subsets": []}})).unwrap();
        let s = subset();
        let want_annotation = r#"{"name":"ws","subset":"subset-a"}"#;
        assert_eq!(
            adoption_patch(&ws, &s),
            json!({"metadata": {"labels": {PATCH_LABEL: "true"},
                "annotations": {PATCH_ANNO: "true", MATCHED_ANNOTATION: want_annotation}}})
        );
        ws.metadata.annotations = Some([(IGNORE_PATCH_EXISTING_PODS.to_string(), "True".to_string())].into());
        assert_eq!(
            adoption_patch(&ws, &s),
            json!({"metadata": {"annotations": {MATCHED_ANNOTATION: want_annotation}}})
        );
        // A patch without metadata, or whose annotations are not an object.
        ws.metadata.annotations = None;
        let mut s2 = subset();
        s2.patch = Some(json!({"metadata": {"annotations": null, "labels": {"x": "y"}}}));
        assert_eq!(
            adoption_patch(&ws, &s2),
            json!({"metadata": {"labels": {"x": "y"}, "annotations": {MATCHED_ANNOTATION: want_annotation}}})
        );
    }
}
