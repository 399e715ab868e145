//! The UnitedDeployment controller and webhooks end to end (issue 34 items 1–3) on the real
//! control plane of `testenv/`: `kruise serve` with exactly the rights `deploy/rbac.yaml` gives it,
//! talking to the API server through the fault proxy, the generated `webhook-config/` registered,
//! the scheduler placing the pods and the simulated kubelets running them. The test labels the
//! simulated nodes into two zones itself (a label key of its own namespace, so concurrent tests
//! do not meet). Asserted:
//! - an invalid UnitedDeployment is denied by `vuniteddeployment.kb.io` with kruise's field error,
//!   and the mutating webhook fills the defaults;
//! - a UnitedDeployment of 6 with subsets `zone-a: 4` and `zone-b` (the rest) creates two
//!   CloneSets (`web-zone-a-…`, `web-zone-b-…`, owned by it) with 4 and 2 pods, each pod on a node
//!   of its zone, and reports 6 ready replicas;
//! - with CloneSet writes answered 409 and every watch cut, a template image change rolls both
//!   subsets out and the status promotes the new revision;
//! - the scale subresource scales it to 8, zone-b taking the 2 more;
//! - adaptive scheduling: a subset whose pods cannot be scheduled has its replicas moved to the
//!   other subset; with `reserveUnschedulablePods` its pods are kept (labelled reserved) while
//!   temporary pods elsewhere do their work, until they run and the temporary pods go;
//! - the other three template kinds over the same two zones: Advanced StatefulSets (kruise's own
//!   controller; a new image rolls both out), Deployments (the control plane's deployment and
//!   replicaset controllers) and apps/v1 StatefulSets (its statefulset controller), 4 and 2 pods
//!   each on their zone's nodes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::collections::BTreeMap;
use std::time::Duration;

use e2e_common::{Kruise, cluster, eventually, is_unschedulable, label_zones, serve_namespace, unlabel_zones};
use k8s_openapi::api::core::v1::{Node, Pod};
use kruise::apis::CloneSet;
use kruise::apis::uniteddeployment::UnitedDeployment;
use kruise_testenv::{Share, WriteFault, eventually_ok};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const SUBSET_LABEL: &str = "apps.kruise.io/subset-name";

fn ud(zone_key: &str, replicas_a: Value, image: &str) -> UnitedDeployment {
    ud_of("cloneSetTemplate", json!({}), zone_key, replicas_a, image)
}

/// A UnitedDeployment of 6 over zone-a (`replicas_a`) and zone-b (the rest) whose template is
/// `template_key` (`cloneSetTemplate`, `advancedStatefulSetTemplate`, `statefulSetTemplate`,
/// `deploymentTemplate`), its workload spec the selector, the pod template and `extra`.
fn ud_of(template_key: &str, extra: Value, zone_key: &str, replicas_a: Value, image: &str) -> UnitedDeployment {
    let mut spec = json!({
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "main", "image": image}]}}});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        spec[k] = v;
    }
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 6,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {template_key: {"metadata": {"labels": {"app": "web"}}, "spec": spec}},
            "topology": {"subsets": [
                {"name": "zone-a", "replicas": replicas_a,
                 "nodeSelectorTerm": {"matchExpressions": [{"key": zone_key, "operator": "In", "values": ["a"]}]}},
                {"name": "zone-b",
                 "nodeSelectorTerm": {"matchExpressions": [{"key": zone_key, "operator": "In", "values": ["b"]}]}}]}
        }
    }))
    .unwrap()
}

/// Pods of the namespace by subset: (node, image, ready) of each live pod.
async fn pods_by_subset(pods: &Api<Pod>) -> BTreeMap<String, Vec<(String, String, bool)>> {
    let mut out: BTreeMap<String, Vec<(String, String, bool)>> = BTreeMap::new();
    let Ok(list) = pods.list(&ListParams::default().labels("app=web")).await else { return out };
    for p in list.items.into_iter().filter(|p| p.metadata.deletion_timestamp.is_none()) {
        let subset = p.metadata.labels.as_ref().and_then(|l| l.get(SUBSET_LABEL)).cloned().unwrap_or_default();
        let spec = p.spec.clone().unwrap_or_default();
        let ready = p
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
        let image = spec.containers.first().and_then(|c| c.image.clone()).unwrap_or_default();
        out.entry(subset).or_default().push((spec.node_name.unwrap_or_default(), image, ready));
    }
    out
}

