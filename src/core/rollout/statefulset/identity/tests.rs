//! kruise's `stateful_set_utils_test.go`, case by case: `TestGetParentNameAndOrdinal`,
//! `TestIsMemberOf`, `TestIdentityMatches`, `TestStorageMatches`, `TestUpdateIdentity`,
//! `TestUpdateIdentityWithPodIndexLabel`, `TestUpdateStorage`,
//! `TestGetPersistentVolumeClaimsMergesLabels`, `TestGetPersistentVolumeClaimsWithNilLabels`,
//! `TestNewPodControllerRef`; then what the Go tests leave implicit (names that do not parse,
//! the pod built from a revision's template).

use super::*;
use crate::core::rollout::statefulset::fixtures::{named_pod, stateful_set, stateful_set_pod};
use serde_json::json;

fn volumes_mut(pod: &mut Pod) -> &mut Vec<Volume> {
    pod.spec.as_mut().unwrap().volumes.as_mut().unwrap()
}

#[test]
fn get_parent_name_and_ordinal() {
    // TestGetParentNameAndOrdinal
    let set = stateful_set(3);
    let mut pod = stateful_set_pod(&set, 1);
    assert_eq!(parent_and_ordinal(pods::name(&pod)), (Some("foo"), Some(1)));
    pod.metadata.name = Some("1-bar".into());
    assert_eq!(parent_and_ordinal(pods::name(&pod)), (None, None));
    assert_eq!(pod_ordinal(&pod), None);
    assert_eq!(parent_name(&pod), "");
}

#[test]
fn names_parse_as_go_regexp_does() {
    let rows: &[(&str, Option<&str>, Option<i32>)] = &[
        ("web-0", Some("web"), Some(0)),
        ("web-a-12", Some("web-a"), Some(12)),
        ("web-007", Some("web"), Some(7)),
        ("web--3", Some("web-"), Some(3)),
        ("-3", Some(""), Some(3)),
        ("web-3a", None, None),
        ("web-", None, None),
        ("web", None, None),
        ("web-2147483647", Some("web"), Some(i32::MAX)),
        // ParseInt(.., 32) fails: the parent stays, the ordinal is -1 in Go.
        ("web-2147483648", Some("web"), None),
        ("web-99999999999999999999", Some("web"), None),
        ("a\nweb-1", Some("web"), Some(1)),
    ];
    for (name, parent, ord) in rows {
        assert_eq!(parent_and_ordinal(name), (*parent, *ord), "{name}");
    }
}

#[test]
fn is_member_of_rows() {
    // TestIsMemberOf
    let set = stateful_set(3);
    let mut set2 = stateful_set(3);
    set2.metadata.name = Some("foo2".into());
    let pod = stateful_set_pod(&set, 1);
    assert!(is_member_of(&set, &pod));
    assert!(!is_member_of(&set2, &pod));
}

#[test]
fn identity_matches_rows() {
    // TestIdentityMatches
    let set = stateful_set(3);
    let mut pod = stateful_set_pod(&set, 1);
    assert!(identity_matches(&set, &pod), "newly created pod has a bad identity");
    pod.metadata.name = Some("foo".into());
    assert!(!identity_matches(&set, &pod), "wrong name");
    let mut pod = stateful_set_pod(&set, 1);
    pod.metadata.namespace = Some(String::new());
    assert!(!identity_matches(&set, &pod), "wrong namespace");
    let mut pod = stateful_set_pod(&set, 1);
    pod.metadata.labels.as_mut().unwrap().remove(POD_NAME_LABEL);
    assert!(!identity_matches(&set, &pod), "missing pod-name label");
    // Not in Go's test: a zero-padded ordinal is not the set's name for it.
    let mut pod = stateful_set_pod(&set, 1);
    pod.metadata.name = Some("foo-01".into());
    pod.metadata.labels.as_mut().unwrap().insert(POD_NAME_LABEL.into(), "foo-01".into());
    assert!(!identity_matches(&set, &pod));
}

