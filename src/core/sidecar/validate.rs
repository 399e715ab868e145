//! The SidecarSet validating webhook `vsidecarset.kb.io` (spec §2.3): every numbered rule, in
//! kruise's order, with kruise's paths and wording. The webhook answers 422 with the aggregate
//! (decision §11.1; kruise answers 500).
//!
//! Kruise quirks kept on purpose, because messages and paths are what users see and search for:
//! `injectionStrategy` errors are reported at `revision` (no `spec.` prefix), the
//! partition/selector clash at `updateStrategy`, and per-container errors at `spec[i]` or
//! `spec.container.*`. Cross-set conflicts (item 13) are only evaluated when everything else
//! passed.
//!
//! `resourcesPolicy` expressions (item 10) are evaluated by kruise's calculator
//! ([`super::resources`]) with their variable set to 1, as kruise checks them.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::Deserialize;

use super::conflict::{effective_namespace_selector, validate_conflicts};
use super::matching::history_version;
use super::{
    AFTER_APP_CONTAINER, BASE_ANNOTATION, BEFORE_APP_CONTAINER, SHARE_DISABLED, SHARE_ENABLED, canary_base,
    inject::split_subscripted, is_native_sidecar, podcheck,
};
use crate::apis::SidecarSet;
use crate::apis::sidecarset::{ResourcesPolicy, SidecarContainer, SidecarSetInjectRevision, TransferEnvVar};
use crate::compat::field::{FieldError, child, index};
use crate::compat::intstr::validate_positive_int_or_percent;
use crate::compat::names::{is_qualified_name, max_len_error, regex_error, validate_annotations, validate_labels};
use crate::compat::selector::{self, Selector};
use crate::core::features::{FeatureGates, Gate};
use crate::core::validation::update_order::{validate_priority, validate_scatter};

/// Key of the patchPodMetadata whitelist in ConfigMap `kruise-configuration`.
pub const WHITELIST_KEY: &str = "SidecarSet_PatchPodMetadata_WhiteList";
/// The ConfigMap holding kruise's configuration, in kruise's namespace.
pub const CONFIGURATION_NAME: &str = "kruise-configuration";

const NAME_FMT: &str = "^[a-zA-Z0-9\\-]+$";
const NAME_MSG: &str = "sidecarset name must consist of alphanumeric characters or '-'";
const NAME_MAX_LEN: usize = 63;

/// What validation reads besides the object.
pub struct ValidationInput<'a> {
    /// The object before an UPDATE.
    pub old: Option<&'a SidecarSet>,
    /// Every SidecarSet of the cluster (for the canary base and the conflicts).
    pub all: &'a [Arc<SidecarSet>],
    /// ControllerRevisions of kruise's namespace.
    pub revisions: &'a [Arc<ControllerRevision>],
    /// The value of `SidecarSet_PatchPodMetadata_WhiteList` in `kruise-configuration`, when the
    /// ConfigMap and the key exist.
    pub whitelist: Option<&'a str>,
    /// Effective feature gates.
    pub gates: &'a FeatureGates,
}

/// Every error of the SidecarSet, in kruise's order; empty when valid.
pub fn validate_sidecarset(set: &SidecarSet, input: &ValidationInput<'_>) -> Vec<FieldError> {
    let mut errs = validate_object_meta(set);
    errs.extend(validate_canary(set, input));
    errs.extend(validate_spec(set, input));
    if let Some(old) = input.old {
        errs.extend(validate_container_changes(&set.spec.containers, &old.spec.containers));
    }
    if !errs.is_empty() {
        return errs;
    }
    validate_conflicts(set, input.all)
}

/// Item 1: `ValidateObjectMeta(meta, namespaced=false, validateSidecarSetName)`.
fn validate_object_meta(set: &SidecarSet) -> Vec<FieldError> {
    let m = &set.metadata;
    let mut errs = Vec::new();
    let name = m.name.as_deref().unwrap_or("");
    let generate = m.generate_name.as_deref().unwrap_or("");
    if !generate.is_empty() {
        for msg in name_messages(generate) {
            errs.push(FieldError::invalid("metadata.generateName", generate, msg));
        }
    }
    if name.is_empty() {
        errs.push(FieldError::required("metadata.name", "name or generateName is required"));
    } else {
        for msg in name_messages(name) {
            errs.push(FieldError::invalid("metadata.name", name, msg));
        }
    }
    if m.namespace.as_deref().is_some_and(|ns| !ns.is_empty()) {
        errs.push(FieldError::forbidden("metadata.namespace", "not allowed on this type"));
    }
    if let Some(labels) = &m.labels {
        errs.extend(validate_labels(labels, "metadata.labels"));
    }
    if let Some(annotations) = &m.annotations {
        errs.extend(validate_annotations(annotations, "metadata.annotations"));
    }
    errs
}

