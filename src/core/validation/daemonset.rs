//! Advanced DaemonSet validation, kruise v1.9.0's `pkg/webhook/daemonset/validating`
//! (`validateDaemonSet[V1beta1]`, `validateDaemonSetUpdate[V1beta1]`), on a view both versions
//! share ([`DaemonSetView`]). CREATE: object metadata, the selector (valid, matching the template
//! labels, not empty), Kubernetes' `ValidatePodTemplateSpec` on the template defaulted as kruise's
//! `ConvertPodTemplateSpec` defaults it, `restartPolicy` Always, no `activeDeadlineSeconds`,
//! `minReadySeconds` ≥ 0, the update strategy, `revisionHistoryLimit` ≥ 0, no `inPlaceUpdate` hook.
//! UPDATE: the metadata update rules, only the selector immutable, then the CREATE spec rules.
//!
//! Kept on purpose as kruise has them, so answers are byte-identical: the rolling-update `type`
//! and `partition` errors carry the doubled path `spec.updateStrategy.rollingUpdate.rollingUpdate.…`
//! (kruise adds the `rollingUpdate` child twice), and `maxUnavailable`/`maxSurge` strings that are
//! neither ints nor percents count as 0 (`IntOrString.IntValue()`).

use k8s_openapi::api::core::v1::PodTemplateSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::json;
use super::meta::{validate_object_meta, validate_object_meta_update};
use super::template_update::normalized_template;
use crate::apis::common::Lifecycle;
use crate::apis::daemonset::{
    DEPRECATED_SURGING, DaemonSetUpdateStrategy, IN_PLACE_IF_POSSIBLE, ON_DELETE, ROLLING_UPDATE,
    RollingUpdateDaemonSet, STANDARD, v1beta1,
};
use crate::compat::field::FieldError;
use crate::compat::intstr::{
    go_atoi, is_not_more_than_100_percent, is_valid_percent, validate_nonnegative, validate_positive_int_or_percent,
};
use crate::compat::normalize::semantic_eq;
use crate::compat::podspec::validate_pod_template_spec;
use crate::compat::selector::{Selector, validate_label_selector};
use crate::core::defaults::daemonset::Version;
use crate::core::features::FeatureGates;

const IMMUTABLE_V1ALPHA1: &str = "updates to daemonset spec for fields other than 'BurstReplicas', 'template', \
     'lifecycle',  'updateStrategy', 'minReadySeconds', and 'revisionHistoryLimit' are forbidden";
const IMMUTABLE_V1BETA1: &str = "updates to daemonset spec for fields other than 'BurstReplicas', 'template', \
     'lifecycle', 'scaleStrategy', 'updateStrategy', 'minReadySeconds', and 'revisionHistoryLimit' are forbidden";

/// The parts of a DaemonSet of either version that validation reads.
#[derive(Clone, Copy, Debug)]
pub struct DaemonSetView<'a> {
    pub metadata: &'a ObjectMeta,
    pub selector: Option<&'a LabelSelector>,
    pub template: &'a PodTemplateSpec,
    pub update_strategy: &'a DaemonSetUpdateStrategy,
    pub min_ready_seconds: i32,
    pub revision_history_limit: Option<i32>,
    pub lifecycle: Option<&'a Lifecycle>,
    pub version: Version,
}

impl<'a> From<&'a crate::apis::daemonset::DaemonSet> for DaemonSetView<'a> {
    fn from(ds: &'a crate::apis::daemonset::DaemonSet) -> Self {
        let s = &ds.spec;
        DaemonSetView {
            metadata: &ds.metadata,
            selector: s.selector.as_ref(),
            template: &s.template,
            update_strategy: &s.update_strategy,
            min_ready_seconds: s.min_ready_seconds,
            revision_history_limit: s.revision_history_limit,
            lifecycle: s.lifecycle.as_ref(),
            version: Version::V1alpha1,
        }
    }
}

