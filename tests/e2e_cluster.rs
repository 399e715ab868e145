//! End to end in the test cluster (issue 6): the in-process API server of `testenv/` with the
//! CRDs of `deploy/crds`, the webhook configurations of `webhook-config/` (CA injected), and a
//! separately started `kruise serve` (certificates from `kruise certs`) — driven by the real
//! kubectl, as a user would.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kruise_testenv::TestEnv;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `kruise serve` as a child process; killed on drop.
struct Kruise(Child);

impl Drop for Kruise {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_kruise(cert_dir: &Path) -> (Kruise, std::net::SocketAddr) {
    let status = Command::new(env!("CARGO_BIN_EXE_kruise")).args(["certs", "--out"]).arg(cert_dir).status().unwrap();
    assert!(status.success());
    let (port, admin) = (free_port(), free_port());
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_kruise"))
        .args(["serve", "--addr", &addr.to_string(), "--admin-addr", &format!("127.0.0.1:{admin}"), "--log", "warn"])
        .arg("--cert-dir")
        .arg(cert_dir)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let kruise = Kruise(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", admin)).is_err() {
        assert!(Instant::now() < deadline, "kruise serve did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    (kruise, addr)
}

struct Kubectl {
    dir: tempfile::TempDir,
}

impl Kubectl {
    async fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = tokio::time::timeout(
            Duration::from_secs(60),
            tokio::process::Command::new("kubectl")
                .arg("--cache-dir")
                .arg(self.dir.path().join("cache"))
                .args(args)
                .env("KUBECONFIG", self.dir.path().join("kubeconfig"))
                .env("HOME", self.dir.path())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .expect("kubectl finishes")
        .expect("kubectl runs (is it installed? .ci/run installs it)");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_goes_through_kruise_webhooks() {
    let certs = tempfile::tempdir().unwrap();
    let (_kruise, webhook_addr) = start_kruise(certs.path());
    let ca = std::fs::read(certs.path().join("ca.crt")).unwrap();

    let env = TestEnv::start().await.unwrap();
    env.apply_path(root().join("deploy/crds")).await.unwrap();
    env.register_webhooks_from_path(root().join("webhook-config"), &ca).await.unwrap();
    env.set_service("kruise-system", "kruise-webhook-service", 443, webhook_addr);
    let kubectl = Kubectl { dir: tempfile::tempdir().unwrap() };
    env.write_kubeconfig(kubectl.dir.path().join("kubeconfig")).unwrap();

    // An Advanced StatefulSet with maxUnavailable 2 and OrderedReady is denied with the webhook's message.
    let asts = root().join("tests/fixtures/e2e/asts-ordered-maxunavailable.yaml");
    let (ok, _, stderr) = kubectl.run(&["apply", "--validate=false", "-f", asts.to_str().unwrap()]).await;
    assert!(!ok, "the StatefulSet must be denied");
    assert!(stderr.contains("admission webhook \"vstatefulset.kb.io\" denied the request"), "{stderr}");
    assert!(stderr.contains("can only work with Parallel PodManagementPolicyType"), "{stderr}");
    let (ok, _, _) = kubectl.run(&["get", "statefulsets.apps.kruise.io", "ordered"]).await;
    assert!(!ok, "nothing stored");

    // The same with server dry run: admission runs, nothing is stored either way.
    let (ok, _, stderr) =
        kubectl.run(&["apply", "--validate=false", "--dry-run=server", "-f", asts.to_str().unwrap()]).await;
    assert!(!ok && stderr.contains("can only work with Parallel"), "{stderr}");

    // A CloneSet is stored with its defaults applied by the mutating webhook.
    let cloneset = root().join("examples/cloneset.yaml");
    let (ok, stdout, stderr) = kubectl.run(&["apply", "--validate=false", "-f", cloneset.to_str().unwrap()]).await;
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("cloneset.apps.kruise.io/sample created"), "{stdout}");
    let (ok, stdout, stderr) = kubectl.run(&["get", "clonesets.apps.kruise.io", "sample", "-o", "json"]).await;
    assert!(ok, "{stderr}");
    let stored: Value = serde_json::from_str(&stdout).unwrap();
    let spec = &stored["spec"];
    assert_eq!(spec["updateStrategy"]["type"], "InPlaceIfPossible");
    assert_eq!(spec["updateStrategy"]["maxUnavailable"], "20%");
    assert_eq!(spec["updateStrategy"]["partition"], 0);
    assert_eq!(spec["updateStrategy"]["inPlaceUpdateStrategy"], serde_json::json!({}));
    assert_eq!(spec["revisionHistoryLimit"], 10);
    let c = &spec["template"]["spec"]["containers"][0];
    assert_eq!(c["imagePullPolicy"], "Always");
    assert_eq!(c["resources"]["requests"]["cpu"], "500m", "quantities normalised");
    assert_eq!(spec["template"]["spec"]["schedulerName"], "default-scheduler");

    // A dry-run UPDATE that would break InPlaceOnly is refused with the path of the change.
    let edited = std::fs::read_to_string(&cloneset)
        .unwrap()
        .replace("type: InPlaceIfPossible", "type: InPlaceOnly")
        .replace("cpu: \"0.5\"", "cpu: \"1\"");
    let path = kubectl.dir.path().join("edited.yaml");
    std::fs::write(&path, edited).unwrap();
    let (ok, _, stderr) =
        kubectl.run(&["apply", "--validate=false", "--dry-run=server", "-f", path.to_str().unwrap()]).await;
    assert!(!ok, "InPlaceOnly resources change must be denied");
    assert!(stderr.contains("admission webhook \"vcloneset.kb.io\" denied the request"), "{stderr}");
    assert!(stderr.contains("/containers/0/resources"), "{stderr}");

    // Every call reached kruise over TLS and was answered.
    let log = env.admission_log();
    assert!(log.iter().any(|r| r.webhook == "mcloneset.kb.io"), "{log:?}");
    assert!(log.iter().any(|r| r.webhook == "vstatefulset.kb.io"), "{log:?}");
}
