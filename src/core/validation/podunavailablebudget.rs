//! Whether a PodUnavailableBudget may be created or updated (spec §2.6): kruise v1.9's
//! `validatingPodUnavailableBudgetFn` (`pkg/webhook/podunavailablebudget/validating/
//! pub_create_update_handler.go`) for the v1alpha1 object we serve — its annotations
//! (`kruise.io/pub-protect-operations`, `pub.kruise.io/protect-total-replicas`), the spec
//! (`validatePodUnavailableBudgetSpec`: one of selector / targetRef, one of maxUnavailable /
//! minAvailable), an UPDATE that moves the selector or targetRef (`validateUpdatePubConflict`),
//! and another budget of the namespace on the same workload or an overlapping selector
//! (`validatePubConflict` with `util.IsSelectorLooseOverlap`). Field paths and details are
//! kruise's; values are shown as JSON (the wording gist of spec §2.0), the code is spec §11.1's.
//!
//! A v1beta1 object (kruise HEAD) is validated on its v1alpha1 conversion with the above, plus
//! [`validate_v1beta1_fields`]: HEAD's checks of what v1alpha1 cannot spell.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

use super::json;
use crate::apis::podunavailablebudget::{PodUnavailableBudget, TargetReference, v1beta1};
use crate::compat::field::FieldError;
use crate::compat::intstr::{is_not_more_than_100_percent, validate_positive_int_or_percent};
use crate::compat::selector::{Selector, validate_label_selector};
use crate::core::budget::{Operation, PROTECT_OPERATIONS, PROTECT_TOTAL_REPLICAS};

/// Every error of `pub_` (and of the change from `old`, on UPDATE) against the other budgets of
/// its namespace, `others` (which may include `pub_` itself: kruise lists them all and skips the
/// one of the same name).
pub fn validate(
    pub_: &PodUnavailableBudget,
    old: Option<&PodUnavailableBudget>,
    others: &[&PodUnavailableBudget],
) -> Vec<FieldError> {
    let mut errs = validate_annotations(pub_);
    errs.extend(validate_spec(pub_));
    if let Some(old) = old
        && (pub_.spec.selector != old.spec.selector || pub_.spec.target_reference != old.spec.target_reference)
    {
        errs.push(FieldError::required("spec.selector, targetRef", "selector and targetRef cannot be modified"));
    }
    errs.extend(validate_conflicts(pub_, others));
    errs
}

/// kruise HEAD's `validatingPodUnavailableBudgetFnV1beta1` checks of the v1beta1-only fields:
/// the `pub.kruise.io/protect-total-replicas` annotation an int32 equal to
/// `spec.protectTotalReplicas` when both are set, `protectOperations` each a known operation,
/// `ignoredPodSelector` a valid, non-empty selector.
pub fn validate_v1beta1_fields(pub_: &v1beta1::PodUnavailableBudget) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let annotation_path = format!("metadata.annotations[{PROTECT_TOTAL_REPLICAS}]");
    if let Some(value) = pub_.metadata.annotations.as_ref().and_then(|a| a.get(PROTECT_TOTAL_REPLICAS)) {
        match crate::compat::intstr::go_atoi(value).ok().and_then(|n| i32::try_from(n).ok()) {
            None => errs.push(FieldError::invalid(&annotation_path, value.as_str(), "must be a valid int32")),
            Some(n) if pub_.spec.protect_total_replicas.is_some_and(|t| t != n) => errs.push(FieldError::invalid(
                &annotation_path,
                value.as_str(),
                "must match spec.protectTotalReplicas when both are set",
            )),
            Some(_) => {}
        }
    }
    if let Some(ignored) = &pub_.spec.ignored_pod_selector {
        errs.extend(validate_label_selector(ignored, "spec.ignoredPodSelector"));
        let terms = ignored.match_labels.as_ref().map_or(0, BTreeMap::len)
            + ignored.match_expressions.as_ref().map_or(0, Vec::len);
        if terms == 0 {
            errs.push(FieldError::invalid(
                "spec.ignoredPodSelector",
                json(ignored),
                "empty ignoredPodSelector is not valid for PodUnavailableBudget",
            ));
        }
    }
    errs
}

