//! kruise `advancedcronjob_controller_test.go` (v1.8.4) row by row — `TestScheduleWithTimeZone`,
//! `TestReconcileAdvancedJobCreateJob` / `…CreateBroadcastJob` — then the CronJob semantics the
//! controller follows (missed runs, deadlines, concurrency, pause, history, names).
#![allow(clippy::unwrap_used)]

use super::build::{broadcast_job, child_name, job, owner_reference};
use super::*;
use crate::apis::advancedcronjob::{ALLOW, AdvancedCronJobSpec, BroadcastJobTemplateSpec, CronJobTemplate};
use crate::apis::broadcastjob::BroadcastJobSpec;
use k8s_openapi::api::batch::v1::{JobSpec, JobTemplateSpec};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use std::collections::BTreeMap;

fn ts(s: &str) -> Timestamp {
    s.parse().unwrap()
}

fn job_template() -> CronJobTemplate {
    CronJobTemplate {
        job_template: Some(JobTemplateSpec {
            metadata: Some(ObjectMeta {
                labels: Some(BTreeMap::from([("app".into(), "report".into())])),
                annotations: Some(BTreeMap::from([("note".into(), "x".into())])),
                ..Default::default()
            }),
            spec: Some(JobSpec { template: PodTemplateSpec::default(), ..Default::default() }),
        }),
        broadcast_job_template: None,
    }
}

fn broadcast_template() -> CronJobTemplate {
    CronJobTemplate {
        job_template: None,
        broadcast_job_template: Some(BroadcastJobTemplateSpec {
            metadata: ObjectMeta::default(),
            spec: BroadcastJobSpec::default(),
        }),
    }
}

/// kruise's `createJob`: `* * * * *`, Replace, not paused, history limits 3.
fn acj(name: &str, template: CronJobTemplate, created: &str) -> AdvancedCronJob {
    AdvancedCronJob {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some("12345".into()),
            creation_timestamp: Some(Time(ts(created))),
            ..Default::default()
        },
        spec: AdvancedCronJobSpec {
            schedule: "* * * * *".into(),
            concurrency_policy: "Replace".into(),
            paused: Some(false),
            successful_jobs_history_limit: Some(3),
            failed_jobs_history_limit: Some(3),
            template,
            ..Default::default()
        },
        status: None,
    }
}

fn child(name: &str, scheduled: Option<&str>, finished: Option<Finished>, start: Option<&str>) -> Child {
    Child {
        reference: ObjectReference {
            api_version: Some("batch/v1".into()),
            kind: Some("Job".into()),
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            ..Default::default()
        },
        finished,
        scheduled_at: scheduled.map(String::from),
        start_time: start.map(ts),
    }
}

#[test]
fn schedule_with_time_zone() {
    let rows: [(&str, Option<&str>, &str, &str); 5] = [
        ("0 10 * * ?", None, "2022-09-05T09:01:00Z", "2022-09-05T10:00:00Z"),
        ("0 10 * * ?", None, "2022-09-05T11:01:00Z", "2022-09-06T10:00:00Z"),
        ("0 10 * * ?", Some("Asia/Shanghai"), "2022-09-05T09:01:00Z", "2022-09-06T02:00:00Z"),
        ("0 10 * * ?", Some("Asia/Shanghai"), "2022-09-06T01:01:00Z", "2022-09-06T02:00:00Z"),
        ("TZ=Asia/Shanghai 0 10 * * ?", None, "2022-09-06T01:01:00Z", "2022-09-06T02:00:00Z"),
    ];
    for (i, (schedule, tz, previous, expected)) in rows.into_iter().enumerate() {
        let mut a = acj("a", job_template(), "2022-01-01T00:00:00Z");
        a.spec.schedule = schedule.into();
        a.spec.time_zone = tz.map(String::from);
        let sched = parse_standard(&format_schedule(&a)).unwrap();
        let got = sched.next(&ts(previous).to_zoned(TimeZone::UTC)).unwrap().timestamp();
        assert_eq!(got, ts(expected), "case {i}");
    }
}

