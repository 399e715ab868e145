//! Benchmark (issue 33): the Advanced DaemonSet controller over NODES Node objects (default 500)
//! on the real control plane of `testenv/`, their pods run by a fake kubelet in this process,
//! rolled out in place.
//!
//! `cargo run --example daemonset_scale -- [NODES] [MAX_UNAVAILABLE]` creates NODES Nodes
//! (`bench=ads`, Ready, their Leases renewed by testenv's node heartbeat so the node-lifecycle
//! controller keeps them Ready), creates an Advanced DaemonSet selecting them (`nodeSelector
//! bench=ads`, `rollingUpdateType: InPlaceIfPossible`, `maxUnavailable` MAX_UNAVAILABLE, default
//! 20%), waits until every node runs a ready pod, then changes the image and waits until every pod
//! is updated and ready again. The real scheduler binds the pods (they carry upstream's node
//! affinity); the fake kubelet watches the namespace's pods and reports each bound pod Running
//! with its containers at their spec image (a new image: a new imageID and a restart), Ready when
//! every readiness gate is True. It reports for the creation and for the rollout: wall time, the
//! controller's reconciles, its API writes by kind and per pod, its CPU time, and its resident
//! memory. Nothing is asserted about speed.
//!
//! The controller runs in a child process of its own ([`rollout_support`](rollout_support/mod.rs)'s
//! `Controller`, on a current-thread runtime, with the `kruise` binary's allocator), so the CPU and
//! memory figures are its alone. The cluster, the nodes, the fake kubelet's loop and the report are
//! [`node_bench`](node_bench/mod.rs)'s, shared with `broadcastjob_scale`.
//!
//! One run (debug build, 500 nodes, `maxUnavailable` 20%, on a 2-core machine shared with other
//! builds): creation 500 pods in 72 s, 2.01 writes per pod (create, `InPlaceUpdateReady` True),
//! controller CPU 4.2 s (8.5 ms per pod); in-place rollout 103 s, 3.03 writes per pod (readiness
//! False, the images, readiness True), CPU 5.9 s (11.8 ms per pod), 500/500 pods kept their uid;
//! RSS peak 59 MiB; idle afterwards 0 reconciles.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

#[path = "rollout_support/mod.rs"]
mod rollout_support;

#[path = "node_bench/mod.rs"]
mod node_bench;

use std::collections::BTreeMap;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kruise::apis::daemonset::v1beta1::DaemonSet;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use node_bench::{BenchNodes, fake_kubelet, now_string, report, wait_until};
use rollout_support::Controller;
use serde_json::{Value, json};

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: kruise_alloc::Mimalloc = kruise_alloc::Mimalloc;

const LABEL: (&str, &str) = ("bench", "ads");

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if rollout_support::run_child(&args, kruise::controller::daemonset::run_alone) {
        return;
    }
    let nodes = args.first().and_then(|a| a.parse().ok()).unwrap_or(500);
    let max_unavailable = args.get(1).cloned().unwrap_or_else(|| "20%".into());
    rollout_support::block_on(drive(nodes, max_unavailable));
}

/// The status the fake kubelet reports for `pod`, or `None` when it has it already.
fn kubelet_status(pod: &Pod) -> Option<Value> {
    let spec = pod.spec.as_ref()?;
    spec.node_name.as_ref()?;
    let status = pod.status.clone().unwrap_or_default();
    let old = status.container_statuses.clone().unwrap_or_default();
    let mut changed = status.phase.as_deref() != Some("Running");
    let started = json!({"running": {"startedAt": now_string()}});
    let containers: Vec<Value> = spec
        .containers
        .iter()
        .map(|c| {
            let image = c.image.clone().unwrap_or_default();
            let prev = old.iter().find(|s| s.name == c.name);
            let restarts = match prev {
                Some(s) if s.image == image => s.restart_count,
                Some(s) => {
                    changed = true;
                    s.restart_count + 1
                }
                None => {
                    changed = true;
                    0
                }
            };
            json!({"name": c.name, "image": image, "imageID": format!("sha-{image}"), "ready": true,
                "restartCount": restarts, "started": true, "state": started})
        })
        .collect();
    let conditions = status.conditions.clone().unwrap_or_default();
    let gates_ok = spec
        .readiness_gates
        .iter()
        .flatten()
        .all(|g| conditions.iter().any(|c| c.type_ == g.condition_type && c.status == "True"));
    let ready = if gates_ok { "True" } else { "False" };
    let has = |t: &str, s: &str| conditions.iter().any(|c| c.type_ == t && c.status == s);
    changed |= !has("Ready", ready) || !has("ContainersReady", "True");
    if !changed {
        return None;
    }
    let now = now_string();
    let cond = |t: &str, s: &str| json!({"type": t, "status": s, "lastTransitionTime": now});
    Some(json!({"status": {"phase": "Running", "podIP": "10.0.0.1", "startTime": now,
        "containerStatuses": containers,
        "conditions": [cond("PodScheduled", "True"), cond("Initialized", "True"),
            cond("ContainersReady", "True"), cond("Ready", ready)]}}))
}

