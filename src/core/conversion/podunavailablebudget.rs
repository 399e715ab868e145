//! PodUnavailableBudget `policy.kruise.io` v1alpha1 <-> v1beta1 on the JSON object, as kruise
//! HEAD's `apis/policy/v1alpha1/podunavailablebudget_conversion.go` (PR #2397):
//! - to v1beta1: the annotations stay; `kruise.io/pub-protect-operations` ("DELETE,EVICT") becomes
//!   `spec.protectOperations`, `pub.kruise.io/protect-total-replicas` becomes
//!   `spec.protectTotalReplicas`;
//! - to v1alpha1: those annotations are written from the fields, and removed when a field is
//!   empty (the field is the truth of a v1beta1 object); `ignoredPodSelector` has no v1alpha1
//!   spelling and is dropped, as kruise drops it.
//!
//! Deliberate difference: kruise fails the conversion of an object whose annotation does not
//! parse (an unknown operation, a non-integer replica count), which makes every list of the
//! namespace at v1beta1 fail. Here the field is left unset and the annotation stays, so the
//! object reads, and the budget protects as the annotation's readers decide.

use serde_json::{Map, Value};

use super::{child, meta_map, meta_value};
use crate::core::budget::{PROTECT_OPERATIONS, PROTECT_TOTAL_REPLICAS};

/// The operations v1beta1's `protectOperations` accepts.
const OPERATIONS: [&str; 4] = ["DELETE", "UPDATE", "EVICT", "RESIZE"];

/// v1alpha1 -> v1beta1, in place.
pub fn to_v1beta1(obj: &mut Map<String, Value>) {
    let operations = meta_value(obj, "annotations", PROTECT_OPERATIONS).and_then(parse_operations);
    let total = meta_value(obj, "annotations", PROTECT_TOTAL_REPLICAS).and_then(parse_replicas);
    let Some(spec) = child(obj, "spec") else { return };
    for key in ["protectOperations", "protectTotalReplicas", "ignoredPodSelector"] {
        spec.remove(key);
    }
    if let Some(ops) = operations.filter(|o| !o.is_empty()) {
        spec.insert("protectOperations".into(), Value::from(ops));
    }
    if let Some(n) = total {
        spec.insert("protectTotalReplicas".into(), Value::from(n));
    }
}

/// v1beta1 -> v1alpha1, in place.
pub fn to_v1alpha1(obj: &mut Map<String, Value>) {
    let (operations, total) = match child(obj, "spec") {
        Some(spec) => {
            let ops = spec.remove("protectOperations");
            let total = spec.remove("protectTotalReplicas");
            spec.remove("ignoredPodSelector");
            (ops, total)
        }
        None => (None, None),
    };
    let joined = operations
        .as_ref()
        .and_then(Value::as_array)
        .map(|ops| ops.iter().filter_map(Value::as_str).filter(|s| !s.is_empty()).collect::<Vec<_>>().join(","))
        .filter(|s| !s.is_empty());
    let total = total.as_ref().and_then(Value::as_i64).map(|n| n.to_string());
    let Some(annotations) = meta_map(obj, "annotations") else { return };
    match joined {
        Some(v) => annotations.insert(PROTECT_OPERATIONS.into(), Value::String(v)),
        None => annotations.remove(PROTECT_OPERATIONS),
    };
    match total {
        Some(v) => annotations.insert(PROTECT_TOTAL_REPLICAS.into(), Value::String(v)),
        None => annotations.remove(PROTECT_TOTAL_REPLICAS),
    };
    if annotations.is_empty()
        && let Some(Value::Object(meta)) = obj.get_mut("metadata")
    {
        meta.remove("annotations");
        if meta.is_empty() {
            obj.remove("metadata");
        }
    }
}

/// `parsePubProtectOperations`: "DELETE, EVICT" -> ["DELETE", "EVICT"]; `None` when one of
/// them is not an operation (kruise's conversion error).
fn parse_operations(value: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        if !OPERATIONS.contains(&item) {
            return None;
        }
        out.push(item.to_string());
    }
    Some(out)
}

