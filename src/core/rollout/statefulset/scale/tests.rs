//! The scaling rounds of kruise's `stateful_set_control_test.go` as pure steps (the pods before
//! each `UpdateStatefulSet` call, and what that call creates or deletes):
//! `TestScaleUpWithMaxUnavailable` (4 rounds), `TestStatefulSetControl` `CreatesPods`,
//! `ReplacesPods`, `RecreatesFailedPod` and `ScalesDown` (monotonic and burst, as Go runs each
//! both ways), the first row of `TestScaleUpStatefulSetWithMinReadySeconds`; then the stale-claim,
//! pending-claim, identity-repair and condemned-pod rules of `processReplica` /
//! `processCondemned` that those scenarios do not reach.

use super::*;
use crate::apis::statefulset::v1beta1::{StatefulSetPersistentVolumeClaimRetentionPolicy, StatefulSetScaleStrategy};
use crate::apis::statefulset::{DELETE, PARALLEL, RETAIN};
use crate::core::rollout::statefulset::fixtures::{stateful_set, stateful_set_pod};
use crate::core::rollout::statefulset::ordinals::members;
use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

const NOW: i64 = 1_000_000;

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(s).unwrap()
}

/// A pod's state before a round.
#[derive(Clone, Copy, Debug)]
enum P {
    Missing,
    Pending,
    /// Running, not ready.
    Running,
    /// Running and Ready since `NOW - secs`.
    Ready(i64),
    Failed,
    Terminating,
}

fn pod(set: &StatefulSet, ordinal: i64, state: P) -> Option<Pod> {
    let mut p = stateful_set_pod(set, ordinal);
    p.metadata.uid = Some(format!("uid-{ordinal}"));
    let status = |phase: &str, ready: Option<i64>| PodStatus {
        phase: Some(phase.into()),
        conditions: ready.map(|ago| {
            vec![PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                last_transition_time: Some(Time(at(NOW - ago))),
                ..Default::default()
            }]
        }),
        ..Default::default()
    };
    p.status = Some(match state {
        P::Missing => return None,
        P::Pending => status("Pending", None),
        P::Running => status("Running", None),
        P::Ready(ago) => status("Running", Some(ago)),
        P::Failed => status("Failed", None),
        P::Terminating => {
            p.metadata.deletion_timestamp = Some(Time(at(NOW)));
            status("Running", Some(1000))
        }
    });
    Some(p)
}

/// Every claim the pods of `ordinals` use, as `createPersistentVolumeClaims` made them.
fn claims_for(set: &StatefulSet, ordinals: impl IntoIterator<Item = i64>) -> Vec<PersistentVolumeClaim> {
    ordinals.into_iter().flat_map(|o| identity::persistent_volume_claims(set, o).into_iter().map(|(_, c)| c)).collect()
}

/// Plans one round for pods in `states` (ordinal = index) with every pod's claims present.
fn round(set: &StatefulSet, states: &[P]) -> ScaleRound {
    let pods: Vec<Pod> = states.iter().enumerate().filter_map(|(i, s)| pod(set, i as i64, *s)).collect();
    let claims = claims_for(set, 0..states.len() as i64);
    round_with(set, &pods, &claims)
}

fn round_with(set: &StatefulSet, pods: &[Pod], claims: &[PersistentVolumeClaim]) -> ScaleRound {
    let gates = FeatureGates::default();
    let range = ReplicaRange::of(set, &gates);
    let refs: Vec<&Pod> = pods.iter().collect();
    let m = members(set, &range, &refs);
    let lookup = |n: &str| claims.iter().find(|c| c.metadata.name.as_deref() == Some(n));
    plan_scale(set, &range, &m.replicas, &m.condemned, at(NOW), &gates, lookup).unwrap()
}

fn burst(mut set: StatefulSet) -> StatefulSet {
    set.spec.pod_management_policy = PARALLEL.into();
    set
}

fn stopped(r: &ScaleRound) -> Option<(i64, StopReason, bool)> {
    r.stop.map(|s| (s.ordinal, s.reason, s.ends_round))
}

use ScaleStep::*;
use StopReason::*;

