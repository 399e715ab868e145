//! The AdvancedCronJob planner (issue 33 item 4; kruise `pkg/controller/advancedcronjob`,
//! v1.8.4: `reconcileJob` / `reconcileBroadcastJob`, which follow the kubebuilder CronJob
//! tutorial rather than upstream's CronJob controller). Given the AdvancedCronJob, its children
//! (Jobs or BroadcastJobs whose controller is an `apps.kruise.io/v1alpha1` AdvancedCronJob of
//! that name, as kruise's `.metadata.controller` index files them) and the time, it decides:
//! - the status: `type` (Job when a Job template is set, else BroadcastJob), `active` (references
//!   to the unfinished children, by name) and `lastScheduleTime` (the latest
//!   `apps.kruise.io/scheduled-at` of any child, or none);
//! - the finished children beyond `successfulJobsHistoryLimit` / `failedJobsHistoryLimit`,
//!   oldest `status.startTime` first (children without one first);
//! - nothing more when `paused`;
//! - the most recent missed run since `lastScheduleTime` (else `creationTimestamp`), or since
//!   `now - startingDeadlineSeconds` when that is later; more than 100 missed runs is an error
//!   (nothing is created), as is a schedule that does not parse;
//! - a run later than `startingDeadlineSeconds` is skipped; `Forbid` skips a run while a child is
//!   active; `Replace` deletes the active children first; then the child of that run is
//!   created, named `<acj>-<unix seconds of the run>`;
//! - a requeue at the next run after `now`.
//!
//! The schedule is `cron.ParseStandard` of the schedule, prefixed `TZ=<timeZone> ` when
//! `timeZone` names a zone and the schedule has no `TZ` of its own (kruise's `formatSchedule`);
//! times without a zone are UTC, the manager's clock.

pub mod build;
#[cfg(test)]
mod props;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::tz::TimeZone;
use k8s_openapi::jiff::{SignedDuration, Timestamp, Zoned};

use crate::apis::advancedcronjob::{AdvancedCronJob, AdvancedCronJobStatus, FORBID, REPLACE};
use crate::apis::broadcastjob::BroadcastJob;
use crate::compat::cron::{Schedule, load_location, parse_standard};

/// The annotation holding the scheduled time of a child (RFC 3339).
pub const SCHEDULED_AT: &str = "apps.kruise.io/scheduled-at";
/// The apiVersion of the owner references kruise writes and indexes.
pub const OWNER_API_VERSION: &str = "apps.kruise.io/v1alpha1";
/// The owner kind.
pub const OWNER_KIND: &str = "AdvancedCronJob";
/// `status.type` with a Job template.
pub const TYPE_JOB: &str = "Job";
/// `status.type` otherwise.
pub const TYPE_BROADCAST_JOB: &str = "BroadcastJob";
/// kruise gives up past this many missed runs.
pub const MAX_MISSED: usize = 100;

/// How a child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finished {
    /// A `Complete` condition is `True`.
    Complete,
    /// A `Failed` condition is `True`.
    Failed,
}

/// A child as the planner sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Child {
    /// Its reference for `status.active`.
    pub reference: ObjectReference,
    /// Finished, or still active.
    pub finished: Option<Finished>,
    /// The raw `apps.kruise.io/scheduled-at` annotation.
    pub scheduled_at: Option<String>,
    /// `status.startTime`.
    pub start_time: Option<Timestamp>,
}

fn finished_of<'a>(conditions: impl Iterator<Item = (&'a str, &'a str)>) -> Option<Finished> {
    for (type_, status) in conditions {
        if status == "True" {
            match type_ {
                "Complete" => return Some(Finished::Complete),
                "Failed" => return Some(Finished::Failed),
                _ => {}
            }
        }
    }
    None
}

fn reference(meta: &ObjectMeta, api_version: &str, kind: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some(api_version.into()),
        kind: Some(kind.into()),
        name: meta.name.clone(),
        namespace: meta.namespace.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        field_path: None,
    }
}

