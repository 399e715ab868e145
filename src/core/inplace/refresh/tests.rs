//! kruise's `TestCheckInPlaceUpdateCompleted` and `TestRefresh`
//! (pkg/util/inplaceupdate/inplace_update_test.go), row by row, and hash fixtures computed with
//! Go (k8s.io/api v0.32.10, the kubelet's `HashContainer`, kruise's env hasher).

use super::*;
use crate::core::inplace::state::{ContainerBatch, ContainerStatusRecord, encode_state};
use crate::core::pods::test_pods::at;
use serde_json::{Value, json};

fn pod(v: Value) -> Pod {
    serde_json::from_value(v).unwrap()
}

fn status(name: &str, image_id: &str, image: &str) -> Value {
    json!({"name": name, "imageID": image_id, "image": image, "ready": false, "restartCount": 0})
}

fn same_label(p: &Pod, rev: &str) -> bool {
    pods::label(p, "controller-revision-hash") == Some(rev)
}

/// kruise `TestCheckInPlaceUpdateCompleted`: 2 pods that succeed, 2 that fail (its third failing
/// pod is commented out in kruise).
#[test]
fn kruise_check_in_place_update_completed() {
    let state = r#"{"revision":"new-revision","lastContainerStatuses":{"c1":{"imageID":"img01"}}}"#;
    let labels = json!({"controller-revision-hash": "new-revision"});
    let succeed = [
        pod(json!({"metadata": {"name": "s1", "labels": labels}})),
        pod(
            json!({"metadata": {"name": "s2", "labels": labels, "annotations": {"apps.kruise.io/inplace-update-state": state}},
                   "status": {"containerStatuses": [status("c1", "img02", "")]}}),
        ),
    ];
    let fail = [
        pod(
            json!({"metadata": {"name": "f2", "labels": labels, "annotations": {"apps.kruise.io/inplace-update-state": state}},
                   "status": {"containerStatuses": [status("c1", "img01", "image01")]}}),
        ),
        pod(
            json!({"metadata": {"name": "f3", "labels": labels, "annotations": {"apps.kruise.io/inplace-update-state": state}},
                   "status": {}}),
        ),
    ];
    for p in &succeed {
        assert_eq!(update_completed(p, Options::default()), Ok(()), "{}", pods::name(p));
    }
    for p in &fail {
        assert!(update_completed(p, Options::default()).is_err(), "{}", pods::name(p));
    }
}

fn gated(v: Value) -> Value {
    let mut v = v;
    v["spec"]["readinessGates"] = json!([{"conditionType": "InPlaceUpdateReady"}]);
    v
}

fn st_json(rev: &str, ts: i64, last: &[(&str, &str)], batches: &[(i64, &[&str])], next: &[(&str, &str)]) -> String {
    let state = InPlaceUpdateState {
        revision: rev.into(),
        update_timestamp: Some(Time(at(ts))),
        last_container_statuses: Some(
            last.iter().map(|(c, id)| (c.to_string(), ContainerStatusRecord { image_id: id.to_string() })).collect(),
        ),
        container_batches_record: batches
            .iter()
            .map(|(t, cs)| ContainerBatch {
                timestamp: Some(Time(at(*t))),
                containers: cs.iter().map(|s| s.to_string()).collect(),
            })
            .collect(),
        next_container_images: next.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        ..Default::default()
    };
    encode_state(&state)
}

