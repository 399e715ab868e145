//! AdvancedCronJob `apps.kruise.io/v1beta1` validation, as kruise HEAD validates it
//! (`pkg/webhook/advancedcronjob/validating/advancedcronjob_create_update_handler.go`, which
//! decodes both versions into v1beta1): what v1alpha1 checks ([`super::advancedcronjob`]), with
//! the third template kind, `imageListPullJobTemplate`, counted among the templates (kruise HEAD's
//! messages name it) and checked by `validateImageListPullJobTemplateSpec`: only with
//! `concurrencyPolicy` Replace or Forbid (reported at `spec.spec.concurrencyPolicy`, kruise's
//! doubled path, kept), the node selector names XOR a label selector, no duplicate names, a valid
//! podSelector and not with a selector, 1 to 255 distinct images docker/distribution v2.8 parses,
//! and `completionPolicy` Always (a deadline of at most a day, not shorter than the pull timeout,
//! no TTL). That check stops at its first error, as kruise's. On UPDATE the ImageListPullJob
//! template may change too, when the old object had one.

use std::collections::HashSet;

use super::advancedcronjob::{validate_name, validate_spec_with};
use super::json;
use super::meta::{validate_object_meta_update, validate_object_meta_with};
use crate::apis::advancedcronjob::v1beta1::{AdvancedCronJob, AdvancedCronJobSpec, ImageListPullJobTemplateSpec};
use crate::apis::advancedcronjob::{self as v1alpha1, FORBID, REPLACE};
use crate::compat::field::{FieldError, child};
use crate::compat::image::parse_image_legacy;
use crate::compat::normalize::semantic_eq;
use crate::compat::selector::{Selector, is_empty};

/// kruise's `MaxActiveDeadLineSeconds`: a day.
pub const MAX_ACTIVE_DEADLINE_SECONDS: i64 = 3600 * 24;

/// kruise HEAD's update rule message.
pub const SPEC_UPDATE_FORBIDDEN: &str = "updates to advancedcronjob spec for fields other than 'imageListPullJobTemplate', 'schedule', 'concurrencyPolicy', 'successfulJobsHistoryLimit', 'failedJobsHistoryLimit', 'startingDeadlineSeconds', 'timeZone' and 'paused' are forbidden";

const NO_TEMPLATE: &str = "spec must have one template, either JobTemplate or BroadcastJobTemplate or ImageListPullJobTemplate should be provided";
const MANY_TEMPLATES: &str = "spec can have only one template, either JobTemplate or BroadcastJobTemplate or ImageListPullJobTemplate should be provided";

/// The v1beta1 spec without its ImageListPullJob template: the v1alpha1 spec the shared checks read.
pub fn alpha_view(spec: &AdvancedCronJobSpec) -> v1alpha1::AdvancedCronJobSpec {
    v1alpha1::AdvancedCronJobSpec {
        schedule: spec.schedule.clone(),
        time_zone: spec.time_zone.clone(),
        starting_deadline_seconds: spec.starting_deadline_seconds,
        concurrency_policy: spec.concurrency_policy.clone(),
        paused: spec.paused,
        successful_jobs_history_limit: spec.successful_jobs_history_limit,
        failed_jobs_history_limit: spec.failed_jobs_history_limit,
        template: v1alpha1::CronJobTemplate {
            job_template: spec.template.job_template.clone(),
            broadcast_job_template: spec.template.broadcast_job_template.clone(),
        },
    }
}

/// CREATE.
pub fn validate_create(acj: &AdvancedCronJob) -> Vec<FieldError> {
    let mut errs = validate_object_meta_with(&acj.metadata, true, validate_name, "metadata");
    errs.extend(validate_spec(&acj.spec, "spec"));
    errs
}

