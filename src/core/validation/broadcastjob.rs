//! BroadcastJob validation, kruise's `pkg/webhook/broadcastjob/validating` (v1.8.4;
//! `validateBroadcastJob`, issue 33 item 1): the object metadata with BroadcastJob's own name
//! rule (`^[a-zA-Z0-9\-]+$`, at most 63 characters), `ttlSecondsAfterFinished` and
//! `activeDeadlineSeconds` only under `completionPolicy.type: Always`, `restartPolicy` Never or
//! OnFailure (checked after `SetDefaultPodSpec`, as kruise's template conversion defaults the
//! template first, so an empty one reads as Always), the controller's own pod labels not preset,
//! then `ValidatePodTemplateSpec`. The same rules on CREATE and UPDATE, both API versions (one
//! shape).

use k8s_openapi::api::core::v1::PodTemplateSpec;

use super::json;
use super::meta::validate_object_meta_with;
use super::template_update::normalized_template;
use crate::apis::broadcastjob::{BroadcastJob, BroadcastJobSpec};
use crate::compat::field::FieldError;
use crate::compat::names::{max_len_error, regex_error};
use crate::compat::podspec::validate_pod_template_spec;
use crate::core::defaults::broadcastjob::NEVER;
use crate::core::features::FeatureGates;

/// The pod label naming the job (kruise `JobNameLabelKey`).
pub const JOB_NAME_LABEL: &str = "broadcastjob-name";
/// The pod label carrying the job's uid (kruise `ControllerUIDLabelKey`).
pub const CONTROLLER_UID_LABEL: &str = "broadcastjob-controller-uid";

const NAME_MAX_LEN: usize = 63;
const NAME_MSG: &str = "BroadcastJob name must consist of alphanumeric characters or '-'";
const NAME_FMT: &str = r"^[a-zA-Z0-9\-]+$";

/// `validateBroadcastJobName`: alphanumerics and '-', at most 63 characters.
pub fn validate_name(name: &str, _prefix: bool) -> Vec<String> {
    let mut errs = Vec::new();
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        errs.push(regex_error(NAME_MSG, NAME_FMT, &["example-com"]));
    }
    if name.len() > NAME_MAX_LEN {
        errs.push(max_len_error(NAME_MAX_LEN));
    }
    errs
}

/// `validateBroadcastJob`: metadata, then the spec.
pub fn validate(job: &BroadcastJob, gates: &FeatureGates) -> Vec<FieldError> {
    let mut errs = validate_object_meta_with(&job.metadata, true, validate_name, "metadata");
    errs.extend(validate_spec(&job.spec, gates));
    errs
}

