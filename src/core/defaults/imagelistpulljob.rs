//! ImageListPullJob defaults, exactly kruise's `SetDefaultsImageListPullJob` (v1alpha1) and
//! `SetDefaultsImageListPullJobV1beta1` (`apis/apps/defaults/v1alpha1.go`, `v1beta1.go`, v1.9.0):
//! `completionPolicy.type` Always, `pullPolicy` {timeoutSeconds 600, backoffLimit 3}. Unlike an
//! ImagePullJob's defaults, `imagePullPolicy` is left empty (each ImagePullJob the list creates
//! gets its own default) and no finalizer is added. The two versions share one shape, so one
//! function serves both.

use crate::apis::imagelistpulljob::ImageListPullJobSpec;
use crate::apis::imagepulljob::PullPolicy;

/// `completionPolicy.type` when unset.
pub const DEFAULT_COMPLETION_TYPE: &str = "Always";
/// `pullPolicy.timeoutSeconds` when unset.
pub const DEFAULT_TIMEOUT_SECONDS: i32 = 600;
/// `pullPolicy.backoffLimit` when unset.
pub const DEFAULT_BACKOFF_LIMIT: i32 = 3;

/// Defaults an ImageListPullJob spec in place.
pub fn default_imagelistpulljob(spec: &mut ImageListPullJobSpec) {
    let template = &mut spec.template;
    if template.completion_policy.type_.is_empty() {
        template.completion_policy.type_ = DEFAULT_COMPLETION_TYPE.to_string();
    }
    let pull = template.pull_policy.get_or_insert_with(PullPolicy::default);
    pull.timeout_seconds.get_or_insert(DEFAULT_TIMEOUT_SECONDS);
    pull.backoff_limit.get_or_insert(DEFAULT_BACKOFF_LIMIT);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::imagepulljob::CompletionPolicy;

    #[test]
    fn empty_spec_gets_kruise_defaults() {
        let mut spec = ImageListPullJobSpec { images: vec!["nginx:1".into()], ..Default::default() };
        default_imagelistpulljob(&mut spec);
        assert_eq!(spec.template.completion_policy.type_, "Always");
        assert_eq!(spec.template.pull_policy, Some(PullPolicy { timeout_seconds: Some(600), backoff_limit: Some(3) }));
        // No imagePullPolicy default for the list (SetDefaultsImageListPullJob sets none).
        assert_eq!(spec.template.image_pull_policy, "");
    }

    #[test]
    fn set_values_are_kept() {
        let mut spec = ImageListPullJobSpec::default();
        spec.template.completion_policy =
            CompletionPolicy { type_: "Never".into(), active_deadline_seconds: None, ttl_seconds_after_finished: None };
        spec.template.pull_policy = Some(PullPolicy { timeout_seconds: Some(30), backoff_limit: None });
        default_imagelistpulljob(&mut spec);
        assert_eq!(spec.template.completion_policy.type_, "Never");
        assert_eq!(spec.template.pull_policy, Some(PullPolicy { timeout_seconds: Some(30), backoff_limit: Some(3) }));
    }
}
