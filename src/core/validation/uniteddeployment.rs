//! UnitedDeployment validation, kruise's `pkg/webhook/uniteddeployment/validating/
//! uniteddeployment_validation.go` (v1.9.0; issue 34 item 1): the object metadata, the selector,
//! exactly one of the four templates (its labels matched by the selector; the StatefulSet and
//! Deployment templates' pod templates checked as Kubernetes checks a StatefulSet's and a
//! ReplicaSet's; the CloneSet template is only counted, as in kruise — the CloneSet webhook checks
//! it when the controller creates the subset workloads), the subsets (names DNS labels and unique,
//! `nodeSelectorTerm` and `tolerations` as Kubernetes validates them, `replicas` versus
//! `minReplicas`/`maxReplicas`), and the partitions naming existing subsets. On UPDATE the
//! subsets' `nodeSelectorTerm` and `tolerations` are immutable and a StatefulSet template may only
//! change its `template` and `updateStrategy`.
//!
//! Quirks kept as kruise has them: an Advanced StatefulSet template whose labels do not match is
//! reported at `statefulSetTemplate.metadata.labels`; a `maxReplicas` that does not parse, and a
//! min over max, are reported at `minReplicas` with the `maxReplicas` value; the tolerations rule
//! runs twice on UPDATE (the aggregate prints it once). One difference: where kruise prints the
//! UnitedDeployment's replicas with `%d` of a pointer (an address), the number is printed.

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, NodeSelectorTerm, PodTemplateSpec, Toleration};
use serde_json::Value;

use super::json;
use super::meta::{validate_object_meta, validate_object_meta_update};
use super::template_update::normalized_template;
use crate::apis::uniteddeployment::{
    AdvancedStatefulSetTemplateSpec, DeploymentTemplateSpec, StatefulSetTemplateSpec, Subset, SubsetTemplate, Topology,
    UnitedDeployment, UnitedDeploymentSpec,
};
use crate::compat::field::{FieldError, child, index};
use crate::compat::intstr::validate_nonnegative;
use crate::compat::names::{is_dns1123_label, is_dns1123_subdomain, is_valid_label_value, validate_label_name};
use crate::compat::normalize::semantic_eq;
use crate::compat::podspec::{validate_pod_template_spec, validate_template_metadata};
use crate::compat::selector::{Selector, is_empty, validate_label_selector};
use crate::core::features::FeatureGates;
use crate::core::uniteddeployment::allocation::{
    is_adaptive, parse_subset_replicas, should_reserve_unschedulable_pods,
};

const ROLLING_UPDATE: &str = "RollingUpdate";
const ONE_OF: &str = "statefulSetTemplate, advancedStatefulSetTemplate, cloneSetTemplate, or deploymentTemplate";
const LABELS_MISMATCH: &str = "`selector` does not match template `labels`";

/// `validateUnitedDeployment`: CREATE, and the first half of UPDATE.
pub fn validate(ud: &UnitedDeployment, gates: &FeatureGates) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&ud.metadata, true, "metadata");
    errs.extend(validate_spec(&ud.spec, gates));
    errs
}

/// UPDATE: [`validate`] on the new object, then `ValidateUnitedDeploymentUpdate(new, old)`.
pub fn validate_update(new: &UnitedDeployment, old: &UnitedDeployment, gates: &FeatureGates) -> Vec<FieldError> {
    let mut errs = validate(new, gates);
    errs.extend(validate_update_rules(new, old));
    errs
}

/// kruise `ValidateUnitedDeploymentUpdate`.
pub fn validate_update_rules(new: &UnitedDeployment, old: &UnitedDeployment) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, "metadata");
    errs.extend(validate_template_update(&new.spec.template, &old.spec.template));
    errs.extend(validate_topology_update(&new.spec.topology, &old.spec.topology));
    if let Some(r) = new.spec.replicas {
        errs.extend(validate_nonnegative(i64::from(r), "spec.replicas"));
    }
    errs
}