/// UPDATE: `validateAdvancedCronJobUpdate`.
pub fn validate_update(new: &AdvancedCronJob, old: &AdvancedCronJob) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, "metadata");
    errs.extend(validate_spec(&new.spec, "spec"));
    let mut spec = new.spec.clone();
    spec.schedule.clone_from(&old.spec.schedule);
    spec.concurrency_policy.clone_from(&old.spec.concurrency_policy);
    spec.successful_jobs_history_limit = old.spec.successful_jobs_history_limit;
    spec.failed_jobs_history_limit = old.spec.failed_jobs_history_limit;
    spec.starting_deadline_seconds = old.spec.starting_deadline_seconds;
    spec.paused = old.spec.paused;
    spec.time_zone.clone_from(&old.spec.time_zone);
    if old.spec.template.image_list_pull_job_template.is_some() {
        spec.template.image_list_pull_job_template.clone_from(&old.spec.template.image_list_pull_job_template);
    }
    if !semantic_eq(&json(&spec), &json(&old.spec)) {
        errs.push(FieldError::forbidden("spec", SPEC_UPDATE_FORBIDDEN));
    }
    errs
}

/// `validateAdvancedCronJobSpec` at `path`.
pub fn validate_spec(spec: &AdvancedCronJobSpec, path: &str) -> Vec<FieldError> {
    let alpha = alpha_view(spec);
    let ilpj = spec.template.image_list_pull_job_template.as_ref();
    validate_spec_with(
        &alpha,
        path,
        |template_errs| {
            let Some(t) = ilpj else { return 0 };
            if spec.concurrency_policy != REPLACE && spec.concurrency_policy != FORBID {
                let p = child(&child(path, "spec"), "concurrencyPolicy");
                template_errs.push(FieldError::invalid(
                    &p,
                    spec.concurrency_policy.as_str(),
                    format!(
                        "concurrencyPolicy should be Replace or Forbid, but current value is: {}",
                        spec.concurrency_policy
                    ),
                ));
            }
            let p = child(&child(path, "template"), "imageListPullJobTemplate");
            template_errs.extend(validate_image_list_pull_job_template(t, &p));
            1
        },
        [NO_TEMPLATE, MANY_TEMPLATES],
    )
}

