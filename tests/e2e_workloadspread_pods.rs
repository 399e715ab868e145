//! WorkloadSpread's pod hooks and controller end to end (issue 34 item 3) on the real control
//! plane of `testenv/`: `kruise serve` behind the fault proxy with the rights of
//! `deploy/rbac.yaml`, the generated `webhook-config/` registered, kube-controller-manager's
//! Deployment and ReplicaSet controllers creating and deleting the pods, the scheduler placing
//! them and the simulated kubelets running them. The test labels the simulated nodes into two
//! zones under a label key of its own namespace (concurrent tests sharing the nodes are not
//! disturbed) and removes the labels at the end. Asserted, through the apiserver:
//! - a WorkloadSpread with `zone-a maxReplicas: 2` and `zone-b` (the rest) over a Deployment of 5
//!   — with the WorkloadSpread's writes answered 409 three times and every watch cut while the
//!   pods are created — puts 2 pods on zone-a nodes and 3 on zone-b nodes, each pod carrying
//!   `apps.kruise.io/matched-workloadspread` of its subset;
//! - the controller reports `replicas` 2 and 3 and `missingReplicas` 0 and -1, and writes the
//!   deletion costs (zone-a pods 200, zone-b pods 100);
//! - scaling the Deployment down to 2 deletes zone-b's pods first: the 2 left are zone-a's, and
//!   the deletions were recorded then expired out of the status;
//! - pods created before their WorkloadSpread (a Deployment of 4 spread over both zones) are
//!   adopted by the controller into the subset of their node: the annotation and the subset
//!   patch's label are patched onto the same pods (none is recreated) and the status counts them;
//! - Adaptive rescheduling: a subset whose nodes cannot take the pods (a node selector no node
//!   matches) is marked `Schedulable=False` once its pods have been Pending unschedulable for
//!   `rescheduleCriticalSeconds`, those pods are deleted, and the Deployment's new pods go to the
//!   other subset.
//!
//! The tests of this binary take turns: each registers the webhooks for its own `kruise serve`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::collections::BTreeMap;
use std::time::Duration;

use e2e_common::{cluster, eventually, is_unschedulable, label_zones, serve_namespace, unlabel_zones};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Node, Pod};
use kruise::apis::workloadspread::WorkloadSpread;
use kruise_testenv::{Share, WriteFault};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

const MATCHED: &str = "apps.kruise.io/matched-workloadspread";
const COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// Running pods of the Deployment: `(name, zone of its node, subset annotated, deletion cost)`.
async fn placed(pods: &Api<Pod>, zones: &BTreeMap<String, String>) -> Vec<(String, String, String, String)> {
    let Ok(list) = pods.list(&ListParams::default().labels("app=web")).await else { return Vec::new() };
    list.items
        .into_iter()
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .map(|p| {
            let annotations = p.metadata.annotations.clone().unwrap_or_default();
            let subset = annotations
                .get(MATCHED)
                .and_then(|a| serde_json::from_str::<serde_json::Value>(a).ok())
                .and_then(|v| v.get("subset").and_then(|s| s.as_str()).map(str::to_string))
                .unwrap_or_default();
            let node = p.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
            let zone = zones.get(&node).cloned().unwrap_or_default();
            let cost = annotations.get(COST).cloned().unwrap_or_default();
            (p.metadata.name.unwrap_or_default(), zone, subset, cost)
        })
        .collect()
}

/// `(zone, subset, cost)` counts of the placed pods.
fn tally(placed: &[(String, String, String, String)]) -> BTreeMap<(String, String, String), usize> {
    let mut out = BTreeMap::new();
    for (_, zone, subset, cost) in placed {
        *out.entry((zone.clone(), subset.clone(), cost.clone())).or_default() += 1;
    }
    out
}

fn key(zone: &str, subset: &str, cost: &str) -> (String, String, String) {
    (zone.into(), subset.into(), cost.into())
}

