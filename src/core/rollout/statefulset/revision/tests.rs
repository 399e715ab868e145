//! Revision data and names against Go (`go_fixtures.json`: templates and what Go's
//! `encoding/json`, kruise's ASTS `getPatch` and `history.HashControllerRevision` compute for
//! them, k8s.io/api v0.32.10), then kruise's `TestCreateApplyRevision`,
//! `TestRollingUpdateApplyRevision`, `TestStatefulSetControl_getSetRevisions` (4 rows) and
//! `stateful_set_utils_test.go` `TestIsCurrentRevisionNeeded` (row by row).

use super::*;
use crate::core::features::Gate;
use crate::core::rollout::statefulset::fixtures::{named_pod, stateful_set};
use crate::core::rollout::statefulset::ordinals::ReplicaRange;
use k8s_openapi::api::core::v1::EnvVar;
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Fixture {
    stateful_set: String,
    collision_count: i32,
    spec: Value,
    name: String,
    data: String,
}

fn set_named(name: &str, spec: Value) -> StatefulSet {
    serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default", "uid": "uid-1"}, "spec": spec}))
        .unwrap()
}

#[test]
fn names_and_data_match_go() {
    let fixtures: Vec<Fixture> = serde_json::from_str(include_str!("go_fixtures.json")).unwrap();
    assert_eq!(fixtures.len(), 5);
    for f in fixtures {
        let set = set_named(&f.stateful_set, f.spec.clone());
        let rev = new_revision(&set, 1, f.collision_count);
        assert_eq!(rev.data, f.data, "{}: data", f.name);
        assert_eq!(rev.revision.metadata.name.as_deref(), Some(f.name.as_str()), "{}: name", f.name);
        // Read back as the apiserver gives it, the data bytes are the same and the set matches.
        let stored: ControllerRevision = serde_json::from_value(serde_json::to_value(&rev.revision).unwrap()).unwrap();
        assert_eq!(history::data_bytes(&stored), f.data, "{}: stored bytes", f.name);
        assert!(matches(&set, &stored), "{}: Match", f.name);
        // ApplyRevision round trip. Go's fails as ours does when the float64 round trip pushed an
        // int64 out of range (`json: cannot unmarshal number 9223372036854776000 ... int64`).
        match apply_revision(&set, &stored) {
            // Known difference: a template without containers (which validation rejects) comes
            // back from the revision with `"containers":[]` where Go's nil slice writes `null`.
            Ok(restored) if f.data.contains(r#""containers":null"#) => assert_eq!(
                revision_data(&restored.spec.template),
                f.data.replace(r#""containers":null"#, r#""containers":[]"#),
                "{}: round trip",
                f.name
            ),
            Ok(restored) => assert_eq!(revision_data(&restored.spec.template), f.data, "{}: round trip", f.name),
            Err(e) => {
                assert!(f.data.contains("9223372036854776000") && e.contains("does not decode"), "{}: {e}", f.name)
            }
        }
    }
}

#[test]
fn revision_metadata() {
    let mut set = stateful_set(3);
    set.metadata.annotations = Some([("note".to_string(), "n".to_string())].into());
    let rev = new_revision(&set, 4, 0).revision;
    let labels = rev.metadata.labels.clone().unwrap();
    assert_eq!(labels.get("foo").map(String::as_str), Some("bar"));
    let name = rev.metadata.name.clone().unwrap();
    assert_eq!(labels.get(history::CONTROLLER_REVISION_HASH_LABEL).map(String::as_str), name.strip_prefix("foo-"));
    assert_eq!(rev.revision, 4);
    assert_eq!(rev.metadata.namespace.as_deref(), Some("default"));
    let owner = &rev.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.api_version.as_str(), owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("apps.kruise.io/v1beta1", "StatefulSet", "test", Some(true))
    );
    assert_eq!(rev.metadata.annotations, set.metadata.annotations, "annotations copied from the set, no VCT hash");
    set.metadata.annotations = None;
    assert_eq!(new_revision(&set, 4, 0).revision.metadata.annotations, None);
}