#[test]
fn storage_matches_rows() {
    // TestStorageMatches
    let set = stateful_set(3);
    let mut pod = stateful_set_pod(&set, 1);
    assert!(storage_matches(&set, &pod), "newly created pod has invalid storage");
    pod.spec.as_mut().unwrap().volumes = None;
    assert!(!storage_matches(&set, &pod), "pod without volumes");
    let mut pod = stateful_set_pod(&set, 1);
    volumes_mut(&mut pod).iter_mut().for_each(|v| v.persistent_volume_claim = None);
    assert!(!storage_matches(&set, &pod), "volumes without claims");
    let mut pod = stateful_set_pod(&set, 1);
    volumes_mut(&mut pod)
        .iter_mut()
        .filter_map(|v| v.persistent_volume_claim.as_mut())
        .for_each(|c| c.claim_name = "foo".into());
    assert!(!storage_matches(&set, &pod), "claims with wrong names");
    let mut pod = stateful_set_pod(&set, 1);
    pod.metadata.name = Some("bar".into());
    assert!(!storage_matches(&set, &pod), "pod without an ordinal");
}

#[test]
fn update_identity_rows() {
    // TestUpdateIdentity
    let set = stateful_set(3);
    let mut pod = stateful_set_pod(&set, 1);
    assert!(identity_matches(&set, &pod));
    pod.metadata.namespace = Some(String::new());
    assert!(!identity_matches(&set, &pod));
    update_identity(&set, &mut pod, true);
    assert!(identity_matches(&set, &pod), "namespace not restored");
    pod.metadata.labels.as_mut().unwrap().remove(POD_NAME_LABEL);
    update_identity(&set, &mut pod, true);
    assert!(identity_matches(&set, &pod), "pod-name label not restored");
    // Not in Go's test: a name without an ordinal is left alone.
    let mut odd = named_pod("bar", &[]);
    update_identity(&set, &mut odd, true);
    assert_eq!(odd, named_pod("bar", &[]));
}

#[test]
fn update_identity_with_pod_index_label() {
    // TestUpdateIdentityWithPodIndexLabel
    let set = stateful_set(3);
    let mut pod = stateful_set_pod(&set, 1);
    pod.metadata.labels.as_mut().unwrap().remove(POD_INDEX_LABEL);
    update_identity(&set, &mut pod, true);
    assert_eq!(pods::label(&pod, POD_INDEX_LABEL), Some("1"));
    // And with the gate off the label is not written.
    pod.metadata.labels.as_mut().unwrap().remove(POD_INDEX_LABEL);
    update_identity(&set, &mut pod, false);
    assert_eq!(pods::label(&pod, POD_INDEX_LABEL), None);
}

#[test]
fn update_storage_rows() {
    // TestUpdateStorage
    let set = stateful_set(3);
    let mut pod = stateful_set_pod(&set, 1);
    assert!(storage_matches(&set, &pod));
    pod.spec.as_mut().unwrap().volumes = None;
    assert!(!storage_matches(&set, &pod));
    update_storage(&set, &mut pod);
    assert!(storage_matches(&set, &pod), "volumes not recreated");
    let mut pod = stateful_set_pod(&set, 1);
    volumes_mut(&mut pod).iter_mut().for_each(|v| v.persistent_volume_claim = None);
    assert!(!storage_matches(&set, &pod));
    update_storage(&set, &mut pod);
    assert!(storage_matches(&set, &pod), "volume claims not recreated");
    let mut pod = stateful_set_pod(&set, 1);
    volumes_mut(&mut pod)
        .iter_mut()
        .filter_map(|v| v.persistent_volume_claim.as_mut())
        .for_each(|c| c.claim_name = "foo".into());
    assert!(!storage_matches(&set, &pod));
    update_storage(&set, &mut pod);
    assert!(storage_matches(&set, &pod), "claim names not restored");
    // The template's own volume is kept, after the claim volume.
    let names: Vec<_> = pod.spec.unwrap().volumes.unwrap().into_iter().map(|v| v.name).collect();
    assert_eq!(names, ["datadir", "home"]);
}

#[test]
fn claims_merge_labels() {
    // TestGetPersistentVolumeClaimsMergesLabels
    let mut set = stateful_set(3);
    for t in &mut set.spec.volume_claim_templates {
        let labels = t.metadata.labels.get_or_insert_with(Default::default);
        labels.insert("custom-label".into(), "custom-value".into());
        labels.insert("another-label".into(), "another-value".into());
    }
    let claims = persistent_volume_claims(&set, 1);
    assert_eq!(claims.len(), 1);
    for (template, claim) in claims {
        assert_eq!(template, "datadir");
        let labels = claim.metadata.labels.unwrap();
        assert_eq!(labels.get("custom-label").map(String::as_str), Some("custom-value"));
        assert_eq!(labels.get("another-label").map(String::as_str), Some("another-value"));
        assert_eq!(labels.get("foo").map(String::as_str), Some("bar"));
        assert_eq!(claim.metadata.name.as_deref(), Some("datadir-foo-1"));
        assert_eq!(claim.metadata.namespace.as_deref(), Some("default"));
    }
}

