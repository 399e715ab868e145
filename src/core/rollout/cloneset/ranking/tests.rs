//! kruise's `TestSortingActivePods` (9 equality and 10 inequality rows), `TestSameNodeRanker` and
//! `TestSpreadConstraintsRanker` (3 rows), pkg/controller/cloneset/utils/pod_sorter_test.go.

use super::*;
use crate::core::pods::test_pods::at;
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

#[allow(clippy::too_many_arguments)]
fn pod(
    name: &str,
    node: &str,
    phase: &str,
    ready: bool,
    restarts: i32,
    ready_since: Option<Timestamp>,
    created: Option<Timestamp>,
    cost: Option<&str>,
) -> Pod {
    let t = |x: Option<Timestamp>| x.map(|t| t.to_string());
    let mut v = json!({"metadata": {"name": name, "creationTimestamp": t(created)},
        "spec": {"nodeName": node, "containers": []}, "status": {"phase": phase}});
    if ready {
        v["status"]["conditions"] = json!([{"type": "Ready", "status": "True", "lastTransitionTime": t(ready_since)}]);
        v["status"]["containerStatuses"] =
            json!([{"name": "c", "image": "", "imageID": "", "ready": true, "restartCount": restarts}]);
    }
    if let Some(c) = cost {
        v["metadata"]["annotations"] = json!({POD_DELETION_COST: c});
    }
    serde_json::from_value(v).unwrap()
}

#[test]
fn kruise_sorting_active_pods() {
    let (now, then) = (Some(at(100_000)), Some(at(100_000 - 30 * 86400)));
    let unscheduled = pod("unscheduled", "", "Pending", false, 0, None, None, None);
    let scheduled_pending = pod("pending", "node", "Pending", false, 0, None, None, None);
    let unknown_phase = pod("unknown-phase", "node", "Unknown", false, 0, None, None, None);
    let running_not_ready = pod("not-ready", "node", "Running", false, 0, None, None, None);
    let ready_no_time = pod("ready-no-last-transition-time", "node", "Running", true, 0, None, None, None);
    let ready_now = pod("ready-now", "node", "Running", true, 0, now, now, None);
    let ready_then = pod("ready-then", "node", "Running", true, 0, then, then, None);
    let ready_high_restarts = pod("ready-high-restarts", "node", "Running", true, 9001, now, now, None);
    let ready_now_created_then = pod("ready-now-created-then", "node", "Running", true, 0, now, then, None);
    let low_cost = pod("low-deletion-cost", "node", "Running", true, 0, now, then, Some("10"));
    let high_cost = pod("high-deletion-cost", "node", "Running", true, 0, now, then, Some("100"));

    let equal = [
        &unscheduled,
        &scheduled_pending,
        &unknown_phase,
        &running_not_ready,
        &ready_now_created_then,
        &ready_now,
        &ready_then,
        &ready_high_restarts,
        &ready_now_created_then,
    ];
    for p in equal {
        assert_eq!(deletion_order(p, p, (0.0, 0.0), None), Ordering::Equal, "{}", pods::name(p));
    }
    let lesser_greater = [
        (&unscheduled, &scheduled_pending),
        (&unscheduled, &scheduled_pending),
        (&scheduled_pending, &unknown_phase),
        (&unknown_phase, &running_not_ready),
        (&running_not_ready, &ready_no_time),
        (&ready_no_time, &ready_now),
        (&ready_now, &ready_then),
        (&ready_high_restarts, &ready_now),
        (&ready_now, &ready_now_created_then),
        (&low_cost, &high_cost),
    ];
    for (i, (a, b)) in lesser_greater.iter().enumerate() {
        assert_eq!(deletion_order(a, b, (0.0, 0.0), None), Ordering::Less, "test{i}");
        assert_ne!(deletion_order(b, a, (0.0, 0.0), None), Ordering::Less, "test{i} reversed");
    }
}

fn on(node: &str, uid: &str) -> Pod {
    let mut p = Pod::default();
    p.metadata.uid = Some(uid.into());
    if !node.is_empty() {
        p.spec = Some(k8s_openapi::api::core::v1::PodSpec { node_name: Some(node.into()), ..Default::default() });
    }
    p
}