#[test]
fn reconcile_creates_a_job_and_sets_the_type() {
    let a = acj("job2", job_template(), "2024-05-01T10:00:30Z");
    let p = plan(&a, &[], ts("2024-05-01T10:01:10Z"));
    assert_eq!(p.status.type_, TYPE_JOB);
    assert_eq!(p.decision, Decision::Run);
    assert_eq!(p.create, Some(ts("2024-05-01T10:01:00Z")));
    assert_eq!(p.requeue_after, Some(SignedDuration::from_secs(50)));
    let j = job(&a, p.create.unwrap()).unwrap();
    assert_eq!(j.metadata.name.as_deref(), Some("job2-1714557660"));
    assert_eq!(j.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(j.metadata.labels, Some(BTreeMap::from([("app".into(), "report".into())])));
    assert_eq!(
        j.metadata.annotations,
        Some(BTreeMap::from([("note".into(), "x".into()), (SCHEDULED_AT.into(), "2024-05-01T10:01:00Z".into())]))
    );
    let owner = &j.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(owner, &owner_reference(&a));
    assert_eq!(
        serde_json::to_value(owner).unwrap(),
        serde_json::json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "AdvancedCronJob", "name": "job2",
            "uid": "12345", "controller": true, "blockOwnerDeletion": true})
    );
    assert!(is_child_of(&j.metadata, "job2"));
    assert!(!is_child_of(&j.metadata, "job3"));
    assert!(broadcast_job(&a, p.create.unwrap()).is_none());
}

#[test]
fn reconcile_creates_a_broadcast_job_and_sets_the_type() {
    let a = acj("job1", broadcast_template(), "2024-05-01T10:00:30Z");
    let p = plan(&a, &[], ts("2024-05-01T10:01:10Z"));
    assert_eq!(p.status.type_, TYPE_BROADCAST_JOB);
    let b = broadcast_job(&a, p.create.unwrap()).unwrap();
    assert_eq!(b.metadata.name.as_deref(), Some("job1-1714557660"));
    assert_eq!(b.metadata.labels, None);
    assert!(is_child_of(&b.metadata, "job1"));
    assert!(job(&a, p.create.unwrap()).is_none());
}

#[test]
fn status_lists_active_children_and_the_latest_scheduled_time() {
    let a = acj("a", job_template(), "2024-05-01T10:00:00Z");
    let children = [
        child("a-2", Some("2024-05-01T10:02:00Z"), None, None),
        child("a-1", Some("2024-05-01T10:01:00Z"), Some(Finished::Complete), Some("2024-05-01T10:01:01Z")),
        child("a-x", Some("not a time"), Some(Finished::Failed), None),
        child("a-3", None, None, None),
    ];
    let p = plan(&a, &children, ts("2024-05-01T10:02:30Z"));
    let names: Vec<_> = p.status.active.iter().map(|r| r.name.clone().unwrap()).collect();
    assert_eq!(names, ["a-2", "a-3"]);
    assert_eq!(p.status.active[0].kind.as_deref(), Some("Job"));
    assert_eq!(p.status.last_schedule_time, Some(Time(ts("2024-05-01T10:02:00Z"))));
    assert_eq!(p.decision, Decision::NothingDue, "the 10:02 run exists");
    assert_eq!(p.requeue_after, Some(SignedDuration::from_secs(30)));
    let none = plan(&a, &[], ts("2024-05-01T10:00:10Z"));
    assert_eq!(none.status.last_schedule_time, None);
}

#[test]
fn the_latest_missed_run_is_the_one_created() {
    let a = acj("a", job_template(), "2024-05-01T10:00:00Z");
    let p = plan(&a, &[], ts("2024-05-01T10:07:30Z"));
    assert_eq!(p.create, Some(ts("2024-05-01T10:07:00Z")));
    assert_eq!(child_name(&a, p.create.unwrap()), "a-1714558020");
}

#[test]
fn too_many_missed_runs_create_nothing() {
    let a = acj("a", job_template(), "2024-05-01T10:00:00Z");
    // 100 missed runs are fine, 101 are not.
    let p = plan(&a, &[], ts("2024-05-01T11:40:30Z"));
    assert_eq!(p.decision, Decision::Run);
    let p = plan(&a, &[], ts("2024-05-01T11:41:30Z"));
    assert!(matches!(&p.decision, Decision::Unschedulable(e) if e.starts_with("too many missed start times (> 100)")));
    assert_eq!(p.create, None);
    assert_eq!(p.requeue_after, None);
    // A starting deadline bounds the search.
    let mut d = a.clone();
    d.spec.starting_deadline_seconds = Some(200);
    let p = plan(&d, &[], ts("2024-05-01T11:41:30Z"));
    assert_eq!(p.create, Some(ts("2024-05-01T11:41:00Z")));
}

#[test]
fn a_schedule_that_never_fires_is_unschedulable() {
    let mut a = acj("a", job_template(), "2024-05-01T10:00:00Z");
    a.spec.schedule = "0 0 30 2 *".into();
    let p = plan(&a, &[], ts("2024-05-01T10:00:30Z"));
    assert!(matches!(p.decision, Decision::Unschedulable(_)), "{:?}", p.decision);
    a.spec.schedule = "not a schedule".into();
    let p = plan(&a, &[], ts("2024-05-01T10:00:30Z"));
    assert!(matches!(&p.decision, Decision::Unschedulable(e) if e.starts_with("unparsable schedule")));
}

