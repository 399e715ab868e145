//! Conflicts between SidecarSets (spec §2.3 item 13, §4.8) and selector overlap (§4.9).
//!
//! Two sets overlap when their namespace scopes are not provably disjoint and their pod
//! selectors overlap (kruise's `IsSelectorOverlapping`: only a contradiction on a common key
//! proves disjointness, so `a=b` and `c=d` overlap). Overlapping sets may not inject containers
//! or init containers of the same name, may not define a same-named volume differently, and may
//! not both patch an annotation key when either of them overwrites it.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::canary_base;
use crate::apis::SidecarSet;
use crate::apis::keys::NAMESPACE_NAME_LABEL;
use crate::compat::field::{FieldError, child};

/// `IsSelectorOverlapping`: not disjoint in either direction. A missing selector is treated as
/// empty (kruise would dereference nil).
pub fn selectors_overlap(a: Option<&LabelSelector>, b: Option<&LabelSelector>) -> bool {
    let empty = LabelSelector::default();
    let (a, b) = (a.unwrap_or(&empty), b.unwrap_or(&empty));
    !(disjoint(a, b) || disjoint(b, a))
}

const ALL: &str = "ALL";

/// kruise's `isDisjoint(selector1, selector2)`.
fn disjoint(s1: &LabelSelector, s2: &LabelSelector) -> bool {
    let mut values: HashMap<&str, Vec<&str>> = HashMap::new();
    for (k, v) in s1.match_labels.iter().flatten() {
        values.insert(k, vec![v]);
    }
    for req in s1.match_expressions.iter().flatten() {
        match req.operator.as_str() {
            "In" => values.entry(&req.key).or_default().extend(req.values.iter().flatten().map(String::as_str)),
            "Exists" => {
                values.insert(&req.key, vec![ALL]);
            }
            _ => {}
        }
    }
    for (k, v) in s2.match_labels.iter().flatten() {
        if let Some(vals) = values.get(k.as_str())
            && !vals.contains(&ALL)
            && !vals.contains(&v.as_str())
        {
            return true;
        }
    }
    for req in s2.match_expressions.iter().flatten() {
        let vals = values.get(req.key.as_str());
        let req_values: Vec<&str> = req.values.iter().flatten().map(String::as_str).collect();
        let found = match req.operator.as_str() {
            "In" => vals.is_some_and(|v| !v.contains(&ALL) && !v.iter().any(|x| req_values.contains(x))),
            "NotIn" => vals.is_some_and(|v| v.iter().all(|x| req_values.contains(x))),
            "Exists" => vals.is_none(),
            "DoesNotExist" => vals.is_some(),
            _ => false,
        };
        if found {
            return true;
        }
    }
    false
}

/// The namespace selector a set is scoped by (v1alpha1 `spec.namespace` wins, as in kruise's
/// conversion to v1beta1).
pub fn effective_namespace_selector(set: &SidecarSet) -> Option<LabelSelector> {
    if !set.spec.namespace.is_empty() {
        return Some(LabelSelector {
            match_labels: Some(BTreeMap::from([(NAMESPACE_NAME_LABEL.to_string(), set.spec.namespace.clone())])),
            match_expressions: None,
        });
    }
    set.spec.namespace_selector.clone()
}

/// `isSidecarSetNamespaceOverlapping`: disjoint only when both have namespace selectors that do
/// not overlap.
pub fn namespaces_overlap(a: &SidecarSet, b: &SidecarSet) -> bool {
    match (effective_namespace_selector(a), effective_namespace_selector(b)) {
        (Some(x), Some(y)) => selectors_overlap(Some(&x), Some(&y)),
        _ => true,
    }
}