/// `validateSidecarSetName`.
fn name_messages(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        out.push(regex_error(NAME_MSG, NAME_FMT, &["example-com"]));
    }
    if name.len() > NAME_MAX_LEN {
        out.push(max_len_error(NAME_MAX_LEN));
    }
    out
}

/// Item 2 (kruise HEAD): canary annotations.
fn validate_canary(set: &SidecarSet, input: &ValidationInput<'_>) -> Vec<FieldError> {
    let Some(base) = canary_base(set) else { return Vec::new() };
    let annotations = serde_json::to_value(&set.metadata.annotations).unwrap_or_default();
    let invalid = |detail: String| FieldError::invalid("metadata", annotations.clone(), detail);
    let mut errs = Vec::new();
    if Some(base) == set.metadata.name.as_deref() {
        errs.push(invalid("base sidecarSet cannot be itself".into()));
    }
    if let Some(old) = input.old {
        let old_base = old.metadata.annotations.as_ref().and_then(|a| a.get(BASE_ANNOTATION)).map(String::as_str);
        if old_base.unwrap_or("") != base {
            errs.push(invalid(format!("annotations[{BASE_ANNOTATION}] is immutable")));
        }
    }
    match input.all.iter().find(|s| s.metadata.name.as_deref() == Some(base)) {
        None => errs.push(invalid(format!(
            "fetch base sidecarSet[{base}] failed: sidecarsets.apps.kruise.io \"{base}\" not found"
        ))),
        Some(b) if canary_base(b).is_some() => errs.push(invalid("base sidecarSet cannot be canary".into())),
        Some(_) => {}
    }
    if set.spec.update_strategy.type_ != "NotUpdate" {
        errs.push(invalid("RollingUpdate is not supported for canary sidecarSet".into()));
    }
    errs
}

fn validate_spec(set: &SidecarSet, input: &ValidationInput<'_>) -> Vec<FieldError> {
    let spec = &set.spec;
    let mut errs = Vec::new();
    // Item 3 is not kept: kruise refuses native sidecars (init containers with `restartPolicy:
    // Always`) under RollingUpdate ("The initContainer in-place upgrade is not currently
    // supported."); our controller upgrades them in place like containers (issue 28 item 6,
    // kruise #1540, #1671), so a RollingUpdate set may carry them.
    // Item 4: selectors.
    match &spec.selector {
        None => errs.push(FieldError::required("spec.selector", "no selector defined for SidecarSet")),
        Some(sel) => errs.extend(validate_selector(sel, "spec.selector")),
    }
    if let Some(ns_sel) = effective_namespace_selector(set) {
        errs.extend(validate_selector(&ns_sel, "spec.namespaceSelector"));
    }
    // Item 5: pinned revision.
    if let Some(revision) = &spec.injection_strategy.revision {
        errs.extend(validate_revision(set, revision, input.revisions));
    }
    // Item 6: update strategy.
    errs.extend(validate_update_strategy(set));
    // Items 8, 9, 10, 7: containers and volumes.
    if spec.init_containers.is_empty() && spec.containers.is_empty() {
        errs.push(FieldError::required("spec", "no initContainer or container defined for SidecarSet"));
    } else {
        errs.extend(validate_containers(set));
    }
    // Item 11: patchPodMetadata.
    errs.extend(validate_patch_metadata(set, input));
    errs
}

/// kruise's `validateSelector`.
fn validate_selector(sel: &LabelSelector, path: &str) -> Vec<FieldError> {
    let mut errs = selector::validate_label_selector(sel, path);
    let value = serde_json::to_value(sel).unwrap_or_default();
    if selector::is_empty(sel) {
        errs.push(FieldError::invalid(path, value.clone(), "empty selector is not valid for sidecarset."));
    }
    if Selector::from_label_selector(sel).is_err() {
        errs.push(FieldError::invalid(&child(path, "selector"), value, ""));
    }
    errs
}

