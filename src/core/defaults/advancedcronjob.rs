//! AdvancedCronJob defaults (kruise `apis/apps/defaults.SetDefaultsAdvancedCronJob`, v1.8.4):
//! `concurrencyPolicy: Allow`, `paused: false`, `successfulJobsHistoryLimit: 3`,
//! `failedJobsHistoryLimit: 1`, and, when [`super::pod::should_inject_template_defaults`] says
//! so, `SetDefaultPodSpec` on the pod template of the Job or BroadcastJob template.

use super::pod::default_pod_spec;
use crate::apis::advancedcronjob::{ALLOW, AdvancedCronJobSpec};
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