/// The two annotations kruise reads off a budget.
fn validate_annotations(pub_: &PodUnavailableBudget) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let annotations = pub_.metadata.annotations.clone().unwrap_or_default();
    if let Some(value) = annotations.get(PROTECT_OPERATIONS) {
        // One error per unknown item, as kruise appends them in its loop.
        for op in value.split(',') {
            if Operation::parse(op).is_none() {
                errs.push(FieldError::internal("metadata", format!("annotation[{PROTECT_OPERATIONS}] is invalid")));
            }
        }
    }
    if let Some(value) = annotations.get(PROTECT_TOTAL_REPLICAS)
        && crate::compat::intstr::go_atoi(value).ok().and_then(|n| i32::try_from(n).ok()).is_none()
    {
        errs.push(FieldError::internal("metadata", format!("annotation[{PROTECT_TOTAL_REPLICAS}] is invalid")));
    }
    errs
}

/// `validatePodUnavailableBudgetSpec`.
fn validate_spec(pub_: &PodUnavailableBudget) -> Vec<FieldError> {
    let spec = &pub_.spec;
    let mut errs = Vec::new();
    match (&spec.selector, &spec.target_reference) {
        (None, None) => errs.push(FieldError::required(
            "spec.selector, targetRef",
            "no selector or targetRef defined in PodUnavailableBudget",
        )),
        (Some(_), Some(_)) => {
            errs.push(FieldError::required("spec.selector, targetRef", "selector and targetRef are mutually exclusive"))
        }
        (None, Some(target)) => {
            if target.api_version.is_empty() || target.name.is_empty() || target.kind.is_empty() {
                errs.push(FieldError::invalid(
                    "spec.TargetReference",
                    json(target),
                    "empty TargetReference is not valid for PodUnavailableBudget.",
                ));
            }
            if let Err(e) = parse_group(&target.api_version) {
                errs.push(FieldError::invalid("spec.TargetReference", json(target), e));
            }
        }
        (Some(selector), None) => {
            errs.extend(validate_label_selector(selector, "spec.selector"));
            if crate::compat::selector::is_empty(selector) {
                errs.push(FieldError::invalid(
                    "spec.selector",
                    json(selector),
                    "empty selector is not valid for PodUnavailableBudget.",
                ));
            }
            if Selector::from_label_selector(selector).is_err() {
                errs.push(FieldError::invalid("spec.selector", json(selector), ""));
            }
        }
    }
    match (&spec.max_unavailable, &spec.min_available) {
        (None, None) => errs.push(FieldError::required(
            "spec.maxUnavailable, minAvailable",
            "no maxUnavailable or minAvailable defined in PodUnavailableBudget",
        )),
        (Some(_), Some(_)) => errs.push(FieldError::required(
            "spec.maxUnavailable, minAvailable",
            "maxUnavailable and minAvailable are mutually exclusive",
        )),
        (Some(v), None) => {
            errs.extend(validate_positive_int_or_percent(v, "spec.maxUnavailable"));
            errs.extend(is_not_more_than_100_percent(v, "spec.maxUnavailable"));
        }
        (None, Some(v)) => {
            errs.extend(validate_positive_int_or_percent(v, "spec.minAvailable"));
            errs.extend(is_not_more_than_100_percent(v, "spec.minAvailable"));
        }
    }
    errs
}

/// `validatePubConflict`: the first other budget on the same workload (by group, kind and name)
/// or with a loosely overlapping selector; kruise stops at the first.
fn validate_conflicts(pub_: &PodUnavailableBudget, others: &[&PodUnavailableBudget]) -> Vec<FieldError> {
    let name = pub_.metadata.name.as_deref().unwrap_or("");
    let namespace = |b: &PodUnavailableBudget| b.metadata.namespace.clone().unwrap_or_else(|| "default".into());
    for other in others {
        let other_name = other.metadata.name.as_deref().unwrap_or("");
        if other_name == name || namespace(other) != namespace(pub_) {
            continue;
        }
        // Go's if / else if: two targetRefs are compared as such, whatever their selectors.
        let conflict = match (&pub_.spec.target_reference, &other.spec.target_reference) {
            (Some(cur), Some(theirs)) => same_workload(cur, theirs).then(|| {
                FieldError::invalid(
                    "spec.targetReference",
                    json(cur),
                    format!("pub.spec.targetReference is in conflict with other PodUnavailableBudget {other_name}"),
                )
            }),
            _ => match (&pub_.spec.selector, &other.spec.selector) {
                (Some(cur), Some(theirs)) => selectors_loosely_overlap(cur, theirs).then(|| {
                    FieldError::invalid(
                        "spec.selector",
                        json(cur),
                        format!("pub.spec.selector is in conflict with other PodUnavailableBudget {other_name}"),
                    )
                }),
                _ => None,
            },
        };
        if let Some(e) = conflict {
            return vec![e];
        }
    }
    Vec::new()
}

