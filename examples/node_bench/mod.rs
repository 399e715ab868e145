//! What the node-level benchmarks share (`daemonset_scale` and `broadcastjob_scale`, issue 33):
//! the real control plane of `testenv/` with kruise's CRDs and a namespace of the bench's own;
//! NODES bench Nodes (a label of the bench's, Ready, their Leases renewed by testenv's node
//! heartbeat so the node-lifecycle controller keeps them Ready), awaited until none is tainted; a
//! fake kubelet in this process that writes the status the bench's function gives each pod of the
//! namespace and removes pods being deleted; the wait on the workload's status; and the report of
//! one phase (wall time, the controller's reconciles, its API writes by kind and per pod, its CPU
//! time and resident memory) and of 30 idle seconds after. The controller itself runs in a child process ([`rollout_support`](../rollout_support/mod.rs)).

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::jiff::Timestamp;
use kruise_testenv::kubelet::nodes::{NodeInfo, heartbeat};
use kruise_testenv::{TestCluster, TestNamespace};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use serde_json::{Value, json};

use crate::rollout_support::{Controller, Sample};

/// Nodes created (and status-patched) at once.
const SETUP_CONCURRENCY: usize = 16;

/// The shared test cluster with `deploy/crds` applied, an admin client and a new namespace
/// named after `prefix` (deleted when the returned handle drops).
pub async fn cluster(prefix: &str) -> (&'static TestCluster, kube::Client, TestNamespace) {
    let cluster = TestCluster::shared().unwrap_or_else(|e| panic!("the test cluster did not start: {e}"));
    cluster.apply_path(concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/crds")).await.unwrap();
    let client = cluster.client().await.unwrap();
    let ns = cluster.namespace(prefix).await.unwrap();
    (cluster, client, ns)
}

/// A timestamp as the kubelet writes one.
pub fn now_string() -> String {
    Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The bench's Nodes and their heartbeat.
pub struct BenchNodes {
    api: Api<Node>,
    selector: String,
    beat: tokio::task::JoinHandle<()>,
}

impl BenchNodes {
    /// Creates `count` Nodes `<prefix>-NNNNN` labelled `label` (pod-CIDR index `index_base + i`,
    /// InternalIP `<ip_prefix>.<i / 250>.<i % 250 + 1>`), reports them Ready, renews their Leases,
    /// and returns once every one is listed without a taint.
    pub async fn register(
        client: &kube::Client,
        label: (&str, &str),
        prefix: &str,
        index_base: usize,
        ip_prefix: &str,
        count: usize,
    ) -> BenchNodes {
        let api: Api<Node> = Api::all(client.clone());
        let infos: Vec<NodeInfo> = (0..count)
            .map(|i| NodeInfo {
                name: format!("{prefix}-{i:05}"),
                ip: format!("{ip_prefix}.{}.{}", i / 250, i % 250 + 1),
                index: index_base + i,
            })
            .collect();
        let started = Instant::now();
        futures::stream::iter(infos.clone())
            .map(|info| {
                let api = api.clone();
                async move {
                    let node: Node = serde_json::from_value(json!({"metadata": {"name": info.name,
                        "labels": {label.0: label.1, "kubernetes.io/hostname": info.name, "kubernetes.io/os": "linux"}}}))
                    .unwrap();
                    let _ = api.create(&PostParams::default(), &node).await;
                    let now = now_string();
                    let capacity = json!({"cpu": "32", "memory": "128Gi", "pods": "110"});
                    let status = json!({"status": {"capacity": capacity, "allocatable": capacity,
                        "addresses": [{"type": "InternalIP", "address": info.ip}],
                        "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": now,
                            "lastTransitionTime": now, "reason": "KubeletReady", "message": "bench"}]}});
                    api.patch_status(&info.name, &PatchParams::default(), &Patch::Strategic(&status)).await.unwrap();
                }
            })
            .buffer_unordered(SETUP_CONCURRENCY)
            .collect::<Vec<()>>()
            .await;
        let beat = tokio::spawn(heartbeat(client.clone(), Arc::new(infos)));
        let selector = format!("{}={}", label.0, label.1);
        loop {
            let listed = api.list(&ListParams::default().labels(&selector)).await.unwrap().items;
            let tainted = listed
                .iter()
                .filter(|n| n.spec.as_ref().and_then(|s| s.taints.as_ref()).is_some_and(|t| !t.is_empty()))
                .count();
            if listed.len() == count && tainted == 0 {
                break;
            }
            assert!(started.elapsed() < Duration::from_secs(600), "{tainted} nodes still tainted after 10 minutes");
            tokio::time::sleep(Duration::from_millis(1000)).await;
        }
        println!("nodes created and schedulable in {:.1}s", started.elapsed().as_secs_f64());
        BenchNodes { api, selector, beat }
    }

    /// Stops the heartbeat and deletes the Nodes.
    pub async fn remove(self) {
        self.beat.abort();
        let _ = self.api.delete_collection(&Default::default(), &ListParams::default().labels(&self.selector)).await;
    }
}

/// The fake kubelet of the bench nodes: writes `status(pod)` (a strategic merge patch of
/// `pods/status`) for every pod of `api` it gives one for, and deletes (grace period 0) every pod
/// being deleted.
pub async fn fake_kubelet(api: Api<Pod>, status: fn(&Pod) -> Option<Value>) {
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
        if let Some(patch) = status(&pod) {
            let name = pod.metadata.name.clone().unwrap();
            let api = api.clone();
            tokio::spawn(async move {
                let _ = api.patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch)).await;
            });
        }
    }
}

/// Polls `check` every 500 ms until it reports done, printing its progress line every 30 s;
/// panics after 20 minutes with the last line.
pub async fn wait_until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = (bool, String)>,
{
    let deadline = Instant::now() + Duration::from_secs(1200);
    let mut last = Instant::now();
    loop {
        let (done, progress) = check().await;
        if done {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}: {progress}");
        if last.elapsed() > Duration::from_secs(30) {
            println!("  {progress}");
            last = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Prints what the controller did between `before` and `after` over `wall`, for `nodes` pods,
/// and its resident memory now and at its peak.
pub fn report(controller: &Controller, phase: &str, before: &Sample, after: &Sample, wall: Duration, nodes: usize) {
    let (peak, rss) = controller.rss_mib();
    let secs = wall.as_secs_f64();
    let reconciles = after.reconciles - before.reconciles;
    let kinds = after.writes_since(before);
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
    println!("  controller RSS: {rss:.1} MiB now, peak {peak:.1} MiB");
}

/// Prints the controller's reconciles and CPU time over 30 idle seconds.
pub async fn idle(controller: &mut Controller) {
    let idle = controller.sample();
    tokio::time::sleep(Duration::from_secs(30)).await;
    let idle_after = controller.sample();
    println!(
        "  idle 30 s after: {:.0} reconciles, CPU {:.2}s",
        idle_after.reconciles - idle.reconciles,
        (idle_after.cpu - idle.cpu).as_secs_f64()
    );
}