/// Waits for `want` ready pods per subset, all running `image` on nodes of their zone.
async fn settled(
    pods: &Api<Pod>,
    zones: &BTreeMap<String, String>,
    want: &[(&str, usize)],
    image: &str,
    what: &str,
) -> BTreeMap<String, Vec<(String, String, bool)>> {
    eventually_ok(what, Duration::from_secs(300), || async {
        let by = pods_by_subset(pods).await;
        let total: usize = by.values().map(Vec::len).sum();
        let ok = want.iter().all(|(subset, n)| {
            let zone = if *subset == "zone-a" { "a" } else { "b" };
            by.get(*subset).is_some_and(|ps| {
                ps.len() == *n
                    && ps.iter().all(|(node, img, ready)| {
                        *ready && img == image && zones.get(node).map(String::as_str) == Some(zone)
                    })
            })
        });
        // The pods seen, by subset (node, image, ready), say what the wait was stuck on.
        if ok && total == want.iter().map(|w| w.1).sum::<usize>() { Ok(by) } else { Err(format!("{by:?}")) }
    })
    .await
}

/// The tests of this binary take turns: each points the cluster's webhook Service at its own
/// `kruise serve` and registers the webhooks with its own CA, so two at once would send each
/// other's pods to the wrong server (500s), and a finished test's to a stopped one.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_united_deployment_spreads_over_two_zones_and_rolls_out() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let c = cluster();
    let ns = c.namespace("e2e-ud").await.unwrap();
    let certs = tempfile::tempdir().unwrap();
    let (kruise, proxy, client) = serve_namespace(ns.name(), certs.path()).await;

    // Two zones over the simulated nodes, under a label key of this test's own.
    let zone_key = format!("e2e.kruise.io/{}", ns.name());
    let nodes_api: Api<Node> = Api::all(client.clone());
    let zones = label_zones(&nodes_api, &zone_key).await;

    let uds: Api<UnitedDeployment> = Api::namespaced(client.clone(), ns.name());
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let clonesets: Api<CloneSet> = Api::namespaced(client.clone(), ns.name());

    // 1. An invalid one is denied (the webhook may take a moment to be reachable).
    let too_many = ud(&zone_key, json!(7), "nginx:1.25");
    let denied = eventually("the validating webhook to deny", Duration::from_secs(60), || {
        let (uds, too_many) = (uds.clone(), too_many.clone());
        async move {
            match uds.create(&PostParams::default(), &too_many).await {
                Err(kube::Error::Api(e)) if e.message.contains("denied the request") => Some(e.message),
                Err(_) => None,
                Ok(_) => panic!("a UnitedDeployment asking 7 of 6 replicas was admitted"),
            }
        }
    })
    .await;
    assert!(denied.contains("admission webhook \"vuniteddeployment.kb.io\" denied the request"), "{denied}");
    assert!(
        denied.contains("spec.topology.subsets: Invalid value: 7: sum of indicated subset replicas 7 should not be greater than UnitedDeployment replicas 6"),
        "{denied}"
    );

    // 2. zone-a: 4, zone-b: the rest.
    let created = uds.create(&PostParams::default(), &ud(&zone_key, json!(4), "nginx:1.25")).await.unwrap();
    assert_eq!(created.spec.revision_history_limit, Some(10), "defaulted by the mutating webhook");
    assert_eq!(created.spec.update_strategy.type_, "Manual");
    let uid = created.metadata.uid.clone().unwrap();
    settled(&pods, &zones, &[("zone-a", 4), ("zone-b", 2)], "nginx:1.25", "4 pods in zone-a and 2 in zone-b").await;
    let sets = clonesets.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(sets.len(), 2, "one CloneSet per subset");
    for set in &sets {
        let subset = set.metadata.labels.as_ref().unwrap()[SUBSET_LABEL].clone();
        assert!(
            set.metadata.name.as_deref().unwrap().starts_with(&format!("web-{subset}-")),
            "{:?}",
            set.metadata.name
        );
        let owner = &set.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str(), owner.controller),
            ("UnitedDeployment", uid.as_str(), Some(true))
        );
        assert_eq!(set.spec.replicas, Some(if subset == "zone-a" { 4 } else { 2 }));
    }
    let status = eventually("the status to count 6 ready", Duration::from_secs(120), || async {
        let s = uds.get("web").await.ok()?.status?;
        (s.replicas == 6 && s.ready_replicas == 6 && s.updated_replicas == 6).then_some(s)
    })
    .await;
    assert_eq!(status.subset_replicas, [("zone-a".to_string(), 4), ("zone-b".to_string(), 2)].into());
    let first_revision = status.current_revision.clone();
    assert!(first_revision.starts_with("web-"), "{status:?}");

    // 3. A new image, with the CloneSet writes answered 409 three times and every watch cut.
    proxy.fail_writes(WriteFault::Conflict, Share::Next(3), &["clonesets"]);
    proxy.cut_watches();
    let patch = json!({"spec": {"template": {"cloneSetTemplate": {"spec": {"template": {"spec": {
        "containers": [{"name": "main", "image": "nginx:1.26"}]}}}}}}});
    uds.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    settled(&pods, &zones, &[("zone-a", 4), ("zone-b", 2)], "nginx:1.26", "both subsets rolled out").await;
    let status = eventually("the new revision promoted", Duration::from_secs(120), || async {
        let s = uds.get("web").await.ok()?.status?;
        let updated = s.update_status.as_ref()?.updated_revision.clone();
        // The subsets' CloneSet statuses settle one by one: wait for all of them.
        (updated != first_revision && s.current_revision == updated && s.updated_ready_replicas == 6 && s.replicas == 6)
            .then_some(s)
    })
    .await;
    assert_eq!(status.replicas, 6, "{status:?}");
    let counts = proxy.counts();
    assert!(counts.conflicts >= 1, "the fault happened: {counts:?}");
    proxy.heal_writes();

    // 4. The scale subresource: 8, zone-b taking the 2 more.
    let scale = json!({"spec": {"replicas": 8}});
    uds.patch_scale("web", &PatchParams::default(), &Patch::Merge(&scale)).await.unwrap();
    settled(&pods, &zones, &[("zone-a", 4), ("zone-b", 4)], "nginx:1.26", "zone-b scaled to 4").await;

    unlabel_zones(&nodes_api, &zone_key, &zones).await;
    drop(kruise);
}

