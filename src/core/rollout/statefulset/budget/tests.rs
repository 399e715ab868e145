//! kruise's `stateful_update_utils_test.go` `TestSortPodsToUpdate` (6 rows, gate
//! `PreparingUpdateAsUpdate` on as there), `stateful_set_utils_test.go` `TestIsRunningAndReady`,
//! `TestIsRunningAndAvailable`, `TestGetMinReadySeconds`, and the rolling-update rounds of
//! `stateful_set_control_test.go` as pure steps (the pod states before each
//! `UpdateStatefulSet` call, and which pods that call updates or deletes):
//! `TestStatefulSetControlRollingUpdateWithMaxUnavailable`,
//! `TestStatefulSetControlRollingUpdateBlockByMaxUnavailable`,
//! `TestStatefulSetControlRollingUpdateWithSpecifiedDelete` and
//! `TestUpdateStatefulSetWithMinReadySeconds` (6 rows).

use super::*;
use crate::apis::statefulset::v1beta1::StatefulSetScaleStrategy;
use crate::core::features::FeatureGates;
use crate::core::rollout::statefulset::fixtures::{named_pod, stateful_set};
use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::json;

const NOW: i64 = 1_000_000;

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(s).unwrap()
}

fn strategy(v: serde_json::Value) -> RollingUpdateStatefulSetStrategy {
    serde_json::from_value(v).unwrap()
}

fn rev_pod(revision: &str, extra: &[(&str, &str)]) -> Pod {
    let mut labels = vec![(identity::REVISION_LABEL, revision)];
    labels.extend_from_slice(extra);
    named_pod("", &labels)
}

fn slots<'a>(pods: &'a [Option<Pod>]) -> Vec<Slot<'a>> {
    pods.iter().enumerate().map(|(i, p)| Slot { ordinal: i as i64, pod: p.as_ref() }).collect()
}

#[test]
fn sort_pods_to_update_rows() {
    // TestSortPodsToUpdate
    let gates = FeatureGates::default().with(Gate::PreparingUpdateAsUpdate, true);
    let weights = json!({"unorderedUpdate": {"priorityStrategy": {"weightPriority": [
        {"weight": 20, "matchSelector": {"matchLabels": {"k": "v1"}}},
        {"weight": 10, "matchSelector": {"matchLabels": {"k": "v2"}}}]}}, "partition": 6});
    let r = |rev: &str| Some(rev_pod(rev, &[]));
    let prep = || Some(rev_pod("r0", &[(crate::apis::keys::LIFECYCLE_STATE, lifecycle::PREPARING_UPDATE)]));
    type Row = (Option<RollingUpdateStatefulSetStrategy>, i64, Vec<Option<Pod>>, Vec<i64>);
    let rows: Vec<Row> = vec![
        (None, 3, vec![r("r0"), r("r0"), r("r0")], vec![2, 1, 0]),
        (
            Some(strategy(weights.clone())),
            10,
            vec![r("r0"), r("r0"), r("r0"), r("r0"), r("r0"), r("r0"), r("r1"), r("r1"), r("r0"), r("r0")],
            vec![7, 6, 9, 8],
        ),
        (None, 3, vec![r("r1"), r("r1"), r("r0")], vec![2, 1, 0]),
        (Some(strategy(json!({"partition": 2}))), 3, vec![r("r0"), None, r("r0"), None, r("r0")], vec![4]),
        (
            Some(strategy(weights.clone())),
            10,
            vec![r("r0"), r("r0"), r("r0"), None, r("r0"), r("r0"), r("r0"), r("r1"), r("r1"), r("r0"), None, r("r0")],
            vec![8, 7, 11, 9],
        ),
        (
            Some(strategy(weights)),
            10,
            vec![prep(), prep(), r("r0"), None, r("r0"), r("r0"), r("r0"), r("r1"), r("r1"), r("r0"), None, r("r0")],
            vec![8, 7, 1, 0],
        ),
    ];
    for (i, (s, total, pods, want)) in rows.into_iter().enumerate() {
        assert_eq!(sort_pods_to_update(s.as_ref(), "r1", total, 0, &slots(&pods), &gates), want, "case #{i}");
    }
}