fn validate_revision(
    set: &SidecarSet,
    revision: &SidecarSetInjectRevision,
    revisions: &[Arc<ControllerRevision>],
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let value = serde_json::to_value(revision).unwrap_or_default();
    if revision.revision_name.is_none() && revision.custom_version.is_none() {
        errs.push(FieldError::invalid(
            "revision",
            value.clone(),
            "revisionName and customVersion cannot be empty simultaneously",
        ));
    } else {
        let problem = match history_version(set, revision, revisions) {
            Ok(Some(_)) => None,
            Ok(None) => Some(match &revision.revision_name {
                Some(name) => format!("controllerrevisions.apps \"{name}\" not found"),
                None => format!("ControllerRevision.apps \"{}\" not found", set.metadata.name.as_deref().unwrap_or("")),
            }),
            Err(e) => Some(e.to_string()),
        };
        if let Some(problem) = problem {
            errs.push(FieldError::invalid(
                "revision",
                serde_json::Value::Null,
                format!("Cannot find specific ControllerRevision, err: {problem}"),
            ));
        }
    }
    if !matches!(revision.policy.as_str(), "" | "Always" | "Partial") {
        errs.push(FieldError::invalid(
            "revision.policy",
            value,
            format!("Invalid policy {}, supported: [Always, Partial]", revision.policy),
        ));
    }
    errs
}

fn validate_update_strategy(set: &SidecarSet) -> Vec<FieldError> {
    let strategy = &set.spec.update_strategy;
    let path = "spec.updateStrategy";
    let mut errs = Vec::new();
    if strategy.type_ != "RollingUpdate" {
        return errs;
    }
    let partition_set = match &strategy.partition {
        None => false,
        Some(IntOrString::String(_)) => true,
        Some(IntOrString::Int(i)) => *i != 0,
    };
    if partition_set && strategy.selector.is_some() {
        let shown = serde_json::to_string(strategy).unwrap_or_default();
        errs.push(FieldError::invalid("updateStrategy", shown, "Partition and Selector cannot be used together"));
    }
    if let Some(sel) = &strategy.selector {
        errs.extend(validate_selector(sel, &child(path, "selector")));
    }
    if let Some(p) = &strategy.partition {
        errs.extend(validate_positive_int_or_percent(p, &child(path, "partition")));
    }
    if let Some(m) = &strategy.max_unavailable {
        errs.extend(validate_positive_int_or_percent(m, &child(path, "maxUnavailable")));
    }
    errs.extend(validate_priority(strategy.priority_strategy.as_ref(), &child(path, "priorityStrategy")));
    errs.extend(validate_scatter(&strategy.scatter_strategy, &child(path, "scatterStrategy")));
    errs
}

/// Items 9 and 10, then the fake pod (items 7 and 9).
fn validate_containers(set: &SidecarSet) -> Vec<FieldError> {
    let spec = &set.spec;
    let mut errs = Vec::new();
    for (i, c) in spec.init_containers.iter().enumerate() {
        let path = index("spec", i);
        if let Some(policy) = &c.resources_policy {
            if !is_native_sidecar(&c.container) {
                errs.push(FieldError::invalid(
                    &child(&path, "resourcesPolicy"),
                    serde_json::to_value(policy).unwrap_or_default(),
                    "resourcesPolicy is only supported for containers with RestartPolicy Always",
                ));
            }
            errs.extend(validate_resources_policy(c, policy, &child(&path, "resourcesPolicy")));
        }
    }
    for (i, c) in spec.containers.iter().enumerate() {
        let path = index("spec", i);
        if c.pod_inject_policy != BEFORE_APP_CONTAINER && c.pod_inject_policy != AFTER_APP_CONTAINER {
            errs.push(FieldError::invalid(
                "spec.container.podInjectPolicy",
                c.pod_inject_policy.as_str(),
                "unsupported pod inject policy",
            ));
        }
        if c.share_volume_policy.type_ != SHARE_ENABLED && c.share_volume_policy.type_ != SHARE_DISABLED {
            errs.push(FieldError::invalid(
                "spec.container.shareVolumePolicy",
                serde_json::to_value(&c.share_volume_policy).unwrap_or_default(),
                "unsupported share volume policy",
            ));
        }
        errs.extend(validate_transfer_env(&c.transfer_env, &child(&path, "transferEnv")));
        if let Some(policy) = &c.resources_policy {
            errs.extend(validate_resources_policy(c, policy, &child(&path, "resourcesPolicy")));
        }
    }
    let init: Vec<_> = spec.init_containers.iter().map(|c| c.container.clone()).collect();
    let containers: Vec<_> = spec.containers.iter().map(|c| c.container.clone()).collect();
    errs.extend(podcheck::validate_fake_pod(&init, &containers, &spec.volumes));
    errs
}

