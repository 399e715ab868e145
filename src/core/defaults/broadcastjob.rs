//! BroadcastJob defaults, kruise's `SetDefaultsBroadcastJob` (`apis/apps/defaults/v1alpha1.go`,
//! v1.8.4; issue 33 item 1): the pod template through `SetDefaultPodSpec` when template defaults
//! apply ([`super::pod::should_inject_template_defaults`]), `completionPolicy.type` Always,
//! `parallelism` 2^31-1, `failurePolicy.type` FailFast, and `restartPolicy` OnFailure when still
//! empty. Kept as kruise has it: the template defaults run first and set an empty
//! `restartPolicy` to Always, so the OnFailure default only applies under `TemplateNoDefaults`
//! (or on an UPDATE that leaves the template alone), and a job sent without `restartPolicy` is
//! then refused by the validation ("pod restartPolicy can only be Never or OnFailure").

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::pod::{QuantityError, default_pod_spec};
use crate::apis::broadcastjob::BroadcastJobSpec;
use crate::core::features::FeatureGates;

/// `completionPolicy.type` Always.
pub const ALWAYS: &str = "Always";
/// `completionPolicy.type` Never.
pub const NEVER: &str = "Never";
/// `failurePolicy.type` FailFast (the default).
pub const FAIL_FAST: &str = "FailFast";
/// `failurePolicy.type` Continue.
pub const CONTINUE: &str = "Continue";
/// `failurePolicy.type` Pause.
pub const PAUSE: &str = "Pause";
/// The default `parallelism`: `1<<31 - 1`.
pub const DEFAULT_PARALLELISM: i32 = i32::MAX;

/// Defaults a BroadcastJob spec in place; `inject_template` as decided by
/// [`super::pod::should_inject_template_defaults`].
pub fn default_broadcastjob(
    spec: &mut BroadcastJobSpec,
    inject_template: bool,
    gates: &FeatureGates,
) -> Result<(), QuantityError> {
    if inject_template {
        let pod_spec = spec.template.spec.get_or_insert_with(Default::default);
        default_pod_spec(pod_spec, gates, "spec.template.spec")?;
    }
    if spec.completion_policy.type_.is_empty() {
        spec.completion_policy.type_ = ALWAYS.into();
    }
    if spec.parallelism.is_none() {
        spec.parallelism = Some(IntOrString::Int(DEFAULT_PARALLELISM));
    }
    if spec.failure_policy.type_.is_empty() {
        spec.failure_policy.type_ = FAIL_FAST.into();
    }
    let pod_spec = spec.template.spec.get_or_insert_with(Default::default);
    if pod_spec.restart_policy.as_deref().unwrap_or("").is_empty() {
        pod_spec.restart_policy = Some("OnFailure".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::features::Gate;
    use serde_json::json;

    fn spec(v: serde_json::Value) -> BroadcastJobSpec {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn fills_policies_parallelism_and_template() {
        let mut s = spec(json!({"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}));
        default_broadcastjob(&mut s, true, &FeatureGates::default()).unwrap();
        assert_eq!(s.completion_policy.type_, "Always");
        assert_eq!(s.failure_policy.type_, "FailFast");
        assert_eq!(s.parallelism, Some(IntOrString::Int(2147483647)));
        let pod = s.template.spec.unwrap();
        // SetDefaultPodSpec runs first: the empty restartPolicy becomes Always, as in kruise.
        assert_eq!(pod.restart_policy.as_deref(), Some("Always"));
        assert_eq!(pod.dns_policy.as_deref(), Some("ClusterFirst"));
        assert_eq!(pod.containers[0].image_pull_policy.as_deref(), Some("Always"));
    }

    #[test]
    fn without_template_defaults_restart_policy_is_on_failure() {
        let mut s = spec(json!({"template": {"spec": {"containers": []}}}));
        default_broadcastjob(&mut s, false, &FeatureGates::default()).unwrap();
        let pod = s.template.spec.unwrap();
        assert_eq!(pod.restart_policy.as_deref(), Some("OnFailure"));
        assert_eq!(pod.dns_policy, None);
        let gates = FeatureGates::default().with(Gate::TemplateNoDefaults, true);
        assert!(!crate::core::defaults::pod::should_inject_template_defaults(None, &gates));
    }

    #[test]
    fn set_values_are_kept() {
        let mut s = spec(json!({"parallelism": "50%", "completionPolicy": {"type": "Never"},
            "failurePolicy": {"type": "Continue", "restartLimit": 2},
            "template": {"spec": {"restartPolicy": "Never", "containers": []}}}));
        default_broadcastjob(&mut s, true, &FeatureGates::default()).unwrap();
        assert_eq!(s.parallelism, Some(IntOrString::String("50%".into())));
        assert_eq!(s.completion_policy.type_, "Never");
        assert_eq!(s.failure_policy.type_, "Continue");
        assert_eq!(s.template.spec.unwrap().restart_policy.as_deref(), Some("Never"));
    }
}
