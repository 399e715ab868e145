//! kruise's `TestDefaultPatchUpdateSpecToPod` (pkg/util/inplaceupdate/inplace_update_defaults_test.go),
//! row by row, and the first step of an update (`TestUpdate` rows "inplace update" and "inplace
//! update with grace period" of cloneset_update_test.go).

use super::*;
use crate::core::pods::test_pods::at;
use crate::core::rollout::actions::pod_writes;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Value, json};

fn given_pod() -> Pod {
    let env = |p: &str, path: &str| {
        json!([
            {"name": CONTAINER_LAUNCH_BARRIER_ENV, "valueFrom": {"configMapKeyRef": {"key": p}}},
            {"name": "config", "valueFrom": {"fieldRef": {"fieldPath": path}}}
        ])
    };
    serde_json::from_value(json!({
        "metadata": {"labels": {"label-k1": "foo", "label-k2": "foo"}, "annotations": {"annotation-k1": "foo"}},
        "spec": {"containers": [
            {"name": "c1", "image": "c1-img", "env": env("p_20", "metadata.labels['label-k1']")},
            {"name": "c2", "image": "c2-img", "env": env("p_10", "metadata.labels['label-k2']")},
            {"name": "c3", "image": "c3-img", "env": env("p_0", "metadata.labels['label-k2']")},
            {"name": "c4", "image": "c4-img", "env": env("p_0", "metadata.annotations['annotation-k1']")}
        ]},
        "status": {"containerStatuses": [
            {"name": "c1", "imageID": "containerd://c1-img", "image": "", "ready": false, "restartCount": 0},
            {"name": "c2", "imageID": "containerd://c2-img", "image": "", "ready": false, "restartCount": 0},
            {"name": "c3", "imageID": "containerd://c3-img", "image": "", "ready": false, "restartCount": 0},
            {"name": "c4", "imageID": "containerd://c4-img", "image": "", "ready": false, "restartCount": 0}
        ]}
    }))
    .unwrap()
}