#[test]
fn starting_deadline() {
    let mut a = acj("a", job_template(), "2024-05-01T10:00:00Z");
    a.spec.schedule = "0 * * * *".into();
    a.spec.starting_deadline_seconds = Some(60);
    // 11:00 is due; at 11:00:59 it is still in time, at 11:01:01 it is late.
    assert_eq!(plan(&a, &[], ts("2024-05-01T11:00:59Z")).create, Some(ts("2024-05-01T11:00:00Z")));
    let late = plan(&a, &[], ts("2024-05-01T11:01:01Z"));
    assert_eq!(late.decision, Decision::NothingDue, "the search starts at now - deadline");
    assert_eq!(late.requeue_after, Some(SignedDuration::from_secs(59 * 60 - 1)));
    // A zero deadline searches from now on: no run is ever due (as in kruise).
    a.spec.starting_deadline_seconds = Some(0);
    let p = plan(&a, &[], ts("2024-05-01T11:00:00Z"));
    assert_eq!((p.decision, p.create), (Decision::NothingDue, None));
}

#[test]
fn too_late_when_the_missed_run_is_past_its_deadline() {
    let mut a = acj("a", job_template(), "2024-05-01T10:00:00Z");
    a.spec.schedule = "@every 10s".into();
    a.spec.starting_deadline_seconds = Some(5);
    // @every runs from the earliest time: now - 5s = 10:00:25, next 10:00:35 > now → nothing due.
    let p = plan(&a, &[], ts("2024-05-01T10:00:30Z"));
    assert_eq!(p.decision, Decision::NothingDue);
    assert_eq!(p.requeue_after, Some(SignedDuration::from_secs(10)));
}

#[test]
fn concurrency_policies() {
    let now = ts("2024-05-01T10:02:10Z");
    let running = [child("a-1714557660", Some("2024-05-01T10:01:00Z"), None, Some("2024-05-01T10:01:01Z"))];
    let mut a = acj("a", job_template(), "2024-05-01T10:00:00Z");
    a.spec.concurrency_policy = ALLOW.into();
    let p = plan(&a, &running, now);
    assert_eq!((p.decision.clone(), p.create, p.replace.len()), (Decision::Run, Some(ts("2024-05-01T10:02:00Z")), 0));
    a.spec.concurrency_policy = FORBID.into();
    let p = plan(&a, &running, now);
    assert_eq!(p.decision, Decision::Forbidden);
    assert_eq!(p.create, None);
    assert_eq!(p.requeue_after, Some(SignedDuration::from_secs(50)));
    a.spec.concurrency_policy = REPLACE.into();
    let p = plan(&a, &running, now);
    assert_eq!(p.replace, ["a-1714557660"]);
    assert_eq!(p.create, Some(ts("2024-05-01T10:02:00Z")));
    // A finished child does not block Forbid.
    a.spec.concurrency_policy = FORBID.into();
    let done = [child("a-1714557660", Some("2024-05-01T10:01:00Z"), Some(Finished::Complete), None)];
    assert_eq!(plan(&a, &done, now).decision, Decision::Run);
}

#[test]
fn paused_cleans_history_but_creates_nothing() {
    let mut a = acj("a", job_template(), "2024-05-01T10:00:00Z");
    a.spec.paused = Some(true);
    a.spec.successful_jobs_history_limit = Some(1);
    let done = [
        child("a-1", Some("2024-05-01T10:01:00Z"), Some(Finished::Complete), Some("2024-05-01T10:01:01Z")),
        child("a-2", Some("2024-05-01T10:02:00Z"), Some(Finished::Complete), Some("2024-05-01T10:02:01Z")),
    ];
    let p = plan(&a, &done, ts("2024-05-01T10:05:00Z"));
    assert_eq!(p.decision, Decision::Paused);
    assert_eq!(p.create, None);
    assert_eq!(p.requeue_after, None);
    assert_eq!(p.delete_history, ["a-1"]);
}