async fn drive(nodes: usize, max_unavailable: String) {
    let (cluster, client, ns) = node_bench::cluster("bench-ads").await;
    let ns = ns.name().to_string();
    println!("an Advanced DaemonSet over {nodes} Nodes, maxUnavailable {max_unavailable}, in place");
    let bench_nodes = BenchNodes::register(&client, LABEL, "bench-ads-node", 1000, "198.18", nodes).await;

    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let fake = tokio::spawn(fake_kubelet(pods.clone(), kubelet_status));
    let mut controller = Controller::start(&ns, cluster.kubeconfig(), "daemonset");
    let sets: Api<DaemonSet> = Api::namespaced(client.clone(), &ns);
    let ds: DaemonSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "DaemonSet",
        "metadata": {"name": "agent"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {
                "nodeSelector": {LABEL.0: LABEL.1},
                "readinessGates": [{"conditionType": "InPlaceUpdateReady"}],
                "containers": [{"name": "main", "image": "registry.bench/agent:v1"}]}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                "rollingUpdateType": "InPlaceIfPossible", "maxUnavailable": max_unavailable}}}
    }))
    .unwrap();
    let before = controller.sample();
    let started = Instant::now();
    sets.create(&PostParams::default(), &ds).await.unwrap();
    wait(&sets, nodes, "every node to run a ready pod").await;
    let after = controller.sample();
    report(&controller, "creation", &before, &after, started.elapsed(), nodes);
    let uids: BTreeMap<String, String> = pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|p| (p.metadata.name.unwrap(), p.metadata.uid.unwrap()))
        .collect();

    let before = controller.sample();
    let started = Instant::now();
    let patch =
        json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "registry.bench/agent:v2"}]}}}});
    sets.patch("agent", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    wait(&sets, nodes, "every pod to be updated and ready").await;
    let after = controller.sample();
    report(&controller, "in-place rollout", &before, &after, started.elapsed(), nodes);
    let now: Vec<Pod> = pods.list(&ListParams::default()).await.unwrap().items;
    let kept =
        now.iter().filter(|p| uids.get(p.metadata.name.as_deref().unwrap_or("")) == p.metadata.uid.as_ref()).count();
    println!("  pods updated in place (same uid): {kept}/{}", now.len());

    node_bench::idle(&mut controller).await;
    controller.stop();
    fake.abort();
    let _ = sets.delete("agent", &Default::default()).await;
    bench_nodes.remove().await;
}

async fn wait(sets: &Api<DaemonSet>, nodes: usize, what: &str) {
    let n = nodes as i32;
    wait_until(what, || async {
        let ds = sets.get("agent").await.unwrap();
        let s = ds.status.clone().unwrap_or_default();
        let done = s.observed_generation == ds.metadata.generation.unwrap_or(0)
            && s.desired_number_scheduled == n
            && s.updated_number_scheduled == n
            && s.number_ready == n
            && s.number_available == n;
        let progress = format!(
            "desired {} current {} updated {} ready {}",
            s.desired_number_scheduled, s.current_number_scheduled, s.updated_number_scheduled, s.number_ready
        );
        (done, progress)
    })
    .await;
}
