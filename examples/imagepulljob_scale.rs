//! Benchmark (issue 29): the image controllers (NodeImage, ImagePullJob, ImageListPullJob) with
//! JOBS ImagePullJobs over NODES Nodes (default 200 × 1,000, kruise PR #2483's 198 × 989) on the
//! real control plane of `testenv/`, NodeImage tags answered by a fake daemon in this process.
//!
//! `cargo run --release --example imagepulljob_scale -- [JOBS] [NODES] [PARALLELISM]` creates
//! NODES Nodes (`bench=imagepull`, Ready for a minute), waits for their NodeImages, then creates
//! the jobs at once (each its own image, the node selector `bench=imagepull`, `parallelism`
//! PARALLELISM, default 100) and reports, until every job completed (or IPJ_TIMEOUT_SECONDS,
//! default 900): the wall time, the controllers' reconciles per second (ImagePullJob and
//! NodeImage), their API writes by kind, and the controller process's CPU time and resident
//! memory. The fake daemon watches NodeImages and answers every tag behind its spec version with
//! Succeeded at once (one status write per NodeImage change, as a daemon that pulls instantly).
//!
//! The controllers run in a child process of their own ([`rollout_support`](rollout_support/mod.rs)'s
//! `Controller`, on a current-thread runtime, with the `kruise` binary's allocator), so the CPU and
//! memory figures are theirs alone. Nothing is asserted about speed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

#[path = "rollout_support/mod.rs"]
mod rollout_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kruise::apis::imagepulljob::v1beta1::ImagePullJob;
use kruise::apis::nodeimage::v1beta1::NodeImage;
use kruise::apis::nodeimage::{ImageTagStatus, NodeImageStatus};
use kruise_testenv::TestCluster;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::watcher;
use rollout_support::{Controller, Sample, metric};
use serde_json::json;

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: kruise_alloc::Mimalloc = kruise_alloc::Mimalloc;

const LABEL: (&str, &str) = ("bench", "imagepull");
const SETUP_CONCURRENCY: usize = 16;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if rollout_support::run_child(&args, kruise::controller::imagepulljob::run_alone) {
        return;
    }
    let num = |i: usize, d: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let (jobs, nodes, parallelism) = (num(0, 200), num(1, 1000), num(2, 100));
    rollout_support::block_on(drive(jobs, nodes, parallelism));
}