/// Go's `strconv.ParseInt(value, 10, 32)`.
fn parse_replicas(value: &str) -> Option<i32> {
    if value.is_empty() {
        return None;
    }
    value.parse::<i32>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    /// `TestPodUnavailableBudgetConvertToV1beta1PromotesDeprecatedAnnotations`.
    #[test]
    fn annotations_promote_to_fields() {
        let mut obj = map(json!({
            "apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
            "metadata": {"name": "pub-demo", "namespace": "default", "annotations": {
                PROTECT_OPERATIONS: "DELETE,EVICT", PROTECT_TOTAL_REPLICAS: "15"}},
            "spec": {"selector": {"matchLabels": {"app": "demo"}}, "maxUnavailable": "50%"}}));
        to_v1beta1(&mut obj);
        assert_eq!(obj["spec"]["protectOperations"], json!(["DELETE", "EVICT"]));
        assert_eq!(obj["spec"]["protectTotalReplicas"], 15);
        assert_eq!(obj["spec"]["maxUnavailable"], "50%");
        // The annotations stay (kruise copies the ObjectMeta).
        assert_eq!(obj["metadata"]["annotations"][PROTECT_OPERATIONS], "DELETE,EVICT");
    }

    /// `TestPodUnavailableBudgetConvertFromV1beta1BackfillsDeprecatedAnnotations`.
    #[test]
    fn fields_backfill_annotations() {
        let mut obj = map(json!({
            "apiVersion": "policy.kruise.io/v1beta1", "kind": "PodUnavailableBudget",
            "metadata": {"name": "pub-demo", "namespace": "default", "annotations": {"keep": "me"}},
            "spec": {"selector": {"matchLabels": {"app": "demo"}}, "maxUnavailable": 1,
                     "protectOperations": ["DELETE", "RESIZE"], "protectTotalReplicas": 9,
                     "ignoredPodSelector": {"matchLabels": {"kruise.io/force-deletable": "true"}}}}));
        to_v1alpha1(&mut obj);
        let annotations = &obj["metadata"]["annotations"];
        assert_eq!(annotations[PROTECT_OPERATIONS], "DELETE,RESIZE");
        assert_eq!(annotations[PROTECT_TOTAL_REPLICAS], "9");
        assert_eq!(annotations["keep"], "me");
        assert_eq!(obj["spec"], json!({"selector": {"matchLabels": {"app": "demo"}}, "maxUnavailable": 1}));
    }

    /// `TestPodUnavailableBudgetConvertFromV1beta1DropsDefaultProtectOperationsAnnotation`: an
    /// annotation the fields do not back is removed (with the map, when it was the last).
    #[test]
    fn stale_annotations_are_dropped() {
        let mut obj = map(json!({"metadata": {"name": "p", "annotations": {PROTECT_OPERATIONS: "DELETE",
            PROTECT_TOTAL_REPLICAS: "3"}}, "spec": {}}));
        to_v1alpha1(&mut obj);
        assert_eq!(obj["metadata"], json!({"name": "p"}));
    }

    /// Round trips keep what both versions can spell.
    #[test]
    fn round_trips() {
        let alpha = json!({"metadata": {"name": "p", "annotations": {PROTECT_OPERATIONS: "UPDATE",
            PROTECT_TOTAL_REPLICAS: "4"}}, "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment",
            "name": "web"}, "minAvailable": "60%"}, "status": {"unavailableAllowed": 1, "currentAvailable": 3,
            "desiredAvailable": 2, "totalReplicas": 4}});
        let mut obj = map(alpha.clone());
        to_v1beta1(&mut obj);
        to_v1alpha1(&mut obj);
        assert_eq!(Value::Object(obj), alpha);
        let beta = json!({"metadata": {"name": "p"}, "spec": {"protectOperations": ["EVICT"], "maxUnavailable": 1}});
        let mut obj = map(beta.clone());
        to_v1alpha1(&mut obj);
        to_v1beta1(&mut obj);
        assert_eq!(obj["spec"], beta["spec"]);
    }

    /// Annotations that do not parse leave the field unset (kruise: a conversion error).
    #[test]
    fn unparsable_annotations_leave_fields_unset() {
        for (ops, total) in [("DELETE,KILL", "x"), ("", "1.5"), ("delete", "")] {
            let mut obj = map(json!({"metadata": {"annotations": {PROTECT_OPERATIONS: ops,
                PROTECT_TOTAL_REPLICAS: total}}, "spec": {"maxUnavailable": 1}}));
            to_v1beta1(&mut obj);
            assert_eq!(obj["spec"], json!({"maxUnavailable": 1}), "{ops:?} {total:?}");
            assert_eq!(obj["metadata"]["annotations"][PROTECT_OPERATIONS], ops);
        }
        assert_eq!(parse_operations(" DELETE , EVICT ,"), Some(vec!["DELETE".into(), "EVICT".into()]));
        assert_eq!(parse_replicas("+7"), Some(7));
        assert_eq!(parse_replicas("2147483648"), None);
    }
}
