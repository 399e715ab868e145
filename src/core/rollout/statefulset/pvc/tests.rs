//! kruise's `stateful_set_utils_test.go` `TestClaimOwnerMatchesSetAndPod` (6 rows × pod ref ×
//! set ref × unrelated refs), `TestUpdateClaimOwnerRefForSetAndPod` (6 rows × pod ref × set
//! ref), `TestHasOwnerRef`, `TestHasStaleOwnerRef`, `TestSetOwnerRef`, `TestRemoveOwnerRef`,
//! `TestGetPersistentVolumeClaimRetentionPolicy`, and `stateful_pod_control_test.go`
//! `TestPodClaimIsStale` (8 rows), with the lookups of `StatefulPodControl` around them.

use super::*;
use crate::apis::statefulset::v1beta1::StatefulSetPersistentVolumeClaimRetentionPolicy;
use crate::core::features::FeatureGates;
use crate::core::rollout::statefulset::fixtures::stateful_set;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

fn meta(name: &str, uid: &str) -> ObjectMeta {
    ObjectMeta {
        name: (!name.is_empty()).then(|| name.into()),
        uid: (!uid.is_empty()).then(|| uid.into()),
        ..Default::default()
    }
}

fn with_policy(mut set: StatefulSet, when_scaled: &str, when_deleted: &str) -> StatefulSet {
    set.spec.persistent_volume_claim_retention_policy = Some(StatefulSetPersistentVolumeClaimRetentionPolicy {
        when_deleted: when_deleted.into(),
        when_scaled: when_scaled.into(),
    });
    set
}

fn range(set: &StatefulSet) -> ReplicaRange {
    ReplicaRange::of(set, &FeatureGates::default())
}

#[test]
fn claim_owner_matches_set_and_pod_rows() {
    // TestClaimOwnerMatchesSetAndPod: (name, whenScaled, whenDeleted, needsPodRef, needsSetRef,
    // replicas, ordinal).
    let rows = [
        ("retain", RETAIN, RETAIN, false, false, 0, 0),
        ("on SS delete", RETAIN, DELETE, false, true, 0, 0),
        ("on scaledown only, condemned", DELETE, RETAIN, true, false, 2, 2),
        ("on scaledown only, remains", DELETE, RETAIN, false, false, 2, 1),
        ("on both, condemned", DELETE, DELETE, true, false, 2, 2),
        ("on both, remains", DELETE, DELETE, false, true, 2, 1),
    ];
    for (name, scaled, deleted, needs_pod, needs_set, replicas, ordinal) in rows {
        for use_other_refs in [false, true] {
            for set_pod_ref in [false, true] {
                for set_set_ref in [false, true] {
                    let mut claim = PersistentVolumeClaim { metadata: meta("target-claim", ""), ..Default::default() };
                    let pod = Pod { metadata: meta(&format!("pod-{ordinal}"), "pod-123"), ..Default::default() };
                    let mut set = with_policy(StatefulSet::default(), scaled, deleted);
                    set.metadata = meta("stateful-set", "ss-456");
                    set.spec.replicas = Some(replicas);
                    if set_pod_ref {
                        set_owner_ref(&mut claim.metadata, &pod.metadata, "", "");
                    }
                    if set_set_ref {
                        set_owner_ref(&mut claim.metadata, &set.metadata, "", "");
                    }
                    if use_other_refs {
                        set_owner_ref(&mut claim.metadata, &meta("rand1", "rand1-abc"), "", "");
                        set_owner_ref(&mut claim.metadata, &meta("rand2", "rand2-def"), "", "");
                    }
                    let should_match = set_pod_ref == needs_pod && set_set_ref == needs_set;
                    assert_eq!(
                        claim_owner_matches_set_and_pod(&claim, &set, &pod, &range(&set)),
                        should_match,
                        "{name} with pod={set_pod_ref},set={set_set_ref},others={use_other_refs}"
                    );
                }
            }
        }
    }
}

