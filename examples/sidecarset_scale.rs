//! Benchmark (issue 28): the leader of `kruise serve` with SETS SidecarSets and PODS injected pods
//! (default 1,000 and 5,000) on the real control plane of `testenv/`, then one image rollout of a
//! set matching ROLLOUT_PODS of them (default 1,000).
//!
//! `cargo run --example sidecarset_scale -- [SETS] [PODS] [ROLLOUT_PODS]` reports: the time from
//! the process start to `/readyz` 200 and until every SidecarSet's status is observed (its
//! `observedGeneration` caught up and `matchedPods` the pods built for it), the leader's resident
//! memory then and at its peak, and for one image change of the rollout set (`maxUnavailable`
//! 20%): the wall time and CPU until `updatedReadyPods` = ROLLOUT_PODS, and the controller's
//! writes per pod (`kruise_controller_api_writes_total{controller="sidecarset"}` on the admin
//! port). It asserts nothing about speed; a rollout that does not converge within the timeout
//! (ROLLOUT_TIMEOUT_SECONDS, default 600) is reported with the status last seen and what `kruise
//! plan sidecarset` makes of the set, not as a failure.
//!
//! How the pods are built: already injected, as the pod webhook would leave them — each set is
//! defaulted and hashed by the webhook's code (`core::sidecar::defaults`), created through v1beta1
//! (the storage version: no conversion webhook needed) with those hash annotations, and each pod
//! gets its set's sidecar from the injection code itself (`core::sidecar::inject`), so no webhook
//! is registered. Set 0 (`group=rollout`) matches the first ROLLOUT_PODS pods, which the simulated
//! kubelet runs (an in-place image change needs a kubelet that reports the new imageID); the
//! others are spread over the other sets, bound to a node that does not exist and given a
//! Running/Ready status through `pods/status` (nothing runs or deletes them, as in
//! `cloneset_scale`).
//!
//! The measured process is this example started again as `kruise` (`--kruise ARGS...`, with the
//! binary's allocator): `kruise serve` as `tests/e2e_common` starts it (deploy/'s ServiceAccount
//! and RBAC, leader election on, certificates from `kruise certs`, `--cert-mode files`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "rollout_support/proc.rs"]
mod proc;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kruise::apis::SidecarSet;
use kruise::apis::sidecarset::v1beta1;
use kruise::core::sidecar::inject::{InjectionInput, plan_injection};
use kruise_testenv::TestCluster;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// The allocator of the `kruise` binary, so the memory figures are the product's.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: kruise_alloc::Mimalloc = kruise_alloc::Mimalloc;

