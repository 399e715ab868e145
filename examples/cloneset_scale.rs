//! Benchmark (issue 26): the leader of `kruise serve` at scale — SETS CloneSets of PODS pods each
//! (default 100 × 100 = 10,000 pods) on the real control plane of `testenv/`, already rolled out,
//! so the controller finds a steady state to sync to.
//!
//! `cargo run --example cloneset_scale -- [SETS] [PODS] [IDLE_SECONDS]` reports: the time from
//! the process start to `/readyz` 200 and to "synced" (every CloneSet's `status.observedGeneration`
//! caught up with a generation the benchmark bumped before the start, with all its pods counted
//! ready), the leader's resident memory once synced, after the idle window and at its peak, its
//! CPU while idle (the default 30 s, starting 5 s after the sync), its reconciles, and the watch
//! requests it holds open on the apiserver by resource (`apiserver_longrunning_requests` with
//! `verb="WATCH"`, after minus before its start). To tell a busy idle from a busy cluster it also
//! shows the controller's work-queue adds and writes before and during the idle window, the pod
//! and CloneSet changes seen in 10 s after it by last writer (a steady state has none), and what
//! `kruise plan` makes of the first CloneSet. It asserts nothing about speed.
//!
//! How the steady state is built without 10,000 pods on the simulated kubelet:
//! 1. The CloneSets are created with one replica and a `kruise serve` started for the purpose
//!    creates their revisions and first pods (the simulated kubelet runs those 100 pods), then
//!    stops. Nothing here computes revision hashes: the controller's own pods carry the labels
//!    (`controller-revision-hash`, `pod-template-hash`, `apps.kruise.io/cloneset-instance-id`),
//!    owner reference and readiness gate it expects.
//! 2. Each CloneSet's pod is copied PODS−1 times (new name and instance id) with `spec.nodeName`
//!    set to a node that does not exist, and the copy gets the original's status (Running, Ready,
//!    `InPlaceUpdateReady`) through `pods/status`. The simulated kubelet ignores pods of nodes it
//!    does not run, the scheduler ignores bound pods, and the test control plane runs no pod
//!    garbage collector, so the copies stay as they are.
//! 3. `spec.replicas` is raised to PODS (a new generation, no new revision), and the measured
//!    `kruise serve` starts: it has nothing to create or update, only every status to write.
//!
//! The measured process is this example started again as `kruise` (`--kruise ARGS...` runs
//! what `src/main.rs` runs, with the binary's allocator): `kruise serve` in a cluster as
//! `tests/e2e_common` starts it — deploy/'s ServiceAccount and RBAC, leader election on,
//! certificates from `kruise certs` (`--cert-mode files`: no webhook is registered here, so
//! nothing reaches it). Its log (filter `warn`) is kept in a file and its warnings counted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "rollout_support/proc.rs"]
mod proc;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kruise::apis::cloneset::CloneSet;
use kruise_testenv::TestCluster;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

/// The allocator of the `kruise` binary, so the memory figures are the product's.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: kruise_alloc::Mimalloc = kruise_alloc::Mimalloc;

/// The manager namespace and ServiceAccount of `deploy/`.
const NAMESPACE: &str = "kruise-system";
const SERVICE_ACCOUNT: &str = "kruise-manager";

/// The node the copied pods are bound to: no such node exists.
const ABSENT_NODE: &str = "bench-absent-node";

/// Writes the benchmark sends side by side while building the steady state.
const SETUP_CONCURRENCY: usize = 16;

/// The child: `kruise ARGS...`, as `src/main.rs` runs it.
fn kruise_main(args: Vec<String>) -> ! {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = kruise::cli::Cli::parse_from(std::iter::once("kruise".to_string()).chain(args));
    kruise::init_tracing(cli.log_format, &cli.log);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let code = runtime.block_on(kruise::run(cli));
    kruise::log::sink::flush();
    std::process::exit(code);
}

