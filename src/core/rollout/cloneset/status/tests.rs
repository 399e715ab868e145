//! kruise's status tables (pkg/controller/cloneset/cloneset_status_test.go and
//! utils/cloneset_utils_test.go): `TestSyncProgressingStatus` (37 rows), `TestHasProgressingConditionChanged`
//! (9), `TestGetRequeueSecondsFromCondition` (4) and `TestSetCloneSetCondition` (4). Like kruise's
//! test, the Progressing rows compare the condition's status and reason; "now" is a time long after
//! the old conditions (kruise's test checks the deadline with the real clock).

use super::*;
use crate::apis::cloneset::CloneSetSpec;
use crate::core::rollout::cloneset::settings::Gates;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

fn s(v: &str) -> IntOrString {
    IntOrString::String(v.into())
}

#[allow(clippy::too_many_arguments)]
fn ns(
    replicas: i32,
    ready: i32,
    available: i32,
    updated: i32,
    updated_ready: i32,
    updated_available: i32,
    expected: i32,
    current: &str,
    update: &str,
) -> CloneSetStatus {
    CloneSetStatus {
        replicas,
        ready_replicas: ready,
        available_replicas: available,
        updated_replicas: updated,
        updated_ready_replicas: updated_ready,
        updated_available_replicas: updated_available,
        expected_updated_replicas: expected,
        current_revision: current.into(),
        update_revision: update.into(),
        ..Default::default()
    }
}

/// With a Progressing/CloneSetUpdated condition last updated at `at` seconds.
fn cond_at(mut st: CloneSetStatus, status: &str, at: i64) -> CloneSetStatus {
    let mut c = new_condition(PROGRESSING, status, CLONESET_PROGRESS_UPDATED, "", Timestamp::from_second(at).unwrap());
    c.message = String::new();
    st.conditions.push(c);
    st
}

/// kruise's `oldTime`, 2025-07-20 11:00.
fn old_cond(st: CloneSetStatus, status: &str) -> CloneSetStatus {
    cond_at(st, status, 1_753_009_200)
}

type Row = (
    &'static str,
    Option<i32>,
    Option<i32>,
    bool,
    Option<IntOrString>,
    Option<CloneSetStatus>,
    Option<(&'static str, &'static str)>,
);

