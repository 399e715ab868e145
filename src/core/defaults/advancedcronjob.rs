//! AdvancedCronJob defaults (kruise `apis/apps/defaults.SetDefaultsAdvancedCronJob`, v1.8.4):
//! `concurrencyPolicy: Allow`, `paused: false`, `successfulJobsHistoryLimit: 3`,
//! `failedJobsHistoryLimit: 1`, and, when [`super::pod::should_inject_template_defaults`] says
//! so, `SetDefaultPodSpec` on the pod template of the Job or BroadcastJob template.
//!
//! v1beta1 ([`default_advancedcronjob_v1beta1`], kruise HEAD `apis/apps/defaults/v1beta1.go`):
//! the same, and an `imageListPullJobTemplate` whose `completionPolicy.type` is empty gets `Always`
//! with `pullPolicy` `timeoutSeconds: 600`, `backoffLimit: 3` and `imagePullPolicy: IfNotPresent`
//! (all only then, as kruise nests them); with such a template an empty `concurrencyPolicy`
//! becomes `Replace` (running pull jobs side by side is useless), not `Allow`.

use super::pod::default_pod_spec;
use crate::apis::advancedcronjob::{ALLOW, AdvancedCronJobSpec, REPLACE, v1beta1};
use crate::core::defaults::pod::QuantityError;
use crate::core::features::FeatureGates;

/// Applies the defaults to `spec`; `inject_template` says whether pod template defaults apply.
pub fn default_advancedcronjob(
    spec: &mut AdvancedCronJobSpec,
    inject_template: bool,
    gates: &FeatureGates,
) -> Result<(), QuantityError> {
    if inject_template {
        if let Some(pod) =
            spec.template.job_template.as_mut().and_then(|j| j.spec.as_mut()).and_then(|s| s.template.spec.as_mut())
        {
            default_pod_spec(pod, gates, "spec.template.jobTemplate.spec.template.spec")?;
        }
        if let Some(pod) = spec.template.broadcast_job_template.as_mut().and_then(|b| b.spec.template.spec.as_mut()) {
            default_pod_spec(pod, gates, "spec.template.broadcastJobTemplate.spec.template.spec")?;
        }
    }
    if spec.concurrency_policy.is_empty() {
        spec.concurrency_policy = ALLOW.to_string();
    }
    spec.paused.get_or_insert(false);
    spec.successful_jobs_history_limit.get_or_insert(3);
    spec.failed_jobs_history_limit.get_or_insert(1);
    Ok(())
}