/// A UnitedDeployment of 4 CloneSet pods (nginx:1.25) over `subsets` with the Adaptive strategy
/// `adaptive`.
fn adaptive_ud(adaptive: Value, subsets: Value) -> UnitedDeployment {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 4,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"cloneSetTemplate": {"metadata": {"labels": {"app": "web"}}, "spec": {
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                    "terminationGracePeriodSeconds": 0,
                    "containers": [{"name": "main", "image": "nginx:1.25"}]}}}}},
            "topology": {"scheduleStrategy": {"type": "Adaptive", "adaptive": adaptive}, "subsets": subsets}
        }
    }))
    .unwrap()
}

/// Adaptive scheduling (issue 34): subset `nowhere` asks for a node label no node has, so the
/// scheduler leaves its pods Pending (`PodScheduled=False`, `Unschedulable`); once they have waited
/// `rescheduleCriticalSeconds` the subset is marked unschedulable (its `Schedulable` condition
/// False) and its replicas move to subset `anywhere`, which ends with all 4 pods ready.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adaptive_scheduling_moves_replicas_off_a_subset_that_cannot_schedule() {
    let _turn = ONE_AT_A_TIME.lock().await;
    let c = cluster();
    let ns = c.namespace("e2e-ud-adaptive").await.unwrap();
    let certs = tempfile::tempdir().unwrap();
    let (kruise, _proxy, client) = serve_namespace(ns.name(), certs.path()).await;

    let key = format!("e2e.kruise.io/{}-nowhere", ns.name());
    let ud = adaptive_ud(
        json!({"rescheduleCriticalSeconds": 15}),
        json!([
            {"name": "nowhere", "maxReplicas": 2,
             "nodeSelectorTerm": {"matchExpressions": [{"key": key.clone(), "operator": "In", "values": ["x"]}]}},
            {"name": "anywhere",
             "nodeSelectorTerm": {"matchExpressions": [{"key": key.clone(), "operator": "DoesNotExist"}]}}]),
    );
    let uds: Api<UnitedDeployment> = Api::namespaced(client.clone(), ns.name());
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let clonesets: Api<CloneSet> = Api::namespaced(client.clone(), ns.name());
    eventually("the UnitedDeployment created", Duration::from_secs(60), || async {
        uds.create(&PostParams::default(), &ud).await.ok()
    })
    .await;

    // First the allocation puts 2 in `nowhere`, whose pods cannot be scheduled...
    eventually("pods of `nowhere` pending unschedulable", Duration::from_secs(120), || async {
        let list = pods.list(&ListParams::default().labels(&format!("{SUBSET_LABEL}=nowhere"))).await.ok()?;
        list.items.iter().any(is_unschedulable).then_some(())
    })
    .await;
    // ... then they move: `anywhere` runs all 4, `nowhere` is scaled to 0 and marked.
    let by = eventually("all 4 replicas in `anywhere`", Duration::from_secs(300), || async {
        let by = pods_by_subset(&pods).await;
        let anywhere = by.get("anywhere")?;
        (anywhere.len() == 4
            && anywhere.iter().all(|(node, _, ready)| *ready && !node.is_empty())
            && by.get("nowhere").is_none_or(Vec::is_empty))
        .then_some(by)
    })
    .await;
    assert_eq!(by.values().map(Vec::len).sum::<usize>(), 4, "{by:?}");
    let status = eventually("the status to show the move", Duration::from_secs(120), || async {
        let s = uds.get("web").await.ok()?.status?;
        (s.ready_replicas == 4 && s.subset_replicas.get("anywhere") == Some(&4)).then_some(s)
    })
    .await;
    assert_eq!(status.subset_replicas.get("nowhere"), Some(&0), "{status:?}");
    let nowhere = status.subset_statuses.iter().find(|s| s.name == "nowhere").expect("a status for `nowhere`");
    let cond = nowhere.conditions.iter().find(|c| c.type_ == "Schedulable").expect("a Schedulable condition");
    assert_eq!((cond.status.as_str(), cond.reason.as_str()), ("False", "reschedule"), "{status:?}");
    let sets = clonesets.list(&ListParams::default()).await.unwrap().items;
    let replicas: BTreeMap<String, Option<i32>> =
        sets.iter().map(|s| (s.metadata.labels.as_ref().unwrap()[SUBSET_LABEL].clone(), s.spec.replicas)).collect();
    assert_eq!(replicas, [("anywhere".to_string(), Some(4)), ("nowhere".to_string(), Some(0))].into());
    drop(kruise);
}

