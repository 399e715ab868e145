//! kruise's scale tables (pkg/controller/cloneset/sync/cloneset_scale_test.go): `TestScale` (3
//! rows), `TestCreatePods` and `TestDeletePods`, then the parts of the scale step kruise tests only
//! end to end: PreparingDelete cancellation, the preDelete hook, specified deletions under
//! maxUnavailable, PVC reuse and the scale-down order.

use super::*;
use crate::core::features::FeatureGates;
use crate::core::pods::test_pods::at;
use crate::core::rollout::cloneset::testkit::{World, cloneset, raw_revision, with_round};
use k8s_openapi::api::core::v1::PersistentVolumeClaim;
use serde_json::{Value, json};

fn sample_pod(name: &str, extra_labels: Value, ready_since: i64) -> Pod {
    let mut labels = json!({"controller-revision-hash": "sample-b976d4544"});
    labels.as_object_mut().unwrap().extend(extra_labels.as_object().unwrap().clone());
    serde_json::from_value(json!({
        "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "1", "labels": labels},
        "spec": {"containers": [{"name": "main", "image": "sample:v1"}]},
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": pods::rfc3339(at(ready_since))}]}
    }))
    .unwrap()
}

fn run_scale(
    cs: &crate::apis::cloneset::CloneSet,
    pods: &[Pod],
    pvcs: &[PersistentVolumeClaim],
    now: i64,
) -> (crate::core::rollout::cloneset::round::Step, ExpectationDiffs) {
    let rev = raw_revision(
        "sample-b976d4544",
        r#"{"spec":{"template":{"$patch":"replace","spec":{"containers":[{"name":"main","image":"sample:v1"}]}}}}"#,
    );
    with_round(cs, pods, pvcs, &rev, &rev, std::slice::from_ref(&rev), &FeatureGates::default(), at(now), scale)
}

/// kruise `TestScale`: (name, minReadySeconds, specified-delete pod-0, expected active pods,
/// expected modified).
#[test]
fn kruise_scale() {
    let rows = [
        ("replicas=3, maxUnavailable=20%, minReadySeconds=9999, pods=5: scale 5 -> 3", 9999, false, 5, false),
        (
            "replicas=3, maxUnavailable=20%, minReadySeconds=0, specified delete pod-0, pods=5: scale 5 -> 3",
            0,
            true,
            4,
            true,
        ),
        ("replicas=3, maxUnavailable=20%, minReadySeconds=0, pods=5: scale 5 -> 3", 0, false, 3, true),
    ];
    let now = 1000;
    for (name, min_ready, specified, want_pods, want_modified) in rows {
        let cs =
            cloneset(json!({"replicas": 3, "minReadySeconds": min_ready, "updateStrategy": {"maxUnavailable": "20%"}}));
        let mut pods: Vec<Pod> = (0..5).map(|i| sample_pod(&format!("sample-{i}"), json!({}), now - 10)).collect();
        if specified {
            pods[0].metadata.labels.as_mut().unwrap().insert("apps.kruise.io/specified-delete".into(), "true".into());
        }
        let (step, _) = run_scale(&cs, &pods, &[], now);
        assert_eq!(!step.actions.is_empty(), want_modified, "{name}: modified");
        let mut world = World::new(cs);
        world.pods = pods;
        world.apply_actions(&step.actions).unwrap();
        assert_eq!(world.pods.iter().filter(|p| pods::is_active(p)).count(), want_pods, "{name}: pods");
        if specified {
            assert!(world.pods.iter().all(|p| pods::name(p) != "sample-0"), "{name}: the specified pod goes");
        }
    }
}

/// kruise's `clonesettest.NewCloneSet(3)`: `foo` with a `datadir` claim template and a `home`
/// hostPath volume.
fn foo(env: bool) -> crate::apis::cloneset::CloneSet {
    let mut container = json!({"name": "nginx", "image": "nginx", "volumeMounts": [{"name": "datadir", "mountPath": "/tmp/data"}, {"name": "home", "mountPath": "/home"}]});
    if env {
        container["env"] = json!([{"name": "e-key", "value": "e-value"}]);
    }
    let mut cs: crate::apis::cloneset::CloneSet = serde_json::from_value(json!({
        "metadata": {"name": "foo", "namespace": "default", "uid": "test"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"foo": "bar"}},
            "template": {"metadata": {"labels": {"foo": "bar"}}, "spec": {"containers": [container], "volumes": [{"name": "home", "hostPath": {"path": "/tmp/home"}}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "datadir"}, "spec": {"resources": {"requests": {"storage": "10"}}}}],
            "revisionHistoryLimit": 2
        }
    }))
    .unwrap();
    cs.spec.update_strategy.type_ = "ReCreate".into();
    cs
}

