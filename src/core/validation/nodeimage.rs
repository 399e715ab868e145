//! Whether a NodeImage may be created or updated: kruise v1.9's `validate` / `validateV1beta1`
//! (`pkg/webhook/nodeimage/validating/nodeimage_create_update_handler.go`), the same for both
//! versions: at most 256 images; per image a non-empty name, and per tag a non-empty, unique
//! tag with `createdAt`, a non-negative `version`, a `pullPolicy` and its
//! `ttlSecondsAfterFinished`. (`createdAt` and `pullPolicy` are filled by the mutating webhook,
//! which runs first; `ttlSecondsAfterFinished` is not, so writers must set it, as kruise's
//! ImagePullJob controller does.) kruise stops at the first error and walks a Go map in random
//! order; every error is listed here, images in name order. Details keep kruise's words.

use std::collections::HashSet;

use crate::apis::nodeimage::NodeImageSpec;
use crate::compat::field::{FieldError, index, key};

/// `defaultMaxImagesPerNode`.
pub const MAX_IMAGES_PER_NODE: usize = 256;

/// Every error of a NodeImage spec.
pub fn validate(spec: &NodeImageSpec) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if spec.images.len() > MAX_IMAGES_PER_NODE {
        errs.push(FieldError::invalid(
            "spec.images",
            spec.images.len(),
            format!("spec images length {} can not be more than {MAX_IMAGES_PER_NODE}", spec.images.len()),
        ));
    }
    for (name, image) in &spec.images {
        let image_path = key("spec.images", name);
        if name.is_empty() {
            errs.push(FieldError::invalid(&image_path, name.as_str(), "image name can not be empty"));
        }
        let mut seen = HashSet::new();
        for (i, tag) in image.tags.iter().enumerate() {
            let path = index(&format!("{image_path}.tags"), i);
            if tag.tag.is_empty() {
                errs.push(FieldError::required(
                    &format!("{path}.tag"),
                    format!("tag for image {name} can not be empty"),
                ));
                continue;
            }
            if !seen.insert(tag.tag.as_str()) {
                errs.push(FieldError::invalid(
                    &format!("{path}.tag"),
                    tag.tag.as_str(),
                    format!("duplicated tag {} for image {name}", tag.tag),
                ));
                continue;
            }
            let full = format!("{name}/{}", tag.tag);
            if tag.created_at.is_none() {
                errs.push(FieldError::required(
                    &format!("{path}.createdAt"),
                    format!("createAt field for {full} can not be empty"),
                ));
            }
            if tag.version < 0 {
                errs.push(FieldError::invalid(
                    &format!("{path}.version"),
                    tag.version,
                    format!("version for {full} can not be less than 0"),
                ));
            }
            match &tag.pull_policy {
                None => errs.push(FieldError::required(
                    &format!("{path}.pullPolicy"),
                    format!("pullPolicy field for {full} must set"),
                )),
                Some(p) if p.ttl_seconds_after_finished.is_none() => errs.push(FieldError::required(
                    &format!("{path}.pullPolicy.ttlSecondsAfterFinished"),
                    format!("pullPolicy.ttlSecondsAfterFinished for {full} must set"),
                )),
                Some(_) => {}
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::nodeimage::{ImageSpec, ImageTagPullPolicy, ImageTagSpec};
    use crate::compat::field::aggregate;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn good_tag(name: &str) -> ImageTagSpec {
        ImageTagSpec {
            tag: name.into(),
            created_at: Some(Time(k8s_openapi::jiff::Timestamp::from_second(1).expect("valid"))),
            pull_policy: Some(ImageTagPullPolicy { ttl_seconds_after_finished: Some(300), ..Default::default() }),
            ..Default::default()
        }
    }

    fn spec(images: Vec<(&str, Vec<ImageTagSpec>)>) -> NodeImageSpec {
        NodeImageSpec {
            images: images
                .into_iter()
                .map(|(n, tags)| (n.to_string(), ImageSpec { tags, ..Default::default() }))
                .collect(),
        }
    }

    /// One row per rule of kruise's `validate`: the spec and the first error (`None`: valid).
    #[test]
    fn rules() {
        let no_created = {
            let mut t = good_tag("v1");
            t.created_at = None;
            t
        };
        let negative = {
            let mut t = good_tag("v1");
            t.version = -1;
            t
        };
        let no_policy = {
            let mut t = good_tag("v1");
            t.pull_policy = None;
            t
        };
        let no_ttl = {
            let mut t = good_tag("v1");
            t.pull_policy = Some(ImageTagPullPolicy::default());
            t
        };
        let rows: Vec<(&str, NodeImageSpec, Option<&str>)> = vec![
            ("empty", spec(vec![]), None),
            ("valid", spec(vec![("nginx", vec![good_tag("1.0"), good_tag("latest")])]), None),
            ("image without tags", spec(vec![("nginx", vec![])]), None),
            (
                "256 images",
                NodeImageSpec {
                    images: (0..256)
                        .map(|i| (format!("img{i}"), ImageSpec { tags: vec![good_tag("v1")], ..Default::default() }))
                        .collect(),
                },
                None,
            ),
            (
                "257 images",
                NodeImageSpec { images: (0..257).map(|i| (format!("img{i}"), ImageSpec::default())).collect() },
                Some("spec.images: Invalid value: 257: spec images length 257 can not be more than 256"),
            ),
            (
                "empty image name",
                spec(vec![("", vec![])]),
                Some("spec.images[]: Invalid value: \"\": image name can not be empty"),
            ),
            (
                "empty tag",
                spec(vec![("nginx", vec![good_tag("")])]),
                Some("spec.images[nginx].tags[0].tag: Required value: tag for image nginx can not be empty"),
            ),
            (
                "duplicated tag",
                spec(vec![("nginx", vec![good_tag("v1"), good_tag("v1")])]),
                Some("spec.images[nginx].tags[1].tag: Invalid value: \"v1\": duplicated tag v1 for image nginx"),
            ),
            (
                "no createdAt",
                spec(vec![("nginx", vec![no_created])]),
                Some(
                    "spec.images[nginx].tags[0].createdAt: Required value: createAt field for nginx/v1 can not be empty",
                ),
            ),
            (
                "negative version",
                spec(vec![("nginx", vec![negative])]),
                Some(
                    "spec.images[nginx].tags[0].version: Invalid value: -1: version for nginx/v1 can not be less than 0",
                ),
            ),
            (
                "no pullPolicy",
                spec(vec![("nginx", vec![no_policy])]),
                Some("spec.images[nginx].tags[0].pullPolicy: Required value: pullPolicy field for nginx/v1 must set"),
            ),
            (
                "no ttl",
                spec(vec![("nginx", vec![no_ttl])]),
                Some("pullPolicy.ttlSecondsAfterFinished for nginx/v1 must set"),
            ),
        ];
        for (name, s, want) in rows {
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
