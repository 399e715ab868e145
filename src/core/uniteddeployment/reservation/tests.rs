//! kruise v1.9.0's `TestCheckPodReserved`, `TestCalculateSubsetsStatusForReservedAdaptiveStrategy`
//! and `TestPostProcessSubsetStatusForReservedAdaptiveStrategy`, row by row, on a fixed clock.

use super::*;
use crate::apis::uniteddeployment::{AdaptiveUnitedDeploymentStrategy, UnitedDeploymentSubsetCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Value, json};

fn now() -> Timestamp {
    Timestamp::from_second(1_700_000_000).unwrap()
}

fn ago(secs: i64) -> Time {
    Time(now() - SignedDuration::from_secs(secs))
}

fn secs(s: i64) -> Option<SignedDuration> {
    Some(SignedDuration::from_secs(s))
}

fn pod(v: Value) -> Pod {
    serde_json::from_value(v).unwrap()
}

const PENDING: &str = "Pending";
const RUNNING: &str = "Running";

/// A pod of `TestCheckPodReserved`: phase, conditions, creation `created` seconds ago, labels.
fn check_pod_of(phase: &str, conditions: Value, created: i64, labels: Value) -> Pod {
    pod(json!({
        "metadata": {"name": "p", "creationTimestamp": ago(created), "labels": labels},
        "status": {"phase": phase, "conditions": conditions}
    }))
}

fn unschedulable() -> Value {
    json!({"type": "PodScheduled", "status": "False", "reason": "Unschedulable"})
}

fn scheduled() -> Value {
    json!({"type": "PodScheduled", "status": "True"})
}

fn ready(status: &str, since: i64) -> Value {
    json!({"type": "Ready", "status": status, "lastTransitionTime": ago(since)})
}

fn updated_condition(since: i64) -> UnitedDeploymentCondition {
    UnitedDeploymentCondition {
        type_: "UnitedDeploymentUpdated".into(),
        status: "False".into(),
        last_transition_time: Some(ago(since)),
        ..Default::default()
    }
}

/// A `TestCheckPodReserved` row: name, pod, updated revision, update started (seconds ago; None:
/// now), reserved, next check, update timeout.
type CheckRow = (&'static str, Pod, &'static str, Option<i64>, bool, Option<SignedDuration>, bool);

/// A `TestCalculateSubsetsStatusForReservedAdaptiveStrategy` row: name, Schedulable at the start,
/// pod, reserved pods, unschedulable, requeue, labels written.
type ReserveRow = (&'static str, &'static str, Pod, i32, bool, Option<SignedDuration>, Vec<bool>);