/// kruise `TestCreatePods`: three pods, the first at the current revision, the PVCs that do not
/// exist yet created first.
#[test]
fn kruise_create_pods() {
    let (current_cs, update_cs) = (foo(false), foo(true));
    let current = raw_revision("revision_abc", &super::super::revision::revision_data(&current_cs.spec.template));
    let update = raw_revision("revision_xyz", &super::super::revision::revision_data(&update_cs.spec.template));
    // kruise's test passes ids id1, id3, id4 and the existing PVC name datadir-foo-id3; here the
    // ids come from PVCs without pods, so three such PVCs carry them, one named datadir-foo-id3.
    let pvc = |name: &str, id: &str| -> PersistentVolumeClaim {
        serde_json::from_value(
            json!({"metadata": {"name": name, "labels": {"apps.kruise.io/cloneset-instance-id": id}}}),
        )
        .unwrap()
    };
    let existing = vec![pvc("old-id1", "id1"), pvc("datadir-foo-id3", "id3"), pvc("old-id4", "id4")];
    let diff =
        ExpectationDiffs { scale_up_num: 3, scale_up_limit: 3, scale_up_num_old_revision: 1, ..Default::default() };
    let step = with_round(&update_cs, &[], &existing, &current, &update, &[], &FeatureGates::default(), at(0), |r| {
        let mut step = Step::default();
        create(r, &mut step, &diff);
        step
    });
    assert_eq!(step.actions.len(), 3);
    let mut pods = Vec::new();
    let mut pvcs = Vec::new();
    for (i, a) in step.actions.iter().enumerate() {
        assert_eq!(a.kind, ActionKind::Create);
        assert_eq!(a.batch, Some([0, 1, 1][i]));
        for w in &a.writes {
            match w {
                Write::CreatePod { pod } => pods.push((**pod).clone()),
                Write::CreatePvc { pvc } => pvcs.push((**pvc).clone()),
                other => panic!("{other:?}"),
            }
        }
        // PVCs before their pod.
        assert!(matches!(a.writes.last(), Some(Write::CreatePod { .. })));
    }
    // As in kruise: foo-id1 at the current revision (without env), foo-id3 and foo-id4 at the update
    // revision.
    let names: Vec<&str> = pods.iter().map(|p| p.metadata.name.as_deref().unwrap()).collect();
    assert_eq!(names, ["foo-id1", "foo-id3", "foo-id4"]);
    let first = &pods[0];
    assert_eq!(pods::label(first, "controller-revision-hash"), Some("revision_abc"));
    assert_eq!(first.spec.as_ref().unwrap().containers[0].env, None);
    for p in &pods[1..] {
        assert_eq!(pods::label(p, "controller-revision-hash"), Some("revision_xyz"));
        assert_eq!(p.spec.as_ref().unwrap().containers[0].env.as_ref().unwrap()[0].name, "e-key");
    }
    let want_first: Pod = serde_json::from_value(json!({
        "metadata": {"namespace": "default", "name": "foo-id1", "generateName": "foo-",
            "labels": {"apps.kruise.io/cloneset-instance-id": "id1", "controller-revision-hash": "revision_abc", "pod-template-hash": "revision_abc", "foo": "bar", "lifecycle.apps.kruise.io/state": "PreparingNormal"},
            "annotations": {"lifecycle.apps.kruise.io/timestamp": "1970-01-01T00:00:00Z"},
            "ownerReferences": [{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "name": "foo", "uid": "test", "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"readinessGates": [{"conditionType": "InPlaceUpdateReady"}],
                 "containers": [{"name": "nginx", "image": "nginx", "resources": {}, "volumeMounts": [{"name": "datadir", "mountPath": "/tmp/data"}, {"name": "home", "mountPath": "/home"}]}],
                 "volumes": [{"name": "datadir", "persistentVolumeClaim": {"claimName": "datadir-foo-id1"}}, {"name": "home", "hostPath": {"path": "/tmp/home"}}]}
    }))
    .unwrap();
    // The template comes from the revision's data, which (as Go writes it) has `resources: {}`.
    assert_eq!(serde_json::to_value(first).unwrap(), serde_json::to_value(&want_first).unwrap());
    // Only the two missing PVCs are created, labelled with the selector and the id.
    let names: Vec<&str> = pvcs.iter().map(|p| p.metadata.name.as_deref().unwrap()).collect();
    assert_eq!(names, ["datadir-foo-id1", "datadir-foo-id4"]);
    for p in &pvcs {
        let l = p.metadata.labels.as_ref().unwrap();
        assert_eq!(l["foo"], "bar");
        assert!(p.metadata.name.as_deref().unwrap().ends_with(&l[super::super::pods::INSTANCE_ID]));
        assert_eq!(p.metadata.owner_references.as_ref().unwrap()[0].uid, "test");
    }
}

/// kruise `TestDeletePods`: the pods and the PVCs with their instance ids go, other PVCs stay.
#[test]
fn kruise_delete_pods() {
    let cs = foo(false);
    let pod = |id: &str| -> Pod {
        serde_json::from_value(
            json!({"metadata": {"name": format!("foo-{id}"), "uid": format!("u-{id}"), "resourceVersion": "3",
            "labels": {"apps.kruise.io/cloneset-instance-id": id, "foo": "bar"}}}),
        )
        .unwrap()
    };
    let pvc = |name: &str, id: &str| -> PersistentVolumeClaim {
        serde_json::from_value(
            json!({"metadata": {"name": name, "labels": {"apps.kruise.io/cloneset-instance-id": id}}}),
        )
        .unwrap()
    };
    let pods = vec![pod("id1"), pod("id3")];
    let pvcs = vec![pvc("datadir-foo-id1", "id1"), pvc("datadir-foo-id2", "id2")];
    let rev = raw_revision("r", "");
    let step = with_round(&cs, &pods, &pvcs, &rev, &rev, &[], &FeatureGates::default(), at(0), |r| {
        let mut step = Step::default();
        let list: Vec<&Pod> = r.pods.to_vec();
        assert!(delete_pods(r, &mut step, &list, |_| "test".into()));
        step
    });
    let mut world = World::new(cs);
    world.pods = pods;
    world.pvcs = pvcs;
    world.apply_actions(&step.actions).unwrap();
    assert!(world.pods.is_empty());
    let left: Vec<&str> = world.pvcs.iter().map(|p| p.metadata.name.as_deref().unwrap()).collect();
    assert_eq!(left, ["datadir-foo-id2"]);
    // Deletes carry preconditions.
    assert!(
        matches!(&step.actions[0].writes[0], Write::DeletePod { uid: Some(u), resource_version: Some(rv), .. } if u == "u-id1" && rv == "3")
    );
}

fn lifecycle_pod(name: &str, state: &str, extra_labels: Value) -> Pod {
    let mut p = sample_pod(name, extra_labels, 0);
    p.metadata.labels.as_mut().unwrap().insert("lifecycle.apps.kruise.io/state".into(), state.into());
    p.spec.as_mut().unwrap().readiness_gates =
        Some(vec![k8s_openapi::api::core::v1::PodReadinessGate { condition_type: "KruisePodReady".into() }]);
    p
}

#[test]
fn pre_delete_hook_holds_then_releases() {
    let cs = cloneset(
        json!({"replicas": 2, "lifecycle": {"preDelete": {"labelsHandler": {"hold": "true"}, "markPodNotReady": true}},
                            "scaleStrategy": {"podsToDelete": ["sample-0"]}, "updateStrategy": {"maxUnavailable": 1}}),
    );
    let held = lifecycle_pod("sample-0", "Normal", json!({"hold": "true"}));
    let pods = vec![held, lifecycle_pod("sample-1", "Normal", json!({}))];
    let (step, _) = run_scale(&cs, &pods, &[], 100);
    assert_eq!(step.actions.len(), 1, "{:#?}", step.actions);
    assert_eq!(step.actions[0].kind, ActionKind::SetLifecycle);
    let mut world = World::new(cs.clone());
    world.pods = pods;
    world.apply_actions(&step.actions).unwrap();
    let p0 = &world.pods[0];
    assert_eq!(lifecycle::state(p0), lifecycle::PREPARING_DELETE);
    let cond = pods::condition(p0, "KruisePodReady").unwrap();
    assert_eq!(cond.message.as_deref(), Some(r#"[{"userAgent":"Lifecycle","key":"preDeleteHook"}]"#));

    // Still hooked: nothing happens; the wait is explained.
    let (step, _) = run_scale(&cs, &world.pods, &[], 101);
    assert!(step.actions.iter().all(|a| a.kind != ActionKind::Delete), "{:#?}", step.actions);
    // Without excludePreparingDelete the waiting pod still counts: no replacement yet.
    assert!(step.actions.is_empty(), "{:#?}", step.actions);
    assert!(step.waiting.iter().any(|w| w.contains("sample-0 is PreparingDelete")), "{:?}", step.waiting);

    // Hook released: the pod is deleted.
    world.pods[0].metadata.labels.as_mut().unwrap().remove("hold");
    world.pods.push(lifecycle_pod("sample-2", "Normal", json!({})));
    let (step, _) = run_scale(&cs, &world.pods, &[], 102);
    assert_eq!(
        step.actions.iter().map(|a| (a.kind, a.pod.clone())).collect::<Vec<_>>(),
        [(ActionKind::Delete, Some("sample-0".into()))]
    );
}

#[test]
fn preparing_delete_is_cancelled_when_replicas_want_the_pod() {
    let cs = cloneset(json!({"replicas": 2, "lifecycle": {"preDelete": {"labelsHandler": {"hold": "true"}}}}));
    let pods = vec![
        lifecycle_pod("sample-0", "PreparingDelete", json!({"hold": "true"})),
        lifecycle_pod("sample-1", "Normal", json!({})),
    ];
    let (step, _) = run_scale(&cs, &pods, &[], 100);
    assert_eq!(step.actions.len(), 1);
    assert_eq!(step.actions[0].kind, ActionKind::SetLifecycle);
    assert!(step.actions[0].reason.starts_with("PreparingNormal"), "{}", step.actions[0].reason);
    // Not when a hook marks pods not ready (kruise skips the cancellation then).
    let marked = cloneset(
        json!({"replicas": 2, "lifecycle": {"preDelete": {"labelsHandler": {"hold": "true"}, "markPodNotReady": true}}}),
    );
    let (step, _) = run_scale(&marked, &pods, &[], 100);
    assert!(
        step.actions.iter().all(|a| a.kind != ActionKind::SetLifecycle || !a.reason.starts_with("PreparingNormal"))
    );
}

#[test]
fn specified_deletions_respect_max_unavailable() {
    // 4 ready pods, 3 specified, maxUnavailable 1 (deleteReadyLimit 1): one goes now.
    let cs = cloneset(json!({"replicas": 4, "updateStrategy": {"maxUnavailable": 1},
                            "scaleStrategy": {"podsToDelete": ["sample-0", "sample-1", "sample-2"]}}));
    let pods: Vec<Pod> = (0..4).map(|i| sample_pod(&format!("sample-{i}"), json!({}), 0)).collect();
    let (step, diff) = run_scale(&cs, &pods, &[], 100);
    assert_eq!(diff.delete_ready_limit, 1);
    let deleted: Vec<_> =
        step.actions.iter().filter(|a| a.kind == ActionKind::Delete).map(|a| a.pod.clone().unwrap()).collect();
    assert_eq!(deleted, ["sample-0"]);
    assert!(step.waiting.iter().any(|w| w.contains("2 ready pods to delete")), "{:?}", step.waiting);
}

#[test]
fn scale_down_takes_the_cheapest_pods_first() {
    let cs = cloneset(json!({"replicas": 2, "updateStrategy": {"maxUnavailable": 5}}));
    let mut pods: Vec<Pod> = (0..5).map(|i| sample_pod(&format!("sample-{i}"), json!({}), 0)).collect();
    for (i, p) in pods.iter_mut().enumerate() {
        p.spec.as_mut().unwrap().node_name = Some(["a", "a", "b", "c", "c"][i].into());
    }
    pods[3].status.as_mut().unwrap().conditions = None; // not ready
    pods[4].metadata.annotations =
        Some([("controller.kubernetes.io/pod-deletion-cost".to_string(), "-5".to_string())].into());
    let (step, diff) = run_scale(&cs, &pods, &[], 100);
    assert_eq!(diff.scale_down_num, 3);
    let deleted: Vec<_> = step.actions.iter().map(|a| a.pod.clone().unwrap()).collect();
    // Not ready first, then the lowest deletion cost, then the crowded node (a has two pods).
    assert_eq!(deleted, ["sample-3", "sample-4", "sample-0"]);
}