/// `validateSidecarConflict`: `set` against every other set of the cluster.
pub fn validate_conflicts(set: &SidecarSet, all: &[Arc<SidecarSet>]) -> Vec<FieldError> {
    let name = set.metadata.name.as_deref().unwrap_or("");
    let base = canary_base(set);
    let mut init_in_others: HashMap<&str, &str> = HashMap::new();
    let mut containers_in_others: HashMap<&str, &str> = HashMap::new();
    let mut volumes_in_others: HashMap<&str, &SidecarSet> = HashMap::new();
    let mut annotations_in_others: HashMap<&str, (&str, &str)> = HashMap::new();
    for other in all {
        let other_name = other.metadata.name.as_deref().unwrap_or("");
        if other_name == name || base == Some(other_name) {
            continue;
        }
        if !(namespaces_overlap(set, other)
            && selectors_overlap(set.spec.selector.as_ref(), other.spec.selector.as_ref()))
        {
            continue;
        }
        for c in &other.spec.init_containers {
            init_in_others.insert(&c.container.name, other_name);
        }
        for c in &other.spec.containers {
            containers_in_others.insert(&c.container.name, other_name);
        }
        for v in &other.spec.volumes {
            volumes_in_others.insert(&v.name, other);
        }
        for patch in &other.spec.patch_pod_metadata {
            if patch.patch_policy == "Retain" {
                continue;
            }
            for key in patch.annotations.keys() {
                annotations_in_others.insert(key, (other_name, &patch.patch_policy));
            }
        }
    }
    let mut errs = Vec::new();
    let containers_path = child("spec", "containers");
    for (list, others) in [(&set.spec.init_containers, &init_in_others), (&set.spec.containers, &containers_in_others)]
    {
        for c in list {
            if let Some(other) = others.get(c.container.name.as_str()) {
                errs.push(FieldError::invalid(
                    &containers_path,
                    c.container.name.as_str(),
                    format!("container {} already exist in {other}", c.container.name),
                ));
            }
        }
    }
    for v in &set.spec.volumes {
        if let Some(other) = volumes_in_others.get(v.name.as_str())
            && other.spec.volumes.iter().find(|o| o.name == v.name) != Some(v)
        {
            errs.push(FieldError::invalid(
                &child("spec", "volumes"),
                v.name.as_str(),
                format!(
                    "volume {} is in conflict with sidecarset {}",
                    v.name,
                    other.metadata.name.as_deref().unwrap_or("")
                ),
            ));
        }
    }
    for patch in &set.spec.patch_pod_metadata {
        if patch.patch_policy == "Retain" {
            continue;
        }
        for key in patch.annotations.keys() {
            if let Some((other, policy)) = annotations_in_others.get(key.as_str())
                && (patch.patch_policy == "Overwrite" || *policy == "Overwrite")
            {
                errs.push(FieldError::invalid(
                    &child("spec", "patchPodMetadata"),
                    key.as_str(),
                    format!("annotation {key} is in conflict with sidecarset {other}"),
                ));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn sel(v: Value) -> LabelSelector {
        serde_json::from_value(v).unwrap()
    }

    /// The cases of kruise's `pkg/util/selector_test.go` plus the operators of spec §4.9.
    #[test]
    fn overlap_table() {
        let cases = [
            (json!({"matchLabels": {"a": "b"}}), json!({"matchLabels": {"c": "d"}}), true),
            (json!({"matchLabels": {"a": "b"}}), json!({"matchLabels": {"a": "c"}}), false),
            (
                json!({"matchLabels": {"a": "b", "c": "d", "e": "f"}}),
                json!({"matchLabels": {"a": "x", "c": "d", "e": "f"}}),
                false,
            ),
            (
                json!({"matchLabels": {"a": "b"}}),
                json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["b", "c"]}]}),
                true,
            ),
            (
                json!({"matchLabels": {"a": "b"}}),
                json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["x"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["b", "c"]}]}),
                json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["b", "c", "d"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["b", "c"]}]}),
                json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["b"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "Exists"}]}),
                json!({"matchLabels": {"a": "anything"}}),
                true,
            ),
            (
                json!({"matchLabels": {"b": "c"}}),
                json!({"matchExpressions": [{"key": "a", "operator": "Exists"}]}),
                false,
            ),
            (
                json!({"matchLabels": {"a": "b"}}),
                json!({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["b"]}]}),
                json!({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}),
                true,
            ),
            (json!({}), json!({"matchLabels": {"a": "b"}}), true),
        ];
        for (a, b, want) in cases {
            assert_eq!(selectors_overlap(Some(&sel(a.clone())), Some(&sel(b.clone()))), want, "{a} vs {b}");
            assert_eq!(selectors_overlap(Some(&sel(b.clone())), Some(&sel(a.clone()))), want, "{b} vs {a}");
        }
    }
}
