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
//! BroadcastJob controller alone, on informers of its own (pods and nodes).
//!
//! One run (debug build, 500 nodes, parallelism 100, on a 2-core machine shared with other
//! builds): 500 pods created and run to completion in 9.4 s, 10 reconciles (mean 846 ms), 1.01
//! writes per pod (500 pod creations, 7 status writes), controller CPU 1.51 s (3.0 ms per pod),
//! RSS peak 45 MiB; one pod on each of the 500 nodes; idle afterwards 0 reconciles.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

#[path = "rollout_support/mod.rs"]
mod rollout_support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;
use kruise::apis::broadcastjob::BroadcastJob;
use kruise_testenv::TestCluster;
use kruise_testenv::kubelet::nodes::{NodeInfo, heartbeat};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use rollout_support::{Controller, Sample};
use serde_json::{Value, json};

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: kruise_alloc::Mimalloc = kruise_alloc::Mimalloc;

const LABEL: (&str, &str) = ("bench", "bcj");
const SETUP_CONCURRENCY: usize = 16;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--controller") {
        if let Ok(filter) = std::env::var("RUST_LOG") {
            tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
                .with_writer(std::io::stderr)
                .init();
        }
        rollout_support::child(args[1].clone(), args[2].clone().into(), run_alone);
        return;
    }
    let nodes = args.first().and_then(|a| a.parse().ok()).unwrap_or(500);
    let parallelism: i32 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(100);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(drive(nodes, parallelism));
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

fn now_string() -> String {
    Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
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

/// The fake kubelet of the bench nodes.
async fn kubelet(api: Api<Pod>) {
    let stream = watcher::watcher(api.clone(), watcher::Config::default());
    tokio::pin!(stream);
    while let Ok(Some(event)) = stream.try_next().await {
        let pod = match event {
            watcher::Event::Apply(p) | watcher::Event::InitApply(p) => p,
            _ => continue,
        };
        if pod.metadata.deletion_timestamp.is_some() {
            let name = pod.metadata.name.clone().unwrap();
            let api = api.clone();
            tokio::spawn(async move {
                let _ = api
                    .delete(&name, &kube::api::DeleteParams { grace_period_seconds: Some(0), ..Default::default() })
                    .await;
            });
            continue;
        }
        if let Some(patch) = kubelet_status(&pod) {
            let name = pod.metadata.name.clone().unwrap();
            let api = api.clone();
            tokio::spawn(async move {
                let _ = api.patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch)).await;
            });
        }
    }
}

