//! Kubernetes' validation of the scheduling parts of a pod spec that kruise's WorkloadSpread
//! webhook runs on its subsets: `ValidateNodeSelectorTerm`, `ValidatePreferredSchedulingTerms`
//! and `ValidateTolerations` of `k8s.io/kubernetes/pkg/apis/core/validation` v1.32.10 (the
//! version kruise vendors), with their paths, texts and order. Values of struct type are shown
//! as JSON where Go prints `%#v`.

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm, PreferredSchedulingTerm, Toleration};

use crate::compat::field::{FieldError, child, index};
use crate::compat::names::{is_dns1123_subdomain, is_valid_label_value, validate_label_name};

/// `ValidateNodeSelectorTerm(term, allowEmpty, path)`: every match expression, then every match
/// field.
pub fn validate_node_selector_term(term: &NodeSelectorTerm, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let exprs = child(path, "matchExpressions");
    for (j, req) in term.match_expressions.iter().flatten().enumerate() {
        errs.extend(validate_node_selector_requirement(req, &index(&exprs, j)));
    }
    let fields = child(path, "matchFields");
    for (j, req) in term.match_fields.iter().flatten().enumerate() {
        errs.extend(validate_node_field_selector_requirement(req, &index(&fields, j)));
    }
    errs
}

/// `ValidateNodeSelectorRequirement`.
fn validate_node_selector_requirement(req: &NodeSelectorRequirement, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let values = req.values.as_deref().unwrap_or_default();
    let values_path = child(path, "values");
    match req.operator.as_str() {
        "In" | "NotIn" => {
            if values.is_empty() {
                errs.push(FieldError::required(&values_path, "must be specified when `operator` is 'In' or 'NotIn'"));
            }
        }
        "Exists" | "DoesNotExist" => {
            if !values.is_empty() {
                errs.push(FieldError::forbidden(
                    &values_path,
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ));
            }
        }
        "Gt" | "Lt" => {
            if values.len() != 1 {
                errs.push(FieldError::required(
                    &values_path,
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                ));
            }
        }
        other => errs.push(FieldError::invalid(&child(path, "operator"), other, "not a valid selector operator")),
    }
    errs.extend(validate_label_name(&req.key, &child(path, "key")));
    errs
}

/// `ValidateNodeFieldSelectorRequirement`: only `metadata.name`, with In or NotIn and one value.
fn validate_node_field_selector_requirement(req: &NodeSelectorRequirement, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let values = req.values.as_deref().unwrap_or_default();
    match req.operator.as_str() {
        "In" | "NotIn" => {
            if values.len() != 1 {
                errs.push(FieldError::required(
                    &child(path, "values"),
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                ));
            }
        }
        other => errs.push(FieldError::invalid(&child(path, "operator"), other, "not a valid selector operator")),
    }
    if req.key == "metadata.name" {
        let values_path = child(path, "values");
        for (i, v) in values.iter().enumerate() {
            for msg in is_dns1123_subdomain(v) {
                errs.push(FieldError::invalid(&index(&values_path, i), v.as_str(), msg));
            }
        }
    } else {
        errs.push(FieldError::invalid(&child(path, "key"), req.key.as_str(), "not a valid field selector key"));
    }
    errs
}

/// `ValidatePreferredSchedulingTerms`: a weight in 1–100 and a valid preference per term.
pub fn validate_preferred_scheduling_terms(terms: &[PreferredSchedulingTerm], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, term) in terms.iter().enumerate() {
        let p = index(path, i);
        if term.weight <= 0 || term.weight > 100 {
            errs.push(FieldError::invalid(&child(&p, "weight"), term.weight, "must be in the range 1-100"));
        }
        errs.extend(validate_node_selector_term(&term.preference, &child(&p, "preference")));
    }
    errs
}

