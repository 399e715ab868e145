//! Whether an ImagePullJob may be created or updated (spec §2.5): kruise v1.9's `validate` /
//! `validateV1beta1` (`pkg/webhook/imagepulljob/validating/imagepulljob_create_update_handler.go`)
//! — the node selector and podSelector rules it shares with ImageListPullJob
//! ([`super::imagelistpulljob::validate_selectors`]), a non-empty image docker/distribution v2.8
//! accepts, `parallelism` an integer (int or integer string) ≥ 0 and never a percentage, and the
//! completion policy (Always: `activeDeadlineSeconds` not below `pullPolicy.timeoutSeconds`,
//! default 600; Never: no deadline or TTL). The UPDATE rule (`spec.pullSecrets` immutable) is the
//! handler's, a policy denial. Details keep kruise's words; paths and kinds are Kubernetes field
//! errors (spec §2.0, code per §11.1).

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::imagelistpulljob::{validate_completion, validate_selectors};
use super::json;
use crate::apis::imagepulljob::ImagePullJobSpec;
use crate::compat::field::FieldError;
use crate::compat::image::parse_image_legacy;
use crate::compat::intstr::go_atoi;

/// Every error of an ImagePullJob spec.
pub fn validate(spec: &ImagePullJobSpec) -> Vec<FieldError> {
    let template = crate::apis::imagelistpulljob::ImagePullJobTemplate {
        pull_secrets: Vec::new(),
        selector: spec.selector.clone(),
        pod_selector: spec.pod_selector.clone(),
        parallelism: None,
        pull_policy: None,
        completion_policy: spec.completion_policy.clone(),
        sandbox_config: None,
        image_pull_policy: String::new(),
    };
    let mut errs = validate_selectors(&template);
    if spec.image.is_empty() {
        errs.push(FieldError::required("spec.image", "image can not be empty"));
    } else if let Err(e) = parse_image_legacy(&spec.image) {
        errs.push(FieldError::invalid("spec.image", spec.image.as_str(), format!("invalid image {}: {e}", spec.image)));
    }
    if let Some(p) = &spec.parallelism {
        errs.extend(validate_parallelism(p));
    }
    if spec.completion_policy.type_ == "Always" {
        let timeout = spec.pull_policy.as_ref().and_then(|p| p.timeout_seconds).unwrap_or(600);
        if let Some(deadline) = spec.completion_policy.active_deadline_seconds
            && i64::from(timeout) > deadline
        {
            errs.push(FieldError::invalid(
                "spec.completionPolicy.activeDeadlineSeconds",
                deadline,
                "completionPolicy.activeDeadlineSeconds must be greater than pullPolicy.timeoutSeconds(default 600)",
            ));
        }
    } else {
        errs.extend(validate_completion(&template));
    }
    errs
}

/// `spec.parallelism`: kruise reads a string with `strconv.ParseInt(s, 10, 32)`.
fn validate_parallelism(p: &IntOrString) -> Vec<FieldError> {
    let path = "spec.parallelism";
    let detail = match p {
        IntOrString::Int(n) if *n < 0 => "parallelism must be non-negative".to_string(),
        IntOrString::Int(_) => return Vec::new(),
        IntOrString::String(s) if s.ends_with('%') => "parallelism does not support percentage value".to_string(),
        IntOrString::String(s) => match go_atoi(s).ok().and_then(|n| i32::try_from(n).ok()) {
            None => format!("parallelism must be a valid integer: {s:?} is not a 32-bit integer"),
            Some(n) if n < 0 => "parallelism must be non-negative".to_string(),
            Some(_) => return Vec::new(),
        },
    };
    vec![FieldError::invalid(path, json(p), detail)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::imagepulljob::{CompletionPolicy, PullPolicy};

    fn spec() -> ImagePullJobSpec {
        ImagePullJobSpec {
            image: "nginx:latest".into(),
            completion_policy: CompletionPolicy { type_: "Always".into(), ..Default::default() },
            pull_policy: Some(PullPolicy { timeout_seconds: Some(600), backoff_limit: None }),
            ..Default::default()
        }
    }

    /// kruise's `TestValidateParallelismV1alpha1` / `V1beta1`, row by row.
    #[test]
    fn parallelism_rows() {
        let s = |v: &str| Some(IntOrString::String(v.into()));
        let rows: Vec<(&str, Option<IntOrString>, Option<&str>)> = vec![
            ("valid integer parallelism", Some(IntOrString::Int(2)), None),
            ("valid zero parallelism", Some(IntOrString::Int(0)), None),
            ("invalid negative parallelism", Some(IntOrString::Int(-1)), Some("parallelism must be non-negative")),
            ("invalid percentage parallelism", s("50%"), Some("parallelism does not support percentage value")),
            ("valid string integer parallelism", s("50"), None),
            ("valid string zero parallelism", s("0"), None),
            ("invalid string negative parallelism", s("-1"), Some("parallelism must be non-negative")),
            ("invalid string non-numeric parallelism", s("abc"), Some("parallelism must be a valid integer")),
            ("nil parallelism", None, None),
        ];
        for (name, parallelism, want) in rows {
            let mut sp = spec();
            sp.parallelism = parallelism;
            let errs = validate(&sp);
            match want {
                None => assert!(errs.is_empty(), "{name}: {errs:?}"),
                Some(w) => assert!(errs.first().is_some_and(|e| e.to_string().contains(w)), "{name}: {errs:?}"),
            }
        }
    }

    /// The other rules of spec §2.5.
    #[test]
    fn rules() {
        type Edit = fn(&mut ImagePullJobSpec);
        let rows: Vec<(&str, Edit, Option<&str>)> = vec![
            ("valid", |_| {}, None),
            ("empty image", |s| s.image.clear(), Some("spec.image: Required value: image can not be empty")),
            ("invalid image", |s| s.image = "Nginx".into(), Some("invalid image Nginx: ")),
            (
                "deadline below the timeout",
                |s| s.completion_policy.active_deadline_seconds = Some(599),
                Some(
                    "completionPolicy.activeDeadlineSeconds must be greater than pullPolicy.timeoutSeconds(default 600)",
                ),
            ),
            ("deadline equal to the timeout", |s| s.completion_policy.active_deadline_seconds = Some(600), None),
            (
                "deadline below the default timeout",
                |s| {
                    s.pull_policy = None;
                    s.completion_policy.active_deadline_seconds = Some(100)
                },
                Some("must be greater than pullPolicy.timeoutSeconds"),
            ),
            (
                "Never with ttl",
                |s| {
                    s.completion_policy.type_ = "Never".into();
                    s.completion_policy.ttl_seconds_after_finished = Some(1)
                },
                Some("can only work with Always CompletionPolicyType"),
            ),
            ("unknown type", |s| s.completion_policy.type_ = "X".into(), Some("unknown type of completionPolicy: X")),
        ];
        for (name, edit, want) in rows {
            let mut sp = spec();
            edit(&mut sp);
            let errs = validate(&sp);
            match want {
                None => assert!(errs.is_empty(), "{name}: {errs:?}"),
                Some(w) => assert!(errs.first().is_some_and(|e| e.to_string().contains(w)), "{name}: {errs:?}"),
            }
        }
    }
}