/// Adaptive scheduling with `reserveUnschedulablePods` (issue 34, kruise's reservation strategy):
/// subset `late` asks for zone `a` of a label key no node has yet, so its 2 pods stay Pending; once
/// they have waited `rescheduleCriticalSeconds` they are labelled reserved (not deleted), `late`
/// is marked unschedulable and `anywhere` runs all 4 replicas (2 temporary); the status counts
/// 4 replicas and 2 reserved pods and its selector leaves reserved pods out. Then the nodes are
/// labelled into zones: the same 2 pods are scheduled, run for `unschedulableDuration`, are let
/// go (labelled `false`), `late` is schedulable again and `anywhere` shrinks back to 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reservation_keeps_unschedulable_pods_until_their_subset_recovers() {
    const RESERVED: &str = "apps.kruise.io/united-deployment-reserved-pod";
    let _turn = ONE_AT_A_TIME.lock().await;
    let c = cluster();
    let ns = c.namespace("e2e-ud-reserve").await.unwrap();
    let certs = tempfile::tempdir().unwrap();
    let (kruise, _proxy, client) = serve_namespace(ns.name(), certs.path()).await;

    let key = format!("e2e.kruise.io/{}", ns.name());
    let ud = adaptive_ud(
        json!({"rescheduleCriticalSeconds": 10, "unschedulableDuration": 20, "reserveUnschedulablePods": true}),
        json!([
            {"name": "late", "maxReplicas": 2,
             "nodeSelectorTerm": {"matchExpressions": [{"key": key.clone(), "operator": "In", "values": ["a"]}]}},
            {"name": "anywhere",
             "nodeSelectorTerm": {"matchExpressions": [{"key": key.clone(), "operator": "NotIn", "values": ["a"]}]}}]),
    );
    let uds: Api<UnitedDeployment> = Api::namespaced(client.clone(), ns.name());
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let clonesets: Api<CloneSet> = Api::namespaced(client.clone(), ns.name());
    eventually("the UnitedDeployment created", Duration::from_secs(60), || async {
        uds.create(&PostParams::default(), &ud).await.ok()
    })
    .await;
    // (uid, reserved label, ready) of the live pods of a subset.
    let subset_pods = |subset: &'static str| {
        let pods = pods.clone();
        async move {
            let list = pods.list(&ListParams::default().labels(&format!("{SUBSET_LABEL}={subset}"))).await.ok()?;
            let mut out: Vec<(String, String, bool)> = list
                .items
                .into_iter()
                .filter(|p| p.metadata.deletion_timestamp.is_none())
                .map(|p| {
                    let label = p.metadata.labels.as_ref().and_then(|l| l.get(RESERVED)).cloned().unwrap_or_default();
                    let ready = p
                        .status
                        .as_ref()
                        .and_then(|s| s.conditions.as_ref())
                        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
                    (p.metadata.uid.unwrap_or_default(), label, ready)
                })
                .collect();
            out.sort();
            Some(out)
        }
    };

    // `late`'s pods are reserved and kept; `anywhere` runs all 4.
    let kept = eventually("`late`'s 2 pods reserved and `anywhere` running 4", Duration::from_secs(300), || async {
        let late = subset_pods("late").await?;
        let anywhere = subset_pods("anywhere").await?;
        (late.len() == 2
            && late.iter().all(|(_, label, ready)| label == "true" && !ready)
            && anywhere.len() == 4
            && anywhere.iter().all(|(_, label, ready)| label == "false" && *ready))
        .then_some(late)
    })
    .await;
    let status = eventually("the status to count the reserved pods", Duration::from_secs(120), || async {
        let s = uds.get("web").await.ok()?.status?;
        (s.reserved_pods == 2 && s.replicas == 4).then_some(s)
    })
    .await;
    assert_eq!(status.label_selector, format!("app=web,{RESERVED}=false"), "{status:?}");
    let late = status.subset_statuses.iter().find(|s| s.name == "late").expect("a status for `late`");
    assert_eq!(late.reserved_pods, 2, "{status:?}");
    let cond = late.conditions.iter().find(|c| c.type_ == "Schedulable").expect("a Schedulable condition");
    assert_eq!((cond.status.as_str(), cond.message.as_str()), ("False", "reserved pods found"), "{status:?}");
    let replicas = |sets: Vec<CloneSet>| -> BTreeMap<String, Option<i32>> {
        sets.iter().map(|s| (s.metadata.labels.as_ref().unwrap()[SUBSET_LABEL].clone(), s.spec.replicas)).collect()
    };
    let sets = clonesets.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(replicas(sets), [("anywhere".to_string(), Some(4)), ("late".to_string(), Some(2))].into());

    // Zone a appears: the reserved pods run, are let go, and the temporary pods go.
    let nodes_api: Api<Node> = Api::all(client.clone());
    let zones = label_zones(&nodes_api, &key).await;
    let late = eventually("`late`'s pods working and `anywhere` back to 2", Duration::from_secs(300), || async {
        let late = subset_pods("late").await?;
        let anywhere = subset_pods("anywhere").await?;
        (late.len() == 2
            && late.iter().all(|(_, label, ready)| label == "false" && *ready)
            && anywhere.len() == 2
            && anywhere.iter().all(|(_, label, ready)| label == "false" && *ready))
        .then_some(late)
    })
    .await;
    let uids = |v: &[(String, String, bool)]| v.iter().map(|p| p.0.clone()).collect::<Vec<_>>();
    assert_eq!(uids(&late), uids(&kept), "the reserved pods were kept, not replaced");
    let status = eventually("the status to show the recovery", Duration::from_secs(120), || async {
        let s = uds.get("web").await.ok()?.status?;
        (s.reserved_pods == 0 && s.replicas == 4 && s.ready_replicas == 4).then_some(s)
    })
    .await;
    let late = status.subset_statuses.iter().find(|s| s.name == "late").expect("a status for `late`");
    let cond = late.conditions.iter().find(|c| c.type_ == "Schedulable").expect("a Schedulable condition");
    assert_eq!(cond.status, "True", "{status:?}");
    let sets = clonesets.list(&ListParams::default()).await.unwrap().items;
    assert_eq!(replicas(sets), [("anywhere".to_string(), Some(2)), ("late".to_string(), Some(2))].into());
    unlabel_zones(&nodes_api, &key, &zones).await;
    drop(kruise);
}