/// `validateBroadcastJobSpec(spec, "spec")`.
pub fn validate_spec(spec: &BroadcastJobSpec, gates: &FeatureGates) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let policy = &spec.completion_policy;
    if policy.type_ == NEVER {
        if let Some(ttl) = policy.ttl_seconds_after_finished {
            errs.push(FieldError::invalid(
                "spec.completionPolicy.ttlSecondsAfterFinished",
                ttl,
                "ttlSecondsAfterFinished can just work with Always CompletionPolicyType",
            ));
        }
        if let Some(deadline) = policy.active_deadline_seconds {
            errs.push(FieldError::invalid(
                "spec.completionPolicy.activeDeadlineSeconds",
                deadline,
                "activeDeadlineSeconds can just work with Always CompletionPolicyType",
            ));
        }
    }
    // ConvertPodTemplateSpec defaults the template before anything reads it.
    let template: PodTemplateSpec = normalized_template(&spec.template, gates);
    let restart = template.spec.as_ref().and_then(|s| s.restart_policy.clone()).unwrap_or_default();
    if restart != "OnFailure" && restart != "Never" {
        errs.push(FieldError::invalid(
            "spec.template.spec.restartPolicy",
            restart,
            "pod restartPolicy can only be Never or OnFailure",
        ));
    }
    if let Some(labels) = &spec.template.metadata.as_ref().and_then(|m| m.labels.clone()) {
        let preset = |k: &str| labels.get(k).is_some_and(|v| !v.is_empty());
        if preset(JOB_NAME_LABEL) || preset(CONTROLLER_UID_LABEL) {
            errs.push(FieldError::invalid(
                "spec.template.metadata.labels",
                json(labels),
                format!("\"{JOB_NAME_LABEL}\" and \"{CONTROLLER_UID_LABEL}\" are not allowed to preset in pod labels"),
            ));
        }
    }
    errs.extend(validate_pod_template_spec(&template, &[], "spec.template"));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::field::aggregate;
    use serde_json::json;

    fn spec(v: serde_json::Value) -> BroadcastJobSpec {
        serde_json::from_value(v).unwrap()
    }

    fn job(name: &str, s: serde_json::Value) -> BroadcastJob {
        let mut j = BroadcastJob::new(name, spec(s));
        j.metadata.namespace = Some("default".into());
        j
    }

    fn good() -> serde_json::Value {
        json!({"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}})
    }

    /// kruise `TestValidateBroadcastJobSpec`: the four errors, in kruise's order.
    #[test]
    fn kruise_validate_broadcastjob_spec() {
        let s = spec(json!({
            "template": {"metadata": {"labels": {"broadcastjob-name": "bjtest", "broadcastjob-controller-uid": "1234"}},
                "spec": {"restartPolicy": "Always"}},
            "completionPolicy": {"type": "Never", "ttlSecondsAfterFinished": 1, "activeDeadlineSeconds": 2},
        }));
        let errs = validate_spec(&s, &FeatureGates::default());
        let paths: Vec<&str> = errs.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths[..4],
            [
                "spec.completionPolicy.ttlSecondsAfterFinished",
                "spec.completionPolicy.activeDeadlineSeconds",
                "spec.template.spec.restartPolicy",
                "spec.template.metadata.labels",
            ]
        );
        assert_eq!(
            errs[0].to_string(),
            "spec.completionPolicy.ttlSecondsAfterFinished: Invalid value: 1: ttlSecondsAfterFinished can just work \
             with Always CompletionPolicyType"
        );
        assert_eq!(
            errs[2].to_string(),
            "spec.template.spec.restartPolicy: Invalid value: \"Always\": pod restartPolicy can only be Never or OnFailure"
        );
    }

    #[test]
    fn a_valid_job_passes() {
        assert_eq!(validate(&job("bcj-1", good()), &FeatureGates::default()), vec![]);
        let mut always = good();
        always["completionPolicy"] =
            json!({"type": "Always", "ttlSecondsAfterFinished": 5, "activeDeadlineSeconds": 9});
        always["template"]["spec"]["restartPolicy"] = json!("OnFailure");
        assert_eq!(validate(&job("bcj", always), &FeatureGates::default()), vec![]);
    }

    #[test]
    fn an_empty_restart_policy_reads_as_always() {
        let mut s = good();
        s["template"]["spec"].as_object_mut().unwrap().remove("restartPolicy");
        let errs = validate(&job("bcj", s), &FeatureGates::default());
        assert_eq!(
            aggregate(&errs),
            "spec.template.spec.restartPolicy: Invalid value: \"Always\": pod restartPolicy can only be Never or OnFailure"
        );
    }

    #[test]
    fn names_follow_broadcastjob_rule() {
        assert!(validate_name("Bcj-1", false).is_empty(), "upper case is allowed");
        assert_eq!(
            validate_name("a.b", false),
            ["BroadcastJob name must consist of alphanumeric characters or '-' (e.g. 'example-com', regex used for \
              validation is '^[a-zA-Z0-9\\-]+$')"]
        );
        assert_eq!(validate_name(&"a".repeat(64), false), ["must be no more than 63 characters"]);
        let errs = validate(&job("a_b", good()), &FeatureGates::default());
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].path, "metadata.name");
    }

    #[test]
    fn the_pod_template_is_validated() {
        let s = json!({"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c"}]}}});
        let errs = validate(&job("bcj", s), &FeatureGates::default());
        assert!(errs.iter().any(|e| e.path == "spec.template.spec.containers[0].image"), "{errs:?}");
        let empty_label = json!({"template": {"metadata": {"labels": {"broadcastjob-name": ""}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}});
        assert_eq!(validate(&job("bcj", empty_label), &FeatureGates::default()), vec![], "an empty preset is allowed");
    }
}
