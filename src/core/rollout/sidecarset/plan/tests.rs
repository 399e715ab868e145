//! Rounds of the SidecarSet planner on the fake API (kruise `sidecarset_processor_test.go`
//! `TestUpdateColdUpgradeSidecar`, `TestScopeNamespacePods`, `TestCanUpgradePods`;
//! `sidecarset_hotupgrade_test.go` `TestUpdateHotUpgradeSidecar`; plus matching, stop and event
//! rows).

use super::*;
use crate::core::rollout::actions::Pin;
use crate::core::rollout::plan::EventType;
use crate::core::rollout::sidecarset::testkit::*;
use crate::core::rollout::sidecarset::{SIDECARSET_UPGRADABLE, version_annotation};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::json;

fn cold(image: &str) -> SidecarSet {
    sidecar_set(json!({"containers": [{"name": "cold-sidecar", "image": image}]}))
}

fn counts(s: &SidecarSetStatus) -> [i32; 4] {
    [s.matched_pods, s.updated_pods, s.ready_pods, s.updated_ready_pods]
}

fn image(w: &World, pod: &str, c: &str) -> String {
    let p = w.cluster.pods.iter().find(|p| p.metadata.name.as_deref() == Some(pod)).unwrap();
    pods::container(p, c).unwrap().image.clone().unwrap()
}

fn round(w: &mut World) -> Plan {
    let p = w.plan();
    let refused = w.apply(&p);
    assert!(refused.is_empty(), "{refused:?}");
    p
}

/// kruise `TestUpdateColdUpgradeSidecar`: two pods, maxUnavailable 1; the status counts of
/// every step are kruise's.
#[test]
fn kruise_cold_upgrade_steps() {
    let mut w = World::new(cold("sc:1"), 2);
    w.edit(|s| s.spec.containers[0].container.image = Some("sc:2".into()));
    fn is(name: &'static str) -> impl Fn(&Pod) -> bool {
        move |p: &Pod| p.metadata.name.as_deref() == Some(name)
    }

    let p = round(&mut w);
    assert_eq!(counts(&p.status), [2, 0, 2, 0]);
    assert_eq!((image(&w, "pod-0", "cold-sidecar").as_str(), image(&w, "pod-1", "cold-sidecar").as_str()), ("sc:1", "sc:2"));
    assert!(matches!(&p.revision_writes[..], [Write::CreateRevision { .. }]));
    assert_eq!(w.set.status.as_ref().unwrap().latest_revision, p.latest_revision);

    // pod-1 (the newest) is upgrading: nothing else moves.
    let p = round(&mut w);
    assert_eq!(counts(&p.status), [2, 1, 1, 0]);
    assert!(p.pod_actions.is_empty(), "{:?}", p.pod_actions);
    assert!(p.waiting.iter().any(|m| m.contains("maxUnavailable 1")), "{:?}", p.waiting);
    w.kubelet(is("pod-1"));

    let p = round(&mut w);
    assert_eq!(counts(&p.status), [2, 1, 2, 1]);
    assert_eq!(image(&w, "pod-0", "cold-sidecar"), "sc:2");

    let p = round(&mut w);
    assert_eq!(counts(&p.status), [2, 2, 1, 1]);
    w.kubelet(is("pod-0"));

    let p = round(&mut w);
    assert_eq!(counts(&p.status), [2, 2, 2, 2]);
    assert!(p.pod_actions.is_empty() && p.revision_writes.is_empty());
    // Nothing changed since: no status write either.
    let p = round(&mut w);
    assert_eq!(p.status_write, None);
    for pod in &w.cluster.pods {
        let c = crate::core::pods::condition(pod, SIDECARSET_UPGRADABLE).unwrap();
        assert_eq!(c.status, "True");
        assert_eq!(pod.metadata.annotations.as_ref().unwrap()["kruise.io/sidecarset-injected-list"], "test-sidecarset");
    }
}