/// `validateDownwardAPI`: `sourceContainerNameFrom.fieldRef` must be a v1 subscripted
/// `metadata.labels` / `metadata.annotations` reference with a qualified-name key.
fn validate_transfer_env(envs: &[TransferEnvVar], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = child(path, "fieldRef");
    for t in envs {
        let Some(fs) = t.source_container_name_from.as_ref().and_then(|s| s.field_ref.as_ref()) else { continue };
        let api_version = fs.api_version.as_deref().unwrap_or("");
        if api_version.is_empty() {
            errs.push(FieldError::required(&child(&path, "apiVersion"), ""));
            continue;
        }
        if fs.field_path.is_empty() {
            errs.push(FieldError::required(&child(&path, "fieldPath"), ""));
            continue;
        }
        let conversion = if api_version != "v1" {
            Err(format!("unsupported pod version: {api_version}"))
        } else {
            match split_subscripted(&fs.field_path) {
                Some(("metadata.annotations" | "metadata.labels", _)) => Ok(()),
                Some((p, _)) => Err(format!("field path not supported: {p}")),
                None => Err(format!("field label not supported: {}", fs.field_path)),
            }
        };
        if let Err(e) = conversion {
            errs.push(FieldError::invalid(
                &child(&path, "fieldPath"),
                fs.field_path.as_str(),
                format!("error converting fieldPath: {e}"),
            ));
            continue;
        }
        match split_subscripted(&fs.field_path) {
            Some(("metadata.annotations", key)) => {
                for msg in is_qualified_name(&key.to_lowercase()) {
                    errs.push(FieldError::invalid(&path, key, msg));
                }
            }
            Some(("metadata.labels", key)) => {
                for msg in is_qualified_name(key) {
                    errs.push(FieldError::invalid(&path, key, msg));
                }
            }
            _ => {}
        }
    }
    errs
}

/// Item 10 without expression parsing.
fn validate_resources_policy(c: &SidecarContainer, policy: &ResourcesPolicy, path: &str) -> Vec<FieldError> {
    let shown = serde_json::to_value(policy).unwrap_or_default();
    let resources = c.container.resources.as_ref();
    if resources.is_some_and(|r| {
        r.limits.as_ref().is_some_and(|l| !l.is_empty()) || r.requests.as_ref().is_some_and(|l| !l.is_empty())
    }) {
        return vec![FieldError::invalid(path, shown, "resourcesPolicy and resources cannot be configured together")];
    }
    let mut errs = Vec::new();
    if policy.target_containers_name_regex.is_empty() {
        errs.push(FieldError::required(&child(path, "targetContainersNameRegex"), "invalid empty regex"));
    } else if let Err(e) = regex::Regex::new(&policy.target_containers_name_regex) {
        errs.push(FieldError::invalid(
            &child(path, "targetContainersNameRegex"),
            policy.target_containers_name_regex.as_str(),
            format!("invalid regex pattern: {e}"),
        ));
    }
    let expr = &policy.resources_expr;
    let expr_path = child(path, "resourcesExpr");
    if expr.limits.is_none() && expr.requests.is_none() {
        errs.push(FieldError::invalid(
            &expr_path,
            serde_json::to_value(expr).unwrap_or_default(),
            "at least one of limits or requests must be configured",
        ));
        return errs;
    }
    for (part, exprs) in [("limits", &expr.limits), ("requests", &expr.requests)] {
        let Some(exprs) = exprs else { continue };
        for (variable, text) in [("cpu", &exprs.cpu), ("memory", &exprs.memory)] {
            if let Err(e) = super::resources::check_expression(text, variable) {
                errs.push(FieldError::invalid(&child(&child(&expr_path, part), variable), text.as_str(), e));
            }
        }
    }
    errs
}

