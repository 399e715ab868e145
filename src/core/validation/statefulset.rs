//! Advanced StatefulSet validation (spec §2.2, kruise
//! `pkg/webhook/statefulset/validating/statefulset_validation.go`) on the v1beta1 shape (v1alpha1
//! objects are converted first, `core::conversion`): the CREATE rules (items 1–15) and the UPDATE
//! rules (16 metadata, 17 immutable spec, 18 volumeClaimTemplates under OnPodRollingUpdate, 19 the
//! InPlaceOnly guard of [`super::template_update`]).
//!
//! The **maxUnavailable rule** (item 9, for `rollingUpdate.maxUnavailable` and
//! `scaleStrategy.maxUnavailable`): a positive int or percent, at least 1 once scaled over one
//! replica, and anything other than the INTEGER 1 needs `podManagementPolicy: Parallel` (so "100%"
//! or 2 with OrderedReady are refused; upstream Kubernetes 1.35 lifts this, kruise does not yet,
//! spec §10.10).
//!
//! Decisions: the pod spec itself is not validated (upstream StatefulSet template validation skips
//! it, item 14); nil `partition`/`minReadySeconds` (only without the mutating webhook; kruise
//! would dereference nil) are not errors, a nil `replicas` is Required; the StorageClass check of
//! item 18 is not made, because the cluster view holds no StorageClasses — a storage change is
//! accepted as kruise does when no default StorageClass exists; the guard (item 19) is the
//! anchored one and reports in the field-error format like every other rule (§11.1, §11.2); and
//! all UPDATE errors are reported together, where kruise answered the volumeClaimTemplate and
//! guard problems only once everything else was valid.

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use super::json;
use super::meta::{validate_object_meta, validate_object_meta_update};
use super::podtemplate::validate_workload_selector;
use super::template_update::{UpdateTemplates, normalized_template};
use super::update_order::priority_problem;
use crate::apis::keys::IN_PLACE_UPDATE_READY;
use crate::apis::statefulset::v1beta1::{StatefulSet, StatefulSetSpec};
use crate::apis::statefulset::{
    DELETE, IN_PLACE_IF_POSSIBLE, IN_PLACE_ONLY, MAX_MIN_READY_SECONDS, ON_DELETE, ORDERED_READY, PARALLEL, RECREATE,
    RETAIN, ROLLING_UPDATE,
};
use crate::compat::field::FieldError;
use crate::compat::intstr::{
    go_atoi, k8s_value_from_int_or_percent, to_value, validate_nonnegative, validate_positive_int_or_percent,
};
use crate::compat::normalize::semantic_eq;
use crate::compat::podspec::validate_template_metadata;
use crate::compat::quantity::Quantity;
use crate::core::features::{FeatureGates, Gate};

/// The field that selects InPlaceOnly, named in the guard's message.
pub const STRATEGY_FIELD: &str = "spec.updateStrategy.rollingUpdate.podUpdatePolicy";

const IMMUTABLE_MSG: &str = "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', \
     'reserveOrdinals', 'lifecycle', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy', \
     `volumeClaimTemplates`, `VolumeClaimUpdateStrategy` and 'updateStrategy' are forbidden";

const ROLLING: &str = "spec.updateStrategy.rollingUpdate";

/// CREATE: items 1–15.
pub fn validate_create(sts: &StatefulSet, gates: &FeatureGates) -> Vec<FieldError> {
    validate_object(sts, &normalized_template(&sts.spec.template, gates))
}

/// Items 1–15 of `sts`, whose template normalised is `normalized`.
fn validate_object(sts: &StatefulSet, normalized: &PodTemplateSpec) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&sts.metadata, true, "metadata");
    errs.extend(validate_spec(&sts.spec, normalized));
    errs
}

/// UPDATE: the CREATE rules on the new object, then items 16–19.
pub fn validate_update(new: &StatefulSet, old: &StatefulSet, gates: &FeatureGates) -> Vec<FieldError> {
    validate_update_with(new, old, &UpdateTemplates::new(&old.spec.template, &new.spec.template, gates), gates)
}

/// [`validate_update`] with the templates of `new` and `old` as `templates` normalises them
/// (the handler shares them with the InPlaceIfPossible warning).
pub fn validate_update_with(
    new: &StatefulSet,
    old: &StatefulSet,
    templates: &UpdateTemplates<'_>,
    gates: &FeatureGates,
) -> Vec<FieldError> {
    let mut errs = validate_object(new, templates.new_normalized());
    errs.extend(validate_object_meta_update(&new.metadata, &old.metadata, "metadata"));
    if !semantic_eq(&immutable_part(&new.spec), &immutable_part(&old.spec)) {
        errs.push(FieldError::forbidden("spec", IMMUTABLE_MSG));
    }
    if gates.enabled(Gate::StatefulSetAutoResizePVCGate) {
        errs.extend(validate_claim_templates_update(&new.spec, &old.spec));
    }
    let policy = new.spec.update_strategy.rolling_update.as_ref().map(|r| r.pod_update_policy.as_str());
    if policy == Some(IN_PLACE_ONLY) {
        errs.extend(templates.in_place_only_violation(STRATEGY_FIELD));
    }
    errs
}