/// The tests of this binary take turns: each points the cluster's webhooks at its own
/// `kruise serve` with its own CA, so two at once would send each other's pods to the wrong server.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workload_spread_places_a_deployment_over_two_zones_and_scales_down_the_last_first() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let c = cluster();
    let ns = c.namespace("e2e-wsp").await.unwrap();
    let certs = tempfile::tempdir().unwrap();
    let (kruise, proxy, client) = serve_namespace(ns.name(), certs.path()).await;

    // Two zones over the simulated nodes, under a label key of this test's own.
    let zone_key = format!("e2e.kruise.io/{}", ns.name());
    let nodes_api: Api<Node> = Api::all(client.clone());
    let zones = label_zones(&nodes_api, &zone_key).await;

    let spreads: Api<WorkloadSpread> = Api::namespaced(client.clone(), ns.name());
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns.name());
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());

    // 1. The WorkloadSpread (retried until the validating webhook answers), then its status
    //    written by the controller: the leader's view (which the pod webhook reads) holds it.
    let spread: WorkloadSpread = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread", "metadata": {"name": "ws"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "subsets": [
                {"name": "zone-a", "maxReplicas": 2,
                 "requiredNodeSelectorTerm": {"matchExpressions": [{"key": zone_key.clone(), "operator": "In", "values": ["a"]}]}},
                {"name": "zone-b",
                 "requiredNodeSelectorTerm": {"matchExpressions": [{"key": zone_key.clone(), "operator": "In", "values": ["b"]}]}}]}
    }))
    .unwrap();
    admit(&spreads, &spread).await;
    first_status(&spreads).await;

    // 2. A Deployment of 5, created while the WorkloadSpread's writes get three 409s and every
    //    watch is cut.
    proxy.fail_writes(WriteFault::Conflict, Share::Next(3), &["workloadspreads"]);
    proxy.cut_watches();
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 5, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"terminationGracePeriodSeconds": 0, "containers": [{"name": "main", "image": "nginx:1.27"}]}}}
    }))
    .unwrap();
    deployments.create(&PostParams::default(), &deployment).await.unwrap();
    let want = BTreeMap::from([(key("a", "zone-a", "200"), 2), (key("b", "zone-b", "100"), 3)]);
    let got =
        eventually("2 pods in zone-a and 3 in zone-b, with their deletion costs", Duration::from_secs(240), || async {
            let got = tally(&placed(&pods, &zones).await);
            (got == want).then_some(got)
        })
        .await;
    assert_eq!(got, want);
    let counts = proxy.counts();
    assert!(counts.conflicts >= 1, "the fault happened: {counts:?}");
    proxy.heal_writes();
    let status = eventually("the subset statuses", Duration::from_secs(120), || async {
        let s = spreads.get("ws").await.ok()?.status?;
        let rows: Vec<(String, i32, i32)> =
            s.subset_statuses.iter().map(|s| (s.name.clone(), s.replicas, s.missing_replicas)).collect();
        let settled = s.subset_statuses.iter().all(|s| s.creating_pods.is_empty() && s.deleting_pods.is_empty());
        (settled && rows == [("zone-a".to_string(), 2, 0), ("zone-b".to_string(), 3, -1)]).then_some(s)
    })
    .await;
    assert_eq!(status.subset_statuses[0].missing_replicas, 0, "{status:?}");

    // 3. Scale down to 2: zone-b's pods (the lower cost) go, zone-a's stay.
    let scale = json!({"spec": {"replicas": 2}});
    deployments.patch("web", &PatchParams::default(), &Patch::Merge(&scale)).await.unwrap();
    let left = eventually("only zone-a's 2 pods left", Duration::from_secs(240), || async {
        let list = pods.list(&ListParams::default().labels("app=web")).await.ok()?;
        let all: Vec<Pod> = list.items;
        let running = placed(&pods, &zones).await;
        (all.len() == 2 && running.len() == 2).then_some(running)
    })
    .await;
    assert!(left.iter().all(|(_, zone, subset, _)| zone == "a" && subset == "zone-a"), "{left:?}");
    eventually("the status after the scale-down", Duration::from_secs(120), || async {
        let s = spreads.get("ws").await.ok()?.status?;
        let rows: Vec<(String, i32, i32)> =
            s.subset_statuses.iter().map(|s| (s.name.clone(), s.replicas, s.missing_replicas)).collect();
        (rows == [("zone-a".to_string(), 2, 0), ("zone-b".to_string(), 0, -1)]).then_some(())
    })
    .await;

    unlabel_zones(&nodes_api, &zone_key, &zones).await;
    drop(kruise);
}

/// Creates the WorkloadSpread, retried until the validating webhook answers.
async fn admit(spreads: &Api<WorkloadSpread>, spread: &WorkloadSpread) {
    eventually("the WorkloadSpread admitted", Duration::from_secs(90), || async {
        spreads.create(&PostParams::default(), spread).await.ok()
    })
    .await;
}

/// Waits for the controller's first status of WorkloadSpread `ws` (both subsets): the leader's
/// view, which the pod webhook reads, holds it then.
async fn first_status(spreads: &Api<WorkloadSpread>) {
    eventually("the WorkloadSpread's first status", Duration::from_secs(120), || async {
        let s = spreads.get("ws").await.ok()?.status?;
        (s.subset_statuses.len() == 2).then_some(())
    })
    .await;
}