#[test]
fn scale_up_with_max_unavailable() {
    // TestScaleUpWithMaxUnavailable: Parallel, 5 replicas, scaleStrategy.maxUnavailable 2.
    let mut set = burst(stateful_set(5));
    set.spec.scale_strategy = Some(StatefulSetScaleStrategy { max_unavailable: Some(IntOrString::Int(2)) });
    // reconcileTwice #1: two pods created, then nothing while both are Pending -> replicas 2.
    let r = round(&set, &[P::Missing; 5]);
    assert_eq!(r.steps, [Create(0), Create(1)]);
    assert_eq!(stopped(&r), Some((1, ScaleBudgetSpent, false)));
    let r = round(&set, &[P::Pending, P::Pending, P::Missing, P::Missing, P::Missing]);
    assert_eq!(r.steps, []);
    assert_eq!(stopped(&r), Some((1, ScaleBudgetSpent, false)));
    // Pod 1 running and ready: one more pod -> replicas 3, then it waits again.
    let r = round(&set, &[P::Pending, P::Ready(0), P::Missing, P::Missing, P::Missing]);
    assert_eq!(r.steps, [Create(2)]);
    assert_eq!(stopped(&r), Some((2, ScaleBudgetSpent, false)));
    let r = round(&set, &[P::Pending, P::Ready(0), P::Pending, P::Missing, P::Missing]);
    assert_eq!(r.steps, []);
    assert!(r.continues());
}

#[test]
fn creates_pods() {
    // CreatesPods (3 replicas), Monotonic: one pod per round, each waiting for the previous.
    let set = stateful_set(3);
    let r = round(&set, &[P::Missing; 3]);
    assert_eq!((r.steps.as_slice(), stopped(&r)), (&[Create(0)][..], Some((0, Created, true))));
    let r = round(&set, &[P::Pending, P::Missing, P::Missing]);
    assert_eq!((r.steps.as_slice(), stopped(&r)), (&[][..], Some((0, NotAvailable, true))));
    let r = round(&set, &[P::Ready(10), P::Missing, P::Missing]);
    assert_eq!(r.steps, [Create(1)]);
    let r = round(&set, &[P::Ready(10), P::Ready(10), P::Ready(10)]);
    assert_eq!((r.steps.as_slice(), r.stop), (&[][..], None));
    // Burst: all at once.
    let r = round(&burst(set), &[P::Missing; 3]);
    assert_eq!((r.steps.as_slice(), r.stop), (&[Create(0), Create(1), Create(2)][..], None));
}

#[test]
fn replaces_pods() {
    // ReplacesPods (5 replicas): pods 0, 2, 4 deleted; Monotonic recreates 0, waits for it to run
    // and be ready, then 2, then 4.
    let set = stateful_set(5);
    let r = round(&set, &[P::Missing, P::Ready(10), P::Missing, P::Ready(10), P::Missing]);
    assert_eq!((r.steps.as_slice(), stopped(&r)), (&[Create(0)][..], Some((0, Created, true))));
    let r = round(&set, &[P::Running, P::Ready(10), P::Missing, P::Ready(10), P::Missing]);
    assert_eq!((r.steps.as_slice(), stopped(&r)), (&[][..], Some((0, NotAvailable, true))));
    let r = round(&set, &[P::Ready(0), P::Ready(10), P::Missing, P::Ready(10), P::Missing]);
    assert_eq!(r.steps, [Create(2)]);
    let r = round(&set, &[P::Ready(0), P::Ready(10), P::Ready(0), P::Ready(10), P::Missing]);
    assert_eq!(r.steps, [Create(4)]);
    // Burst recreates the three at once.
    let r = round(&burst(set), &[P::Missing, P::Ready(10), P::Missing, P::Ready(10), P::Missing]);
    assert_eq!(r.steps, [Create(0), Create(2), Create(4)]);
}

#[test]
fn recreates_failed_pod() {
    // RecreatesFailedPod: pod 0 Failed is deleted (and recreated next round).
    let set = stateful_set(3);
    let r = round(&set, &[P::Failed, P::Missing, P::Missing]);
    assert_eq!((r.steps.as_slice(), stopped(&r)), (&[DeleteFailed(0)][..], Some((0, FailedPodDeleted, true))));
    let r = round(&burst(set), &[P::Failed, P::Missing, P::Missing]);
    assert_eq!((r.steps.as_slice(), r.stop), (&[DeleteFailed(0), Create(1), Create(2)][..], None));
}