impl<'a> From<&'a v1beta1::DaemonSet> for DaemonSetView<'a> {
    fn from(ds: &'a v1beta1::DaemonSet) -> Self {
        let s = &ds.spec;
        DaemonSetView {
            metadata: &ds.metadata,
            selector: s.selector.as_ref(),
            template: &s.template,
            update_strategy: &s.update_strategy,
            min_ready_seconds: s.min_ready_seconds,
            revision_history_limit: s.revision_history_limit,
            lifecycle: s.lifecycle.as_ref(),
            version: Version::V1beta1,
        }
    }
}

/// CREATE.
pub fn validate_create(ds: DaemonSetView<'_>, gates: &FeatureGates) -> Vec<FieldError> {
    let mut errs = validate_object_meta(ds.metadata, true, "metadata");
    errs.extend(validate_spec(ds, gates));
    errs
}

/// UPDATE: metadata update rules, the immutable selector, then the spec rules on `new`.
pub fn validate_update(new: DaemonSetView<'_>, old: DaemonSetView<'_>, gates: &FeatureGates) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(new.metadata, old.metadata, "metadata");
    // kruise copies every mutable field from the old spec and compares the rest: the selector
    // (and, in v1beta1, nothing else either: scaleStrategy is mutable there).
    if !semantic_eq(&json(&new.selector), &json(&old.selector)) {
        let msg = if new.version == Version::V1alpha1 { IMMUTABLE_V1ALPHA1 } else { IMMUTABLE_V1BETA1 };
        errs.push(FieldError::forbidden("spec", msg));
    }
    errs.extend(validate_spec(new, gates));
    errs
}

fn validate_spec(ds: DaemonSetView<'_>, gates: &FeatureGates) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(sel) = ds.selector {
        errs.extend(validate_label_selector(sel, "spec.selector"));
    }
    if let Ok(selector) = Selector::from_optional(ds.selector) {
        let labels = ds.template.metadata.as_ref().and_then(|m| m.labels.clone());
        if !selector.matches(&labels.clone().unwrap_or_default()) {
            errs.push(FieldError::invalid(
                "spec.template.metadata.labels",
                json(&labels),
                "`selector` does not match template `labels`",
            ));
        }
    }
    if let Some(sel) = ds.selector
        && crate::compat::selector::is_empty(sel)
    {
        errs.push(FieldError::invalid("spec.selector", json(sel), "empty selector is invalid for daemonset"));
    }
    // ConvertPodTemplateSpec defaults the template in place: the checks below see the defaults.
    let template = normalized_template(ds.template, gates);
    errs.extend(validate_pod_template_spec(&template, &[], "spec.template"));
    let pod_spec = template.spec.as_ref();
    let restart_policy = pod_spec.and_then(|s| s.restart_policy.clone()).unwrap_or_default();
    if restart_policy != "Always" {
        errs.push(FieldError::not_supported("spec.template.spec.restartPolicy", restart_policy, &["Always"]));
    }
    if pod_spec.is_some_and(|s| s.active_deadline_seconds.is_some()) {
        errs.push(FieldError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in DaemonSet is not Supported",
        ));
    }
    errs.extend(validate_nonnegative(i64::from(ds.min_ready_seconds), "spec.minReadySeconds"));
    errs.extend(validate_update_strategy(ds.update_strategy, ds.version, "spec.updateStrategy"));
    if let Some(limit) = ds.revision_history_limit {
        errs.extend(validate_nonnegative(i64::from(limit), "spec.revisionHistoryLimit"));
    }
    if ds.lifecycle.is_some_and(|l| l.in_place_update.is_some()) {
        errs.push(FieldError::forbidden("spec.lifecycle.inPlaceUpdate", "inPlaceUpdate hook has not supported yet"));
    }
    errs
}

