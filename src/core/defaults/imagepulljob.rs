//! ImagePullJob defaults, exactly kruise's `SetDefaultsImagePullJob` / `SetDefaultsImagePullJobV1beta1`
//! (`apis/apps/defaults`, v1.9.0; spec §1.4): `completionPolicy.type` Always, `pullPolicy`
//! {timeoutSeconds 600, backoffLimit 3}, `imagePullPolicy` IfNotPresent, and on a v1alpha1 CREATE
//! the finalizer `apps.kruise.io/deletion-protection` (the v1beta1 path adds none at kruise
//! HEAD). The two versions share one shape.

use crate::apis::imagepulljob::{ImagePullJob, PullPolicy};

/// The finalizer kruise's v1alpha1 defaults add on CREATE (`ProtectionFinalizer`); kruise's
/// ImagePullJob controller removes it.
pub const PROTECTION_FINALIZER: &str = "apps.kruise.io/deletion-protection";

/// Defaults an ImagePullJob in place; `add_protection` on a v1alpha1 CREATE.
pub fn default_imagepulljob(job: &mut ImagePullJob, add_protection: bool) {
    let spec = &mut job.spec;
    if spec.completion_policy.type_.is_empty() {
        spec.completion_policy.type_ = "Always".into();
    }
    let pull = spec.pull_policy.get_or_insert_with(PullPolicy::default);
    pull.timeout_seconds.get_or_insert(600);
    pull.backoff_limit.get_or_insert(3);
    if spec.image_pull_policy.is_empty() {
        spec.image_pull_policy = "IfNotPresent".into();
    }
    if add_protection {
        // controllerutil.AddFinalizer: appended once.
        let finalizers = job.metadata.finalizers.get_or_insert_with(Vec::new);
        if !finalizers.iter().any(|f| f == PROTECTION_FINALIZER) {
            finalizers.push(PROTECTION_FINALIZER.into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_finalizer() {
        let mut job = ImagePullJob::new("j", Default::default());
        default_imagepulljob(&mut job, true);
        assert_eq!(job.spec.completion_policy.type_, "Always");
        assert_eq!(job.spec.pull_policy, Some(PullPolicy { timeout_seconds: Some(600), backoff_limit: Some(3) }));
        assert_eq!(job.spec.image_pull_policy, "IfNotPresent");
        assert_eq!(job.metadata.finalizers, Some(vec![PROTECTION_FINALIZER.to_string()]));
        default_imagepulljob(&mut job, true);
        assert_eq!(job.metadata.finalizers.as_ref().map(Vec::len), Some(1), "added once");
        let mut job = ImagePullJob::new("j", Default::default());
        job.spec.image_pull_policy = "Always".into();
        default_imagepulljob(&mut job, false);
        assert_eq!(job.spec.image_pull_policy, "Always");
        assert_eq!(job.metadata.finalizers, None);
    }
}