/// kruise `validateUnitedDeploymentSpec(spec, "spec")`.
pub fn validate_spec(spec: &UnitedDeploymentSpec, gates: &FeatureGates) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(r) = spec.replicas {
        errs.extend(validate_nonnegative(i64::from(r), "spec.replicas"));
    }
    match &spec.selector {
        None => errs.push(FieldError::required("spec.selector", "")),
        Some(sel) => {
            errs.extend(validate_label_selector(sel, "spec.selector"));
            if is_empty(sel) {
                errs.push(FieldError::invalid("spec.selector", json(sel), "empty selector is invalid for statefulset"));
            }
        }
    }
    let t = &spec.template;
    if should_reserve_unschedulable_pods(&spec.topology.schedule_strategy)
        && (t.advanced_stateful_set_template.is_some() || t.stateful_set_template.is_some())
    {
        errs.push(FieldError::invalid(
            "spec.topology.scheduleStrategy",
            json(&spec.topology.schedule_strategy),
            "only stateless workloads (Deployment and CloneSet) are supported by reserved rescheduling",
        ));
    }
    match Selector::from_optional(spec.selector.as_ref()) {
        Err(_) => errs.push(FieldError::invalid("spec.selector", json(&spec.selector), "")),
        Ok(sel) => errs.extend(validate_subset_template(t, &sel, gates)),
    }
    let subsets_path = "spec.topology.subsets";
    errs.extend(validate_subset_replicas(spec.replicas, &spec.topology.subsets, subsets_path));
    let mut names: HashSet<&str> = HashSet::new();
    for (i, subset) in spec.topology.subsets.iter().enumerate() {
        let path = index(subsets_path, i);
        let name_path = child(&path, "name");
        if subset.name.is_empty() {
            errs.push(FieldError::required(&name_path, ""));
        }
        if names.contains(subset.name.as_str()) {
            errs.push(FieldError::invalid(
                &name_path,
                subset.name.as_str(),
                format!("duplicated subset name {}", subset.name),
            ));
        }
        names.insert(subset.name.as_str());
        let dns = is_dns1123_label(&subset.name);
        if !dns.is_empty() {
            errs.push(FieldError::invalid(
                &name_path,
                subset.name.as_str(),
                format!("invalid subset name {}", dns.join(", ")),
            ));
        }
        errs.extend(validate_node_selector_term(&subset.node_selector_term, &child(&path, "nodeSelectorTerm")));
        errs.extend(validate_tolerations(&subset.tolerations, &child(&path, "tolerations")));
        if subset.replicas.is_some() && is_adaptive(&spec.topology.schedule_strategy) {
            errs.push(FieldError::forbidden(
                &child(&path, "replicas"),
                "specify replicas use minReplicas/maxReplicas to enable adaptive strategy",
            ));
        }
    }
    if let Some(manual) = &spec.update_strategy.manual_update {
        for subset in manual.partitions.keys() {
            if !names.contains(subset.as_str()) {
                errs.push(FieldError::invalid(
                    "spec.updateStrategy.partitions",
                    json(&manual.partitions),
                    format!("subset {subset} does not exist"),
                ));
            }
        }
    }
    errs
}