/// `validateImageListPullJobTemplateSpec` at `path`: its first error, if any.
pub fn validate_image_list_pull_job_template(t: &ImageListPullJobTemplateSpec, path: &str) -> Option<FieldError> {
    let spec_path = child(path, "spec");
    let s = &t.spec.template;
    if let Some(sel) = &s.selector {
        let sel_path = child(&spec_path, "selector");
        // kruise tests `MatchLabels != nil || MatchExpressions != nil`.
        let labelled = sel.label_selector.match_labels.is_some() || sel.label_selector.match_expressions.is_some();
        if labelled {
            if !sel.names.is_empty() {
                return Some(FieldError::invalid(
                    &sel_path,
                    json(sel),
                    "can not set both names and labelSelector in this spec.selector",
                ));
            }
            if let Err(e) = Selector::from_label_selector(&sel.label_selector) {
                return Some(FieldError::invalid(
                    &child(&sel_path, "labelSelector"),
                    json(&sel.label_selector),
                    format!("invalid selector: {e}"),
                ));
            }
        }
        let names: HashSet<&str> = sel.names.iter().map(String::as_str).collect();
        if names.len() != sel.names.len() {
            return Some(FieldError::invalid(
                &child(&sel_path, "names"),
                json(&sel.names),
                "duplicated name in selector names",
            ));
        }
    }
    if let Some(pod_selector) = &s.pod_selector {
        if s.selector.is_some() {
            return Some(FieldError::invalid(&spec_path, json(&t.spec), "can not set both selector and podSelector"));
        }
        if !is_empty(pod_selector)
            && let Err(e) = Selector::from_label_selector(pod_selector)
        {
            return Some(FieldError::invalid(
                &child(&child(&spec_path, "podSelector"), "labelSelector"),
                json(pod_selector),
                format!("invalid selector: {e}"),
            ));
        }
    }
    let images = &t.spec.images;
    let images_path = child(&spec_path, "images");
    if images.is_empty() {
        return Some(FieldError::invalid(&images_path, json(images), "image can not be empty"));
    }
    if images.len() > 255 {
        return Some(FieldError::invalid(&images_path, json(images), "the maximum number of images cannot > 255"));
    }
    let distinct: HashSet<&str> = images.iter().map(String::as_str).collect();
    if distinct.len() != images.len() {
        return Some(FieldError::invalid(&images_path, json(images), "images cannot have duplicate values"));
    }
    for image in images {
        if let Err(e) = parse_image_legacy(image) {
            return Some(FieldError::invalid(&images_path, json(images), format!("invalid image {image}: {e}")));
        }
    }
    let policy = &s.completion_policy;
    let policy_path = child(&spec_path, "completionPolicy");
    if policy.type_ != "Always" {
        return Some(FieldError::invalid(
            &child(&policy_path, "type"),
            policy.type_.as_str(),
            format!("completionPolicy should be Always, but current value is: {}", policy.type_),
        ));
    }
    let deadline_path = child(&policy_path, "activeDeadlineSeconds");
    if let Some(d) = policy.active_deadline_seconds {
        if d > MAX_ACTIVE_DEADLINE_SECONDS {
            return Some(FieldError::invalid(
                &deadline_path,
                d,
                format!("activeDeadlineSeconds must be less than {MAX_ACTIVE_DEADLINE_SECONDS}, current value is: {d}"),
            ));
        }
        if let Some(timeout) = s.pull_policy.as_ref().and_then(|p| p.timeout_seconds)
            && i64::from(timeout) > d
        {
            return Some(FieldError::invalid(
                &deadline_path,
                d,
                format!(
                    "completionPolicy.activeDeadlineSeconds must be greater than pullPolicy.timeoutSeconds({timeout})"
                ),
            ));
        }
    }
    if let Some(ttl) = policy.ttl_seconds_after_finished {
        return Some(FieldError::invalid(
            &child(&policy_path, "ttlSecondsAfterFinished"),
            ttl,
            "ttlSecondsAfterFinished is not supported in advancedCronJob",
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::compat::field::aggregate;
    use serde_json::{Value, json};

    fn acj(template: Value, concurrency: &str) -> AdvancedCronJob {
        serde_json::from_value(json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "AdvancedCronJob",
            "metadata": {"name": "warm", "namespace": "ns"},
            "spec": {"schedule": "*/5 * * * *", "concurrencyPolicy": concurrency, "template": template}}))
        .unwrap()
    }

    fn ilpj(spec: Value) -> Value {
        json!({"imageListPullJobTemplate": {"spec": spec}})
    }

    fn job() -> Value {
        json!({"jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox:1.36", "imagePullPolicy": "IfNotPresent",
                            "terminationMessagePolicy": "File"}], "dnsPolicy": "ClusterFirst"}}}}})
    }

    fn first(acj: &AdvancedCronJob) -> String {
        aggregate(&validate_create(acj))
    }

    /// kruise HEAD's `TestValidateImageListPullJobTemplate`-style rows: (what, spec, concurrency,
    /// the error, empty when valid).
    #[test]
    fn image_list_pull_job_templates() {
        let always = json!({"type": "Always"});
        let rows: Vec<(&str, Value, &str, &str)> = vec![
            ("valid", json!({"images": ["nginx:1.25", "busybox"], "completionPolicy": always}), "Replace", ""),
            ("valid, Forbid", json!({"images": ["nginx:1.25"], "completionPolicy": always}), "Forbid", ""),
            (
                "Allow is refused",
                json!({"images": ["nginx:1.25"], "completionPolicy": always}),
                "Allow",
                "spec.spec.concurrencyPolicy: Invalid value: \"Allow\": concurrencyPolicy should be Replace or Forbid, but current value is: Allow",
            ),
            (
                "no images",
                json!({"images": [], "completionPolicy": always}),
                "Replace",
                "spec.template.imageListPullJobTemplate.spec.images: Invalid value: []: image can not be empty",
            ),
            (
                "duplicate images",
                json!({"images": ["a:1", "a:1"], "completionPolicy": always}),
                "Replace",
                "spec.template.imageListPullJobTemplate.spec.images: Invalid value: [\"a:1\",\"a:1\"]: images cannot have duplicate values",
            ),
            (
                "bad image",
                json!({"images": ["UPPER:1"], "completionPolicy": always}),
                "Replace",
                "invalid image UPPER:1: ",
            ),
            (
                "names and labels",
                json!({"images": ["a:1"], "completionPolicy": always,
                       "selector": {"names": ["n1"], "matchLabels": {"a": "b"}}}),
                "Replace",
                "spec.template.imageListPullJobTemplate.spec.selector: Invalid value: ",
            ),
            (
                "duplicate names",
                json!({"images": ["a:1"], "completionPolicy": always, "selector": {"names": ["n1", "n1"]}}),
                "Replace",
                "spec.template.imageListPullJobTemplate.spec.selector.names: Invalid value: [\"n1\",\"n1\"]: duplicated name in selector names",
            ),
            (
                "selector and podSelector",
                json!({"images": ["a:1"], "completionPolicy": always, "selector": {"names": ["n1"]},
                       "podSelector": {"matchLabels": {"a": "b"}}}),
                "Replace",
                "can not set both selector and podSelector",
            ),
            (
                "Never",
                json!({"images": ["a:1"], "completionPolicy": {"type": "Never"}}),
                "Replace",
                "spec.template.imageListPullJobTemplate.spec.completionPolicy.type: Invalid value: \"Never\": completionPolicy should be Always, but current value is: Never",
            ),
            (
                "deadline above a day",
                json!({"images": ["a:1"], "completionPolicy": {"type": "Always", "activeDeadlineSeconds": 86401}}),
                "Replace",
                "activeDeadlineSeconds must be less than 86400, current value is: 86401",
            ),
            (
                "deadline under the pull timeout",
                json!({"images": ["a:1"], "completionPolicy": {"type": "Always", "activeDeadlineSeconds": 300},
                       "pullPolicy": {"timeoutSeconds": 600}}),
                "Replace",
                "completionPolicy.activeDeadlineSeconds must be greater than pullPolicy.timeoutSeconds(600)",
            ),
            (
                "ttl",
                json!({"images": ["a:1"], "completionPolicy": {"type": "Always", "ttlSecondsAfterFinished": 10}}),
                "Replace",
                "spec.template.imageListPullJobTemplate.spec.completionPolicy.ttlSecondsAfterFinished: Invalid value: 10: ttlSecondsAfterFinished is not supported in advancedCronJob",
            ),
        ];
        for (what, spec, concurrency, want) in rows {
            let got = first(&acj(ilpj(spec), concurrency));
            if want.is_empty() {
                assert_eq!(got, "", "{what}");
            } else {
                assert!(got.contains(want), "{what}: {got}");
            }
        }
    }

    #[test]
    fn template_count_messages_name_three_kinds() {
        let got = first(&acj(json!({}), "Allow"));
        assert_eq!(got, format!("spec.template: Forbidden: {NO_TEMPLATE}"));
        let mut both = job();
        both["imageListPullJobTemplate"] = json!({"spec": {"images": ["a:1"], "completionPolicy": {"type": "Always"}}});
        let got = first(&acj(both, "Replace"));
        assert!(got.ends_with(&format!("spec.template: Forbidden: {MANY_TEMPLATES}")), "{got}");
        assert_eq!(first(&acj(job(), "Allow")), "", "a Job template as in v1alpha1");
    }

    #[test]
    fn updates_may_change_the_image_list_pull_job_template() {
        let old = acj(ilpj(json!({"images": ["a:1"], "completionPolicy": {"type": "Always"}})), "Replace");
        let mut new = acj(ilpj(json!({"images": ["a:1", "b:2"], "completionPolicy": {"type": "Always"}})), "Forbid");
        new.spec.schedule = "0 * * * *".into();
        assert_eq!(aggregate(&validate_update(&new, &old)), "");
        // A Job template may not change, nor may one kind of template become another.
        let job_old = acj(job(), "Allow");
        let mut job_new = job_old.clone();
        job_new.spec.template.job_template.as_mut().unwrap().spec.as_mut().unwrap().parallelism = Some(2);
        assert_eq!(
            aggregate(&validate_update(&job_new, &job_old)),
            format!("spec: Forbidden: {SPEC_UPDATE_FORBIDDEN}")
        );
        let got = aggregate(&validate_update(&old, &job_old));
        assert!(got.contains(SPEC_UPDATE_FORBIDDEN), "{got}");
    }
}
