//! What the rollout benchmarks share (`cloneset_rollout`, issue 11; `statefulset_rollout`, issue
//! 27): an in-place rollout of a workload of N pods on the real control plane of `testenv/` with
//! its simulated kubelet. The controller runs in a child process of its own (the example started
//! again with `--controller NAMESPACE KUBECONFIG`, on a current-thread runtime, with the `kruise`
//! binary's allocator), so its CPU time and memory are the controller's alone: the simulated
//! kubelet and the driver stay in the parent.
//!
//! Per size it reports the wall time of the scale-up and of the rollout, the controller's API writes
//! per updated pod (plan writes by kind; Events are not included), its CPU time per updated pod,
//! the reconciles with their mean time, and its resident memory after the scale-up, after the
//! rollout and at its peak. It asserts nothing about speed (machines are noisy).

mod proc;

use std::collections::BTreeMap;
use std::future::Future;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kruise::controller::Settings;
use kruise::metrics::Metrics;
use kruise_testenv::TestCluster;
use kube::api::{Api, ListParams};
use serde_json::Value;

/// The line that ends one metrics snapshot on the child's stdout.
const END: &str = "# END";

/// One workload kind under benchmark.
pub trait Bench {
    /// The controller's name in its metrics.
    const CONTROLLER: &'static str;
    /// Other controllers the child runs beside it whose writes are reported too (a
    /// UnitedDeployment's CloneSets are written by the CloneSet controller).
    const ALSO: &'static [&'static str] = &[];
    /// Runs the controller until `shutdown` completes.
    fn run(
        client: kube::Client,
        settings: Settings,
        metrics: Metrics,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> impl Future<Output = ()>;
    /// Creates the workload `bench` of `n` pods at image nginx:1.25.
    fn create(client: &kube::Client, ns: &str, n: i32) -> impl Future<Output = ()>;
    /// Moves its template to nginx:1.26.
    fn patch_image(client: &kube::Client, ns: &str) -> impl Future<Output = ()>;
    /// Its status, as JSON (`None` while it has none).
    fn status(client: &kube::Client, ns: &str) -> impl Future<Output = Option<Value>>;
}

/// The example's entry as the controller child: with `--controller NAMESPACE KUBECONFIG` as its
/// arguments it runs [`child`] with `run` (logging to stderr under `RUST_LOG`) and returns true;
/// otherwise it returns false and the example drives.
pub fn run_child<F, Fut>(args: &[String], run: F) -> bool
where
    F: FnOnce(kube::Client, Settings, Metrics, futures::future::BoxFuture<'static, ()>) -> Fut,
    Fut: Future<Output = ()>,
{
    if args.first().map(String::as_str) != Some("--controller") {
        return false;
    }
    if let Ok(filter) = std::env::var("RUST_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .init();
    }
    child(args[1].clone(), args[2].clone().into(), run);
    true
}

/// Runs the driver `f` on a runtime of two worker threads.
pub fn block_on<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap().block_on(f)
}

/// The child: runs controllers (`run(client, settings, metrics, shutdown)`, with the settings
/// of `namespace`) until stdin closes; every line read on stdin is answered with the metrics text
/// and [`END`].
pub fn child<F, Fut>(namespace: String, kubeconfig: std::path::PathBuf, run: F)
where
    F: FnOnce(kube::Client, Settings, Metrics, futures::future::BoxFuture<'static, ()>) -> Fut,
    Fut: Future<Output = ()>,
{
    let metrics = Metrics::new();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let m = metrics.clone();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        let mut stdout = std::io::stdout();
        for _ in stdin.lock().lines().map_while(Result::ok) {
            let _ = writeln!(stdout, "{}{END}", m.encode());
            let _ = stdout.flush();
        }
        let _ = stop_tx.send(());
    });
    rt.block_on(async move {
        let client = kruise_testenv::client_from_kubeconfig(&kubeconfig).await.unwrap();
        let settings = Settings { namespace: Some(namespace), ..Settings::default() };
        let shutdown: futures::future::BoxFuture<'static, ()> = Box::pin(async move {
            let _ = stop_rx.await;
        });
        run(client, settings, metrics, shutdown).await;
    });
}

/// The controller process, asked for snapshots through its stdin.
pub struct Controller {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    name: &'static str,
}

impl Controller {
    pub fn start(namespace: &str, kubeconfig: &std::path::Path, name: &'static str) -> Controller {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .arg("--controller")
            .arg(namespace)
            .arg(kubeconfig)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Controller { child, stdin, stdout, name }
    }

    /// CPU time of the whole child.
    pub fn cpu(&self) -> Duration {
        proc::cpu(self.child.id())
    }

    /// (peak, current) resident set of the child in MiB.
    pub fn rss_mib(&self) -> (f64, f64) {
        proc::rss_mib(self.child.id())
    }