#[test]
fn create_apply_revision() {
    // TestCreateApplyRevision
    let mut set = stateful_set(1);
    let revision = new_revision(&set, 1, 0).revision;
    set.spec.template.spec.as_mut().unwrap().containers[0].name = "foo".into();
    set.metadata.annotations = Some([("foo".to_string(), "bar".to_string())].into());
    let restored = apply_revision(&set, &revision).unwrap();
    let restored_revision = new_revision(&restored, 2, 0).revision;
    assert!(history::equal_revision(&revision, &restored_revision));
    let annotations = restored_revision.metadata.annotations.unwrap();
    assert_eq!(annotations.get("foo").map(String::as_str), Some("bar"));
}

#[test]
fn rolling_update_apply_revision() {
    // TestRollingUpdateApplyRevision
    let mut set = stateful_set(1);
    let current_set = set.clone();
    let current_revision = new_revision(&set, 1, 0).revision;
    set.spec.template.spec.as_mut().unwrap().containers[0].env =
        Some(vec![EnvVar { name: "foo".into(), value: Some("bar".into()), value_from: None }]);
    let update_set = set.clone();
    let update_revision = new_revision(&set, 2, 0).revision;
    // Go compares the typed templates with DeepEqual, where an empty `resources` struct is the zero
    // value; compared here through the bytes Go would write for them.
    let restored_current = apply_revision(&set, &current_revision).unwrap().spec.template;
    assert_eq!(revision_data(&restored_current), revision_data(&current_set.spec.template));
    assert_ne!(revision_data(&restored_current), revision_data(&update_set.spec.template));
    let restored_update = apply_revision(&set, &update_revision).unwrap().spec.template;
    assert_eq!(revision_data(&restored_update), revision_data(&update_set.spec.template));
    assert_eq!(
        restored_update.spec.unwrap().containers[0].env,
        update_set.spec.template.spec.unwrap().containers[0].env
    );
    // A revision without data is an error, one without a template leaves the set as it is.
    let mut broken = current_revision.clone();
    broken.data = None;
    assert!(apply_revision(&set, &broken).is_err());
    broken.data = Some(RawExtension(json!({"spec": {}})));
    assert_eq!(apply_revision(&set, &broken).unwrap(), set);
    broken.data = Some(RawExtension(json!({"spec": {"template": 3}})));
    assert!(apply_revision(&set, &broken).is_err());
}

fn stored(rev: &NewRevision, revision: i64, resource_version: &str) -> ControllerRevision {
    let mut r = rev.revision.clone();
    r.revision = revision;
    r.metadata.resource_version = Some(resource_version.into());
    r
}