#[test]
fn history_limits_delete_the_oldest_first() {
    let mut a = acj("a", job_template(), "2024-05-01T10:00:00Z");
    a.spec.successful_jobs_history_limit = Some(2);
    a.spec.failed_jobs_history_limit = Some(1);
    let ok = Some(Finished::Complete);
    let ko = Some(Finished::Failed);
    let children = [
        child("s-late", None, ok, Some("2024-05-01T10:03:00Z")),
        child("s-early", None, ok, Some("2024-05-01T10:01:00Z")),
        child("s-mid", None, ok, Some("2024-05-01T10:02:00Z")),
        child("s-never", None, ok, None),
        child("f-1", None, ko, Some("2024-05-01T10:01:00Z")),
        child("f-2", None, ko, Some("2024-05-01T10:02:00Z")),
    ];
    let p = plan(&a, &children, ts("2024-05-01T10:03:30Z"));
    assert_eq!(p.delete_history, ["f-1", "s-never", "s-early"]);
    a.spec.successful_jobs_history_limit = None;
    a.spec.failed_jobs_history_limit = Some(0);
    assert_eq!(plan(&a, &children, ts("2024-05-01T10:03:30Z")).delete_history, ["f-1", "f-2"]);
}

#[test]
fn time_zone_field_is_ignored_when_the_schedule_names_one_or_it_does_not_load() {
    let mut a = acj("a", job_template(), "2024-05-01T10:00:00Z");
    a.spec.schedule = "CRON_TZ=UTC 0 * * * *".into();
    a.spec.time_zone = Some("Asia/Shanghai".into());
    assert_eq!(format_schedule(&a), "CRON_TZ=UTC 0 * * * *");
    a.spec.schedule = "0 * * * *".into();
    a.spec.time_zone = Some("Nowhere/Land".into());
    assert_eq!(format_schedule(&a), "0 * * * *");
    a.spec.time_zone = Some("Asia/Shanghai".into());
    assert_eq!(format_schedule(&a), "TZ=Asia/Shanghai 0 * * * *");
}

mod props {
    use super::*;
    use proptest::prelude::*;

    const SCHEDULES: &[&str] = &["* * * * *", "*/5 * * * *", "0 * * * *", "@every 10s", "@every 90s", "30 2 * * 1-5"];
    const POLICIES: &[&str] = &[ALLOW, FORBID, REPLACE];
    const BASE: i64 = 1_714_557_600; // 2024-05-01T10:00:00Z

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(BASE + secs).unwrap()
    }

    proptest! {
        /// Whatever the children and the clock: a run is created only when due (at or before now,
        /// after the last one scheduled, within the deadline), never under Forbid with an active
        /// child, never when paused; Replace deletes exactly the active children; the requeue is
        /// in the future.
        #[test]
        fn runs_are_due_unique_and_respect_the_policy(
            schedule in 0..SCHEDULES.len(),
            policy in 0..POLICIES.len(),
            paused in any::<bool>(),
            deadline in proptest::option::of(0i64..600),
            now in 0i64..20_000,
            kids in proptest::collection::vec((0i64..20_000, 0u8..3), 0..6),
        ) {
            let mut a = acj("p", job_template(), "2024-05-01T10:00:00Z");
            a.spec.schedule = SCHEDULES[schedule].into();
            a.spec.concurrency_policy = POLICIES[policy].into();
            a.spec.paused = Some(paused);
            a.spec.starting_deadline_seconds = deadline;
            let now = at(now);
            let children: Vec<Child> = kids
                .iter()
                .enumerate()
                .filter(|(_, (t, _))| at(*t) <= now)
                .map(|(i, (t, f))| {
                    let finished = match f { 0 => None, 1 => Some(Finished::Complete), _ => Some(Finished::Failed) };
                    child(&format!("p-{i}"), Some(&build::rfc3339(at(*t))), finished, None)
                })
                .collect();
            let p = plan(&a, &children, now);
            let last = p.status.last_schedule_time.as_ref().map(|t| t.0);
            let active: Vec<String> = children.iter().filter(|c| c.finished.is_none()).map(|c| c.name()).collect();
            prop_assert_eq!(p.status.active.len(), active.len());
            if let Some(run) = p.create {
                prop_assert!(!paused);
                prop_assert!(run <= now);
                prop_assert!(last.is_none_or(|l| run > l), "{run} after {last:?}");
                if let Some(d) = deadline {
                    prop_assert!(run.checked_add(SignedDuration::from_secs(d)).unwrap() >= now);
                }
                prop_assert!(POLICIES[policy] != FORBID || active.is_empty());
                if POLICIES[policy] == REPLACE {
                    prop_assert_eq!(&p.replace, &active);
                } else {
                    prop_assert!(p.replace.is_empty());
                }
            } else {
                prop_assert!(p.replace.is_empty());
            }
            if let Some(r) = p.requeue_after {
                prop_assert!(r.is_positive());
            }
        }
    }
}
