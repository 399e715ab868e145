//! The Advanced DaemonSet controller end to end (issue 33 item 2) on the real control plane of
//! `testenv/`: `kruise serve` running with exactly the rights `deploy/rbac.yaml` gives it, the
//! real scheduler binding the daemon pods (bound to their node by node affinity, as upstream's),
//! and the simulated kubelet of the 3 nodes running them. Scenarios, in one test so that one
//! manager serves them all:
//! - InPlaceIfPossible with `partition: 1`: an image change updates 2 pods in place (same uids,
//!   restarted containers) and leaves 1 at the old image; the status counts 2 updated;
//! - `rollingUpdate.selector` naming one node: only that node's pod is updated; without the
//!   selector the others follow;
//! - a node that becomes eligible later (a label the set's `nodeSelector` asks for) gets its pod,
//!   and loses it when it is no longer eligible;
//! - image pre-download (the manager runs with gate `PreDownloadImageForDaemonSetUpdate`): an
//!   image change of a set updated in two batches creates exactly one ImagePullJob with the new
//!   image and the parallelism annotation's value, deleted once the rollout completes;
//! - a fourth node added to the running cluster (`Kubelet::add_node`) gets exactly one pod,
//!   running and ready, and the status counts 4; once the node is removed the status counts 3
//!   again, and the pod left there (kruise, as upstream, leaves it to the pod garbage collector)
//!   goes when it is collected.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::collections::BTreeMap;
use std::time::Duration;

use e2e_common::{Kruise, cluster, install, manager_kubeconfig};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise::apis::daemonset::v1beta1::DaemonSet;
use kruise::apis::imagepulljob::v1beta1::ImagePullJob;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(120);

async fn poll<T, F, Fut>(what: &str, check: F) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// A DaemonSet `name` as its mutating webhook would leave it, `rolling` as its
/// `rollingUpdate`, `extra` merged into the template's spec.
fn daemon_set(name: &str, image: &str, rolling: Value, extra: Value) -> DaemonSet {
    let mut spec = json!({"containers": [{"name": "main", "image": image}]});
    if let (Value::Object(a), Value::Object(b)) = (&mut spec, extra) {
        a.extend(b);
    }
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling},
            "revisionHistoryLimit": 10,
        }
    }))
    .unwrap()
}

fn image(p: &Pod) -> &str {
    p.spec.as_ref().and_then(|s| s.containers.first()).and_then(|c| c.image.as_deref()).unwrap_or("")
}

fn running_image(p: &Pod) -> &str {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .map_or("", |c| c.image.as_str())
}

fn ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn node_of(p: &Pod) -> String {
    p.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default()
}

/// The live pods of set `name`, by node; `None` unless each is scheduled, ready and running
/// what its spec says.
async fn settled(pods: &Api<Pod>, name: &str, nodes: usize) -> Option<BTreeMap<String, Pod>> {
    let list = pods.list(&ListParams::default().labels(&format!("app={name}"))).await.ok()?.items;
    let live: Vec<Pod> = list.into_iter().filter(|p| p.metadata.deletion_timestamp.is_none()).collect();
    // The kubelet reports images normalized (`docker.io/library/busybox:1.36`).
    let runs_spec = |p: &Pod| running_image(p) == image(p) || running_image(p).ends_with(&format!("/{}", image(p)));
    if live.len() != nodes || !live.iter().all(|p| ready(p) && !node_of(p).is_empty() && runs_spec(p)) {
        return None;
    }
    let by: BTreeMap<String, Pod> = live.into_iter().map(|p| (node_of(&p), p)).collect();
    (by.len() == nodes).then_some(by)
}