/// kruise `TestUpdateHotUpgradeSidecar`: the idle `-2` gets the new image and becomes the working
/// one; once it runs, `-1` goes back to the empty image.
#[test]
fn kruise_hot_upgrade_steps() {
    let mut w = World::new(hot_set("sidecar:1", "empty:1"), 1);
    w.edit(|s| s.spec.containers[0].container.image = Some("sidecar:2".into()));
    let set_rv = w.set.metadata.resource_version.clone().unwrap();
    let p = round(&mut w);
    assert_eq!(counts(&p.status), [1, 0, 1, 0]);
    assert_eq!(image(&w, "pod-0", "hot-sidecar-2"), "sidecar:2");
    assert_eq!(image(&w, "pod-0", "hot-sidecar-1"), "sidecar:1");
    let a = w.cluster.pods[0].metadata.annotations.clone().unwrap();
    assert_eq!(a[&version_annotation("hot-sidecar-2")], set_rv);

    // Upgrading: not ready (the idle `-1` is not on the empty image), nothing to flip yet.
    let p = round(&mut w);
    assert_eq!(counts(&p.status), [1, 1, 0, 0]);
    assert!(p.pod_actions.is_empty());
    w.kubelet(|_| true);

    // Consistent: flip `-1` to the empty image, with a pod Event.
    let p = round(&mut w);
    let actions = &p.pod_actions["default"];
    assert_eq!(actions[0].kind, ActionKind::ResetHotUpgrade);
    assert_eq!(p.pod_events[0].event.reason, "ResetContainerSucceed");
    assert_eq!(image(&w, "pod-0", "hot-sidecar-1"), "empty:1");
    w.kubelet(|_| true);
    let p = round(&mut w);
    assert_eq!(counts(&p.status), [1, 1, 1, 1]);
    assert!(p.pod_actions.is_empty());
}

/// kruise `TestCanUpgradePods` and the not-upgradable path: condition once, a pod Event naming
/// what differs, one set Event per round that marks pods, and the pods left alone.
#[test]
fn not_upgradable_pods_are_marked_once() {
    let mut w = World::new(cold("sc:1"), 3);
    w.edit(|s| {
        s.spec.containers[0].container.image = Some("sc:2".into());
        s.spec.containers[0].container.args = Some(vec!["--verbose".into()]);
    });
    let p = round(&mut w);
    assert_eq!(p.pod_actions["default"].len(), 3);
    assert!(p.pod_actions["default"].iter().all(|a| a.kind == ActionKind::MarkNotUpgradable));
    assert_eq!(p.pod_events.len(), 3);
    let e = &p.pod_events[0];
    assert_eq!((e.event.type_, e.event.reason, e.namespace.as_str()), (EventType::Warning, NOT_UPGRADABLE_REASON, "default"));
    assert!(e.event.message.contains("container cold-sidecar: args differ"), "{}", e.event.message);
    assert_eq!(p.events[0].reason, "NotUpgradablePods");
    assert!(p.events[0].message.contains("detected 3 not upgradable pod(s)"));
    for pod in &w.cluster.pods {
        let c = crate::core::pods::condition(pod, SIDECARSET_UPGRADABLE).unwrap();
        assert_eq!((c.status.as_str(), c.reason.as_deref()), ("False", Some("UpdateImmutableField")));
        assert_eq!(pods::container(pod, "cold-sidecar").unwrap().image.as_deref(), Some("sc:1"));
    }
    // The next round writes nothing and records nothing.
    let p = round(&mut w);
    assert!(p.pod_actions.is_empty() && p.pod_events.is_empty() && p.events.is_empty());
    assert!(p.waiting.iter().any(|m| m.contains("3 pod(s) cannot be upgraded in place")));
}

