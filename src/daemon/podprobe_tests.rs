//! The prober's probes against loopback listeners (tcp, http) and a scripted runtime (exec);
//! kruise `prober_test.go` `TestRunProbe` rows (tcp succeeds / fails, http succeeds, no
//! handler) and the container pick.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;
use k8s_openapi::api::core::v1::{ExecAction, HTTPHeader};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

struct Scripted(ExecOutput);

impl ProbeRuntime for Scripted {
    async fn list(&self, _pod_uid: &str) -> Result<Vec<v1::Container>, String> {
        Ok(Vec::new())
    }
    async fn exec(&self, id: &str, cmd: Vec<String>, _timeout: i64) -> Result<ExecOutput, String> {
        if id.is_empty() || cmd.is_empty() {
            return Err("no container".into());
        }
        Ok(self.0.clone())
    }
}

fn key(ip: &str) -> ProbeKey {
    ProbeKey {
        namespace: "ns".into(),
        pod: "p".into(),
        uid: "u".into(),
        ip: ip.into(),
        container: "main".into(),
        probe: "ppm#healthy".into(),
    }
}

async fn http_server(status: &'static str, body: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else { return };
            let mut buf = [0u8; 2048];
            let n = s.read(&mut buf).await.unwrap_or(0);
            let req = String::from_utf8_lossy(&buf[..n]).to_string();
            if !req.starts_with("GET ") {
                // Not HTTP (a TLS ClientHello): a plain server's answer.
                let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n").await;
                continue;
            }
            assert!(req.starts_with("GET /healthz HTTP/1.1\r\n"), "{req}");
            assert!(req.contains("User-Agent: kube-probe\r\n") || req.contains("User-Agent: custom"), "{req}");
            let resp = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n\r\n{body}", body.len());
            let _ = s.write_all(resp.as_bytes()).await;
        }
    });
    port
}

fn http(port: u16) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some("/healthz".into()),
            port: IntOrString::Int(i32::from(port)),
            scheme: Some("HTTP".into()),
            ..HTTPGetAction::default()
        }),
        ..Probe::default()
    }
}

#[tokio::test]
async fn http_probe_succeeds_on_2xx_and_fails_otherwise() {
    let ok = http_server("200 OK", "fine").await;
    let rt = Scripted(ExecOutput::default());
    assert_eq!(run_probe(&rt, &http(ok), &key("127.0.0.1"), "c").await, Ok((true, "fine".to_string())));
    let bad = http_server("503 Service Unavailable", "").await;
    assert_eq!(
        run_probe(&rt, &http(bad), &key("127.0.0.1"), "c").await,
        Ok((false, "HTTP probe failed with statuscode: 503".to_string()))
    );
    let mut custom = http(ok);
    custom.http_get.as_mut().unwrap().http_headers =
        Some(vec![HTTPHeader { name: "User-Agent".into(), value: "custom".into() }]);
    assert_eq!(run_probe(&rt, &custom, &key("127.0.0.1"), "c").await, Ok((true, "fine".to_string())));
    // HTTPS to a plain HTTP server fails as the kubelet's does (no fallback for probes).
    let mut https = http(ok);
    https.http_get.as_mut().unwrap().scheme = Some("HTTPS".into());
    let (ok_, msg) = run_probe(&rt, &https, &key("127.0.0.1"), "c").await.unwrap();
    assert!(!ok_);
    assert!(msg.ends_with("http: server gave HTTP response to HTTPS client"), "{msg}");
}

/// An HTTPS probe of a server with a self-signed certificate (for a name the probe does not even
/// use) succeeds: the kubelet does not verify it.
#[tokio::test]
async fn https_probe_does_not_verify_the_certificate() {
    let port = crate::daemon::httpget::tests::tls_server("200 OK", "secure").await;
    let rt = Scripted(ExecOutput::default());
    let mut https = http(port);
    https.http_get.as_mut().unwrap().scheme = Some("HTTPS".into());
    assert_eq!(run_probe(&rt, &https, &key("127.0.0.1"), "c").await, Ok((true, "secure".to_string())));
    let bad = crate::daemon::httpget::tests::tls_server("500 Internal Server Error", "").await;
    let mut https = http(bad);
    https.http_get.as_mut().unwrap().scheme = Some("HTTPS".into());
    assert_eq!(
        run_probe(&rt, &https, &key("127.0.0.1"), "c").await,
        Ok((false, "HTTP probe failed with statuscode: 500".to_string()))
    );
}

#[tokio::test]
async fn tcp_probe_succeeds_when_something_listens() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let tcp = |port: u16| Probe {
        tcp_socket: Some(TCPSocketAction { port: IntOrString::Int(i32::from(port)), ..Default::default() }),
        ..Probe::default()
    };
    let rt = Scripted(ExecOutput::default());
    assert_eq!(run_probe(&rt, &tcp(port), &key("127.0.0.1"), "c").await, Ok((true, String::new())));
    drop(listener);
    let (ok, msg) = run_probe(&rt, &tcp(port), &key("127.0.0.1"), "c").await.unwrap();
    assert!(!ok);
    assert!(msg.starts_with(&format!("dial tcp 127.0.0.1:{port}: ")), "{msg}");
}

#[tokio::test]
async fn exec_probe_reads_the_exit_code() {
    let exec = Probe { exec: Some(ExecAction { command: Some(vec!["/healthy.sh".into()]) }), ..Probe::default() };
    let ok = Scripted(ExecOutput { exit_code: 0, stdout: "healthy".into(), stderr: String::new() });
    assert_eq!(run_probe(&ok, &exec, &key(""), "c1").await, Ok((true, "healthy".to_string())));
    let failed = Scripted(ExecOutput { exit_code: 1, stdout: String::new(), stderr: "unhealthy".into() });
    assert_eq!(run_probe(&failed, &exec, &key(""), "c1").await, Ok((false, "unhealthy".to_string())));
    // The runtime refusing (no container) is a probe error, not a result.
    assert!(run_probe(&ok, &exec, &key(""), "").await.is_err());
    // kruise "invalid probe handler": none of exec/http/tcp.
    assert_eq!(run_probe(&ok, &Probe::default(), &key(""), "c1").await, Err("missing probe handler for main".into()));
}

#[test]
fn newest_container_of_the_name() {
    let c = |id: &str, name: &str, created: i64, running: bool| v1::Container {
        id: id.into(),
        metadata: Some(v1::ContainerMetadata { name: name.into(), attempt: 0 }),
        state: if running { v1::ContainerState::ContainerRunning } else { v1::ContainerState::ContainerExited } as i32,
        created_at: created,
        ..Default::default()
    };
    let list = [c("a", "main", 1, false), c("b", "main", 5, true), c("x", "sidecar", 9, true)];
    let got = newest(&list, "main").unwrap();
    assert_eq!((got.id.as_str(), got.running), ("b", true));
    assert!(newest(&list, "other").is_none());
    assert!(!handler_changed(&Probe::default(), &Probe { period_seconds: Some(3), ..Probe::default() }));
}
