//! kruise `advancedcronjob_create_update_handler_test.go` (`TestValidateCronJobSpec`, v1.8.4) row
//! by row, then the rest of the handler's rules with the texts kruise answers.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::apis::advancedcronjob::{ALLOW, BroadcastJobTemplateSpec, CronJobTemplate, REPLACE};
use crate::compat::field::aggregate;
use k8s_openapi::api::batch::v1::{JobSpec, JobTemplateSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn valid_pod_template() -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: None,
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "foo".into(),
                image: Some("foo:latest".into()),
                termination_message_policy: Some("File".into()),
                image_pull_policy: Some("IfNotPresent".into()),
                ..Default::default()
            }],
            restart_policy: Some("Always".into()),
            dns_policy: Some("Default".into()),
            ..Default::default()
        }),
    }
}

fn job_template() -> CronJobTemplate {
    CronJobTemplate {
        job_template: Some(JobTemplateSpec {
            metadata: None,
            spec: Some(JobSpec { template: valid_pod_template(), ..Default::default() }),
        }),
        broadcast_job_template: None,
    }
}

fn spec(schedule: &str, tz: Option<&str>) -> AdvancedCronJobSpec {
    AdvancedCronJobSpec {
        schedule: schedule.into(),
        time_zone: tz.map(String::from),
        concurrency_policy: ALLOW.into(),
        template: job_template(),
        ..Default::default()
    }
}

fn acj(name: &str, spec: AdvancedCronJobSpec) -> AdvancedCronJob {
    AdvancedCronJob {
        metadata: ObjectMeta { name: Some(name.into()), namespace: Some("default".into()), ..Default::default() },
        spec,
        status: None,
    }
}

#[test]
fn validate_cron_job_spec_rows() {
    let rows = [
        ("no validation because timeZone is nil", spec("0 * * * *", None), false),
        ("check timeZone is valid", spec("0 * * * *", Some("America/New_York")), false),
        ("check timeZone is invalid", spec("0 * * * *", Some("broken")), true),
    ];
    for (name, s, expect_err) in rows {
        let errs = validate_spec(&s, "spec");
        assert_eq!(!errs.is_empty(), expect_err, "{name}: {errs:?}");
    }
}

#[test]
fn schedule_errors_read_as_kruise_answers_them() {
    let cases = [
        (
            "",
            "[spec.schedule: Invalid value: \"\": schedule cannot be empty, please provide valid cron schedule., spec.schedule: Invalid value: \"\": empty spec string]",
        ),
        ("* * * *", "spec.schedule: Invalid value: \"* * * *\": expected exactly 5 fields, found 4: [* * * *]"),
        ("61 * * * *", "spec.schedule: Invalid value: \"61 * * * *\": end of range (61) above maximum (59): 61"),
        (
            "@every 1x",
            "spec.schedule: Invalid value: \"@every 1x\": failed to parse duration @every 1x: time: unknown unit \"x\" in duration \"1x\"",
        ),
        ("@daily2", "spec.schedule: Invalid value: \"@daily2\": unrecognized descriptor: @daily2"),
        (
            "TZ=Mars/Base * * * * *",
            "spec.schedule: Invalid value: \"TZ=Mars/Base * * * * *\": provided bad location Mars/Base: unknown time zone Mars/Base",
        ),
    ];
    for (schedule, want) in cases {
        assert_eq!(aggregate(&validate_spec(&spec(schedule, None), "spec")), want, "{schedule}");
    }
    for ok in ["@every 10s", "@hourly", "*/5 * * * *", "CRON_TZ=Asia/Shanghai 0 10 * * ?", "0 0 * * MON-FRI"] {
        assert!(validate_spec(&spec(ok, None), "spec").is_empty(), "{ok}");
    }
}