/// `validateDaemonSetUpdateStrategy[V1beta1]`.
pub fn validate_update_strategy(strategy: &DaemonSetUpdateStrategy, version: Version, path: &str) -> Vec<FieldError> {
    match strategy.type_.as_str() {
        ON_DELETE => Vec::new(),
        ROLLING_UPDATE => match &strategy.rolling_update {
            None => vec![FieldError::required(&format!("{path}.rollingUpdate"), "")],
            Some(r) => validate_rolling_update(r, version, &format!("{path}.rollingUpdate")),
        },
        _ => vec![FieldError::not_supported(path, json(strategy), &[ROLLING_UPDATE, ON_DELETE])],
    }
}

/// `validateRollingUpdateDaemonSet[V1beta1]`.
pub fn validate_rolling_update(r: &RollingUpdateDaemonSet, version: Version, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mu_path = format!("{path}.maxUnavailable");
    let ms_path = format!("{path}.maxSurge");
    let has_unavailable = r.max_unavailable.as_ref().is_some_and(|v| int_or_percent_value(v) != 0);
    if let Some(v) = r.max_unavailable.as_ref().filter(|_| has_unavailable) {
        errs.extend(validate_positive_int_or_percent(v, &mu_path));
        errs.extend(is_not_more_than_100_percent(v, &mu_path));
    }
    let has_surge = r.max_surge.as_ref().is_some_and(|v| int_or_percent_value(v) != 0);
    if let Some(v) = r.max_surge.as_ref().filter(|_| has_surge) {
        errs.extend(validate_positive_int_or_percent(v, &ms_path));
        errs.extend(is_not_more_than_100_percent(v, &ms_path));
    }
    if has_unavailable && has_surge {
        let value = crate::compat::intstr::to_value(r.max_surge.as_ref());
        errs.push(FieldError::invalid(&ms_path, value, "may not be set when maxUnavailable is non-zero"));
    } else if !has_unavailable && !has_surge {
        errs.push(FieldError::required(&mu_path, "cannot be 0 when maxSurge is 0"));
    }
    // kruise's doubled `rollingUpdate` child, kept (see the module comment).
    let type_path = format!("{path}.rollingUpdate.type");
    match r.rolling_update_type.as_str() {
        "" | STANDARD => {}
        IN_PLACE_IF_POSSIBLE => {
            if has_surge {
                errs.push(FieldError::required(&ms_path, "must be 0 for InPlaceIfPossible type"));
            }
        }
        DEPRECATED_SURGING if version == Version::V1alpha1 => {
            if has_unavailable {
                errs.push(FieldError::required(&mu_path, "must be 0 for Surging type"));
            }
        }
        other => {
            let valid: &[&str] = match version {
                Version::V1alpha1 => &[STANDARD, DEPRECATED_SURGING, IN_PLACE_IF_POSSIBLE],
                Version::V1beta1 => &[STANDARD, IN_PLACE_IF_POSSIBLE],
            };
            errs.push(FieldError::not_supported(&type_path, other, valid));
        }
    }
    if let Some(p) = &r.partition {
        let p_path = format!("{path}.rollingUpdate.partition");
        match p {
            IntOrString::String(_) => errs.extend(validate_positive_int_or_percent(p, &p_path)),
            IntOrString::Int(i) => errs.extend(validate_nonnegative(i64::from(*i), &p_path)),
        }
        errs.extend(is_not_more_than_100_percent(p, &p_path));
    }
    errs
}

/// kruise's `getIntOrPercentValue`: a valid percent's number, an int's value, and for any other
/// string `IntOrString.IntValue()` (`strconv.Atoi`, 0 when it does not parse).
fn int_or_percent_value(v: &IntOrString) -> i64 {
    match v {
        IntOrString::Int(i) => i64::from(*i),
        IntOrString::String(s) if is_valid_percent(s).is_empty() => go_atoi(&s[..s.len() - 1]).unwrap_or(0),
        IntOrString::String(s) => go_atoi(s).unwrap_or(0),
    }
}

#[cfg(test)]
#[path = "daemonset_tests.rs"]
mod tests;
