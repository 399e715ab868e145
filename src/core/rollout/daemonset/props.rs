//! Invariants of the Advanced DaemonSet planner over random sets and rounds (issue 33): proptest
//! builds nodes and a set (Standard or InPlaceIfPossible, `maxUnavailable` or `maxSurge`,
//! `partition`), lets the planner bring it up, changes the image, and runs rounds on the shared
//! fake API (writes applied exactly as given, pins and delete preconditions checked), the kubelet
//! running on some rounds only. Every round checks:
//! 1. the writes apply;
//! 2. without surge no node ever has two live daemon pods; with surge at most two, and at most
//!    `maxSurge` nodes have two;
//! 3. without surge, a round never leaves more nodes without an available pod than
//!    `maxUnavailable` or than there were before it (it never takes more than the budget allows);
//! 4. at the end: exactly `nodes − partition` pods run the new image, one pod per node, and with
//!    InPlaceIfPossible every pod kept its uid.
//!
//! Scenario tests below follow a rollout step by step (partition and selector order, paused, a new
//! node, a failed pod replaced with backoff, an ineligible node's pod deleted).

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::json;

use super::testkit::{World, daemon_set, node};
use crate::core::pods;
use crate::core::rollout::actions::ActionKind;

fn image(p: &k8s_openapi::api::core::v1::Pod) -> &str {
    p.spec.as_ref().and_then(|s| s.containers.first()).and_then(|c| c.image.as_deref()).unwrap_or("")
}

fn live_per_node(w: &World) -> BTreeMap<String, usize> {
    w.pods_by_node()
        .into_iter()
        .map(|(n, ps)| (n, ps.iter().filter(|p| p.metadata.deletion_timestamp.is_none()).count()))
        .collect()
}

fn unavailable_nodes(w: &World) -> usize {
    let by = w.pods_by_node();
    w.nodes
        .iter()
        .filter(|n| {
            let name = n.metadata.name.as_deref().unwrap_or("");
            !by.get(name).is_some_and(|ps| ps.iter().any(|p| pods::is_available(p, 0, w.now)))
        })
        .count()
}

#[derive(Clone, Debug)]
struct Case {
    nodes: usize,
    in_place: bool,
    surge: bool,
    budget: i32,
    partition: i32,
    kubelet_every: u64,
}

fn cases() -> impl Strategy<Value = Case> {
    (1usize..8, any::<bool>(), any::<bool>(), 1i32..4, 0i32..4, 1u64..3).prop_map(
        |(nodes, in_place, surge, budget, partition, kubelet_every)| Case {
            nodes,
            in_place,
            surge: surge && !in_place,
            budget,
            partition: partition.min(nodes as i32),
            kubelet_every,
        },
    )
}

fn run(c: &Case) {
    let mut ru = json!({"rollingUpdateType": if c.in_place {"InPlaceIfPossible"} else {"Standard"},
        "partition": c.partition});
    if c.surge {
        ru["maxSurge"] = json!(c.budget);
        ru["maxUnavailable"] = json!(0);
    } else {
        ru["maxUnavailable"] = json!(c.budget);
    }
    let ds = daemon_set("app:1", json!({"type": "RollingUpdate", "rollingUpdate": ru}));
    let mut w = World::new(ds, c.nodes);
    w.settle(20);
    assert_eq!(w.pods.len(), c.nodes, "one pod per node after creation");
    let uids: BTreeMap<String, String> =
        w.pods.iter().map(|p| (pods::name(p).to_string(), p.metadata.uid.clone().unwrap())).collect();
    w.edit(|d| d.spec.template.spec.as_mut().unwrap().containers[0].image = Some("app:2".into()));
    let mut quiet = 0;
    for round in 0..200u64 {
        let before = unavailable_nodes(&w);
        let p = w.plan();
        assert!(p.errors.is_empty(), "{:?}", p.errors);
        w.apply(&p).unwrap_or_else(|e| panic!("round {round}: {e:?}"));
        w.schedule();
        let per_node = live_per_node(&w);
        if c.surge {
            assert!(per_node.values().all(|n| *n <= 2), "round {round}: {per_node:?}");
            let doubled = per_node.values().filter(|n| **n == 2).count();
            assert!(doubled <= c.budget as usize, "round {round}: {doubled} nodes surged, maxSurge {}", c.budget);
        } else {
            assert!(per_node.values().all(|n| *n <= 1), "round {round}: two daemon pods on a node: {per_node:?}");
            let after = unavailable_nodes(&w);
            assert!(
                after <= before.max(c.budget as usize),
                "round {round}: {after} nodes unavailable (before {before}), maxUnavailable {}",
                c.budget
            );
        }
        if round % c.kubelet_every == 0 {
            w.kubelet();
        }
        w.advance(1);
        quiet = if p.actions.is_empty() && p.status_write.is_none() { quiet + 1 } else { 0 };
        if quiet >= 3 {
            break;
        }
    }
    w.kubelet();
    w.settle(20);
    let updated = w.pods.iter().filter(|p| image(p) == "app:2").count();
    assert_eq!(updated, c.nodes - c.partition as usize, "{c:?}");
    assert_eq!(w.pods.len(), c.nodes);
    if c.in_place {
        for p in &w.pods {
            assert_eq!(uids.get(pods::name(p)), p.metadata.uid.as_ref(), "{} was recreated", pods::name(p));
        }
    }
    assert_eq!(w.ds.status.as_ref().unwrap().updated_number_scheduled, (c.nodes - c.partition as usize) as i32);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn rollouts_keep_one_pod_per_node_and_their_budget(c in cases()) {
        run(&c);
    }
}

