//! AdvancedCronJob validation (kruise `pkg/webhook/advancedcronjob/validating`, v1.8.4):
//! metadata with kruise's own name rule (`^[a-zA-Z0-9\-]+$`, at most 63 characters); the
//! schedule parsed as `cron.ParseStandard` parses it ([`crate::compat::cron`]), not combined with
//! `timeZone` when it names a `TZ`; `timeZone` loadable and not `Local`; exactly one of the Job
//! and BroadcastJob templates, whose pod template is checked by `ValidatePodTemplateSpec` at
//! `spec.template` (kruise's path, not the template's own); history limits and
//! `startingDeadlineSeconds` not negative. On UPDATE only `schedule`, `concurrencyPolicy`, the
//! history limits, `startingDeadlineSeconds`, `timeZone` and `paused` may change.

use super::json;
use super::meta::{validate_object_meta_update, validate_object_meta_with};
use crate::apis::advancedcronjob::{AdvancedCronJob, AdvancedCronJobSpec};
use crate::compat::cron::{load_location, parse_standard};
use crate::compat::field::{FieldError, child};
use crate::compat::intstr::validate_nonnegative;
use crate::compat::names::{max_len_error, regex_error};
use crate::compat::normalize::semantic_eq;
use crate::compat::podspec::validate_pod_template_spec;

const NAME_MAX_LEN: usize = 63;
const NAME_MSG: &str = "AdvancedCronJob name must consist of alphanumeric characters or '-'";
const NAME_FMT: &str = r"^[a-zA-Z0-9\-]+$";

/// The update rule's message.
pub const SPEC_UPDATE_FORBIDDEN: &str = "updates to advancedcronjob spec for fields other than 'schedule', 'concurrencyPolicy', 'successfulJobsHistoryLimit', 'failedJobsHistoryLimit', 'startingDeadlineSeconds', 'timeZone' and 'paused' are forbidden";

/// `validateAdvancedCronJobName`.
pub fn validate_name(name: &str, _prefix: bool) -> Vec<String> {
    let mut errs = Vec::new();
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        errs.push(regex_error(NAME_MSG, NAME_FMT, &["example-com"]));
    }
    if name.len() > NAME_MAX_LEN {
        errs.push(max_len_error(NAME_MAX_LEN));
    }
    errs
}

/// CREATE: `validateAdvancedCronJob`.
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
    if !semantic_eq(&json(&spec), &json(&old.spec)) {
        errs.push(FieldError::forbidden("spec", SPEC_UPDATE_FORBIDDEN));
    }
    errs
}

const NO_TEMPLATE: &str = "spec must have one template, either JobTemplate or BroadcastJobTemplate should be provided";
const MANY_TEMPLATES: &str =
    "spec can have only one template, either JobTemplate or BroadcastJobTemplate should be provided";

/// `validateAdvancedCronJobSpec` at `path`.
pub fn validate_spec(spec: &AdvancedCronJobSpec, path: &str) -> Vec<FieldError> {
    validate_spec_with(spec, path, |_| 0, [NO_TEMPLATE, MANY_TEMPLATES])
}

/// `validateAdvancedCronJobSpec` with a third template kind: `third` checks it (pushing its
/// errors after the Job's and the BroadcastJob's) and says whether there is one; `messages` are the
/// no-template and too-many-templates details.
pub(crate) fn validate_spec_with(
    spec: &AdvancedCronJobSpec,
    path: &str,
    third: impl FnOnce(&mut Vec<FieldError>) -> usize,
    messages: [&str; 2],
) -> Vec<FieldError> {
    let mut errs = validate_schedule(spec, path);
    errs.extend(validate_templates(spec, path, third, messages));
    if let Some(s) = spec.starting_deadline_seconds {
        errs.extend(validate_nonnegative(s, &child(path, "startingDeadlineSeconds")));
    }
    if let Some(l) = spec.successful_jobs_history_limit {
        errs.extend(validate_nonnegative(i64::from(l), &child(path, "successfulJobsHistoryLimit")));
    }
    if let Some(l) = spec.failed_jobs_history_limit {
        errs.extend(validate_nonnegative(i64::from(l), &child(path, "failedJobsHistoryLimit")));
    }
    errs.extend(validate_time_zone(spec.time_zone.as_deref(), &child(path, "timeZone")));
    errs
}

fn validate_schedule(spec: &AdvancedCronJobSpec, path: &str) -> Vec<FieldError> {
    let p = child(path, "schedule");
    let mut errs = Vec::new();
    if spec.schedule.is_empty() {
        errs.push(FieldError::invalid(&p, "", "schedule cannot be empty, please provide valid cron schedule."));
    }
    if let Err(e) = parse_standard(&spec.schedule) {
        errs.push(FieldError::invalid(&p, spec.schedule.as_str(), e));
    }
    if spec.schedule.contains("TZ") && spec.time_zone.is_some() {
        errs.push(FieldError::invalid(
            &p,
            spec.schedule.as_str(),
            "cannot use both timeZone field and TZ or CRON_TZ in schedule",
        ));
    }
    errs
}

fn validate_time_zone(tz: Option<&str>, path: &str) -> Vec<FieldError> {
    let Some(tz) = tz else { return Vec::new() };
    if tz.is_empty() {
        return vec![FieldError::invalid(path, "", "timeZone must be nil or non-empty string")];
    }
    let mut errs = Vec::new();
    if tz.eq_ignore_ascii_case("Local") {
        errs.push(FieldError::invalid(
            path,
            tz,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    }
    if let Err(e) = load_location(tz) {
        errs.push(FieldError::invalid(path, tz, e));
    }
    errs
}

fn validate_templates(
    spec: &AdvancedCronJobSpec,
    path: &str,
    third: impl FnOnce(&mut Vec<FieldError>) -> usize,
    [none, many]: [&str; 2],
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let template_path = child(path, "template");
    let mut count = 0;
    if let Some(job) = &spec.template.job_template {
        count += 1;
        let pod = job.spec.as_ref().map(|s| s.template.clone()).unwrap_or_default();
        errs.extend(validate_pod_template_spec(&pod, &[], &template_path));
    }
    if let Some(b) = &spec.template.broadcast_job_template {
        count += 1;
        errs.extend(validate_pod_template_spec(&b.spec.template, &[], &template_path));
    }
    count += third(&mut errs);
    match count {
        0 => errs.push(FieldError::forbidden(&template_path, none)),
        1 => {}
        _ => errs.push(FieldError::forbidden(&template_path, many)),
    }
    errs
}

#[cfg(test)]
#[path = "advancedcronjob_tests.rs"]
mod tests;