/// kruise `validateSubsetReplicas(spec.replicas, subsets, path)`.
pub fn validate_subset_replicas(expected: Option<i32>, subsets: &[Subset], path: &str) -> Vec<FieldError> {
    let expected = expected.unwrap_or(-1);
    let mut errs = Vec::new();
    let (mut sum, mut sum_min, mut sum_max) = (0i64, 0i64, 0i64);
    let (mut count_replicas, mut count_max) = (0usize, 0usize);
    let (mut has_replicas, mut has_capacity) = (false, false);
    let max_value = |s: &Subset| json(&s.max_replicas);
    for (i, subset) in subsets.iter().enumerate() {
        let p = index(path, i);
        let mut replicas = 0;
        if let Some(r) = &subset.replicas {
            count_replicas += 1;
            has_replicas = true;
            match parse_subset_replicas(expected, r) {
                Ok(v) => replicas = v,
                Err(e) => errs.push(FieldError::invalid(&child(&p, "replicas"), json(r), e)),
            }
        }
        sum += i64::from(replicas);
        let mut min = 0;
        if let Some(r) = &subset.min_replicas {
            has_capacity = true;
            match parse_subset_replicas(expected, r) {
                Ok(v) => min = v,
                Err(e) => errs.push(FieldError::invalid(&child(&p, "minReplicas"), max_value(subset), e)),
            }
        }
        sum_min += i64::from(min);
        let mut max = 1_000_000;
        if let Some(r) = &subset.max_replicas {
            count_max += 1;
            has_capacity = true;
            match parse_subset_replicas(expected, r) {
                Ok(v) => max = v,
                Err(e) => {
                    max = 0;
                    errs.push(FieldError::invalid(&child(&p, "minReplicas"), max_value(subset), e));
                }
            }
        }
        sum_max += i64::from(max);
        if min > max {
            errs.push(FieldError::invalid(
                &child(&p, "minReplicas"),
                max_value(subset),
                format!("subset[{i}].minReplicas must be more than or equal to maxReplicas"),
            ));
        }
    }
    if has_replicas && has_capacity {
        errs.push(FieldError::invalid(
            path,
            json(subsets),
            "subset.Replicas and subset.MinReplicas/subset.MaxReplicas are mutually exclusive in a UnitedDeployment",
        ));
        return errs;
    }
    if has_capacity {
        if expected == -1 {
            errs.push(FieldError::invalid(
                path,
                expected,
                "spec.replicas must be not empty if you set subset.minReplicas/maxReplicas",
            ));
        }
        if count_max >= subsets.len() {
            errs.push(FieldError::invalid(path, count_max as i64, "at least one subset.maxReplicas must be empty"));
        }
        if sum_min > sum_max {
            errs.push(FieldError::invalid(
                path,
                sum_min,
                "sum of indicated subset.minReplicas should not be greater than sum of indicated subset.maxReplicas",
            ));
        }
    } else if expected != -1 {
        if sum > i64::from(expected) {
            errs.push(FieldError::invalid(
                path,
                sum,
                format!("sum of indicated subset replicas {sum} should not be greater than UnitedDeployment replicas {expected}"),
            ));
        }
        if count_replicas > 0 && count_replicas == subsets.len() && sum != i64::from(expected) {
            errs.push(FieldError::invalid(
                path,
                sum,
                format!(
                    "if replicas of all subsets are provided, the sum of indicated subset replicas {sum} should equal UnitedDeployment replicas {expected}"
                ),
            ));
        }
    } else if count_replicas != subsets.len() {
        errs.push(FieldError::invalid(
            path,
            sum,
            "if UnitedDeployment replicas is not provided, replicas of all subsets should be provided",
        ));
    }
    errs
}

fn labels_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> BTreeMap<String, String> {
    meta.labels.clone().unwrap_or_default()
}

