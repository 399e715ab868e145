//! kruise has no unit test of `computeReplicaStatus`, `completeRollingUpdate`,
//! `inconsistentStatus` or `updatePVCStatus` (its control tests check status after whole rounds);
//! these tables follow the Go code line by line.

use super::*;
use crate::apis::statefulset::v1beta1::StatefulSetStatus;
use crate::core::rollout::statefulset::fixtures::{named_pod, stateful_set};
use crate::core::rollout::statefulset::identity::REVISION_LABEL;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

const NOW: i64 = 1_000_000;

fn at(s: i64) -> Timestamp {
    Timestamp::from_second(s).unwrap()
}

/// A pod at `revision` in `phase` ("" = not created), ready since `ready` seconds ago.
fn pod(revision: &str, phase: &str, ready: Option<i64>, terminating: bool) -> Pod {
    let mut p = named_pod("foo-0", &[(REVISION_LABEL, revision)]);
    if !phase.is_empty() || ready.is_some() {
        p.status = Some(PodStatus {
            phase: (!phase.is_empty()).then(|| phase.into()),
            conditions: ready.map(|ago| {
                vec![PodCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    last_transition_time: Some(Time(at(NOW - ago))),
                    ..Default::default()
                }]
            }),
            ..Default::default()
        });
    }
    if terminating {
        p.metadata.deletion_timestamp = Some(Time(at(NOW)));
    }
    p
}