/// The spec fields an UPDATE may not change. kruise copies every other field from the old spec
/// into the new one and compares the whole specs semantically; comparing what is left is the
/// same answer without serialising two templates (empty strings are left out as the spec's
/// serialisation leaves them out). Destructured, so that a field added to the spec must be
/// placed on one side or the other.
fn immutable_part(spec: &StatefulSetSpec) -> Value {
    let StatefulSetSpec {
        selector,
        service_name,
        pod_management_policy,
        replicas: _,
        template: _,
        volume_claim_templates: _,
        volume_claim_update_strategy: _,
        update_strategy: _,
        revision_history_limit: _,
        reserve_ordinals: _,
        lifecycle: _,
        scale_strategy: _,
        persistent_volume_claim_retention_policy: _,
        ordinals: _,
    } = spec;
    let text = |s: &String| if s.is_empty() { Value::Null } else { Value::String(s.clone()) };
    serde_json::json!({
        "selector": json(selector),
        "serviceName": text(service_name),
        "podManagementPolicy": text(pod_management_policy),
    })
}

fn validate_spec(spec: &StatefulSetSpec, normalized: &PodTemplateSpec) -> Vec<FieldError> {
    let mut errs = Vec::new();
    // 2. podManagementPolicy
    match spec.pod_management_policy.as_str() {
        "" => errs.push(FieldError::required("spec.podManagementPolicy", "")),
        ORDERED_READY | PARALLEL => {}
        other => errs.push(FieldError::invalid(
            "spec.podManagementPolicy",
            other,
            format!("must be '{ORDERED_READY}' or '{PARALLEL}'"),
        )),
    }
    // 3. reserveOrdinals
    errs.extend(validate_reserve_ordinals(&spec.reserve_ordinals));
    // 4. scaleStrategy.maxUnavailable
    if let Some(mu) = spec.scale_strategy.as_ref().and_then(|s| s.max_unavailable.as_ref()) {
        errs.extend(max_unavailable_rule(mu, &spec.pod_management_policy, "spec.scaleStrategy.maxUnavailable"));
    }
    // 5–11. updateStrategy
    errs.extend(validate_update_strategy(spec));
    // 12. PVC retention policy
    if let Some(policy) = &spec.persistent_volume_claim_retention_policy {
        let path = "spec.persistentVolumeClaimRetentionPolicy";
        for (field, value) in [("whenDeleted", &policy.when_deleted), ("whenScaled", &policy.when_scaled)] {
            if value != RETAIN && value != DELETE {
                errs.push(FieldError::not_supported(&format!("{path}.{field}"), value.as_str(), &[RETAIN, DELETE]));
            }
        }
    }
    // 13. replicas
    match spec.replicas {
        Some(r) => errs.extend(validate_nonnegative(i64::from(r), "spec.replicas")),
        None => errs.push(FieldError::required("spec.replicas", "")),
    }
    // 14. selector and template metadata (not the pod spec)
    errs.extend(validate_selector_and_template(spec));
    // 15. restartPolicy and activeDeadlineSeconds of the (defaulted) template
    let no_spec = PodSpec::default();
    let pod_spec = normalized.spec.as_ref().unwrap_or(&no_spec);
    if let Some(policy) = pod_spec.restart_policy.as_deref().filter(|p| !p.is_empty() && *p != "Always") {
        errs.push(FieldError::not_supported("spec.template.spec.restartPolicy", policy, &["Always"]));
    }
    if pod_spec.active_deadline_seconds.is_some() {
        errs.push(FieldError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in StatefulSet is not Supported",
        ));
    }
    errs
}

/// Item 3: strings must be `^\d+-\d+$` ranges with start ≤ end (a JSON string "3" is a string,
/// hence invalid), ints ≥ 0. Errors sit on the root `spec` path with the whole list as value.
fn validate_reserve_ordinals(ordinals: &[IntOrString]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let value = json(&ordinals);
    for (i, item) in ordinals.iter().enumerate() {
        match item {
            IntOrString::String(s) => {
                let shaped = s.split_once('-').is_some_and(|(a, b)| {
                    [a, b].iter().all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()))
                });
                if !shaped {
                    errs.push(FieldError::invalid(
                        "spec",
                        value.clone(),
                        format!("{i} th reserve ordinal is not a valid range: {s}"),
                    ));
                }
                if let Err(e) = parse_range(s) {
                    errs.push(FieldError::invalid(
                        "spec",
                        value.clone(),
                        format!("{i} th reserve ordinal is invalid: {s}, err = {e}"),
                    ));
                }
            }
            IntOrString::Int(n) if *n < 0 => {
                errs.push(FieldError::invalid(
                    "spec",
                    value.clone(),
                    format!("{i} th reserve ordinal is negative: {n}"),
                ));
            }
            IntOrString::Int(_) => {}
        }
    }
    errs
}