fn labels_value(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Value {
    meta.labels.as_ref().map_or(Value::Null, json)
}

/// kruise `validateSubsetTemplate(template, selector, "spec.template")`.
fn validate_subset_template(t: &SubsetTemplate, sel: &Selector, gates: &FeatureGates) -> Vec<FieldError> {
    let path = "spec.template";
    let mut errs = Vec::new();
    let count = usize::from(t.stateful_set_template.is_some())
        + usize::from(t.advanced_stateful_set_template.is_some())
        + usize::from(t.clone_set_template.is_some())
        + usize::from(t.deployment_template.is_some());
    if count < 1 {
        errs.push(FieldError::required(path, format!("should provide one of {ONE_OF}")));
    } else if count > 1 {
        errs.push(FieldError::invalid(path, json(t), format!("should provide only one of {ONE_OF}")));
    }
    if let Some(sts) = &t.stateful_set_template {
        if !sel.matches(&labels_of(&sts.metadata)) {
            errs.push(FieldError::invalid(
                "spec.template.statefulSetTemplate.metadata.labels",
                labels_value(&sts.metadata),
                LABELS_MISMATCH,
            ));
        }
        errs.extend(validate_statefulset_template(sts));
        let template = normalized_template(&sts.spec.template, gates);
        errs.extend(template_for_statefulset(&template, sel, "spec.template.statefulSetTemplate.spec.template"));
    } else if let Some(asts) = &t.advanced_stateful_set_template {
        if !sel.matches(&labels_of(&asts.metadata)) {
            errs.push(FieldError::invalid(
                "spec.template.statefulSetTemplate.metadata.labels",
                labels_value(&asts.metadata),
                LABELS_MISMATCH,
            ));
        }
        errs.extend(validate_advanced_statefulset_template(asts));
        let template = normalized_template(&asts.spec.template, gates);
        errs.extend(template_for_statefulset(
            &template,
            sel,
            "spec.template.advancedStatefulSetTemplate.spec.template",
        ));
    } else if let Some(d) = &t.deployment_template {
        if !sel.matches(&labels_of(&d.metadata)) {
            errs.push(FieldError::invalid(
                "spec.template.deploymentTemplate.metadata.labels",
                labels_value(&d.metadata),
                LABELS_MISMATCH,
            ));
        }
        errs.extend(validate_deployment_template(d));
        let template = normalized_template(&d.spec.template, gates);
        errs.extend(template_for_replicaset(&template, sel, "spec.template.deploymentTemplate.spec.template"));
    }
    errs
}

/// The selector check both of Kubernetes' template validations start with.
fn template_labels_match(template: &PodTemplateSpec, sel: &Selector, path: &str) -> Vec<FieldError> {
    let labels = template.metadata.as_ref().and_then(|m| m.labels.clone());
    if !sel.is_empty() && !sel.matches(&labels.clone().unwrap_or_default()) {
        let value = labels.as_ref().map_or(Value::Null, json);
        return vec![FieldError::invalid(&child(path, "metadata.labels"), value, LABELS_MISMATCH)];
    }
    Vec::new()
}

/// Kubernetes' `ValidatePodTemplateSpecForStatefulSet`: the selector, labels and annotations
/// (the pod spec itself is not validated there).
fn template_for_statefulset(template: &PodTemplateSpec, sel: &Selector, path: &str) -> Vec<FieldError> {
    let mut errs = template_labels_match(template, sel, path);
    errs.extend(validate_template_metadata(template, path));
    errs
}

/// Kubernetes' `ValidatePodTemplateSpecForReplicaSet` with replicas 0: the selector, the whole
/// template, `restartPolicy` Always and no `activeDeadlineSeconds`.
fn template_for_replicaset(template: &PodTemplateSpec, sel: &Selector, path: &str) -> Vec<FieldError> {
    let mut errs = template_labels_match(template, sel, path);
    errs.extend(validate_pod_template_spec(template, &[], path));
    let spec = template.spec.clone().unwrap_or_default();
    let restart = spec.restart_policy.unwrap_or_default();
    if restart != "Always" {
        errs.push(FieldError::not_supported(&child(path, "spec.restartPolicy"), restart, &["Always"]));
    }
    if spec.active_deadline_seconds.is_some() {
        errs.push(FieldError::forbidden(
            &child(path, "spec.activeDeadlineSeconds"),
            "activeDeadlineSeconds in ReplicaSet is not Supported",
        ));
    }
    errs
}

/// kruise `validateStatefulSet`.
fn validate_statefulset_template(sts: &StatefulSetTemplateSpec) -> Vec<FieldError> {
    let path = "spec.template.statefulSetTemplate.spec";
    let mut errs = Vec::new();
    if let Some(r) = sts.spec.replicas {
        errs.push(FieldError::invalid(&child(path, "replicas"), r, "replicas in statefulSetTemplate will not be used"));
    }
    if let Some(strategy) = &sts.spec.update_strategy
        && strategy.type_.as_deref() == Some(ROLLING_UPDATE)
        && let Some(p) = strategy.rolling_update.as_ref().and_then(|r| r.partition)
    {
        errs.push(FieldError::invalid(
            &child(path, "updateStrategy.rollingUpdate.partition"),
            p,
            "partition in statefulSetTemplate will not be used",
        ));
    }
    errs
}

/// kruise `validateAdvancedStatefulSet`.
fn validate_advanced_statefulset_template(sts: &AdvancedStatefulSetTemplateSpec) -> Vec<FieldError> {
    let path = "spec.template.advancedStatefulSetTemplate.spec";
    let mut errs = Vec::new();
    if let Some(r) = sts.spec.replicas {
        errs.push(FieldError::invalid(
            &child(path, "replicas"),
            r,
            "replicas in advancedStatefulSetTemplate will not be used",
        ));
    }
    let strategy = &sts.spec.update_strategy;
    if strategy.type_ == ROLLING_UPDATE
        && let Some(p) = strategy.rolling_update.as_ref().and_then(|r| r.partition)
    {
        errs.push(FieldError::invalid(
            &child(path, "updateStrategy.rollingUpdate.partition"),
            p,
            "partition in advancedStatefulSetTemplate will not be used",
        ));
    }
    errs
}

/// kruise `validateDeployment`.
fn validate_deployment_template(d: &DeploymentTemplateSpec) -> Vec<FieldError> {
    match d.spec.replicas {
        Some(r) => vec![FieldError::invalid(
            "spec.template.deploymentTemplate.spec.replicas",
            r,
            "replicas in deploymentTemplate will not be used",
        )],
        None => Vec::new(),
    }
}

/// kruise `validateSubsetTemplateUpdate`.
fn validate_template_update(new: &SubsetTemplate, old: &SubsetTemplate) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let (Some(n), Some(o)) = (&new.stateful_set_template, &old.stateful_set_template) {
        let path = "spec.template.statefulSetTemplate.spec";
        let mut masked = n.spec.clone();
        masked.replicas = o.spec.replicas;
        masked.template = o.spec.template.clone();
        masked.update_strategy = o.spec.update_strategy.clone();
        if !semantic_eq(&json(&masked), &json(&o.spec)) {
            errs.push(FieldError::forbidden(
                path,
                "updates to statefulsetTemplate spec for fields other than 'template', and 'updateStrategy' are forbidden",
            ));
        }
        if let Some(r) = n.spec.replicas {
            errs.extend(validate_nonnegative(i64::from(r), &child(path, "replicas")));
        }
    } else if let (Some(n), Some(o)) = (&new.advanced_stateful_set_template, &old.advanced_stateful_set_template) {
        let path = "spec.template.advancedStatefulSetTemplate.spec";
        let mut masked = n.spec.clone();
        masked.replicas = o.spec.replicas;
        masked.template = o.spec.template.clone();
        masked.update_strategy = o.spec.update_strategy.clone();
        if !semantic_eq(&json(&masked), &json(&o.spec)) {
            errs.push(FieldError::forbidden(
                path,
                "updates to advancedStatefulsetTemplate spec for fields other than 'template', and 'updateStrategy' are forbidden",
            ));
        }
        if let Some(r) = n.spec.replicas {
            errs.extend(validate_nonnegative(i64::from(r), &child(path, "replicas")));
        }
    } else if let (Some(n), Some(_)) = (&new.deployment_template, &old.deployment_template)
        && let Some(r) = n.spec.replicas
    {
        errs.extend(validate_nonnegative(i64::from(r), "spec.template.deploymentTemplate.spec.replicas"));
    }
    errs
}