/// kruise `TestRefresh`, row by row (9 rows). `None` expected = no write.
#[test]
fn kruise_refresh() {
    let now = 3600;
    let ten_seconds_ago = now - 10;
    let labels = json!({"controller-revision-hash": "new-revision"});
    let state_key = "apps.kruise.io/inplace-update-state";
    let grace_key = "apps.kruise.io/inplace-update-grace";
    let in_grace_state = st_json("new-revision", ten_seconds_ago, &[("c1", "img01")], &[], &[]);
    let batch_state = st_json("new-revision", 0, &[("c1", "c1-img1-ID")], &[(0, &["c1"])], &[("c2", "c2-img2")]);
    let batch_pod = |c1_id: &str| {
        gated(json!({
            "metadata": {"labels": labels, "annotations": {state_key: batch_state}},
            "spec": {"containers": [{"name": "c1", "image": "c1-img2"}, {"name": "c2", "image": "c2-img1"}]},
            "status": {"containerStatuses": [status("c1", c1_id, ""), status("c2", "c2-img1-ID", "")],
                       "conditions": [{"type": "ContainersReady", "status": "True"},
                                      {"type": "InPlaceUpdateReady", "status": "False", "lastTransitionTime": "1970-01-01T00:00:00Z"}]}
        }))
    };
    let mut next_batch_expected = batch_pod("c1-img2-ID");
    next_batch_expected["metadata"]["annotations"][state_key] = json!(st_json(
        "new-revision",
        0,
        &[("c1", "c1-img1-ID"), ("c2", "c2-img1-ID")],
        &[(0, &["c1"]), (now, &["c2"])],
        &[]
    ));
    next_batch_expected["spec"]["containers"][1]["image"] = json!("c2-img2");
    // Note: c2's container status is not ready, but it is not required: the pre-check only asks for
    // the previous batch (c1), whose status kruise's row reports without `ready`, as here; kruise's
    // pre-check passes because `preCheckBeforeNext` is absent from its state (it is built with
    // DumpJSON of a state without it). Same here.
    let reached_grace = {
        let mut v = gated(json!({
            "metadata": {"labels": labels, "annotations": {state_key: in_grace_state,
                grace_key: r#"{"revision":"new-revision","containerImages":{"main":"img-name02"},"graceSeconds":5}"#}},
            "spec": {"containers": [{"name": "main", "image": "img-name01"}]}
        }));
        let expected_state = st_json("new-revision", ten_seconds_ago, &[("c1", "img01")], &[(now, &["main"])], &[]);
        let mut want = v.clone();
        want["metadata"]["annotations"] = json!({state_key: expected_state});
        want["spec"]["containers"][0]["image"] = json!("img-name02");
        v["__want"] = want;
        v
    };
    let rows: Vec<(&str, Value, Option<Value>)> = vec![
        ("no readiness-gate", json!({}), None),
        (
            "not in-place updated yet",
            gated(
                json!({"metadata": {"labels": labels, "annotations": {state_key: r#"{"revision":"new-revision","lastContainerStatuses":{"c1":{"imageID":"img01"}}}"#}}}),
            ),
            None,
        ),
        (
            "no existing condition",
            gated(json!({})),
            Some(gated(
                json!({"status": {"conditions": [{"type": "InPlaceUpdateReady", "status": "True", "lastTransitionTime": "1970-01-01T01:00:00Z"}]}}),
            )),
        ),
        (
            "existing condition status is False",
            gated(
                json!({"status": {"conditions": [{"type": "ContainersReady", "status": "True"}, {"type": "InPlaceUpdateReady", "status": "False"}]}}),
            ),
            Some(gated(json!({"status": {"conditions": [{"type": "ContainersReady", "status": "True"},
                {"type": "InPlaceUpdateReady", "status": "True", "lastTransitionTime": "1970-01-01T01:00:00Z"}]}}))),
        ),
        (
            "existing condition status is True",
            gated(
                json!({"status": {"conditions": [{"type": "ContainersReady", "status": "False"}, {"type": "InPlaceUpdateReady", "status": "True"}]}}),
            ),
            None,
        ),
        (
            "in-place update still in grace",
            gated(json!({
                "metadata": {"labels": labels, "annotations": {state_key: in_grace_state,
                    grace_key: r#"{"revision":"new-revision","containerImages":{"main":"img-name02"},"graceSeconds":30}"#}},
                "spec": {"containers": [{"name": "main", "image": "img-name01"}]}
            })),
            None,
        ),
        ("in-place update reach grace period", reached_grace.clone(), Some(reached_grace["__want"].clone())),
        ("do not in-place update the next batch if containers not consistent", batch_pod("c1-img1-ID"), None),
        (
            "in-place update the next batch if containers have been consistent",
            batch_pod("c1-img2-ID"),
            Some(next_batch_expected),
        ),
    ];
    assert_eq!(rows.len(), 9);
    for (name, mut input, want) in rows {
        if let Some(o) = input.as_object_mut() {
            o.remove("__want");
        }
        let p = pod(input);
        let got = refresh(&p, Options::default(), at(now), same_label).unwrap();
        let after = match got {
            Refresh::Nothing | Refresh::InGracePeriod(_) | Refresh::Updating(_) => None,
            Refresh::FinishGrace { pod, .. } | Refresh::NextBatch { pod, .. } | Refresh::MarkReady { pod } => {
                Some(*pod)
            }
        };
        assert_eq!(after, want.map(pod), "{name}");
    }
}

#[test]
fn grace_period_waits_rounded_up_and_drops_stale_specs() {
    let labels = json!({"controller-revision-hash": "new-revision"});
    let p = pod(gated(json!({
        "metadata": {"labels": labels, "annotations": {
            "apps.kruise.io/inplace-update-state": st_json("new-revision", 100, &[], &[], &[]),
            "apps.kruise.io/inplace-update-grace": r#"{"revision":"new-revision","containerImages":{"main":"b"},"graceSeconds":30}"#}},
        "spec": {"containers": [{"name": "main", "image": "a"}]}
    })));
    assert_eq!(
        refresh(&p, Options::default(), at(110), same_label).unwrap(),
        Refresh::InGracePeriod(SignedDuration::from_secs(20))
    );
    let t = Timestamp::from_second(110).unwrap() + SignedDuration::from_millis(500);
    assert_eq!(
        refresh(&p, Options::default(), t, same_label).unwrap(),
        Refresh::InGracePeriod(SignedDuration::from_secs(20))
    );
    // The pod moved to another revision: the parked spec is dropped, nothing else changes.
    let other = |_: &Pod, _: &str| false;
    match refresh(&p, Options::default(), at(110), other).unwrap() {
        Refresh::FinishGrace { pod, applied: false } => {
            assert!(state::grace_text(&pod).is_none());
            assert_eq!(pod.spec.unwrap().containers[0].image.as_deref(), Some("a"));
        }
        other => panic!("{other:?}"),
    }
    // A grace annotation without a state is an error, as in kruise.
    let mut orphan = p.clone();
    orphan.metadata.annotations.as_mut().unwrap().remove("apps.kruise.io/inplace-update-state");
    assert!(refresh(&orphan, Options::default(), at(110), same_label).is_err());
}

/// Hashes computed by Go for the same containers (see the module doc).
#[test]
fn runtime_hashes_match_go() {
    let c: Container = serde_json::from_value(json!({"name": "c1", "image": "nginx:1", "env": [
        {"name": "FROM_LABEL", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['k']"}}},
        {"name": "A_ANNO", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['a/b']"}}},
        {"name": "LIT", "value": "x"}]}))
    .unwrap();
    assert_eq!(plain_hash(&c), 768286696);
    assert_eq!(plain_hash_legacy(&c), 707666618);
    let p = pod(json!({"metadata": {"labels": {"k": "v"}, "annotations": {"a/b": "anno<1>"}}}));
    assert_eq!(env_from_metadata_hash(&c, &p), 3552054095);
    assert_eq!(env_from_metadata_hash(&Container::default(), &p), 86995377);
}

/// Completion through kruise-daemon's runtime meta: plain hashes agree -> complete even though
/// the imageID did not change; env-from-metadata needs its hash too.
#[test]
fn runtime_meta_decides_completion() {
    let c = json!({"name": "c1", "image": "nginx:1", "env": [
        {"name": "FROM_LABEL", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['k']"}}}]});
    let container: Container = serde_json::from_value(c.clone()).unwrap();
    let meta = |plain: u64, env: u64| {
        json!({"containers": [{"name": "c1", "containerID": "containerd://1", "restartCount": 1,
                               "hashes": {"plainHash": plain, "extractedEnvFromMetadataHash": env}}]})
        .to_string()
    };
    let mk = |state: &str, meta: Option<String>| {
        let mut annotations = json!({"apps.kruise.io/inplace-update-state": state});
        if let Some(m) = meta {
            annotations["apps.kruise.io/runtime-containers-meta"] = json!(m);
        }
        pod(json!({"metadata": {"labels": {"k": "v2"}, "annotations": annotations},
                   "spec": {"containers": [c.clone()]},
                   "status": {"containerStatuses": [{"name": "c1", "imageID": "same", "image": "nginx:0", "containerID": "containerd://1", "ready": true, "restartCount": 1}]}}))
    };
    let images = r#"{"revision":"r","lastContainerStatuses":{"c1":{"imageID":"same"}},"updateImages":true}"#;
    let env = r#"{"revision":"r","lastContainerStatuses":{},"updateEnvFromMetadata":true}"#;
    let plain = plain_hash(&container);
    let p = mk("", None);
    let env_hash = env_from_metadata_hash(&container, &p);
    assert!(update_completed(&mk(images, None), Options::default()).is_err(), "imageID unchanged, image differs");
    assert_eq!(update_completed(&mk(images, Some(meta(plain, 0))), Options::default()), Ok(()));
    assert!(update_completed(&mk(env, None), Options::default()).is_err(), "no runtime meta yet");
    assert!(update_completed(&mk(env, Some(meta(plain, env_hash + 1))), Options::default()).is_err());
    assert_eq!(update_completed(&mk(env, Some(meta(plain, env_hash))), Options::default()), Ok(()));
}

/// kruise's `createFakePod(imageInject, resourceInject, stateInject, num, imageOKNum,
/// resourceOKNumber)`.
fn fake_pod(image: bool, resources: bool, with_state: bool, num: usize, images_ok: usize, resources_ok: usize) -> Pod {
    let mut containers = Vec::new();
    let mut statuses = Vec::new();
    let mut last = serde_json::Map::new();
    for i in 0..num {
        let mut c = json!({"name": format!("c{i}")});
        let mut s = json!({"name": format!("c{i}"), "image": "", "imageID": "", "ready": false, "restartCount": 0});
        let mut record = json!({});
        if image {
            c["image"] = json!(format!("busybox:test{i}"));
            s["imageID"] = json!(if i < images_ok { format!("img0{i}") } else { "different-img01".to_string() });
            record["imageID"] = json!("different-img01");
        }
        if resources {
            c["resources"] = json!({"requests": {"cpu": "200m", "memory": "200Mi"}});
            s["resources"] = if i < resources_ok {
                json!({"requests": {"cpu": "200m", "memory": "200Mi"}})
            } else {
                json!({"requests": {"cpu": "100m", "memory": "100Mi"}})
            };
        }
        last.insert(format!("c{i}"), record);
        containers.push(c);
        statuses.push(s);
    }
    let mut annotations = json!({});
    if with_state {
        let mut st = json!({"revision": "new-revision", "lastContainerStatuses": last});
        if resources {
            st["updateResources"] = json!(true);
        }
        annotations["apps.kruise.io/inplace-update-state"] = json!(st.to_string());
    }
    pod(
        json!({"metadata": {"name": "test-pod", "labels": {"controller-revision-hash": "new-revision"}, "annotations": annotations},
               "spec": {"containers": containers}, "status": {"containerStatuses": statuses}}),
    )
}

/// kruise `TestDefaultCheckInPlaceUpdateCompleted_Resource`, all 17 rows.
#[test]
fn kruise_check_in_place_update_completed_resource() {
    // (name, pod, expect error, vertical scaling gate)
    let rows: Vec<(&str, Pod, bool, bool)> = vec![
        ("empty pod", fake_pod(false, false, false, 1, 0, 0), false, false),
        ("image ok", fake_pod(true, false, true, 1, 1, 0), false, false),
        ("image not ok", fake_pod(true, false, true, 1, 0, 0), true, false),
        ("all image ok", fake_pod(true, false, true, 2, 2, 0), false, false),
        ("remain image not ok", fake_pod(true, false, true, 2, 1, 0), true, false),
        ("all image ok with resource ok", fake_pod(true, true, true, 2, 2, 2), false, false),
        ("all image ok with resource not ok", fake_pod(true, true, true, 2, 2, 1), false, false),
        ("remain image not ok with resource not ok", fake_pod(true, true, true, 2, 1, 1), true, false),
        ("empty pod", fake_pod(false, false, false, 1, 0, 0), false, true),
        ("image ok", fake_pod(true, false, true, 1, 1, 0), false, true),
        ("image not ok", fake_pod(true, false, true, 1, 0, 0), true, true),
        ("all image ok", fake_pod(true, false, true, 2, 2, 0), false, true),
        ("remain image not ok", fake_pod(true, false, true, 2, 1, 0), true, true),
        ("all image ok with resource ok", fake_pod(true, true, true, 2, 2, 2), false, true),
        ("all image ok with resource not ok", fake_pod(true, true, true, 2, 2, 1), true, true),
        ("remain image not ok with resource not ok", fake_pod(true, true, true, 2, 1, 1), true, true),
        ("only resource not ok", fake_pod(true, true, true, 3, 3, 1), true, true),
    ];
    assert_eq!(rows.len(), 17);
    for (name, p, want_err, vertical) in rows {
        let opts = Options { vertical_scaling: vertical, ..Default::default() };
        assert_eq!(update_completed(&p, opts).is_err(), want_err, "{name} (vertical scaling {vertical})");
    }
}