    pub fn metrics(&mut self) -> String {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "sample").unwrap();
        stdin.flush().unwrap();
        let mut text = String::new();
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "the controller process ended");
            if line.trim_end() == END {
                return text;
            }
            text.push_str(&line);
        }
    }

    pub fn sample(&mut self) -> Sample {
        self.sample_of(self.name)
    }

    /// A sample of the controller `name` of the child (its CPU and memory are the whole child's).
    pub fn sample_of(&mut self, name: &str) -> Sample {
        let text = self.metrics();
        Sample {
            cpu: self.cpu(),
            writes: writes(&text, name),
            reconciles: metric(
                &text,
                &format!("controller_runtime_reconcile_time_seconds_count{{controller=\"{name}\"}}"),
            ),
            reconcile_seconds: metric(
                &text,
                &format!("controller_runtime_reconcile_time_seconds_sum{{controller=\"{name}\"}}"),
            ),
        }
    }

    pub fn stop(mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// A metric's value from the text exposition (`name{labels} value`).
pub fn metric(text: &str, prefix: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// The controller's writes by kind (`kruise_controller_api_writes_total{controller,write}`).
pub fn writes(text: &str, controller: &str) -> BTreeMap<String, f64> {
    let prefix = format!("kruise_controller_api_writes_total{{controller=\"{controller}\",write=\"");
    text.lines()
        .filter_map(|l| l.strip_prefix(prefix.as_str()))
        .filter_map(|rest| {
            let (kind, value) = rest.split_once("\"}")?;
            Some((kind.to_string(), value.trim().parse().ok()?))
        })
        .collect()
}

pub struct Sample {
    pub cpu: Duration,
    pub writes: BTreeMap<String, f64>,
    pub reconciles: f64,
    pub reconcile_seconds: f64,
}

impl Sample {
    /// The writes by kind made between `before` and this sample (kinds without any left out).
    pub fn writes_since(&self, before: &Sample) -> BTreeMap<&str, f64> {
        self.writes
            .iter()
            .map(|(k, v)| (k.as_str(), v - before.writes.get(k).copied().unwrap_or(0.0)))
            .filter(|(_, v)| *v > 0.0)
            .collect()
    }
}

fn count(status: &Value, field: &str) -> i64 {
    status[field].as_i64().unwrap_or(0)
}

async fn wait_status<B: Bench>(client: &kube::Client, ns: &str, what: &str, check: impl Fn(&Value) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(900);
    loop {
        if B::status(client, ns).await.is_some_and(|s| check(&s)) {
            return;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The example's `main`: the child's entry with `--controller`, else the driver over the sizes
/// given (default 100).
pub fn main<B: Bench>() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if run_child(&args, |c, s, m, shutdown| B::run(c, s, m, shutdown)) {
        return;
    }
    let sizes: Vec<i32> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![100] } else { sizes };
    block_on(drive::<B>(sizes));
}

async fn drive<B: Bench>(sizes: Vec<i32>) {
    let cluster = TestCluster::shared().unwrap_or_else(|e| panic!("the test cluster did not start: {e}"));
    cluster.apply_path(concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/crds")).await.unwrap();
    let client = cluster.client().await.unwrap();
    println!("size  scale-up  rollout  writes/pod  cpu/pod  reconciles  mean reconcile");
    for n in sizes {
        let ns = cluster.namespace("bench-rollout").await.unwrap();
        let ns = ns.name();
        let mut controller = Controller::start(ns, cluster.kubeconfig(), B::CONTROLLER);
        let started = Instant::now();
        B::create(&client, ns, n).await;
        let n64 = i64::from(n);
        wait_status::<B>(&client, ns, "all pods ready", |s| {
            count(s, "readyReplicas") == n64 && count(s, "availableReplicas") == n64
        })
        .await;
        let scale_up = started.elapsed();
        let (_, after_scale_up) = controller.rss_mib();
        let before = controller.sample();
        let before_also: Vec<Sample> = B::ALSO.iter().map(|name| controller.sample_of(name)).collect();
        let started = Instant::now();
        B::patch_image(&client, ns).await;
        wait_status::<B>(&client, ns, "the rollout", |s| {
            count(s, "observedGeneration") == 2
                && count(s, "updatedReadyReplicas") == n64
                && count(s, "readyReplicas") == n64
        })
        .await;
        let rollout = started.elapsed();
        let after = controller.sample();
        let after_also: Vec<Sample> = B::ALSO.iter().map(|name| controller.sample_of(name)).collect();
        let (peak, now) = controller.rss_mib();
        controller.stop();
        let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
        let listed = pods.list(&ListParams::default()).await.unwrap().items.len();
        assert_eq!(listed, n as usize, "an in-place rollout keeps the pods");
        let per_pod = f64::from(n);
        let kinds = after.writes_since(&before);
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
        for ((name, before), after) in B::ALSO.iter().zip(&before_also).zip(&after_also) {
            let kinds = after.writes_since(before);
            let total: f64 = kinds.values().sum();
            let by_kind: Vec<String> = kinds.iter().map(|(k, v)| format!("{k} {:.2}", v / per_pod)).collect();
            println!("      {name} controller: {:.2} writes/pod ({})", total / per_pod, by_kind.join(", "));
        }
        println!(
            "      controller process RSS: {after_scale_up:.1} MiB after the scale-up, {now:.1} MiB after the \
             rollout, peak {peak:.1} MiB"
        );
    }
}
