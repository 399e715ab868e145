//! The transport contract on 127.0.0.1: real TLS verified against the CA and the service DNS
//! name, ALPN, certificate rotation by symlink swap under load, graceful shutdown, the admin port
//! and metrics, SIGTERM. What the router answers is tested in-process (`router.rs` and the
//! handler tests).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;

#[tokio::test]
async fn tls_round_trip_verifies_ca_and_service_name() {
    let server = TestServer::start().await;
    let review = example_review("cloneset-create.json");
    let resp = post_once(
        server.handle.addr,
        &server.ca,
        "/mutate-apps-kruise-io-cloneset",
        review_body(review.clone(), "admission.k8s.io/v1"),
    )
    .await
    .unwrap();
    assert_eq!(resp.status, 200);
    let out = resp.json();
    assert_eq!(out["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(out["kind"], "AdmissionReview");
    assert_eq!(out["response"]["uid"], review["request"]["uid"]);
    assert_eq!(out["response"]["allowed"], true);
    let mutated = apply(&review["request"]["object"], response_patch(&out["response"]).as_ref());
    assert_eq!(mutated["spec"]["updateStrategy"]["maxUnavailable"], "20%");
    assert_eq!(mutated["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"], "Always");

    // A client checking another name, or trusting another CA, refuses the server.
    assert!(connect(server.handle.addr, &server.ca, "evil.example.com", &[b"http/1.1"]).await.is_err());
    let other = tempfile::tempdir().unwrap();
    make_certs(other.path());
    let other_ca = std::fs::read(other.path().join("ca.crt")).unwrap();
    assert!(connect(server.handle.addr, &other_ca, SERVICE_DNS, &[b"http/1.1"]).await.is_err());
    server.handle.shutdown();
}

#[tokio::test]
async fn http2_only_when_enabled() {
    use http_body_util::Full;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    let body = review_body(example_review("cloneset-create.json"), "admission.k8s.io/v1");
    let h2_request = |body: Vec<u8>| {
        hyper::Request::post(format!("https://{SERVICE_DNS}/mutate-apps-kruise-io-cloneset"))
            .header("content-type", "application/json")
            .body(Full::new(bytes::Bytes::from(body)))
            .unwrap()
    };

    // Off (default): ALPN offers only http/1.1 and HTTP/2 prior knowledge fails.
    let server = TestServer::start().await;
    let tls = connect(server.handle.addr, &server.ca, SERVICE_DNS, &[b"h2", b"http/1.1"]).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let tls = connect(server.handle.addr, &server.ca, SERVICE_DNS, &[]).await.unwrap();
    let outcome = async {
        let (mut sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls)).await?;
        tokio::spawn(conn);
        sender.send_request(h2_request(body.clone())).await
    };
    let outcome = tokio::time::timeout(Duration::from_secs(10), outcome).await.expect("no hang");
    assert!(outcome.is_err(), "HTTP/2 prior knowledge must fail while h2 is off");
    server.handle.shutdown();

    // On: h2 is negotiated and serves reviews.
    let server =
        TestServer::start_with(Default::default(), std::sync::Arc::new(kruise::cluster::EmptyView), |o| o.http2 = true)
            .await;
    let tls = connect(server.handle.addr, &server.ca, SERVICE_DNS, &[b"h2"]).await.unwrap();
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls)).await.unwrap();
    tokio::spawn(conn);
    let resp = sender.send_request(h2_request(body)).await.unwrap();
    assert_eq!(resp.status(), 200);
    server.handle.shutdown();
}

/// Kubernetes updates a Secret volume by writing a new timestamped directory and swapping the
/// `..data` symlink; `tls.crt`/`tls.key` are symlinks through `..data`.
fn secret_volume_write(dir: &std::path::Path, generation: u32, from: &std::path::Path) {
    let data = dir.join(format!("..2026_11_29_{generation}"));
    std::fs::create_dir_all(&data).unwrap();
    for f in ["tls.crt", "tls.key", "ca.crt"] {
        std::fs::copy(from.join(f), data.join(f)).unwrap();
    }
    let tmp = dir.join("..data_tmp");
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(data.file_name().unwrap(), &tmp).unwrap();
    std::fs::rename(&tmp, dir.join("..data")).unwrap();
    for f in ["tls.crt", "tls.key", "ca.crt"] {
        let link = dir.join(f);
        if std::fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(std::path::Path::new("..data").join(f), &link).unwrap();
        }
    }
}