#[test]
fn kruise_sync_progressing_status() {
    let now = Timestamp::from_second(1_800_000_000).unwrap();
    #[rustfmt::skip]
    let rows: Vec<Row> = vec![
        ("legacy cs starts with nil pds, should remove the condition", None, Some(10), false, None, Some(ns(5, 4, 3, 2, 1, 1, 2, "1", "2")), None),
        ("legacy cs starts with MaxInt32 pds, should remove the condition", Some(i32::MAX), Some(10), false, None, Some(ns(5, 4, 3, 2, 1, 1, 2, "1", "2")), None),
        ("legacy cs starts deploying", Some(10), Some(10), false, None, Some(ns(5, 4, 3, 2, 1, 1, 2, "1", "2")), Some(("True", CLONESET_PROGRESS_UPDATED))),
        ("legacy cs starts paused", Some(10), Some(10), true, None, Some(ns(5, 4, 3, 2, 1, 1, 2, "1", "1")), Some(("True", CLONESET_PROGRESS_PAUSED))),
        ("legacy cs is available", Some(10), Some(10), false, None, Some(ns(10, 10, 10, 10, 10, 10, 10, "1", "1")), Some(("True", CLONESET_AVAILABLE))),
        ("legacy cs is scaling", Some(10), Some(1), false, None, Some(ns(10, 9, 8, 10, 9, 8, 10, "2", "2")), Some(("True", CLONESET_PROGRESS_UPDATED))),
        ("legacy cs is paused", Some(10), Some(1), true, None, Some(ns(10, 8, 7, 6, 5, 5, 6, "1", "2")), Some(("True", CLONESET_PROGRESS_PAUSED))),
        ("legacy cs is available, and CloneSet is paused due to partition available", Some(10), Some(10), false, Some(s("90%")), Some(ns(10, 10, 10, 1, 1, 1, 1, "1", "2")), Some(("True", CLONESET_PROGRESS_PARTITION_AVAILABLE))),
        ("startup with CloneSetAvailable condition, and pds is updated to nil", None, Some(10), false, None, Some(ns(5, 0, 0, 0, 0, 0, 0, "1", "1")), None),
        ("startup with CloneSetAvailable condition, and pds is updated to maxInt32", Some(i32::MAX), Some(10), false, None, Some(ns(5, 0, 0, 0, 0, 0, 0, "1", "1")), None),
        ("startup with CloneSetAvailable condition, and CloneSet scales up replicas", Some(10), Some(10), false, None, Some(ns(5, 5, 5, 5, 5, 5, 10, "1", "1")), Some(("True", CLONESET_PROGRESS_UPDATED))),
        ("startup with CloneSetAvailable condition, and CloneSet scales up replicas, timeout", Some(10), Some(10), false, None, Some(old_cond(ns(10, 8, 8, 10, 8, 8, 10, "1", "1"), "True")), Some(("False", CLONESET_PROGRESS_DEADLINE_EXCEEDED))),
        ("startup with CloneSetAvailable condition, and CloneSet reconciles with a new revision", Some(10), None, false, None, Some(ns(1, 0, 0, 0, 0, 0, 1, "1", "2")), Some(("True", CLONESET_PROGRESS_UPDATED))),
        ("startup with Updated condition, and pds is updated to nil", None, Some(10), false, Some(s("50%")), Some(ns(10, 10, 10, 5, 5, 5, 5, "1", "2")), None),
        ("startup with Updated condition, and pds is updated to maxInt32", Some(i32::MAX), Some(10), false, Some(s("50%")), Some(ns(10, 10, 10, 5, 5, 5, 5, "1", "2")), None),
        ("startup with Updated condition, and CloneSet is paused due to partition available", Some(10), Some(10), false, Some(s("50%")), Some(ns(10, 10, 10, 5, 5, 5, 5, "1", "2")), Some(("True", CLONESET_PROGRESS_PARTITION_AVAILABLE))),
        ("startup with Updated condition, and CloneSet is scaled down from 10 to 6, partition available", Some(10), Some(6), false, Some(s("10%")), Some(ns(10, 9, 9, 8, 8, 8, 5, "1", "2")), Some(("True", CLONESET_PROGRESS_PARTITION_AVAILABLE))),
        ("startup with Updated condition, and CloneSet is scaled down from 10 to 6, only ExpectedUpdatedReplicas changed and not timeout", Some(10), Some(6), false, Some(s("10%")), Some(ns(10, 9, 9, 8, 6, 6, 8, "1", "2")), Some(("True", CLONESET_PROGRESS_UPDATED))),
        ("startup with Updated condition, and CloneSet is scaled down from 10 to 6, only ExpectedUpdatedReplicas and timeout", Some(10), Some(6), false, Some(s("10%")), Some(old_cond(ns(6, 6, 6, 4, 4, 4, 6, "1", "2"), "")), Some(("False", CLONESET_PROGRESS_DEADLINE_EXCEEDED))),
        ("startup with Updated condition, and CloneSet is scaled up from 10 to 20", Some(10), Some(20), false, Some(s("50%")), Some(ns(15, 14, 14, 10, 10, 9, 10, "1", "2")), Some(("True", CLONESET_PROGRESS_UPDATED))),
        ("startup with Updated condition, and CloneSet is timeout", Some(10), Some(20), false, Some(s("50%")), Some(cond_at(ns(10, 5, 5, 5, 3, 1, 10, "1", "2"), "True", 10)), Some(("False", CLONESET_PROGRESS_DEADLINE_EXCEEDED))),
        ("startup with Updated condition, and CloneSet is available", Some(10), Some(20), false, Some(s("0%")), Some(ns(20, 20, 20, 20, 20, 20, 20, "2", "2")), Some(("True", CLONESET_AVAILABLE))),
        ("startup with Updated condition, and CloneSet is paused", Some(10), Some(20), true, Some(s("50%")), Some(ns(15, 14, 14, 10, 10, 9, 10, "1", "2")), Some(("True", CLONESET_PROGRESS_PAUSED))),
        ("startup with Paused condition, and pds is updated to nil", None, Some(20), true, Some(s("50%")), Some(ns(15, 14, 14, 10, 10, 9, 10, "1", "2")), None),
        ("startup with Paused condition, and pds is updated to maxInt32", Some(i32::MAX), Some(20), true, Some(s("50%")), Some(ns(15, 14, 14, 10, 10, 9, 10, "1", "2")), None),
        ("startup with Paused condition, and CloneSet is paused again", Some(10), Some(20), true, Some(s("50%")), Some(ns(15, 14, 14, 10, 10, 9, 10, "1", "2")), Some(("True", CLONESET_PROGRESS_PAUSED))),
        ("startup with Paused condition, and CloneSet is resumed", Some(10), Some(20), false, Some(s("50%")), Some(ns(15, 14, 14, 10, 10, 9, 10, "1", "2")), Some(("True", CLONESET_PROGRESS_UPDATED))),
        ("startup with DeadlineExceeded condition, and pds is updated to nil", None, Some(20), false, Some(s("50%")), Some(ns(15, 14, 14, 10, 10, 9, 10, "1", "2")), None),
        ("startup with DeadlineExceeded condition,and pds is updated to maxInt32", Some(i32::MAX), Some(20), false, Some(s("50%")), Some(ns(15, 14, 14, 10, 10, 9, 10, "1", "2")), None),
        ("startup with DeadlineExceeded condition, and CloneSet is paused", Some(10), Some(20), true, Some(s("50%")), Some(ns(15, 14, 14, 10, 10, 9, 10, "1", "2")), Some(("True", CLONESET_PROGRESS_PAUSED))),
        ("startup with DeadlineExceeded condition, and CloneSet starts a new revision", Some(10), Some(20), false, Some(s("90%")), Some(ns(20, 10, 10, 2, 2, 2, 4, "1", "3")), Some(("True", CLONESET_PROGRESS_UPDATED))),
        ("startup with PartitionAvailable condition, and CloneSet is paused", Some(10), Some(10), true, Some(s("50%")), Some(ns(10, 10, 10, 5, 5, 5, 5, "1", "2")), Some(("True", CLONESET_PROGRESS_PAUSED))),
        ("startup with PartitionAvailable condition, and pds is updated to nil", None, Some(10), true, Some(s("50%")), Some(ns(10, 10, 10, 5, 5, 5, 5, "1", "2")), None),
        ("startup with PartitionAvailable condition, and pds is updated to maxInt32", Some(i32::MAX), Some(10), true, Some(s("50%")), Some(ns(10, 10, 10, 5, 5, 5, 5, "1", "2")), None),
        ("startup with PartitionAvailable condition, and CloneSet scales up", Some(10), Some(20), false, Some(s("50%")), Some(ns(15, 15, 15, 6, 6, 6, 10, "1", "2")), Some(("True", CLONESET_PROGRESS_UPDATED))),
        ("startup with PartitionAvailable condition, and CloneSet scales up and available again", Some(10), Some(20), false, Some(s("50%")), Some(ns(20, 20, 20, 10, 10, 10, 10, "1", "2")), Some(("True", CLONESET_PROGRESS_PARTITION_AVAILABLE))),
        ("startup with Updated condition, and CloneSet is still progressing", Some(10), Some(10), false, Some(s("0%")), Some(ns(10, 5, 5, 5, 3, 1, 10, "1", "2")), Some(("True", CLONESET_PROGRESS_UPDATED))),
    ];
    assert_eq!(rows.len(), 37);
    for (name, pds, replicas, paused, partition, new_status, want) in rows {
        let mut spec = CloneSetSpec { replicas, progress_deadline_seconds: pds, ..Default::default() };
        spec.update_strategy.paused = paused;
        spec.update_strategy.partition = partition;
        let cs = CloneSet::new("cs", spec);
        let settings = Settings::new(&cs, Gates::default());
        let mut st = new_status.unwrap();
        progressing(&cs, &settings, &mut st, now);
        let got = condition(&st, PROGRESSING).map(|c| (c.status.clone(), c.reason.clone()));
        assert_eq!(got, want.map(|(a, b)| (a.to_string(), b.to_string())), "{name}");
    }
}

