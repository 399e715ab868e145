//! Benchmark (issue 29): one `kruise daemon`'s CPU and resident memory, idle and while pulling,
//! on the real control plane of `testenv/` with a fake CRI runtime (`kruise_cri::fake`) on a
//! unix socket — the daemon's own work (watching its NodeImage, driving the pulls over gRPC,
//! writing status), not a registry's.
//!
//! `cargo build --bin kruise && cargo run --example daemon_bench -- [IMAGES] [PULL_MS]
//! [IDLE_SECONDS]` starts the `kruise` binary next to this example's (`target/<profile>/kruise`) as
//! `kruise daemon` with the token of ServiceAccount `kruise-daemon` (deploy/'s RBAC), for a node
//! of its own with an empty NodeImage; measures IDLE_SECONDS (default 30) idle; then writes
//! IMAGES tags (default 100) into the NodeImage, each pull taking PULL_MS (default 2000) in the
//! runtime, and measures until the status says every one succeeded; then IDLE_SECONDS idle again.
//! It prints per phase: the wall time, the daemon's CPU time (and share of one core), its
//! resident memory (now and peak), and its NodeImage status writes. Nothing is asserted.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, dead_code)]

#[path = "rollout_support/proc.rs"]
mod proc;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kruise::apis::nodeimage::v1beta1::NodeImage;
use kruise_cri::fake::{Behaviour, FakeRuntime};
use kruise_testenv::TestCluster;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, d: u64| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let (images, pull_ms, idle) = (num(0, 100), num(1, 2000), num(2, 30));
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap().block_on(drive(
        images,
        Duration::from_millis(pull_ms),
        Duration::from_secs(idle),
    ));
}

/// The `kruise` binary built beside this example.
fn kruise_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(|d| d.parent()).unwrap();
    let bin = dir.join("kruise");
    assert!(bin.exists(), "{} is missing: run `cargo build --bin kruise` first", bin.display());
    bin
}

/// What one phase measured.
struct Phase {
    wall: Duration,
    cpu: Duration,
    rss: f64,
    peak: f64,
    status_writes: u64,
}

fn print(name: &str, p: &Phase) {
    let secs = p.wall.as_secs_f64();
    println!(
        "  {name:<8} {secs:>6.1}s  CPU {:>6.2}s ({:>5.1}% of a core)  RSS {:>5.1} MiB (peak {:>5.1} MiB)  status writes {}",
        p.cpu.as_secs_f64(),
        100.0 * p.cpu.as_secs_f64() / secs.max(0.001),
        p.rss,
        p.peak,
        p.status_writes
    );
}