/// What [`two_zones`] sets up; the proxy lives as long as the test (kruise talks through it).
struct Zones {
    kruise: Kruise,
    _proxy: kruise_testenv::FaultProxy,
    client: kube::Client,
    zone_key: String,
    zones: BTreeMap<String, String>,
}

/// A `kruise serve` of its own on `ns` (its webhooks registered) and the simulated nodes split
/// into zones `a` and `b` under a label key of `ns`'s own.
async fn two_zones(ns: &str, certs: &std::path::Path) -> Zones {
    let (kruise, proxy, client) = serve_namespace(ns, certs).await;
    let zone_key = format!("e2e.kruise.io/{ns}");
    let nodes_api: Api<Node> = Api::all(client.clone());
    let zones = label_zones(&nodes_api, &zone_key).await;
    Zones { kruise, _proxy: proxy, client, zone_key, zones }
}

async fn unlabel(client: &kube::Client, zone_key: &str, zones: &BTreeMap<String, String>) {
    unlabel_zones(&Api::all(client.clone()), zone_key, zones).await;
}

/// The workloads of `K` in the namespace by subset: (name, spec replicas, controller uid).
async fn subset_workloads<K>(api: &Api<K>) -> BTreeMap<String, (String, Option<i32>, String)>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + serde::Serialize,
{
    let mut out = BTreeMap::new();
    for w in api.list(&ListParams::default()).await.unwrap().items {
        let v = serde_json::to_value(&w).unwrap();
        let subset = v["metadata"]["labels"][SUBSET_LABEL].as_str().unwrap_or_default().to_string();
        let owner = v["metadata"]["ownerReferences"]
            .as_array()
            .and_then(|refs| refs.iter().find(|r| r["controller"] == true && r["kind"] == "UnitedDeployment"))
            .and_then(|r| r["uid"].as_str())
            .unwrap_or_default()
            .to_string();
        let replicas = v["spec"]["replicas"].as_i64().map(|r| r as i32);
        out.insert(subset, (v["metadata"]["name"].as_str().unwrap_or_default().to_string(), replicas, owner));
    }
    out
}

