//! Revision names, data and VCT hashes against Go: `go_fixtures.json` holds CloneSet templates
//! and what Go computes for them (k8s.io/api v0.32.10 types, `encoding/json`, kruise's
//! `getPatch`, `history.HashControllerRevision` with the collision count, kruise's VCT hasher).
//! Then kruise's `Test_vctHasher_GetExpectHash` rows, `TestGetActiveRevisions` (6 rows) and the
//! round trips of `TestCreateApplyRevision` / `TestApplyRevision`.

use super::*;
use crate::apis::cloneset::CloneSetSpec;
use crate::core::pods;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;
use serde_json::json;

#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Fixture {
    cloneset: String,
    collision_count: i32,
    spec: serde_json::Value,
    name: String,
    data: String,
    vct_hash: String,
}

fn cloneset(name: &str, spec: serde_json::Value) -> CloneSet {
    let spec: CloneSetSpec = serde_json::from_value(spec).unwrap();
    let mut cs = CloneSet::new(name, spec);
    cs.metadata.namespace = Some("default".into());
    cs.metadata.uid = Some("uid-1".into());
    cs
}

#[test]
fn names_and_data_match_go() {
    let fixtures: Vec<Fixture> = serde_json::from_str(include_str!("go_fixtures.json")).unwrap();
    assert_eq!(fixtures.len(), 6);
    for f in fixtures {
        let cs = cloneset(&f.cloneset, f.spec.clone());
        let rev = new_revision(&cs, 1, f.collision_count);
        assert_eq!(rev.data, f.data, "{}: data", f.name);
        assert_eq!(rev.revision.metadata.name.as_deref(), Some(f.name.as_str()), "{}: name", f.name);
        assert_eq!(vct_hash(&cs.spec.volume_claim_templates), f.vct_hash, "{}: vct hash", f.name);
        let annotations = rev.revision.metadata.annotations.clone().unwrap();
        assert_eq!(annotations.get(VCT_HASH_ANNOTATION), Some(&f.vct_hash));
        // Read back through the apiserver's JSON, the data bytes are the same.
        let stored: ControllerRevision = serde_json::from_value(serde_json::to_value(&rev.revision).unwrap()).unwrap();
        assert_eq!(history::data_bytes(&stored), f.data);
        // The template round-trips (kruise's ApplyRevision).
        let restored = template_of(&stored).unwrap();
        assert_eq!(revision_data(&restored), f.data, "{}: template round trip", f.name);
    }
}

#[test]
fn revision_metadata() {
    let cs = cloneset(
        "web",
        json!({"template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}),
    );
    let mut cs = cs;
    cs.metadata.annotations = Some([("note".to_string(), "n".to_string())].into());
    let rev = new_revision(&cs, 4, 0).revision;
    let labels = rev.metadata.labels.unwrap();
    assert_eq!(labels.get("app").map(String::as_str), Some("web"));
    assert_eq!(
        labels.get(history::CONTROLLER_REVISION_HASH_LABEL).map(String::as_str),
        Some(short_hash(rev.metadata.name.as_deref().unwrap()))
    );
    assert_eq!(rev.revision, 4);
    assert_eq!(rev.metadata.namespace.as_deref(), Some("default"));
    let owner = &rev.metadata.owner_references.unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.uid.as_str(), owner.controller), ("CloneSet", "uid-1", Some(true)));
    let annotations = rev.metadata.annotations.unwrap();
    assert_eq!(annotations.get("note").map(String::as_str), Some("n"));
    assert_eq!(annotations.get(VCT_HASH_ANNOTATION).map(String::as_str), Some(""));
}

fn pvc(name: &str, request: &str, limit: &str, labels: bool) -> PersistentVolumeClaim {
    let mut v = json!({"metadata": {"name": name}, "spec": {"accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": request}, "limits": {"storage": limit}}}});
    if labels {
        v["metadata"]["labels"] = json!({"app": "test", "env": "prod"});
        v["metadata"]["annotations"] = json!({"description": "test pvc"});
    }
    serde_json::from_value(v).unwrap()
}