impl Child {
    /// A batch/v1 Job.
    pub fn from_job(job: &Job) -> Child {
        let status = job.status.as_ref();
        let conditions = status.and_then(|s| s.conditions.as_deref()).unwrap_or_default();
        Child {
            reference: reference(&job.metadata, "batch/v1", "Job"),
            finished: finished_of(conditions.iter().map(|c| (c.type_.as_str(), c.status.as_str()))),
            scheduled_at: scheduled_at(&job.metadata),
            start_time: status.and_then(|s| s.start_time.as_ref()).map(|t| t.0),
        }
    }

    /// A BroadcastJob.
    pub fn from_broadcast_job(job: &BroadcastJob) -> Child {
        let status = job.status.as_ref();
        let conditions = status.map(|s| s.conditions.as_slice()).unwrap_or_default();
        Child {
            reference: reference(&job.metadata, OWNER_API_VERSION, "BroadcastJob"),
            finished: finished_of(conditions.iter().map(|c| (c.type_.as_str(), c.status.as_str()))),
            scheduled_at: scheduled_at(&job.metadata),
            start_time: status.and_then(|s| s.start_time.as_ref()).map(|t| t.0),
        }
    }

    fn name(&self) -> String {
        self.reference.name.clone().unwrap_or_default()
    }
}

fn scheduled_at(meta: &ObjectMeta) -> Option<String> {
    meta.annotations.as_ref().and_then(|a| a.get(SCHEDULED_AT)).cloned()
}

/// Whether `meta`'s controller is the AdvancedCronJob `name` (kruise's `.metadata.controller`
/// index: by owner name, apiVersion `apps.kruise.io/v1alpha1` and kind).
pub fn is_child_of(meta: &ObjectMeta, name: &str) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| r.controller == Some(true))
        .is_some_and(|r| r.api_version == OWNER_API_VERSION && r.kind == OWNER_KIND && r.name == name)
}

/// kruise's `formatSchedule`.
pub fn format_schedule(acj: &AdvancedCronJob) -> String {
    let schedule = &acj.spec.schedule;
    if schedule.contains("TZ") {
        return schedule.clone();
    }
    match acj.spec.time_zone.as_deref() {
        Some(tz) if load_location(tz).is_ok() => format!("TZ={tz} {schedule}"),
        _ => schedule.clone(),
    }
}

/// Why nothing (or something) was created this round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// `paused: true`.
    Paused,
    /// The schedule does not parse, or too many runs were missed: kruise logs it and stops.
    Unschedulable(String),
    /// No run is due.
    NothingDue,
    /// The due run is past `startingDeadlineSeconds`.
    TooLate,
    /// `Forbid` and a child is active.
    Forbidden,
    /// The due run's child is created (after the active ones are deleted under `Replace`).
    Run,
}

/// What a round does.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The status to write.
    pub status: AdvancedCronJobStatus,
    /// Finished children beyond the history limits, to delete (background propagation).
    pub delete_history: Vec<String>,
    /// Active children to delete before creating (`Replace`).
    pub replace: Vec<String>,
    /// The scheduled time of the child to create.
    pub create: Option<Timestamp>,
    /// When to look again (the next run), if ever.
    pub requeue_after: Option<SignedDuration>,
    /// Why.
    pub decision: Decision,
}

fn parse_rfc3339(raw: &str) -> Option<Timestamp> {
    raw.parse::<Timestamp>().ok()
}

