//! Load generator for the issue notes: starts `kruise serve` as a child process on loopback with
//! fresh certificates, sends the CloneSet mutating review of `examples/reviews/` over keep-alive
//! HTTPS/1.1 connections for a fixed time, and prints requests/s, latency percentiles and the
//! server's resident memory. Bounded in time and count; talks only to 127.0.0.1.
//!
//! `cargo run --release --example loadtest -- [--server target/release/kruise] [--connections 4]
//! [--seconds 10] [--path /mutate-apps-kruise-io-cloneset] [--review examples/reviews/cloneset-create.json]`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

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

fn rss_kib(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let server = arg("--server", "target/release/kruise");
    let connections: usize = arg("--connections", "4").parse().unwrap();
    let seconds: u64 = arg("--seconds", "10").parse().unwrap();
    let path = arg("--path", "/mutate-apps-kruise-io-cloneset");
    let body = Bytes::from(std::fs::read(arg("--review", "examples/reviews/cloneset-create.json")).unwrap());

    let dir = tempfile::tempdir().unwrap();
    let status = std::process::Command::new(&server).args(["certs", "--out"]).arg(dir.path()).status().unwrap();
    assert!(status.success(), "kruise certs failed");
    let port = |l: std::net::TcpListener| l.local_addr().unwrap().port();
    let addr = format!("127.0.0.1:{}", port(std::net::TcpListener::bind("127.0.0.1:0").unwrap()));
    let admin = format!("127.0.0.1:{}", port(std::net::TcpListener::bind("127.0.0.1:0").unwrap()));
    let mut child = std::process::Command::new(&server)
        .args(["serve", "--addr", &addr, "--admin-addr", &admin, "--log", "warn", "--shutdown-delay", "0s"])
        .arg("--cert-dir")
        .arg(dir.path())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while std::net::TcpStream::connect(&admin).is_err() {
        assert!(started.elapsed() < Duration::from_secs(30), "server did not start");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (idle_rss, _) = rss_kib(child.id());

    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_pki_types::CertificateDer::pem_file_iter(dir.path().join("ca.crt")).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let mut config = rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));

    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let (connector, addr, path, body) = (connector.clone(), addr.clone(), path.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            let tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
            tcp.set_nodelay(true).unwrap();
            let name = ServerName::try_from("kruise-webhook-service.kruise-system.svc").unwrap();
            let tls = connector.connect(name, tcp).await.unwrap();
            let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.unwrap();
            tokio::spawn(conn);
            let mut latencies = Vec::new();
            while Instant::now() < deadline {
                let req = hyper::Request::post(&path)
                    .header("host", "kruise-webhook-service.kruise-system.svc")
                    .header("content-type", "application/json")
                    .body(Full::new(body.clone()))
                    .unwrap();
                let t = Instant::now();
                let resp = sender.send_request(req).await.unwrap();
                assert_eq!(resp.status(), 200);
                let out = resp.into_body().collect().await.unwrap().to_bytes();
                latencies.push(t.elapsed());
                assert!(out.len() > 50);
            }
            latencies
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let (rss, hwm) = rss_kib(child.id());
    let _ = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let _ = child.wait();

    all.sort();
    let pct = |p: f64| all[((all.len() as f64 * p) as usize).min(all.len() - 1)];
    println!("path {path}, {connections} keep-alive connections, {seconds} s, review {} bytes", body.len());
    println!("requests: {} ({:.0} req/s)", all.len(), all.len() as f64 / seconds as f64);
    println!("latency p50 {:?}  p90 {:?}  p99 {:?}  max {:?}", pct(0.50), pct(0.90), pct(0.99), all[all.len() - 1]);
    println!("server RSS: idle {} KiB, after load {} KiB, peak {} KiB", idle_rss, rss, hwm);
}