/// `schema.ParseGroupVersion(apiVersion)`'s group: "" and `v1` have the core group; more than one
/// `/` is kruise's error text.
pub fn parse_group(api_version: &str) -> Result<&str, String> {
    match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [] | [_] => Ok(""),
        [group, _] => Ok(group),
        _ => Err(format!("unexpected GroupVersion string: {api_version}")),
    }
}

/// `pubcontrol.IsReferenceEqual`: same group (any version), kind and name; a reference whose
/// apiVersion does not parse equals nothing.
pub fn same_workload(a: &TargetReference, b: &TargetReference) -> bool {
    match (parse_group(&a.api_version), parse_group(&b.api_version)) {
        (Ok(ga), Ok(gb)) => ga == gb && a.kind == b.kind && a.name == b.name,
        _ => false,
    }
}

/// kruise `util.IsSelectorLooseOverlap`: every key of either selector is constrained by the
/// other, and each pair of requirements on a key can both hold. (Two selectors on different keys
/// do not "loosely" overlap, unlike `IsSelectorOverlapping`.)
pub fn selectors_loosely_overlap(a: &LabelSelector, b: &LabelSelector) -> bool {
    let (ra, rb) = (requirements_by_key(a), requirements_by_key(b));
    let one_way = |x: &BTreeMap<String, LabelSelectorRequirement>, y: &BTreeMap<String, LabelSelectorRequirement>| {
        x.iter().all(|(k, e1)| y.get(k).is_some_and(|e2| expressions_overlap(e1, e2)))
    };
    one_way(&ra, &rb) && one_way(&rb, &ra)
}

/// `convertSelectorToMatchExpressions`: expressions by key, then `matchLabels` as `In [v]` (a
/// label wins over an expression on the same key, as the Go map assignment order has it).
fn requirements_by_key(sel: &LabelSelector) -> BTreeMap<String, LabelSelectorRequirement> {
    let mut out = BTreeMap::new();
    for e in sel.match_expressions.iter().flatten() {
        out.insert(e.key.clone(), e.clone());
    }
    for (k, v) in sel.match_labels.iter().flatten() {
        let req = LabelSelectorRequirement { key: k.clone(), operator: "In".into(), values: Some(vec![v.clone()]) };
        out.insert(k.clone(), req);
    }
    out
}