fn rv(ni: &NodeImage) -> u64 {
    ni.metadata.resource_version.as_deref().and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// Samples the daemon's memory every 100 ms while `until` is not done; returns the phase.
async fn measure<F, Fut>(child: &Child, api: &Api<NodeImage>, node: &str, mut until: F) -> Phase
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let pid = child.id();
    let cpu0 = proc::cpu(pid);
    let started = Instant::now();
    // Status writes: the daemon is the only writer of the NodeImage during a phase; each write
    // moves its resourceVersion (etcd revisions are cluster-wide, so count the changes seen).
    let mut writes = 0;
    let mut last = api.get(node).await.map(|ni| rv(&ni)).unwrap_or(0);
    let mut peak = 0.0f64;
    loop {
        peak = peak.max(proc::rss_mib(pid).1);
        if let Ok(ni) = api.get(node).await {
            let now = rv(&ni);
            if now != last {
                writes += 1;
                last = now;
            }
        }
        if until().await {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, rss) = proc::rss_mib(pid);
    Phase { wall: started.elapsed(), cpu: proc::cpu(pid) - cpu0, rss, peak: peak.max(rss), status_writes: writes }
}

async fn drive(images: u64, pull: Duration, idle: Duration) {
    let cluster = TestCluster::shared().unwrap_or_else(|e| panic!("the test cluster did not start: {e}"));
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for path in ["deploy/namespace.yaml", "deploy/crds/apps.kruise.io_nodeimages.yaml", "deploy/daemon-rbac.yaml"] {
        cluster.apply_path(root.join(path)).await.unwrap();
    }
    let admin = cluster.client().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = cluster.service_account_kubeconfig("kruise-system", "kruise-daemon", dir.path()).await.unwrap();

    let fake = FakeRuntime::new("fake-containerd");
    let image = |i: u64| format!("registry.bench/daemon-{i:04}:v1");
    for i in 0..images {
        fake.script(&image(i), Behaviour::Succeed { delay: pull });
    }
    let socket = dir.path().join("containerd.sock");
    fake.serve(&socket).await.unwrap();

    let node = format!("daemon-bench-{}", fastrand::u32(..));
    let api: Api<NodeImage> = Api::all(admin.clone());
    let ni: NodeImage = serde_json::from_value(json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "NodeImage",
        "metadata": {"name": node}, "spec": {}}))
    .unwrap();
    api.create(&PostParams::default(), &ni).await.unwrap();

    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new(kruise_binary())
        .args(["daemon", "--node-name", &node, "--kubeconfig"])
        .arg(&kubeconfig)
        .arg("--runtime-endpoint")
        .arg(format!("unix://{}", socket.display()))
        .args(["--admin-addr", &format!("127.0.0.1:{port}")])
        .env("KRUISE_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    // Ready: /readyz answers 200 (the runtime found, the NodeImage watched).
    let started = Instant::now();
    while !ready(port) {
        assert!(started.elapsed() < Duration::from_secs(60), "the daemon was not ready in a minute");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, startup_rss) = proc::rss_mib(child.id());
    println!(
        "kruise daemon ({}), {images} pulls of {} ms each, idle phases of {}s",
        if cfg!(debug_assertions) { "debug build of this example; the daemon as built" } else { "release" },
        pull.as_millis(),
        idle.as_secs()
    );
    println!("  ready in {:.1}s, RSS {startup_rss:.1} MiB", started.elapsed().as_secs_f64());

    let until_idle = |d: Duration| {
        let end = Instant::now() + d;
        move || async move { Instant::now() >= end }
    };
    let before = measure(&child, &api, &node, until_idle(idle)).await;
    print("idle", &before);

    let tags: serde_json::Map<String, Value> = (0..images)
        .map(|i| {
            let name = image(i);
            let (repo, tag) = name.rsplit_once(':').unwrap();
            (repo.to_string(), json!({"tags": [{"tag": tag, "version": 1}]}))
        })
        .collect();
    api.patch(&node, &PatchParams::default(), &Patch::Merge(json!({"spec": {"images": tags}}))).await.unwrap();
    let watch = api.clone();
    let name = node.clone();
    let pulling = measure(&child, &api, &node, move || {
        let (watch, name) = (watch.clone(), name.clone());
        async move {
            let ni = watch.get(&name).await.unwrap();
            let st = ni.status.unwrap_or_default();
            st.succeeded + st.failed >= i32::try_from(images).unwrap_or(i32::MAX)
        }
    })
    .await;
    print("pulling", &pulling);
    let st = api.get(&node).await.unwrap().status.unwrap_or_default();
    println!(
        "  {} succeeded, {} failed; the runtime saw {} pulls, at most {} at once",
        st.succeeded,
        st.failed,
        fake.pulls().len(),
        fake.max_concurrent_pulls()
    );

    let after = measure(&child, &api, &node, until_idle(idle)).await;
    print("idle", &after);

    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = api.delete(&node, &DeleteParams::default()).await;
}

fn ready(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else { return false };
    if write!(s, "GET /readyz HTTP/1.0\r\nHost: localhost\r\n\r\n").is_err() {
        return false;
    }
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.split_whitespace().nth(1) == Some("200")
}
