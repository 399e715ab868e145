//! Whether an ImageListPullJob may be created or updated: kruise v1.9's `validate` /
//! `validateV1beta1` (`pkg/webhook/imagelistpulljob/validating/
//! imagelistpulljob_create_update_handler.go`), the same checks for both versions — node selector
//! (names XOR a label selector, no duplicate names), podSelector (not with selector), images
//! (at least one, no duplicates, at most 255, each a reference docker/distribution v2.8 accepts),
//! and completionPolicy (Always, or Never without a deadline or TTL). kruise stops at its first
//! error; every error is listed here, in kruise's order, so the first is kruise's. Details keep
//! kruise's words; paths and kinds are Kubernetes field errors (spec §2.0, code per §11.1).
//! kruise checks no `parallelism` of a list job, so neither does this.

use std::collections::HashSet;

use super::json;
use crate::apis::imagelistpulljob::{ImageListPullJobSpec, ImagePullJobTemplate};
use crate::compat::field::{FieldError, index};
use crate::compat::image::parse_image_legacy;
use crate::compat::selector::{Selector, is_empty};

/// `validation.maxImages` of kruise: the most images one list may name.
pub const MAX_IMAGES: usize = 255;

/// Every error of an ImageListPullJob spec.
pub fn validate(spec: &ImageListPullJobSpec) -> Vec<FieldError> {
    let mut errs = validate_selectors(&spec.template);
    errs.extend(validate_images(&spec.images));
    errs.extend(validate_completion(&spec.template));
    errs
}

/// The node selector and podSelector checks, shared in kruise with ImagePullJob.
pub fn validate_selectors(template: &ImagePullJobTemplate) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(selector) = &template.selector {
        // kruise tests `MatchLabels != nil || MatchExpressions != nil`: an empty but present
        // `matchLabels: {}` decodes as empty here, which kruise counts as set; both are allowed.
        if !is_empty(&selector.label_selector) {
            if !selector.names.is_empty() {
                errs.push(FieldError::invalid(
                    "spec.selector",
                    json(selector),
                    "can not set both names and labelSelector in this spec.selector",
                ));
            } else if let Err(e) = Selector::from_label_selector(&selector.label_selector) {
                errs.push(FieldError::invalid("spec.selector", json(selector), format!("invalid selector: {e}")));
            }
        }
        let mut seen = HashSet::new();
        for (i, name) in selector.names.iter().enumerate() {
            if !seen.insert(name.as_str()) {
                errs.push(FieldError::invalid(
                    &index("spec.selector.names", i),
                    name.as_str(),
                    "duplicated name in selector names",
                ));
            }
        }
    }
    if let Some(pod_selector) = &template.pod_selector {
        if template.selector.is_some() {
            errs.push(FieldError::invalid(
                "spec.podSelector",
                json(pod_selector),
                "can not set both selector and podSelector",
            ));
        } else if let Err(e) = Selector::from_label_selector(pod_selector) {
            errs.push(FieldError::invalid("spec.podSelector", json(pod_selector), format!("invalid podSelector: {e}")));
        }
    }
    errs
}

/// `spec.images`: present, unique, at most [`MAX_IMAGES`], each a valid reference.
fn validate_images(images: &[String]) -> Vec<FieldError> {
    if images.is_empty() {
        return vec![FieldError::required("spec.images", "image can not be empty")];
    }
    let mut errs = Vec::new();
    let mut seen = HashSet::new();
    for (i, image) in images.iter().enumerate() {
        if !seen.insert(image.as_str()) {
            errs.push(FieldError::invalid(
                &index("spec.images", i),
                image.as_str(),
                "images cannot have duplicate values",
            ));
        }
    }
    if images.len() > MAX_IMAGES {
        errs.push(FieldError::invalid("spec.images", images.len(), "the maximum number of images cannot > 255"));
    }
    for (i, image) in images.iter().enumerate() {
        if let Err(e) = parse_image_legacy(image) {
            errs.push(FieldError::invalid(
                &index("spec.images", i),
                image.as_str(),
                format!("invalid image {image}: {e}"),
            ));
        }
    }
    errs
}