#[test]
fn update_claim_owner_ref_for_set_and_pod_rows() {
    // TestUpdateClaimOwnerRefForSetAndPod: (name, whenScaled, whenDeleted, condemned,
    // needsPodRef, needsSetRef); replicas 5, the pod is pod-8 when condemned, else pod-1.
    let rows = [
        ("retain", RETAIN, RETAIN, false, false, false),
        ("delete with set", RETAIN, DELETE, false, false, true),
        ("delete with scaledown, not condemned", DELETE, RETAIN, false, false, false),
        ("delete on scaledown, condemned", DELETE, RETAIN, true, true, false),
        ("delete on both, not condemned", DELETE, DELETE, false, false, true),
        ("delete on both, condemned", DELETE, DELETE, true, true, false),
    ];
    for (name, scaled, deleted, condemned, needs_pod, needs_set) in rows {
        for has_pod_ref in [true, false] {
            for has_set_ref in [true, false] {
                let mut set = with_policy(StatefulSet::default(), scaled, deleted);
                set.metadata = meta("ss", "ss-123");
                set.spec.replicas = Some(5);
                let pod =
                    Pod { metadata: meta(if condemned { "pod-8" } else { "pod-1" }, "pod-456"), ..Default::default() };
                let mut claim = PersistentVolumeClaim::default();
                if has_pod_ref {
                    set_owner_ref(&mut claim.metadata, &pod.metadata, "", "");
                }
                if has_set_ref {
                    set_owner_ref(&mut claim.metadata, &set.metadata, "", "");
                }
                let needs_update = has_pod_ref != needs_pod || has_set_ref != needs_set;
                let what = format!("{name} hasPodRef={has_pod_ref} hasSetRef={has_set_ref}");
                assert_eq!(
                    update_claim_owner_ref_for_set_and_pod(&mut claim, &set, &pod, &range(&set)),
                    needs_update,
                    "{what}"
                );
                assert_eq!(has_owner_ref(&claim.metadata, &pod.metadata), needs_pod, "pod ref: {what}");
                assert_eq!(has_owner_ref(&claim.metadata, &set.metadata), needs_set, "set ref: {what}");
                assert!(claim_owner_matches_set_and_pod(&claim, &set, &pod, &range(&set)), "{what}");
            }
        }
    }
}

#[test]
fn added_refs_carry_the_type() {
    let mut set = with_policy(stateful_set(1), DELETE, DELETE);
    set.metadata.uid = Some("set-uid".into());
    let pod = Pod { metadata: meta("foo-3", "pod-uid"), ..Default::default() };
    let mut claim = PersistentVolumeClaim::default();
    assert!(update_claim_owner_ref_for_set_and_pod(&mut claim, &set, &pod, &range(&set)));
    let r = &claim.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (r.api_version.as_str(), r.kind.as_str(), r.name.as_str(), r.uid.as_str()),
        ("v1", "Pod", "foo-3", "pod-uid")
    );
    assert_eq!((r.controller, r.block_owner_deletion), (None, None));
    let pod = Pod { metadata: meta("foo-0", "pod-uid"), ..Default::default() };
    assert!(update_claim_owner_ref_for_set_and_pod(&mut claim, &set, &pod, &range(&set)));
    let refs = claim.metadata.owner_references.as_ref().unwrap();
    assert_eq!(refs.len(), 1);
    assert_eq!(
        (refs[0].api_version.as_str(), refs[0].kind.as_str(), refs[0].name.as_str()),
        ("apps.kruise.io/v1beta1", "StatefulSet", "foo")
    );
    // An unknown policy value counts as Retain/Retain: every reference goes.
    let odd = with_policy(set.clone(), "Keep", DELETE);
    assert!(update_claim_owner_ref_for_set_and_pod(&mut claim, &odd, &pod, &range(&odd)));
    assert_eq!(claim.metadata.owner_references, Some(vec![]));
}