fn images(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn ref_labels(pairs: &[(&str, &str, &str)]) -> BTreeMap<String, ObjectMeta> {
    let mut out: BTreeMap<String, ObjectMeta> = BTreeMap::new();
    for (c, k, v) in pairs {
        out.entry(c.to_string())
            .or_default()
            .labels
            .get_or_insert_with(Default::default)
            .insert(k.to_string(), v.to_string());
    }
    out
}

fn ref_annotations(pairs: &[(&str, &str, &str)]) -> BTreeMap<String, ObjectMeta> {
    let mut out: BTreeMap<String, ObjectMeta> = BTreeMap::new();
    for (c, k, v) in pairs {
        out.entry(c.to_string())
            .or_default()
            .annotations
            .get_or_insert_with(Default::default)
            .insert(k.to_string(), v.to_string());
    }
    out
}

/// A state in the test's shorthand: last statuses, next images, next ref metadata, pre-check,
/// batches (all stamped `now`).
fn st(
    last: &[(&str, &str)],
    next: &[(&str, &str)],
    next_meta: BTreeMap<String, ObjectMeta>,
    pre: &[&str],
    batches: &[&[&str]],
) -> InPlaceUpdateState {
    let now = Some(Time(at(1000)));
    InPlaceUpdateState {
        last_container_statuses: (!last.is_empty()).then(|| {
            last.iter().map(|(c, id)| (c.to_string(), ContainerStatusRecord { image_id: id.to_string() })).collect()
        }),
        next_container_images: images(next),
        next_container_ref_metadata: next_meta,
        pre_check_before_next: (!pre.is_empty())
            .then(|| PreCheckBeforeNext { containers_required_ready: pre.iter().map(|s| s.to_string()).collect() }),
        container_batches_record: batches
            .iter()
            .map(|b| ContainerBatch { timestamp: now.clone(), containers: b.iter().map(|s| s.to_string()).collect() })
            .collect(),
        ..Default::default()
    }
}

struct Row {
    name: &'static str,
    spec: UpdateSpec,
    state: InPlaceUpdateState,
    expected_state: InPlaceUpdateState,
    /// Expected changes: container images, added labels, added annotations.
    images: &'static [(&'static str, &'static str)],
    labels: &'static [(&'static str, &'static str)],
    annotations: &'static [(&'static str, &'static str)],
}

#[test]
fn kruise_default_patch_update_spec_to_pod() {
    let new_key = Some(json!({"metadata": {"annotations": {"new-key": "bar"}}}));
    let none = BTreeMap::new;
    let four_meta = || ref_labels(&[("c2", "label-k2", "bar"), ("c3", "label-k2", "bar")]);
    let rows = vec![
        Row {
            name: "update a signal container image",
            spec: UpdateSpec { container_images: images(&[("c1", "c1-img-new")]), ..Default::default() },
            state: InPlaceUpdateState::default(),
            expected_state: st(&[("c1", "containerd://c1-img")], &[], none(), &[], &[&["c1"]]),
            images: &[("c1", "c1-img-new")],
            labels: &[],
            annotations: &[],
        },
        Row {
            name: "update two container images without priority",
            spec: UpdateSpec {
                meta_data_patch: new_key.clone(),
                container_images: images(&[("c3", "c3-img-new"), ("c4", "c4-img-new")]),
                ..Default::default()
            },
            state: InPlaceUpdateState::default(),
            expected_state: st(
                &[("c3", "containerd://c3-img"), ("c4", "containerd://c4-img")],
                &[],
                none(),
                &[],
                &[&["c3", "c4"]],
            ),
            images: &[("c3", "c3-img-new"), ("c4", "c4-img-new")],
            labels: &[],
            annotations: &[("new-key", "bar")],
        },
        Row {
            name: "update two container image and env from metadata without priority",
            spec: UpdateSpec {
                meta_data_patch: new_key.clone(),
                container_images: images(&[("c3", "c3-img-new")]),
                container_ref_metadata: ref_annotations(&[("c4", "annotation-k1", "bar")]),
                ..Default::default()
            },
            state: InPlaceUpdateState::default(),
            expected_state: st(&[("c3", "containerd://c3-img")], &[], none(), &[], &[&["c3", "c4"]]),
            images: &[("c3", "c3-img-new")],
            labels: &[],
            annotations: &[("new-key", "bar"), ("annotation-k1", "bar")],
        },
        Row {
            name: "update two container images with different priorities, batch 1st",
            spec: UpdateSpec {
                meta_data_patch: new_key.clone(),
                container_images: images(&[("c1", "c1-img-new"), ("c2", "c2-img-new")]),
                ..Default::default()
            },
            state: InPlaceUpdateState::default(),
            expected_state: st(&[("c1", "containerd://c1-img")], &[("c2", "c2-img-new")], none(), &["c1"], &[&["c1"]]),
            images: &[("c1", "c1-img-new")],
            labels: &[],
            annotations: &[("new-key", "bar")],
        },
        Row {
            name: "update two container images with different priorities, batch 2nd",
            spec: UpdateSpec { container_images: images(&[("c2", "c2-img-new")]), ..Default::default() },
            state: st(&[("c1", "containerd://c1-img-old")], &[("c2", "c2-img-new")], none(), &["c1"], &[&["c1"]]),
            expected_state: st(
                &[("c1", "containerd://c1-img-old"), ("c2", "containerd://c2-img")],
                &[],
                none(),
                &[],
                &[&["c1"], &["c2"]],
            ),
            images: &[("c2", "c2-img-new")],
            labels: &[],
            annotations: &[],
        },
        Row {
            name: "update three container images with different priorities, batch 1st",
            spec: UpdateSpec {
                container_images: images(&[("c1", "c1-img-new"), ("c2", "c2-img-new"), ("c4", "c4-img-new")]),
                ..Default::default()
            },
            state: InPlaceUpdateState::default(),
            expected_state: st(
                &[("c1", "containerd://c1-img")],
                &[("c2", "c2-img-new"), ("c4", "c4-img-new")],
                none(),
                &["c1"],
                &[&["c1"]],
            ),
            images: &[("c1", "c1-img-new")],
            labels: &[],
            annotations: &[],
        },
        Row {
            name: "update three container images with different priorities, batch 2nd",
            spec: UpdateSpec {
                container_images: images(&[("c2", "c2-img-new"), ("c4", "c4-img-new")]),
                ..Default::default()
            },
            state: st(
                &[("c1", "containerd://c1-img")],
                &[("c2", "c2-img-new"), ("c4", "c4-img-new")],
                none(),
                &["c1"],
                &[&["c1"]],
            ),
            expected_state: st(
                &[("c1", "containerd://c1-img"), ("c2", "containerd://c2-img")],
                &[("c4", "c4-img-new")],
                none(),
                &["c2"],
                &[&["c1"], &["c2"]],
            ),
            images: &[("c2", "c2-img-new")],
            labels: &[],
            annotations: &[],
        },
        Row {
            name: "update three container images with different priorities, batch 3rd",
            spec: UpdateSpec { container_images: images(&[("c4", "c4-img-new")]), ..Default::default() },
            state: st(
                &[("c1", "containerd://c1-img"), ("c2", "containerd://c2-img")],
                &[("c4", "c4-img-new")],
                none(),
                &["c2"],
                &[&["c1"], &["c2"]],
            ),
            expected_state: st(
                &[("c1", "containerd://c1-img"), ("c2", "containerd://c2-img"), ("c4", "containerd://c4-img")],
                &[],
                none(),
                &[],
                &[&["c1"], &["c2"], &["c4"]],
            ),
            images: &[("c4", "c4-img-new")],
            labels: &[],
            annotations: &[],
        },
        Row {
            name: "update four container images and env from metadata with different priorities, batch 1st",
            spec: UpdateSpec {
                container_images: images(&[("c1", "c1-img-new"), ("c2", "c2-img-new"), ("c4", "c4-img-new")]),
                container_ref_metadata: four_meta(),
                ..Default::default()
            },
            state: InPlaceUpdateState::default(),
            expected_state: st(
                &[("c1", "containerd://c1-img")],
                &[("c2", "c2-img-new"), ("c4", "c4-img-new")],
                four_meta(),
                &["c1"],
                &[&["c1"]],
            ),
            images: &[("c1", "c1-img-new")],
            labels: &[],
            annotations: &[],
        },
        Row {
            name: "update four container images and env from metadata with different priorities, batch 2nd",
            spec: UpdateSpec {
                container_images: images(&[("c2", "c2-img-new"), ("c4", "c4-img-new")]),
                container_ref_metadata: four_meta(),
                ..Default::default()
            },
            state: st(
                &[("c1", "containerd://c1-img")],
                &[("c2", "c2-img-new"), ("c4", "c4-img-new")],
                four_meta(),
                &["c1"],
                &[&["c1"]],
            ),
            expected_state: st(
                &[("c1", "containerd://c1-img"), ("c2", "containerd://c2-img")],
                &[("c4", "c4-img-new")],
                none(),
                &["c2", "c3"],
                &[&["c1"], &["c2", "c3"]],
            ),
            images: &[("c2", "c2-img-new")],
            labels: &[("label-k2", "bar")],
            annotations: &[],
        },
        Row {
            name: "update four container images and env from metadata with different priorities, batch 3rd",
            spec: UpdateSpec { container_images: images(&[("c4", "c4-img-new")]), ..Default::default() },
            state: st(
                &[("c1", "containerd://c1-img"), ("c2", "containerd://c2-img")],
                &[("c4", "c4-img-new")],
                none(),
                &["c2", "c3"],
                &[&["c1"], &["c2", "c3"]],
            ),
            expected_state: st(
                &[("c1", "containerd://c1-img"), ("c2", "containerd://c2-img"), ("c4", "containerd://c4-img")],
                &[],
                none(),
                &[],
                &[&["c1"], &["c2", "c3"], &["c4"]],
            ),
            images: &[("c4", "c4-img-new")],
            labels: &[],
            annotations: &[],
        },
    ];
    assert_eq!(rows.len(), 11, "every row of kruise's table");
    for row in rows {
        let mut state = row.state.clone();
        let got = patch_spec_to_pod(&given_pod(), &row.spec, &mut state, Options::default(), at(1000)).unwrap();
        assert_eq!(state, row.expected_state, "{}: state", row.name);

        let mut want = given_pod();
        for c in want.spec.as_mut().unwrap().containers.iter_mut() {
            if let Some((_, img)) = row.images.iter().find(|(n, _)| *n == c.name) {
                c.image = Some(img.to_string());
            }
        }
        let labels = want.metadata.labels.as_mut().unwrap();
        labels.extend(row.labels.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let annotations = want.metadata.annotations.as_mut().unwrap();
        annotations.extend(row.annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        annotations.insert(crate::apis::keys::IN_PLACE_UPDATE_STATE.into(), state::encode_state(&state));
        assert_eq!(got, want, "{}: pod", row.name);
    }
}

fn cloneset_pod(grace: bool) -> Pod {
    let _ = grace;
    serde_json::from_value(json!({
        "metadata": {"name": "pod-0", "resourceVersion": "1", "labels": {
            "controller-revision-hash": "rev_old", "pod-template-hash": "rev_old", "apps.kruise.io/cloneset-instance-id": "id-0"}},
        "spec": {"readinessGates": [{"conditionType": "InPlaceUpdateReady"}], "containers": [{"name": "c1", "image": "foo1"}]},
        "status": {"phase": "Running",
                   "conditions": [{"type": "Ready", "status": "True"}, {"type": "InPlaceUpdateReady", "status": "True"}],
                   "containerStatuses": [{"name": "c1", "imageID": "image-id-xyz", "image": "", "ready": true, "restartCount": 0}]}
    }))
    .unwrap()
}

fn write_labels(p: &mut Pod) {
    let l = p.metadata.labels.get_or_insert_with(Default::default);
    l.insert("controller-revision-hash".into(), "rev_new".into());
    l.insert("pod-template-hash".into(), "rev_new".into());
}

fn updating(p: &mut Pod) {
    crate::core::lifecycle::set_state(p, crate::core::lifecycle::UPDATING, at(1000));
}

/// kruise `TestUpdate` "inplace update": the status write comes first, the pod gets the new image,
/// labels, lifecycle `Updating` and the state annotation (exact bytes).
#[test]
fn begin_without_grace_matches_kruise_update_row() {
    let spec = UpdateSpec { container_images: images(&[("c1", "foo2")]), ..Default::default() };
    let observed = cloneset_pod(false);
    let got = begin(&observed, &spec, "rev_new", Options::default(), at(1000), write_labels, updating).unwrap();
    let cond = crate::core::pods::condition(&got, IN_PLACE_UPDATE_READY).unwrap();
    assert_eq!((cond.status.as_str(), cond.reason.as_deref()), ("False", Some("StartInPlaceUpdate")));
    assert_eq!(got.spec.as_ref().unwrap().containers[0].image.as_deref(), Some("foo2"));
    let a = crate::core::pods::annotations(&got);
    assert_eq!(
        a.get(crate::apis::keys::IN_PLACE_UPDATE_STATE).unwrap(),
        r#"{"revision":"rev_new","updateTimestamp":"1970-01-01T00:16:40Z","lastContainerStatuses":{"c1":{"imageID":"image-id-xyz"}},"updateImages":true,"containerBatchesRecord":[{"timestamp":"1970-01-01T00:16:40Z","containers":["c1"]}]}"#
    );
    assert!(!a.contains_key(IN_PLACE_UPDATE_GRACE));
    assert_eq!(crate::core::lifecycle::state(&got), "Updating");

    // Applying the writes to the observed pod gives the intended pod; status goes first.
    let writes = pod_writes(&observed, &got);
    assert!(matches!(writes[0], crate::core::rollout::actions::Write::PatchPodStatus { .. }));
    let mut doc = serde_json::to_value(&observed).unwrap();
    for w in &writes {
        json_patch::patch(&mut doc, &w.request_patch("1").unwrap()).unwrap();
    }
    assert_eq!(doc, serde_json::to_value(&got).unwrap());
}

/// kruise `TestUpdate` "inplace update with grace period": images untouched, the spec parked in
/// the grace annotation.
#[test]
fn begin_with_grace_parks_the_spec() {
    let spec = UpdateSpec { container_images: images(&[("c1", "foo2")]), ..Default::default() };
    let opts = Options { grace_period_seconds: 3630, ..Default::default() };
    let got = begin(&cloneset_pod(true), &spec, "rev_new", opts, at(1000), write_labels, updating).unwrap();
    assert_eq!(got.spec.as_ref().unwrap().containers[0].image.as_deref(), Some("foo1"));
    let a = crate::core::pods::annotations(&got);
    assert_eq!(
        a.get(crate::apis::keys::IN_PLACE_UPDATE_STATE).unwrap(),
        r#"{"revision":"rev_new","updateTimestamp":"1970-01-01T00:16:40Z","lastContainerStatuses":null,"updateImages":true}"#
    );
    assert_eq!(
        a.get(IN_PLACE_UPDATE_GRACE).unwrap(),
        r#"{"revision":"rev_new","containerImages":{"c1":"foo2"},"graceSeconds":3630}"#
    );
}

/// kruise `TestDefaultCheckPodNeedsBeUnready`, row by row (all 11 rows).
#[test]
fn kruise_check_pod_needs_be_unready() {
    // A pod: readiness gate or not, containers as (name, [(resource, restartPolicy)]).
    let pod = |gate: bool, containers: &[(&str, &[(&str, &str)])]| -> Pod {
        let cs: Vec<Value> = containers
            .iter()
            .map(|(n, pol)| {
                let pol: Vec<Value> = pol.iter().map(|(r, p)| json!({"resourceName": r, "restartPolicy": p})).collect();
                json!({"name": n, "resizePolicy": pol})
            })
            .collect();
        let mut v = json!({"spec": {"containers": cs}});
        if gate {
            v["spec"]["readinessGates"] = json!([{"conditionType": "InPlaceUpdateReady"}]);
        }
        serde_json::from_value(v).unwrap()
    };
    // A spec changing requests of containers: (container, [(resource, quantity)]).
    let spec = |res: &[(&str, &[(&str, &str)])]| -> UpdateSpec {
        let container_resources = res
            .iter()
            .map(|(c, rs)| {
                let requests = rs.iter().map(|(r, q)| (r.to_string(), json!(q))).collect::<serde_json::Map<_, _>>();
                (c.to_string(), serde_json::from_value(json!({"requests": requests})).unwrap())
            })
            .collect();
        UpdateSpec { container_resources, ..Default::default() }
    };
    let (vpa, off) = (Options { vertical_scaling: true, ..Default::default() }, Options::default());
    let cpu_restart: &[(&str, &str)] = &[("cpu", "RestartContainer")];
    let cpu_restart_mem_not: &[(&str, &str)] = &[("cpu", "RestartContainer"), ("memory", "NotRequired")];
    let c2_both: &[(&str, &[(&str, &str)])] = &[("c2", &[("memory", "2Gi"), ("cpu", "2")])];
    let rows: Vec<(&str, Pod, UpdateSpec, Options, bool)> = vec![
        ("contains ReadinessGates, vpa disabled", pod(true, &[]), spec(&[]), off, true),
        ("contains no ReadinessGates1", pod(false, &[]), spec(&[]), off, false),
        ("contains ReadinessGates, vpa enabled and VerticalUpdateOnly", pod(true, &[]), spec(c2_both), vpa, false),
        ("contains ReadinessGates, vpa enabled but not VerticalUpdateOnly", pod(true, &[]), spec(&[]), vpa, true),
        ("contains no ReadinessGates2", pod(false, &[]), spec(&[]), vpa, false),
        ("contains no ReadinessGates3", pod(false, &[]), spec(&[]), vpa, false),
        (
            "contains ReadinessGates, other restart container",
            pod(true, &[("11", cpu_restart), ("c2", &[])]),
            spec(c2_both),
            vpa,
            false,
        ),
        (
            "contains ReadinessGates, resize cpu and cpu restart policy",
            pod(true, &[("11", cpu_restart)]),
            spec(&[("11", &[("cpu", "100m")])]),
            vpa,
            true,
        ),
        (
            "contains ReadinessGates, resize mem and cpu restart policy",
            pod(true, &[("11", cpu_restart)]),
            spec(&[("11", &[("memory", "100Mi")])]),
            vpa,
            false,
        ),
        (
            "contains ReadinessGates, resize mem and cpu restart policy (memory NotRequired)",
            pod(true, &[("11", cpu_restart_mem_not)]),
            spec(&[("11", &[("memory", "100Mi")])]),
            vpa,
            false,
        ),
        (
            "contains ReadinessGates, vpa disabled and resize mem and cpu restart policy",
            pod(true, &[("11", cpu_restart_mem_not)]),
            spec(&[("11", &[("memory", "100Mi")])]),
            off,
            true,
        ),
    ];
    assert_eq!(rows.len(), 11);
    for (name, p, spec, opts, want) in rows {
        assert_eq!(needs_unready(&p, &spec, opts), want, "{name}");
    }
}

#[test]
fn launch_priority_from_the_barrier_env() {
    let c: Container = serde_json::from_value(json!({"name": "c", "env": [
        {"name": CONTAINER_LAUNCH_BARRIER_ENV, "valueFrom": {"configMapKeyRef": {"key": "p_-5"}}}]}))
    .unwrap();
    assert_eq!(container_priority(&c), Some(-5));
    let bad: Container = serde_json::from_value(json!({"name": "c", "env": [
        {"name": CONTAINER_LAUNCH_BARRIER_ENV, "valueFrom": {"configMapKeyRef": {"key": "p_x"}}}]}))
    .unwrap();
    assert_eq!(container_priority(&bad), Some(0), "kruise ignores the Atoi error");
    assert_eq!(container_priority(&Container { name: "c".into(), ..Default::default() }), None);
}

/// Vertical scaling: the batch's containers get the new cpu/memory, which the writes send through
/// the `resize` subresource (after the status, before the rest); resources of containers outside
/// the batch wait in `nextContainerResources`.
#[test]
fn vertical_scaling_resizes_through_the_subresource() {
    use crate::core::rollout::actions::Write;
    let observed: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p", "resourceVersion": "5"},
        "spec": {"containers": [{"name": "c1", "image": "x", "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}}}]}
    }))
    .unwrap();
    let spec: UpdateSpec = UpdateSpec {
        container_resources: [(
            "c1".to_string(),
            serde_json::from_value(json!({"requests": {"cpu": "200m"}})).unwrap(),
        )]
        .into(),
        ..Default::default()
    };
    let opts = Options { vertical_scaling: true, ..Default::default() };
    let mut st = InPlaceUpdateState::default();
    let after = patch_spec_to_pod(&observed, &spec, &mut st, opts, at(0)).unwrap();
    let res = after.spec.as_ref().unwrap().containers[0].resources.clone().unwrap();
    let requests = res.requests.unwrap();
    assert_eq!((requests["cpu"].0.as_str(), requests["memory"].0.as_str()), ("200m", "1Gi"));
    let writes = pod_writes(&observed, &after);
    assert!(
        matches!(&writes[0], Write::PatchPodResize { patch, .. } if patch.0.iter().all(|op| op.path().as_str().starts_with("/spec/containers/0/resources"))),
        "{writes:#?}"
    );
    assert!(matches!(&writes[1], Write::PatchPod { .. }), "the state annotation follows");
    // Without the gate the resources are left alone.
    let mut st = InPlaceUpdateState::default();
    let same = patch_spec_to_pod(&observed, &spec, &mut st, Options::default(), at(0)).unwrap();
    assert_eq!(same.spec, observed.spec);
}