/// `isMatchExpOverlap(e1, e2)`.
fn expressions_overlap(e1: &LabelSelectorRequirement, e2: &LabelSelectorRequirement) -> bool {
    let v1: &[String] = e1.values.as_deref().unwrap_or(&[]);
    let v2: &[String] = e2.values.as_deref().unwrap_or(&[]);
    // sliceOverlaps(a, b): some item of b is in a; sliceContains(a, b): every item of b is in a.
    let overlaps = |a: &[String], b: &[String]| b.iter().any(|x| a.contains(x));
    let contains = |a: &[String], b: &[String]| b.iter().all(|x| a.contains(x));
    match (e1.operator.as_str(), e2.operator.as_str()) {
        ("In", "Exists") => true,
        ("In", "In") => overlaps(v2, v1),
        ("In", "NotIn") => !contains(v2, v1),
        ("Exists", "In" | "NotIn" | "Exists") => true,
        ("NotIn", "Exists" | "DoesNotExist" | "NotIn") => true,
        ("NotIn", "In") => !contains(v1, v2),
        ("DoesNotExist", "DoesNotExist" | "NotIn") => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::field::aggregate;
    use serde_json::{Value, json};

    /// kruise's `pubDemo`: both selector and targetRef, both maxUnavailable and minAvailable;
    /// each row removes what it needs.
    fn demo() -> Value {
        json!({"apiVersion": "policy.kruise.io/v1alpha1", "kind": "PodUnavailableBudget",
            "metadata": {"namespace": "default", "name": "pub-test", "annotations": {}},
            "spec": {"selector": {"matchLabels": {"app": "pub-controller"}},
                     "targetRef": {"apiVersion": "apps", "kind": "Deployment", "name": "deployment-test"},
                     "maxUnavailable": "20%", "minAvailable": 100}})
    }

    fn with(f: impl Fn(&mut Value)) -> PodUnavailableBudget {
        let mut v = demo();
        f(&mut v);
        serde_json::from_value(v).expect("a budget")
    }

    fn drop(v: &mut Value, field: &str) {
        v["spec"].as_object_mut().expect("spec").remove(field);
    }

    /// `TestValidatingPub`, row by row (kruise counts errors; we also pin the messages).
    #[test]
    fn validating_pub() {
        let rows: Vec<(&str, PodUnavailableBudget, &str)> = vec![
            (
                "valid pub, TargetReference and MaxUnavailable",
                with(|v| {
                    drop(v, "selector");
                    drop(v, "minAvailable")
                }),
                "",
            ),
            (
                "valid pub, Selector and MinAvailable",
                with(|v| {
                    drop(v, "targetRef");
                    drop(v, "maxUnavailable")
                }),
                "",
            ),
            (
                "invalid pub, Selector and TargetReference are nil",
                with(|v| {
                    drop(v, "targetRef");
                    drop(v, "selector");
                    drop(v, "minAvailable")
                }),
                "spec.selector, targetRef: Required value: no selector or targetRef defined in PodUnavailableBudget",
            ),
            (
                "invalid pub, Selector and TargetReference are mutually exclusive",
                with(|v| drop(v, "minAvailable")),
                "spec.selector, targetRef: Required value: selector and targetRef are mutually exclusive",
            ),
            (
                "invalid pub, MaxUnavailable and MinAvailable are nil",
                with(|v| {
                    drop(v, "maxUnavailable");
                    drop(v, "minAvailable");
                    drop(v, "selector")
                }),
                "spec.maxUnavailable, minAvailable: Required value: no maxUnavailable or minAvailable defined in PodUnavailableBudget",
            ),
            (
                "invalid pub, MaxUnavailable and MinAvailable are mutually exclusive",
                with(|v| drop(v, "selector")),
                "spec.maxUnavailable, minAvailable: Required value: maxUnavailable and minAvailable are mutually exclusive",
            ),
            (
                "invalid pub feature-gate annotation",
                with(|v| {
                    drop(v, "selector");
                    drop(v, "minAvailable");
                    v["metadata"]["annotations"][PROTECT_OPERATIONS] = json!("xxxxx")
                }),
                "metadata: Internal error: annotation[kruise.io/pub-protect-operations] is invalid",
            ),
            (
                "valid pub feature-gate annotation",
                with(|v| {
                    drop(v, "selector");
                    drop(v, "minAvailable");
                    v["metadata"]["annotations"][PROTECT_OPERATIONS] = json!("EVICT,DELETE,UPDATE,RESIZE")
                }),
                "",
            ),
            (
                "invalid pub total replicas annotation",
                with(|v| {
                    drop(v, "selector");
                    drop(v, "minAvailable");
                    v["metadata"]["annotations"][PROTECT_TOTAL_REPLICAS] = json!("%%")
                }),
                "metadata: Internal error: annotation[pub.kruise.io/protect-total-replicas] is invalid",
            ),
            (
                "valid pub total replicas annotation",
                with(|v| {
                    drop(v, "selector");
                    drop(v, "minAvailable");
                    v["metadata"]["annotations"][PROTECT_TOTAL_REPLICAS] = json!("1000")
                }),
                "",
            ),
            // Beyond kruise's table: the number rules and the targetRef checks.
            (
                "maxUnavailable over 100%",
                with(|v| {
                    drop(v, "selector");
                    drop(v, "minAvailable");
                    v["spec"]["maxUnavailable"] = json!("120%")
                }),
                "spec.maxUnavailable: Invalid value: \"120%\": must not be greater than 100%",
            ),
            (
                "negative minAvailable",
                with(|v| {
                    drop(v, "selector");
                    drop(v, "maxUnavailable");
                    v["spec"]["minAvailable"] = json!(-1)
                }),
                "spec.minAvailable: Invalid value: -1: must be greater than or equal to 0",
            ),
            (
                "empty selector",
                with(|v| {
                    drop(v, "targetRef");
                    drop(v, "minAvailable");
                    v["spec"]["selector"] = json!({})
                }),
                "spec.selector: Invalid value: {}: empty selector is not valid for PodUnavailableBudget.",
            ),
            (
                "targetRef without a name",
                with(|v| {
                    drop(v, "selector");
                    drop(v, "minAvailable");
                    v["spec"]["targetRef"] = json!({"apiVersion": "apps/v1", "kind": "Deployment"})
                }),
                "spec.TargetReference: Invalid value: {\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\"}: empty TargetReference is not valid for PodUnavailableBudget.",
            ),
            (
                "targetRef with a bad apiVersion",
                with(|v| {
                    drop(v, "selector");
                    drop(v, "minAvailable");
                    v["spec"]["targetRef"]["apiVersion"] = json!("a/b/c")
                }),
                "spec.TargetReference: Invalid value: {\"apiVersion\":\"a/b/c\",\"kind\":\"Deployment\",\"name\":\"deployment-test\"}: unexpected GroupVersion string: a/b/c",
            ),
        ];
        for (name, pub_, want) in rows {
            assert_eq!(aggregate(&validate(&pub_, None, &[])), want, "{name}");
        }
    }

    fn other(name: &str, ns: &str, f: impl Fn(&mut Value)) -> PodUnavailableBudget {
        with(|v| {
            v["metadata"]["name"] = json!(name);
            v["metadata"]["namespace"] = json!(ns);
            f(v);
        })
    }

    /// `TestPubConflictWithOthers`.
    #[test]
    fn conflict_with_others() {
        let by_ref = with(|v| {
            drop(v, "selector");
            drop(v, "minAvailable")
        });
        let by_selector = with(|v| {
            drop(v, "targetRef");
            drop(v, "minAvailable")
        });
        let target = |name: &'static str| {
            move |v: &mut Value| {
                drop(v, "selector");
                v["spec"]["targetRef"] = json!({"apiVersion": "apps", "kind": "Deployment", "name": name});
            }
        };
        let selecting = |app: &'static str| {
            move |v: &mut Value| {
                drop(v, "targetRef");
                v["spec"]["selector"] = json!({"matchLabels": {"app": app}});
            }
        };
        let rows: Vec<(&str, &PodUnavailableBudget, Vec<PodUnavailableBudget>, usize)> = vec![
            (
                "no conflict with other pubs, and TargetReference",
                &by_ref,
                vec![
                    other("pub1", "default", target("deployment-test1")),
                    other("pub2", "default", target("deployment-test2")),
                ],
                0,
            ),
            (
                "invalid conflict with other pubs, and TargetReference",
                &by_ref,
                vec![
                    other("pub1", "default", target("deployment-test")),
                    other("pub2", "default", target("deployment-test2")),
                ],
                1,
            ),
            (
                "no conflict with other pubs, and Selector",
                &by_selector,
                vec![
                    other("pub1", "default", selecting("pub1-controller")),
                    other("pub2", "default", selecting("pub2-controller")),
                ],
                0,
            ),
            (
                "conflict with other pubs, and Selector",
                &by_selector,
                vec![
                    other("pub1", "default", selecting("pub-controller")),
                    other("pub2", "default", selecting("pub2-controller")),
                ],
                1,
            ),
            (
                "no conflict with other pubs, and Selector, other namespace",
                &by_selector,
                vec![
                    other("pub1", "pub1", selecting("pub-controller")),
                    other("pub2", "default", selecting("pub2-controller")),
                ],
                0,
            ),
        ];
        for (name, pub_, others, want) in rows {
            let refs: Vec<&PodUnavailableBudget> = others.iter().collect();
            let errs = validate(pub_, None, &refs);
            assert_eq!(errs.len(), want, "{name}: {}", aggregate(&errs));
        }
        let refs = [&other("pub1", "default", target("deployment-test"))];
        assert_eq!(
            aggregate(&validate(&by_ref, None, &refs)),
            "spec.targetReference: Invalid value: {\"apiVersion\":\"apps\",\"kind\":\"Deployment\",\"name\":\"deployment-test\"}: pub.spec.targetReference is in conflict with other PodUnavailableBudget pub1"
        );
        // The budget itself, as listed from the namespace, is no conflict.
        assert!(validate(&by_ref, None, &[&by_ref]).is_empty());
    }

    /// `TestValidatingUpdatePub`.
    #[test]
    fn validating_update_pub() {
        let by_ref = with(|v| {
            drop(v, "selector");
            drop(v, "minAvailable")
        });
        let moved = with(|v| {
            drop(v, "selector");
            drop(v, "minAvailable");
            v["spec"]["targetRef"]["name"] = json!("deployment-changed");
        });
        let by_selector = with(|v| {
            drop(v, "targetRef");
            drop(v, "minAvailable")
        });
        let reselected = with(|v| {
            drop(v, "targetRef");
            drop(v, "minAvailable");
            v["spec"]["selector"] = json!({"matchLabels": {"app": "pub-changed"}});
        });
        assert!(validate(&by_ref, Some(&by_ref), &[]).is_empty(), "targetRef not changed");
        let want = "spec.selector, targetRef: Required value: selector and targetRef cannot be modified";
        assert_eq!(aggregate(&validate(&moved, Some(&by_ref), &[])), want, "targetRef changed");
        assert_eq!(aggregate(&validate(&reselected, Some(&by_selector), &[])), want, "selector changed");
    }

    /// `IsSelectorLooseOverlap` cases (kruise `pkg/util/selector_test.go` shapes).
    #[test]
    fn loose_overlap() {
        let sel = |v: Value| -> LabelSelector { serde_json::from_value(v).expect("selector") };
        let rows = [
            (json!({"matchLabels": {"a": "1"}}), json!({"matchLabels": {"a": "1"}}), true),
            (json!({"matchLabels": {"a": "1"}}), json!({"matchLabels": {"a": "2"}}), false),
            (json!({"matchLabels": {"a": "1"}}), json!({"matchLabels": {"b": "1"}}), false),
            (json!({"matchLabels": {"a": "1", "b": "2"}}), json!({"matchLabels": {"a": "1"}}), false),
            (
                json!({"matchLabels": {"a": "1"}}),
                json!({"matchExpressions": [{"key": "a", "operator": "Exists"}]}),
                true,
            ),
            (
                json!({"matchLabels": {"a": "1"}}),
                json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}),
                false,
            ),
            (
                json!({"matchLabels": {"a": "1"}}),
                json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["2"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}),
                json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["2", "3"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}),
                json!({"matchExpressions": [{"key": "a", "operator": "Exists"}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}),
                json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["x"]}]}),
                true,
            ),
        ];
        for (a, b, want) in rows {
            assert_eq!(selectors_loosely_overlap(&sel(a.clone()), &sel(b.clone())), want, "{a} vs {b}");
        }
    }

    #[test]
    fn groups_of_api_versions() {
        assert_eq!(parse_group("apps/v1"), Ok("apps"));
        assert_eq!(parse_group("v1"), Ok(""));
        assert_eq!(parse_group(""), Ok(""));
        assert!(parse_group("a/b/c").is_err());
        let r = |v: &str, k: &str, n: &str| TargetReference { api_version: v.into(), kind: k.into(), name: n.into() };
        assert!(same_workload(&r("apps/v1", "Deployment", "d"), &r("apps/v1beta2", "Deployment", "d")));
        assert!(!same_workload(&r("apps/v1", "StatefulSet", "s"), &r("apps.kruise.io/v1beta1", "StatefulSet", "s")));
    }
}