#[test]
fn sort_pods_to_update_weights_and_start() {
    // Weighted order among waiting pods (not in the Go rows: there no pod carries `k`), and slots
    // counted from `start`.
    let gates = FeatureGates::default();
    let s = strategy(json!({"unorderedUpdate": {"priorityStrategy": {"weightPriority": [
        {"weight": 20, "matchSelector": {"matchLabels": {"k": "v1"}}},
        {"weight": 10, "matchSelector": {"matchLabels": {"k": "v2"}}}]}}, "partition": 1}));
    let pods = vec![Some(rev_pod("r0", &[("k", "v2")])), Some(rev_pod("r0", &[])), Some(rev_pod("r0", &[("k", "v1")]))];
    assert_eq!(sort_pods_to_update(Some(&s), "r1", 3, 0, &slots(&pods), &gates), [2, 0]);
    // Ordered with start 5: slots 5, 6, 7; partition 1 keeps slot 0 (ordinal 5).
    let p = strategy(json!({"partition": 1}));
    let with_start: Vec<Slot<'_>> =
        pods.iter().enumerate().map(|(i, p)| Slot { ordinal: 5 + i as i64, pod: p.as_ref() }).collect();
    assert_eq!(sort_pods_to_update(Some(&p), "r1", 3, 5, &with_start, &gates), [7, 6]);
    // Partition at or above replicas: nothing.
    let p = strategy(json!({"partition": 3}));
    assert!(sort_pods_to_update(Some(&p), "r1", 3, 0, &slots(&pods), &gates).is_empty());
}

fn ready_pod(ready_since: Option<i64>) -> Pod {
    let mut pod = named_pod("foo-1", &[]);
    pod.status = Some(PodStatus {
        phase: Some("Running".into()),
        conditions: Some(vec![PodCondition {
            type_: "Ready".into(),
            status: "True".into(),
            last_transition_time: ready_since.map(|s| Time(at(s))),
            ..Default::default()
        }]),
        ..Default::default()
    });
    pod
}

#[test]
fn is_running_and_ready_rows() {
    // TestIsRunningAndReady
    let mut pod = named_pod("foo-1", &[]);
    assert!(!is_running_and_ready(&pod), "phase");
    pod.status = Some(PodStatus { phase: Some("Running".into()), ..Default::default() });
    assert!(!is_running_and_ready(&pod), "condition");
    assert!(is_running_and_ready(&ready_pod(None)));
}

#[test]
fn get_min_ready_seconds_rows() {
    // TestGetMinReadySeconds
    let mut set = stateful_set(3);
    assert_eq!(min_ready_seconds(&set), 0);
    set.spec.update_strategy.rolling_update = Some(Default::default());
    assert_eq!(min_ready_seconds(&set), 0);
    set.spec.update_strategy.rolling_update.as_mut().unwrap().min_ready_seconds = Some(3);
    assert_eq!(min_ready_seconds(&set), 3);
    set.spec.update_strategy.rolling_update.as_mut().unwrap().min_ready_seconds = Some(30);
    assert_eq!(min_ready_seconds(&set), 30);
}