/// kruise `apiutil.ParseRange`.
fn parse_range(s: &str) -> Result<(i64, i64), String> {
    let parts: Vec<&str> = s.split('-').collect();
    let [a, b] = parts.as_slice() else { return Err(format!("invalid range {s}")) };
    let (start, end) = (go_atoi(a)?, go_atoi(b)?);
    if start > end {
        return Err(format!("invalid range {s}"));
    }
    Ok((start, end))
}

/// Item 9.
pub fn max_unavailable_rule(mu: &IntOrString, pod_management_policy: &str, path: &str) -> Vec<FieldError> {
    let mut errs = validate_positive_int_or_percent(mu, path);
    match k8s_value_from_int_or_percent(Some(mu), 1, true) {
        Err(e) => errs.push(FieldError::invalid(path, 0, format!("getValueFromIntOrPercent error: {e}"))),
        Ok(v) if v < 1 => errs.push(FieldError::invalid(path, v, "should not be less than 1")),
        Ok(_) => {}
    }
    if pod_management_policy != PARALLEL && *mu != IntOrString::Int(1) {
        errs.push(FieldError::invalid(path, to_value(Some(mu)), "can only work with Parallel PodManagementPolicyType"));
    }
    errs
}

/// Items 5–11.
fn validate_update_strategy(spec: &StatefulSetSpec) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let strategy = &spec.update_strategy;
    match strategy.type_.as_str() {
        "" => errs.push(FieldError::required("spec.updateStrategy", "")),
        ON_DELETE => {
            if let Some(r) = &strategy.rolling_update {
                errs.push(FieldError::invalid(
                    ROLLING,
                    json(r),
                    format!("only allowed for updateStrategy '{ROLLING_UPDATE}'"),
                ));
            }
        }
        ROLLING_UPDATE => {
            let Some(rolling) = &strategy.rolling_update else { return errs };
            if let Some(p) = rolling.partition {
                errs.extend(validate_nonnegative(i64::from(p), &format!("{ROLLING}.partition")));
            }
            if let Some(m) = rolling.min_ready_seconds {
                let path = format!("{ROLLING}.minReadySeconds");
                errs.extend(validate_nonnegative(i64::from(m), &path));
                if m > MAX_MIN_READY_SECONDS {
                    errs.push(FieldError::invalid(&path, m, "must be no more than 300 seconds"));
                }
            }
            let mu_path = format!("{ROLLING}.maxUnavailable");
            match &rolling.max_unavailable {
                None => errs.push(FieldError::required(&mu_path, "")),
                Some(mu) => errs.extend(max_unavailable_rule(mu, &spec.pod_management_policy, &mu_path)),
            }
            errs.extend(validate_pod_update_policy(spec, &rolling.pod_update_policy));
            if let Some(unordered) = &rolling.unordered_update {
                let path = format!("{ROLLING}.unorderedUpdate");
                if spec.pod_management_policy != PARALLEL {
                    errs.push(FieldError::required(
                        &path,
                        "unorderedUpdate can only work with Parallel PodManagementPolicyType",
                    ));
                }
                if let Some(problem) = priority_problem(unordered.priority_strategy.as_ref()) {
                    errs.push(FieldError::required(&format!("{path}.priorityStrategy"), problem));
                }
            }
        }
        _ => errs.push(FieldError::invalid(
            "spec.updateStrategy",
            json(strategy),
            format!("must be '{ROLLING_UPDATE}' or '{ON_DELETE}'"),
        )),
    }
    errs
}

/// Item 10: in-place policies need the `InPlaceUpdateReady` readiness gate in the template.
fn validate_pod_update_policy(spec: &StatefulSetSpec, policy: &str) -> Vec<FieldError> {
    let path = format!("{ROLLING}.podUpdatePolicy");
    match policy {
        "" => vec![FieldError::required(&path, "")],
        RECREATE => Vec::new(),
        IN_PLACE_IF_POSSIBLE | IN_PLACE_ONLY => {
            let gates = spec.template.spec.as_ref().and_then(|s| s.readiness_gates.as_ref());
            if gates.is_some_and(|g| g.iter().any(|r| r.condition_type == IN_PLACE_UPDATE_READY)) {
                Vec::new()
            } else {
                vec![FieldError::invalid(
                    "spec.template.spec.readinessGates",
                    gates.map_or(Value::Null, json),
                    format!("must contains {IN_PLACE_UPDATE_READY} when podUpdatePolicy is {policy}"),
                )]
            }
        }
        other => vec![FieldError::invalid(
            &path,
            other,
            format!("must be '{RECREATE}', {IN_PLACE_IF_POSSIBLE} or '{IN_PLACE_ONLY}'"),
        )],
    }
}

/// Item 14 (`ValidatePodTemplateSpecForStatefulSet`).
fn validate_selector_and_template(spec: &StatefulSetSpec) -> Vec<FieldError> {
    let (mut errs, converted) = validate_workload_selector(spec.selector.as_ref(), &spec.template, "statefulset");
    if converted {
        errs.extend(validate_template_metadata(&spec.template, "spec.template"));
    }
    errs
}