fn assert_subsets(by: &BTreeMap<String, (String, Option<i32>, String)>, uid: &str, what: &str) {
    assert_eq!(by.len(), 2, "{what}: one per subset: {by:?}");
    for (subset, (name, replicas, owner)) in by {
        assert!(name.starts_with(&format!("web-{subset}-")), "{what}: {name}");
        assert_eq!(owner, uid, "{what}: {name} is controlled by the UnitedDeployment");
        assert_eq!(*replicas, Some(if subset == "zone-a" { 4 } else { 2 }), "{what}: {name}");
    }
}

/// Issue 34: a UnitedDeployment of 6 with an `advancedStatefulSetTemplate` creates two Advanced
/// StatefulSets (zone-a 4, zone-b 2) run by kruise's own StatefulSet controller, each pod on a
/// node of its zone; a new image rolls both out and the status promotes the new revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advanced_statefulset_subsets_spread_over_two_zones_and_roll_out() {
    use kruise::apis::statefulset::v1beta1::StatefulSet as AdvancedStatefulSet;
    let _turn = ONE_AT_A_TIME.lock().await;
    let ns = cluster().namespace("e2e-ud-asts").await.unwrap();
    let certs = tempfile::tempdir().unwrap();
    let Zones { kruise, _proxy, client, zone_key, zones } = two_zones(ns.name(), certs.path()).await;
    let uds: Api<UnitedDeployment> = Api::namespaced(client.clone(), ns.name());
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let sets: Api<AdvancedStatefulSet> = Api::namespaced(client.clone(), ns.name());
    let extra = json!({"podManagementPolicy": "Parallel"});
    let ud = ud_of("advancedStatefulSetTemplate", extra, &zone_key, json!(4), "nginx:1.25");
    let created = eventually("the UnitedDeployment created", Duration::from_secs(60), || async {
        uds.create(&PostParams::default(), &ud).await.ok()
    })
    .await;
    let uid = created.metadata.uid.clone().unwrap();
    settled(&pods, &zones, &[("zone-a", 4), ("zone-b", 2)], "nginx:1.25", "4 pods in zone-a and 2 in zone-b").await;
    assert_subsets(&subset_workloads(&sets).await, &uid, "Advanced StatefulSets");
    let first = eventually("the status to count 6 ready", Duration::from_secs(120), || async {
        let s = uds.get("web").await.ok()?.status?;
        (s.replicas == 6 && s.ready_replicas == 6 && s.updated_ready_replicas == 6).then_some(s.current_revision)
    })
    .await;

    let patch = json!({"spec": {"template": {"advancedStatefulSetTemplate": {"spec": {"template": {"spec": {
        "containers": [{"name": "main", "image": "nginx:1.26"}]}}}}}}});
    uds.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    settled(&pods, &zones, &[("zone-a", 4), ("zone-b", 2)], "nginx:1.26", "both subsets rolled out").await;
    let status = eventually("the new revision promoted", Duration::from_secs(120), || async {
        let s = uds.get("web").await.ok()?.status?;
        let updated = s.update_status.as_ref()?.updated_revision.clone();
        (updated != first && s.current_revision == updated && s.updated_ready_replicas == 6 && s.replicas == 6)
            .then_some(s)
    })
    .await;
    assert_eq!(status.subset_replicas, [("zone-a".to_string(), 4), ("zone-b".to_string(), 2)].into());
    assert_subsets(&subset_workloads(&sets).await, &uid, "Advanced StatefulSets after the rollout");
    unlabel(&client, &zone_key, &zones).await;
    drop(kruise);
}

