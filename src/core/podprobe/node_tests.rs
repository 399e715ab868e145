//! kruise `node_pod_probe_controller_test.go` rows: `TestSyncPodFromNodePodProbe` (pod no
//! changed, pod not found, pod uid changed) on [`prune_spec`], and the (commented-out in kruise)
//! `TestSyncNodePodProbe` rows — probe success, probe failed, marker policy — on
//! [`pod_marks`] + [`apply_marks`]; plus the node create/delete decision.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::apis::nodepodprobe::{ContainerProbe, ContainerProbeState, PodProbe};
use crate::apis::podprobemarker::{PodContainerProbe, PodProbeMarkerSpec, ProbeMarkerPolicy};
use k8s_openapi::api::core::v1::PodStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn pod(name: &str, uid: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(String::new()),
            uid: Some(uid.into()),
            labels: Some(map(&[("app", "test")])),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    }
}

fn entry(name: &str) -> PodProbe {
    PodProbe {
        name: name.into(),
        uid: format!("{name}-uid"),
        probes: vec![ContainerProbe {
            name: "ppm-1#healthy".into(),
            container_name: "main".into(),
            ..Default::default()
        }],
        ..PodProbe::default()
    }
}

#[test]
fn kruise_sync_pod_from_node_pod_probe() {
    let spec = NodePodProbeSpec { pod_probes: vec![entry("pod-1"), entry("pod-2")] };
    // pod no changed
    let (p1, p2) = (pod("pod-1", "pod-1-uid"), pod("pod-2", "pod-2-uid"));
    let both = |_: &str, name: &str| [&p1, &p2].into_iter().find(|p| pods::name(p) == name);
    assert_eq!(prune_spec(&spec, both), spec);
    // pod not found
    let only_first = |_: &str, name: &str| (name == "pod-1").then_some(&p1);
    assert_eq!(prune_spec(&spec, only_first), NodePodProbeSpec { pod_probes: vec![entry("pod-1")] });
    // pod uid changed
    let p2b = pod("pod-2", "pod-2-uid-03");
    let replaced = |_: &str, name: &str| [&p1, &p2b].into_iter().find(|p| pods::name(p) == name);
    assert_eq!(prune_spec(&spec, replaced), NodePodProbeSpec { pod_probes: vec![entry("pod-1")] });
    // finished or being deleted
    let mut done = pod("pod-2", "pod-2-uid");
    done.status = Some(PodStatus { phase: Some("Failed".into()), ..PodStatus::default() });
    let finished = |_: &str, name: &str| [&p1, &done].into_iter().find(|p| pods::name(p) == name);
    assert_eq!(prune_spec(&spec, finished), NodePodProbeSpec { pod_probes: vec![entry("pod-1")] });
}

fn marker(condition: &str, policy: Vec<ProbeMarkerPolicy>) -> PodProbeMarker {
    PodProbeMarker::new(
        "ppm-1",
        PodProbeMarkerSpec {
            selector: None,
            probes: vec![PodContainerProbe {
                name: "healthy".into(),
                container_name: "main".into(),
                pod_condition_type: condition.into(),
                marker_policy: policy,
                ..PodContainerProbe::default()
            }],
        },
    )
}

fn demo_policy() -> Vec<ProbeMarkerPolicy> {
    vec![
        ProbeMarkerPolicy {
            state: "Succeeded".into(),
            annotations: map(&[("controller.kubernetes.io/pod-deletion-cost", "10")]),
            labels: map(&[("server-healthy", "true")]),
        },
        ProbeMarkerPolicy {
            state: "Failed".into(),
            annotations: map(&[("controller.kubernetes.io/pod-deletion-cost", "-10")]),
            labels: map(&[("server-healthy", "false")]),
        },
    ]
}

fn status(state: &str, message: &str) -> PodProbeStatus {
    let t = Time(Timestamp::from_second(1_700_000_000).unwrap());
    PodProbeStatus {
        name: "pod-1".into(),
        uid: "pod-1-uid".into(),
        probe_states: vec![ContainerProbeState {
            name: "ppm-1#healthy".into(),
            state: state.into(),
            last_probe_time: Some(t.clone()),
            last_transition_time: Some(t),
            message: message.into(),
        }],
        ..PodProbeStatus::default()
    }
}

fn condition_of<'a>(p: &'a Pod, t: &str) -> Option<&'a PodCondition> {
    pods::condition(p, t)
}

