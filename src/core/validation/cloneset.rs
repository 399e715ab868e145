//! CloneSet validation (spec §2.1, kruise `pkg/webhook/cloneset/validating/validation.go`), v1alpha1:
//! every CREATE rule (items 1–15) and the UPDATE rules (18 metadata, 19 immutable spec, 20 the
//! InPlaceOnly guard of [`super::template_update`], then 1–15 on the new object with the old
//! `podsToDelete` as reference). Errors come back in kruise's order; the handler aggregates them
//! into one 422 message.
//!
//! Decisions: `updateStrategy.type: OnDelete` is rejected as kruise's v1alpha1 validator does
//! (§11.3); `podsToDelete` on CREATE is checked like on UPDATE (§11.4), which in practice rejects
//! it; the guard uses the anchored image path and compares defaulted templates (§11.2, §11.8); a
//! missing `spec.replicas` (only possible when the mutating webhook did not run; kruise would
//! dereference nil) is reported as Required. `podsToDelete` pods are read by the caller from the
//! cluster view (see [`pods_to_look_up`]) so this module stays pure.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::json;
use super::meta::{validate_object_meta, validate_object_meta_update};
use super::podtemplate::validate_workload_selector;
use super::template_update::{UpdateTemplates, normalized_template};
use super::update_order::{validate_priority, validate_scatter};
use crate::apis::CloneSet;
use crate::apis::cloneset::{
    CloneSetScaleStrategy, CloneSetSpec, CloneSetUpdateStrategy, IN_PLACE_IF_POSSIBLE, IN_PLACE_ONLY, RECREATE,
};
use crate::compat::field::FieldError;
use crate::compat::intstr::{go_string_opt, kruise_scaled_value, to_value, validate_nonnegative};
use crate::compat::normalize::semantic_eq;
use crate::compat::podspec::validate_pod_template_spec;
use crate::core::features::FeatureGates;

/// Pods named in `podsToDelete`, by name, as found in the CloneSet's namespace (absent = not
/// found).
pub type PodsByName = BTreeMap<String, Arc<Pod>>;

/// The field that selects InPlaceOnly, named in the guard's message.
pub const STRATEGY_FIELD: &str = "spec.updateStrategy.type";

const IMMUTABLE_MSG: &str = "updates to cloneset spec for fields other than 'replicas', 'template', 'lifecycle', \
     'scaleStrategy', 'updateStrategy', 'minReadySeconds', 'progressDeadlineSeconds', 'volumeClaimTemplates' and \
     'revisionHistoryLimit' are forbidden";

/// The `podsToDelete` names whose pods the validation reads: those not already listed in the old
/// object, and none when the list has duplicates (that error stops the check).
pub fn pods_to_look_up(names: &[String], old: Option<&[String]>) -> Vec<String> {
    if !duplicates(names).is_empty() {
        return Vec::new();
    }
    let before: BTreeSet<&String> = old.map(|o| o.iter().collect()).unwrap_or_default();
    let fresh: BTreeSet<&String> = names.iter().filter(|n| !before.contains(n)).collect();
    fresh.into_iter().cloned().collect()
}

/// The API version whose field names the errors use (the rules are one): v1alpha1 keeps the
/// rolling parameters in `updateStrategy` and the policy in `type`; v1beta1 has them under
/// `updateStrategy.rollingUpdate` with the policy in `podUpdatePolicy`, and checks none of them
/// when the object has no `rollingUpdate` (as kruise's `validateUpdateStrategyV1beta1`). Its
/// `type`/`podUpdatePolicy` values are checked on the v1beta1 object, by [`super::cloneset_v1beta1`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `apps.kruise.io/v1alpha1`.
    V1alpha1,
    /// `apps.kruise.io/v1beta1`; whether the object has `updateStrategy.rollingUpdate`.
    V1beta1 {
        /// `updateStrategy.rollingUpdate` is set.
        rolling_update: bool,
    },
}

impl Shape {
    /// Where the rolling parameters are.
    fn rolling_path(self) -> &'static str {
        match self {
            Shape::V1alpha1 => "spec.updateStrategy",
            Shape::V1beta1 { .. } => "spec.updateStrategy.rollingUpdate",
        }
    }

    /// The field that selects InPlaceOnly, named in the guard's message.
    pub fn strategy_field(self) -> &'static str {
        match self {
            Shape::V1alpha1 => STRATEGY_FIELD,
            Shape::V1beta1 { .. } => "spec.updateStrategy.rollingUpdate.podUpdatePolicy",
        }
    }
}