/// kruise `validateUnitedDeploymentTopology`: an existing subset keeps its `nodeSelectorTerm`
/// and `tolerations`.
fn validate_topology_update(new: &Topology, old: &Topology) -> Vec<FieldError> {
    let olds: BTreeMap<&str, &Subset> = old.subsets.iter().map(|s| (s.name.as_str(), s)).collect();
    let mut errs = Vec::new();
    for (i, s) in new.subsets.iter().enumerate() {
        let Some(o) = olds.get(s.name.as_str()) else { continue };
        let path = index("spec.topology.subsets", i);
        if !semantic_eq(&json(&o.node_selector_term), &json(&s.node_selector_term)) {
            errs.push(FieldError::forbidden(&child(&path, "nodeSelectorTerm"), "may not be changed in an update"));
        }
        if !semantic_eq(&json(&o.tolerations), &json(&s.tolerations)) {
            errs.push(FieldError::forbidden(&child(&path, "tolerations"), "may not be changed in an update"));
        }
    }
    // kruise checks the tolerations a second time.
    for (i, s) in new.subsets.iter().enumerate() {
        let Some(o) = olds.get(s.name.as_str()) else { continue };
        if !semantic_eq(&json(&o.tolerations), &json(&s.tolerations)) {
            let path = index("spec.topology.subsets", i);
            errs.push(FieldError::forbidden(&child(&path, "tolerations"), "may not be changed in an update"));
        }
    }
    errs
}