/// kruise `Test_vctHasher_GetExpectHash` (its zero/nil rows are the "" annotation here, as
/// `PatchVCTemplateHash` writes for no templates) and `TestPatchVCTemplateHash`.
#[test]
fn kruise_vct_hashes() {
    let rows: Vec<(&str, Vec<PersistentVolumeClaim>, &str)> = vec![
        ("zero-pvc", vec![], ""),
        ("single-pvc", vec![pvc("pvc-1", "1Gi", "2Gi", false)], "1129974074"),
        ("multi-pvcs", vec![pvc("pvc-1", "1Gi", "2Gi", false), pvc("pvc-2", "2Gi", "4Gi", false)], "510584408"),
        (
            "multi-pvcs-reverse-order-same-hash",
            vec![pvc("pvc-2", "2Gi", "4Gi", false), pvc("pvc-1", "1Gi", "2Gi", false)],
            "510584408",
        ),
        ("single-pvc-with-labels-annotations-ignored", vec![pvc("pvc-1", "1Gi", "2Gi", true)], "1129974074"),
    ];
    for (name, templates, want) in rows {
        assert_eq!(vct_hash(&templates), want, "{name}");
    }
}

fn rev(name: &str, revision: i64, data: &str, vct: Option<&str>) -> ControllerRevision {
    let mut r = ControllerRevision {
        data: Some(RawExtension(serde_json::from_str(data).unwrap())),
        revision,
        ..Default::default()
    };
    r.metadata.name = Some(name.into());
    r.metadata.resource_version = Some("10".into());
    if let Some(h) = vct {
        r.metadata.annotations = Some([(VCT_HASH_ANNOTATION.to_string(), h.to_string())].into());
    }
    r
}

/// kruise `TestGetActiveRevisions`, row by row.
#[test]
fn kruise_get_active_revisions() {
    let cs = cloneset(
        "test-cs",
        json!({"replicas": 1, "selector": {"matchLabels": {"app": "test"}},
               "template": {"metadata": {"labels": {"app": "test"}}, "spec": {"containers": [{"name": "nginx", "image": "nginx:1.9.1"}]}},
               "volumeClaimTemplates": [{"metadata": {"name": "data-vol"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}),
    );
    let reference = new_revision(&cs, 1, 0);
    let equal = reference.data.clone();
    let vct = reference.revision.metadata.annotations.as_ref().unwrap()[VCT_HASH_ANNOTATION].clone();
    let different = r#"{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"foo":"bar"}},"spec":{"containers":[{"image":"different:1.0","name":"nginx"}]}}}}"#;

    // (name, revisions, expected update name (None: the new one), revision number, vct hash, action)
    type Row<'a> = (&'a str, Vec<ControllerRevision>, Option<&'a str>, i64, Option<&'a str>, Option<ActionKind>);
    let rows: Vec<Row<'_>> = vec![
        (
            "equal revision with nil annotations should not panic",
            vec![rev("test-cs-equal-1", 1, &equal, None), rev("test-cs-diff-2", 2, different, None)],
            Some("test-cs-equal-1"),
            3,
            Some(&vct),
            Some(ActionKind::UpdateRevision),
        ),
        (
            "equal revision is the last (immediately prior)",
            vec![rev("test-cs-diff-1", 1, different, None), rev("test-cs-equal-2", 2, &equal, Some(&vct))],
            Some("test-cs-equal-2"),
            2,
            Some(&vct),
            None,
        ),
        (
            "no equal revisions, create new one",
            vec![rev("test-cs-diff-1", 1, different, None)],
            None,
            2,
            Some(&vct),
            Some(ActionKind::CreateRevision),
        ),
        (
            "equal revision with matching VCT hash, no annotation update needed",
            vec![rev("test-cs-equal-1", 1, &equal, Some(&vct)), rev("test-cs-diff-2", 2, different, None)],
            Some("test-cs-equal-1"),
            3,
            Some(&vct),
            Some(ActionKind::UpdateRevision),
        ),
        (
            "equal revision with non-nil but different VCT hash",
            vec![rev("test-cs-equal-1", 1, &equal, Some("wrong-hash")), rev("test-cs-diff-2", 2, different, None)],
            Some("test-cs-equal-1"),
            3,
            Some(&vct),
            Some(ActionKind::UpdateRevision),
        ),
        ("empty revisions list, create new one", vec![], None, 1, Some(&vct), Some(ActionKind::CreateRevision)),
    ];
    for (name, revisions, update_name, number, hash, kind) in rows {
        let got = active_revisions(&cs, &revisions);
        let want_name =
            update_name.map(str::to_string).unwrap_or_else(|| reference.revision.metadata.name.clone().unwrap());
        assert_eq!(got.update.name(), want_name, "{name}: update revision");
        assert_eq!(got.update.object.revision, number, "{name}: revision number");
        assert_eq!(
            got.update
                .object
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(VCT_HASH_ANNOTATION))
                .map(String::as_str),
            hash,
            "{name}: vct hash"
        );
        assert_eq!(got.action.as_ref().map(|a| a.kind), kind, "{name}: action");
        assert_eq!(got.current.name(), got.update.name(), "{name}: no status: current = update");
        // A rollback's patch, applied to the old revision, gives the bumped one.
        if let Some(Write::PatchRevision { name: rname, patch, .. }) = got.action.as_ref().map(|a| &a.writes[0]) {
            let old = revisions.iter().find(|r| r.metadata.name.as_deref() == Some(rname.as_str())).unwrap();
            let mut doc = serde_json::to_value(old).unwrap();
            json_patch::patch(&mut doc, patch).unwrap();
            assert_eq!(doc, serde_json::to_value(&got.update.object).unwrap(), "{name}: patch");
        }
    }
}