/// CREATE: rules 1–15.
pub fn validate_create(cs: &CloneSet, pods: &PodsByName, gates: &FeatureGates) -> Vec<FieldError> {
    validate_create_as(cs, pods, gates, Shape::V1alpha1)
}

/// CREATE of an object of `shape`'s version, decided on the v1alpha1 model.
pub fn validate_create_as(cs: &CloneSet, pods: &PodsByName, gates: &FeatureGates, shape: Shape) -> Vec<FieldError> {
    let normalized = normalized_template(&cs.spec.template, gates);
    validate_cloneset(cs, None, &normalized, pods, shape)
}

/// UPDATE: metadata update rules, the immutable spec, the InPlaceOnly guard, then rules 1–15 on
/// the new object.
pub fn validate_update(new: &CloneSet, old: &CloneSet, pods: &PodsByName, gates: &FeatureGates) -> Vec<FieldError> {
    validate_update_as(new, old, pods, gates, Shape::V1alpha1)
}

/// UPDATE of objects of `shape`'s version, decided on the v1alpha1 model.
pub fn validate_update_as(
    new: &CloneSet,
    old: &CloneSet,
    pods: &PodsByName,
    gates: &FeatureGates,
    shape: Shape,
) -> Vec<FieldError> {
    validate_update_with(new, old, &UpdateTemplates::new(&old.spec.template, &new.spec.template, gates), pods, shape)
}

/// [`validate_update_as`] with the templates of `new` and `old` as `templates` normalises them
/// (the handler shares them with the InPlaceIfPossible warning).
pub fn validate_update_with(
    new: &CloneSet,
    old: &CloneSet,
    templates: &UpdateTemplates<'_>,
    pods: &PodsByName,
    shape: Shape,
) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, "metadata");
    if !semantic_eq(&immutable_part(&new.spec), &immutable_part(&old.spec)) {
        errs.push(FieldError::forbidden("spec", IMMUTABLE_MSG));
    }
    if new.spec.update_strategy.type_ == IN_PLACE_ONLY {
        errs.extend(templates.in_place_only_violation(shape.strategy_field()));
    }
    // The new template as kruise validates it (defaulted), shared by the guard and the rules.
    errs.extend(validate_cloneset(new, Some(&old.spec), templates.new_normalized(), pods, shape));
    errs
}

/// The spec fields an UPDATE may not change. kruise copies every other field from the old spec
/// into the new one and compares the whole specs semantically; comparing what is left is the
/// same answer without serialising two templates. Destructured, so that a field added to the
/// spec must be placed on one side or the other.
fn immutable_part(spec: &CloneSetSpec) -> serde_json::Value {
    let CloneSetSpec {
        selector,
        replicas: _,
        template: _,
        volume_claim_templates: _,
        scale_strategy: _,
        update_strategy: _,
        revision_history_limit: _,
        min_ready_seconds: _,
        lifecycle: _,
        progress_deadline_seconds: _,
    } = spec;
    serde_json::json!({ "selector": json(selector) })
}

/// Rules 1–15; `normalized` is `cs`'s template through [`normalized_template`].
fn validate_cloneset(
    cs: &CloneSet,
    old: Option<&CloneSetSpec>,
    normalized: &PodTemplateSpec,
    pods: &PodsByName,
    shape: Shape,
) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&cs.metadata, true, "metadata");
    let spec = &cs.spec;
    match spec.replicas {
        Some(r) => errs.extend(validate_nonnegative(i64::from(r), "spec.replicas")),
        None => errs.push(FieldError::required("spec.replicas", "")),
    }
    errs.extend(validate_selector_and_template(spec, normalized));
    let pod_spec = normalized.spec.as_ref();
    let restart_policy = pod_spec.and_then(|s| s.restart_policy.as_deref());
    if let Some(policy) = restart_policy.filter(|p| !p.is_empty() && *p != "Always") {
        errs.push(FieldError::not_supported("spec.template.spec.restartPolicy", policy, &["Always"]));
    }
    if pod_spec.is_some_and(|s| s.active_deadline_seconds.is_some()) {
        errs.push(FieldError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in cloneset is not Supported",
        ));
    }
    let old_scale = old.map(|o| &o.scale_strategy);
    errs.extend(validate_scale_strategy(&spec.scale_strategy, old_scale, cs.metadata.uid.as_deref(), pods));
    errs.extend(validate_update_strategy(&spec.update_strategy, i64::from(spec.replicas.unwrap_or(0)), shape));
    if let Some(p) = spec.progress_deadline_seconds {
        errs.extend(validate_nonnegative(i64::from(p), "spec.progressDeadlineSeconds"));
        if p != i32::MAX && p <= spec.min_ready_seconds {
            errs.push(FieldError::invalid("spec.progressDeadlineSeconds", p, "must be greater than minReadySeconds"));
        }
    }
    errs
}