/// Item 18, only when `volumeClaimUpdateStrategy.type` is neither empty nor OnDelete: the
/// templates may only be resized. Like kruise, the first problem is the only one reported.
fn validate_claim_templates_update(new: &StatefulSetSpec, old: &StatefulSetSpec) -> Vec<FieldError> {
    let kind = new.volume_claim_update_strategy.type_.as_str();
    if kind.is_empty() || kind == ON_DELETE {
        return Vec::new();
    }
    if new.volume_claim_templates.len() != old.volume_claim_templates.len() {
        return vec![FieldError::invalid(
            "spec.volumeClaimTemplates",
            json(&new.volume_claim_templates),
            "volumeClaimTemplate can not be added or deleted when OnRollingUpdate",
        )];
    }
    for template in &new.volume_claim_templates {
        let name = template.metadata.name.clone().unwrap_or_default();
        let path = format!("spec.volumeClaimTemplates[{name}]");
        let Some(before) = old.volume_claim_templates.iter().find(|o| o.metadata.name.as_deref().unwrap_or("") == name)
        else {
            return vec![FieldError::forbidden(
                &format!("{path}.name"),
                "volumeClaimTemplate name can not be modified",
            )];
        };
        if !compatible_without_size(before, template) {
            return vec![FieldError::invalid(
                &path,
                json(template),
                "volumeClaimTemplate can not be modified when OnRollingUpdate",
            )];
        }
        // A resize: kruise would now check that the StorageClass allows expansion (not held here).
    }
    Vec::new()
}

/// kruise `IsClaimCompatibleWithoutSize`: same storage class (when both set) and access modes.
fn compatible_without_size(old: &PersistentVolumeClaim, new: &PersistentVolumeClaim) -> bool {
    let (o, n) = (old.spec.clone().unwrap_or_default(), new.spec.clone().unwrap_or_default());
    if let (Some(a), Some(b)) = (&o.storage_class_name, &n.storage_class_name)
        && a != b
    {
        return false;
    }
    o.access_modes.unwrap_or_default() == n.access_modes.unwrap_or_default()
}