/// The subset a pod's `apps.kruise.io/matched-workloadspread` annotation names ("" if none).
fn subset_of(p: &Pod) -> String {
    p.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(MATCHED))
        .and_then(|a| serde_json::from_str::<serde_json::Value>(a).ok())
        .and_then(|v| v.get("subset").and_then(|s| s.as_str()).map(str::to_string))
        .unwrap_or_default()
}

fn is_running(p: &Pod) -> bool {
    p.metadata.deletion_timestamp.is_none() && p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_created_before_the_workload_spread_are_adopted_by_their_node() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let c = cluster();
    let ns = c.namespace("e2e-wsadopt").await.unwrap();
    let certs = tempfile::tempdir().unwrap();
    let (kruise, _proxy, client) = serve_namespace(ns.name(), certs.path()).await;
    let zone_key = format!("e2e.kruise.io/{}", ns.name());
    let nodes_api: Api<Node> = Api::all(client.clone());
    let zones = label_zones(&nodes_api, &zone_key).await;
    let spreads: Api<WorkloadSpread> = Api::namespaced(client.clone(), ns.name());
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns.name());
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());

    // 1. A Deployment of 4 spread evenly over the two zones, running before any WorkloadSpread.
    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "old"},
        "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "old"}},
            "template": {"metadata": {"labels": {"app": "old"}},
                "spec": {"terminationGracePeriodSeconds": 0,
                    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": zone_key.clone(),
                        "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "old"}}}],
                    "containers": [{"name": "main", "image": "nginx:1.27"}]}}}
    }))
    .unwrap();
    deployments.create(&PostParams::default(), &deployment).await.unwrap();
    let before: BTreeMap<String, String> = eventually("4 running pods", Duration::from_secs(240), || async {
        let list = pods.list(&ListParams::default().labels("app=old")).await.ok()?;
        let running: BTreeMap<String, String> = list
            .items
            .iter()
            .filter(|p| is_running(p))
            .map(|p| {
                let node = p.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
                (p.metadata.name.clone().unwrap_or_default(), zones.get(&node).cloned().unwrap_or_default())
            })
            .collect();
        (list.items.len() == 4 && running.len() == 4).then_some(running)
    })
    .await;
    let all = pods.list(&ListParams::default().labels("app=old")).await.unwrap().items;
    assert!(all.iter().all(|p| subset_of(p).is_empty()), "no spread placed them");
    let per_zone = |z: &str| before.values().filter(|v| *v == z).count() as i32;
    assert_eq!((per_zone("a"), per_zone("b")), (2, 2), "the topology spread put 2 in each zone: {before:?}");

    // 2. The WorkloadSpread over it: zone-a (with a label patch) and zone-b.
    let spread: WorkloadSpread = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread", "metadata": {"name": "ws"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "old"},
            "subsets": [
                {"name": "zone-a", "maxReplicas": 3, "patch": {"metadata": {"labels": {"e2e-subset": "a"}}},
                 "requiredNodeSelectorTerm": {"matchExpressions": [{"key": zone_key.clone(), "operator": "In", "values": ["a"]}]}},
                {"name": "zone-b",
                 "requiredNodeSelectorTerm": {"matchExpressions": [{"key": zone_key.clone(), "operator": "In", "values": ["b"]}]}}]}
    }))
    .unwrap();
    admit(&spreads, &spread).await;

    // 3. The same pods adopted into the subset of their node, and counted.
    let adopted = eventually("the pods adopted by their node", Duration::from_secs(120), || async {
        let list = pods.list(&ListParams::default().labels("app=old")).await.ok()?;
        let got: BTreeMap<String, (String, String, String)> = list
            .items
            .iter()
            .map(|p| {
                let label = p.metadata.labels.as_ref().and_then(|l| l.get("e2e-subset").cloned()).unwrap_or_default();
                let cost = p.metadata.annotations.as_ref().and_then(|a| a.get(COST).cloned()).unwrap_or_default();
                (p.metadata.name.clone().unwrap_or_default(), (subset_of(p), label, cost))
            })
            .collect();
        let want: BTreeMap<String, (String, String, String)> = before
            .iter()
            .map(|(name, zone)| {
                let v = if zone == "a" { ("zone-a", "a", "200") } else { ("zone-b", "", "100") };
                (name.clone(), (v.0.to_string(), v.1.to_string(), v.2.to_string()))
            })
            .collect();
        (got == want).then_some(got)
    })
    .await;
    assert_eq!(adopted.len(), 4, "the same four pods, none recreated: {adopted:?}");
    eventually("the status counting the adopted pods", Duration::from_secs(120), || async {
        let s = spreads.get("ws").await.ok()?.status?;
        let rows: Vec<(String, i32, i32)> =
            s.subset_statuses.iter().map(|s| (s.name.clone(), s.replicas, s.missing_replicas)).collect();
        (rows == [("zone-a".to_string(), 2, 1), ("zone-b".to_string(), 2, -1)]).then_some(())
    })
    .await;

    unlabel_zones(&nodes_api, &zone_key, &zones).await;
    drop(kruise);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adaptive_rescheduling_moves_pods_off_a_subset_whose_nodes_cannot_take_them() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let c = cluster();
    let ns = c.namespace("e2e-wsresched").await.unwrap();
    let certs = tempfile::tempdir().unwrap();
    let (kruise, _proxy, client) = serve_namespace(ns.name(), certs.path()).await;
    let spreads: Api<WorkloadSpread> = Api::namespaced(client.clone(), ns.name());
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), ns.name());
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());

    // zone-a asks for a node label no node has; zone-b takes any node.
    let key = format!("e2e.kruise.io/{}-nowhere", ns.name());
    let spread: WorkloadSpread = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "WorkloadSpread", "metadata": {"name": "ws"},
        "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "scheduleStrategy": {"type": "Adaptive", "adaptive": {"rescheduleCriticalSeconds": 15}},
            "subsets": [
                {"name": "zone-a", "maxReplicas": 2,
                 "requiredNodeSelectorTerm": {"matchExpressions": [{"key": key.clone(), "operator": "In", "values": ["x"]}]}},
                {"name": "zone-b",
                 "requiredNodeSelectorTerm": {"matchExpressions": [{"key": key.clone(), "operator": "DoesNotExist"}]}}]}
    }))
    .unwrap();
    admit(&spreads, &spread).await;
    first_status(&spreads).await;

    let deployment: Deployment = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"terminationGracePeriodSeconds": 0, "containers": [{"name": "main", "image": "nginx:1.27"}]}}}
    }))
    .unwrap();
    deployments.create(&PostParams::default(), &deployment).await.unwrap();

    // First both pods go to zone-a and stay Pending there (the scheduler finds no node)...
    let stuck: Vec<String> = eventually("zone-a's pods pending unschedulable", Duration::from_secs(120), || async {
        let list = pods.list(&ListParams::default().labels("app=web")).await.ok()?;
        let stuck: Vec<String> = list
            .items
            .iter()
            .filter(|p| subset_of(p) == "zone-a")
            .filter(|p| is_unschedulable(p))
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        (!stuck.is_empty()).then_some(stuck)
    })
    .await;
    // ... then zone-a is marked unschedulable, they are deleted, and their replacements run in
    // zone-b.
    let running = eventually("the pods moved to zone-b", Duration::from_secs(300), || async {
        let list = pods.list(&ListParams::default().labels("app=web")).await.ok()?;
        let names: Vec<String> = list.items.iter().filter_map(|p| p.metadata.name.clone()).collect();
        let running: Vec<(String, String)> = list
            .items
            .iter()
            .filter(|p| is_running(p))
            .map(|p| (p.metadata.name.clone().unwrap_or_default(), subset_of(p)))
            .collect();
        let moved = running.len() == 2
            && list.items.len() == 2
            && running.iter().all(|(_, subset)| subset == "zone-b")
            && stuck.iter().all(|s| !names.contains(s));
        moved.then_some(running)
    })
    .await;
    assert!(running.iter().all(|(name, _)| !stuck.contains(name)), "{running:?} {stuck:?}");
    let status = eventually("zone-a unschedulable in the status", Duration::from_secs(120), || async {
        let s = spreads.get("ws").await.ok()?.status?;
        let cond = |i: usize| {
            s.subset_statuses
                .get(i)
                .and_then(|st| st.conditions.iter().find(|c| c.type_ == "Schedulable"))
                .map(|c| c.status.clone())
        };
        let counted = s.subset_statuses.get(1).is_some_and(|b| b.replicas == 2);
        (cond(0).as_deref() == Some("False") && cond(1).as_deref() == Some("True") && counted).then_some(s)
    })
    .await;
    assert_eq!(status.subset_statuses[0].name, "zone-a", "{status:?}");
    drop(kruise);
}