/// Rules 3–5: selector required, valid, non-empty, matching the template labels; then the pod
/// template (`normalized`: defaulted — kruise validates it after `SetDefaultPodSpec` in
/// `ConvertPodTemplateSpec` — with one PVC volume per volumeClaimTemplate). As in kruise, a
/// selector that cannot be converted skips the template checks.
fn validate_selector_and_template(spec: &CloneSetSpec, normalized: &PodTemplateSpec) -> Vec<FieldError> {
    let (mut errs, converted) = validate_workload_selector(spec.selector.as_ref(), &spec.template, "cloneset");
    if converted {
        let claims: Vec<String> =
            spec.volume_claim_templates.iter().map(|c| c.metadata.name.clone().unwrap_or_default()).collect();
        errs.extend(validate_pod_template_spec(normalized, &claims, "spec.template"));
    }
    errs
}

/// `util.CheckDuplicate`: every repeated occurrence, in order.
fn duplicates(names: &[String]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    names.iter().filter(|n| !seen.insert(n.as_str())).cloned().collect()
}

/// Rule 8.
fn validate_scale_strategy(
    strategy: &CloneSetScaleStrategy,
    old: Option<&CloneSetScaleStrategy>,
    uid: Option<&str>,
    pods: &PodsByName,
) -> Vec<FieldError> {
    let path = "spec.scaleStrategy.podsToDelete";
    let dups = duplicates(&strategy.pods_to_delete);
    if !dups.is_empty() {
        let detail = format!("duplicated items [{}]", dups.join(" "));
        return vec![FieldError::invalid(path, json(&strategy.pods_to_delete), detail)];
    }
    let before: BTreeSet<&str> = old.map(|o| o.pods_to_delete.iter().map(String::as_str).collect()).unwrap_or_default();
    let fresh: BTreeSet<&str> =
        strategy.pods_to_delete.iter().map(String::as_str).filter(|n| !before.contains(n)).collect();
    let mut errs = Vec::new();
    for name in fresh {
        let problem = match pods.get(name) {
            None => Some(format!("find pod {name} failed: pods \"{name}\" not found")),
            Some(pod) if pod.metadata.deletion_timestamp.is_some() => {
                Some(format!("find pod {name} already terminating"))
            }
            Some(pod) => {
                let owner = pod.metadata.owner_references.iter().flatten().find(|r| r.controller == Some(true));
                match (owner, uid) {
                    (Some(o), Some(uid)) if o.uid == uid => None,
                    _ => Some(format!("find pod {name} owner is not this CloneSet")),
                }
            }
        };
        errs.extend(problem.map(|p| FieldError::invalid(path, name, p)));
    }
    errs
}