/// Whether the storage request or limit differs (kruise `isPVCResize`), quantities compared by
/// value.
pub fn storage_changed(old: &PersistentVolumeClaim, new: &PersistentVolumeClaim) -> bool {
    let storage = |pvc: &PersistentVolumeClaim, limits: bool| -> Option<String> {
        let resources = pvc.spec.as_ref()?.resources.as_ref()?;
        let list = if limits { resources.limits.as_ref() } else { resources.requests.as_ref() };
        list?.get("storage").map(|q| q.0.clone())
    };
    [false, true].into_iter().any(|limits| {
        let (a, b) = (storage(old, limits), storage(new, limits));
        let parse = |s: &Option<String>| Quantity::parse(s.as_deref().unwrap_or("0")).ok();
        match (parse(&a), parse(&b)) {
            (Some(x), Some(y)) => x != y,
            _ => a != b,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::field::aggregate;
    use serde_json::json;

    /// An Advanced StatefulSet as the validating webhook sees it: defaulted.
    fn base() -> Value {
        json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "ns", "uid": "sts-uid"},
            "spec": {
                "replicas": 3, "revisionHistoryLimit": 10, "serviceName": "db",
                "podManagementPolicy": "OrderedReady",
                "selector": {"matchLabels": {"app": "db"}},
                "template": {
                    "metadata": {"labels": {"app": "db"}},
                    "spec": {"containers": [{"name": "main", "image": "mysql:8", "imagePullPolicy": "Always",
                                             "env": [{"name": "MODE", "value": "prod"}]}],
                             "readinessGates": [{"conditionType": "InPlaceUpdateReady"}],
                             "restartPolicy": "Always", "dnsPolicy": "ClusterFirst"}
                },
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                    "partition": 0, "maxUnavailable": 1, "podUpdatePolicy": "ReCreate", "minReadySeconds": 0}},
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"}
            }
        })
    }

    fn with(edit: impl FnOnce(&mut Value)) -> Value {
        let mut v = base();
        edit(&mut v);
        v
    }

    fn sts(v: Value) -> StatefulSet {
        serde_json::from_value(v).unwrap()
    }

    fn create(v: Value) -> String {
        aggregate(&validate_create(&sts(v), &FeatureGates::default()))
    }

    fn rolling(edit: impl FnOnce(&mut Value)) -> Value {
        with(|v| edit(&mut v["spec"]["updateStrategy"]["rollingUpdate"]))
    }

    fn parallel(edit: impl FnOnce(&mut Value)) -> Value {
        with(|v| {
            v["spec"]["podManagementPolicy"] = json!("Parallel");
            edit(v);
        })
    }

    const PARALLEL_ONLY: &str = "can only work with Parallel PodManagementPolicyType";
    const PCT: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or \
                       '93%', regex used for validation is '[0-9]+%')";

    /// Every CREATE rule of spec §2.2 (items 1–15), each allowed and denied.
    #[test]
    fn create_rules() {
        let mu = format!("{ROLLING}.maxUnavailable");
        #[rustfmt::skip]
        let cases: Vec<(&str, Value, String)> = vec![
            ("valid", base(), String::new()),
            // 1. metadata
            ("1 no namespace", with(|v| { v["metadata"].as_object_mut().unwrap().remove("namespace"); }),
             "metadata.namespace: Required value".into()),
            // 2. podManagementPolicy
            ("2 Parallel", parallel(|_| {}), String::new()),
            ("2 empty", with(|v| v["spec"]["podManagementPolicy"] = json!("")), "spec.podManagementPolicy: Required value".into()),
            ("2 unknown", with(|v| v["spec"]["podManagementPolicy"] = json!("foo")),
             "spec.podManagementPolicy: Invalid value: \"foo\": must be 'OrderedReady' or 'Parallel'".into()),
            // 3. reserveOrdinals
            ("3 ints and ranges", with(|v| v["spec"]["reserveOrdinals"] = json!([1, "3-5", 7])), String::new()),
            ("3 negative", with(|v| v["spec"]["reserveOrdinals"] = json!([-1])),
             "spec: Invalid value: [-1]: 0 th reserve ordinal is negative: -1".into()),
            ("3 string number", with(|v| v["spec"]["reserveOrdinals"] = json!(["3"])),
             "[spec: Invalid value: [\"3\"]: 0 th reserve ordinal is not a valid range: 3, \
              spec: Invalid value: [\"3\"]: 0 th reserve ordinal is invalid: 3, err = invalid range 3]".into()),
            ("3 reversed range", with(|v| v["spec"]["reserveOrdinals"] = json!([1, "5-3"])),
             "spec: Invalid value: [1,\"5-3\"]: 1 th reserve ordinal is invalid: 5-3, err = invalid range 5-3".into()),
            // 4. scaleStrategy.maxUnavailable
            ("4 one with OrderedReady", with(|v| v["spec"]["scaleStrategy"] = json!({"maxUnavailable": 1})), String::new()),
            ("4 percent with Parallel", parallel(|v| v["spec"]["scaleStrategy"] = json!({"maxUnavailable": "50%"})), String::new()),
            ("4 two with OrderedReady", with(|v| v["spec"]["scaleStrategy"] = json!({"maxUnavailable": 2})),
             format!("spec.scaleStrategy.maxUnavailable: Invalid value: 2: {PARALLEL_ONLY}")),
            // 5. updateStrategy.type
            ("5 OnDelete", with(|v| v["spec"]["updateStrategy"] = json!({"type": "OnDelete"})), String::new()),
            ("5 empty", with(|v| v["spec"]["updateStrategy"] = json!({})), "spec.updateStrategy: Required value".into()),
            ("5 OnDelete with rollingUpdate", with(|v| v["spec"]["updateStrategy"]["type"] = json!("OnDelete")),
             "spec.updateStrategy.rollingUpdate: Invalid value: {\"maxUnavailable\":1,\"minReadySeconds\":0,\"partition\":0,\
              \"podUpdatePolicy\":\"ReCreate\"}: only allowed for updateStrategy 'RollingUpdate'".into()),
            ("5 unknown", with(|v| v["spec"]["updateStrategy"] = json!({"type": "Bogus"})),
             "spec.updateStrategy: Invalid value: {\"type\":\"Bogus\"}: must be 'RollingUpdate' or 'OnDelete'".into()),
            // 6. partition
            ("6 partition above replicas", rolling(|r| r["partition"] = json!(10)), String::new()),
            ("6 negative partition", rolling(|r| r["partition"] = json!(-1)),
             format!("{ROLLING}.partition: Invalid value: -1: must be greater than or equal to 0")),
            // 7. minReadySeconds
            ("7 300", rolling(|r| r["minReadySeconds"] = json!(300)), String::new()),
            ("7 301", rolling(|r| r["minReadySeconds"] = json!(301)),
             format!("{ROLLING}.minReadySeconds: Invalid value: 301: must be no more than 300 seconds")),
            ("7 negative", rolling(|r| r["minReadySeconds"] = json!(-1)),
             format!("{ROLLING}.minReadySeconds: Invalid value: -1: must be greater than or equal to 0")),
            // 8. maxUnavailable required
            ("8 missing", rolling(|r| { r.as_object_mut().unwrap().remove("maxUnavailable"); }), format!("{mu}: Required value")),
            // 9. the maxUnavailable rule
            ("9 int 1 with OrderedReady", base(), String::new()),
            ("9 int 3 with Parallel", parallel(|v| v["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = json!(3)), String::new()),
            ("9 percent with Parallel", parallel(|v| v["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = json!("30%")), String::new()),
            ("9 int 2 with OrderedReady", rolling(|r| r["maxUnavailable"] = json!(2)), format!("{mu}: Invalid value: 2: {PARALLEL_ONLY}")),
            ("9 100% with OrderedReady", rolling(|r| r["maxUnavailable"] = json!("100%")),
             format!("{mu}: Invalid value: \"100%\": {PARALLEL_ONLY}")),
            ("9 zero", parallel(|v| v["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = json!(0)),
             format!("{mu}: Invalid value: 0: should not be less than 1")),
            ("9 zero percent", parallel(|v| v["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = json!("0%")),
             format!("{mu}: Invalid value: 0: should not be less than 1")),
            ("9 negative", parallel(|v| v["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = json!(-1)),
             format!("[{mu}: Invalid value: -1: must be greater than or equal to 0, {mu}: Invalid value: -1: should not be less than 1]")),
            ("9 not a percent", parallel(|v| v["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = json!("abc")),
             format!("[{mu}: Invalid value: \"abc\": {PCT}, {mu}: Invalid value: 0: getValueFromIntOrPercent error: invalid \
                      value for IntOrString: invalid value \"abc\": strconv.Atoi: parsing \"abc\": invalid syntax]")),
            ("9 numeric string", parallel(|v| v["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = json!("2")),
             format!("{mu}: Invalid value: \"2\": {PCT}")),
            // 10. podUpdatePolicy
            ("10 in place with the readiness gate", rolling(|r| r["podUpdatePolicy"] = json!("InPlaceIfPossible")), String::new()),
            ("10 empty", rolling(|r| r["podUpdatePolicy"] = json!("")), format!("{ROLLING}.podUpdatePolicy: Required value")),
            ("10 in place without the readiness gate", with(|v| {
                v["spec"]["updateStrategy"]["rollingUpdate"]["podUpdatePolicy"] = json!("InPlaceOnly");
                v["spec"]["template"]["spec"]["readinessGates"] = json!([{"conditionType": "Other"}]);
            }), "spec.template.spec.readinessGates: Invalid value: [{\"conditionType\":\"Other\"}]: must contains \
                 InPlaceUpdateReady when podUpdatePolicy is InPlaceOnly".into()),
            ("10 unknown", rolling(|r| r["podUpdatePolicy"] = json!("Rolling")),
             format!("{ROLLING}.podUpdatePolicy: Invalid value: \"Rolling\": must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'")),
            // 11. unorderedUpdate
            ("11 with Parallel", parallel(|v| v["spec"]["updateStrategy"]["rollingUpdate"]["unorderedUpdate"] =
                json!({"priorityStrategy": {"orderPriority": [{"orderedKey": "k"}]}})), String::new()),
            ("11 with OrderedReady", rolling(|r| r["unorderedUpdate"] = json!({})),
             format!("{ROLLING}.unorderedUpdate: Required value: unorderedUpdate can only work with Parallel PodManagementPolicyType")),
            ("11 bad priority", parallel(|v| v["spec"]["updateStrategy"]["rollingUpdate"]["unorderedUpdate"] =
                json!({"priorityStrategy": {"orderPriority": [{"orderedKey": ""}]}})),
             format!("{ROLLING}.unorderedUpdate.priorityStrategy: Required value: order key can not be empty")),
            // 12. PVC retention policy
            ("12 Delete", with(|v| v["spec"]["persistentVolumeClaimRetentionPolicy"]["whenScaled"] = json!("Delete")), String::new()),
            ("12 not defaulted", with(|v| v["spec"]["persistentVolumeClaimRetentionPolicy"] = json!({"whenDeleted": "Delete"})),
             "spec.persistentVolumeClaimRetentionPolicy.whenScaled: Unsupported value: \"\": supported values: \"Retain\", \"Delete\"".into()),
            // 13. replicas
            ("13 zero", with(|v| v["spec"]["replicas"] = json!(0)), String::new()),
            ("13 negative", with(|v| v["spec"]["replicas"] = json!(-2)),
             "spec.replicas: Invalid value: -2: must be greater than or equal to 0".into()),
            // 14. selector and template metadata; the pod spec is not validated
            ("14 no containers is accepted", with(|v| v["spec"]["template"]["spec"]["containers"] = json!([])), String::new()),
            ("14 empty selector", with(|v| v["spec"]["selector"] = json!({})),
             "spec.selector: Invalid value: {}: empty selector is invalid for statefulset".into()),
            ("14 mismatch", with(|v| v["spec"]["template"]["metadata"]["labels"] = json!({"app": "web"})),
             "spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`".into()),
            ("14 bad template annotation", with(|v| v["spec"]["template"]["metadata"]["annotations"] = json!({"/x": "y"})),
             "spec.template.annotations: Invalid value: \"/x\": prefix part must be non-empty".into()),
            // 15. restartPolicy and activeDeadlineSeconds
            ("15 restartPolicy Never", with(|v| v["spec"]["template"]["spec"]["restartPolicy"] = json!("Never")),
             "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"".into()),
            ("15 activeDeadlineSeconds", with(|v| v["spec"]["template"]["spec"]["activeDeadlineSeconds"] = json!(5)),
             "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported".into()),
        ];
        for (name, v, want) in cases {
            assert_eq!(create(v), want, "{name}");
        }
    }

    /// The UPDATE rules of spec §2.2 (items 16–19).
    #[test]
    fn update_rules() {
        let auto_resize = FeatureGates::default().with(Gate::StatefulSetAutoResizePVCGate, true);
        let g = FeatureGates::default();
        let vct = |storage: &str, class: &str, modes: Value| {
            json!({"metadata": {"name": "data"}, "spec": {"accessModes": modes, "storageClassName": class,
                   "resources": {"requests": {"storage": storage}}}})
        };
        let with_vct = |c: Value, on_rolling: bool| {
            with(|v| {
                v["spec"]["volumeClaimTemplates"] = json!([c]);
                if on_rolling {
                    v["spec"]["volumeClaimUpdateStrategy"] = json!({"type": "OnPodRollingUpdate"});
                }
            })
        };
        let in_place_only = |edit: fn(&mut Value)| rolling(|r| r["podUpdatePolicy"] = json!("InPlaceOnly")).pipe(edit);
        let guard = |op: &str| {
            format!(
                "spec.template.spec: Forbidden: only allowed to update images in spec for InPlaceOnly, but found \
                     {op}; set {STRATEGY_FIELD} to InPlaceIfPossible to let pods be recreated for this change"
            )
        };
        let rwo = json!(["ReadWriteOnce"]);
        #[rustfmt::skip]
        let cases: Vec<(&str, Value, Value, &FeatureGates, String)> = vec![
            ("no change", base(), base(), &g, String::new()),
            // 16. metadata
            ("16 name changed", base(), with(|v| v["metadata"]["name"] = json!("db2")), &g,
             "metadata.name: Invalid value: \"db2\": field is immutable".into()),
            // 17. immutable spec
            ("17 mutable fields", base(), with(|v| {
                v["spec"]["replicas"] = json!(5);
                v["spec"]["reserveOrdinals"] = json!([0]);
                v["spec"]["revisionHistoryLimit"] = json!(2);
                v["spec"]["ordinals"] = json!({"start": 2});
                v["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = json!(2);
                v["spec"]["persistentVolumeClaimRetentionPolicy"]["whenDeleted"] = json!("Delete");
                v["spec"]["volumeClaimTemplates"] = json!([{"metadata": {"name": "data"}}]);
            }), &g, String::new()),
            ("17 serviceName", base(), with(|v| v["spec"]["serviceName"] = json!("other")), &g, format!("spec: Forbidden: {IMMUTABLE_MSG}")),
            ("17 podManagementPolicy", base(), parallel(|_| {}), &g, format!("spec: Forbidden: {IMMUTABLE_MSG}")),
            // 18. volumeClaimTemplates under OnPodRollingUpdate (gate StatefulSetAutoResizePVCGate)
            ("18 resize", with_vct(vct("1Gi", "fast", rwo.clone()), true), with_vct(vct("2Gi", "fast", rwo.clone()), true), &auto_resize, String::new()),
            ("18 shrink", with_vct(vct("2Gi", "fast", rwo.clone()), true), with_vct(vct("1Gi", "fast", rwo.clone()), true), &auto_resize, String::new()),
            ("18 class changed", with_vct(vct("1Gi", "fast", rwo.clone()), true), with_vct(vct("1Gi", "slow", rwo.clone()), true), &auto_resize,
             "spec.volumeClaimTemplates[data]: Invalid value: {\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"data\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\
              \"resources\":{\"requests\":{\"storage\":\"1Gi\"}},\"storageClassName\":\"slow\"}}: volumeClaimTemplate can not be modified when OnRollingUpdate".into()),
            ("18 class changed without the gate", with_vct(vct("1Gi", "fast", rwo.clone()), true), with_vct(vct("1Gi", "slow", rwo.clone()), true), &g, String::new()),
            ("18 class changed with OnDelete", with_vct(vct("1Gi", "fast", rwo.clone()), false), with_vct(vct("1Gi", "slow", rwo.clone()), false), &auto_resize, String::new()),
            ("18 template added", base(), with_vct(vct("1Gi", "fast", rwo.clone()), true), &auto_resize,
             "spec.volumeClaimTemplates: Invalid value: [{\"apiVersion\":\"v1\",\"kind\":\"PersistentVolumeClaim\",\"metadata\":{\"name\":\"data\"},\"spec\":{\"accessModes\":[\"ReadWriteOnce\"],\
              \"resources\":{\"requests\":{\"storage\":\"1Gi\"}},\"storageClassName\":\"fast\"}}]: volumeClaimTemplate can not be \
              added or deleted when OnRollingUpdate".into()),
            ("18 renamed", with_vct(vct("1Gi", "fast", rwo.clone()), true),
             with(|v| {
                 let mut c = vct("1Gi", "fast", json!(["ReadWriteOnce"]));
                 c["metadata"]["name"] = json!("logs");
                 v["spec"]["volumeClaimTemplates"] = json!([c]);
                 v["spec"]["volumeClaimUpdateStrategy"] = json!({"type": "OnPodRollingUpdate"});
             }), &auto_resize, "spec.volumeClaimTemplates[logs].name: Forbidden: volumeClaimTemplate name can not be modified".into()),
            // 19. InPlaceOnly guard
            ("19 image", in_place_only(|_| {}), in_place_only(|v| v["spec"]["template"]["spec"]["containers"][0]["image"] = json!("mysql:8.1")), &g, String::new()),
            ("19 env", in_place_only(|_| {}), in_place_only(|v| v["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = json!("dev")), &g,
             guard("replace /containers/0/env/0/value")),
            ("19 imagePullPolicy (kruise's unanchored regex let it through)", in_place_only(|_| {}),
             in_place_only(|v| v["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = json!("IfNotPresent")), &g,
             guard("replace /containers/0/imagePullPolicy")),
            ("19 env under InPlaceIfPossible", base(), rolling(|r| r["podUpdatePolicy"] = json!("InPlaceIfPossible")).pipe(|v|
                v["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = json!("dev")), &g, String::new()),
            ("new object rules run too", base(), rolling(|r| r["maxUnavailable"] = json!(2)), &g,
             format!("{ROLLING}.maxUnavailable: Invalid value: 2: {PARALLEL_ONLY}")),
        ];
        for (name, old, new, gates, want) in cases {
            assert_eq!(aggregate(&validate_update(&sts(new), &sts(old), gates)), want, "{name}");
        }
    }

    trait Pipe {
        fn pipe(self, edit: impl FnOnce(&mut Value)) -> Value;
    }

    impl Pipe for Value {
        fn pipe(mut self, edit: impl FnOnce(&mut Value)) -> Value {
            edit(&mut self);
            self
        }
    }

    /// kruise's comparison: every mutable field copied from the old spec, then the whole specs.
    fn frozen_differs(new: &StatefulSetSpec, old: &StatefulSetSpec) -> bool {
        let mut frozen = new.clone();
        frozen.replicas = old.replicas;
        frozen.template = old.template.clone();
        frozen.update_strategy = old.update_strategy.clone();
        frozen.persistent_volume_claim_retention_policy = old.persistent_volume_claim_retention_policy.clone();
        frozen.scale_strategy = old.scale_strategy.clone();
        frozen.volume_claim_templates = old.volume_claim_templates.clone();
        frozen.volume_claim_update_strategy = old.volume_claim_update_strategy.clone();
        frozen.reserve_ordinals = old.reserve_ordinals.clone();
        frozen.lifecycle = old.lifecycle.clone();
        frozen.revision_history_limit = old.revision_history_limit;
        frozen.ordinals = old.ordinals.clone();
        !semantic_eq(&json(&frozen), &json(old))
    }

    #[test]
    fn immutable_part_answers_as_the_whole_frozen_spec() {
        let selectors =
            [Value::Null, json!({}), json!({"matchLabels": {"app": "web"}}), json!({"matchLabels": {"app": "x"}})];
        let texts = [json!(""), json!("OrderedReady"), json!("Parallel")];
        let services = [json!(""), json!("web"), json!("other")];
        let mut differing = 0;
        for a in &selectors {
            for b in &selectors {
                for (p, q) in texts.iter().zip(texts.iter().rev()).chain(texts.iter().zip(texts.iter())) {
                    for (x, y) in services.iter().zip(services.iter().rev()).chain(services.iter().zip(services.iter()))
                    {
                        let old = sts(with(|v| {
                            v["spec"]["selector"] = a.clone();
                            v["spec"]["podManagementPolicy"] = p.clone();
                            v["spec"]["serviceName"] = x.clone();
                        }));
                        let new = sts(with(|v| {
                            v["spec"]["selector"] = b.clone();
                            v["spec"]["podManagementPolicy"] = q.clone();
                            v["spec"]["serviceName"] = y.clone();
                            v["spec"]["replicas"] = json!(9);
                            v["spec"]["reserveOrdinals"] = json!([1]);
                        }));
                        let want = frozen_differs(&new.spec, &old.spec);
                        let got = !semantic_eq(&immutable_part(&new.spec), &immutable_part(&old.spec));
                        assert_eq!(got, want, "{a} {p} {x} -> {b} {q} {y}");
                        differing += usize::from(got);
                    }
                }
            }
        }
        assert!(differing > 100, "the table has immutable changes ({differing})");
    }

    #[test]
    fn storage_change_is_by_value() {
        let pvc = |req: &str| -> PersistentVolumeClaim {
            serde_json::from_value(json!({"spec": {"resources": {"requests": {"storage": req}}}})).unwrap()
        };
        assert!(!storage_changed(&pvc("1Gi"), &pvc("1024Mi")));
        assert!(storage_changed(&pvc("1Gi"), &pvc("2Gi")));
    }

    #[test]
    fn parse_range_table() {
        assert_eq!(parse_range("1-3"), Ok((1, 3)));
        assert_eq!(parse_range("3"), Err("invalid range 3".into()));
        assert_eq!(parse_range("3-1"), Err("invalid range 3-1".into()));
        assert_eq!(parse_range("a-1"), Err("strconv.Atoi: parsing \"a\": invalid syntax".into()));
    }
}