/// Applies kruise HEAD's v1beta1 defaults to `spec`.
pub fn default_advancedcronjob_v1beta1(
    spec: &mut v1beta1::AdvancedCronJobSpec,
    inject_template: bool,
    gates: &FeatureGates,
) -> Result<(), QuantityError> {
    if let Some(t) = spec.template.image_list_pull_job_template.as_mut()
        && t.spec.template.completion_policy.type_.is_empty()
    {
        let s = &mut t.spec.template;
        s.completion_policy.type_ = "Always".into();
        let pull = s.pull_policy.get_or_insert_with(Default::default);
        pull.timeout_seconds.get_or_insert(600);
        pull.backoff_limit.get_or_insert(3);
        if s.image_pull_policy.is_empty() {
            s.image_pull_policy = "IfNotPresent".into();
        }
    }
    if spec.concurrency_policy.is_empty() && spec.template.image_list_pull_job_template.is_some() {
        spec.concurrency_policy = REPLACE.into();
    }
    let mut alpha = crate::core::validation::advancedcronjob_v1beta1::alpha_view(spec);
    default_advancedcronjob(&mut alpha, inject_template, gates)?;
    spec.concurrency_policy = alpha.concurrency_policy;
    spec.paused = alpha.paused;
    spec.successful_jobs_history_limit = alpha.successful_jobs_history_limit;
    spec.failed_jobs_history_limit = alpha.failed_jobs_history_limit;
    spec.template.job_template = alpha.template.job_template;
    spec.template.broadcast_job_template = alpha.template.broadcast_job_template;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::apis::advancedcronjob::{CronJobTemplate, FORBID};
    use k8s_openapi::api::batch::v1::{JobSpec, JobTemplateSpec};
    use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};

    fn job_spec() -> AdvancedCronJobSpec {
        AdvancedCronJobSpec {
            schedule: "* * * * *".into(),
            template: CronJobTemplate {
                job_template: Some(JobTemplateSpec {
                    metadata: None,
                    spec: Some(JobSpec {
                        template: PodTemplateSpec {
                            metadata: None,
                            spec: Some(PodSpec {
                                containers: vec![Container {
                                    name: "c".into(),
                                    image: Some("busybox".into()),
                                    ..Default::default()
                                }],
                                ..Default::default()
                            }),
                        },
                        ..Default::default()
                    }),
                }),
                broadcast_job_template: None,
            },
            ..Default::default()
        }
    }

    #[test]
    fn spec_defaults() {
        let mut spec = job_spec();
        default_advancedcronjob(&mut spec, false, &FeatureGates::default()).unwrap();
        assert_eq!(spec.concurrency_policy, ALLOW);
        assert_eq!(spec.paused, Some(false));
        assert_eq!(spec.successful_jobs_history_limit, Some(3));
        assert_eq!(spec.failed_jobs_history_limit, Some(1));
        let pod = spec.template.job_template.unwrap().spec.unwrap().template.spec.unwrap();
        assert_eq!(pod.restart_policy, None, "no template defaults when not asked");
    }

    #[test]
    fn v1beta1_image_list_pull_job_template_defaults() {
        let mut spec: v1beta1::AdvancedCronJobSpec = serde_json::from_value(serde_json::json!({
            "schedule": "0 * * * *",
            "template": {"imageListPullJobTemplate": {"spec": {"images": ["nginx:1.25"]}}}}))
        .unwrap();
        default_advancedcronjob_v1beta1(&mut spec, true, &FeatureGates::default()).unwrap();
        assert_eq!(spec.concurrency_policy, REPLACE, "not Allow: pull jobs side by side are useless");
        assert_eq!(
            (spec.paused, spec.successful_jobs_history_limit, spec.failed_jobs_history_limit),
            (Some(false), Some(3), Some(1))
        );
        let t = &spec.template.image_list_pull_job_template.as_ref().unwrap().spec.template;
        assert_eq!(t.completion_policy.type_, "Always");
        let pull = t.pull_policy.as_ref().unwrap();
        assert_eq!((pull.timeout_seconds, pull.backoff_limit), (Some(600), Some(3)));
        assert_eq!(t.image_pull_policy, "IfNotPresent");

        // A type already set: nothing else under it is defaulted (kruise nests them).
        let mut spec: v1beta1::AdvancedCronJobSpec = serde_json::from_value(serde_json::json!({
            "schedule": "0 * * * *", "concurrencyPolicy": "Forbid",
            "template": {"imageListPullJobTemplate": {"spec": {"images": ["nginx:1.25"],
                "completionPolicy": {"type": "Always"}}}}}))
        .unwrap();
        default_advancedcronjob_v1beta1(&mut spec, true, &FeatureGates::default()).unwrap();
        let t = &spec.template.image_list_pull_job_template.as_ref().unwrap().spec.template;
        assert_eq!((t.pull_policy.as_ref(), t.image_pull_policy.as_str()), (None, ""));
        assert_eq!(spec.concurrency_policy, FORBID);

        // A Job template in v1beta1: v1alpha1's defaults.
        let mut spec = v1beta1::AdvancedCronJobSpec {
            schedule: "* * * * *".into(),
            template: v1beta1::CronJobTemplate { job_template: job_spec().template.job_template, ..Default::default() },
            ..Default::default()
        };
        default_advancedcronjob_v1beta1(&mut spec, true, &FeatureGates::default()).unwrap();
        assert_eq!(spec.concurrency_policy, ALLOW);
        let pod = spec.template.job_template.unwrap().spec.unwrap().template.spec.unwrap();
        assert_eq!(pod.restart_policy.as_deref(), Some("Always"));
    }

    #[test]
    fn set_values_are_kept_and_template_defaulted() {
        let mut spec = job_spec();
        spec.concurrency_policy = FORBID.into();
        spec.paused = Some(true);
        spec.successful_jobs_history_limit = Some(0);
        spec.failed_jobs_history_limit = Some(5);
        default_advancedcronjob(&mut spec, true, &FeatureGates::default()).unwrap();
        assert_eq!(spec.concurrency_policy, FORBID);
        assert_eq!(spec.paused, Some(true));
        assert_eq!(spec.successful_jobs_history_limit, Some(0));
        assert_eq!(spec.failed_jobs_history_limit, Some(5));
        let pod = spec.template.job_template.unwrap().spec.unwrap().template.spec.unwrap();
        assert_eq!(pod.restart_policy.as_deref(), Some("Always"));
        assert_eq!(pod.dns_policy.as_deref(), Some("ClusterFirst"));
    }
}