#[test]
fn scales_down() {
    // ScalesDown: 3 pods, replicas 0; Monotonic deletes the highest first, one at a time, waiting
    // for each to go; Burst deletes all.
    let set = stateful_set(0);
    let r = round(&set, &[P::Ready(10); 3]);
    assert_eq!((r.steps.as_slice(), stopped(&r)), (&[DeleteCondemned(2)][..], Some((2, CondemnedDeleted, true))));
    let r = round(&set, &[P::Ready(10), P::Ready(10), P::Terminating]);
    assert_eq!((r.steps.as_slice(), stopped(&r)), (&[][..], Some((2, CondemnedTerminating, true))));
    let r = round(&set, &[P::Ready(10), P::Ready(10)]);
    assert_eq!(r.steps, [DeleteCondemned(1)]);
    let r = round(&burst(set.clone()), &[P::Ready(10), P::Ready(10), P::Terminating]);
    assert_eq!((r.steps.as_slice(), r.stop), (&[DeleteCondemned(1), DeleteCondemned(0)][..], None));
    // Monotonic: a condemned pod waits for an unhealthy lower one, unless it is the first unhealthy.
    let r = round(&set, &[P::Running, P::Ready(10), P::Running]);
    assert_eq!((r.steps.as_slice(), stopped(&r)), (&[][..], Some((2, WaitingForUnhealthy, true))));
    // A healthy condemned pod goes even while a lower one is unhealthy.
    let r = round(&set, &[P::Running, P::Ready(10), P::Ready(10)]);
    assert_eq!(r.steps, [DeleteCondemned(2)]);
    let r = round(&set, &[P::Ready(10), P::Ready(10), P::Running]);
    assert_eq!(r.steps, [DeleteCondemned(2)]);
    // A replica that is not available stops the round before any condemned pod.
    let one = stateful_set(1);
    let r = round(&one, &[P::Running, P::Ready(10), P::Ready(10)]);
    assert_eq!((r.steps.as_slice(), stopped(&r)), (&[][..], Some((0, NotAvailable, true))));
}

#[test]
fn scale_up_with_min_ready_seconds() {
    // TestScaleUpStatefulSetWithMinReadySeconds "monotonic scale up with 0 min ready seconds"
    // and the 60s row: pod 0 ready now.
    let mut set = stateful_set(3);
    let r = round(&set, &[P::Ready(0), P::Missing, P::Missing]);
    assert_eq!(r.steps, [Create(1)]);
    set.spec.update_strategy.rolling_update =
        Some(serde_json::from_value(serde_json::json!({"minReadySeconds": 60})).unwrap());
    let r = round(&set, &[P::Ready(0), P::Missing, P::Missing]);
    assert_eq!((r.steps.as_slice(), stopped(&r)), (&[][..], Some((0, NotAvailable, true))));
    assert_eq!(r.requeue_after, Some(SignedDuration::from_secs(60)));
    let r = round(&set, &[P::Ready(61), P::Missing, P::Missing]);
    assert_eq!(r.steps, [Create(1)]);
}

fn with_policy(mut set: StatefulSet, when_scaled: &str, when_deleted: &str) -> StatefulSet {
    set.spec.persistent_volume_claim_retention_policy = Some(StatefulSetPersistentVolumeClaimRetentionPolicy {
        when_deleted: when_deleted.into(),
        when_scaled: when_scaled.into(),
    });
    set
}

#[test]
fn stale_claims_block_creation() {
    // whenScaled Delete: a claim still owned by an earlier `foo-1` blocks creating `foo-1`.
    let set = with_policy(stateful_set(3), DELETE, RETAIN);
    let pods: Vec<Pod> = [pod(&set, 0, P::Ready(10))].into_iter().flatten().collect();
    let mut claims = claims_for(&set, 0..3);
    claims[1].metadata.owner_references = Some(vec![OwnerReference {
        name: "foo-1".into(),
        uid: "old-uid".into(),
        kind: "Pod".into(),
        ..Default::default()
    }]);
    let r = round_with(&set, &pods, &claims);
    assert_eq!((r.steps.as_slice(), stopped(&r)), (&[][..], Some((1, StaleClaim, true))));
    let r = round_with(&burst(set.clone()), &pods, &claims);
    assert_eq!((r.steps.as_slice(), r.stop), (&[Create(2)][..], None));
    // Under Retain the claim is reused.
    let retain = with_policy(set, RETAIN, RETAIN);
    let r = round_with(&retain, &pods, &claims);
    assert_eq!(r.steps, [Create(1)]);
}

