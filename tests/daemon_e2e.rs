//! `kruise daemon` as a process on the real control plane (testenv), with deploy/'s RBAC: the
//! binary runs with the token of ServiceAccount `kruise-daemon` (so `deploy/daemon-rbac.yaml` is
//! all it may do), pulls through a FakeRuntime on a unix socket named by `--runtime-endpoint`, and
//! reports in its NodeImage: Succeeded with the runtime's id, Failed with the runtime's not-found
//! message, Failed naming the authentication failure (the wrong credentials come from a Secret in
//! kruise-daemon-config). `/readyz` names the runtime; its resident memory stays far under the
//! DaemonSet's 128Mi; SIGTERM stops it cleanly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use e2e_common::{cluster, eventually_ok, root};
use kruise::apis::nodeimage::v1beta1::NodeImage;
use kruise_cri::fake::{Behaviour, FakeRuntime, image_id};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

fn http_get(port: u16, path: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let code = out.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (code, out.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default())
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

#[tokio::test]
async fn the_daemon_process_pulls_reports_and_stops() {
    let c = cluster();
    for path in ["deploy/namespace.yaml", "deploy/crds/apps.kruise.io_nodeimages.yaml", "deploy/daemon-rbac.yaml"] {
        c.apply_path(root().join(path)).await.unwrap();
    }
    let admin = c.client().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = c.service_account_kubeconfig("kruise-system", "kruise-daemon", dir.path()).await.unwrap();

    let fake = FakeRuntime::new("fake-containerd");
    fake.script("127.0.0.1:5000/app:1", Behaviour::Succeed { delay: Duration::from_millis(200) });
    fake.script("127.0.0.1:5000/app:missing", Behaviour::NotFound);
    fake.script(
        "127.0.0.1:5000/private:1",
        Behaviour::RequireAuth { username: "robot".into(), password: "right".into(), delay: Duration::ZERO },
    );
    let socket = dir.path().join("containerd.sock");
    fake.serve(&socket).await.unwrap();

    let cfg = json!({"auths": {"127.0.0.1:5000": {"username": "robot", "password": "wrong"}}}).to_string();
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(admin.clone(), "kruise-daemon-config");
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"namespace": "kruise-daemon-config", "name": "daemon-e2e-creds"},
        "data": {".dockerconfigjson": base64::engine::general_purpose::STANDARD.encode(cfg)}});
    let _ = secrets.create(&PostParams::default(), &serde_json::from_value(secret).unwrap()).await;

    let node = format!("daemon-e2e-{}", fastrand::u32(..));
    let once = json!({"backoffLimit": 0});
    let ni: NodeImage = serde_json::from_value(json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "NodeImage",
        "metadata": {"name": node},
        "spec": {"images": {
            "127.0.0.1:5000/app": {"tags": [{"tag": "1", "version": 1}, {"tag": "missing", "version": 1, "pullPolicy": once}]},
            "127.0.0.1:5000/private": {"pullSecrets": [{"namespace": "kruise-daemon-config", "name": "daemon-e2e-creds"}],
                "tags": [{"tag": "1", "version": 1, "pullPolicy": once}]},
        }}}))
    .unwrap();
    let nodeimages: Api<NodeImage> = Api::all(admin.clone());
    nodeimages.create(&PostParams::default(), &ni).await.unwrap();

    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_kruise"))
        .args(["daemon", "--node-name", &node, "--kubeconfig"])
        .arg(&kubeconfig)
        .arg("--runtime-endpoint")
        .arg(format!("unix://{}", socket.display()))
        .args(["--admin-addr", &format!("127.0.0.1:{port}")])
        .env("TOKIO_WORKER_THREADS", "2")
        .env("KRUISE_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();

    let status: Value = eventually_ok("the daemon's NodeImage status", Duration::from_secs(60), || {
        let nodeimages = nodeimages.clone();
        let node = node.clone();
        async move {
            let ni = nodeimages.get(&node).await.map_err(|e| e.to_string())?;
            let status = serde_json::to_value(ni.status.unwrap_or_default()).unwrap();
            if status["succeeded"] == 1 && status["failed"] == 2 { Ok(status) } else { Err(status.to_string()) }
        }
    })
    .await;
    let tag = |image: &str, t: &str| {
        status["imageStatuses"][image]["tags"].as_array().unwrap().iter().find(|s| s["tag"] == t).unwrap().clone()
    };
    assert_eq!(
        tag("127.0.0.1:5000/app", "1")["imageID"],
        format!("127.0.0.1:5000/app@{}", image_id("127.0.0.1:5000/app:1"))
    );
    let missing = tag("127.0.0.1:5000/app", "missing")["message"].as_str().unwrap().to_string();
    assert!(missing.contains("not found"), "{missing}");
    let auth = tag("127.0.0.1:5000/private", "1")["message"].as_str().unwrap().to_string();
    assert!(auth.starts_with("authentication failed for 127.0.0.1:5000: "), "{auth}");

    let (code, body) = http_get(port, "/readyz");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("runtime: fake-containerd"), "{body}");
    let (_, metrics) = http_get(port, "/metrics");
    assert!(metrics.contains("kruise_daemon_image_pulls_total{result=\"succeeded\"} 1"), "{metrics}");
    assert!(metrics.contains("kruise_daemon_image_pulls_total{result=\"auth_failed\"} 1"), "{metrics}");
    let rss = rss_kib(child.id());
    eprintln!("kruise daemon RSS after its pulls: {rss} KiB");
    assert!(rss < 128 * 1024, "RSS {rss} KiB");

    // SIGTERM: a clean stop.
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let exit = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "the daemon did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(exit.success(), "{exit:?}");
    nodeimages.delete(&node, &DeleteParams::default()).await.unwrap();
}