/// The manager namespace and ServiceAccount of `deploy/`.
const NAMESPACE: &str = "kruise-system";
const SERVICE_ACCOUNT: &str = "kruise-manager";
/// The node the pods of the other sets are bound to: no such node exists.
const ABSENT_NODE: &str = "bench-absent-node";
/// Writes the benchmark sends side by side while building the cluster.
const SETUP_CONCURRENCY: usize = 16;
const OLD_IMAGE: &str = "busybox:1.36";
const NEW_IMAGE: &str = "busybox:1.37";

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
    fn start(kubeconfig: &Path, cert_dir: &Path, log: PathBuf) -> Serve {
        let (addr, admin) = (free_port(), free_port());
        let log_file = std::fs::File::create(&log).unwrap();
        let started = Instant::now();
        let child = Command::new(std::env::current_exe().unwrap())
            .args(["--kruise", "serve", "--addr", &format!("127.0.0.1:{addr}")])
            .args(["--admin-addr", &format!("127.0.0.1:{admin}"), "--cert-mode", "files", "--cert-dir"])
            .arg(cert_dir)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--leader-identity", "bench-leader"])
            .env("KRUISE_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(log_file)
            .spawn()
            .unwrap();
        Serve { child, admin, started, log }
    }

    fn cpu(&self) -> Duration {
        proc::cpu(self.child.id())
    }

    /// (peak, current) resident set in MiB.
    fn rss_mib(&self) -> (f64, f64) {
        proc::rss_mib(self.child.id())
    }

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

/// The SidecarSet controller's writes by kind.
fn writes(text: &str) -> BTreeMap<String, f64> {
    let prefix = "kruise_controller_api_writes_total{controller=\"sidecarset\",write=\"";
    text.lines()
        .filter_map(|l| l.strip_prefix(prefix))
        .filter_map(|rest| {
            let (kind, value) = rest.split_once("\"}")?;
            Some((kind.to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

fn set_name(i: usize) -> String {
    format!("bench-{i:04}")
}

/// SidecarSet `i` at `image`, defaulted and hashed as the webhook leaves it (v1alpha1 model): set 0
/// selects `group=rollout` with maxUnavailable 20%, the others `bench-set=<name>`.
fn sidecarset(i: usize, image: &str) -> SidecarSet {
    let name = set_name(i);
    let selector = if i == 0 { json!({"group": "rollout"}) } else { json!({"bench-set": name}) };
    let mut set: SidecarSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet", "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": selector},
            "containers": [{"name": "agent", "image": image, "command": ["sleep", "infinity"]}],
            "updateStrategy": {"type": "RollingUpdate", "maxUnavailable": "20%"}
        }
    }))
    .unwrap();
    kruise::core::sidecar::defaults::default_sidecarset(&mut set).unwrap();
    set
}

/// The v1beta1 form of a set (the storage version).
fn to_v1beta1(set: &SidecarSet) -> v1beta1::SidecarSet {
    let v = serde_json::to_value(set).unwrap();
    let v = kruise::core::conversion::convert(0, &v, kruise::core::conversion::V1BETA1).unwrap();
    serde_json::from_value(v).unwrap()
}

/// Pod `name` of `ns` with `labels`, injected with `set` by the webhook's injection code.
fn injected_pod(
    name: &str,
    ns: &str,
    labels: Value,
    set: &Arc<SidecarSet>,
    ns_labels: &BTreeMap<String, String>,
) -> Pod {
    let mut pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}], "terminationGracePeriodSeconds": 0}
    }))
    .unwrap();
    let no_revisions = Vec::new;
    let input = InjectionInput {
        namespace_labels: ns_labels,
        revisions: &no_revisions,
        draw: 0.0,
        now: "2024-05-01T00:00:00Z",
        sort_by_name: false,
    };
    plan_injection(&pod, std::slice::from_ref(set), &input).unwrap().apply(&mut pod);
    pod
}

/// Running and Ready, every container running its image (for pods on the absent node).
fn running_status(pod: &Pod) -> Value {
    let statuses: Vec<Value> = pod
        .spec
        .iter()
        .flat_map(|s| &s.containers)
        .map(|c| {
            let image = c.image.clone().unwrap_or_default();
            json!({"name": c.name, "image": image, "imageID": format!("docker.io/library/{image}@sha256:{}", "ab".repeat(32)),
                   "ready": true, "started": true, "restartCount": 0,
                   "state": {"running": {"startedAt": "2024-05-01T00:00:00Z"}}})
        })
        .collect();
    json!({"status": {"phase": "Running", "containerStatuses": statuses, "conditions": [
        {"type": "PodScheduled", "status": "True"}, {"type": "Initialized", "status": "True"},
        {"type": "ContainersReady", "status": "True"}, {"type": "Ready", "status": "True"}]}})
}

fn count(v: &Value, field: &str) -> i64 {
    v["status"][field].as_i64().unwrap_or(0)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--kruise") {
        kruise_main(args[1..].to_vec());
    }
    let numbers: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let sets = numbers.first().copied().unwrap_or(1000).max(1);
    let pods = numbers.get(1).copied().unwrap_or(5000);
    let rollout = numbers.get(2).copied().unwrap_or(1000).min(pods).max(1);
    let timeout = std::env::var("ROLLOUT_TIMEOUT_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(600);
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap().block_on(drive(
        sets,
        pods.max(rollout),
        rollout,
        Duration::from_secs(timeout),
    ));
}