/// `ValidateTolerations`.
pub fn validate_tolerations(tolerations: &[Toleration], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, t) in tolerations.iter().enumerate() {
        let p = index(path, i);
        let key = t.key.as_deref().unwrap_or("");
        let operator = t.operator.as_deref().unwrap_or("");
        let value = t.value.as_deref().unwrap_or("");
        let effect = t.effect.as_deref().unwrap_or("");
        if !key.is_empty() {
            errs.extend(validate_label_name(key, &child(&p, "key")));
        }
        if key.is_empty() && operator != "Exists" {
            errs.push(FieldError::invalid(
                &child(&p, "operator"),
                operator,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if t.toleration_seconds.is_some() && effect != "NoExecute" {
            errs.push(FieldError::invalid(
                &child(&p, "effect"),
                effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        match operator {
            "Equal" | "" => {
                let msgs = is_valid_label_value(value);
                if !msgs.is_empty() {
                    errs.push(FieldError::invalid(&child(&p, "operator"), value, msgs.join(";")));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(FieldError::invalid(
                        &child(&p, "operator"),
                        serde_json::to_value(t).unwrap_or_default(),
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => errs.push(FieldError::not_supported(&child(&p, "operator"), other, &["Equal", "Exists"])),
        }
        if !effect.is_empty() && !matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
            errs.push(FieldError::not_supported(
                &child(&p, "effect"),
                effect,
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn term(v: serde_json::Value) -> NodeSelectorTerm {
        serde_json::from_value(v).unwrap()
    }

    fn paths(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn node_selector_terms() {
        let ok = term(
            json!({"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["a"]}],
            "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}),
        );
        assert!(validate_node_selector_term(&ok, "t").is_empty());
        let bad = term(json!({"matchExpressions": [
            {"key": "k", "operator": "Exists", "values": ["x"]},
            {"key": "k", "operator": "In"},
            {"key": "k", "operator": "Gt", "values": ["1", "2"]},
            {"key": "k", "operator": "Maybe"}],
            "matchFields": [{"key": "spec.nodeName", "operator": "Exists"}]}));
        assert_eq!(
            paths(&validate_node_selector_term(&bad, "t")),
            [
                "t.matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                "t.matchExpressions[1].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
                "t.matchExpressions[2].values: Required value: must be specified single value when `operator` is 'Lt' or 'Gt'",
                "t.matchExpressions[3].operator: Invalid value: \"Maybe\": not a valid selector operator",
                "t.matchFields[0].operator: Invalid value: \"Exists\": not a valid selector operator",
                "t.matchFields[0].key: Invalid value: \"spec.nodeName\": not a valid field selector key",
            ]
        );
    }

    #[test]
    fn preferred_terms_weight() {
        let terms: Vec<PreferredSchedulingTerm> = serde_json::from_value(json!([
            {"weight": 101, "preference": {}}, {"weight": 1, "preference": {}}, {"weight": 0, "preference": {}}]))
        .unwrap();
        assert_eq!(
            paths(&validate_preferred_scheduling_terms(&terms, "p")),
            [
                "p[0].weight: Invalid value: 101: must be in the range 1-100",
                "p[2].weight: Invalid value: 0: must be in the range 1-100"
            ]
        );
    }

    #[test]
    fn tolerations() {
        let t: Vec<Toleration> = serde_json::from_value(json!([
            {"key": "ecs", "operator": "Exists"},
            {"operator": "Exists"},
            {"key": "a", "value": "b", "effect": "NoSchedule"},
            {"operator": "Equal", "value": "x"},
            {"key": "a", "operator": "Exists", "value": "x"},
            {"key": "a", "operator": "Like"},
            {"key": "a", "operator": "Exists", "effect": "Sometimes"},
            {"key": "a", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 5}]))
        .unwrap();
        assert_eq!(
            paths(&validate_tolerations(&t, "t")),
            [
                "t[3].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
                "t[4].operator: Invalid value: {\"key\":\"a\",\"operator\":\"Exists\",\"value\":\"x\"}: value must be empty when `operator` is 'Exists'",
                "t[5].operator: Unsupported value: \"Like\": supported values: \"Equal\", \"Exists\"",
                "t[6].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
                "t[7].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
            ]
        );
    }
}