#[test]
fn has_owner_ref_rows() {
    // TestHasOwnerRef
    let target = ObjectMeta {
        owner_references: Some(vec![
            OwnerReference { uid: "123".into(), ..Default::default() },
            OwnerReference { uid: "456".into(), ..Default::default() },
        ]),
        ..Default::default()
    };
    assert!(has_owner_ref(&target, &meta("", "123")), "missing owner");
    assert!(!has_owner_ref(&target, &meta("", "789")), "unexpected owner");
}

#[test]
fn has_stale_owner_ref_rows() {
    // TestHasStaleOwnerRef
    let target = ObjectMeta {
        owner_references: Some(vec![
            OwnerReference { name: "bob".into(), uid: "123".into(), ..Default::default() },
            OwnerReference { name: "shirley".into(), uid: "456".into(), ..Default::default() },
        ]),
        ..Default::default()
    };
    assert!(!has_stale_owner_ref(&target, &meta("bob", "123")), "ownerA should not be stale");
    assert!(has_stale_owner_ref(&target, &meta("shirley", "789")), "ownerB should be stale");
    assert!(!has_stale_owner_ref(&target, &meta("yvonne", "345")), "ownerC should not be stale");
}

#[test]
fn set_owner_ref_rows() {
    // TestSetOwnerRef
    let mut target = ObjectMeta::default();
    let a = meta("A", "ABC");
    assert!(set_owner_ref(&mut target, &a, "", ""), "unexpected lack of update");
    assert_eq!(target.owner_references.as_ref().unwrap().len(), 1);
    assert_eq!(target.owner_references.as_ref().unwrap()[0].uid, "ABC");
    assert!(!set_owner_ref(&mut target, &a, "", ""), "unexpected update");
    assert_eq!(target.owner_references.as_ref().unwrap().len(), 1, "duplicate reference");
    let b = meta("B", "BCD");
    assert!(set_owner_ref(&mut target, &b, "", ""), "lack of second update");
    let uids: Vec<_> = target.owner_references.as_ref().unwrap().iter().map(|r| r.uid.as_str()).collect();
    assert_eq!(uids, ["ABC", "BCD"]);
}

#[test]
fn remove_owner_ref_rows() {
    // TestRemoveOwnerRef
    let mut target = ObjectMeta::default();
    let (a, b) = (meta("A", "ABC"), meta("B", "BCD"));
    assert!(!remove_owner_ref(&mut target, &a), "update on empty remove");
    set_owner_ref(&mut target, &a, "", "");
    assert!(remove_owner_ref(&mut target, &a), "lack of update");
    assert!(target.owner_references.as_ref().unwrap().is_empty(), "reference remains");
    set_owner_ref(&mut target, &a, "", "");
    assert!(!remove_owner_ref(&mut target, &b), "update for mismatched owner");
    assert_eq!(target.owner_references.as_ref().unwrap().len(), 1, "missing ref after no-op remove");
    set_owner_ref(&mut target, &b, "", "");
    assert!(remove_owner_ref(&mut target, &a), "missing update for second remove");
    let uids: Vec<_> = target.owner_references.as_ref().unwrap().iter().map(|r| r.uid.as_str()).collect();
    assert_eq!(uids, ["BCD"]);
}

#[test]
fn get_persistent_volume_claim_retention_policy() {
    // TestGetPersistentVolumeClaimRetentionPolicy, and the nil default.
    let set = with_policy(StatefulSet::default(), RETAIN, RETAIN);
    assert_eq!(retention_policy(&set), (RETAIN, RETAIN));
    let set = with_policy(StatefulSet::default(), DELETE, RETAIN);
    assert_eq!(retention_policy(&set), (RETAIN, DELETE));
    assert_eq!(retention_policy(&StatefulSet::default()), (RETAIN, RETAIN));
}