#[test]
fn kruise_has_progressing_condition_changed() {
    let t = |s: i64| Timestamp::from_second(s).unwrap();
    let old = CloneSetCondition {
        message: "Old message".into(),
        ..new_condition(PROGRESSING, "True", CLONESET_PROGRESS_UPDATED, "", t(100))
    };
    let new = CloneSetCondition {
        message: "New message".into(),
        ..new_condition(PROGRESSING, "True", CLONESET_PROGRESS_UPDATED, "", t(100))
    };
    let with = |c: &CloneSetCondition, edit: &dyn Fn(&mut CloneSetCondition)| {
        let mut c = c.clone();
        edit(&mut c);
        CloneSetStatus { conditions: vec![c], ..Default::default() }
    };
    let empty = CloneSetStatus::default();
    let same = |c: &CloneSetCondition| with(c, &|_| {});
    let rows: Vec<(&str, CloneSetStatus, CloneSetStatus, bool)> = vec![
        ("Both nil", empty.clone(), empty.clone(), false),
        ("Old nil, new exists", empty.clone(), same(&new), true),
        ("New nil, old exists", same(&new), empty.clone(), true),
        ("All fields same", same(&old), same(&old), false),
        ("Status changed", same(&old), with(&old, &|c| c.status = "False".into()), true),
        ("Reason changed", same(&old), with(&old, &|c| c.reason = CLONESET_PROGRESS_PAUSED.into()), true),
        ("Message changed", same(&old), with(&old, &|c| c.message = "New message".into()), false),
        ("LastUpdateTime changed", same(&old), with(&old, &|c| c.last_update_time = Some(Time(t(160)))), false),
        ("LastTransitionTime changed", same(&old), with(&old, &|c| c.last_transition_time = Some(Time(t(160)))), false),
    ];
    for (name, a, b, want) in rows {
        assert_eq!(progressing_changed(&a, &b), want, "{name}");
    }
}

