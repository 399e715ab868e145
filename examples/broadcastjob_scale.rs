//! Benchmark (issue 33): the BroadcastJob controller over NODES Node objects (default 500) on the
//! real control plane of `testenv/`, one BroadcastJob run to completion, its pods run to exit 0 by
//! a fake kubelet in this process.
//!
//! `cargo run --example broadcastjob_scale -- [NODES] [PARALLELISM]` creates NODES Nodes
//! (`bench=bcj`, Ready, their Leases renewed by testenv's node heartbeat), creates a BroadcastJob
//! whose template selects them (`nodeSelector bench=bcj`, `completionPolicy: Always`,
//! `parallelism` PARALLELISM, default 100), and waits until it is Complete with NODES succeeded
//! pods. The real scheduler binds the pods (kruise's node affinity names their node); the fake
//! kubelet reports each bound pod Running, then Succeeded (its container terminated with exit code
//! 0) on its next event. It reports: wall time, the controller's reconciles, its API writes by kind
//! and per pod, its CPU time and its resident memory. Nothing is asserted about speed.
//!
//! The controller runs in a child process of its own ([`rollout_support`](rollout_support/mod.rs)'s
//! `Controller`, on a current-thread runtime), so the CPU and memory figures are its alone; the
//! BroadcastJob controller alone, on informers of its own (pods and nodes). The cluster, the nodes,
//! the fake kubelet's loop and the report are [`node_bench`](node_bench/mod.rs)'s, shared with
//! `daemonset_scale`.
//!
//! One run (debug build, 500 nodes, parallelism 100, on a 2-core machine shared with other
//! builds): 500 pods created and run to completion in 9.4 s, 10 reconciles (mean 846 ms), 1.01
//! writes per pod (500 pod creations, 7 status writes), controller CPU 1.51 s (3.0 ms per pod),
//! RSS peak 45 MiB; one pod on each of the 500 nodes; idle afterwards 0 reconciles.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

#[path = "rollout_support/mod.rs"]
mod rollout_support;

#[path = "node_bench/mod.rs"]
mod node_bench;

use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use kruise::apis::broadcastjob::BroadcastJob;
use kube::api::{Api, ListParams, PostParams};
use node_bench::{BenchNodes, fake_kubelet, now_string, report, wait_until};
use rollout_support::Controller;
use serde_json::{Value, json};

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: kruise_alloc::Mimalloc = kruise_alloc::Mimalloc;

const LABEL: (&str, &str) = ("bench", "bcj");

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if rollout_support::run_child(&args, run_alone) {
        return;
    }
    let nodes = args.first().and_then(|a| a.parse().ok()).unwrap_or(500);
    let parallelism: i32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100);
    rollout_support::block_on(drive(nodes, parallelism));
}

/// The BroadcastJob controller on informers of its own until `shutdown`.
async fn run_alone(
    client: kube::Client,
    settings: kruise::controller::Settings,
    metrics: kruise::metrics::Metrics,
    shutdown: futures::future::BoxFuture<'static, ()>,
) {
    let token = tokio_util::sync::CancellationToken::new();
    let informers = kruise::controller::informers::Informers::for_gates(&settings.gates);
    let mut tasks = kruise::controller::broadcastjob::start(&informers, &client, &settings, &metrics, &token);
    tasks.extend(informers.start(&client, settings.namespace.as_deref(), &metrics, &token));
    shutdown.await;
    token.cancel();
    futures::future::join_all(tasks).await;
}

/// The status the fake kubelet reports for `pod`: Running once bound, then Succeeded (exit 0);
/// `None` when there is nothing to report.
fn kubelet_status(pod: &Pod) -> Option<Value> {
    let spec = pod.spec.as_ref()?;
    spec.node_name.as_ref()?;
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("");
    let now = now_string();
    let cond = |t: &str, s: &str| json!({"type": t, "status": s, "lastTransitionTime": now});
    match phase {
        "Succeeded" | "Failed" => None,
        "Running" => {
            let containers: Vec<Value> = spec.containers.iter().map(|c| {
                let image = c.image.clone().unwrap_or_default();
                json!({"name": c.name, "image": image, "imageID": format!("sha-{image}"), "ready": false,
                    "restartCount": 0, "started": false,
                    "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": now, "finishedAt": now}}})
            }).collect();
            Some(json!({"status": {"phase": "Succeeded", "containerStatuses": containers,
                "conditions": [cond("PodScheduled", "True"), cond("Initialized", "True"),
                    cond("ContainersReady", "False"), cond("Ready", "False")]}}))
        }
        _ => {
            let containers: Vec<Value> = spec
                .containers
                .iter()
                .map(|c| {
                    let image = c.image.clone().unwrap_or_default();
                    json!({"name": c.name, "image": image, "imageID": format!("sha-{image}"), "ready": true,
                    "restartCount": 0, "started": true, "state": {"running": {"startedAt": now}}})
                })
                .collect();
            Some(json!({"status": {"phase": "Running", "podIP": "10.0.0.1", "startTime": now,
                "containerStatuses": containers,
                "conditions": [cond("PodScheduled", "True"), cond("Initialized", "True"),
                    cond("ContainersReady", "True"), cond("Ready", "True")]}}))
        }
    }
}

async fn drive(nodes: usize, parallelism: i32) {
    let (cluster, client, ns) = node_bench::cluster("bench-bcj").await;
    let ns = ns.name().to_string();
    println!("a BroadcastJob over {nodes} Nodes, parallelism {parallelism}, run to completion");
    let bench_nodes = BenchNodes::register(&client, LABEL, "bench-bcj-node", 3000, "198.19", nodes).await;

    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let fake = tokio::spawn(fake_kubelet(pods.clone(), kubelet_status));
    let mut controller = Controller::start(&ns, cluster.kubeconfig(), "broadcastjob");
    let jobs: Api<BroadcastJob> = Api::namespaced(client.clone(), &ns);
    let job: BroadcastJob = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "BroadcastJob",
        "metadata": {"name": "warm"},
        "spec": {"parallelism": parallelism, "completionPolicy": {"type": "Always"},
            "failurePolicy": {"type": "FailFast"},
            "template": {"spec": {"nodeSelector": {LABEL.0: LABEL.1}, "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "registry.bench/warm:v1"}]}}}
    }))
    .unwrap();
    let before = controller.sample();
    let started = Instant::now();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    wait(&jobs, nodes).await;
    let after = controller.sample();
    report(&controller, "run to completion", &before, &after, started.elapsed(), nodes);
    let listed: Vec<Pod> = pods.list(&ListParams::default()).await.unwrap().items;
    let per_node: std::collections::BTreeSet<String> =
        listed.iter().filter_map(|p| p.spec.as_ref().and_then(|s| s.node_name.clone())).collect();
    println!("  pods: {} on {} nodes", listed.len(), per_node.len());

    node_bench::idle(&mut controller).await;
    controller.stop();
    fake.abort();
    let _ = jobs.delete("warm", &Default::default()).await;
    bench_nodes.remove().await;
}

async fn wait(jobs: &Api<BroadcastJob>, nodes: usize) {
    wait_until("completion", || async {
        let s = jobs.get("warm").await.unwrap().status.unwrap_or_default();
        let complete = s.conditions.iter().any(|c| c.type_ == "Complete" && c.status == "True");
        if complete {
            assert_eq!(s.succeeded as usize, nodes, "{s:?}");
        }
        let progress =
            format!("desired {} active {} succeeded {} failed {}", s.desired, s.active, s.succeeded, s.failed);
        (complete, progress)
    })
    .await;
}