/// §4.12.1 / kruise `TestScopeNamespacePods`: scope, selector, active, injected list, containers.
#[test]
fn matching_pods() {
    let mut w = World::new(cold("sc:1"), 6);
    w.set.spec.namespace_selector = Some(serde_json::from_value(json!({"matchLabels": {"env": "prod"}})).unwrap());
    w.namespace_labels.insert("prod-ns".into(), [("env".to_string(), "prod".to_string())].into());
    w.namespace_labels.get_mut("default").unwrap().insert("env".into(), "prod".into());
    let pods = &mut w.cluster.pods;
    pods[0].metadata.namespace = Some("unknown-ns".into());
    pods[1].metadata.labels.as_mut().unwrap().insert("app".into(), "other".into());
    pods[2].status.as_mut().unwrap().phase = Some("Succeeded".into());
    pods[3].metadata.annotations.as_mut().unwrap().insert("kruise.io/sidecarset-injected-list".into(), "a,b".into());
    pods[4].spec.as_mut().unwrap().containers.retain(|c| c.name != "cold-sidecar");
    pods[5].metadata.namespace = Some("prod-ns".into());
    let p = w.plan();
    assert_eq!(p.status.matched_pods, 1);
    // Without a namespaceSelector every namespace counts.
    w.set.spec.namespace_selector = None;
    assert_eq!(w.plan().status.matched_pods, 2);
    // v1alpha1 spec.namespace wins.
    w.set.spec.namespace = "prod-ns".into();
    assert_eq!(w.plan().status.matched_pods, 1);
    // A selector that does not parse plans nothing.
    w.set.spec.selector =
        Some(serde_json::from_value(json!({"matchExpressions": [{"key": "a", "operator": "Bad"}]})).unwrap());
    let p = w.plan();
    assert!(p.status_write.is_none() && p.revision_writes.is_empty());
    assert!(p.waiting[0].contains("spec.selector"), "{:?}", p.waiting);
}

/// §4.12 item 4: NotUpdate and paused keep revisions and status but upgrade nothing.
#[test]
fn not_update_and_paused_stop_after_status() {
    for stop in ["NotUpdate", "paused"] {
        let mut w = World::new(cold("sc:1"), 2);
        w.edit(|s| {
            s.spec.containers[0].container.image = Some("sc:2".into());
            if stop == "paused" {
                s.spec.update_strategy.paused = true;
            } else {
                s.spec.update_strategy.type_ = "NotUpdate".into();
            }
        });
        let p = round(&mut w);
        assert!(p.pod_actions.is_empty(), "{stop}");
        assert!(!p.revision_writes.is_empty() && p.status_write.is_some(), "{stop}");
        assert!(p.waiting.iter().any(|m| m.contains(stop)), "{stop}: {:?}", p.waiting);
    }
}

/// Partition and the selector: pods outside stay; writes are pinned to what was observed.
#[test]
fn partition_selector_and_pins() {
    let mut w = World::new(cold("sc:1"), 6);
    w.edit(|s| {
        s.spec.containers[0].container.image = Some("sc:2".into());
        s.spec.update_strategy.partition = Some(IntOrString::Int(2));
        s.spec.update_strategy.max_unavailable = Some(IntOrString::String("100%".into()));
        s.spec.update_strategy.selector =
            Some(serde_json::from_value(json!({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z2"]}]})).unwrap());
    });
    let p = w.plan();
    let actions = &p.pod_actions["default"];
    // z0/z1 pods: 4 of 6; partition 2 of the matched count keeps 2 of them.
    assert_eq!(actions.len(), 2);
    for a in actions {
        assert_eq!(a.kind, ActionKind::UpdateInPlace);
        assert_eq!(a.images.get("cold-sidecar").map(String::as_str), Some("sc:2"));
        let Write::PatchPod { pin: Pin::Observed(rv), .. } = &a.writes[0] else { panic!("{:?}", a.writes) };
        let pod = w.cluster.pods.iter().find(|q| q.metadata.name == a.pod).unwrap();
        assert_eq!(Some(rv), pod.metadata.resource_version.as_ref());
        assert_ne!(crate::core::pods::labels(pod).get("zone").map(String::as_str), Some("z2"));
    }
    // A stale view: the pod changed since; the write is refused and nothing else breaks.
    w.cluster.pods[0].metadata.resource_version = Some("999".into());
    let refused = w.apply(&p);
    assert!(refused.len() <= 1);
}