#[test]
fn counts() {
    // (pod, minReadySeconds, [replicas, ready, available, current, updated, updatedReady, updatedAvailable])
    let rows: Vec<(&str, Pod, i32, [i32; 7])> = vec![
        ("not created", pod("cur", "", None, false), 0, [0, 0, 0, 0, 0, 0, 0]),
        ("pending current", pod("cur", "Pending", None, false), 0, [1, 0, 0, 1, 0, 0, 0]),
        ("running not ready update", pod("upd", "Running", None, false), 0, [1, 0, 0, 0, 1, 0, 0]),
        ("ready current", pod("cur", "Running", Some(100), false), 0, [1, 1, 1, 1, 0, 0, 0]),
        ("ready update, available", pod("upd", "Running", Some(100), false), 10, [1, 1, 1, 0, 1, 1, 1]),
        ("ready update, not yet available", pod("upd", "Running", Some(5), false), 10, [1, 1, 0, 0, 1, 1, 0]),
        ("terminating ready update", pod("upd", "Running", Some(100), true), 0, [1, 1, 1, 0, 0, 1, 1]),
        ("other revision", pod("old", "Running", Some(100), false), 0, [1, 1, 1, 0, 0, 0, 0]),
        ("failed", pod("cur", "Failed", None, false), 0, [1, 0, 0, 1, 0, 0, 0]),
    ];
    for (name, p, min_ready, want) in rows {
        let mut s = StatefulSetStatus::default();
        count_pods(&mut s, [&p], min_ready, "cur", "upd", at(NOW));
        let got = [
            s.replicas,
            s.ready_replicas,
            s.available_replicas,
            s.current_replicas,
            s.updated_replicas,
            s.updated_ready_replicas,
            s.updated_available_replicas,
        ];
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn round_status_and_completion() {
    let mut set = stateful_set(2);
    set.metadata.generation = Some(7);
    let pods = [pod("upd", "Running", Some(100), false), pod("upd", "Running", Some(100), false)];
    let mut s = round_status(&set, &pods, "cur", "upd", 2, at(NOW)).unwrap();
    assert_eq!((s.observed_generation, s.collision_count, s.label_selector.as_str()), (7, Some(2), "foo=bar"));
    assert_eq!((s.replicas, s.updated_replicas, s.current_replicas), (2, 2, 0));
    complete_rolling_update(&set, &mut s);
    assert_eq!((s.current_revision.as_str(), s.current_replicas), ("upd", 2));
    // Not all ready: no completion; OnDelete never completes.
    let pods = [pod("upd", "Running", Some(100), false), pod("upd", "Running", None, false)];
    let mut s = round_status(&set, &pods, "cur", "upd", 0, at(NOW)).unwrap();
    complete_rolling_update(&set, &mut s);
    assert_eq!(s.current_revision, "cur");
    let mut on_delete = set.clone();
    on_delete.spec.update_strategy.type_ = crate::apis::statefulset::ON_DELETE.into();
    let pods = [pod("upd", "Running", Some(100), false)];
    let mut s = round_status(&on_delete, &pods, "cur", "upd", 0, at(NOW)).unwrap();
    s.replicas = 1;
    complete_rolling_update(&on_delete, &mut s);
    assert_eq!(s.current_revision, "cur");
}

#[test]
fn inconsistency() {
    let mut set = stateful_set(2);
    let base = StatefulSetStatus {
        observed_generation: 3,
        replicas: 2,
        ready_replicas: 2,
        current_revision: "a".into(),
        update_revision: "a".into(),
        label_selector: "foo=bar".into(),
        ..Default::default()
    };
    set.status = Some(base.clone());
    assert!(!inconsistent_status(&set, &base));
    let changed: Vec<(&str, StatefulSetStatus, bool)> = vec![
        ("generation up", StatefulSetStatus { observed_generation: 4, ..base.clone() }, true),
        ("generation down (not written)", StatefulSetStatus { observed_generation: 2, ..base.clone() }, false),
        ("replicas", StatefulSetStatus { replicas: 3, ..base.clone() }, true),
        ("available", StatefulSetStatus { available_replicas: 1, ..base.clone() }, true),
        ("update revision", StatefulSetStatus { update_revision: "b".into(), ..base.clone() }, true),
        ("selector", StatefulSetStatus { label_selector: "x=y".into(), ..base.clone() }, true),
        ("updated ready only (not compared)", StatefulSetStatus { updated_ready_replicas: 2, ..base.clone() }, false),
        ("collision count only (not compared)", StatefulSetStatus { collision_count: Some(1), ..base.clone() }, false),
    ];
    for (name, s, want) in changed {
        assert_eq!(inconsistent_status(&set, &s), want, "{name}");
    }
    // A volume claim status the new one lacks or counts differently.
    let claim = crate::apis::statefulset::VolumeClaimStatus {
        volume_claim_name: "datadir".into(),
        compatible_replicas: 2,
        compatible_ready_replicas: 2,
    };
    set.status.as_mut().unwrap().volume_claims = vec![claim.clone()];
    assert!(inconsistent_status(&set, &base));
    let same = StatefulSetStatus { volume_claims: vec![claim.clone()], ..base.clone() };
    assert!(!inconsistent_status(&set, &same));
    let fewer = StatefulSetStatus {
        volume_claims: vec![crate::apis::statefulset::VolumeClaimStatus { compatible_ready_replicas: 1, ..claim }],
        ..base
    };
    assert!(inconsistent_status(&set, &fewer));
}

/// A claim of `stateful_set`'s template `datadir` for `ordinal`: its storage request, capacity
/// (None = not bound yet), storage class and access modes.
fn claim(
    ordinal: i64,
    request: &str,
    capacity: Option<&str>,
    class: Option<&str>,
    modes: &[&str],
) -> PersistentVolumeClaim {
    let mut c: PersistentVolumeClaim = serde_json::from_value(serde_json::json!({
        "metadata": {"name": format!("datadir-foo-{ordinal}"), "namespace": "default"},
        "spec": {"resources": {"requests": {"storage": request}}, "accessModes": modes, "storageClassName": class},
    }))
    .unwrap();
    if let Some(cap) = capacity {
        c.status =
            Some(serde_json::from_value(serde_json::json!({"phase": "Bound", "capacity": {"storage": cap}})).unwrap());
    }
    c
}

/// `IsPVCCompatibleAndReady` row by row (the template asks for storage "1", no class, no modes).
#[test]
fn claim_compatibility_and_readiness() {
    let set = stateful_set(3);
    let template = &set.spec.volume_claim_templates[0];
    let rows: &[(&str, PersistentVolumeClaim, (bool, bool))] = &[
        ("equal, bound", claim(0, "1", Some("1"), None, &[]), (true, true)),
        ("equal, not bound (no capacity: zero)", claim(0, "1", None, None, &[]), (true, false)),
        ("larger request, smaller capacity", claim(0, "2", Some("1"), None, &[]), (true, false)),
        ("larger request and capacity, other units", claim(0, "1Ki", Some("1024"), None, &[]), (true, true)),
        ("smaller request", claim(0, "500m", Some("1"), None, &[]), (false, true)),
        ("a class on the claim only (a default class)", claim(0, "1", Some("1"), Some("standard"), &[]), (true, true)),
        ("other access modes", claim(0, "1", Some("1"), None, &["ReadWriteOnce"]), (false, false)),
    ];
    for (name, c, want) in rows {
        assert_eq!(claim_compatible_and_ready(c, template), *want, "{name}");
    }
    let mut classed = set.clone();
    classed.spec.volume_claim_templates[0].spec.as_mut().unwrap().storage_class_name = Some("fast".into());
    let template = &classed.spec.volume_claim_templates[0];
    assert_eq!(claim_compatible_and_ready(&claim(0, "1", Some("1"), Some("slow"), &[]), template), (false, false));
    assert_eq!(claim_compatible_and_ready(&claim(0, "1", Some("1"), Some("fast"), &[]), template), (true, true));
    assert_eq!(claim_compatible_and_ready(&claim(0, "1", Some("1"), None, &[]), template), (true, true));
    // A template without a storage request asks for zero.
    let mut unsized_set = set.clone();
    unsized_set.spec.volume_claim_templates[0].spec.as_mut().unwrap().resources = None;
    let template = &unsized_set.spec.volume_claim_templates[0];
    assert_eq!(claim_compatible_and_ready(&claim(0, "1", None, None, &[]), template), (true, false));
}

/// `updatePVCStatus`: one entry per template, counting the listed ordinals' claims that exist,
/// are not being deleted and are compatible.
#[test]
fn volume_claims_count_the_compatible_and_ready_claims_of_the_slots() {
    let set = stateful_set(5);
    let mut deleting = claim(3, "1", Some("1"), None, &[]);
    deleting.metadata.deletion_timestamp = Some(Time(at(NOW)));
    let claims = [
        claim(0, "1", Some("1"), None, &[]),
        claim(1, "2", Some("1"), None, &[]),
        claim(2, "500m", Some("1"), None, &[]),
        deleting,
        claim(9, "1", Some("1"), None, &[]),
    ];
    let find = |n: &str| claims.iter().find(|c| c.metadata.name.as_deref() == Some(n));
    let want = |compatible, ready| {
        vec![crate::apis::statefulset::VolumeClaimStatus {
            volume_claim_name: "datadir".into(),
            compatible_replicas: compatible,
            compatible_ready_replicas: ready,
        }]
    };
    // 0: compatible and ready; 1: compatible; 2: too small; 3: being deleted; 4: no claim; 9 not a slot.
    assert_eq!(volume_claims(&set, 0..5, find), want(2, 1));
    assert_eq!(volume_claims(&set, [0, 9], find), want(2, 2));
    assert_eq!(volume_claims(&set, [], find), want(0, 0), "an entry per template even with no slot");
    let mut bare = set.clone();
    bare.spec.volume_claim_templates.clear();
    assert_eq!(volume_claims(&bare, 0..5, find), vec![], "no template, no entry");
}