#[test]
fn pod_claim_is_stale_rows() {
    // TestPodClaimIsStale: (name, claim states, expected, skip pod uid); whenScaled Delete.
    let rows: [(&str, &[&str], bool, bool); 8] = [
        ("all missing", &["missing", "missing"], false, false),
        ("no claims", &[], false, false),
        ("exists", &["missing", "exists"], false, false),
        ("all refs", &["with-ref", "with-ref"], false, false),
        ("stale & exists", &["stale", "exists"], true, false),
        ("stale & missing", &["stale", "missing"], true, false),
        ("withRef & stale", &["with-ref", "stale"], true, false),
        ("withRef, no UID", &["with-ref"], true, true),
    ];
    for (name, states, expected, skip_uid) in rows {
        let mut set = with_policy(StatefulSet::default(), DELETE, RETAIN);
        set.metadata.name = Some("set".into());
        set.metadata.namespace = Some("default".into());
        let mut claims = Vec::new();
        for (i, state) in states.iter().enumerate() {
            let template = PersistentVolumeClaim { metadata: meta(&format!("claim-{i}"), ""), ..Default::default() };
            set.spec.volume_claim_templates.push(template);
            let mut claim =
                PersistentVolumeClaim { metadata: meta(&format!("claim-{i}-set-3"), ""), ..Default::default() };
            let uid = match *state {
                "missing" => continue,
                "exists" => None,
                "stale" => Some("stale"),
                _ => Some("123"),
            };
            claim.metadata.owner_references =
                uid.map(|u| vec![OwnerReference { name: "set-3".into(), uid: u.into(), ..Default::default() }]);
            claims.push(claim);
        }
        let pod = Pod { metadata: meta("set-3", if skip_uid { "" } else { "123" }), ..Default::default() };
        let lookup = |n: &str| claims.iter().find(|c| c.metadata.name.as_deref() == Some(n));
        assert_eq!(pod_claim_is_stale(&set, &pod, lookup), expected, "{name}");
        // With whenScaled Retain nothing is ever stale.
        let retain = with_policy(set.clone(), RETAIN, RETAIN);
        assert!(!pod_claim_is_stale(&retain, &pod, lookup), "{name} under Retain");
    }
}

#[test]
fn pod_claims_lookups() {
    // `ClaimsMatchRetentionPolicy` / `UpdatePodClaimForRetentionPolicy` /
    // `createPersistentVolumeClaims` over a claim index.
    let set = with_policy(stateful_set(2), DELETE, DELETE);
    let r = range(&set);
    let condemned = Pod { metadata: meta("foo-2", "pod-2"), ..Default::default() };
    let mut existing = identity::persistent_volume_claims(&set, 2).remove(0).1;
    existing.metadata.resource_version = Some("7".into());
    let claims = [existing.clone()];
    let lookup = |n: &str| claims.iter().find(|c| c.metadata.name.as_deref() == Some(n));
    assert!(!claims_match_retention_policy(&set, &condemned, &r, lookup));
    let updates = claim_updates_for_retention_policy(&set, &condemned, &r, lookup);
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].metadata.resource_version.as_deref(), Some("7"));
    assert!(claim_owner_matches_set_and_pod(&updates[0], &set, &condemned, &r));
    // A replica whose claim is missing matches (picked up later) and has its claim created.
    let replica = Pod { metadata: meta("foo-1", "pod-1"), ..Default::default() };
    assert!(claims_match_retention_policy(&set, &replica, &r, lookup));
    assert!(claim_updates_for_retention_policy(&set, &replica, &r, lookup).is_empty());
    let plan = claims_to_create(&set, &replica, lookup);
    assert_eq!(plan.create.iter().map(|c| c.metadata.name.clone().unwrap()).collect::<Vec<_>>(), ["datadir-foo-1"]);
    assert!(plan.deleting.is_empty());
    // A claim being deleted blocks the pod.
    let mut deleting = existing;
    deleting.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    let claims = [deleting];
    let lookup = |n: &str| claims.iter().find(|c| c.metadata.name.as_deref() == Some(n));
    let plan = claims_to_create(&set, &condemned, lookup);
    assert_eq!((plan.create.len(), plan.deleting), (0, vec!["datadir-foo-2".to_string()]));
}