#[test]
fn kruise_probe_success() {
    let ppm = marker("game.kruise.io/healthy", demo_policy());
    let marks = pod_marks(&status("Succeeded", ""), |n| (n == "ppm-1").then_some(&ppm));
    let after = apply_marks(&pod("pod-1", "pod-1-uid"), &marks).unwrap();
    let c = condition_of(&after, "game.kruise.io/healthy").unwrap();
    assert_eq!((c.status.as_str(), c.message.as_deref()), ("True", None));
    assert_eq!(after.metadata.labels.as_ref().unwrap(), &map(&[("app", "test"), ("server-healthy", "true")]));
    assert_eq!(
        after.metadata.annotations.as_ref().unwrap(),
        &map(&[("controller.kubernetes.io/pod-deletion-cost", "10")])
    );
    // Applied again: nothing changes.
    assert_eq!(apply_marks(&after, &marks), None);
}

#[test]
fn kruise_probe_failed() {
    let ppm = marker("game.kruise.io/healthy", demo_policy());
    let mut was_healthy = pod("pod-1", "pod-1-uid");
    was_healthy.metadata.labels.as_mut().unwrap().insert("server-healthy".into(), "true".into());
    let marks = pod_marks(&status("Failed", "exit 1"), |n| (n == "ppm-1").then_some(&ppm));
    let after = apply_marks(&was_healthy, &marks).unwrap();
    let c = condition_of(&after, "game.kruise.io/healthy").unwrap();
    assert_eq!((c.status.as_str(), c.message.as_deref()), ("False", Some("exit 1")));
    assert_eq!(after.metadata.labels.as_ref().unwrap()["server-healthy"], "false");
}

#[test]
fn kruise_marker_policy_removes_the_opposite_marks() {
    let policy = vec![
        ProbeMarkerPolicy {
            state: "Succeeded".into(),
            annotations: map(&[("controller.kubernetes.io/pod-deletion-cost", "10"), ("success", "true")]),
            labels: map(&[("server-healthy", "true"), ("success", "true")]),
        },
        ProbeMarkerPolicy {
            state: "Failed".into(),
            annotations: map(&[("controller.kubernetes.io/pod-deletion-cost", "-10"), ("failed", "true")]),
            labels: map(&[("failed", "true")]),
        },
    ];
    let ppm = marker("", policy);
    let mut p = pod("pod-1", "pod-1-uid");
    p.metadata.labels = Some(map(&[("app", "test"), ("server-healthy", "true"), ("success", "true")]));
    p.metadata.annotations = Some(map(&[("controller.kubernetes.io/pod-deletion-cost", "10"), ("success", "true")]));
    let marks = pod_marks(&status("Failed", ""), |n| (n == "ppm-1").then_some(&ppm));
    let after = apply_marks(&p, &marks).unwrap();
    assert_eq!(after.metadata.labels.clone().unwrap(), map(&[("app", "test"), ("failed", "true")]));
    assert_eq!(
        after.metadata.annotations.clone().unwrap(),
        map(&[("controller.kubernetes.io/pod-deletion-cost", "-10"), ("failed", "true")])
    );
    assert!(condition_of(&after, "").is_none(), "no condition type, no condition");
}

#[test]
fn condition_is_replaced_only_when_status_or_message_changes() {
    let ppm = marker("game.kruise.io/healthy", vec![]);
    let first = apply_marks(&pod("pod-1", "u"), &pod_marks(&status("Succeeded", "ok"), |_| Some(&ppm))).unwrap();
    // A later probe with the same result and message: kruise keeps the first times.
    let mut later = status("Succeeded", "ok");
    later.probe_states[0].last_probe_time = Some(Time(Timestamp::from_second(1_800_000_000).unwrap()));
    assert_eq!(apply_marks(&first, &pod_marks(&later, |_| Some(&ppm))), None);
    let flipped = apply_marks(&first, &pod_marks(&status("Failed", "no"), |_| Some(&ppm))).unwrap();
    assert_eq!(condition_of(&flipped, "game.kruise.io/healthy").unwrap().status, "False");
}

#[test]
fn results_of_gone_markers_and_bad_names_are_ignored() {
    let ppm = marker("game.kruise.io/healthy", demo_policy());
    assert!(pod_marks(&status("Succeeded", ""), |_| None).is_empty());
    let mut unnamed = status("Succeeded", "");
    unnamed.probe_states[0].name = "no-hash".into();
    assert!(pod_marks(&unnamed, |_| Some(&ppm)).is_empty());
    let mut empty = status("", "");
    empty.probe_states[0].state = String::new();
    assert!(pod_marks(&empty, |_| Some(&ppm)).is_empty());
}

#[test]
fn node_create_and_delete() {
    assert_eq!(node_action(false, Some(false)), NodeAction::Create);
    assert_eq!(node_action(false, Some(true)), NodeAction::Keep);
    assert_eq!(node_action(false, None), NodeAction::Keep);
    assert_eq!(node_action(true, Some(false)), NodeAction::Keep);
    assert_eq!(node_action(true, Some(true)), NodeAction::Delete);
    assert_eq!(node_action(true, None), NodeAction::Delete);
}