/// A `kruise serve` child process; killed on drop.
struct Serve {
    child: Child,
    admin: u16,
    started: Instant,
    log: PathBuf,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Serve {
    fn start(kubeconfig: &Path, cert_dir: &Path, log: PathBuf, extra: &[&str]) -> Serve {
        let (addr, admin) = (free_port(), free_port());
        let log_file = std::fs::File::create(&log).unwrap();
        let started = Instant::now();
        let child = Command::new(std::env::current_exe().unwrap())
            .args(["--kruise", "serve", "--addr", &format!("127.0.0.1:{addr}")])
            .args(["--admin-addr", &format!("127.0.0.1:{admin}"), "--cert-mode", "files", "--cert-dir"])
            .arg(cert_dir)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(extra)
            .env("KRUISE_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .unwrap();
        Serve { child, admin, started, log }
    }

    /// CPU time of the whole child.
    fn cpu(&self) -> Duration {
        proc::cpu(self.child.id())
    }

    /// (peak, current) resident set of the child in MiB.
    fn rss_mib(&self) -> (f64, f64) {
        proc::rss_mib(self.child.id())
    }

    fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGTERM, then waits for the exit (the leader's tasks stop, a lease is released).
    fn stop(mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.alive() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The warning and error lines of its log.
    fn warnings(&self) -> Vec<String> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        text.lines().filter(|l| l.contains(" WARN ") || l.contains(" ERROR ")).map(String::from).collect()
    }
}

/// A plain-HTTP GET on 127.0.0.1:`port`: (status code, body); (0, "") when it fails.
async fn http_get(port: u16, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut tcp) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return (0, String::new());
    };
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    if tcp.write_all(request.as_bytes()).await.is_err() {
        return (0, String::new());
    }
    let mut out = Vec::new();
    let _ = tcp.read_to_end(&mut out).await;
    let text = String::from_utf8_lossy(&out).into_owned();
    let code = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (code, body)
}

/// Sum of a metric's values over the lines starting with `prefix` (`name{labels} value`).
fn metric_sum(text: &str, prefix: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .filter_map(|l| l.rsplit(' ').next())
        .filter_map(|v| v.parse::<f64>().ok())
        .sum()
}

/// The label `name` of a metric line.
fn label<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let start = line.find(&format!("{name}=\""))? + name.len() + 2;
    let rest = &line[start..];
    Some(&rest[..rest.find('"')?])
}

/// Open watch requests on the apiserver, by resource (`apiserver_longrunning_requests`).
async fn apiserver_watches(client: &kube::Client) -> BTreeMap<String, f64> {
    let request = hyper::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = client.request_text(request).await.unwrap_or_default();
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("apiserver_longrunning_requests{")) {
        if label(line, "verb") != Some("WATCH") {
            continue;
        }
        let resource = label(line, "resource").unwrap_or("?").to_string();
        let value: f64 = line.rsplit(' ').next().and_then(|v| v.parse().ok()).unwrap_or(0.0);
        *out.entry(resource).or_insert(0.0) += value;
    }
    out
}

fn cloneset(name: &str) -> CloneSet {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "metadata": {"name": name},
        "spec": {
            "replicas": 1, "selector": {"matchLabels": {"app": "bench", "set": name}},
            "template": {"metadata": {"labels": {"app": "bench", "set": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}},
            "updateStrategy": {"type": "InPlaceIfPossible", "partition": 0, "maxUnavailable": "20%",
                "maxSurge": 0, "inPlaceUpdateStrategy": {}},
            "scaleStrategy": {}, "revisionHistoryLimit": 10
        }
    }))
    .unwrap()
}

