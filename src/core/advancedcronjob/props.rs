//! Invariants of the AdvancedCronJob planner over random clocks (issue 33 "property tests"): an
//! every-minute AdvancedCronJob under each `concurrencyPolicy`, history limits and an optional
//! `startingDeadlineSeconds`; proptest picks how far the clock moves between rounds (seconds to
//! several minutes: missed runs) and how long each child runs. Each round's plan is applied to a
//! fake API holding the children (history and replaced children deleted — each must exist — then
//! the new child created, named `<acj>-<unix seconds>` as kruise names it), then children whose
//! time is up finish. Checked every round:
//! 1. `Forbid` and `Replace` never leave two active children (`Forbid` creates nothing while one
//!    is active);
//! 2. a run is never in the future, and, while the previous run's child is still there, never
//!    that run again nor an earlier one (kruise reads the last schedule time from the children
//!    only: with a history limit of 0, a run whose child finished and was deleted within its
//!    minute is run again — kruise's behaviour, kept and shown here by the rule's condition);
//! 3. after the round, finished children within the history limits;
//! 4. `status.active` names exactly the active children.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::json;

use super::*;

#[derive(Clone, Debug)]
struct Case {
    policy: &'static str,
    /// Seconds the clock moves before each round.
    steps: Vec<i64>,
    /// Seconds each child runs (by creation order, cycled).
    durations: Vec<i64>,
    /// Whether each child fails (cycled).
    fails: Vec<bool>,
    deadline: Option<i64>,
    keep: (i32, i32),
}

fn cases() -> impl Strategy<Value = Case> {
    (
        prop_oneof![Just(ALLOW), Just(FORBID), Just(REPLACE)],
        proptest::collection::vec(prop_oneof![1i64..70, 60i64..400], 5..40),
        proptest::collection::vec(10i64..200, 1..6),
        proptest::collection::vec(proptest::bool::weighted(0.3), 1..4),
        proptest::option::of(5i64..120),
        (0i32..3, 0i32..3),
    )
        .prop_map(|(policy, steps, durations, fails, deadline, keep)| Case {
            policy,
            steps,
            durations,
            fails,
            deadline,
            keep,
        })
}

const ALLOW: &str = crate::apis::advancedcronjob::ALLOW;

#[derive(Clone, Debug)]
struct Run {
    child: Child,
    ends: Timestamp,
    fails: bool,
}

fn run(c: &Case) {
    let created = Timestamp::from_second(1_700_000_000).unwrap_or(Timestamp::UNIX_EPOCH);
    let mut acj: AdvancedCronJob = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "AdvancedCronJob",
        "metadata": {"name": "tick", "namespace": "default", "uid": "uid-acj",
                     "creationTimestamp": created.to_string()},
        "spec": {"schedule": "* * * * *", "concurrencyPolicy": c.policy, "paused": false,
                 "successfulJobsHistoryLimit": c.keep.0, "failedJobsHistoryLimit": c.keep.1,
                 "template": {"broadcastJobTemplate": {"spec": {"template": {"spec": {
                     "containers": [{"name": "c", "image": "busybox"}]}}}}}}
    }))
    .unwrap_or_default();
    acj.spec.starting_deadline_seconds = c.deadline;
    let mut now = created;
    let mut children: BTreeMap<String, Run> = BTreeMap::new();
    let mut ever: Vec<String> = Vec::new();
    let mut last_run: Option<Timestamp> = None;
    for step in &c.steps {
        now = now.checked_add(SignedDuration::from_secs(*step)).unwrap_or(now);
        // Children whose time is up finish.
        for r in children.values_mut() {
            if r.child.finished.is_none() && r.ends <= now {
                r.child.finished = Some(if r.fails { Finished::Failed } else { Finished::Complete });
            }
        }
        let list: Vec<Child> = children.values().map(|r| r.child.clone()).collect();
        let last_kept = last_run.filter(|t| children.contains_key(&format!("tick-{}", t.as_second())));
        let active_before = list.iter().filter(|c| c.finished.is_none()).count();
        let p = plan(&acj, &list, now);
        let active_names: Vec<String> = list.iter().filter(|c| c.finished.is_none()).map(Child::name).collect();
        let named: Vec<String> = p.status.active.iter().filter_map(|r| r.name.clone()).collect();
        assert_eq!(named, active_names, "4. status.active");
        for name in p.delete_history.iter().chain(&p.replace) {
            assert!(children.remove(name).is_some(), "deleted {name}, which is not there");
        }
        if let Some(t) = p.create {
            assert!(t <= now, "a run in the future: {t} at {now}");
            assert!(last_kept.is_none_or(|l| t > l), "2. a run at {t}, not after the last one {last_kept:?}");
            if c.policy == FORBID {
                assert_eq!(active_before, 0, "1. Forbid created beside an active child");
            }
            let name = format!("tick-{}", t.as_second());
            assert!(!children.contains_key(&name), "2. {name} created while it exists");
            ever.push(name.clone());
            let i = ever.len() - 1;
            let reference = ObjectReference { name: Some(name.clone()), ..Default::default() };
            let child = Child { reference, finished: None, scheduled_at: Some(t.to_string()), start_time: Some(now) };
            let ends = now.checked_add(SignedDuration::from_secs(c.durations[i % c.durations.len()])).unwrap_or(now);
            children.insert(name, Run { child, ends, fails: c.fails[i % c.fails.len()] });
            last_run = Some(t);
        }
        let active = children.values().filter(|r| r.child.finished.is_none()).count();
        if c.policy != ALLOW {
            assert!(active <= 1, "1. {} leaves {active} active children", c.policy);
        }
        let count = |f: Finished| children.values().filter(|r| r.child.finished == Some(f)).count() as i32;
        assert!(count(Finished::Complete) <= c.keep.0.max(0), "3. successful history beyond the limit");
        assert!(count(Finished::Failed) <= c.keep.1.max(0), "3. failed history beyond the limit");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn cron_jobs_respect_concurrency_policy_and_history(c in cases()) {
        run(&c);
    }
}