async fn drive(nodes: usize, parallelism: i32) {
    let cluster = TestCluster::shared().unwrap_or_else(|e| panic!("the test cluster did not start: {e}"));
    cluster.apply_path(concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/crds")).await.unwrap();
    let client = cluster.client().await.unwrap();
    let ns = cluster.namespace("bench-bcj").await.unwrap();
    let ns = ns.name().to_string();
    println!("a BroadcastJob over {nodes} Nodes, parallelism {parallelism}, run to completion");

    let node_api: Api<Node> = Api::all(client.clone());
    let infos: Vec<NodeInfo> = (0..nodes)
        .map(|i| NodeInfo {
            name: format!("bench-bcj-node-{i:05}"),
            ip: format!("198.19.{}.{}", i / 250, i % 250 + 1),
            index: 3000 + i,
        })
        .collect();
    let started = Instant::now();
    futures::stream::iter(infos.clone())
        .map(|info| {
            let node_api = node_api.clone();
            async move {
                let node: Node = serde_json::from_value(json!({"metadata": {"name": info.name,
                    "labels": {LABEL.0: LABEL.1, "kubernetes.io/hostname": info.name, "kubernetes.io/os": "linux"}}}))
                .unwrap();
                let _ = node_api.create(&PostParams::default(), &node).await;
                let now = now_string();
                let capacity = json!({"cpu": "32", "memory": "128Gi", "pods": "110"});
                let status = json!({"status": {"capacity": capacity, "allocatable": capacity,
                    "addresses": [{"type": "InternalIP", "address": info.ip}],
                    "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": now,
                        "lastTransitionTime": now, "reason": "KubeletReady", "message": "bench"}]}});
                node_api.patch_status(&info.name, &PatchParams::default(), &Patch::Strategic(&status)).await.unwrap();
            }
        })
        .buffer_unordered(SETUP_CONCURRENCY)
        .collect::<Vec<()>>()
        .await;
    let beat = tokio::spawn(heartbeat(client.clone(), Arc::new(infos)));
    let selector = format!("{}={}", LABEL.0, LABEL.1);
    loop {
        let listed = node_api.list(&ListParams::default().labels(&selector)).await.unwrap().items;
        let tainted = listed
            .iter()
            .filter(|n| n.spec.as_ref().and_then(|s| s.taints.as_ref()).is_some_and(|t| !t.is_empty()))
            .count();
        if listed.len() == nodes && tainted == 0 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(600), "{tainted} nodes still tainted after 10 minutes");
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
    println!("nodes created and schedulable in {:.1}s", started.elapsed().as_secs_f64());

    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let fake = tokio::spawn(kubelet(pods.clone()));
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
    let (peak, rss) = controller.rss_mib();
    report("run to completion", &before, &after, started.elapsed(), nodes);
    println!("  controller RSS: {rss:.1} MiB now, peak {peak:.1} MiB");
    let listed: Vec<Pod> = pods.list(&ListParams::default()).await.unwrap().items;
    let per_node: std::collections::BTreeSet<String> =
        listed.iter().filter_map(|p| p.spec.as_ref().and_then(|s| s.node_name.clone())).collect();
    println!("  pods: {} on {} nodes", listed.len(), per_node.len());

    let idle = controller.sample();
    tokio::time::sleep(Duration::from_secs(30)).await;
    let idle_after = controller.sample();
    println!(
        "  idle 30 s after: {:.0} reconciles, CPU {:.2}s",
        idle_after.reconciles - idle.reconciles,
        (idle_after.cpu - idle.cpu).as_secs_f64()
    );
    controller.stop();
    fake.abort();
    beat.abort();
    let _ = jobs.delete("warm", &Default::default()).await;
    let _ = node_api.delete_collection(&Default::default(), &ListParams::default().labels(&selector)).await;
}

async fn wait(jobs: &Api<BroadcastJob>, nodes: usize) {
    let deadline = Instant::now() + Duration::from_secs(1200);
    let mut last = Instant::now();
    loop {
        let s = jobs.get("warm").await.unwrap().status.unwrap_or_default();
        let complete = s.conditions.iter().any(|c| c.type_ == "Complete" && c.status == "True");
        if complete {
            assert_eq!(s.succeeded as usize, nodes, "{s:?}");
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for completion: {s:?}");
        if last.elapsed() > Duration::from_secs(30) {
            println!("  desired {} active {} succeeded {} failed {}", s.desired, s.active, s.succeeded, s.failed);
            last = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn report(phase: &str, before: &Sample, after: &Sample, wall: Duration, nodes: usize) {
    let secs = wall.as_secs_f64();
    let reconciles = after.reconciles - before.reconciles;
    let kinds: BTreeMap<&str, f64> = after
        .writes
        .iter()
        .map(|(k, v)| (k.as_str(), v - before.writes.get(k).copied().unwrap_or(0.0)))
        .filter(|(_, v)| *v > 0.0)
        .collect();
    let total: f64 = kinds.values().sum();
    let cpu = (after.cpu - before.cpu).as_secs_f64();
    println!("{phase}: {nodes} pods in {secs:.1}s");
    println!(
        "  reconciles: {reconciles:.0} (mean {:.2} ms)",
        (after.reconcile_seconds - before.reconcile_seconds) * 1000.0 / reconciles.max(1.0)
    );
    println!("  API writes: {kinds:?} (total {total:.0}, {:.2} per pod)", total / nodes as f64);
    println!(
        "  controller CPU: {cpu:.2}s ({:.1} ms per pod, {:.0}% of a core)",
        cpu * 1000.0 / nodes as f64,
        100.0 * cpu / secs
    );
}