#[test]
fn check_pod_reserved_rows() {
    let reserved = json!({RESERVED_POD_LABEL: "true"});
    // name, pod, updated revision, update started (s ago; None: now), reserved, next check, update timeout
    let rows: Vec<CheckRow> = vec![
        (
            "Normal pod, pending, not long enough",
            check_pod_of(PENDING, json!([unschedulable()]), 3, json!({})),
            "",
            None,
            false,
            secs(7),
            false,
        ),
        (
            "Normal pod, pending, long enough",
            check_pod_of(PENDING, json!([unschedulable()]), 11, json!({})),
            "",
            None,
            true,
            secs(5),
            false,
        ),
        (
            "Normal pod, running",
            check_pod_of(RUNNING, json!([ready("True", 3), scheduled()]), 1, json!({})),
            "",
            None,
            false,
            None,
            false,
        ),
        (
            "reserved pod, pending",
            check_pod_of(PENDING, json!([ready("False", 3), unschedulable()]), 100, reserved.clone()),
            "",
            None,
            true,
            secs(5),
            false,
        ),
        (
            "reserved pod, ready, but not long enough",
            check_pod_of(RUNNING, json!([ready("True", 3), scheduled()]), 100, reserved.clone()),
            "",
            None,
            true,
            secs(2),
            false,
        ),
        (
            "reserved pod, ready, long enough",
            check_pod_of(RUNNING, json!([ready("True", 6), scheduled()]), 100, reserved.clone()),
            "",
            None,
            false,
            None,
            false,
        ),
        (
            "Normal pod, running, but with old revision and timeouted",
            check_pod_of(
                RUNNING,
                json!([ready("True", 3), scheduled()]),
                1,
                // even marked as not reserved
                json!({REVISION_LABEL: "old-revision", RESERVED_POD_LABEL: "false"}),
            ),
            "new-revision",
            Some(11),
            true,
            secs(5),
            true,
        ),
        (
            "Normal pod, running, but with old revision and not timeouted",
            check_pod_of(RUNNING, json!([ready("True", 3), scheduled()]), 1, json!({REVISION_LABEL: "old-revision"})),
            "new-revision",
            Some(4),
            false,
            secs(6),
            false,
        ),
    ];
    for (name, p, updated_revision, since, want_reserved, want_after, want_timeout) in rows {
        let cond = updated_condition(since.unwrap_or(0));
        let got = check_pod(
            &p,
            updated_revision,
            Some(&cond),
            SignedDuration::from_secs(10),
            SignedDuration::from_secs(5),
            now(),
        );
        assert_eq!(
            got,
            PodCheck { reserved: want_reserved, check_after: want_after, update_timeout: want_timeout },
            "{name}"
        );
    }
    // "Normal pod deleted": an old pod being deleted is neither reserved nor timed out.
    let mut deleted = check_pod_of(RUNNING, json!([ready("True", 99), scheduled()]), 100, json!({}));
    deleted.metadata.deletion_timestamp = Some(ago(1));
    let cond = updated_condition(99);
    let got = check_pod(&deleted, "", Some(&cond), SignedDuration::from_secs(10), SignedDuration::from_secs(5), now());
    assert_eq!(got, PodCheck { reserved: false, check_after: None, update_timeout: false }, "Normal pod deleted");
}

#[test]
fn the_reserved_label_is_read_as_kruise_does() {
    let of = |labels: Value| pod(json!({"metadata": {"labels": labels}}));
    assert_eq!(marked_as_reserved(&of(json!({RESERVED_POD_LABEL: "true"}))), (true, true));
    assert_eq!(marked_as_reserved(&of(json!({RESERVED_POD_LABEL: "false"}))), (false, true));
    assert_eq!(marked_as_reserved(&of(json!({RESERVED_POD_LABEL: "yes"}))), (false, true));
    assert_eq!(marked_as_reserved(&of(json!({}))), (false, false));
    assert_eq!(marked_as_reserved(&pod(json!({}))), (false, false));
}

fn strategy() -> UnitedDeploymentScheduleStrategy {
    UnitedDeploymentScheduleStrategy {
        type_: "Adaptive".into(),
        adaptive: Some(AdaptiveUnitedDeploymentStrategy {
            reschedule_critical_seconds: Some(10),
            unschedulable_duration: Some(30),
            reserve_unschedulable_pods: true,
        }),
    }
}