#[test]
fn is_running_and_available_rows() {
    // TestIsRunningAndAvailable
    let now = at(NOW);
    let mut pod = named_pod("foo-1", &[]);
    assert_eq!(running_and_available(&pod, 0, now), (false, None), "phase");
    pod.status = Some(PodStatus { phase: Some("Pending".into()), ..Default::default() });
    assert_eq!(running_and_available(&pod, 0, now), (false, None), "pending");
    pod.status.as_mut().unwrap().phase = Some("Running".into());
    assert_eq!(running_and_available(&pod, 0, now), (false, None), "condition");
    let pod = ready_pod(None);
    assert_eq!(running_and_available(&pod, 0, now), (true, None), "0 minReadySeconds");
    assert_eq!(
        running_and_available(&pod, 10, now),
        (false, Some(SignedDuration::from_secs(10))),
        "unknown ready time"
    );
    let pod = ready_pod(Some(NOW - 5));
    assert_eq!(running_and_available(&pod, 10, now), (false, Some(SignedDuration::from_secs(5))), "ready 5s of 10");
    assert_eq!(running_and_available(&pod, 3, now), (true, None), "ready 5s of 3");
    // The boundary is available (Go: wait > 0 is not), and a non-Normal lifecycle never is.
    assert_eq!(running_and_available(&pod, 5, now), (true, None));
    let mut hooked = ready_pod(Some(NOW - 100));
    hooked.metadata.labels =
        Some([(crate::apis::keys::LIFECYCLE_STATE.to_string(), "PreparingNormal".to_string())].into());
    assert_eq!(running_and_available(&hooked, 0, now), (false, None));
    assert!(!is_healthy(&hooked));
}

#[test]
fn max_unavailable_rows() {
    // (replicas, rollingUpdate.maxUnavailable, expected); rounding down, at least 1.
    let rows: Vec<(i32, Option<serde_json::Value>, i64)> = vec![
        (10, None, 1),
        (10, Some(json!(3)), 3),
        (10, Some(json!(0)), 1),
        (10, Some(json!("25%")), 2),
        (10, Some(json!("5%")), 1),
        (1000, Some(json!("20%")), 200),
        (6, Some(json!("50%")), 3),
        // The deprecated helper reads any string as a percentage.
        (10, Some(json!("30")), 3),
    ];
    for (replicas, mu, want) in rows {
        let mut set = stateful_set(replicas);
        let mut ru = strategy(json!({}));
        ru.max_unavailable = mu.clone().map(|v| serde_json::from_value(v).unwrap());
        set.spec.update_strategy.rolling_update = Some(ru);
        assert_eq!(max_unavailable(&set), Ok(want), "{replicas} {mu:?}");
    }
    assert_eq!(max_unavailable(&stateful_set(10)), Ok(1), "no rollingUpdate");
    let mut set = stateful_set(10);
    set.spec.update_strategy.rolling_update = Some(strategy(json!({"maxUnavailable": "x%"})));
    assert!(max_unavailable(&set).is_err());
    // scaleStrategy.maxUnavailable: None when unset.
    assert_eq!(scale_max_unavailable(&set), Ok(None));
    set.spec.scale_strategy =
        Some(StatefulSetScaleStrategy { max_unavailable: Some(IntOrString::String("10%".into())) });
    assert_eq!(scale_max_unavailable(&set), Ok(Some(1)));
    set.spec.scale_strategy = Some(StatefulSetScaleStrategy { max_unavailable: Some(IntOrString::Int(4)) });
    assert_eq!(scale_max_unavailable(&set), Ok(Some(4)));
}

/// One replica's state before a round: revision, readiness, and flags.
#[derive(Clone, Copy)]
enum S {
    /// Running and Ready since `NOW - secs`.
    Ready(i64),
    /// Running, not ready.
    Running,
    /// Being deleted.
    Terminating,
}

fn pod_at(name: &str, revision: &str, state: S, specified_delete: bool) -> Pod {
    let mut pod = match state {
        S::Ready(ago) => ready_pod(Some(NOW - ago)),
        S::Running => {
            let mut p = named_pod(name, &[]);
            p.status = Some(PodStatus { phase: Some("Running".into()), ..Default::default() });
            p
        }
        S::Terminating => {
            let mut p = ready_pod(Some(NOW - 1000));
            p.metadata.deletion_timestamp = Some(Time(at(NOW)));
            p
        }
    };
    pod.metadata.name = Some(name.into());
    let labels = pod.metadata.labels.get_or_insert_with(Default::default);
    labels.insert(identity::REVISION_LABEL.into(), revision.into());
    if specified_delete {
        labels.insert(SPECIFIED_DELETE.into(), "true".into());
    }
    pod
}