/// Kubernetes' `ValidateNodeSelectorTerm`.
pub fn validate_node_selector_term(term: &NodeSelectorTerm, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (j, req) in term.match_expressions.iter().flatten().enumerate() {
        errs.extend(node_selector_requirement(req, &index(&child(path, "matchExpressions"), j)));
    }
    for (j, req) in term.match_fields.iter().flatten().enumerate() {
        errs.extend(node_field_selector_requirement(req, &index(&child(path, "matchFields"), j)));
    }
    errs
}

fn values_len(req: &NodeSelectorRequirement) -> usize {
    req.values.as_ref().map_or(0, Vec::len)
}

/// Kubernetes' `ValidateNodeSelectorRequirement`.
fn node_selector_requirement(req: &NodeSelectorRequirement, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let values = child(path, "values");
    match req.operator.as_str() {
        "In" | "NotIn" if values_len(req) == 0 => {
            errs.push(FieldError::required(&values, "must be specified when `operator` is 'In' or 'NotIn'"));
        }
        "Exists" | "DoesNotExist" if values_len(req) > 0 => errs
            .push(FieldError::forbidden(&values, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")),
        "Gt" | "Lt" if values_len(req) != 1 => {
            errs.push(FieldError::required(&values, "must be specified single value when `operator` is 'Lt' or 'Gt'"));
        }
        "In" | "NotIn" | "Exists" | "DoesNotExist" | "Gt" | "Lt" => {}
        other => errs.push(FieldError::invalid(&child(path, "operator"), other, "not a valid selector operator")),
    }
    errs.extend(validate_label_name(&req.key, &child(path, "key")));
    errs
}

/// Kubernetes' `ValidateNodeFieldSelectorRequirement`: only `metadata.name`, with one value.
fn node_field_selector_requirement(req: &NodeSelectorRequirement, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match req.operator.as_str() {
        "In" | "NotIn" => {
            if values_len(req) != 1 {
                errs.push(FieldError::required(
                    &child(path, "values"),
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                ));
            }
        }
        other => errs.push(FieldError::invalid(&child(path, "operator"), other, "not a valid selector operator")),
    }
    if req.key != "metadata.name" {
        errs.push(FieldError::invalid(&child(path, "key"), req.key.as_str(), "not a valid field selector key"));
    } else {
        for (i, v) in req.values.iter().flatten().enumerate() {
            for msg in is_dns1123_subdomain(v) {
                errs.push(FieldError::invalid(&index(&child(path, "values"), i), v.as_str(), msg));
            }
        }
    }
    errs
}

/// Kubernetes' `ValidateTolerations`.
pub fn validate_tolerations(tolerations: &[Toleration], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, t) in tolerations.iter().enumerate() {
        let p = index(path, i);
        let key = t.key.as_deref().unwrap_or("");
        let operator = t.operator.as_deref().unwrap_or("");
        let effect = t.effect.as_deref().unwrap_or("");
        let value = t.value.as_deref().unwrap_or("");
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
                let problems = is_valid_label_value(value);
                if !problems.is_empty() {
                    errs.push(FieldError::invalid(&child(&p, "operator"), value, problems.join(";")));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(FieldError::invalid(
                        &child(&p, "operator"),
                        json(t),
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
mod tests;