#[test]
fn get_set_revisions() {
    // TestStatefulSetControl_getSetRevisions
    let set = stateful_set(3);
    let rev0 = new_revision(&set, 1, 0);
    let mut set1 = set.clone();
    set1.spec.template.spec.as_mut().unwrap().containers[0].image = Some("foo".into());
    set1.status = Some(Default::default());
    set1.status.as_mut().unwrap().current_revision = rev0.revision.metadata.name.clone().unwrap();
    let rev1 = new_revision(&set1, 2, 0);
    let mut set2 = set1.clone();
    set2.spec.template.metadata.as_mut().unwrap().labels.as_mut().unwrap().insert("new".into(), "label".into());
    let rev2 = new_revision(&set2, 3, 0);
    let name = |r: &ControllerRevision| r.metadata.name.clone().unwrap();

    // "creates initial revision"
    let got = active_revisions(&set, &[]);
    assert!(matches!(&got.change, RevisionChange::Create(c) if c.data == rev0.data));
    assert_eq!((name(&got.current), got.current.revision), (name(&rev0.revision), 1));
    assert_eq!((name(&got.update), got.update.revision), (name(&rev0.revision), 1));

    // "creates revision on update"
    let existing = [stored(&rev0, 1, "1")];
    let got = active_revisions(&set1, &existing);
    assert!(matches!(&got.change, RevisionChange::Create(c) if c.data == rev1.data));
    assert_eq!((name(&got.current), got.current.revision), (name(&rev0.revision), 1));
    assert_eq!((name(&got.update), got.update.revision), (name(&rev1.revision), 2));

    // "must not recreate a new revision of same set"
    let existing = [stored(&rev0, 1, "1"), stored(&rev1, 2, "2")];
    let got = active_revisions(&set1, &existing);
    assert_eq!(got.change, RevisionChange::None);
    assert_eq!((name(&got.current), got.update.revision), (name(&rev0.revision), 2));

    // "must rollback to a previous revision"
    let existing = [stored(&rev0, 1, "1"), stored(&rev1, 2, "2"), stored(&rev2, 3, "3")];
    let got = active_revisions(&set1, &existing);
    assert_eq!(
        got.change,
        RevisionChange::Bump { name: name(&rev1.revision), resource_version: "2".into(), revision: 4 }
    );
    assert_eq!((name(&got.update), got.update.revision), (name(&rev1.revision), 4));
    assert_eq!(name(&got.current), name(&rev0.revision));
    assert_eq!(got.collision_count, 0);
}

#[test]
fn collisions_step_the_count() {
    // A revision holding the candidate's name with other data: the count goes up until free.
    let set = stateful_set(3);
    let candidate = new_revision(&set, 2, 0);
    let mut squatter = stored(&candidate, 1, "1");
    squatter.data = Some(RawExtension(json!({"spec": {"template": {"other": true}}})));
    let got = active_revisions(&set, &[squatter]);
    assert_eq!(got.collision_count, 1);
    let RevisionChange::Create(created) = &got.change else { panic!("expected a create: {:?}", got.change) };
    assert_eq!(created.revision.metadata.name, new_revision(&set, 2, 1).revision.metadata.name);
    assert_ne!(created.revision.metadata.name, candidate.revision.metadata.name);
    assert_eq!(created.revision.revision, 2);
}

/// `newReplicas(startOrdinal, size, revision)` of the Go test.
fn replicas(start: i64, size: i64, revision: &str) -> Vec<Option<Pod>> {
    (0..size).map(|i| Some(named_pod(&format!("ss-{}", start + i), &[(identity::REVISION_LABEL, revision)]))).collect()
}

fn nils(n: usize) -> Vec<Option<Pod>> {
    vec![None; n]
}

fn cat(parts: Vec<Vec<Option<Pod>>>) -> Vec<Option<Pod>> {
    parts.into_iter().flatten().collect()
}