/// Rules 9–14.
fn validate_update_strategy(strategy: &CloneSetUpdateStrategy, replicas: i64, shape: Shape) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if shape == (Shape::V1beta1 { rolling_update: false }) {
        return errs;
    }
    let base = shape.rolling_path();
    let path = |f: &str| format!("{base}.{f}");
    if shape == Shape::V1alpha1 && ![RECREATE, IN_PLACE_IF_POSSIBLE, IN_PLACE_ONLY].contains(&strategy.type_.as_str()) {
        errs.push(FieldError::invalid(
            &path("type"),
            strategy.type_.as_str(),
            format!("must be '{RECREATE}', {IN_PLACE_IF_POSSIBLE} or '{IN_PLACE_ONLY}'"),
        ));
    }
    let partition = strategy.partition.as_ref();
    let value = kruise_scaled_value(partition, replicas, true).unwrap_or_else(|e| {
        errs.push(FieldError::invalid(
            &path("partition"),
            go_string_opt(partition),
            format!("failed GetScaledValueFromIntOrPercent for partition: {e}"),
        ));
        0
    });
    errs.extend(validate_nonnegative(value, &path("partition")));
    errs.extend(validate_priority(strategy.priority_strategy.as_ref(), &path("priorityStrategy")));
    errs.extend(validate_scatter(&strategy.scatter_strategy, &path("scatterStrategy")));
    let mut scaled = |field: &str, v: Option<&IntOrString>| -> i64 {
        let Some(v) = v else { return 0 };
        kruise_scaled_value(Some(v), replicas, true).unwrap_or_else(|e| {
            errs.push(FieldError::invalid(
                &path(field),
                go_string_opt(Some(v)),
                format!("failed GetScaledValueFromIntOrPercent for {field}: {e}"),
            ));
            0
        })
    };
    let max_unavailable = scaled("maxUnavailable", strategy.max_unavailable.as_ref());
    let max_surge = scaled("maxSurge", strategy.max_surge.as_ref());
    if strategy.type_ == IN_PLACE_ONLY && max_surge > 0 {
        errs.push(FieldError::invalid(
            &path("maxSurge"),
            go_string_opt(strategy.max_surge.as_ref()),
            match shape {
                Shape::V1alpha1 => "can not use maxSurge with strategy type InPlaceOnly",
                Shape::V1beta1 { .. } => "can not use maxSurge with podUpdatePolicy InPlaceOnly",
            },
        ));
    }
    if replicas > 0 && max_unavailable < 1 && max_surge < 1 {
        errs.push(FieldError::invalid(
            &path("maxUnavailable"),
            to_value(strategy.max_unavailable.as_ref()),
            "maxUnavailable and maxSurge should not both be less than 1",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::field::aggregate;
    use serde_json::Value;
    use serde_json::json;

    /// A CloneSet as the validating webhook sees it: defaulted by the mutating webhook.
    fn base() -> Value {
        json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "web", "namespace": "ns", "uid": "cs-uid"},
            "spec": {
                "replicas": 3,
                "revisionHistoryLimit": 10,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "main", "image": "nginx:1.25", "imagePullPolicy": "Always",
                                             "env": [{"name": "MODE", "value": "prod"}],
                                             "terminationMessagePath": "/dev/termination-log",
                                             "terminationMessagePolicy": "File"}],
                             "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "securityContext": {},
                             "terminationGracePeriodSeconds": 30, "schedulerName": "default-scheduler"}
                },
                "updateStrategy": {"type": "ReCreate", "partition": 0, "maxUnavailable": "20%", "maxSurge": 0}
            }
        })
    }

    fn with(edit: impl FnOnce(&mut Value)) -> Value {
        let mut v = base();
        edit(&mut v);
        v
    }

    fn cs(v: Value) -> CloneSet {
        serde_json::from_value(v).unwrap()
    }

    fn pod(name: &str, owner_uid: Option<&str>, terminating: bool) -> (String, Arc<Pod>) {
        let mut p = json!({"metadata": {"name": name, "namespace": "ns"}});
        if let Some(uid) = owner_uid {
            p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
                                                       "name": "web", "uid": uid, "controller": true}]);
        }
        if terminating {
            p["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        }
        (name.to_string(), Arc::new(serde_json::from_value(p).unwrap()))
    }

    fn pods() -> PodsByName {
        [
            pod("mine", Some("cs-uid"), false),
            pod("other", Some("x"), false),
            pod("orphan", None, false),
            pod("dying", Some("cs-uid"), true),
        ]
        .into_iter()
        .collect()
    }

    fn create(v: Value) -> String {
        aggregate(&validate_create(&cs(v), &pods(), &FeatureGates::default()))
    }

    fn update(old: Value, new: Value) -> String {
        aggregate(&validate_update(&cs(new), &cs(old), &pods(), &FeatureGates::default()))
    }

    const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' \
        or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation \
        is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    /// Every CREATE rule of spec §2.1 (items 1–15), each allowed and denied.
    #[test]
    fn create_rules() {
        #[rustfmt::skip]
        let cases: Vec<(&str, Value, String)> = vec![
            ("valid", base(), String::new()),
            // 1. metadata
            ("1 dotted name", with(|v| v["metadata"]["name"] = json!("web.v2")), String::new()),
            ("1 bad name", with(|v| v["metadata"]["name"] = json!("Web")), format!("metadata.name: Invalid value: \"Web\": {SUBDOMAIN}")),
            ("1 no namespace", with(|v| v["metadata"]["namespace"] = json!("")), "metadata.namespace: Required value".into()),
            // 2. replicas
            ("2 zero replicas", with(|v| v["spec"]["replicas"] = json!(0)), String::new()),
            ("2 negative replicas", with(|v| v["spec"]["replicas"] = json!(-1)),
             "spec.replicas: Invalid value: -1: must be greater than or equal to 0".into()),
            ("2 replicas missing", with(|v| { v["spec"].as_object_mut().unwrap().remove("replicas"); }),
             "spec.replicas: Required value".into()),
            // 3. selector
            ("3 expression selector", with(|v| v["spec"]["selector"] = json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]})), String::new()),
            ("3 selector missing (selects nothing, as in Go)", with(|v| { v["spec"].as_object_mut().unwrap().remove("selector"); }),
             "[spec.selector: Required value, spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: \
              `selector` does not match template `labels`]".into()),
            ("3 empty selector", with(|v| v["spec"]["selector"] = json!({})),
             "spec.selector: Invalid value: {}: empty selector is invalid for cloneset".into()),
            ("3 invalid selector", with(|v| v["spec"]["selector"] = json!({"matchExpressions": [{"key": "app", "operator": "In"}]})),
             "[spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn', \
              spec.selector: Invalid value: {\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"In\"}]}]".into()),
            // 4. selector matches template labels
            ("4 mismatch", with(|v| v["spec"]["template"]["metadata"]["labels"]["app"] = json!("api")),
             "spec.template.metadata.labels: Invalid value: {\"app\":\"api\"}: `selector` does not match template `labels`".into()),
            ("4 superset of labels", with(|v| v["spec"]["template"]["metadata"]["labels"]["tier"] = json!("front")), String::new()),
            // 5. pod template (the full table is in podtemplate.rs)
            ("5 mount of a volumeClaimTemplate", with(|v| {
                v["spec"]["volumeClaimTemplates"] = json!([{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]);
                v["spec"]["template"]["spec"]["containers"][0]["volumeMounts"] = json!([{"name": "data", "mountPath": "/data"}]);
            }), String::new()),
            ("5 no containers", with(|v| v["spec"]["template"]["spec"]["containers"] = json!([])),
             "spec.template.spec.containers: Required value".into()),
            ("5 undefaulted template is defaulted first", with(|v| v["spec"]["template"]["spec"] =
                json!({"containers": [{"name": "main", "image": "nginx"}]})), String::new()),
            // 6. restartPolicy
            ("6 restartPolicy OnFailure", with(|v| v["spec"]["template"]["spec"]["restartPolicy"] = json!("OnFailure")),
             "spec.template.spec.restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\"".into()),
            // 7. activeDeadlineSeconds
            ("7 activeDeadlineSeconds", with(|v| v["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(60)),
             "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in cloneset is not Supported".into()),
            // 8. podsToDelete
            ("8 owned pod", with(|v| v["spec"]["scaleStrategy"] = json!({"podsToDelete": ["mine"]})), String::new()),
            ("8 duplicates", with(|v| v["spec"]["scaleStrategy"] = json!({"podsToDelete": ["mine", "nope", "mine"]})),
             "spec.scaleStrategy.podsToDelete: Invalid value: [\"mine\",\"nope\",\"mine\"]: duplicated items [mine]".into()),
            ("8 missing pod", with(|v| v["spec"]["scaleStrategy"] = json!({"podsToDelete": ["nope"]})),
             "spec.scaleStrategy.podsToDelete: Invalid value: \"nope\": find pod nope failed: pods \"nope\" not found".into()),
            ("8 terminating pod", with(|v| v["spec"]["scaleStrategy"] = json!({"podsToDelete": ["dying"]})),
             "spec.scaleStrategy.podsToDelete: Invalid value: \"dying\": find pod dying already terminating".into()),
            ("8 pod of another owner", with(|v| v["spec"]["scaleStrategy"] = json!({"podsToDelete": ["other", "orphan"]})),
             "[spec.scaleStrategy.podsToDelete: Invalid value: \"orphan\": find pod orphan owner is not this CloneSet, \
              spec.scaleStrategy.podsToDelete: Invalid value: \"other\": find pod other owner is not this CloneSet]".into()),
            // 9. updateStrategy.type
            ("9 InPlaceIfPossible", with(|v| v["spec"]["updateStrategy"]["type"] = json!("InPlaceIfPossible")), String::new()),
            ("9 InPlaceOnly", with(|v| v["spec"]["updateStrategy"]["type"] = json!("InPlaceOnly")), String::new()),
            ("9 OnDelete is rejected in v1alpha1", with(|v| v["spec"]["updateStrategy"]["type"] = json!("OnDelete")),
             "spec.updateStrategy.type: Invalid value: \"OnDelete\": must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'".into()),
            // 10. partition
            ("10 partition above replicas", with(|v| v["spec"]["updateStrategy"]["partition"] = json!("120%")), String::new()),
            ("10 partition 5", with(|v| v["spec"]["updateStrategy"]["partition"] = json!(5)), String::new()),
            ("10 partition numeric string", with(|v| v["spec"]["updateStrategy"]["partition"] = json!("2")),
             "spec.updateStrategy.partition: Invalid value: \"2\": failed GetScaledValueFromIntOrPercent for partition: \
              invalid type: string is not a percentage".into()),
            ("10 negative partition", with(|v| v["spec"]["updateStrategy"]["partition"] = json!("-50%")),
             "spec.updateStrategy.partition: Invalid value: -1: must be greater than or equal to 0".into()),
            // 11. priority / scatter
            ("11 order priority", with(|v| v["spec"]["updateStrategy"]["priorityStrategy"] = json!({"orderPriority": [{"orderedKey": "k"}]})), String::new()),
            ("11 both priorities", with(|v| v["spec"]["updateStrategy"]["priorityStrategy"] =
                json!({"orderPriority": [{"orderedKey": "k"}], "weightPriority": [{"weight": 1, "matchSelector": {"matchLabels": {"a": "b"}}}]})),
             "spec.updateStrategy.priorityStrategy: Required value: only one of weightPriority and orderPriority can be used".into()),
            ("11 scatter", with(|v| v["spec"]["updateStrategy"]["scatterStrategy"] = json!([{"key": "zone", "value": "a"}])), String::new()),
            ("11 scatter duplicate", with(|v| v["spec"]["updateStrategy"]["scatterStrategy"] =
                json!([{"key": "zone", "value": "a"}, {"key": "zone", "value": "a"}])),
             "spec.updateStrategy.scatterStrategy: Required value: duplicated key=zone value=a".into()),
            // 12. maxUnavailable
            ("12 int", with(|v| v["spec"]["updateStrategy"]["maxUnavailable"] = json!(2)), String::new()),
            ("12 float percent", with(|v| v["spec"]["updateStrategy"]["maxUnavailable"] = json!("12.5%")), String::new()),
            ("12 numeric string (then counts as 0, so rule 14 fires too, as in kruise)",
             with(|v| v["spec"]["updateStrategy"]["maxUnavailable"] = json!("5")),
             "[spec.updateStrategy.maxUnavailable: Invalid value: \"5\": failed GetScaledValueFromIntOrPercent for \
              maxUnavailable: invalid type: string is not a percentage, spec.updateStrategy.maxUnavailable: Invalid \
              value: \"5\": maxUnavailable and maxSurge should not both be less than 1]".into()),
            // 13. maxSurge
            ("13 surge with InPlaceIfPossible", with(|v| {
                v["spec"]["updateStrategy"]["type"] = json!("InPlaceIfPossible");
                v["spec"]["updateStrategy"]["maxSurge"] = json!("50%");
            }), String::new()),
            ("13 numeric string", with(|v| v["spec"]["updateStrategy"]["maxSurge"] = json!("5")),
             "spec.updateStrategy.maxSurge: Invalid value: \"5\": failed GetScaledValueFromIntOrPercent for maxSurge: \
              invalid type: string is not a percentage".into()),
            ("13 surge with InPlaceOnly", with(|v| {
                v["spec"]["updateStrategy"]["type"] = json!("InPlaceOnly");
                v["spec"]["updateStrategy"]["maxSurge"] = json!(1);
            }), "spec.updateStrategy.maxSurge: Invalid value: \"1\": can not use maxSurge with strategy type InPlaceOnly".into()),
            // 14. maxUnavailable and maxSurge not both < 1
            ("14 both zero", with(|v| v["spec"]["updateStrategy"]["maxUnavailable"] = json!(0)),
             "spec.updateStrategy.maxUnavailable: Invalid value: 0: maxUnavailable and maxSurge should not both be less than 1".into()),
            ("14 both zero without replicas", with(|v| {
                v["spec"]["replicas"] = json!(0);
                v["spec"]["updateStrategy"]["maxUnavailable"] = json!(0);
            }), String::new()),
            ("14 negative maxUnavailable with surge", with(|v| {
                v["spec"]["updateStrategy"]["maxUnavailable"] = json!(-1);
                v["spec"]["updateStrategy"]["maxSurge"] = json!(1);
            }), String::new()),
            // 15. progressDeadlineSeconds
            ("15 above minReadySeconds", with(|v| {
                v["spec"]["minReadySeconds"] = json!(10);
                v["spec"]["progressDeadlineSeconds"] = json!(600);
            }), String::new()),
            ("15 MaxInt32", with(|v| {
                v["spec"]["minReadySeconds"] = json!(i32::MAX);
                v["spec"]["progressDeadlineSeconds"] = json!(i32::MAX);
            }), String::new()),
            ("15 not above minReadySeconds", with(|v| {
                v["spec"]["minReadySeconds"] = json!(10);
                v["spec"]["progressDeadlineSeconds"] = json!(10);
            }), "spec.progressDeadlineSeconds: Invalid value: 10: must be greater than minReadySeconds".into()),
            ("15 negative", with(|v| v["spec"]["progressDeadlineSeconds"] = json!(-1)),
             "[spec.progressDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0, \
              spec.progressDeadlineSeconds: Invalid value: -1: must be greater than minReadySeconds]".into()),
            // 16. not validated: scaleStrategy.maxUnavailable, lifecycle, revisionHistoryLimit, minReadySeconds
            ("16 unvalidated fields", with(|v| {
                v["spec"]["scaleStrategy"] = json!({"maxUnavailable": "junk"});
                v["spec"]["revisionHistoryLimit"] = json!(-5);
                v["spec"]["minReadySeconds"] = json!(-5);
            }), String::new()),
        ];
        for (name, v, want) in cases {
            assert_eq!(create(v), want, "{name}");
        }
    }

    /// The UPDATE rules of spec §2.1 (items 18–21).
    #[test]
    fn update_rules() {
        let in_place_only = |edit: fn(&mut Value)| {
            with(|v| {
                v["spec"]["updateStrategy"]["type"] = json!("InPlaceOnly");
                v["spec"]["updateStrategy"]["inPlaceUpdateStrategy"] = json!({});
                edit(v);
            })
        };
        let guard = |op: &str| {
            format!(
                "spec.template.spec: Forbidden: only allowed to update images in spec for InPlaceOnly, but found \
                     {op}; set spec.updateStrategy.type to InPlaceIfPossible to let pods be recreated for this change"
            )
        };
        #[rustfmt::skip]
        let cases: Vec<(&str, Value, Value, String)> = vec![
            ("no change", base(), base(), String::new()),
            // 18. metadata
            ("18 new label", base(), with(|v| v["metadata"]["labels"] = json!({"a": "b"})), String::new()),
            ("18 uid changed", base(), with(|v| v["metadata"]["uid"] = json!("other")),
             "metadata.uid: Invalid value: \"other\": field is immutable".into()),
            // 19. immutable spec
            ("19 mutable fields", base(), with(|v| {
                v["spec"]["replicas"] = json!(5);
                v["spec"]["minReadySeconds"] = json!(5);
                v["spec"]["revisionHistoryLimit"] = json!(3);
                v["spec"]["lifecycle"] = json!({"preDelete": {"finalizersHandler": ["x/y"]}});
                v["spec"]["volumeClaimTemplates"] = json!([{"metadata": {"name": "data"}}]);
                v["spec"]["progressDeadlineSeconds"] = json!(600);
                v["spec"]["updateStrategy"]["paused"] = json!(true);
                v["spec"]["scaleStrategy"] = json!({"disablePVCReuse": true});
            }), String::new()),
            ("19 selector is immutable", base(), with(|v| {
                v["spec"]["selector"] = json!({"matchLabels": {"app": "web", "tier": "a"}});
                v["spec"]["template"]["metadata"]["labels"]["tier"] = json!("a");
            }), format!("spec: Forbidden: {IMMUTABLE_MSG}")),
            ("19 equivalent selector spelling", base(), with(|v| v["spec"]["selector"]["matchExpressions"] = json!([])), String::new()),
            // 20. InPlaceOnly guard
            ("20 image under InPlaceOnly", in_place_only(|_| {}),
             in_place_only(|v| v["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.26")), String::new()),
            ("20 label under InPlaceOnly", in_place_only(|_| {}),
             in_place_only(|v| v["spec"]["template"]["metadata"]["labels"]["rev"] = json!("2")), String::new()),
            ("20 env under InPlaceOnly", in_place_only(|_| {}),
             in_place_only(|v| v["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = json!("dev")),
             guard("replace /containers/0/env/0/value")),
            ("20 switching to InPlaceOnly with an env change", base(),
             in_place_only(|v| v["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = json!("dev")),
             guard("replace /containers/0/env/0/value")),
            ("20 env under InPlaceIfPossible", base(), with(|v| {
                v["spec"]["updateStrategy"]["type"] = json!("InPlaceIfPossible");
                v["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = json!("dev");
            }), String::new()),
            ("20 merge patch dropped defaults", in_place_only(|_| {}), in_place_only(|v| {
                let c = &mut v["spec"]["template"]["spec"]["containers"][0];
                c.as_object_mut().unwrap().retain(|k, _| ["name", "image", "env"].contains(&k.as_str()));
                c["image"] = json!("nginx:1.26");
            }), String::new()),
            // 21. podsToDelete against the old list
            ("21 already listed names are not looked up again",
             with(|v| v["spec"]["scaleStrategy"] = json!({"podsToDelete": ["gone"]})),
             with(|v| v["spec"]["scaleStrategy"] = json!({"podsToDelete": ["gone", "mine"]})), String::new()),
            ("21 newly listed missing pod", base(),
             with(|v| v["spec"]["scaleStrategy"] = json!({"podsToDelete": ["gone"]})),
             "spec.scaleStrategy.podsToDelete: Invalid value: \"gone\": find pod gone failed: pods \"gone\" not found".into()),
            ("21 new object rules run too", base(), with(|v| v["spec"]["replicas"] = json!(-1)),
             "spec.replicas: Invalid value: -1: must be greater than or equal to 0".into()),
        ];
        for (name, old, new, want) in cases {
            assert_eq!(update(old, new), want, "{name}");
        }
    }

    /// kruise's comparison: every mutable field copied from the old spec, then the whole specs.
    fn frozen_differs(new: &CloneSetSpec, old: &CloneSetSpec) -> bool {
        let mut frozen = new.clone();
        frozen.replicas = old.replicas;
        frozen.template = old.template.clone();
        frozen.scale_strategy = old.scale_strategy.clone();
        frozen.update_strategy = old.update_strategy.clone();
        frozen.min_ready_seconds = old.min_ready_seconds;
        frozen.lifecycle = old.lifecycle.clone();
        frozen.revision_history_limit = old.revision_history_limit;
        frozen.volume_claim_templates = old.volume_claim_templates.clone();
        frozen.progress_deadline_seconds = old.progress_deadline_seconds;
        !semantic_eq(&json(&frozen), &json(old))
    }

    #[test]
    fn immutable_part_answers_as_the_whole_frozen_spec() {
        let selectors = [
            Value::Null,
            json!({}),
            json!({"matchLabels": {}}),
            json!({"matchLabels": {"app": "web"}}),
            json!({"matchLabels": {"app": "web"}, "matchExpressions": []}),
            json!({"matchLabels": {"app": "other"}}),
            json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]}),
        ];
        let mut differing = 0;
        for (i, a) in selectors.iter().enumerate() {
            for (j, b) in selectors.iter().enumerate() {
                let old = cs(with(|v| v["spec"]["selector"] = a.clone()));
                let new = cs(with(|v| {
                    v["spec"]["selector"] = b.clone();
                    v["spec"]["replicas"] = json!(7);
                    v["spec"]["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.26");
                    v["spec"]["updateStrategy"]["paused"] = json!(true);
                }));
                let want = frozen_differs(&new.spec, &old.spec);
                let got = !semantic_eq(&immutable_part(&new.spec), &immutable_part(&old.spec));
                assert_eq!(got, want, "selector {i} -> {j}");
                differing += usize::from(got);
            }
        }
        assert!(differing > 10, "the table has changes of the selector ({differing})");
    }

    #[test]
    fn pods_to_look_up_only_new_names() {
        let new = cs(with(|v| v["spec"]["scaleStrategy"] = json!({"podsToDelete": ["b", "a", "c"]})));
        let old = cs(with(|v| v["spec"]["scaleStrategy"] = json!({"podsToDelete": ["c"]})));
        assert_eq!(
            pods_to_look_up(&new.spec.scale_strategy.pods_to_delete, Some(&old.spec.scale_strategy.pods_to_delete)),
            vec!["a", "b"]
        );
        assert_eq!(pods_to_look_up(&new.spec.scale_strategy.pods_to_delete, None), vec!["a", "b", "c"]);
        let dup = cs(with(|v| v["spec"]["scaleStrategy"] = json!({"podsToDelete": ["a", "a"]})));
        assert!(pods_to_look_up(&dup.spec.scale_strategy.pods_to_delete, None).is_empty());
    }
}
