//! Runtime discovery against fake runtimes on temp sockets: the order endpoints are tried in
//! (explicit, then the kubelet's configured endpoint, then candidates), the outcome named for each,
//! and the first answering CRI v1 chosen (kruise #1319 #1825 #851 #1196 #1663).

// Test helpers outside #[test] fns unwrap too: a setup failure should fail the test loudly.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use kruise_cri::fake::FakeRuntime;
use kruise_cri::{CriClient, CriError, discover, discover_with_timeout};

struct Sockets {
    dir: tempfile::TempDir,
    _servers: Vec<tokio::task::JoinHandle<()>>,
}

/// old.sock: a runtime without CRI v1; good.sock: "containerd"; other.sock: "cri-o";
/// missing.sock: nothing.
async fn sockets() -> Sockets {
    let dir = tempfile::tempdir().unwrap();
    let old = FakeRuntime::new("old-runtime");
    old.set_serves_v1(false);
    let servers = vec![
        old.serve(&dir.path().join("old.sock")).await.unwrap(),
        FakeRuntime::new("containerd").serve(&dir.path().join("good.sock")).await.unwrap(),
        FakeRuntime::new("cri-o").serve(&dir.path().join("other.sock")).await.unwrap(),
    ];
    Sockets { dir, _servers: servers }
}

impl Sockets {
    fn endpoint(&self, name: &str) -> String {
        format!("unix://{}", self.dir.path().join(name).display())
    }
}

const T: Duration = Duration::from_secs(3);

#[tokio::test]
async fn candidates_in_order_until_one_answers_cri_v1() {
    let s = sockets().await;
    let (missing, old, good, other) =
        (s.endpoint("missing.sock"), s.endpoint("old.sock"), s.endpoint("good.sock"), s.endpoint("other.sock"));
    let d = discover(None, None, &[&missing, &old, &good, &other]).await;
    let tried: Vec<(&str, &str)> = d.tried.iter().map(|p| (p.endpoint.as_str(), p.outcome.as_str())).collect();
    assert_eq!(tried.len(), 3, "stops at the first good one: {tried:?}");
    assert_eq!(tried[0].0, missing);
    assert!(tried[0].1.starts_with("no socket at this path"), "{tried:?}");
    assert_eq!(tried[1].0, old);
    assert!(
        tried[1].1.contains("does not serve CRI v1")
            && tried[1].1.contains("unknown service runtime.v1.RuntimeService"),
        "{tried:?}"
    );
    assert_eq!(tried[2].0, good);
    assert_eq!(tried[2].1, "ok: containerd 0.0.0-fake (v1) [well-known]");
    let (client, version) = d.chosen.unwrap();
    assert_eq!(client.endpoint(), good);
    assert_eq!(version.runtime_name, "containerd");
}

#[tokio::test]
async fn explicit_endpoint_is_the_only_one_tried() {
    let s = sockets().await;
    let (old, good) = (s.endpoint("old.sock"), s.endpoint("good.sock"));
    let d = discover(Some(&old), None, &[&good]).await;
    assert!(d.chosen.is_none());
    assert_eq!(d.tried.len(), 1);
    assert_eq!(d.tried[0].endpoint, old);
    assert!(d.tried[0].outcome.ends_with("[explicit]"));

    // A bare path works as well as a unix:// URL.
    let bare = s.dir.path().join("other.sock").display().to_string();
    let d = discover(Some(&bare), None, &[&good]).await;
    assert_eq!(d.chosen.unwrap().1.runtime_name, "cri-o");
}

#[tokio::test]
async fn kubelet_config_wins_over_candidates() {
    let s = sockets().await;
    let (good, other) = (s.endpoint("good.sock"), s.endpoint("other.sock"));
    let config = s.dir.path().join("kubelet.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerRuntimeEndpoint: {other}\n"
        ),
    )
    .unwrap();
    // containerd is first among the candidates, but the kubelet uses CRI-O.
    let d = discover(None, Some(&config), &[&good]).await;
    assert_eq!(d.tried.len(), 1, "{:?}", d.tried);
    assert_eq!(d.tried[0].endpoint, other);
    assert!(d.tried[0].outcome.contains("[kubelet config"), "{:?}", d.tried);
    assert_eq!(d.chosen.unwrap().1.runtime_name, "cri-o");

    // The kubelet's runtime is down: not replaced by another runtime's socket.
    let missing = s.endpoint("missing.sock");
    std::fs::write(&config, format!("containerRuntimeEndpoint: {missing}\n")).unwrap();
    let d = discover(None, Some(&config), &[&good]).await;
    assert!(d.chosen.is_none());
    assert_eq!(d.tried.len(), 1);
    assert_eq!(d.tried[0].endpoint, missing);

    // No endpoint in the file: probing goes on, and the file is named among the paths tried.
    std::fs::write(&config, "kind: KubeletConfiguration\n").unwrap();
    let d = discover(None, Some(&config), &[&good]).await;
    assert_eq!(d.tried.len(), 2);
    assert_eq!(d.tried[0].endpoint, config.display().to_string());
    assert!(d.tried[0].outcome.contains("sets no containerRuntimeEndpoint"));
    assert_eq!(d.chosen.unwrap().1.runtime_name, "containerd");
}

#[tokio::test]
async fn a_socket_nobody_listens_on_is_refused_not_hung() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("stale.sock");
    // Bound then dropped: the file stays, connections are refused.
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    let endpoint = path.display().to_string();
    let d = discover_with_timeout(None, None, &[&endpoint], Duration::from_secs(1)).await;
    assert!(d.chosen.is_none());
    assert!(d.tried[0].outcome.contains("Connection refused"), "{:?}", d.tried);
    match CriClient::connect(&endpoint, T).await {
        Err(CriError::Connect { message, .. }) => assert!(message.contains("Connection refused")),
        other => panic!("{other:?}"),
    }
}
