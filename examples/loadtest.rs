//! The side-by-side load test of `make bench` (issue 16): `kruise serve`, the Go baseline
//! (`benches/go-webhook`) and the Rust floor (`benches/floor.rs`) answer the same pod review on
//! loopback, each pinned to one core while the load generator runs on the other, and one table
//! compares them: requests/s over alternating rounds (with the spread), p50/p99 latency, the
//! server's CPU time per request, p99 at a fixed request rate, and the resident memory idle and
//! after `--total` requests.
//!
//! The fixed rate is measured twice. Once as the host is. Once with both CPUs kept awake: a
//! busy loop at `SCHED_IDLE` on each of them runs only when nothing else wants the CPU, so the
//! kernel never idles it. On a VM an idle vCPU is halted, and waking it for the next request
//! takes the hypervisor hundreds of µs to milliseconds: at 1,000 req/s both sides sleep between
//! requests, and that wake-up, not the server, makes most of the tail (issue 16). The second
//! figure is what the servers give on a host whose CPUs are not idle, as on a busy node.
//!
//! `make bench` runs two builds of kruise: `kruise` is the binary `make pgo` builds, optimised with a
//! profile of its own admission path (`tools/pgo.sh`), and `kruise-nopgo` is the plain
//! `cargo build --release` binary, so the gain of the profile is measured in the same run.
//!
//! The load generator is h2load (Debian's `nghttp2-client`) over HTTP/1.1 with keep-alive; when
//! it is not installed, a built-in tokio-rustls client stands in (and says so). Every loop is
//! bounded in time and count, and only 127.0.0.1 is contacted.
//!
//! `cargo run --release --example loadtest -- [--kruise target/release/kruise]
//! [--kruise-nopgo target/release/kruise] [--go target/bench/go-webhook]
//! [--floor target/release/examples/floor] [--servers kruise,kruise-nopgo,go,floor]
//! [--review examples/reviews/pod-create.json] [--objects-dir examples] [--path /mutate-pod]
//! [--connections 16] [--seconds 5] [--rounds 6] [--rate 1000] [--total 1000000]
//! [--server-cpu 0] [--client-cpu 1] [--callgrind N]`
//!
//! `--callgrind N` instead runs each server under `valgrind --tool=callgrind`, sends N requests on
//! one connection after a warm-up and prints the server's instructions per request (the
//! repeatable figure on a noisy machine); the profiles stay in `--profile-dir` (default
//! `target/bench`) for `callgrind_annotate`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls_pki_types::ServerName;
use rustls_pki_types::pem::PemObject;

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned()).unwrap_or_else(|| default.to_string())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn has(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Busy loops at `SCHED_IDLE` pinned to some CPUs, stopped when dropped (see the module
/// documentation). `None` when `chrt` cannot start them.
struct Awake(Vec<Child>);

impl Awake {
    fn start(cpus: &[&str]) -> Option<Awake> {
        // Held from the first spawn, so a failed later spawn stops the loops already started.
        let mut awake = Awake(Vec::new());
        for cpu in cpus {
            let child = Command::new("taskset")
                // The loop ends by itself once the load test is gone (`kill -0` on the parent
                // fails), so an interrupted run leaves no busy loop behind.
                .args(["-c", cpu, "chrt", "--idle", "0", "sh", "-c", "while kill -0 $PPID 2>/dev/null; do :; done"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .ok()?;
            awake.0.push(child);
        }
        std::thread::sleep(Duration::from_millis(200));
        // A spinner that exited at once (no `chrt`, or the policy refused) keeps nothing awake.
        let running = awake.0.iter_mut().all(|c| c.try_wait().is_ok_and(|status| status.is_none()));
        running.then_some(awake)
    }
}

impl Drop for Awake {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// One server under test.
struct Server {
    name: &'static str,
    child: Child,
    port: u16,
}

impl Server {
    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Resident set size in KiB.
    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap_or_default();
        status
            .lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// CPU time used by every thread so far (schedstat: nanoseconds on a CPU).
    fn cpu_ns(&self) -> u64 {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", self.pid())) else { return 0 };
        tasks
            .flatten()
            .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
            .filter_map(|s| s.split_whitespace().next().and_then(|v| v.parse::<u64>().ok()))
            .sum()
    }

    /// Stops the server (SIGTERM, then SIGKILL after 10 s).
    fn stop(self) {
        drop(self);
    }
}

/// A server is stopped however the load test ends, a failed assertion included.
impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", &self.pid().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Setup {
    certs: PathBuf,
    objects_dir: String,
    server_cpu: String,
    kruise: String,
    kruise_nopgo: String,
    go: String,
    floor: String,
}

/// Starts `name` pinned to the server core (or under `wrapper`, e.g. valgrind).
fn start(name: &'static str, setup: &Setup, wrapper: &[String]) -> Server {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let certs = setup.certs.to_str().unwrap().to_string();
    let mut argv: Vec<String> = vec!["taskset".into(), "-c".into(), setup.server_cpu.clone()];
    argv.extend(wrapper.iter().cloned());
    match name {
        "kruise" | "kruise-nopgo" => {
            let admin = format!("127.0.0.1:{}", free_port());
            let bin = if name == "kruise" { &setup.kruise } else { &setup.kruise_nopgo };
            argv.extend([bin.clone(), "serve".into(), "--addr".into(), addr, "--admin-addr".into(), admin]);
            argv.extend(["--cert-dir".into(), certs, "--shutdown-delay".into(), "0s".into()]);
            argv.extend(["--standalone".into(), "--objects-dir".into(), setup.objects_dir.clone()]);
        }
        "go" => argv.extend([setup.go.clone(), "-addr".into(), addr, "-cert-dir".into(), certs]),
        "floor" => argv.extend([setup.floor.clone(), "--addr".into(), addr, "--cert-dir".into(), certs]),
        other => panic!("unknown server {other}"),
    }
    let child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {name} ({}): {e}", argv.join(" ")));
    Server { name, child, port }
}

/// A keep-alive HTTPS/1.1 client connection of the built-in load generator.
struct Client {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
}

async fn connect(port: u16, ca: &Path) -> Client {
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_pki_types::CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let mut config = rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    tcp.set_nodelay(true).unwrap();
    let name = ServerName::try_from("kruise-webhook-service.kruise-system.svc").unwrap();
    let tls = connector.connect(name, tcp).await.unwrap();
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.unwrap();
    tokio::spawn(conn);
    Client { sender }
}

impl Client {
    async fn post(&mut self, path: &str, body: &Bytes) -> Bytes {
        let req = hyper::Request::post(path)
            .header("host", "kruise-webhook-service.kruise-system.svc")
            .header("content-type", "application/json")
            .body(Full::new(body.clone()))
            .unwrap();
        self.sender.ready().await.expect("connection open");
        let resp = self.sender.send_request(req).await.unwrap();
        assert_eq!(resp.status(), 200);
        resp.into_body().collect().await.unwrap().to_bytes()
    }
}

/// Waits until the server answers the review (with a patch, on `/mutate-pod`).
async fn wait_ready(server: &Server, path: &str, body: &Bytes, ca: &Path, limit: Duration) {
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", server.port)).is_err() {
        assert!(started.elapsed() < limit, "{} did not start", server.name);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let answer = connect(server.port, ca).await.post(path, body).await;
    let v: serde_json::Value = serde_json::from_slice(&answer).unwrap();
    if path == "/mutate-pod" {
        assert!(
            v["response"]["allowed"] == true && v["response"]["patch"].is_string(),
            "{} did not inject: {v}",
            server.name
        );
    } else {
        assert!(v["response"]["uid"].is_string(), "{} did not answer a review: {v}", server.name);
    }
}

/// What one load run measured.
#[derive(Clone, Debug, Default)]
struct Run {
    requests: u64,
    rps: f64,
    latencies_us: Vec<u64>,
    cpu_ns: u64,
}

impl Run {
    fn pct(&self, p: f64) -> f64 {
        if self.latencies_us.is_empty() {
            return f64::NAN;
        }
        self.latencies_us[((self.latencies_us.len() as f64 * p) as usize).min(self.latencies_us.len() - 1)] as f64
            / 1000.0
    }
}

/// How load is generated.
enum Load {
    /// `connections` clients as fast as answers come, for `seconds` (or `count` requests).
    Closed { connections: usize, seconds: u64, count: Option<u64> },
    /// `rate` requests/s in total over `connections` clients, for `seconds`.
    Rate { connections: usize, rate: u64, seconds: u64 },
}

struct Generator {
    h2load: bool,
    client_cpu: String,
    ca: PathBuf,
    body_file: PathBuf,
    body: Bytes,
    path: String,
    scratch: PathBuf,
}

impl Generator {
    async fn run(&self, server: &Server, load: &Load) -> Run {
        let cpu_before = server.cpu_ns();
        let started = Instant::now();
        let mut run = if self.h2load { self.h2load(server, load) } else { self.builtin(server, load).await };
        run.cpu_ns = server.cpu_ns() - cpu_before;
        if run.rps == 0.0 {
            run.rps = run.requests as f64 / started.elapsed().as_secs_f64();
        }
        run.latencies_us.sort_unstable();
        run
    }

    fn h2load(&self, server: &Server, load: &Load) -> Run {
        let log = self.scratch.join(format!("h2load-{}.log", server.name));
        let _ = std::fs::remove_file(&log);
        let mut cmd = Command::new("taskset");
        cmd.args(["-c", &self.client_cpu, "h2load", "--h1", "-t", "1"]);
        cmd.arg("-d").arg(&self.body_file).args(["-H", "content-type: application/json"]);
        cmd.arg("--log-file").arg(&log);
        match load {
            Load::Closed { connections, seconds, count } => {
                cmd.args(["-c", &connections.to_string()]);
                match count {
                    Some(n) => cmd.args(["-n", &n.to_string()]),
                    None => cmd.args(["-D", &seconds.to_string()]),
                };
            }
            Load::Rate { connections, rate, seconds } => {
                // Evenly spaced arrivals: each client sends every `connections / rate` s, and
                // the clients start `1 / rate` s apart (h2load creates one connection per
                // `--rate-period`, whole milliseconds only), so a request arrives every
                // `1 / rate` s instead of `connections` at once. `-r` excludes `-D`: the count
                // sets the duration.
                let per_client = *rate as f64 / *connections as f64;
                let stagger_ms = (1000 / rate.max(&1)).max(1);
                cmd.args(["-c", &connections.to_string(), "--rps", &format!("{per_client}")]);
                cmd.args(["-r", "1", "--rate-period", &format!("{stagger_ms}ms")]);
                cmd.args(["-n", &(rate * seconds).to_string()]);
            }
        }
        cmd.arg(format!("https://127.0.0.1:{}{}", server.port, self.path));
        let out = cmd.output().expect("h2load runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let number_after = |needle: &str| -> Option<f64> {
            let i = text.find(needle)? + needle.len();
            text[i..].split(|c: char| !(c.is_ascii_digit() || c == '.')).find(|s| !s.is_empty())?.parse().ok()
        };
        let succeeded = text
            .lines()
            .find(|l| l.starts_with("requests:"))
            .and_then(|l| l.split(',').find(|p| p.contains("succeeded")))
            .and_then(|p| p.split_whitespace().next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let failed = number_after("succeeded, ").unwrap_or(0.0);
        assert!(succeeded > 0 && failed == 0.0, "h2load against {} failed:\n{text}", server.name);
        assert!(text.contains(&format!("{succeeded} 2xx")), "{}: non-2xx answers:\n{text}", server.name);
        let latencies_us = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split('\t').nth(2).and_then(|v| v.trim().parse().ok()))
            .collect();
        // "finished in 10.00s, 15432.10 req/s, 12.34MB/s"
        let rps = match load {
            Load::Closed { .. } => text
                .lines()
                .find(|l| l.starts_with("finished in"))
                .and_then(|l| l.split(", ").nth(1))
                .and_then(|f| f.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0),
            Load::Rate { .. } => 0.0,
        };
        Run { requests: succeeded, rps, latencies_us, cpu_ns: 0 }
    }

    async fn builtin(&self, server: &Server, load: &Load) -> Run {
        let (connections, seconds, count, interval) = match *load {
            Load::Closed { connections, seconds, count } => (connections, seconds, count, None),
            Load::Rate { connections, rate, seconds } => {
                (connections, seconds, None, Some(Duration::from_secs_f64(connections as f64 / rate as f64)))
            }
        };
        let deadline = Instant::now() + Duration::from_secs(if count.is_some() { 3600 } else { seconds });
        let per_client = count.map(|n| n.div_ceil(connections as u64));
        let mut tasks = Vec::new();
        for client_index in 0..connections {
            let mut client = connect(server.port, &self.ca).await;
            let (path, body) = (self.path.clone(), self.body.clone());
            tasks.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                // Clients start `1 / rate` s apart (see `h2load`).
                let stagger = interval.map_or(Duration::ZERO, |every| every / connections as u32);
                let mut next = tokio::time::Instant::now() + stagger * client_index as u32;
                while Instant::now() < deadline && per_client.is_none_or(|n| (latencies.len() as u64) < n) {
                    if let Some(every) = interval {
                        tokio::time::sleep_until(next).await;
                        next += every;
                    }
                    let t = Instant::now();
                    client.post(&path, &body).await;
                    latencies.push(t.elapsed().as_micros() as u64);
                }
                latencies
            }));
        }
        let mut latencies_us = Vec::new();
        for t in tasks {
            latencies_us.extend(t.await.unwrap());
        }
        Run { requests: latencies_us.len() as u64, rps: 0.0, latencies_us, cpu_ns: 0 }
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Median, minimum and maximum (`None` without values).
fn stats(values: &[f64]) -> Option<(f64, f64, f64)> {
    let mut v = values.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    // Of an even count, the mean of the two middle values (the upper one alone, as before,
    // leaned every median of six rounds upwards).
    let median = if n.is_multiple_of(2) { (v.get(n / 2)? + v[n / 2 - 1]) / 2.0 } else { *v.get(n / 2)? };
    Some((median, v[0], v[n - 1]))
}

/// `median (min–max)` with `decimals` decimals.
fn spread(values: &[f64], decimals: usize) -> String {
    match stats(values) {
        None => "-".into(),
        Some((median, min, max)) => format!("{median:.decimals$} ({min:.decimals$}–{max:.decimals$})"),
    }
}

/// Alternating rounds: each round visits every server, starting one further along, so that no
/// server is always measured right after the same other one. `report` prints each run; the runs
/// come back per server.
async fn alternating(
    load_gen: &Generator,
    servers: &[Server],
    rounds: usize,
    load: &Load,
    report: impl Fn(usize, &Server, &Run),
) -> Vec<Vec<Run>> {
    let mut runs: Vec<Vec<Run>> = vec![Vec::new(); servers.len()];
    for round in 0..rounds {
        for k in 0..servers.len() {
            let i = (round + k) % servers.len();
            let r = load_gen.run(&servers[i], load).await;
            report(round + 1, &servers[i], &r);
            runs[i].push(r);
        }
    }
    runs
}

/// Instructions per request under callgrind: warm up, zero the counters, send `n` requests on one
/// connection, dump, read the total.
async fn callgrind(names: &[&'static str], setup: &Setup, load_gen: &Generator, n: u64, profile_dir: &Path) {
    std::fs::create_dir_all(profile_dir).unwrap();
    assert!(has("valgrind") && has("callgrind_control"), "--callgrind needs valgrind");
    println!("callgrind: {n} requests on one keep-alive connection, server instructions per request");
    for &name in names {
        if name == "go" {
            println!("  go           (skipped: the Go runtime does not run under valgrind)");
            continue;
        }
        let out = profile_dir.join(format!("callgrind.{name}.out"));
        for old in std::fs::read_dir(profile_dir).unwrap().flatten() {
            if old.file_name().to_str().is_some_and(|f| f.starts_with(&format!("callgrind.{name}.out"))) {
                let _ = std::fs::remove_file(old.path());
            }
        }
        let wrapper = vec![
            "valgrind".into(),
            "--tool=callgrind".into(),
            "--instr-atstart=no".into(),
            format!("--callgrind-out-file={}", out.display()),
        ];
        let server = start(name, setup, &wrapper);
        wait_ready(&server, &load_gen.path, &load_gen.body, &load_gen.ca, Duration::from_secs(120)).await;
        let mut client = connect(server.port, &load_gen.ca).await;
        for _ in 0..200 {
            client.post(&load_gen.path, &load_gen.body).await;
        }
        let pid = server.pid().to_string();
        let ctl = |flag: &str| Command::new("callgrind_control").args([flag, &pid]).output().unwrap();
        ctl("--instr=on");
        for _ in 0..n {
            client.post(&load_gen.path, &load_gen.body).await;
        }
        ctl("--instr=off");
        ctl("--dump");
        server.stop();
        // The dump files are `out` plus `.N` suffixes; the one with the most events is the load.
        let dir = out.parent().unwrap();
        let prefix = out.file_name().unwrap().to_str().unwrap().to_string();
        let total: u64 = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_str().is_some_and(|f| f.starts_with(&prefix)))
            .filter_map(|e| std::fs::read_to_string(e.path()).ok())
            .filter_map(|t| t.lines().find(|l| l.starts_with("totals:")).map(str::to_string))
            .filter_map(|l| l.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
            .max()
            .unwrap_or(0);
        println!("  {name:<12} {:>10} instructions/request   (profile: {})", total / n, out.display());
    }
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let names: Vec<&'static str> = arg("--servers", "kruise,go,floor")
        .split(',')
        .map(|s| match s {
            "kruise" => "kruise",
            "kruise-nopgo" => "kruise-nopgo",
            "go" => "go",
            "floor" => "floor",
            other => panic!("unknown server {other}: kruise, kruise-nopgo, go or floor"),
        })
        .collect();
    let connections: usize = arg("--connections", "16").parse().unwrap();
    let seconds: u64 = arg("--seconds", "5").parse().unwrap();
    let rounds: usize = arg("--rounds", "6").parse().unwrap();
    let rate: u64 = arg("--rate", "1000").parse().unwrap();
    let total: u64 = arg("--total", "1000000").parse().unwrap();
    let review = PathBuf::from(arg("--review", "examples/reviews/pod-create.json"));
    let scratch = tempfile::tempdir().unwrap();
    let setup = Setup {
        certs: scratch.path().join("certs"),
        objects_dir: arg("--objects-dir", "examples"),
        server_cpu: arg("--server-cpu", "0"),
        kruise: arg("--kruise", "target/release/kruise"),
        kruise_nopgo: arg("--kruise-nopgo", "target/release/kruise"),
        go: arg("--go", "target/bench/go-webhook"),
        floor: arg("--floor", "target/release/examples/floor"),
    };
    let status = Command::new(&setup.kruise).args(["certs", "--out"]).arg(&setup.certs).stderr(Stdio::null()).status();
    assert!(status.is_ok_and(|s| s.success()), "{} certs failed", setup.kruise);
    let load_gen = Generator {
        h2load: has("h2load"),
        client_cpu: arg("--client-cpu", "1"),
        ca: setup.certs.join("ca.crt"),
        body: Bytes::from(std::fs::read(&review).unwrap()),
        body_file: review.clone(),
        path: arg("--path", "/mutate-pod"),
        scratch: scratch.path().to_path_buf(),
    };

    if let Some(n) = std::env::args().position(|a| a == "--callgrind").map(|_| arg("--callgrind", "2000")) {
        let profile_dir = PathBuf::from(arg("--profile-dir", "target/bench"));
        callgrind(&names, &setup, &load_gen, n.parse().unwrap(), &profile_dir).await;
        return;
    }

    println!(
        "review {} ({} bytes) to {}; servers pinned to CPU {}, load generator ({}) on CPU {}",
        review.display(),
        load_gen.body.len(),
        load_gen.path,
        setup.server_cpu,
        if load_gen.h2load { "h2load --h1" } else { "built-in client: h2load not installed" },
        load_gen.client_cpu
    );
    println!("load average at start: {}", load_average());
    let mut servers = Vec::new();
    for &name in &names {
        let s = start(name, &setup, &[]);
        wait_ready(&s, &load_gen.path, &load_gen.body, &load_gen.ca, Duration::from_secs(30)).await;
        servers.push(s);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let idle: Vec<u64> = servers.iter().map(Server::rss_kib).collect();

    let closed = Load::Closed { connections, seconds, count: None };
    let runs = alternating(&load_gen, &servers, rounds, &closed, |round, s, r| {
        println!(
            "  round {round} {:<12} {:>8.0} req/s  p50 {:.3} ms  p99 {:.3} ms  cpu {:.1} µs/req  (load avg {})",
            s.name,
            r.rps,
            r.pct(0.5),
            r.pct(0.99),
            r.cpu_ns as f64 / r.requests as f64 / 1000.0,
            load_average()
        )
    })
    .await;
    // The fixed rate in alternating rounds too: the p99 of one window moves with whatever
    // else the host runs, so each round's is printed and the table gives their median and range.
    let fixed_rate = Load::Rate { connections: 4, rate, seconds };
    let fixed_report = |condition: &'static str| {
        move |round: usize, s: &Server, r: &Run| {
            println!(
                "  fixed {rate} req/s{condition} round {round} {:<12} p50 {:.3} ms  p99 {:.3} ms  p99.9 {:.3} ms  (load avg {})",
                s.name,
                r.pct(0.5),
                r.pct(0.99),
                r.pct(0.999),
                load_average()
            )
        }
    };
    let fixed = alternating(&load_gen, &servers, rounds, &fixed_rate, fixed_report("")).await;
    let awake = Awake::start(&[&setup.server_cpu, &load_gen.client_cpu]);
    let fixed_awake = match &awake {
        Some(_) => alternating(&load_gen, &servers, rounds, &fixed_rate, fixed_report(", CPUs kept awake,")).await,
        None => {
            println!("  fixed {rate} req/s, CPUs kept awake: skipped, `chrt --idle` could not start a busy loop");
            vec![Vec::new(); servers.len()]
        }
    };
    drop(awake);
    let mut after = Vec::new();
    for (i, s) in servers.iter().enumerate() {
        let served: u64 = runs[i].iter().chain(&fixed[i]).chain(&fixed_awake[i]).map(|r| r.requests).sum::<u64>() + 1;
        if served < total {
            load_gen.run(s, &Load::Closed { connections, seconds, count: Some(total - served) }).await;
        }
        after.push(s.rss_kib());
    }

    println!();
    println!("{:<40}{}", "", names.iter().map(|n| format!("{n:>22}")).collect::<String>());
    let row = |label: &str, cells: Vec<String>| {
        println!("{label:<40}{}", cells.iter().map(|c| format!("{c:>22}")).collect::<String>())
    };
    let rps: Vec<Vec<f64>> = runs.iter().map(|rs| rs.iter().map(|r| r.rps).collect()).collect();
    row(&format!("req/s, {connections} conns (median, range)"), rps.iter().map(|v| spread(v, 0)).collect());
    let merged: Vec<Run> = runs
        .iter()
        .map(|rs| {
            let mut latencies_us: Vec<u64> = rs.iter().flat_map(|r| r.latencies_us.iter().copied()).collect();
            latencies_us.sort_unstable();
            Run {
                requests: rs.iter().map(|r| r.requests).sum(),
                cpu_ns: rs.iter().map(|r| r.cpu_ns).sum(),
                latencies_us,
                rps: 0.0,
            }
        })
        .collect();
    row("p50 / p99 latency (ms)", merged.iter().map(|r| format!("{:.3} / {:.3}", r.pct(0.5), r.pct(0.99))).collect());
    row(
        "server CPU per request (µs)",
        merged.iter().map(|r| format!("{:.1}", r.cpu_ns as f64 / r.requests as f64 / 1000.0)).collect(),
    );
    let p99_spreads = |per_server: &[Vec<Run>]| -> Vec<String> {
        per_server.iter().map(|rs| spread(&rs.iter().map(|r| r.pct(0.99)).collect::<Vec<_>>(), 3)).collect()
    };
    row(&format!("p99 at {rate} req/s (ms, median, range)"), p99_spreads(&fixed));
    row("  … with the CPUs kept awake", p99_spreads(&fixed_awake));
    row("RSS idle (MiB)", idle.iter().map(|k| format!("{:.1}", *k as f64 / 1024.0)).collect());
    row(
        &format!("RSS after {total} requests (MiB)"),
        after.iter().map(|k| format!("{:.1}", *k as f64 / 1024.0)).collect(),
    );
    let median = |v: &[f64]| stats(v).map_or(f64::NAN, |(median, _, _)| median);
    if let Some(k) = names.iter().position(|n| *n == "kruise") {
        for (i, other) in names.iter().enumerate().filter(|(i, _)| *i != k) {
            // Each round measures the servers back to back, so the ratio within a round is not
            // moved by the host's speed drifting from one minute to the next, as the ratio of
            // the medians over all rounds can be.
            let per_round: Vec<f64> = rps[k].iter().zip(&rps[i]).map(|(a, b)| a / b).collect();
            println!(
                "kruise / {other}: {:.2}× the requests/s (medians); per round {}× (median, range)",
                median(&rps[k]) / median(&rps[i]),
                spread(&per_round, 2)
            );
        }
    }
    println!("load average at end: {}", load_average());
    for s in servers {
        s.stop();
    }
}
