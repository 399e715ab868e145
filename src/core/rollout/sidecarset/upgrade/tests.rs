//! Tables for the pod upgrade and the `SidecarSetUpgradable` condition (kruise
//! `sidecarset_processor_test.go` `TestUpdateColdUpgradeSidecar` for the pod shape,
//! `sidecarcontrol/util_test.go` `TestUpdatePodSidecarSetHash`, and our native-sidecar and
//! "why not upgradable" rows).

use super::*;
use crate::core::rollout::sidecarset::testkit::*;
use serde_json::json;

fn apply(pod: &Pod, writes: &[Write]) -> Pod {
    let mut v = serde_json::to_value(pod).unwrap();
    for w in writes {
        let (Write::PatchPod { patch, .. } | Write::PatchPodStatus { patch, .. }) = w else { panic!("{w:?}") };
        json_patch::patch(&mut v, patch).unwrap();
    }
    serde_json::from_value(v).unwrap()
}

fn annotation<'p>(p: &'p Pod, k: &str) -> &'p str {
    p.metadata.annotations.as_ref().unwrap().get(k).map(String::as_str).unwrap_or("")
}

/// The cold upgrade: only the image changes (the pod's own env and mounts in the sidecar stay,
/// as in kruise's fixture), the hash entry, the update state with the old imageID, patchPodMetadata,
/// and `SidecarSetUpgradable=True` written after the pod update.
#[test]
fn cold_upgrade_changes_only_the_image_and_records_it() {
    let v1 = sidecar_set(json!({"containers": [{"name": "cold-sidecar", "image": "sc:1"}]}));
    let mut v2 = sidecar_set(json!({"containers": [{"name": "cold-sidecar", "image": "sc:2"}],
        "patchPodMetadata": [{"annotations": {"team": "mesh"}, "patchPolicy": "Overwrite"}]}));
    v2.metadata.resource_version = Some("7".into());
    let mut pod = run(injected_pod("p", &v1, &[]));
    for c in &mut pod.spec.as_mut().unwrap().containers {
        if c.name == "cold-sidecar" {
            c.env.get_or_insert_with(Vec::new).push(k8s_openapi::api::core::v1::EnvVar {
                name: "nginx-env".into(),
                value: Some("nginx-value".into()),
                ..Default::default()
            });
        }
    }
    let view = SetView::new(&v2);
    let up = upgraded_pod(&view, &pod, "test-sidecarset-abc", at(1_700_000_000)).unwrap();
    let sc = pods::container(&up, "cold-sidecar").unwrap();
    assert_eq!(sc.image.as_deref(), Some("sc:2"));
    assert!(sc.env.as_ref().unwrap().iter().any(|e| e.name == "nginx-env"));
    assert_eq!(pods::container(&up, "nginx"), pods::container(&pod, "nginx"));
    let entry = pods::hash_entry(&up, SIDECARSET_HASH, "test-sidecarset").unwrap();
    assert_eq!(entry.hash, view.hash);
    assert_eq!(entry.controller_revision, "test-sidecarset-abc");
    assert_eq!(entry.sidecar_list, Some(vec!["cold-sidecar".to_string()]));
    assert_eq!(entry.update_timestamp.as_deref(), Some("2023-11-14T22:13:20Z"));
    assert_eq!(annotation(&up, "team"), "mesh");
    assert_eq!(
        annotation(&up, INPLACE_UPDATE_STATE),
        format!(
            r#"{{"test-sidecarset":{{"revision":"{}","updateTimestamp":"2023-11-14T22:13:20Z","lastContainerStatuses":{{"cold-sidecar":{{"imageID":"sha-sc:1"}}}}}}}}"#,
            view.hash
        )
    );

    let writes = upgrade_writes(&pod, &up, "test-sidecarset", at(1_700_000_000));
    assert!(matches!(&writes[0], Write::PatchPod { pin: Pin::Observed(rv), .. } if rv == "1"), "{writes:?}");
    assert!(matches!(&writes[1], Write::PatchPodStatus { pin: Pin::Latest, .. }), "{writes:?}");
    assert_eq!(writes.len(), 2);
    let after = apply(&pod, &writes);
    let c = crate::core::pods::condition(&after, SIDECARSET_UPGRADABLE).unwrap();
    assert_eq!(
        (c.status.as_str(), c.reason.as_deref(), c.message.as_deref()),
        ("True", Some("AllSidecarsetUpgradable"), Some(r#"{"test-sidecarset":true}"#))
    );
    assert_eq!(after.spec, up.spec);
    // An unchanged image is not touched (a second upgrade only refreshes the bookkeeping).
    let again = upgraded_pod(&view, &run(after), "test-sidecarset-abc", at(1_700_000_100)).unwrap();
    assert_eq!(pods::container(&again, "cold-sidecar").unwrap().image.as_deref(), Some("sc:2"));
}

/// kruise `TestUpdatePodSidecarSetHash`: other sets' entries are kept; the old `{"set":"hash"}`
/// format is read and written back in the new one.
#[test]
fn hash_entry_keeps_other_sets_and_converts_the_old_format() {
    let set = sidecar_set(json!({"containers": [{"name": "cold-sidecar", "image": "sc:2"}]}));
    let view = SetView::new(&set);
    let mut pod = run(injected_pod("p", &set, &[]));
    pod.metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert(SIDECARSET_HASH.into(), r#"{"other":"h-other","test-sidecarset":"old"}"#.into());
    let up = upgraded_pod(&view, &pod, "", at(1_700_000_000)).unwrap();
    let all = annotations::parse_hashes(annotation(&up, SIDECARSET_HASH)).unwrap();
    assert_eq!(all["other"].hash, "h-other");
    assert_eq!(all["test-sidecarset"].hash, view.hash);
    assert!(annotation(&up, SIDECARSET_HASH).starts_with(r#"{"other":{"updateTimestamp":null,"hash":"h-other""#));
    assert!(!annotation(&up, SIDECARSET_HASH).contains("controllerRevision"), "an empty revision is omitted");
}

/// Native sidecars (init containers with `restartPolicy: Always`) are upgraded in place; plain
/// init containers never are.
#[test]
fn native_sidecars_upgrade_and_plain_init_containers_do_not() {
    let spec = |img: &str| {
        json!({"containers": [{"name": "cold-sidecar", "image": "sc:1"}],
            "initContainers": [{"name": "native", "image": img, "restartPolicy": "Always"},
                               {"name": "setup", "image": img}]})
    };
    let v1 = sidecar_set(spec("n:1"));
    let v2 = sidecar_set(spec("n:2"));
    assert_ne!(SetView::new(&v1).hash, SetView::new(&v2).hash, "native sidecars are hashed");
    assert_eq!(SetView::new(&v1).hash_without_image, SetView::new(&v2).hash_without_image);
    let pod = run(injected_pod("p", &v1, &[]));
    let view = SetView::new(&v2);
    assert_eq!(view.sidecar_list(), vec!["cold-sidecar".to_string(), "native".to_string()]);
    let up = upgraded_pod(&view, &pod, "", at(1_700_000_000)).unwrap();
    let init = up.spec.as_ref().unwrap().init_containers.as_ref().unwrap();
    let image = |n: &str| init.iter().find(|c| c.name == n).unwrap().image.clone().unwrap();
    assert_eq!((image("native").as_str(), image("setup").as_str()), ("n:2", "n:1"));
    assert!(annotation(&up, INPLACE_UPDATE_STATE).contains(r#""native":{"imageID":"sha-n:1"}"#));
    // The kubelet's init container status decides consistency.
    let mut running = up.clone();
    assert!(!pods::is_state_consistent(&view, &running, None));
    set_status(&mut running, "native", "n:2", "sha-n:2", true);
    assert!(pods::is_state_consistent(&view, &running, None));
}

/// `updatePodSidecarSetUpgradableCondition`: merged with other sets' entries, False while any
/// is false, written only when it changes.
#[test]
fn upgradable_condition_rows() {
    let set = sidecar_set(json!({"containers": [{"name": "cold-sidecar", "image": "sc:1"}]}));
    let pod = run(injected_pod("p", &set, &[]));
    let c = upgradable_condition(&pod, "s", false, at(10)).unwrap();
    assert_eq!(
        (c.status.as_str(), c.reason.as_deref(), c.message.as_deref()),
        ("False", Some("UpdateImmutableField"), Some(r#"{"s":false}"#))
    );
    assert_eq!(c.last_transition_time, Some(Time(at(10))));
    let w = not_upgradable_write(&pod, "s", at(10)).unwrap();
    assert!(matches!(&w, Write::PatchPodStatus { pin: Pin::Observed(rv), .. } if rv == "1"));
    let marked = apply(&pod, &[w]);
    assert_eq!(not_upgradable_write(&marked, "s", at(20)), None, "no write storm");
    // Another set upgradable: still False, both recorded, transition time kept.
    let c = upgradable_condition(&marked, "a", true, at(30)).unwrap();
    assert_eq!((c.status.as_str(), c.message.as_deref()), ("False", Some(r#"{"a":true,"s":false}"#)));
    assert_eq!(c.last_transition_time, Some(Time(at(10))));
    // The set becomes upgradable again: True.
    let c = upgradable_condition(&marked, "s", true, at(40)).unwrap();
    assert_eq!((c.status.as_str(), c.reason.as_deref()), ("True", Some("AllSidecarsetUpgradable")));
    assert_eq!(c.last_transition_time, Some(Time(at(40))));
    // An unparsable message starts afresh.
    let mut bad = marked.clone();
    bad.status.as_mut().unwrap().conditions.as_mut().unwrap().iter_mut().for_each(|c| {
        if c.type_ == SIDECARSET_UPGRADABLE {
            c.message = Some("{".into());
        }
    });
    assert_eq!(upgradable_condition(&bad, "s", false, at(50)).unwrap().message.as_deref(), Some(r#"{"s":false}"#));
}

/// Our improvement on kruise #1272/#928/#1942: the message names the container and the fields
/// that differ beyond the image.
#[test]
fn why_not_upgradable_names_container_and_fields() {
    let v1 = sidecar_set(json!({"containers": [{"name": "cold-sidecar", "image": "sc:1", "command": ["a"]}]}));
    let v2 = sidecar_set(json!({"containers": [{"name": "cold-sidecar", "image": "sc:2", "command": ["b"],
        "env": [{"name": "X", "value": "1"}]}]}));
    let pod = run(injected_pod("p", &v1, &[]));
    let labels = BTreeMap::from([("kubernetes.io/metadata.name".to_string(), "default".to_string())]);
    let msg = why_not_upgradable(&live_for_injection(&v2), &pod, &labels);
    assert!(msg.contains("container cold-sidecar: command, env differ"), "{msg}");
    assert!(msg.starts_with("SidecarSet test-sidecarset cannot upgrade"), "{msg}");

    // A new container of the set: named as missing.
    let v3 = sidecar_set(json!({"containers": [{"name": "cold-sidecar", "image": "sc:1", "command": ["a"]},
        {"name": "extra", "image": "e:1"}]}));
    let msg = why_not_upgradable(&live_for_injection(&v3), &pod, &labels);
    assert!(msg.contains("container extra is missing"), "{msg}");
    assert!(!msg.contains("cold-sidecar"), "{msg}");

    assert_eq!(
        differing_fields(
            &Container { name: "a".into(), image: Some("x".into()), ..Default::default() },
            &Container { name: "a".into(), image: Some("y".into()), ..Default::default() }
        ),
        Vec::<String>::new()
    );
}