/// Issue 34: a UnitedDeployment of 6 with a `deploymentTemplate` creates two Deployments (zone-a
/// 4, zone-b 2) that the control plane's deployment and replicaset controllers run, each pod on a
/// node of its zone, and counts their 6 ready pods.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployment_subsets_spread_over_two_zones() {
    use k8s_openapi::api::apps::v1::Deployment;
    native_subsets_spread_over_two_zones::<Deployment>("e2e-ud-deploy", "deploymentTemplate", json!({}), "Deployments")
        .await;
}

/// Issue 34: a UnitedDeployment of 6 with a `statefulSetTemplate` creates two apps/v1
/// StatefulSets (zone-a 4, zone-b 2) that the control plane's statefulset controller runs, each
/// pod on a node of its zone, and counts their 6 ready pods.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statefulset_subsets_spread_over_two_zones() {
    use k8s_openapi::api::apps::v1::StatefulSet;
    let extra = json!({"podManagementPolicy": "Parallel", "serviceName": "web"});
    native_subsets_spread_over_two_zones::<StatefulSet>("e2e-ud-sts", "statefulSetTemplate", extra, "StatefulSets")
        .await;
}

/// The two apps/v1 template tests: a UnitedDeployment of 6 with `template` (its spec extended by
/// `extra`) puts 4 pods in zone-a and 2 in zone-b through two workloads of `K` it controls, and
/// its status counts 6 ready with subset replicas 4 and 2.
async fn native_subsets_spread_over_two_zones<K>(ns_prefix: &str, template: &str, extra: Value, what: &str)
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope, DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + serde::Serialize,
{
    let _turn = ONE_AT_A_TIME.lock().await;
    let ns = cluster().namespace(ns_prefix).await.unwrap();
    let certs = tempfile::tempdir().unwrap();
    let Zones { kruise, _proxy, client, zone_key, zones } = two_zones(ns.name(), certs.path()).await;
    let uds: Api<UnitedDeployment> = Api::namespaced(client.clone(), ns.name());
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let workloads: Api<K> = Api::namespaced(client.clone(), ns.name());
    let ud = ud_of(template, extra, &zone_key, json!(4), "nginx:1.25");
    let created = eventually("the UnitedDeployment created", Duration::from_secs(60), || async {
        uds.create(&PostParams::default(), &ud).await.ok()
    })
    .await;
    let uid = created.metadata.uid.clone().unwrap();
    settled(&pods, &zones, &[("zone-a", 4), ("zone-b", 2)], "nginx:1.25", "4 pods in zone-a and 2 in zone-b").await;
    assert_subsets(&subset_workloads(&workloads).await, &uid, what);
    let status = eventually("the status to count 6 ready", Duration::from_secs(120), || async {
        let s = uds.get("web").await.ok()?.status?;
        (s.replicas == 6 && s.ready_replicas == 6 && s.updated_ready_replicas == 6).then_some(s)
    })
    .await;
    assert_eq!(status.subset_replicas, [("zone-a".to_string(), 4), ("zone-b".to_string(), 2)].into());
    unlabel(&client, &zone_key, &zones).await;
    drop(kruise);
}