/// Waits (up to 15 minutes) until every CloneSet passes `done`; on timeout, shows one that does not.
async fn wait_all(api: &Api<CloneSet>, what: &str, done: impl Fn(&CloneSet) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        let list = api.list(&ListParams::default()).await.unwrap();
        let Some(waiting) = list.items.iter().find(|cs| !done(cs)) else { return };
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {} {:?}",
            waiting.metadata.name.as_deref().unwrap_or(""),
            waiting.status
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The copy number `i` of `pod`: a new name and instance id, bound to [`ABSENT_NODE`].
fn copy_of(pod: &Pod, set: &str, i: usize) -> Pod {
    let mut copy = pod.clone();
    let id = format!("c{i:04}");
    let meta = &mut copy.metadata;
    meta.name = Some(format!("{set}-{id}"));
    meta.generate_name = None;
    meta.uid = None;
    meta.resource_version = None;
    meta.creation_timestamp = None;
    meta.managed_fields = None;
    meta.labels.get_or_insert_with(Default::default).insert("apps.kruise.io/cloneset-instance-id".into(), id);
    if let Some(spec) = copy.spec.as_mut() {
        spec.node_name = Some(ABSENT_NODE.into());
    }
    copy.status = None;
    copy
}

/// The last writer of an object: (manager, subresource) of its newest managedFields entry.
fn last_writer(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    let newest = meta.managed_fields.iter().flatten().max_by_key(|m| m.time.as_ref().map(|t| t.0));
    newest.map_or("?".into(), |m| {
        format!("{}/{}", m.manager.as_deref().unwrap_or("?"), m.subresource.as_deref().unwrap_or(""))
    })
}

/// Changes to the namespace's pods and CloneSets during `window` (a steady state has none), by
/// kind and last writer.
async fn changes_while_idle(pods: &Api<Pod>, sets: &Api<CloneSet>, window: Duration) -> BTreeMap<String, usize> {
    use kube::runtime::watcher::{Event, watcher};
    let mut out = BTreeMap::new();
    let deadline = tokio::time::sleep(window);
    tokio::pin!(deadline);
    let pod_events = watcher(pods.clone(), Default::default());
    let set_events = watcher(sets.clone(), Default::default());
    tokio::pin!(pod_events, set_events);
    let (mut pods_listed, mut sets_listed) = (false, false);
    loop {
        tokio::select! {
            () = &mut deadline => return out,
            Some(event) = pod_events.next() => match event {
                Ok(Event::InitDone) => pods_listed = true,
                Ok(Event::Apply(p) | Event::Delete(p)) if pods_listed => {
                    *out.entry(format!("pod by {}", last_writer(&p.metadata))).or_insert(0) += 1;
                }
                _ => {}
            },
            Some(event) = set_events.next() => match event {
                Ok(Event::InitDone) => sets_listed = true,
                Ok(Event::Apply(c) | Event::Delete(c)) if sets_listed => {
                    *out.entry(format!("CloneSet by {}", last_writer(&c.metadata))).or_insert(0) += 1;
                }
                _ => {}
            },
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--kruise") {
        kruise_main(args[1..].to_vec());
    }
    let numbers: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let sets = numbers.first().copied().unwrap_or(100);
    let pods = numbers.get(1).copied().unwrap_or(100).max(1);
    let idle = Duration::from_secs(numbers.get(2).copied().unwrap_or(30) as u64);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(drive(sets, pods, idle));
}

async fn drive(sets: usize, per_set: usize, idle: Duration) {
    let cluster = TestCluster::shared().unwrap_or_else(|e| panic!("the test cluster did not start: {e}"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for path in ["deploy/crds", "deploy/namespace.yaml", "deploy/rbac.yaml"] {
        cluster.apply_path(root.join(path)).await.unwrap();
    }
    let client = cluster.client().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = cluster.service_account_kubeconfig(NAMESPACE, SERVICE_ACCOUNT, dir.path()).await.unwrap();
    let cert_dir = dir.path().join("certs");
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--kruise", "certs", "--out"])
        .arg(&cert_dir)
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "kruise certs failed");
    let ns = cluster.namespace("bench-scale").await.unwrap();
    let api: Api<CloneSet> = Api::namespaced(client.clone(), ns.name());
    let pod_api: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let names: Vec<String> = (0..sets).map(|i| format!("scale-{i:03}")).collect();

    // 1. Revisions and one pod per CloneSet, by the controller itself.
    let setup = Instant::now();
    futures::stream::iter(names.iter().map(|n| {
        let api = api.clone();
        async move { api.create(&PostParams::default(), &cloneset(n)).await.map(|_| ()) }
    }))
    .buffer_unordered(SETUP_CONCURRENCY)
    .try_collect::<Vec<()>>()
    .await
    .unwrap();
    let warm = Serve::start(&kubeconfig, &cert_dir, dir.path().join("warm-up.log"), &["--leader-elect=false"]);
    wait_all(&api, "one ready pod per CloneSet", |cs| {
        cs.status.as_ref().is_some_and(|s| s.ready_replicas == 1 && !s.update_revision.is_empty())
    })
    .await;
    warm.stop();
    println!("setup: {sets} CloneSets with a revision and a ready pod each in {:.1}s", setup.elapsed().as_secs_f64());

    // 2. The other pods: copies of each CloneSet's pod, on a node that does not exist.
    let setup = Instant::now();
    let originals = pod_api.list(&ListParams::default()).await.unwrap().items;
    let mut copies = Vec::new();
    for set in &names {
        let original = originals
            .iter()
            .find(|p| p.metadata.labels.as_ref().and_then(|l| l.get("set")) == Some(set))
            .unwrap_or_else(|| panic!("no pod of {set}"));
        let status = serde_json::to_value(original.status.clone().unwrap_or_default()).unwrap();
        for i in 1..per_set {
            copies.push((copy_of(original, set, i), status.clone()));
        }
    }
    let created = copies.len();
    futures::stream::iter(copies.into_iter().map(|(pod, status)| {
        let pod_api = pod_api.clone();
        async move {
            let name = pod.metadata.name.clone().unwrap_or_default();
            pod_api.create(&PostParams::default(), &pod).await?;
            pod_api.patch_status(&name, &PatchParams::default(), &Patch::Merge(json!({ "status": status }))).await?;
            Ok::<(), kube::Error>(())
        }
    }))
    .buffer_unordered(SETUP_CONCURRENCY)
    .try_collect::<Vec<()>>()
    .await
    .unwrap();
    println!("setup: {created} more pods created with their status in {:.1}s", setup.elapsed().as_secs_f64());

    // 3. A new generation for the measured process to catch up with.
    let replicas = i32::try_from(per_set).unwrap();
    futures::stream::iter(names.iter().map(|n| {
        let api = api.clone();
        async move {
            let patch = json!({"spec": {"replicas": replicas}});
            api.patch(n, &PatchParams::default(), &Patch::Merge(patch)).await.map(|_| ())
        }
    }))
    .buffer_unordered(SETUP_CONCURRENCY)
    .try_collect::<Vec<()>>()
    .await
    .unwrap();
    let synced_when = |cs: &CloneSet| {
        let generation = cs.metadata.generation.unwrap_or(0);
        cs.status.as_ref().is_some_and(|s| {
            s.observed_generation == generation && s.replicas == replicas && s.ready_replicas == replicas
        })
    };

    // The measured start.
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let watches_before = apiserver_watches(&client).await;
    let serve =
        Serve::start(&kubeconfig, &cert_dir, dir.path().join("serve.log"), &["--leader-identity", "bench-leader"]);
    let mut ready_at = None;
    let synced_at = loop {
        if ready_at.is_none() && http_get(serve.admin, "/readyz").await.0 == 200 {
            ready_at = Some(serve.started.elapsed());
        }
        let list = api.list(&ListParams::default()).await.unwrap();
        if list.items.len() == sets && list.items.iter().all(synced_when) {
            break serve.started.elapsed();
        }
        assert!(serve.started.elapsed() < Duration::from_secs(900), "kruise serve did not sync in 15 minutes");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let (_, rss_synced) = serve.rss_mib();
    while ready_at.is_none() {
        if http_get(serve.admin, "/readyz").await.0 == 200 {
            ready_at = Some(serve.started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let cpu_synced = serve.cpu();
    tokio::time::sleep(Duration::from_secs(5)).await;
    let metrics_before = http_get(serve.admin, "/metrics").await.1;
    let cpu_before = serve.cpu();
    tokio::time::sleep(idle).await;
    let cpu_idle = serve.cpu() - cpu_before;
    let metrics_after = http_get(serve.admin, "/metrics").await.1;
    let (peak, rss_idle) = serve.rss_mib();
    let watches_after = apiserver_watches(&client).await;
    let reconciles = "controller_runtime_reconcile_total{controller=\"cloneset\"";
    let (reconciled, idle_reconciles) = (
        metric_sum(&metrics_before, reconciles),
        metric_sum(&metrics_after, reconciles) - metric_sum(&metrics_before, reconciles),
    );
    let changes = changes_while_idle(&pod_api, &api, Duration::from_secs(10)).await;
    let warnings = serve.warnings();
    serve.stop();
    // What the planner makes of one CloneSet now (`kruise plan`, read-only).
    let plan = Command::new(std::env::current_exe().unwrap())
        .args(["--kruise", "plan", "cloneset", &names[0], "-n", ns.name()])
        .env("KUBECONFIG", cluster.kubeconfig())
        .output()
        .unwrap();
    let plan = String::from_utf8_lossy(&plan.stdout).into_owned();
    let pods_total = sets * per_set;
    println!();
    println!("kruise serve (leader) with {sets} CloneSets, {pods_total} pods; load average at start: {}", load.trim());
    println!("  start to /readyz 200           {:>8.1} s", ready_at.unwrap_or_default().as_secs_f64());
    println!("  start to synced (all {sets:>3})     {:>8.1} s", synced_at.as_secs_f64());
    println!("  CPU from start to synced       {:>8.1} s", cpu_synced.as_secs_f64());
    println!("  RSS once synced                {rss_synced:>8.1} MiB");
    println!("  RSS after the idle window      {rss_idle:>8.1} MiB");
    println!("  peak RSS                       {peak:>8.1} MiB");
    println!(
        "  CPU while idle ({:>3} s)         {:>8.2} % of a core",
        idle.as_secs(),
        cpu_idle.as_secs_f64() * 100.0 / idle.as_secs_f64()
    );
    println!("  reconciles up to the idle window {reconciled:>6}, during it {idle_reconciles}");
    let adds = "workqueue_adds_total{controller=\"cloneset\"";
    println!(
        "  work-queue adds (watch triggers) up to the idle window {}, during it {}",
        metric_sum(&metrics_before, adds),
        metric_sum(&metrics_after, adds) - metric_sum(&metrics_before, adds)
    );
    let writes = |text: &str| -> BTreeMap<String, f64> {
        let prefix = "kruise_controller_api_writes_total{controller=\"cloneset\",write=\"";
        text.lines()
            .filter_map(|l| l.strip_prefix(prefix))
            .filter_map(|rest| {
                let (kind, value) = rest.split_once("\"}")?;
                Some((kind.to_string(), value.trim().parse().ok()?))
            })
            .collect()
    };
    let (writes_before, writes_after) = (writes(&metrics_before), writes(&metrics_after));
    let idle_writes: Vec<String> =
        writes_after.iter().map(|(k, v)| format!("{k} {}", v - writes_before.get(k).copied().unwrap_or(0.0))).collect();
    println!("  controller writes up to the idle window {writes_before:?}; during it: {}", idle_writes.join(", "));
    let resources: std::collections::BTreeSet<&String> = watches_before.keys().chain(watches_after.keys()).collect();
    let opened: Vec<String> = resources
        .into_iter()
        .filter_map(|r| {
            let delta = watches_after.get(r).copied().unwrap_or(0.0) - watches_before.get(r).copied().unwrap_or(0.0);
            (delta != 0.0).then(|| format!("{r} {delta}"))
        })
        .collect();
    println!("  watches opened on the apiserver: {}", opened.join(", "));
    println!("  kruise plan of {} after the idle window:\n{plan}", names[0]);
    println!("  pod and CloneSet changes in 10 s after it, by last writer: {changes:?}");
    println!("  warnings logged: {}", warnings.len());
    for line in warnings.iter().take(5) {
        println!("    {line}");
    }
}