#[test]
fn time_zone_rules() {
    let both = validate_spec(&spec("TZ=UTC 0 * * * *", Some("UTC")), "spec");
    assert_eq!(
        aggregate(&both),
        "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use both timeZone field and TZ or CRON_TZ in schedule"
    );
    assert_eq!(
        aggregate(&validate_spec(&spec("0 * * * *", Some("")), "spec")),
        "spec.timeZone: Invalid value: \"\": timeZone must be nil or non-empty string"
    );
    assert_eq!(
        aggregate(&validate_spec(&spec("0 * * * *", Some("Local")), "spec")),
        "spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
    );
    assert_eq!(validate_spec(&spec("0 * * * *", Some("local")), "spec").len(), 2);
    assert_eq!(
        aggregate(&validate_spec(&spec("0 * * * *", Some("broken")), "spec")),
        "spec.timeZone: Invalid value: \"broken\": unknown time zone broken"
    );
}

#[test]
fn templates_one_and_only_one() {
    let mut none = spec("0 * * * *", None);
    none.template = CronJobTemplate::default();
    assert_eq!(
        aggregate(&validate_spec(&none, "spec")),
        "spec.template: Forbidden: spec must have one template, either JobTemplate or BroadcastJobTemplate should be provided"
    );
    let mut two = spec("0 * * * *", None);
    two.template.broadcast_job_template = Some(BroadcastJobTemplateSpec {
        metadata: ObjectMeta::default(),
        spec: crate::apis::broadcastjob::BroadcastJobSpec { template: valid_pod_template(), ..Default::default() },
    });
    assert_eq!(
        aggregate(&validate_spec(&two, "spec")),
        "spec.template: Forbidden: spec can have only one template, either JobTemplate or BroadcastJobTemplate should be provided"
    );
    // The pod template is checked at kruise's path, `spec.template`.
    let mut bad = spec("0 * * * *", None);
    bad.template.job_template.as_mut().unwrap().spec.as_mut().unwrap().template.spec.as_mut().unwrap().containers =
        vec![];
    let errs = validate_spec(&bad, "spec");
    assert!(errs.iter().any(|e| e.path == "spec.template.spec.containers"), "{errs:?}");
}

#[test]
fn negative_numbers() {
    let mut s = spec("0 * * * *", None);
    s.starting_deadline_seconds = Some(-1);
    s.successful_jobs_history_limit = Some(-2);
    s.failed_jobs_history_limit = Some(-3);
    assert_eq!(
        aggregate(&validate_spec(&s, "spec")),
        "[spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0, spec.successfulJobsHistoryLimit: Invalid value: -2: must be greater than or equal to 0, spec.failedJobsHistoryLimit: Invalid value: -3: must be greater than or equal to 0]"
    );
}

#[test]
fn names() {
    assert!(validate_create(&acj("nightly-Backup1", spec("0 * * * *", None))).is_empty());
    let errs = validate_create(&acj("a.b", spec("0 * * * *", None)));
    assert_eq!(
        aggregate(&errs),
        "metadata.name: Invalid value: \"a.b\": AdvancedCronJob name must consist of alphanumeric characters or '-' (e.g. 'example-com', regex used for validation is '^[a-zA-Z0-9\\-]+$')"
    );
    let long = "a".repeat(64);
    let errs = validate_create(&acj(&long, spec("0 * * * *", None)));
    assert_eq!(errs.len(), 1);
    assert!(errs[0].body().ends_with("must be no more than 63 characters"), "{errs:?}");
}

#[test]
fn updates_only_to_the_mutable_fields() {
    let old = acj("cron", spec("0 * * * *", None));
    let mut new = old.clone();
    new.spec.schedule = "@every 10s".into();
    new.spec.concurrency_policy = REPLACE.into();
    new.spec.paused = Some(true);
    new.spec.successful_jobs_history_limit = Some(1);
    new.spec.failed_jobs_history_limit = Some(0);
    new.spec.starting_deadline_seconds = Some(30);
    new.spec.time_zone = Some("Asia/Shanghai".into());
    assert!(validate_update(&new, &old).is_empty(), "{:?}", validate_update(&new, &old));
    let mut changed = old.clone();
    changed.spec.template.job_template.as_mut().unwrap().spec.as_mut().unwrap().parallelism = Some(2);
    assert_eq!(aggregate(&validate_update(&changed, &old)), format!("spec: Forbidden: {SPEC_UPDATE_FORBIDDEN}"));
}