#[test]
fn kruise_same_node_ranker() {
    let pods: Vec<Pod> = [
        ("a", "0"),
        ("", "1"),
        ("", "2"),
        ("b", "3"),
        ("a", "4"),
        ("c", "5"),
        ("b", "6"),
        ("d", "7"),
        ("d", "8"),
        ("d", "9"),
        ("a", "10"),
    ]
    .iter()
    .map(|(n, u)| on(n, u))
    .collect();
    let refs: Vec<&Pod> = pods.iter().collect();
    let ranks = same_node_ranks(&refs);
    let got: BTreeMap<String, f64> = pods
        .iter()
        .zip(&ranks)
        .filter(|(_, r)| **r > 0.0)
        .map(|(p, r)| (p.metadata.uid.clone().unwrap(), *r))
        .collect();
    let want: BTreeMap<String, f64> =
        [("0", 2.0), ("4", 1.0), ("3", 1.0), ("7", 2.0), ("8", 1.0)].iter().map(|(u, r)| (u.to_string(), *r)).collect();
    assert_eq!(got, want);
}

#[test]
fn kruise_spread_constraints_ranker() {
    let zone = "failure-domain.beta.kubernetes.io/zone";
    let node = |name: &str, z: Option<&str>| -> Node {
        let mut labels = BTreeMap::new();
        if let Some(z) = z {
            labels.insert(LABEL_HOSTNAME.to_string(), name.to_string());
            labels.insert(zone.to_string(), z.to_string());
        }
        let mut n = Node::default();
        n.metadata.name = Some(name.into());
        n.metadata.labels = Some(labels);
        n
    };
    let nodes = vec![
        node("a", None),
        node("b", Some("z1")),
        node("c", Some("z1")),
        node("d", Some("z1")),
        node("e", Some("z2")),
        node("f", Some("z2")),
        node("g", Some("z2")),
        node("h", Some("z3")),
        node("i", Some("z3")),
    ];
    let mut pods = Vec::new();
    for (n, count) in [("a", 2), ("b", 2), ("c", 3), ("d", 5), ("e", 5), ("f", 3), ("i", 5)] {
        for i in 0..count {
            pods.push(on(n, &format!("{n}-{i}")));
        }
    }
    let refs: Vec<&Pod> = pods.iter().collect();
    let c = |key: &str, limited: &[&str]| SpreadConstraint {
        topology_key: key.into(),
        limited_values: limited.iter().map(|s| s.to_string()).collect(),
    };
    let rows: Vec<(&str, Vec<SpreadConstraint>, Vec<&str>)> = vec![
        (
            "zone{no limit}",
            vec![c(zone, &[])],
            vec![
                "d-0", "d-1", "c-0", "e-0", "d-2", "e-1", "b-0", "e-2", "c-1", "f-0", "i-0", "d-3", "e-3", "i-1",
                "b-1", "f-1", "i-2", "c-2", "e-4", "i-3", "d-4", "f-2", "i-4",
            ],
        ),
        (
            "zone{limited (z2, z3)}",
            vec![c(zone, &["z2", "z3"])],
            vec!["e-0", "e-1", "e-2", "f-0", "i-0", "e-3", "i-1", "f-1", "i-2", "e-4", "i-3", "f-2", "i-4"],
        ),
        (
            "zone{no limit}, host",
            vec![c(zone, &[]), c(LABEL_HOSTNAME, &[])],
            vec![
                "d-0", "e-0", "d-1", "e-1", "c-0", "i-0", "d-2", "e-2", "i-1", "f-0", "b-0", "c-1", "i-2", "d-3",
                "e-3", "f-1", "i-3", "b-1", "c-2", "e-4", "d-4", "f-2", "i-4",
            ],
        ),
    ];
    for (name, constraints, want) in rows {
        let ranks = spread_ranks(&refs, &constraints, &nodes);
        let mut ranked: Vec<usize> = (0..pods.len()).filter(|&i| ranks[i] > 0.0).collect();
        ranked.sort_by(|&i, &j| ranks[j].partial_cmp(&ranks[i]).unwrap_or(Ordering::Equal));
        let got: Vec<&str> = ranked.iter().map(|&i| pods[i].metadata.uid.as_deref().unwrap()).collect();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn deletion_cost_parsing() {
    let with = |v: &str| pod("p", "n", "Running", false, 0, None, None, Some(v));
    for (v, want) in [("10", 10), ("-3", -3), ("0", 0), ("+1", 0), ("01", 0), ("x", 0), ("99999999999", 0), ("", 0)] {
        assert_eq!(deletion_cost(&with(v)), want, "{v:?}");
    }
}
