//! Benchmark (issue 11): an in-place rollout of a CloneSet of N pods on the real control plane of
//! `testenv/` with its simulated kubelet, the reconciler running in this process on a thread of
//! its own (a current-thread runtime, with its own client), so its CPU time is that thread's.
//!
//! `cargo run --example cloneset_rollout -- 100 1000` reports, per size: the wall time of the
//! scale-up and of the rollout, the controller's API writes per updated pod (plan writes; Events
//! are counted apart by the API server's side and not included), its CPU time per updated pod,
//! and the reconciles with their mean time. It asserts nothing about speed (machines are noisy).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kruise::apis::cloneset::CloneSet;
use kruise::controller::Settings;
use kruise::metrics::Metrics;
use kruise_testenv::TestCluster;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

/// The controller thread's CPU time (`/proc/self/task/TID/schedstat`, nanoseconds).
fn thread_cpu(tid: &str) -> Duration {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).unwrap_or_default();
    Duration::from_nanos(text.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(0))
}

/// The process's peak and current resident set (`VmHWM`, `VmRSS` of /proc/self/status) in MiB:
/// the controller's and this driver's together, so an upper bound for the controller.
fn rss_mib() -> (f64, f64) {
    let text = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// A metric's value from the text exposition (`name{labels} value`).
fn metric(text: &str, prefix: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// The controller's writes by kind (`kruise_controller_api_writes_total{controller,write}`).
fn writes(text: &str) -> BTreeMap<String, f64> {
    let prefix = "kruise_controller_api_writes_total{controller=\"cloneset\",write=\"";
    text.lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .filter_map(|rest| {
            let (kind, value) = rest.split_once("\"}")?;
            Some((kind.to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

struct Sample {
    cpu: Duration,
    writes: BTreeMap<String, f64>,
    reconciles: f64,
    reconcile_seconds: f64,
}

fn sample(tid: &str, metrics: &Metrics) -> Sample {
    let text = metrics.encode();
    Sample {
        cpu: thread_cpu(tid),
        writes: writes(&text),
        reconciles: metric(&text, "controller_runtime_reconcile_time_seconds_count{controller=\"cloneset\"}"),
        reconcile_seconds: metric(&text, "controller_runtime_reconcile_time_seconds_sum{controller=\"cloneset\"}"),
    }
}

async fn wait_status(api: &Api<CloneSet>, what: &str, check: impl Fn(&kruise::apis::cloneset::CloneSetStatus) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        if api.get("bench").await.ok().and_then(|cs| cs.status).is_some_and(|s| check(&s)) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if let Ok(filter) = std::env::var("RUST_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .init();
    }
    let sizes: Vec<i32> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![100] } else { sizes };
    let cluster = TestCluster::shared().unwrap_or_else(|e| panic!("the test cluster did not start: {e}"));
    cluster.apply_path(concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/crds")).await.unwrap();
    let client = cluster.client().await.unwrap();
    println!("size  scale-up  rollout  writes/pod  cpu/pod  reconciles  mean reconcile");
    for n in sizes {
        let ns = cluster.namespace("bench-rollout").await.unwrap();
        let metrics = Metrics::new();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel::<String>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (kubeconfig, namespace, m) = (cluster.kubeconfig().to_path_buf(), ns.name().to_string(), metrics.clone());
        let thread = std::thread::spawn(move || {
            let link = std::fs::read_link("/proc/thread-self").unwrap_or_default();
            let _ = tid_tx.send(link.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default());
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let client = kruise_testenv::client_from_kubeconfig(&kubeconfig).await.unwrap();
                let settings = Settings { namespace: Some(namespace), ..Settings::default() };
                kruise::controller::cloneset::run(client, settings, m, async move {
                    let _ = stop_rx.await;
                })
                .await;
            });
        });
        let tid = tid_rx.recv().unwrap();
        let api: Api<CloneSet> = Api::namespaced(client.clone(), ns.name());
        let cs: CloneSet = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "metadata": {"name": "bench"},
            "spec": {
                "replicas": n, "selector": {"matchLabels": {"app": "bench"}},
                "template": {"metadata": {"labels": {"app": "bench"}},
                    "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}},
                "updateStrategy": {"type": "InPlaceIfPossible", "partition": 0, "maxUnavailable": "20%",
                    "maxSurge": 0, "inPlaceUpdateStrategy": {}},
                "scaleStrategy": {}, "revisionHistoryLimit": 10
            }
        }))
        .unwrap();
        let started = Instant::now();
        api.create(&PostParams::default(), &cs).await.unwrap();
        wait_status(&api, "all pods ready", |s| s.ready_replicas == n && s.available_replicas == n).await;
        let scale_up = started.elapsed();
        let before = sample(&tid, &metrics);
        let started = Instant::now();
        let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}});
        api.patch("bench", &PatchParams::default(), &Patch::Merge(image)).await.unwrap();
        wait_status(&api, "the rollout", |s| {
            s.observed_generation == 2 && s.updated_ready_replicas == n && s.ready_replicas == n
        })
        .await;
        let rollout = started.elapsed();
        let after = sample(&tid, &metrics);
        let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
        let listed = pods.list(&ListParams::default()).await.unwrap().items.len();
        assert_eq!(listed, n as usize, "an in-place rollout keeps the pods");
        let per_pod = f64::from(n);
        let kinds: BTreeMap<&str, f64> = after
            .writes
            .iter()
            .map(|(k, v)| (k.as_str(), v - before.writes.get(k).copied().unwrap_or(0.0)))
            .filter(|(_, v)| *v > 0.0)
            .collect();
        let total: f64 = kinds.values().sum();
        let reconciles = after.reconciles - before.reconciles;
        println!(
            "{n:>4}  {:>7.1}s  {:>6.1}s  {:>10.2}  {:>5.2}ms  {:>10}  {:>11.2}ms",
            scale_up.as_secs_f64(),
            rollout.as_secs_f64(),
            total / per_pod,
            (after.cpu - before.cpu).as_secs_f64() * 1000.0 / per_pod,
            reconciles,
            (after.reconcile_seconds - before.reconcile_seconds) * 1000.0 / reconciles.max(1.0),
        );
        let by_kind: Vec<String> = kinds.iter().map(|(k, v)| format!("{k} {:.2}", v / per_pod)).collect();
        println!("      writes/pod by kind: {}", by_kind.join(", "));
        let (peak, now) = rss_mib();
        println!("      process RSS (controller + this driver): peak {peak:.1} MiB, now {now:.1} MiB");
        let _ = stop_tx.send(());
        thread.join().unwrap();
    }
}