#[test]
fn is_current_revision_needed_rows() {
    // TestIsCurrentRevisionNeeded (21 rows, names as in Go, where four repeat): (name, replicas,
    // start, reserved, partition (None: no rollingUpdate), unordered, ordinal, Go's replicas
    // slice, expected). Status counts are recomputed from the pods as the Go test does. Go's
    // ordered branch is positional: slice index i is slot `ordinal - start`, so index i is given
    // ordinal start + i here, whatever the pod's name says (the Go slices are not always aligned).
    let gates = FeatureGates::default().with(Gate::StatefulSetStartOrdinal, true);
    type Row = (&'static str, i32, i32, Vec<i32>, Option<i32>, bool, i64, Vec<Option<Pod>>, bool);
    let (cur, upd) = ("1", "2");
    let rows: Vec<Row> = vec![
        (
            "Ordinals start 0, no partition with update 0",
            3,
            0,
            vec![],
            None,
            false,
            1,
            cat(vec![replicas(0, 1, cur), replicas(2, 1, cur)]),
            true,
        ),
        (
            "Ordinals start 0, no partition with update 1",
            3,
            0,
            vec![],
            None,
            false,
            1,
            cat(vec![replicas(0, 1, cur), replicas(2, 1, upd)]),
            false,
        ),
        (
            "Ordinals start 0, partition 1 with update 0",
            3,
            0,
            vec![],
            Some(1),
            false,
            1,
            cat(vec![replicas(0, 1, cur), replicas(2, 1, cur)]),
            false,
        ),
        (
            "Ordinals start 0, partition 1 with update 1",
            3,
            0,
            vec![],
            Some(1),
            false,
            1,
            cat(vec![replicas(0, 1, cur), replicas(2, 1, upd)]),
            false,
        ),
        (
            "Ordinals start 0, partition 1, create current pod1",
            3,
            0,
            vec![],
            Some(1),
            false,
            0,
            replicas(1, 2, cur),
            true,
        ),
        (
            "Ordinals start 0, partition 1, create current pod2",
            3,
            0,
            vec![],
            Some(1),
            false,
            0,
            replicas(1, 2, cur),
            true,
        ),
        ("ReservedId 1, partition 2, create current pod1", 3, 0, vec![1], Some(2), false, 0, replicas(2, 2, cur), true),
        (
            "Ordinals start 2, no partition with update 0",
            3,
            2,
            vec![],
            None,
            false,
            3,
            cat(vec![replicas(2, 1, cur), replicas(4, 1, cur)]),
            true,
        ),
        (
            "Ordinals start 2, no partition with update 1",
            3,
            2,
            vec![],
            None,
            false,
            3,
            cat(vec![replicas(2, 1, cur), replicas(4, 1, upd)]),
            false,
        ),
        (
            "Ordinals start 2, partition 1 with update 0",
            3,
            2,
            vec![],
            Some(1),
            false,
            3,
            cat(vec![replicas(2, 1, cur), replicas(4, 1, cur)]),
            false,
        ),
        (
            "Ordinals start 2, partition 1 with update 1",
            3,
            2,
            vec![],
            Some(1),
            false,
            3,
            cat(vec![replicas(2, 1, cur), replicas(4, 1, upd)]),
            false,
        ),
        (
            "Ordinals start 2, partition 1, create current pod1",
            3,
            2,
            vec![],
            Some(1),
            false,
            2,
            replicas(3, 2, cur),
            true,
        ),
        (
            "Ordinals start 2, partition 1, create current pod2",
            3,
            2,
            vec![],
            Some(1),
            false,
            2,
            replicas(1, 2, cur),
            true,
        ),
        (
            "UnorderedUpdate, partition 1 with update 1 (0 current)",
            3,
            0,
            vec![],
            Some(1),
            true,
            1,
            cat(vec![replicas(0, 1, cur), replicas(2, 1, upd)]),
            false,
        ),
        (
            "UnorderedUpdate, partition 1 with update 1 (0 updated)",
            3,
            0,
            vec![],
            Some(1),
            true,
            1,
            cat(vec![replicas(0, 1, upd), replicas(2, 1, upd)]),
            true,
        ),
        (
            "UnorderedUpdate, partition 1 with update 1 (start 2, 2 current)",
            3,
            2,
            vec![],
            Some(1),
            true,
            3,
            cat(vec![replicas(2, 1, cur), replicas(4, 1, upd)]),
            false,
        ),
        (
            "UnorderedUpdate, partition 1 with update 1 (start 2, 2 updated)",
            3,
            2,
            vec![],
            Some(1),
            true,
            3,
            cat(vec![replicas(2, 1, upd), replicas(4, 1, upd)]),
            true,
        ),
        (
            "ReservedIds 1, UnorderedUpdate, partition 2 with update 1 (0 current)",
            3,
            0,
            vec![1],
            Some(1),
            true,
            2,
            cat(vec![replicas(0, 1, cur), nils(2), replicas(3, 1, upd)]),
            false,
        ),
        (
            "ReservedIds 1, UnorderedUpdate, partition 2 with update 1 (0 updated)",
            3,
            0,
            vec![1],
            Some(1),
            true,
            2,
            cat(vec![replicas(0, 1, upd), nils(1), replicas(2, 1, cur), replicas(3, 1, upd)]),
            true,
        ),
        (
            "Ordinals start 0, reservedId 1, partition 1, create pod2",
            3,
            0,
            vec![1],
            Some(2),
            false,
            2,
            cat(vec![replicas(0, 1, cur), nils(2), replicas(3, 1, upd)]),
            true,
        ),
        (
            "Ordinals start 2, reservedId 1, partition 1, create pod2",
            3,
            2,
            vec![1],
            Some(2),
            false,
            4,
            cat(vec![replicas(2, 1, cur), nils(2), replicas(5, 1, upd)]),
            true,
        ),
    ];
    for (name, n, start, reserved, partition, unordered, ordinal, pods, expected) in rows {
        let mut ru = json!({});
        if let Some(p) = partition {
            ru["partition"] = json!(p);
        }
        if unordered {
            ru["unorderedUpdate"] = json!({"priorityStrategy": {}});
        }
        let mut spec = json!({"replicas": n, "ordinals": {"start": start}, "reserveOrdinals": reserved,
            "updateStrategy": {"type": "RollingUpdate"}});
        if partition.is_some() || unordered {
            spec["updateStrategy"]["rollingUpdate"] = ru;
        }
        let mut set = set_named("ss", spec);
        let count = |rev: &str| pods.iter().flatten().filter(|p| identity::pod_revision(p) == rev).count() as i32;
        set.status = Some(Default::default());
        set.status.as_mut().unwrap().current_replicas = count(cur);
        set.status.as_mut().unwrap().updated_replicas = count(upd);
        let range = ReplicaRange::of(&set, &gates);
        let slots: Vec<Slot<'_>> =
            pods.iter().enumerate().map(|(i, p)| Slot { ordinal: range.start + i as i64, pod: p.as_ref() }).collect();
        assert_eq!(is_current_revision_needed(&set, upd, ordinal, range.start, &slots, &gates), expected, "{name}");
    }
}

#[test]
fn current_revision_needs_rolling_update() {
    let mut set = stateful_set(3);
    set.spec.update_strategy.type_ = crate::apis::statefulset::ON_DELETE.into();
    assert!(!is_current_revision_needed(&set, "2", 0, 0, &[], &FeatureGates::default()));
}

#[test]
fn truncate_history() {
    // (limit, live pod revisions) over revisions r1..r6 with current r2 and update r6.
    let revs: Vec<ControllerRevision> = (1..=6)
        .map(|i| ControllerRevision {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(format!("r{i}")),
                ..Default::default()
            },
            revision: i,
            data: None,
        })
        .collect();
    let pod_at = |rev: &str| named_pod("foo-0", &[(identity::REVISION_LABEL, rev)]);
    let rows: [(Option<i32>, &[&str], &[&str]); 4] = [
        (Some(2), &[], &["r1", "r3"]),
        (Some(2), &["r3"], &["r1"]),
        (Some(0), &["r4"], &["r1", "r3", "r5"]),
        (None, &[], &[]),
    ];
    for (limit, pod_revisions, want) in rows {
        let mut set = stateful_set(1);
        set.spec.revision_history_limit = limit;
        let pods: Vec<Pod> = pod_revisions.iter().map(|r| pod_at(r)).collect();
        let refs: Vec<&Pod> = pods.iter().collect();
        let got: Vec<&str> = revisions_to_truncate(&set, &revs, &refs, "r2", "r6")
            .into_iter()
            .map(|r| r.metadata.name.as_deref().unwrap())
            .collect();
        assert_eq!(got, want, "limit {limit:?}, pods at {pod_revisions:?}");
    }
}