/// `spec.completionPolicy`: Always (nothing more to check) or Never without deadline or TTL.
pub fn validate_completion(template: &ImagePullJobTemplate) -> Vec<FieldError> {
    let policy = &template.completion_policy;
    match policy.type_.as_str() {
        "Always" => Vec::new(),
        "Never" if policy.active_deadline_seconds.is_some() || policy.ttl_seconds_after_finished.is_some() => {
            vec![FieldError::invalid(
                "spec.completionPolicy",
                json(policy),
                "activeDeadlineSeconds and ttlSecondsAfterFinished can only work with Always CompletionPolicyType",
            )]
        }
        "Never" => Vec::new(),
        other => vec![FieldError::invalid(
            "spec.completionPolicy.type",
            other,
            format!("unknown type of completionPolicy: {other}"),
        )],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::imagepulljob::{CompletionPolicy, ImagePullJobNodeSelector};
    use crate::compat::field::aggregate;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};

    fn spec(images: &[&str]) -> ImageListPullJobSpec {
        let mut s =
            ImageListPullJobSpec { images: images.iter().map(|s| s.to_string()).collect(), ..Default::default() };
        s.template.completion_policy.type_ = "Always".into();
        s
    }

    fn labels(k: &str, v: &str) -> LabelSelector {
        LabelSelector { match_labels: Some([(k.to_string(), v.to_string())].into()), ..Default::default() }
    }

    /// One row per rule of kruise's `validate`: the spec, then the text the first error holds
    /// (`None`: valid).
    #[test]
    fn rules() {
        type Edit = fn(&mut ImageListPullJobSpec);
        let rows: Vec<(&str, Edit, Option<&str>)> = vec![
            ("valid", |_| {}, None),
            (
                "names only",
                |s| {
                    s.template.selector =
                        Some(ImagePullJobNodeSelector { names: vec!["n1".into(), "n2".into()], ..Default::default() })
                },
                None,
            ),
            (
                "label selector only",
                |s| {
                    s.template.selector =
                        Some(ImagePullJobNodeSelector { names: vec![], label_selector: labels("a", "b") })
                },
                None,
            ),
            (
                "names and label selector",
                |s| {
                    s.template.selector =
                        Some(ImagePullJobNodeSelector { names: vec!["n1".into()], label_selector: labels("a", "b") })
                },
                Some(
                    "spec.selector: Invalid value: {\"matchLabels\":{\"a\":\"b\"},\"names\":[\"n1\"]}: can not set both names and labelSelector in this spec.selector",
                ),
            ),
            (
                "invalid label selector",
                |s| {
                    s.template.selector = Some(ImagePullJobNodeSelector {
                        names: vec![],
                        label_selector: LabelSelector {
                            match_expressions: Some(vec![LabelSelectorRequirement {
                                key: "a".into(),
                                operator: "Bad".into(),
                                values: None,
                            }]),
                            ..Default::default()
                        },
                    })
                },
                Some("invalid selector: \"Bad\" is not a valid label selector operator"),
            ),
            (
                "duplicate names",
                |s| {
                    s.template.selector =
                        Some(ImagePullJobNodeSelector { names: vec!["n1".into(), "n1".into()], ..Default::default() })
                },
                Some("spec.selector.names[1]: Invalid value: \"n1\": duplicated name in selector names"),
            ),
            (
                "podSelector with selector",
                |s| {
                    s.template.selector =
                        Some(ImagePullJobNodeSelector { names: vec!["n1".into()], ..Default::default() });
                    s.template.pod_selector = Some(labels("app", "x"));
                },
                Some("can not set both selector and podSelector"),
            ),
            ("podSelector alone", |s| s.template.pod_selector = Some(labels("app", "x")), None),
            (
                "invalid podSelector",
                |s| s.template.pod_selector = Some(labels("a b", "x")),
                Some("spec.podSelector: Invalid value: {\"matchLabels\":{\"a b\":\"x\"}}: invalid podSelector: "),
            ),
            ("no images", |s| s.images.clear(), Some("spec.images: Required value: image can not be empty")),
            (
                "duplicate images",
                |s| s.images = vec!["nginx:1".into(), "busybox".into(), "nginx:1".into()],
                Some("spec.images[2]: Invalid value: \"nginx:1\": images cannot have duplicate values"),
            ),
            (
                "256 images",
                |s| s.images = (0..256).map(|i| format!("img{i}")).collect(),
                Some("spec.images: Invalid value: 256: the maximum number of images cannot > 255"),
            ),
            ("255 images", |s| s.images = (0..255).map(|i| format!("img{i}")).collect(), None),
            (
                "invalid image",
                |s| s.images = vec!["Nginx:1".into()],
                Some(
                    "spec.images[0]: Invalid value: \"Nginx:1\": invalid image Nginx:1: invalid reference format: repository name must be lowercase",
                ),
            ),
            ("Never alone", |s| s.template.completion_policy.type_ = "Never".into(), None),
            (
                "Never with ttl",
                |s| {
                    s.template.completion_policy = CompletionPolicy {
                        type_: "Never".into(),
                        ttl_seconds_after_finished: Some(10),
                        active_deadline_seconds: None,
                    }
                },
                Some(
                    "activeDeadlineSeconds and ttlSecondsAfterFinished can only work with Always CompletionPolicyType",
                ),
            ),
            (
                "Never with deadline",
                |s| {
                    s.template.completion_policy = CompletionPolicy {
                        type_: "Never".into(),
                        ttl_seconds_after_finished: None,
                        active_deadline_seconds: Some(10),
                    }
                },
                Some("can only work with Always CompletionPolicyType"),
            ),
            (
                "Always with deadline and ttl",
                |s| {
                    s.template.completion_policy = CompletionPolicy {
                        type_: "Always".into(),
                        ttl_seconds_after_finished: Some(1),
                        active_deadline_seconds: Some(1),
                    }
                },
                None,
            ),
            (
                "unknown completion type",
                |s| s.template.completion_policy.type_ = "Sometimes".into(),
                Some(
                    "spec.completionPolicy.type: Invalid value: \"Sometimes\": unknown type of completionPolicy: Sometimes",
                ),
            ),
            (
                "empty completion type (not defaulted)",
                |s| s.template.completion_policy.type_.clear(),
                Some("unknown type of completionPolicy: "),
            ),
        ];
        for (name, edit, want) in rows {
            let mut s = spec(&["nginx:1.25"]);
            edit(&mut s);
            let errs = validate(&s);
            match want {
                None => assert!(errs.is_empty(), "{name}: {}", aggregate(&errs)),
                Some(want) => {
                    let first = errs.first().map(FieldError::to_string).unwrap_or_default();
                    assert!(first.contains(want), "{name}: {first:?} does not contain {want:?}");
                }
            }
        }
    }
}