async fn drive(sets: usize, pods: usize, rollout: usize, timeout: Duration) {
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
    let ns = cluster.namespace("bench-sidecar").await.unwrap();
    let ns = ns.name().to_string();
    let set_api: Api<v1beta1::SidecarSet> = Api::all(client.clone());
    let pod_api: Api<Pod> = Api::namespaced(client.clone(), &ns);

    // 1. The SidecarSets, as the webhook leaves them.
    let setup = Instant::now();
    let defaulted: Vec<Arc<SidecarSet>> = (0..sets).map(|i| Arc::new(sidecarset(i, OLD_IMAGE))).collect();
    futures::stream::iter(defaulted.iter().map(|s| {
        let api = set_api.clone();
        let set = to_v1beta1(s);
        async move { api.create(&PostParams::default(), &set).await.map(|_| ()) }
    }))
    .buffer_unordered(SETUP_CONCURRENCY)
    .try_collect::<Vec<()>>()
    .await
    .unwrap();
    println!("setup: {sets} SidecarSets in {:.1}s", setup.elapsed().as_secs_f64());

    // 2. The pods, injected: the rollout set's run on the simulated kubelet, the others on no node.
    let setup = Instant::now();
    let ns_labels: BTreeMap<String, String> = [("kubernetes.io/metadata.name".to_string(), ns.clone())].into();
    let mut expected = vec![0i64; sets];
    let mut built = Vec::with_capacity(pods);
    for j in 0..pods {
        let set = if j < rollout || sets == 1 { 0 } else { 1 + (j - rollout) % (sets - 1) };
        expected[set] += 1;
        let labels =
            if set == 0 { json!({"group": "rollout"}) } else { json!({"group": "other", "bench-set": set_name(set)}) };
        let mut pod = injected_pod(&format!("pod-{j:05}"), &ns, labels, &defaulted[set], &ns_labels);
        let on_kubelet = set == 0;
        if !on_kubelet && let Some(spec) = pod.spec.as_mut() {
            spec.node_name = Some(ABSENT_NODE.into());
        }
        built.push((pod, on_kubelet));
    }
    futures::stream::iter(built.into_iter().map(|(pod, on_kubelet)| {
        let pod_api = pod_api.clone();
        async move {
            let name = pod.metadata.name.clone().unwrap_or_default();
            pod_api.create(&PostParams::default(), &pod).await?;
            if !on_kubelet {
                pod_api.patch_status(&name, &PatchParams::default(), &Patch::Merge(running_status(&pod))).await?;
            }
            Ok::<(), kube::Error>(())
        }
    }))
    .buffer_unordered(SETUP_CONCURRENCY)
    .try_collect::<Vec<()>>()
    .await
    .unwrap();
    // The simulated kubelet runs the rollout set's pods.
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        let list = pod_api.list(&ListParams::default().labels("group=rollout")).await.unwrap();
        let ready = list.items.iter().filter(|p| kruise::core::pods::is_ready(p)).count();
        if ready == rollout {
            break;
        }
        assert!(Instant::now() < deadline, "only {ready} of {rollout} rollout pods became ready");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!(
        "setup: {pods} injected pods ({rollout} on the simulated kubelet) in {:.1}s",
        setup.elapsed().as_secs_f64()
    );

    // 3. The measured start: until every set's status is observed.
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let serve = Serve::start(&kubeconfig, &cert_dir, dir.path().join("serve.log"));
    let mut ready_at = None;
    let observed = |list: &[v1beta1::SidecarSet]| {
        list.iter().all(|s| {
            let v = serde_json::to_value(s).unwrap();
            let i: usize = s.metadata.name.as_deref().unwrap_or("").trim_start_matches("bench-").parse().unwrap_or(0);
            v["status"]["observedGeneration"] == v["metadata"]["generation"]
                && count(&v, "matchedPods") == expected[i]
                && count(&v, "readyPods") == expected[i]
        })
    };
    let synced_at = loop {
        if ready_at.is_none() && http_get(serve.admin, "/readyz").await.0 == 200 {
            ready_at = Some(serve.started.elapsed());
        }
        let list = set_api.list(&ListParams::default()).await.unwrap().items;
        if list.len() == sets && observed(&list) {
            break serve.started.elapsed();
        }
        assert!(serve.started.elapsed() < Duration::from_secs(900), "kruise serve did not sync in 15 minutes");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let (_, rss_synced) = serve.rss_mib();
    let cpu_synced = serve.cpu();
    tokio::time::sleep(Duration::from_secs(5)).await;

    // 4. One image change of set 0.
    let before = http_get(serve.admin, "/metrics").await.1;
    let cpu_before = serve.cpu();
    let started = Instant::now();
    let new = to_v1beta1(&sidecarset(0, NEW_IMAGE));
    let patch =
        json!({"metadata": {"annotations": new.metadata.annotations}, "spec": {"containers": new.spec.containers}});
    let patched = set_api.patch(&set_name(0), &PatchParams::default(), &Patch::Merge(patch)).await.unwrap();
    let generation = patched.metadata.generation.unwrap_or(0);
    let target = i64::try_from(rollout).unwrap();
    let (converged, last) = loop {
        let last = serde_json::to_value(set_api.get(&set_name(0)).await.unwrap()).unwrap();
        if last["status"]["observedGeneration"] == json!(generation) && count(&last, "updatedReadyPods") == target {
            break (true, last);
        }
        if started.elapsed() > timeout {
            break (false, last);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let rollout_wall = started.elapsed();
    let cpu_rollout = serve.cpu() - cpu_before;
    let after = http_get(serve.admin, "/metrics").await.1;
    let (peak, rss_now) = serve.rss_mib();
    let warnings = serve.warnings();
    let plan = Command::new(std::env::current_exe().unwrap())
        .args(["--kruise", "plan", "sidecarset", &set_name(0)])
        .env("KUBECONFIG", cluster.kubeconfig())
        .output()
        .unwrap();
    drop(serve);

    let (w_before, w_after) = (writes(&before), writes(&after));
    let delta: BTreeMap<&str, f64> = w_after
        .iter()
        .map(|(k, v)| (k.as_str(), v - w_before.get(k).copied().unwrap_or(0.0)))
        .filter(|(_, v)| *v > 0.0)
        .collect();
    let total: f64 = delta.values().sum();
    let per_pod = rollout as f64;
    println!();
    println!(
        "kruise serve (leader) with {sets} SidecarSets, {pods} injected pods; load average at start: {}",
        load.trim()
    );
    println!("  start to /readyz 200                 {:>8.1} s", ready_at.unwrap_or_default().as_secs_f64());
    println!("  start to every SidecarSet observed   {:>8.1} s", synced_at.as_secs_f64());
    println!("  CPU from start to observed           {:>8.1} s", cpu_synced.as_secs_f64());
    println!("  RSS once observed                    {rss_synced:>8.1} MiB");
    println!("  writes up to then                    {w_before:?}");
    println!(
        "  rollout of {} to {NEW_IMAGE} over {rollout} pods (maxUnavailable 20%): {}",
        set_name(0),
        if converged { "converged" } else { "DID NOT CONVERGE" }
    );
    println!("    wall time                          {:>8.1} s", rollout_wall.as_secs_f64());
    println!(
        "    CPU                                {:>8.2} s ({:.2} ms per pod)",
        cpu_rollout.as_secs_f64(),
        cpu_rollout.as_secs_f64() * 1000.0 / per_pod
    );
    let by_kind: Vec<String> = delta.iter().map(|(k, v)| format!("{k} {:.2}", v / per_pod)).collect();
    println!("    writes per pod                     {:>8.2} ({})", total / per_pod, by_kind.join(", "));
    println!("  RSS after the rollout                {rss_now:>8.1} MiB");
    println!("  peak RSS                             {peak:>8.1} MiB");
    if !converged {
        println!("  status last seen: {}", last["status"]);
    }
    let plan_text = String::from_utf8_lossy(&plan.stdout);
    let plan_lines: Vec<&str> = plan_text.lines().collect();
    println!("  kruise plan sidecarset {} ({} lines; first 8):", set_name(0), plan_lines.len());
    for l in plan_lines.iter().take(8) {
        println!("    {l}");
    }
    if !plan.status.success() {
        println!("    (exit {:?}) {}", plan.status.code(), String::from_utf8_lossy(&plan.stderr).trim());
    }
    println!("  warnings logged: {}", warnings.len());
    for line in warnings.iter().take(5) {
        println!("    {line}");
    }
}