#[test]
fn pending_pods_get_their_claims_and_drift_is_restored() {
    let set = stateful_set(2);
    let pods: Vec<Pod> = [pod(&set, 0, P::Ready(10)), pod(&set, 1, P::Pending)].into_iter().flatten().collect();
    let claims = claims_for(&set, [0]);
    let r = round_with(&burst(set.clone()), &pods, &claims);
    assert_eq!(r.steps, [CreateMissingClaims(1)]);
    // A claim being deleted stops the round (kruise returns an error).
    let mut deleting = claims_for(&set, [0, 1]);
    deleting[1].metadata.deletion_timestamp = Some(Time(at(NOW)));
    let r = round_with(&burst(set.clone()), &pods, &deleting);
    assert_eq!(stopped(&r), Some((1, ClaimDeleting, true)));
    // A replica without its pod-name label, or pointing at another claim, is restored.
    let mut drifted = pods.clone();
    drifted[0].metadata.labels.as_mut().unwrap().remove(identity::POD_NAME_LABEL);
    drifted[1].spec.as_mut().unwrap().volumes = None;
    let r = round_with(&burst(set.clone()), &drifted, &claims_for(&set, [0, 1]));
    assert_eq!(r.steps, [Restore(0), Restore(1)]);
    // Claims missing the references the retention policy asks for: the replica is restored, a
    // condemned pod has its claims fixed before it is deleted.
    let delete_both = with_policy(stateful_set(1), DELETE, DELETE);
    let pods: Vec<Pod> =
        [pod(&delete_both, 0, P::Ready(10)), pod(&delete_both, 1, P::Ready(10))].into_iter().flatten().collect();
    let r = round_with(&delete_both, &pods, &claims_for(&delete_both, [0, 1]));
    assert_eq!(r.steps, [Restore(0), FixCondemnedClaims(1), DeleteCondemned(1)]);
}

#[test]
fn deleting_set_only_reports() {
    let mut set = stateful_set(3);
    set.metadata.deletion_timestamp = Some(Time(at(NOW)));
    let r = round(&set, &[P::Missing; 3]);
    assert_eq!((r.steps.as_slice(), stopped(&r)), (&[][..], Some((-1, SetDeleting, true))));
}

#[test]
fn pre_delete_hook_holds_condemned_pods() {
    // Monotonic, replicas 0: pod 2 is held by the preDelete hook in PreparingDelete, so the round
    // moves on to pod 1; in Normal state pod 2 is "deleted" (the hook machinery moves it to
    // PreparingDelete) and the round stops there.
    let mut set = stateful_set(0);
    set.spec.lifecycle =
        Some(serde_json::from_value(serde_json::json!({"preDelete": {"labelsHandler": {"hold": "true"}}})).unwrap());
    let mut pods: Vec<Pod> = (0..3).filter_map(|i| pod(&set, i, P::Ready(10))).collect();
    pods[2].metadata.labels.as_mut().unwrap().insert("hold".into(), "true".into());
    let claims = claims_for(&set, 0..3);
    let r = round_with(&set, &pods, &claims);
    assert_eq!((r.steps.as_slice(), stopped(&r)), (&[DeleteCondemned(2)][..], Some((2, CondemnedDeleted, true))));
    pods[2]
        .metadata
        .labels
        .as_mut()
        .unwrap()
        .insert(crate::apis::keys::LIFECYCLE_STATE.into(), lifecycle::PREPARING_DELETE.into());
    let r = round_with(&set, &pods, &claims);
    assert_eq!((r.steps.as_slice(), stopped(&r)), (&[DeleteCondemned(1)][..], Some((1, CondemnedDeleted, true))));
}