struct Round {
    max_unavailable: i32,
    partition: i32,
    min_ready: i32,
    /// (revision, state, specified delete) per ordinal 0..n.
    pods: Vec<(&'static str, S, bool)>,
    deletes: Vec<i64>,
    updates: Vec<i64>,
    blocked: Option<i64>,
}

fn run(name: &str, r: Round) {
    let mut set = stateful_set(r.pods.len() as i32);
    set.spec.pod_management_policy = PARALLEL.into();
    set.spec.update_strategy.rolling_update = Some(strategy(
        json!({"partition": r.partition, "maxUnavailable": r.max_unavailable, "minReadySeconds": r.min_ready}),
    ));
    let pods: Vec<Pod> =
        r.pods.iter().enumerate().map(|(i, (rev, state, sd))| pod_at(&format!("foo-{i}"), rev, *state, *sd)).collect();
    let slots: Vec<Slot<'_>> = pods.iter().enumerate().map(|(i, p)| Slot { ordinal: i as i64, pod: Some(p) }).collect();
    let unavailable = unavailable_replicas(&slots, r.min_ready, at(NOW), |_| false, |_| false);
    let round = plan_rolling_update(&set, 0, &slots, "new", &unavailable, &FeatureGates::default(), Storage::IGNORED)
        .unwrap()
        .unwrap();
    assert_eq!(round.specified_deletes, r.deletes, "{name}: specified deletes");
    assert_eq!(round.updates, r.updates, "{name}: updates");
    assert_eq!(round.blocked.map(|b| b.ordinal), r.blocked, "{name}: blocked at");
    assert!(round.unavailable.len() as i64 <= round.max_unavailable.max(unavailable.names.len() as i64), "{name}");
}

const OLD: &str = "old";
const NEW: &str = "new";
const LONG: S = S::Ready(1000);

#[test]
fn rolling_update_with_max_unavailable() {
    // TestStatefulSetControlRollingUpdateWithMaxUnavailable: 6 pods, partition 3, maxUnavailable 2.
    let base = |pods| Round {
        max_unavailable: 2,
        partition: 3,
        min_ready: 0,
        pods,
        deletes: vec![],
        updates: vec![],
        blocked: None,
    };
    // "first update pods 4/5"
    run("round 1", Round { updates: vec![5, 4], blocked: Some(3), ..base(vec![(OLD, LONG, false); 6]) });
    // Pods 4 and 5 recreated; 4 ready, 5 running: "if pod 4 ready, start to update pod 3".
    let mut pods = vec![(OLD, LONG, false); 4];
    pods.extend([(NEW, S::Ready(0), false), (NEW, S::Running, false)]);
    run("round 3", Round { updates: vec![3], ..base(pods) });
    // "pods 3/4/5 ready, should not update other pods": the order stops at the partition.
    let mut pods = vec![(OLD, LONG, false); 3];
    pods.extend([(NEW, S::Ready(0), false); 3]);
    run("round 5", Round { updates: vec![], ..base(pods) });
}

#[test]
fn rolling_update_block_by_max_unavailable() {
    // TestStatefulSetControlRollingUpdateBlockByMaxUnavailable: pod 0 terminating.
    let base = |pods| Round {
        max_unavailable: 2,
        partition: 3,
        min_ready: 0,
        pods,
        deletes: vec![],
        updates: vec![],
        blocked: None,
    };
    let mut pods = vec![(OLD, S::Terminating, false)];
    pods.extend([(OLD, LONG, false); 5]);
    // "first update pod 5 only because pod 0 is terminating"
    run("round 1", Round { updates: vec![5], blocked: Some(4), ..base(pods) });
    // "should not update any pods because pod 0 and 2 are terminating"
    let pods = vec![
        (OLD, S::Terminating, false),
        (OLD, LONG, false),
        (OLD, S::Terminating, false),
        (OLD, LONG, false),
        (OLD, LONG, false),
        (NEW, S::Ready(0), false),
    ];
    run("round 3", Round { updates: vec![], blocked: Some(4), ..base(pods) });
}

#[test]
fn rolling_update_with_specified_delete() {
    // TestStatefulSetControlRollingUpdateWithSpecifiedDelete: 6 pods, partition 3,
    // maxUnavailable 3, InPlaceIfPossible.
    let base = |pods| Round {
        max_unavailable: 3,
        partition: 3,
        min_ready: 0,
        pods,
        deletes: vec![],
        updates: vec![],
        blocked: None,
    };
    let mut pods = vec![(OLD, LONG, true)];
    pods.extend([(OLD, LONG, false); 5]);
    // "first update pod 5 only because pod 0 is specified deleted" (then 4: pods 5/4 get the image).
    run("round 1", Round { deletes: vec![0], updates: vec![5, 4], blocked: Some(3), ..base(pods) });
    // "set pod 1/2/5 to specified deleted", 0 still marked, all ready: 5, 2, 1 deleted, 0 waits,
    // 3 not updated.
    let pods = vec![
        (OLD, LONG, true),
        (OLD, LONG, true),
        (OLD, LONG, true),
        (OLD, LONG, false),
        (NEW, LONG, false),
        (NEW, LONG, true),
    ];
    run("round 3", Round { deletes: vec![5, 2, 1], updates: vec![], blocked: Some(3), ..base(pods) });
    // "set pod 3 to specified deleted and all pod to ready => pod3 will be deleted and updated"
    let pods = vec![
        (OLD, LONG, true),
        (OLD, LONG, false),
        (OLD, LONG, false),
        (OLD, LONG, true),
        (NEW, LONG, false),
        (NEW, LONG, false),
    ];
    run("round 5", Round { deletes: vec![3, 0], updates: vec![], blocked: None, ..base(pods) });
}

#[test]
fn update_with_min_ready_seconds() {
    // TestUpdateStatefulSetWithMinReadySeconds: 5 pods, partition 0; round 1 updates the top
    // `maxUnavailable` pods; they are then made ready (`readyPods(p, sleep)`), and the next round
    // updates as many more as are allowed. (name, minReadySeconds, maxUnavailable, first
    // updated ordinal after round 1, seconds slept, updates of the next round)
    type Row = (&'static str, i32, i32, usize, i64, &'static [i64]);
    let rows: [Row; 6] = [
        ("update with 0 min ready seconds", 0, 1, 4, 0, &[3]),
        ("update with 1 min ready seconds", 60, 1, 4, 0, &[]),
        ("update with 1 min ready seconds and sleep", 5, 1, 4, 10, &[3]),
        ("update with 0 min ready seconds and 2 max unavailable", 0, 2, 3, 0, &[2, 1]),
        ("update with 1 min ready seconds and 2 max unavailable", 60, 2, 3, 0, &[]),
        ("update with 1 min ready seconds and 2 max unavailable and sleep", 5, 2, 3, 10, &[2, 1]),
    ];
    for (name, min_ready, mu, first, slept, next) in rows {
        let base = |pods| Round {
            max_unavailable: mu,
            partition: 0,
            min_ready,
            pods,
            deletes: vec![],
            updates: vec![],
            blocked: None,
        };
        let round1: Vec<i64> = (first as i64..5).rev().collect();
        run(
            &format!("{name}: round 1"),
            Round { updates: round1, blocked: Some(first as i64 - 1), ..base(vec![(OLD, LONG, false); 5]) },
        );
        let mut pods = vec![(OLD, LONG, false); first];
        pods.extend(vec![(NEW, S::Ready(slept), false); 5 - first]);
        let blocked = next.last().map_or(first as i64 - 1, |l| l - 1);
        run(&format!("{name}: round 2"), Round { updates: next.to_vec(), blocked: Some(blocked), ..base(pods) });
    }
}

#[test]
fn unavailable_set_and_requeue() {
    let pods = [
        pod_at("foo-0", OLD, LONG, false),
        pod_at("foo-1", OLD, S::Ready(2), false),
        pod_at("foo-2", OLD, S::Ready(7), false),
        pod_at("foo-3", OLD, S::Running, false),
        pod_at("foo-4", OLD, LONG, false),
        pod_at("foo-5", OLD, LONG, false),
    ];
    let slots: Vec<Slot<'_>> = pods.iter().enumerate().map(|(i, p)| Slot { ordinal: i as i64, pod: Some(p) }).collect();
    let u = unavailable_replicas(&slots, 10, at(NOW), |p| pods::name(p) == "foo-4", |p| pods::name(p) == "foo-5");
    assert_eq!(u.names.into_iter().collect::<Vec<_>>(), ["foo-1", "foo-2", "foo-3", "foo-4", "foo-5"]);
    assert_eq!(u.requeue_after, Some(SignedDuration::from_secs(3)));
}

#[test]
fn on_delete_and_paused_do_nothing() {
    let mut set = stateful_set(2);
    set.spec.update_strategy.type_ = ON_DELETE.into();
    let none = Unavailable::default();
    assert_eq!(
        plan_rolling_update(&set, 0, &[], "r", &none, &FeatureGates::default(), Storage::IGNORED),
        Ok(Err(NoRollingUpdate::OnDelete))
    );
    let mut set = stateful_set(2);
    set.spec.update_strategy.rolling_update = Some(strategy(json!({"paused": true})));
    assert_eq!(
        plan_rolling_update(&set, 0, &[], "r", &none, &FeatureGates::default(), Storage::IGNORED),
        Ok(Err(NoRollingUpdate::Paused))
    );
}

#[test]
fn rounds_keep_the_budget_and_the_partition() {
    // Properties over generated rounds: the unavailable count never grows past maxUnavailable
    // (or what it already was), ordered updates never go below the partition, and no target is
    // terminating, specified-deleted or already at the update revision.
    let mut seed = 11u64;
    let mut next = |n: u64| {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    for case in 0..3000 {
        let n = 1 + next(9) as usize;
        let states: Vec<(&'static str, S, bool)> = (0..n)
            .map(|_| {
                let rev = if next(3) == 0 { NEW } else { OLD };
                let state = match next(6) {
                    0 => S::Running,
                    1 => S::Terminating,
                    2 => S::Ready(next(20) as i64),
                    _ => LONG,
                };
                (rev, state, next(8) == 0)
            })
            .collect();
        let (mu, partition, min_ready) = (1 + next(4) as i32, next(n as u64 + 2) as i32, next(15) as i32);
        let mut set = stateful_set(n as i32);
        set.spec.pod_management_policy = PARALLEL.into();
        let mut ru = json!({"partition": partition, "maxUnavailable": mu, "minReadySeconds": min_ready});
        if next(2) == 0 {
            ru["unorderedUpdate"] = json!({});
        }
        set.spec.update_strategy.rolling_update = Some(strategy(ru));
        let pods: Vec<Pod> =
            states.iter().enumerate().map(|(i, (rev, st, sd))| pod_at(&format!("foo-{i}"), rev, *st, *sd)).collect();
        let slots: Vec<Slot<'_>> =
            pods.iter().enumerate().map(|(i, p)| Slot { ordinal: i as i64, pod: Some(p) }).collect();
        let unavailable = unavailable_replicas(&slots, min_ready, at(NOW), |_| false, |_| false);
        let round = plan_rolling_update(&set, 0, &slots, NEW, &unavailable, &FeatureGates::default(), Storage::IGNORED)
            .unwrap()
            .unwrap();
        let what = format!("case {case}: {n} pods, mu {mu}, partition {partition}");
        assert!(round.unavailable.len() <= (mu as usize).max(unavailable.names.len()), "{what}");
        assert!(round.order.len() <= n.saturating_sub(partition as usize), "{what}");
        for &o in &round.updates {
            let p = &pods[o as usize];
            assert!(!is_terminating(p) && !is_specified_delete(p) && identity::pod_revision(p) != NEW, "{what}");
            if set.spec.update_strategy.rolling_update.as_ref().unwrap().unordered_update.is_none() {
                assert!(o >= i64::from(partition), "{what}: {o} below the partition");
            }
        }
        for &o in &round.specified_deletes {
            assert!(is_specified_delete(&pods[o as usize]), "{what}");
        }
    }
}