/// The fake daemon: every NodeImage tag behind its spec version is answered Succeeded.
async fn daemon(api: Api<NodeImage>, writes: Arc<AtomicU64>) {
    let stream = watcher::watcher(api.clone(), watcher::Config::default());
    tokio::pin!(stream);
    while let Ok(Some(event)) = stream.try_next().await {
        let ni = match event {
            watcher::Event::Apply(ni) | watcher::Event::InitApply(ni) => ni,
            _ => continue,
        };
        let mut status: NodeImageStatus = ni.status.clone().unwrap_or_default();
        let now = Time(Timestamp::now());
        let mut changed = false;
        for (image, spec) in &ni.spec.images {
            let st = status.image_statuses.entry(image.clone()).or_default();
            for t in &spec.tags {
                let done = ImageTagStatus {
                    tag: t.tag.clone(),
                    phase: "Succeeded".into(),
                    version: t.version,
                    progress: 100,
                    start_time: Some(now.clone()),
                    completion_time: Some(now.clone()),
                    ..Default::default()
                };
                match st.tags.iter_mut().find(|s| s.tag == t.tag) {
                    Some(s) if s.version == t.version => {}
                    Some(s) => {
                        *s = done;
                        changed = true;
                    }
                    None => {
                        st.tags.push(done);
                        changed = true;
                    }
                }
            }
        }
        if changed {
            status.desired = ni.spec.images.values().map(|s| s.tags.len() as i32).sum();
            status.succeeded = status.desired;
            let name = ni.metadata.name.clone().unwrap();
            let api = api.clone();
            let writes = Arc::clone(&writes);
            tokio::spawn(async move {
                let patch = json!({"status": status});
                if api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.is_ok() {
                    writes.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    }
}

async fn drive(jobs: usize, nodes: usize, parallelism: usize) {
    let cluster = TestCluster::shared().unwrap_or_else(|e| panic!("the test cluster did not start: {e}"));
    cluster.apply_path(concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/crds")).await.unwrap();
    let client = cluster.client().await.unwrap();
    let ns = cluster.namespace("bench-ipj").await.unwrap();
    let ns = ns.name().to_string();
    println!("{jobs} ImagePullJobs over {nodes} Nodes, parallelism {parallelism}");

    // The Nodes, Ready since a minute ago (past the NodeImage creation delay).
    let node_api: Api<Node> = Api::all(client.clone());
    let ready_since = Timestamp::now() - SignedDuration::from_secs(60);
    let started = Instant::now();
    futures::stream::iter(0..nodes)
        .map(|i| {
            let node_api = node_api.clone();
            async move {
                let name = format!("bench-ipj-node-{i:05}");
                let node: Node = serde_json::from_value(json!({"metadata": {"name": name,
                    "labels": {LABEL.0: LABEL.1, "kubernetes.io/hostname": name}}}))
                .unwrap();
                let _ = node_api.create(&PostParams::default(), &node).await;
                let status = json!({"status": {"conditions": [{"type": "Ready", "status": "True",
                    "lastHeartbeatTime": ready_since.to_string(), "lastTransitionTime": ready_since.to_string(),
                    "reason": "KubeletReady", "message": "bench"}]}});
                node_api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status)).await.unwrap();
            }
        })
        .buffer_unordered(SETUP_CONCURRENCY)
        .collect::<Vec<()>>()
        .await;
    println!("nodes created in {:.1}s", started.elapsed().as_secs_f64());

    let mut controller = Controller::start(&ns, cluster.kubeconfig(), "imagepulljob");
    let ni_api: Api<NodeImage> = Api::all(client.clone());
    let started = Instant::now();
    let selector = format!("{}={}", LABEL.0, LABEL.1);
    loop {
        let n = ni_api.list_metadata(&ListParams::default().labels(&selector)).await.unwrap().items.len();
        if n >= nodes {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(600), "only {n} NodeImages after 10 minutes");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let ni_time = started.elapsed();
    println!("NodeImages created in {:.1}s", ni_time.as_secs_f64());
    let daemon_writes = Arc::new(AtomicU64::new(0));
    let daemon_task = tokio::spawn(daemon(ni_api.clone(), Arc::clone(&daemon_writes)));

    let before = controller.sample();
    let before_ni = nodeimage_reconciles(&mut controller);
    let job_api: Api<ImagePullJob> = Api::namespaced(client.clone(), &ns);
    let started = Instant::now();
    futures::stream::iter(0..jobs)
        .map(|i| {
            let job_api = job_api.clone();
            async move {
                let job: ImagePullJob = serde_json::from_value(json!({
                    "apiVersion": "apps.kruise.io/v1beta1", "kind": "ImagePullJob",
                    "metadata": {"name": format!("warm-{i:04}")},
                    "spec": {"image": format!("registry.bench/img-{i:04}:v1"), "parallelism": parallelism,
                        "selector": {"matchLabels": {LABEL.0: LABEL.1}},
                        "completionPolicy": {"type": "Always"}}
                }))
                .unwrap();
                job_api.create(&PostParams::default(), &job).await.unwrap();
            }
        })
        .buffer_unordered(SETUP_CONCURRENCY)
        .collect::<Vec<()>>()
        .await;
    let timeout =
        Duration::from_secs(std::env::var("IPJ_TIMEOUT_SECONDS").ok().and_then(|v| v.parse().ok()).unwrap_or(900));
    let mut last_report = Instant::now();
    let completed = loop {
        // A loaded test apiserver may drop a list; the bench keeps going (and says so).
        let listed = match job_api.list(&ListParams::default()).await {
            Ok(l) => l.items,
            Err(e) => {
                println!("  {:>5.0}s: listing the jobs failed: {e}", started.elapsed().as_secs_f64());
                if started.elapsed() > timeout {
                    break 0;
                }
                tokio::time::sleep(Duration::from_secs(2)).await;
                continue;
            }
        };
        let done = listed.iter().filter(|j| j.status.as_ref().is_some_and(|s| s.completion_time.is_some())).count();
        if done == jobs {
            break done;
        }
        if started.elapsed() > timeout {
            println!("timed out: {done}/{jobs} jobs completed");
            break done;
        }
        if last_report.elapsed() > Duration::from_secs(30) {
            let succeeded: i64 = listed.iter().filter_map(|j| j.status.as_ref()).map(|s| i64::from(s.succeeded)).sum();
            // The controller's figures so far, so a run cut short still reports them.
            let now = controller.sample();
            let secs = started.elapsed().as_secs_f64();
            let (_, rss) = controller.rss_mib();
            println!(
                "  {secs:>5.0}s: {done}/{jobs} jobs completed, {succeeded} node pulls succeeded; controller: {:.1} ImagePullJob reconciles/s, {:.0} writes, CPU {:.1}s ({:.0}% of a core), RSS {rss:.0} MiB",
                (now.reconciles - before.reconciles) / secs,
                now.writes.values().sum::<f64>() - before.writes.values().sum::<f64>(),
                (now.cpu - before.cpu).as_secs_f64(),
                100.0 * (now.cpu - before.cpu).as_secs_f64() / secs
            );
            last_report = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(1000)).await;
    };
    let wall = started.elapsed();
    let pulls: i64 = job_api
        .list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
        .iter()
        .filter_map(|j| j.status.as_ref())
        .map(|s| i64::from(s.succeeded))
        .sum();
    let after = controller.sample();
    let after_ni = nodeimage_reconciles(&mut controller);
    let (peak, rss) = controller.rss_mib();
    report(&before, &after, after_ni - before_ni, wall, completed, jobs, nodes);
    println!("  fake daemon status writes: {}", daemon_writes.load(Ordering::Relaxed));
    let patches = after.writes.get("patchNodeImage").copied().unwrap_or(0.0)
        - before.writes.get("patchNodeImage").copied().unwrap_or(0.0);
    let conflicts = after.writes.get("patchNodeImageConflict").copied().unwrap_or(0.0)
        - before.writes.get("patchNodeImageConflict").copied().unwrap_or(0.0);
    println!(
        "  node pulls succeeded: {pulls} of {}; NodeImage patch attempts: {patches:.0} ({conflicts:.0} refused with 409), {:.2} per pull",
        jobs * nodes,
        patches / (pulls.max(1) as f64)
    );
    println!("  controller process RSS: {rss:.1} MiB now, peak {peak:.1} MiB");
    // Idle: a minute with nothing to do.
    let idle_before = controller.sample();
    let idle_ni = nodeimage_reconciles(&mut controller);
    tokio::time::sleep(Duration::from_secs(60)).await;
    let idle_after = controller.sample();
    let (idle_ipj, idle_nic) =
        (idle_after.reconciles - idle_before.reconciles, nodeimage_reconciles(&mut controller) - idle_ni);
    println!(
        "  idle minute after: {idle_ipj:.0} ImagePullJob + {idle_nic:.0} NodeImage reconciles, {:.0} writes, CPU {:.2}s",
        idle_after.writes.values().sum::<f64>() - idle_before.writes.values().sum::<f64>(),
        (idle_after.cpu - idle_before.cpu).as_secs_f64()
    );
    daemon_task.abort();
    controller.stop();
    // The bench Nodes go (their NodeImages with them, the next time a NodeImage controller runs).
    let _ = node_api.delete_collection(&Default::default(), &ListParams::default().labels(&selector)).await;
}

fn nodeimage_reconciles(c: &mut Controller) -> f64 {
    metric(&c.metrics(), "controller_runtime_reconcile_time_seconds_count{controller=\"nodeimage\"}")
}

fn report(
    before: &Sample,
    after: &Sample,
    ni_reconciles: f64,
    wall: Duration,
    completed: usize,
    jobs: usize,
    nodes: usize,
) {
    let secs = wall.as_secs_f64();
    let reconciles = after.reconciles - before.reconciles;
    let kinds = after.writes_since(before);
    let cpu = (after.cpu - before.cpu).as_secs_f64();
    println!("{completed}/{jobs} jobs completed over {nodes} nodes in {secs:.1}s");
    println!(
        "  ImagePullJob reconciles: {reconciles:.0} ({:.1}/s, mean {:.2} ms); NodeImage reconciles: {ni_reconciles:.0} ({:.1}/s)",
        reconciles / secs,
        (after.reconcile_seconds - before.reconcile_seconds) * 1000.0 / reconciles.max(1.0),
        ni_reconciles / secs
    );
    println!("  ImagePullJob API writes: {:?} (total {:.0})", kinds, kinds.values().sum::<f64>());
    println!("  controller CPU: {cpu:.1}s ({:.0}% of a core)", 100.0 * cpu / secs);
}