fn subset_status(schedulable: &str) -> UnitedDeploymentSubsetStatus {
    UnitedDeploymentSubsetStatus {
        name: "subset-1".into(),
        conditions: vec![UnitedDeploymentSubsetCondition {
            type_: SCHEDULABLE.into(),
            status: schedulable.into(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// kruise's `modifyPod`: pending (PodScheduled False/Unschedulable, Ready False) or running
/// (scheduled, Ready True), the Ready transition `ready` and creation `created` seconds ago, the
/// reserved label when `label` is not empty.
fn modified_pod(ready_ago: i64, created: i64, pending: bool, label: &str) -> Pod {
    let (phase, conditions) = if pending {
        (PENDING, json!([unschedulable(), ready("False", ready_ago)]))
    } else {
        (RUNNING, json!([scheduled(), ready("True", ready_ago)]))
    };
    let labels = if label.is_empty() { json!({}) } else { json!({RESERVED_POD_LABEL: label}) };
    pod(json!({
        "metadata": {"name": "p", "uid": "p-uid", "creationTimestamp": ago(created), "labels": labels},
        "status": {"phase": phase, "conditions": conditions}
    }))
}

#[test]
fn calculate_subsets_status_for_reserved_adaptive_strategy_rows() {
    // RescheduleCriticalSeconds 10 s, UnschedulableDuration 30 s.
    // name, Schedulable at the start, pod, reserved pods, unschedulable, requeue, labels written
    let rows: Vec<ReserveRow> = vec![
        // Just created and pending: not reserved yet, labelled "false", looked at when it would time out.
        ("Pod just created, pending", "True", modified_pod(0, 1, true, ""), 0, false, secs(9), vec![false]),
        (
            "Pod created, running within RescheduleCriticalSeconds",
            "True",
            modified_pod(5, 8, false, "false"),
            0,
            false,
            None,
            vec![],
        ),
        (
            "Pod created, pending until timeout",
            "True",
            modified_pod(13, 13, true, "false"),
            1,
            true,
            secs(30),
            vec![true],
        ),
        ("Pod recovered, but not long enough", "True", modified_pod(10, 25, false, "true"), 1, true, secs(20), vec![]),
        ("Pod recovered, long enough", "True", modified_pod(35, 50, false, "true"), 0, false, None, vec![false]),
        // kruise only raises its wait to the duration when it is below it, which it never is: no requeue.
        (
            "Pod created in a previously unschedulable subset",
            "False",
            modified_pod(0, 1, true, ""),
            1,
            true,
            None,
            vec![true],
        ),
    ];
    for (name, schedulable, p, reserved, unschedulable, requeue, labels) in rows {
        let mut st = subset_status(schedulable);
        let got = reserve(&strategy(), &mut st, std::slice::from_ref(&p), "", None, now());
        assert_eq!(got.reserved_pods, reserved, "{name}: reserved pods");
        assert_eq!(got.unschedulable, unschedulable, "{name}: unschedulable");
        assert_eq!(got.marked_as_unschedulable, schedulable == "False", "{name}: marked");
        assert_eq!(got.requeue_after, requeue, "{name}: requeue");
        assert_eq!(got.to_label.iter().map(|l| l.reserved).collect::<Vec<_>>(), labels, "{name}: labels");
        for l in &got.to_label {
            assert_eq!((l.name.as_str(), l.uid.as_str(), l.has_labels), ("p", "p-uid", true), "{name}");
        }
        let c = &st.conditions[0];
        let want = if unschedulable { ("False", "reserved pods found") } else { ("True", "no reserved pods") };
        assert_eq!(
            (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
            (want.0, "reschedule", want.1),
            "{name}"
        );
    }
}

#[test]
fn the_condition_keeps_its_time_while_the_state_holds() {
    let mut st = subset_status("True");
    let p = modified_pod(13, 13, true, "false");
    reserve(&strategy(), &mut st, std::slice::from_ref(&p), "", None, now());
    assert_eq!(st.conditions[0].last_transition_time, Some(Time(now())));
    let later = now() + SignedDuration::from_secs(5);
    let got = reserve(&strategy(), &mut st, std::slice::from_ref(&p), "", None, later);
    assert!(got.unschedulable && got.marked_as_unschedulable);
    assert_eq!(st.conditions[0].last_transition_time, Some(Time(now())), "same status and reason: unchanged");
}

#[test]
fn update_timeout_pods_are_counted_and_reserved() {
    // Two pods at an older revision whose update started 20 s ago (past 10 s), one at the update
    // revision running ready: 2 reserved, 2 update-timeout pods, the third labelled "false".
    let old = |name: &str| {
        pod(json!({
            "metadata": {"name": name, "uid": name, "labels": {REVISION_LABEL: "r1"}},
            "status": {"phase": "Running", "conditions": [scheduled(), ready("True", 100)]}
        }))
    };
    let fresh = pod(json!({
        "metadata": {"name": "c", "uid": "c", "labels": {REVISION_LABEL: "r2"}},
        "status": {"phase": "Running", "conditions": [scheduled(), ready("True", 1)]}
    }));
    let cond = updated_condition(20);
    let mut st = subset_status("True");
    let got = reserve(&strategy(), &mut st, &[old("a"), old("b"), fresh], "r2", Some(&cond), now());
    assert_eq!((got.reserved_pods, got.update_timeout_pods, got.unschedulable), (2, 2, true));
    assert_eq!(
        got.to_label.iter().map(|l| (l.name.as_str(), l.reserved)).collect::<Vec<_>>(),
        [("a", true), ("b", true), ("c", false)]
    );
    assert_eq!(got.requeue_after, secs(30), "a reserved pod is looked at after the duration");
    // The override kruise writes: replicas − ready + update-timeout pods.
    assert_eq!(max_unavailable(3, 3, got.update_timeout_pods), 2);
}

#[test]
fn post_process_subset_status_for_reserved_adaptive_strategy_rows() {
    // name, replicas, next, unschedulable afterwards
    for (name, replicas, next, want) in
        [("normal", 10, 10, false), ("scale up", 10, 15, true), ("scale down", 15, 10, false)]
    {
        let mut st = subset_status("True");
        let r = Reservation { marked_as_unschedulable: true, ..Default::default() };
        after_allocation(&mut st, &r, replicas, next, now());
        assert_eq!(st.conditions[0].status == "False", want, "{name}");
        if want {
            assert_eq!(st.conditions[0].message, "subset just recovered scaled up", "{name}");
        }
    }
    // Still unschedulable, or never marked: nothing to do.
    for r in [
        Reservation { unschedulable: true, marked_as_unschedulable: true, ..Default::default() },
        Reservation::default(),
    ] {
        let mut st = subset_status("True");
        after_allocation(&mut st, &r, 10, 15, now());
        assert_eq!(st.conditions[0].status, "True", "{r:?}");
    }
}

#[test]
fn a_pod_without_labels_is_labelled_with_a_new_map() {
    let p = pod(json!({"metadata": {"name": "p", "uid": "u"}, "status": {"phase": "Running"}}));
    let mut st = subset_status("True");
    let got = reserve(&strategy(), &mut st, &[p], "", None, now());
    assert_eq!(got.to_label, [LabelPod { name: "p".into(), uid: "u".into(), has_labels: false, reserved: false }]);
}

/// The reserved label patch, applied: set on a pod with labels, a new map on one without,
/// and refused for another pod of the name (its uid differs).
#[test]
fn the_reserved_label_patch_applies_to_its_pod_only() {
    let label = |has_labels, reserved| LabelPod { name: "p".into(), uid: "u1".into(), has_labels, reserved };
    let mut pod = serde_json::json!({"metadata": {"name": "p", "uid": "u1", "labels": {"app": "web"}}});
    json_patch::patch(&mut pod, &label_patch(&label(true, true))).unwrap();
    assert_eq!(pod["metadata"]["labels"], serde_json::json!({"app": "web", RESERVED_POD_LABEL: "true"}));
    json_patch::patch(&mut pod, &label_patch(&label(true, false))).unwrap();
    assert_eq!(pod["metadata"]["labels"][RESERVED_POD_LABEL], "false", "an existing value is replaced");
    let mut bare = serde_json::json!({"metadata": {"name": "p", "uid": "u1"}});
    json_patch::patch(&mut bare, &label_patch(&label(false, true))).unwrap();
    assert_eq!(bare["metadata"]["labels"], serde_json::json!({RESERVED_POD_LABEL: "true"}));
    let mut other = serde_json::json!({"metadata": {"name": "p", "uid": "u2", "labels": {}}});
    let before = other.clone();
    assert!(json_patch::patch(&mut other, &label_patch(&label(true, true))).is_err());
    assert_eq!(other, before, "nothing written to another pod");
}