#[test]
fn claims_with_nil_labels() {
    // TestGetPersistentVolumeClaimsWithNilLabels
    let mut set = stateful_set(3);
    for t in &mut set.spec.volume_claim_templates {
        t.metadata.labels = None;
    }
    for (_, claim) in persistent_volume_claims(&set, 1) {
        assert_eq!(claim.metadata.labels, set.spec.selector.as_ref().unwrap().match_labels);
    }
}

#[test]
fn new_pod_controller_ref() {
    // TestNewPodControllerRef
    let set = stateful_set(1);
    let pod = stateful_set_pod(&set, 0);
    let refs = pod.metadata.owner_references.unwrap();
    let r = refs.iter().find(|r| r.controller == Some(true)).unwrap();
    assert_eq!(r.api_version, "apps.kruise.io/v1beta1");
    assert_eq!(r.kind, "StatefulSet");
    assert_eq!(r.name, "foo");
    assert_eq!(r.uid, "test");
    assert_eq!(r.block_owner_deletion, Some(true));
}

#[test]
fn new_pod_from_a_revision_template() {
    let set = stateful_set(3);
    let template: PodTemplateSpec = serde_json::from_value(json!({
        "metadata": {"labels": {"foo": "bar", "v": "2"}, "annotations": {"a": "b"}, "finalizers": ["f"]},
        "spec": {"containers": [{"name": "nginx", "image": "nginx:2"}],
                 "volumes": [{"name": "datadir", "emptyDir": {}}, {"name": "home", "hostPath": {"path": "/tmp/home"}}]}
    }))
    .unwrap();
    let pod = new_pod(&set, &template, 2, "foo-abc", true);
    let want = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "foo-2", "generateName": "foo-", "namespace": "default",
            "labels": {"foo": "bar", "v": "2", POD_NAME_LABEL: "foo-2", POD_INDEX_LABEL: "2", REVISION_LABEL: "foo-abc"},
            "annotations": {"a": "b"},
            "finalizers": ["f"],
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "foo",
                                  "uid": "test", "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {
            "containers": [{"name": "nginx", "image": "nginx:2"}],
            "hostname": "foo-2", "subdomain": "governingsvc",
            // The template's `datadir` volume is replaced by the claim.
            "volumes": [{"name": "datadir", "persistentVolumeClaim": {"claimName": "datadir-foo-2"}},
                        {"name": "home", "hostPath": {"path": "/tmp/home"}}]
        }
    });
    assert_eq!(serde_json::to_value(&pod).unwrap(), want);
    assert!(identity_matches(&set, &pod) && storage_matches(&set, &pod));
    assert_eq!(pod_revision(&pod), "foo-abc");

    // Without a service name there is no subdomain; without template labels only ours.
    let mut bare = set.clone();
    bare.spec.service_name = String::new();
    let pod = new_pod(&bare, &PodTemplateSpec::default(), 0, "r", false);
    assert_eq!(pod.spec.as_ref().unwrap().subdomain, None);
    let labels: Vec<_> = pod.metadata.labels.unwrap().into_keys().collect();
    assert_eq!(labels, [REVISION_LABEL, POD_NAME_LABEL]);
    assert_eq!(pod.metadata.annotations, None);
}

#[test]
fn creation_lifecycle_state_rows() {
    let set = stateful_set(1);
    let pod = stateful_set_pod(&set, 0);
    assert_eq!(creation_lifecycle_state(&set, &pod), lifecycle::NORMAL);
    let mut hooked = set.clone();
    hooked.spec.lifecycle =
        Some(serde_json::from_value(json!({"preNormal": {"labelsHandler": {"ready": "true"}}})).unwrap());
    assert_eq!(creation_lifecycle_state(&hooked, &pod), lifecycle::PREPARING_NORMAL);
    let mut labelled = pod.clone();
    labelled.metadata.labels.as_mut().unwrap().insert("ready".into(), "true".into());
    assert_eq!(creation_lifecycle_state(&hooked, &labelled), lifecycle::NORMAL);
}