#[test]
fn kruise_get_requeue_seconds_from_condition() {
    let now = Timestamp::from_second(1000).unwrap();
    let cond = |ago: i64| {
        new_condition(PROGRESSING, "True", CLONESET_PROGRESS_UPDATED, "", Timestamp::from_second(1000 - ago).unwrap())
    };
    let secs = SignedDuration::from_secs;
    let rows: Vec<(&str, Option<CloneSetCondition>, i32, Option<SignedDuration>)> = vec![
        ("Condition nil", None, 10, None),
        ("Deadline not exceeded", Some(cond(5)), 10, Some(secs(6))),
        ("Deadline exceeded", Some(cond(5)), 4, Some(secs(-1))),
        ("Exactly at deadline", Some(cond(4)), 4, Some(secs(0))),
    ];
    for (name, c, pds, want) in rows {
        assert_eq!(requeue_from_condition(c.as_ref(), pds, now), want, "{name}");
    }
}

#[test]
fn kruise_set_cloneset_condition() {
    let t = |s: i64| Timestamp::from_second(s).unwrap();
    let st = |c: CloneSetCondition| CloneSetStatus { conditions: vec![c], ..Default::default() };
    type SetRow = (&'static str, CloneSetStatus, CloneSetCondition, (&'static str, &'static str, &'static str), i64);
    let rows: Vec<SetRow> = vec![
        (
            "Add new condition",
            CloneSetStatus::default(),
            new_condition(PROGRESSING, "True", CLONESET_AVAILABLE, "test", t(100)),
            ("True", CLONESET_AVAILABLE, "test"),
            100,
        ),
        (
            "Update existing condition with different status",
            st(new_condition(PROGRESSING, "True", "old", "old", t(40))),
            new_condition(PROGRESSING, "False", CLONESET_PROGRESS_DEADLINE_EXCEEDED, "new", t(101)),
            ("False", CLONESET_PROGRESS_DEADLINE_EXCEEDED, "new"),
            101,
        ),
        (
            "Update existing condition with same condition",
            st(new_condition(PROGRESSING, "True", CLONESET_AVAILABLE, "", t(40))),
            new_condition(PROGRESSING, "True", CLONESET_AVAILABLE, "", t(101)),
            ("True", CLONESET_AVAILABLE, ""),
            40,
        ),
        (
            "Update existing condition with same status",
            st(CloneSetCondition {
                last_transition_time: Some(Time(t(-500))),
                ..new_condition(PROGRESSING, "True", CLONESET_PROGRESS_PARTITION_AVAILABLE, "", t(40))
            }),
            new_condition(PROGRESSING, "True", CLONESET_AVAILABLE, "", t(101)),
            ("True", CLONESET_AVAILABLE, ""),
            -500,
        ),
    ];
    for (name, mut status, cond, (want_status, want_reason, want_msg), transition) in rows {
        set_condition(&mut status, cond);
        assert_eq!(status.conditions.len(), 1, "{name}");
        let c = &status.conditions[0];
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            (want_status, want_reason, want_msg),
            "{name}"
        );
        assert_eq!(c.last_transition_time, Some(Time(t(transition))), "{name}: transition time");
    }
}