/// Plans one round for `acj` with its `children` at `now`.
pub fn plan(acj: &AdvancedCronJob, children: &[Child], now: Timestamp) -> Plan {
    let type_ = if acj.spec.template.job_template.is_some() { TYPE_JOB } else { TYPE_BROADCAST_JOB };
    let mut active: Vec<&Child> = Vec::new();
    let mut succeeded: Vec<&Child> = Vec::new();
    let mut failed: Vec<&Child> = Vec::new();
    let mut most_recent: Option<Timestamp> = None;
    let mut sorted: Vec<&Child> = children.iter().collect();
    sorted.sort_by_key(|c| c.name());
    for c in sorted {
        match c.finished {
            None => active.push(c),
            Some(Finished::Failed) => failed.push(c),
            Some(Finished::Complete) => succeeded.push(c),
        }
        if let Some(t) = c.scheduled_at.as_deref().filter(|s| !s.is_empty()).and_then(parse_rfc3339) {
            most_recent = Some(most_recent.map_or(t, |m| m.max(t)));
        }
    }
    let status = AdvancedCronJobStatus {
        type_: type_.to_string(),
        active: active.iter().map(|c| c.reference.clone()).collect(),
        last_schedule_time: most_recent.map(Time),
    };
    let mut delete_history = Vec::new();
    for (list, limit) in
        [(&mut failed, acj.spec.failed_jobs_history_limit), (&mut succeeded, acj.spec.successful_jobs_history_limit)]
    {
        let Some(limit) = limit else { continue };
        // Oldest start first; children that never started before any that did.
        list.sort_by_key(|c| (c.start_time.is_some(), c.start_time));
        let excess = i64::try_from(list.len()).unwrap_or(i64::MAX) - i64::from(limit);
        delete_history.extend(list.iter().take(usize::try_from(excess.max(0)).unwrap_or(0)).map(|c| c.name()));
    }
    let mut plan = Plan {
        status,
        delete_history,
        replace: Vec::new(),
        create: None,
        requeue_after: None,
        decision: Decision::NothingDue,
    };
    if acj.spec.paused == Some(true) {
        plan.decision = Decision::Paused;
        return plan;
    }
    let next = match next_schedule(acj, most_recent, now) {
        Ok(next) => next,
        Err(e) => {
            plan.decision = Decision::Unschedulable(e);
            return plan;
        }
    };
    plan.requeue_after = next.next.map(|n| now.duration_until(n)).filter(|d| d.is_positive());
    let Some(missed) = next.last_missed else {
        return plan;
    };
    if let Some(deadline) = acj.spec.starting_deadline_seconds
        && missed.checked_add(SignedDuration::from_secs(deadline)).is_ok_and(|t| t < now)
    {
        plan.decision = Decision::TooLate;
        return plan;
    }
    if acj.spec.concurrency_policy == FORBID && !active.is_empty() {
        plan.decision = Decision::Forbidden;
        return plan;
    }
    if acj.spec.concurrency_policy == REPLACE {
        plan.replace = active.iter().map(|c| c.name()).collect();
    }
    plan.create = Some(missed);
    plan.decision = Decision::Run;
    plan
}

/// The runs around `now`: the latest one missed (due, not yet run) and the next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextSchedule {
    /// The most recent run at or before `now` after the last one scheduled.
    pub last_missed: Option<Timestamp>,
    /// The first run after `now` (none when the schedule has no more).
    pub next: Option<Timestamp>,
}

/// kruise's `getNextSchedule`, with `last_schedule` the status' `lastScheduleTime`.
pub fn next_schedule(
    acj: &AdvancedCronJob,
    last_schedule: Option<Timestamp>,
    now: Timestamp,
) -> Result<NextSchedule, String> {
    let sched = parse_standard(&format_schedule(acj))
        .map_err(|e| format!("unparsable schedule {:?}: {e}", acj.spec.schedule))?;
    let created = acj.metadata.creation_timestamp.as_ref().map_or(Timestamp::UNIX_EPOCH, |t| t.0);
    let mut earliest = last_schedule.unwrap_or(created);
    if let Some(deadline) = acj.spec.starting_deadline_seconds
        && let Ok(d) = now.checked_sub(SignedDuration::from_secs(deadline))
        && d > earliest
    {
        earliest = d;
    }
    let zoned = |t: Timestamp| t.to_zoned(TimeZone::UTC);
    let next_of = |s: &Schedule, t: Timestamp| s.next(&zoned(t)).map(|z: Zoned| z.timestamp());
    let next = next_of(&sched, now);
    if earliest > now {
        return Ok(NextSchedule { last_missed: None, next });
    }
    let mut last_missed = None;
    let mut starts = 0;
    let mut t = next_of(&sched, earliest);
    loop {
        // Go's zero time (no run within five years) is never after now: it counts as missed.
        if t.is_some_and(|t| t > now) {
            break;
        }
        last_missed = t;
        starts += 1;
        if starts > MAX_MISSED {
            return Err(
                "too many missed start times (> 100). Set or decrease .spec.startingDeadlineSeconds or check clock skew"
                    .into(),
            );
        }
        t = match t {
            Some(t) => next_of(&sched, t),
            None => None,
        };
    }
    Ok(NextSchedule { last_missed, next })
}

#[cfg(test)]
mod tests;