/// Waits for set `name`'s status to count `updated` updated of `desired`, the generation
/// observed, and its pods settled.
async fn rolled(
    sets: &Api<DaemonSet>,
    pods: &Api<Pod>,
    name: &str,
    desired: i32,
    updated: i32,
) -> BTreeMap<String, Pod> {
    let last = std::sync::Mutex::new(String::new());
    poll(&format!("{name}: {updated} of {desired} updated"), || async {
        let ds = sets.get(name).await.ok()?;
        let listed = pods.list(&ListParams::default().labels(&format!("app={name}"))).await.ok()?.items;
        let seen = format!(
            "{name} status {:?}; pods {:?}",
            ds.status,
            listed
                .iter()
                .map(|p| (p.metadata.name.clone(), node_of(p), image(p), running_image(p), ready(p)))
                .collect::<Vec<_>>()
        );
        {
            let mut last = last.lock().unwrap();
            if *last != seen {
                eprintln!("{seen}");
                *last = seen;
            }
        }
        let s = ds.status.clone()?;
        let done = s.observed_generation == ds.metadata.generation.unwrap_or(0)
            && s.desired_number_scheduled == desired
            && s.current_number_scheduled == desired
            && s.updated_number_scheduled == updated
            && s.number_ready == desired;
        if !done {
            return None;
        }
        settled(pods, name, desired as usize).await
    })
    .await
}

async fn set_image(sets: &Api<DaemonSet>, name: &str, image: &str) {
    let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": image}]}}}});
    sets.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
}