/// The whitelist stored under [`WHITELIST_KEY`].
#[derive(Debug, Default, Deserialize)]
struct Whitelist {
    #[serde(default)]
    rules: Vec<WhitelistRule>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WhitelistRule {
    #[serde(default)]
    selector: Option<LabelSelector>,
    #[serde(default)]
    allowed_annotation_key_exprs: Vec<String>,
}

/// `ValidateSidecarSetPatchMetadataWhitelist`.
fn whitelist_problem(set: &SidecarSet, input: &ValidationInput<'_>) -> Option<String> {
    if set.spec.patch_pod_metadata.is_empty() {
        return None;
    }
    let defaults_allowed = input.gates.enabled(Gate::SidecarSetPatchPodMetadataDefaultsAllowed);
    let Some(text) = input.whitelist else {
        return (!defaults_allowed).then(|| "SidecarSet patch metadata whitelist not found".into());
    };
    let whitelist: Whitelist = match serde_json::from_str(text) {
        Ok(w) => w,
        Err(e) => return Some(e.to_string()),
    };
    let empty = Default::default();
    let labels = set.metadata.labels.as_ref().unwrap_or(&empty);
    let mut exprs = Vec::new();
    for rule in &whitelist.rules {
        if let Some(sel) = &rule.selector {
            match Selector::from_validated(Some(sel)) {
                Ok(s) if !s.matches(labels) => continue,
                Ok(_) => {}
                Err(e) => return Some(e.to_string()),
            }
        }
        for e in &rule.allowed_annotation_key_exprs {
            match regex::Regex::new(e) {
                Ok(r) => exprs.push(r),
                Err(err) => return Some(format!("error parsing regexp: {err}")),
            }
        }
    }
    if exprs.is_empty() {
        return (!defaults_allowed).then(|| "sidecarSet patch metadata annotation is not allowed".into());
    }
    for patch in &set.spec.patch_pod_metadata {
        for key in patch.annotations.keys() {
            if !exprs.iter().any(|r| r.is_match(key)) {
                return Some(format!("sidecarSet patch metadata annotation({key}) is not allowed"));
            }
        }
    }
    None
}

/// Item 11.
fn validate_patch_metadata(set: &SidecarSet, input: &ValidationInput<'_>) -> Vec<FieldError> {
    let path = "spec.patchPodMetadata";
    let mut errs = Vec::new();
    if let Some(problem) = whitelist_problem(set, input) {
        errs.push(FieldError::required(path, problem));
    }
    let mut keys = BTreeSet::new();
    for patch in &set.spec.patch_pod_metadata {
        if patch.annotations.is_empty() {
            errs.push(FieldError::required(path, "no annotations defined for SidecarSet"));
        } else {
            errs.extend(validate_annotations(&patch.annotations, "patchPodMetadata.annotations"));
        }
        if patch.patch_policy.is_empty() {
            errs.push(FieldError::required(path, "no patchPolicy defined for patchPodMetadata"));
        }
        for k in patch.annotations.keys() {
            if !keys.insert(k.as_str()) {
                errs.push(FieldError::required(path, format!("patch annotation[{k}] already exist")));
            }
        }
    }
    errs
}

/// Item 12 (UPDATE): containers cannot be added or renamed, and `upgradeType` is immutable.
fn validate_container_changes(new: &[SidecarContainer], old: &[SidecarContainer]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for c in new {
        let name = c.container.name.as_str();
        match old.iter().rev().find(|o| o.container.name == name) {
            Some(o) => {
                let before = &o.upgrade_strategy.upgrade_type;
                if !before.is_empty() && *before != c.upgrade_strategy.upgrade_type {
                    errs.push(FieldError::invalid(
                        "spec.containers.upgradeStrategy.upgradeType",
                        name,
                        format!("container {name} upgradeType is immutable"),
                    ));
                }
            }
            None => {
                errs.push(FieldError::invalid("spec.containers.name", name, format!("container {name} is not found")))
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests;
