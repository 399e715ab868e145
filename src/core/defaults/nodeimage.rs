//! NodeImage defaults and tag order, exactly what kruise's mutating handler does
//! (`pkg/webhook/nodeimage/mutating/nodeimage_create_update_handler.go`, v1.9.0):
//! `SetDefaultsNodeImage` gives every tag a `createdAt` (now) and a `pullPolicy` with
//! timeoutSeconds 600 and backoffLimit 3, then `SortSpecImageTags` / `SortStatusImageTags`
//! order each image's spec and status tags by tag name. Both API versions share the fields the
//! defaults touch (v1beta1 only adds `pullSecrets[].mode`), so the handler defaults both on the
//! v1alpha1 model. The clock is passed in: "now" is the caller's.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::apis::nodeimage::{ImageTagPullPolicy, NodeImage};

/// `pullPolicy.timeoutSeconds` of a tag when unset.
pub const DEFAULT_TIMEOUT_SECONDS: i32 = 600;
/// `pullPolicy.backoffLimit` of a tag when unset.
pub const DEFAULT_BACKOFF_LIMIT: i32 = 3;

/// Defaults and sorts a NodeImage in place, `now` being the time a missing `createdAt` gets.
pub fn default_nodeimage(node_image: &mut NodeImage, now: &Time) {
    for image in node_image.spec.images.values_mut() {
        for tag in &mut image.tags {
            if tag.created_at.is_none() {
                tag.created_at = Some(now.clone());
            }
            let policy = tag.pull_policy.get_or_insert_with(ImageTagPullPolicy::default);
            policy.timeout_seconds.get_or_insert(DEFAULT_TIMEOUT_SECONDS);
            policy.backoff_limit.get_or_insert(DEFAULT_BACKOFF_LIMIT);
        }
        // Go sorts with `sort.Slice` and `<=`, which is not stable; tags are unique once
        // validated, so a stable sort by name gives the same order for every valid object.
        image.tags.sort_by(|a, b| a.tag.cmp(&b.tag));
    }
    if let Some(status) = node_image.status.as_mut() {
        for image in status.image_statuses.values_mut() {
            image.tags.sort_by(|a, b| a.tag.cmp(&b.tag));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::nodeimage::{ImageSpec, ImageStatus, ImageTagSpec, ImageTagStatus, NodeImageStatus};

    fn at(s: i64) -> Time {
        Time(k8s_openapi::jiff::Timestamp::from_second(s).expect("valid"))
    }

    fn tag(name: &str) -> ImageTagSpec {
        ImageTagSpec { tag: name.into(), ..Default::default() }
    }

    #[test]
    fn tags_get_created_at_and_pull_policy_and_are_sorted() {
        let mut ni = NodeImage::new("node-1", Default::default());
        let mut kept = tag("a");
        kept.created_at = Some(at(10));
        kept.pull_policy = Some(ImageTagPullPolicy { timeout_seconds: Some(5), ..Default::default() });
        ni.spec
            .images
            .insert("nginx".into(), ImageSpec { tags: vec![tag("latest"), kept, tag("1.0")], ..Default::default() });
        ni.status = Some(NodeImageStatus {
            image_statuses: [(
                "nginx".to_string(),
                ImageStatus {
                    tags: vec![
                        ImageTagStatus { tag: "b".into(), ..Default::default() },
                        ImageTagStatus { tag: "a".into(), ..Default::default() },
                    ],
                },
            )]
            .into(),
            ..Default::default()
        });
        default_nodeimage(&mut ni, &at(100));
        let tags = &ni.spec.images["nginx"].tags;
        assert_eq!(tags.iter().map(|t| t.tag.as_str()).collect::<Vec<_>>(), ["1.0", "a", "latest"]);
        assert_eq!(tags[0].created_at, Some(at(100)));
        assert_eq!(tags[1].created_at, Some(at(10)), "a set createdAt is kept");
        assert_eq!(
            tags[1].pull_policy,
            Some(ImageTagPullPolicy { timeout_seconds: Some(5), backoff_limit: Some(3), ..Default::default() })
        );
        assert_eq!(
            tags[2].pull_policy,
            Some(ImageTagPullPolicy { timeout_seconds: Some(600), backoff_limit: Some(3), ..Default::default() })
        );
        let status_tags = &ni.status.as_ref().map(|s| s.image_statuses["nginx"].tags.clone()).unwrap_or_default();
        assert_eq!(status_tags.iter().map(|t| t.tag.as_str()).collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn an_empty_node_image_is_unchanged() {
        let mut ni = NodeImage::new("node-1", Default::default());
        let before = ni.clone();
        default_nodeimage(&mut ni, &at(100));
        assert_eq!(ni, before);
    }
}