#[test]
fn current_revision_from_status_and_collisions() {
    let mut cs = cloneset("web", json!({"template": {"spec": {"containers": [{"name": "c", "image": "new"}]}}}));
    let old = rev("web-old", 1, r#"{"spec":{"template":{"$patch":"replace"}}}"#, None);
    cs.status =
        Some(crate::apis::cloneset::CloneSetStatus { current_revision: "web-old".into(), ..Default::default() });
    let got = active_revisions(&cs, std::slice::from_ref(&old));
    assert_eq!(got.current.name(), "web-old");
    assert_ne!(got.update.name(), "web-old");

    // A different revision already holds the computed name: the collision count steps over it.
    let first = new_revision(&cs, 2, 0);
    let squatter = rev(first.revision.metadata.name.as_deref().unwrap(), 1, r#"{"spec":{}}"#, None);
    let got = active_revisions(&cs, &[squatter]);
    assert_eq!(got.collision_count, 1);
    assert_eq!(got.update.name(), new_revision(&cs, 2, 1).revision.metadata.name.unwrap());
    match &got.action.unwrap().writes[0] {
        Write::CreateRevision { collision_count, .. } => assert_eq!(*collision_count, 1),
        other => panic!("{other:?}"),
    }
}

#[test]
fn pod_revision_labels() {
    let mut p = Pod::default();
    write_revision_hash(&mut p, "web-5f579c5b55", false);
    assert_eq!(pods::label(&p, CONTROLLER_REVISION_HASH), Some("web-5f579c5b55"));
    assert_eq!(pods::label(&p, POD_TEMPLATE_HASH), Some("5f579c5b55"));
    assert!(equal_to_revision_hash(&p, "web-5f579c5b55"));
    write_revision_hash(&mut p, "web-5f579c5b55", true);
    assert_eq!(pods::label(&p, CONTROLLER_REVISION_HASH), Some("5f579c5b55"));
    assert!(equal_to_revision_hash(&p, "web-5f579c5b55"), "the short hash matches too");
    assert!(!equal_to_revision_hash(&p, "web-other"));
    assert!(!equal_to_revision_hash(&Pod::default(), "web-x"));
}