async fn label_node(nodes: &Api<Node>, node: &str, key: &str, value: Option<&str>) {
    let patch = json!({"metadata": {"labels": {key: value}}});
    nodes.patch(node, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn advanced_daemon_sets_update_in_place_by_partition_and_selector_and_follow_nodes() {
    let c = cluster();
    let dir = tempfile::tempdir().unwrap();
    let certs = tempfile::tempdir().unwrap();
    let kubeconfig = manager_kubeconfig(dir.path()).await;
    let log = std::env::var("KRUISE_E2E_LOG").unwrap_or_else(|_| "warn".into());
    let made = std::process::Command::new(env!("CARGO_BIN_EXE_kruise"))
        .args(["certs", "--out"])
        .arg(certs.path())
        .status()
        .unwrap();
    assert!(made.success());
    let gates = ["--feature-gates", "PreDownloadImageForDaemonSetUpdate=true"];
    let kruise = Kruise::spawn(certs.path(), &kubeconfig, &gates, &log);
    install(&[&kruise]).await;
    let client = c.client().await.unwrap();
    let node_api: Api<Node> = Api::all(client.clone());
    let node_names: Vec<String> = node_api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert_eq!(node_names.len(), 3, "{node_names:?}");
    let ns = c.namespace("e2e-ads").await.unwrap();
    let sets: Api<DaemonSet> = Api::namespaced(client.clone(), ns.name());
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let gate = json!({"readinessGates": [{"conditionType": "InPlaceUpdateReady"}]});

    // 1. InPlaceIfPossible, partition 1: two pods updated in place, one left.
    let rolling = json!({"rollingUpdateType": "InPlaceIfPossible", "maxUnavailable": 1, "partition": 1});
    sets.create(&PostParams::default(), &daemon_set("agent", "busybox:1.36", rolling, gate.clone())).await.unwrap();
    let before = rolled(&sets, &pods, "agent", 3, 3).await;
    for p in before.values() {
        let hash = p.metadata.labels.as_ref().unwrap()["controller-revision-hash"].clone();
        assert_eq!(p.metadata.generate_name.as_deref(), Some("agent-"));
        let rev = format!("agent-{hash}");
        let revisions: Api<k8s_openapi::api::apps::v1::ControllerRevision> = Api::namespaced(client.clone(), ns.name());
        assert!(revisions.get(&rev).await.is_ok(), "revision {rev}");
    }
    set_image(&sets, "agent", "busybox:1.37").await;
    let after = rolled(&sets, &pods, "agent", 3, 2).await;
    let uids = |m: &BTreeMap<String, Pod>| -> BTreeMap<String, String> {
        m.iter().map(|(n, p)| (n.clone(), p.metadata.uid.clone().unwrap())).collect()
    };
    assert_eq!(uids(&before), uids(&after), "the pods were updated in place");
    let images: Vec<&str> = after.values().map(image).collect();
    assert_eq!(images.iter().filter(|i| **i == "busybox:1.37").count(), 2, "{images:?}");
    assert_eq!(images.iter().filter(|i| **i == "busybox:1.36").count(), 1, "{images:?}");
    // partition counts from the last node by name: the first one keeps the old image.
    assert_eq!(image(&after[&node_names.iter().min().unwrap().clone()]), "busybox:1.36");
    sets.delete("agent", &Default::default()).await.unwrap();

    // 2. The selector names one node: only its pod is updated; without it the others follow.
    let target = node_names[1].clone();
    let rolling = json!({"rollingUpdateType": "InPlaceIfPossible", "maxUnavailable": 3,
        "selector": {"matchLabels": {"kubernetes.io/hostname": target}}});
    sets.create(&PostParams::default(), &daemon_set("canary", "busybox:1.36", rolling, gate.clone())).await.unwrap();
    let before = rolled(&sets, &pods, "canary", 3, 3).await;
    set_image(&sets, "canary", "busybox:1.37").await;
    let after = rolled(&sets, &pods, "canary", 3, 1).await;
    for (node, p) in &after {
        let want = if *node == target { "busybox:1.37" } else { "busybox:1.36" };
        assert_eq!(image(p), want, "{node}");
        assert_eq!(p.metadata.uid, before[node].metadata.uid);
    }
    let patch = json!({"spec": {"updateStrategy": {"rollingUpdate": {"selector": null}}}});
    sets.patch("canary", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    let all = rolled(&sets, &pods, "canary", 3, 3).await;
    assert!(all.values().all(|p| image(p) == "busybox:1.37"));
    sets.delete("canary", &Default::default()).await.unwrap();

    // 3. A node that becomes eligible gets its pod, and loses it when it no longer is.
    let key = format!("e2e-ads.kruise.io/{}", ns.name());
    for n in &node_names[..2] {
        label_node(&node_api, n, &key, Some("on")).await;
    }
    let rolling = json!({"maxUnavailable": 1});
    let selector = json!({"nodeSelector": {key.clone(): "on"}});
    sets.create(&PostParams::default(), &daemon_set("follow", "busybox:1.36", rolling, selector)).await.unwrap();
    let two = rolled(&sets, &pods, "follow", 2, 2).await;
    assert!(!two.contains_key(&node_names[2]));
    label_node(&node_api, &node_names[2], &key, Some("on")).await;
    let three = rolled(&sets, &pods, "follow", 3, 3).await;
    assert!(three.contains_key(&node_names[2]));
    label_node(&node_api, &node_names[2], &key, None).await;
    let back = rolled(&sets, &pods, "follow", 2, 2).await;
    assert!(!back.contains_key(&node_names[2]));
    for n in &node_names[..2] {
        label_node(&node_api, n, &key, None).await;
    }
    sets.delete("follow", &Default::default()).await.unwrap();

    // 4. Image pre-download: one job for the changed image while the rollout is partitioned,
    // none before (the first revision of a set scheduling nothing yet is ignored), deleted once
    // the rollout completes.
    let jobs: Api<ImagePullJob> = Api::namespaced(client.clone(), ns.name());
    let owned_jobs = || async {
        let all = jobs.list(&ListParams::default()).await.unwrap().items;
        all.into_iter()
            .filter(|j| {
                j.metadata.owner_references.iter().flatten().any(|o| o.kind == "DaemonSet" && o.name == "predl")
            })
            .collect::<Vec<_>>()
    };
    let rolling = json!({"rollingUpdateType": "InPlaceIfPossible", "maxUnavailable": 1, "partition": 1});
    let mut set = daemon_set("predl", "busybox:1.36", rolling, gate.clone());
    set.metadata.annotations = Some([("apps.kruise.io/image-predownload-parallelism".into(), "2".into())].into());
    sets.create(&PostParams::default(), &set).await.unwrap();
    rolled(&sets, &pods, "predl", 3, 3).await;
    assert!(owned_jobs().await.is_empty(), "no job while nothing rolls out");
    set_image(&sets, "predl", "busybox:1.37").await;
    let job = poll("one ImagePullJob of predl", || async {
        let j = owned_jobs().await;
        (j.len() == 1).then(|| j[0].clone())
    })
    .await;
    let rolled_two = rolled(&sets, &pods, "predl", 3, 2).await;
    let hash = rolled_two.values().map(|p| p.metadata.labels.as_ref().unwrap()["controller-revision-hash"].clone());
    let updated = sets.get("predl").await.unwrap().status.unwrap().update_revision;
    assert!(hash.clone().any(|h| h == updated), "{updated}");
    assert_eq!(job.metadata.name.as_deref(), Some(format!("predl-{updated}-main").as_str()));
    assert_eq!(job.spec.fields.image, "busybox:1.37");
    assert_eq!(job.spec.fields.parallelism, Some(IntOrString::Int(2)));
    let owner = &job.metadata.owner_references.clone().unwrap()[0];
    assert_eq!(
        (owner.api_version.as_str(), owner.kind.as_str(), owner.controller),
        ("apps.kruise.io/v1beta1", "DaemonSet", Some(true))
    );
    assert_eq!(owned_jobs().await.len(), 1, "exactly one job");
    let patch = json!({"spec": {"updateStrategy": {"rollingUpdate": {"partition": 0}}}});
    sets.patch("predl", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    rolled(&sets, &pods, "predl", 3, 3).await;
    poll("the job deleted", || async { owned_jobs().await.is_empty().then_some(()) }).await;
    sets.delete("predl", &Default::default()).await.unwrap();

    // 5. A node added to the running cluster gets exactly one pod, running and ready; removed,
    // the status counts 3 again and its pod goes once the pod garbage collector's work is done.
    // The node's taint keeps every other set off it.
    let taint_key = "e2e-ads.kruise.io/added";
    let taint = json!({"key": taint_key, "value": ns.name(), "effect": "NoSchedule"});
    let tolerate = json!({"tolerations": [{"key": taint_key, "operator": "Exists", "effect": "NoSchedule"}]});
    let rolling = json!({"maxUnavailable": 1});
    sets.create(&PostParams::default(), &daemon_set("grow", "busybox:1.36", rolling, tolerate)).await.unwrap();
    let three = rolled(&sets, &pods, "grow", 3, 3).await;
    let added = kruise_testenv::Kubelet::add_node(client.clone(), ADDED_NODE, 100, &BTreeMap::new(), &[taint], None)
        .await
        .unwrap();
    let four = rolled(&sets, &pods, "grow", 4, 4).await;
    let on_added = &four[ADDED_NODE];
    assert!(ready(on_added), "{:?}", on_added.status);
    for (node, p) in &three {
        assert_eq!(four[node].metadata.uid, p.metadata.uid, "the pod of {node} stays");
    }
    let status = sets.get("grow").await.unwrap().status.unwrap();
    assert_eq!(status.number_available, 4, "{status:?}");
    let on_node = |all: Vec<Pod>| all.into_iter().filter(|p| node_of(p) == ADDED_NODE).count();
    let listed = pods.list(&ListParams::default().labels("app=grow")).await.unwrap().items;
    assert_eq!(on_node(listed), 1, "exactly one pod on {ADDED_NODE}");
    let orphan = on_added.metadata.name.clone().unwrap();
    added.remove().await.unwrap();
    // The node gone, the status counts 3 at once; the pod bound to it is left to the pod
    // garbage collector (kruise's manage deletes only unscheduled pods of absent nodes).
    poll("grow: the status counts 3 once the node is gone", || async {
        let s = sets.get("grow").await.ok()?.status?;
        (s.desired_number_scheduled == 3 && s.current_number_scheduled == 3 && s.number_ready == 3).then_some(())
    })
    .await;
    let left = pods.get(&orphan).await.unwrap();
    assert!(left.metadata.deletion_timestamp.is_none(), "kruise leaves the pod of a gone node to the pod GC");
    let collected = kruise_testenv::kubelet::nodes::collect_orphans(&client, ADDED_NODE).await.unwrap();
    assert_eq!(collected, 1, "the one pod of {ADDED_NODE}");
    poll("the pod of the removed node deleted", || async {
        matches!(pods.get_opt(&orphan).await, Ok(None)).then_some(())
    })
    .await;
    let back = rolled(&sets, &pods, "grow", 3, 3).await;
    assert!(!back.contains_key(ADDED_NODE));
    for (node, p) in &three {
        assert_eq!(back[node].metadata.uid, p.metadata.uid, "the pod of {node} stays");
    }
    sets.delete("grow", &Default::default()).await.unwrap();

    drop(kruise);
}

/// The node scenario 5 adds to the running cluster.
const ADDED_NODE: &str = "kruise-node-added-ads";