#[tokio::test]
async fn certificate_rotation_by_symlink_swap_under_load() {
    // Two certificate generations from the same CA (the client trusts the CA, as with caBundle).
    let gen1 = tempfile::tempdir().unwrap();
    make_certs(gen1.path());
    let gen2 = tempfile::tempdir().unwrap();
    for f in ["ca.crt", "ca.key"] {
        std::fs::copy(gen1.path().join(f), gen2.path().join(f)).unwrap();
    }
    let req = kruise::certs::CertRequest {
        out: gen2.path().to_path_buf(),
        service: "kruise-webhook-service".into(),
        conversion_service: "kruise-conversion-service".into(),
        namespace: "kruise-system".into(),
        hosts: vec!["rotated.example.com".into()],
    };
    assert_eq!(kruise::certs::ensure(&req).unwrap(), kruise::certs::Outcome::RenewedLeaf);

    let volume = tempfile::tempdir().unwrap();
    secret_volume_write(volume.path(), 1, gen1.path());
    let cert_dir = volume.path().to_path_buf();
    let server =
        TestServer::start_with(Default::default(), std::sync::Arc::new(kruise::cluster::EmptyView), move |o| {
            o.cert_dir = cert_dir;
            o.cert_reload_interval = Duration::from_millis(20);
        })
        .await;
    let ca = std::fs::read(gen1.path().join("ca.crt")).unwrap();
    let first_leaf = server.handle.certs.leaf().unwrap().to_vec();

    // Continuous requests, each on a new connection (a new handshake), from 4 clients.
    let addr = server.handle.addr;
    let body = review_body(example_review("cloneset-create.json"), "admission.k8s.io/v1");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut clients = Vec::new();
    for _ in 0..4 {
        let (ca, body, stop) = (ca.clone(), body.clone(), stop.clone());
        clients.push(tokio::spawn(async move {
            let (mut ok, mut failed, mut leaves) = (0u32, 0u32, std::collections::HashSet::new());
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                match Conn::open(addr, &ca).await {
                    Ok(mut conn) => {
                        leaves.insert(conn.peer_leaf.clone().unwrap());
                        match conn.post("/mutate-apps-kruise-io-cloneset", Some("application/json"), body.clone()).await
                        {
                            Ok(r) if r.status == 200 => ok += 1,
                            _ => failed += 1,
                        }
                    }
                    Err(_) => failed += 1,
                }
            }
            (ok, failed, leaves)
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    secret_volume_write(volume.path(), 2, gen2.path());
    // Wait until the new leaf is served, then keep the load a little longer.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while server.handle.certs.leaf().unwrap().to_vec() == first_leaf {
        assert!(tokio::time::Instant::now() < deadline, "certificate never reloaded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let (mut ok, mut failed, mut leaves) = (0, 0, std::collections::HashSet::new());
    for c in clients {
        let (o, f, l) = c.await.unwrap();
        ok += o;
        failed += f;
        leaves.extend(l);
    }
    assert_eq!(failed, 0, "{failed} requests failed during rotation ({ok} succeeded)");
    assert!(ok > 8, "too few requests ({ok}) to prove anything");
    assert_eq!(leaves.len(), 2, "clients saw both certificates");
    // The new certificate carries the new name.
    assert!(connect(addr, &ca, "rotated.example.com", &[b"http/1.1"]).await.is_ok());
    let metrics = admin_get(server.handle.admin_addr, "/metrics").await.1;
    assert!(metrics.contains("kruise_webhook_certificate_reloads_total{result=\"success\"} 1"), "{metrics}");
    server.handle.shutdown();
}

#[tokio::test]
async fn graceful_shutdown_turns_unready_then_drains() {
    let server = TestServer::start_with(Default::default(), std::sync::Arc::new(kruise::cluster::EmptyView), |o| {
        o.shutdown_delay = Duration::from_millis(800);
    })
    .await;
    let (addr, admin) = (server.handle.addr, server.handle.admin_addr);
    assert_eq!(admin_get(admin, "/readyz").await.0, 200);
    assert_eq!(admin_get(admin, "/healthz").await, (200, "ok".to_string()));
    let body = review_body(example_review("cloneset-create.json"), "admission.k8s.io/v1");
    let mut kept = Conn::open(addr, &server.ca).await.unwrap();
    assert_eq!(
        kept.post("/mutate-apps-kruise-io-cloneset", Some("application/json"), body.clone()).await.unwrap().status,
        200
    );

    server.handle.shutdown();
    // During the delay: unready, but still serving, old and new connections alike; a connection
    // opened before is told to close too, so that the apiserver stops reusing it.
    assert_eq!(admin_get(admin, "/readyz").await.0, 503);
    let r = kept.post("/mutate-apps-kruise-io-cloneset", Some("application/json"), body.clone()).await.unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.headers.get("connection").map(|v| v.to_str().unwrap()), Some("close"), "kept connections close");
    let r = post_once(addr, &server.ca, "/mutate-apps-kruise-io-cloneset", body.clone()).await.unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.headers.get("connection").map(|v| v.to_str().unwrap()), Some("close"), "new connections are not kept");

    // Then the server stops and the port is closed.
    let TestServer { handle, .. } = server;
    tokio::time::timeout(Duration::from_secs(10), handle.wait()).await.expect("server stops");
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn metrics_count_reviews_by_path_code_and_verdict() {
    let server = TestServer::start().await;
    let body = review_body(example_review("cloneset-create.json"), "admission.k8s.io/v1");
    post_once(server.handle.addr, &server.ca, "/mutate-apps-kruise-io-cloneset", body).await.unwrap();
    post_once(server.handle.addr, &server.ca, "/mutate-apps-kruise-io-cloneset", b"{".to_vec()).await.unwrap();
    let (code, text) = admin_get(server.handle.admin_addr, "/metrics").await;
    assert_eq!(code, 200);
    for want in [
        r#"controller_runtime_webhook_requests_total{webhook="/mutate-apps-kruise-io-cloneset",code="200",allowed="true"} 1"#,
        r#"controller_runtime_webhook_requests_total{webhook="/mutate-apps-kruise-io-cloneset",code="400",allowed="none"} 1"#,
        r#"controller_runtime_webhook_latency_seconds_bucket{le="0.00005",webhook="/mutate-apps-kruise-io-cloneset"}"#,
        r#"controller_runtime_webhook_requests_in_flight{webhook="/mutate-apps-kruise-io-cloneset"} 0"#,
    ] {
        assert!(text.contains(want), "missing {want} in\n{text}");
    }
    server.handle.shutdown();
}

#[test]
fn sigterm_stops_the_process_with_exit_code_zero() {
    let dir = tempfile::tempdir().unwrap();
    make_certs(dir.path());
    let port = |l: std::net::TcpListener| l.local_addr().unwrap().port();
    let (addr, admin) = (
        port(std::net::TcpListener::bind("127.0.0.1:0").unwrap()),
        port(std::net::TcpListener::bind("127.0.0.1:0").unwrap()),
    );
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kruise"))
        .args(["serve", "--addr", &format!("127.0.0.1:{addr}"), "--admin-addr", &format!("127.0.0.1:{admin}")])
        .args(["--standalone", "--shutdown-delay", "200ms", "--log-format", "json"])
        .arg("--cert-dir")
        .arg(dir.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", admin)).is_err() {
        assert!(std::time::Instant::now() < deadline, "server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = std::process::Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let exit = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "server did not stop");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(exit.code(), Some(0));
    let mut log = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut log).unwrap();
    assert!(log.contains("SIGTERM received") && log.contains("server stopped"), "{log}");
}

/// `kruise serve` with `args` where no cluster can be found (no kubeconfig, not in a pod).
fn serve_without_a_cluster(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_kruise"))
        .args(["serve", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0"])
        .args(args)
        .env("KUBECONFIG", dir.join("missing-kubeconfig"))
        .env("HOME", dir)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .unwrap()
}

#[test]
fn without_standalone_and_without_a_cluster_serve_says_so() {
    let dir = tempfile::tempdir().unwrap();
    make_certs(dir.path());
    let out = serve_without_a_cluster(dir.path(), &["--cert-dir", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("cannot configure the Kubernetes client"), "{log}");
}

#[test]
fn managed_certificates_with_the_external_certs_gate_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let out =
        serve_without_a_cluster(dir.path(), &["--cert-mode", "managed", "--feature-gates", "EnableExternalCerts=true"]);
    assert_eq!(out.status.code(), Some(1));
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("contradicts the feature gate EnableExternalCerts=true"), "{log}");
    assert!(!log.contains("cannot configure the Kubernetes client"), "refused before the client: {log}");
}