#[test]
fn in_place_with_partition_one_updates_all_but_one_keeping_uids() {
    run(&Case { nodes: 3, in_place: true, surge: false, budget: 1, partition: 1, kubelet_every: 1 });
}

#[test]
fn the_selector_picks_the_nodes_updated_first() {
    let ds = daemon_set(
        "app:1",
        json!({"type": "RollingUpdate", "rollingUpdate": {"rollingUpdateType": "InPlaceIfPossible", "maxUnavailable": 3,
            "selector": {"matchLabels": {"canary": "true"}}}}),
    );
    let mut w = World::new(ds, 3);
    w.cluster.nodes[1] = node("node-1", json!({"canary": "true"}));
    w.settle(20);
    w.edit(|d| d.spec.template.spec.as_mut().unwrap().containers[0].image = Some("app:2".into()));
    w.settle(20);
    let by = w.pods_by_node();
    let images: Vec<(&str, &str)> = by.iter().map(|(n, ps)| (n.as_str(), image(ps[0]))).collect();
    assert_eq!(images, [("node-0", "app:1"), ("node-1", "app:2"), ("node-2", "app:1")]);
    // Without the selector the others follow.
    w.edit(|d| d.spec.update_strategy.rolling_update.as_mut().unwrap().selector = None);
    w.settle(20);
    assert!(w.pods.iter().all(|p| image(p) == "app:2"));
}

#[test]
fn paused_sets_create_but_do_not_update_and_new_nodes_get_pods() {
    let ds =
        daemon_set("app:1", json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "paused": true}}));
    let mut w = World::new(ds, 2);
    w.settle(20);
    w.edit(|d| d.spec.template.spec.as_mut().unwrap().containers[0].image = Some("app:2".into()));
    let plans = w.settle(20);
    assert!(plans.iter().any(|p| p.waiting.iter().any(|x| x.contains("paused"))));
    assert!(w.pods.iter().all(|p| image(p) == "app:1"));
    w.cluster.nodes.push(node("node-9", json!({})));
    w.settle(20);
    let by = w.pods_by_node();
    assert_eq!(image(by["node-9"][0]), "app:2", "a new node's pod is at the update revision");
    assert_eq!(w.ds.status.as_ref().unwrap().desired_number_scheduled, 3);
}

#[test]
fn ineligible_nodes_lose_their_pods_and_failed_pods_come_back_with_backoff() {
    let ds = daemon_set("app:1", json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}));
    let mut w = World::new(ds, 2);
    w.settle(20);
    // A NoExecute taint not tolerated: the pod goes and none comes back.
    w.cluster.nodes[1].spec =
        Some(serde_json::from_value(json!({"taints": [{"key": "k", "effect": "NoExecute"}]})).unwrap());
    w.settle(20);
    assert_eq!(w.pods_by_node().keys().cloned().collect::<Vec<_>>(), ["node-0"]);
    assert_eq!(w.ds.status.as_ref().unwrap().desired_number_scheduled, 1);
    // A failed pod is deleted (FailedDaemonPod) and created again; a second failure within the
    // backoff waits.
    w.cluster.pods[0].status.as_mut().unwrap().phase = Some("Failed".into());
    let p = w.round();
    assert!(p.events.iter().any(|e| e.reason == "FailedDaemonPod"));
    assert!(p.actions.iter().any(|a| a.kind == ActionKind::Delete));
    w.round();
    assert_eq!(w.pods.len(), 1);
    // The period (1 s) is over: deleted again, and the period doubles.
    w.cluster.pods[0].status.as_mut().unwrap().phase = Some("Failed".into());
    let p = w.plan();
    assert!(p.actions.iter().any(|a| a.kind == ActionKind::Delete));
    w.apply(&p).unwrap();
    w.round();
    assert_eq!(w.pods.len(), 1);
    w.cluster.pods[0].status.as_mut().unwrap().phase = Some("Failed".into());
    let p = w.plan();
    assert!(!p.actions.iter().any(|a| a.kind == ActionKind::Delete), "in backoff: {:?}", p.actions);
    assert!(p.requeue_after.is_some());
}

#[test]
fn a_pod_on_each_node_is_bound_by_affinity_and_labelled_with_the_hash() {
    let ds = daemon_set("app:1", json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}));
    let mut w = World::new(ds, 3);
    let first = w.round();
    let creates = first.actions.iter().filter(|a| a.kind == ActionKind::Create).count();
    assert_eq!(creates, 3);
    assert_eq!(first.actions[0].kind, ActionKind::CreateRevision);
    w.settle(20);
    let rev = &w.revisions[0];
    let hash = rev.metadata.labels.as_ref().unwrap()["controller-revision-hash"].clone();
    assert_eq!(rev.metadata.name.as_deref(), Some(format!("ds-{hash}").as_str()));
    for p in &w.pods {
        assert_eq!(pods::label(p, "controller-revision-hash"), Some(hash.as_str()));
        assert!(pods::name(p).starts_with("ds-") && pods::name(p).len() == 8);
        assert_eq!(p.metadata.generate_name.as_deref(), Some("ds-"));
    }
    let st = w.ds.status.clone().unwrap();
    assert_eq!(
        (st.desired_number_scheduled, st.current_number_scheduled, st.number_ready, st.number_available),
        (3, 3, 3, 3)
    );
    assert_eq!(
        (st.updated_number_scheduled, st.observed_generation, st.update_revision.as_str()),
        (3, 1, hash.as_str())
    );
}
