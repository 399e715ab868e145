//! Shared by the end-to-end tests on the real control plane: `kruise serve` started as a user
//! starts it and reached through its Service as a pod is, and kubectl.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use kruise_testenv::{Endpoint, PodAddress, TestCluster, publish_endpoints};
#[allow(unused_imports)] // not every test binary that includes this module waits
pub use kruise_testenv::{eventually, eventually_ok};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The manager namespace, webhook Service and conversion Service of `deploy/`.
pub const NAMESPACE: &str = "kruise-system";
pub const SERVICE: &str = "kruise-webhook-service";
pub const CONVERSION_SERVICE: &str = "kruise-conversion-service";

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn cluster() -> &'static TestCluster {
    TestCluster::shared().unwrap_or_else(|e| panic!("the test cluster did not start: {e}"))
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A `kruise serve` process; killed on drop.
pub struct Kruise {
    child: Child,
    pub address: PodAddress,
    pub admin: u16,
    /// The CA its serving certificate chains to, in files mode (managed mode publishes its own).
    pub ca: Option<Vec<u8>>,
}

impl Drop for Kruise {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Kruise {
    /// `kruise serve` on a pod address (port 9876, as in `deploy/`) with certificates from
    /// `kruise certs` in `cert_dir`, reaching the cluster with `kubeconfig` (see
    /// [`manager_kubeconfig`]), plus `extra` flags.
    pub fn start(cert_dir: &Path, kubeconfig: &Path, extra: &[&str]) -> Kruise {
        let status =
            Command::new(env!("CARGO_BIN_EXE_kruise")).args(["certs", "--out"]).arg(cert_dir).status().unwrap();
        assert!(status.success());
        Self::spawn(cert_dir, kubeconfig, extra, "warn")
    }

    /// `kruise serve` as [`Kruise::start`] does, with the certificates already in `cert_dir` and
    /// this log filter (its log goes to the test's stderr).
    pub fn spawn(cert_dir: &Path, kubeconfig: &Path, extra: &[&str], log: &str) -> Kruise {
        let files = [&["--cert-mode", "files", "--cert-dir", cert_dir.to_str().unwrap()][..], extra].concat();
        let mut kruise = Self::run(kubeconfig, &files, log);
        kruise.ca = std::fs::read(cert_dir.join("ca.crt")).ok();
        kruise
    }

    /// `kruise serve` with its defaults (managed certificates) plus `extra`.
    pub fn managed(kubeconfig: &Path, extra: &[&str], log: &str) -> Kruise {
        Self::run(kubeconfig, extra, log)
    }

    fn run(kubeconfig: &Path, extra: &[&str], log: &str) -> Kruise {
        let address = PodAddress::allocate(9876).unwrap();
        let admin = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_kruise"))
            .args(["serve", "--addr", &address.socket(9876).to_string(), "--admin-addr", &format!("127.0.0.1:{admin}")])
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(extra)
            .env("KRUISE_LOG", log)
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let kruise = Kruise { child, address, admin, ca: None };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", admin)).is_err() {
            assert!(Instant::now() < deadline, "kruise serve did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        kruise
    }
}

impl Kruise {
    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM (what the kubelet does on pod deletion).
    pub fn terminate(&self) {
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
    }

    /// Waits for the process to exit; its exit status.
    pub fn wait(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// GET of an admin path: (status code, body).
    pub async fn admin_get(&self, path: &str) -> (u16, String) {
        http_get(self.admin, path).await
    }
}

/// A plain-HTTP GET on 127.0.0.1:`port`: (status code, body); (0, error) when it fails.
pub async fn http_get(port: u16, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut tcp) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return (0, "connection refused".into());
    };
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    if tcp.write_all(request.as_bytes()).await.is_err() {
        return (0, "write failed".into());
    }
    let mut out = Vec::new();
    let _ = tcp.read_to_end(&mut out).await;
    let text = String::from_utf8_lossy(&out).into_owned();
    let code = text.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    (code, body)
}

/// Applies deploy/'s Namespace and RBAC and writes a kubeconfig of its ServiceAccount
/// `kruise-manager` into `dir`: the manager runs with exactly the rights `deploy/` gives it.
pub async fn manager_kubeconfig(dir: &Path) -> PathBuf {
    let c = cluster();
    for path in ["deploy/namespace.yaml", "deploy/rbac.yaml"] {
        c.apply_path(root().join(path)).await.unwrap();
    }
    c.service_account_kubeconfig(NAMESPACE, "kruise-manager", dir).await.unwrap()
}

/// Applies deploy/'s namespace, Service and CRDs, and publishes `servers` as the Service's ready
/// endpoints. In files mode, the CRDs' conversion webhooks (`/convert` on the Service) trust the
/// servers' CA, as the leader makes them trust its own in managed mode.
pub async fn install(servers: &[&Kruise]) {
    let c = cluster();
    for path in ["deploy/namespace.yaml", "deploy/service.yaml", "deploy/crds"] {
        c.apply_path(root().join(path)).await.unwrap();
    }
    if let Some(ca) = servers.first().and_then(|k| k.ca.clone()) {
        trust_conversion(&ca).await;
    }
    publish(servers).await;
}

/// Publishes `servers` as the ready endpoints of deploy/'s webhook and conversion Services (none: no
/// endpoint).
pub async fn publish(servers: &[&Kruise]) {
    let endpoints: Vec<Endpoint> = servers.iter().map(|k| Endpoint { address: k.address, ready: true }).collect();
    publish_endpoints(&cluster().client().await.unwrap(), NAMESPACE, SERVICE, "https", 9876, &endpoints).await.unwrap();
    publish_conversion(&endpoints).await;
}

/// Publishes `endpoints` behind deploy/'s conversion Service only. Its
/// `publishNotReadyAddresses` makes the EndpointSlice controller mark every replica ready there,
/// ready or not; `ready: false` shows what a Service without it would publish.
pub async fn publish_conversion(endpoints: &[Endpoint]) {
    let client = cluster().client().await.unwrap();
    publish_endpoints(&client, NAMESPACE, CONVERSION_SERVICE, "https", 9876, endpoints).await.unwrap();
}

/// Leader-election and drain timings short enough for a test's handovers.
pub const ELECTION: [&str; 8] = [
    "--leader-lease-duration",
    "4s",
    "--leader-renew-deadline",
    "3s",
    "--leader-retry-period",
    "500ms",
    "--shutdown-delay",
    "2s",
];

/// Sets the `caBundle` of every kruise CRD's conversion webhook to `ca_pem`.
pub async fn trust_conversion(ca_pem: &[u8]) {
    // Every kruise CRD that converts through the webhook (the CloneSet's only with its opt-in).
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{Api, Patch, PatchParams};
    let crds: Api<CustomResourceDefinition> = Api::all(cluster().client().await.unwrap());
    let bundle: String =
        serde_json::to_value(k8s_openapi::ByteString(ca_pem.to_vec())).unwrap().as_str().unwrap().into();
    for crd in crds.list(&Default::default()).await.unwrap() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let converting = crd.spec.conversion.as_ref().is_some_and(|c| c.strategy == "Webhook");
        if !name.ends_with(".kruise.io") || !converting {
            continue;
        }
        let patch = serde_json::json!({"spec": {"conversion": {"webhook": {"clientConfig": {"caBundle": bundle}}}}});
        crds.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    }
}

/// kubectl with its own cache and home, on the test cluster's admin kubeconfig.
pub struct Kubectl {
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

impl Kubectl {
    pub fn new() -> Self {
        Self { dir: tempfile::tempdir().unwrap(), kubeconfig: cluster().kubeconfig().to_path_buf() }
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Runs kubectl; (success, stdout, stderr).
    pub async fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = tokio::time::timeout(
            Duration::from_secs(60),
            tokio::process::Command::new("kubectl")
                .arg("--cache-dir")
                .arg(self.dir.path().join("cache"))
                .args(args)
                .env("KUBECONFIG", &self.kubeconfig)
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

/// `kruise daemon` processes, killed (and reaped) on drop, whatever the test's outcome.
pub struct Daemons(pub Vec<Child>);

impl Drop for Daemons {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// What the daemon end-to-end tests share (issue 30 item 6): the manager with `deploy/`'s
/// rights and `kruise certs` certificates, installed behind the test Services, and one
/// `kruise daemon` per simulated node as the DaemonSet runs it (the `kruise-daemon`
/// ServiceAccount of `deploy/daemon-rbac.yaml`, the node's CRI socket). Fields drop in order:
/// the daemons, then the manager, then the directories they read.
pub struct DaemonEnv {
    /// The daemons (killed on drop).
    pub daemons: Daemons,
    /// The manager.
    pub kruise: Kruise,
    /// An admin client.
    pub client: kube::Client,
    /// The simulated nodes, sorted; `daemons.0[i]` runs on `nodes[i]`.
    pub nodes: Vec<String>,
    /// The manager's certificates (`ca.crt` among them).
    pub certs: tempfile::TempDir,
    dir: tempfile::TempDir,
}

/// Starts [`DaemonEnv`]: the manager and the daemons with `--feature-gates gates` (none when
/// empty; the chart passes one value to both), the generated `webhook-config/` registered when
/// `webhooks`. The log filter is `$KRUISE_E2E_LOG` (default `warn`).
pub async fn start_daemons(gates: &str, webhooks: bool) -> DaemonEnv {
    let c = cluster();
    let dir = tempfile::tempdir().unwrap();
    let certs = tempfile::tempdir().unwrap();
    let log = std::env::var("KRUISE_E2E_LOG").unwrap_or_else(|_| "warn".into());
    let gate_flags: Vec<&str> = if gates.is_empty() { Vec::new() } else { vec!["--feature-gates", gates] };

    let kubeconfig = manager_kubeconfig(dir.path()).await;
    let made = Command::new(env!("CARGO_BIN_EXE_kruise")).args(["certs", "--out"]).arg(certs.path()).status().unwrap();
    assert!(made.success());
    let kruise = Kruise::spawn(certs.path(), &kubeconfig, &gate_flags, &log);
    install(&[&kruise]).await;
    let client = c.client().await.unwrap();
    if webhooks {
        let ca = std::fs::read(certs.path().join("ca.crt")).unwrap();
        kruise_testenv::register_webhooks(&client, &root().join("webhook-config"), &ca).await.unwrap();
    }

    c.apply_path(root().join("deploy/daemon-rbac.yaml")).await.unwrap();
    let daemon_kubeconfig = c.service_account_kubeconfig("kruise-system", "kruise-daemon", dir.path()).await.unwrap();
    let mut nodes: Vec<String> = kube::Api::<k8s_openapi::api::core::v1::Node>::all(client.clone())
        .list(&kube::api::ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|n| n.metadata.name.unwrap())
        .collect();
    nodes.sort();
    let daemons = Daemons(
        nodes
            .iter()
            .map(|node| {
                Command::new(env!("CARGO_BIN_EXE_kruise"))
                    .args(["daemon", "--node-name", node, "--kubeconfig"])
                    .arg(&daemon_kubeconfig)
                    .arg("--runtime-endpoint")
                    .arg(format!("unix://{}", c.cri_socket(node).display()))
                    .args(["--admin-addr", &format!("127.0.0.1:{}", free_port())])
                    .args(&gate_flags)
                    .env("TOKIO_WORKER_THREADS", "1")
                    .env("KRUISE_LOG", &log)
                    .stdout(Stdio::null())
                    .stderr(Stdio::inherit())
                    .spawn()
                    .unwrap()
            })
            .collect(),
    );
    DaemonEnv { daemons, kruise, client, nodes, certs, dir }
}

/// Whether the scheduler left `pod` Pending for want of a node (`PodScheduled=False`,
/// `Unschedulable`).
pub fn is_unschedulable(pod: &k8s_openapi::api::core::v1::Pod) -> bool {
    pod.status.as_ref().and_then(|s| s.conditions.as_ref()).is_some_and(|cs| {
        cs.iter()
            .any(|c| c.type_ == "PodScheduled" && c.status == "False" && c.reason.as_deref() == Some("Unschedulable"))
    })
}

/// Labels the simulated nodes (the zones of the UnitedDeployment and WorkloadSpread tests) into zones `a` and `b` (half each, in name order) under `zone_key`:
/// node name → zone.
pub async fn label_zones(
    nodes_api: &kube::Api<k8s_openapi::api::core::v1::Node>,
    zone_key: &str,
) -> std::collections::BTreeMap<String, String> {
    let mut nodes: Vec<String> = nodes_api
        .list(&kube::api::ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    nodes.sort();
    assert!(nodes.len() >= 2, "{nodes:?}");
    let mut zones = std::collections::BTreeMap::new();
    for (i, node) in nodes.iter().enumerate() {
        let zone = if i < nodes.len() / 2 { "a" } else { "b" };
        let patch = serde_json::json!({"metadata": {"labels": {zone_key: zone}}});
        nodes_api.patch(node, &kube::api::PatchParams::default(), &kube::api::Patch::Merge(&patch)).await.unwrap();
        zones.insert(node.clone(), zone.to_string());
    }
    zones
}

/// Takes the labels [`label_zones`] set off the nodes again (best effort).
pub async fn unlabel_zones(
    nodes_api: &kube::Api<k8s_openapi::api::core::v1::Node>,
    zone_key: &str,
    zones: &std::collections::BTreeMap<String, String>,
) {
    for node in zones.keys() {
        let patch = serde_json::json!({"metadata": {"labels": {zone_key: null}}});
        let _ = nodes_api.patch(node, &kube::api::PatchParams::default(), &kube::api::Patch::Merge(&patch)).await;
    }
}

/// `kruise serve` scoped to namespace `ns` as the controller e2e tests start it: certificates from
/// `kruise certs` in `certs`, deploy/'s RBAC and ServiceAccount, the API server reached through a
/// fault proxy (its faults are the test's to set), the webhook Service pointed at it and its
/// webhooks registered with its CA. Its log filter is `KRUISE_E2E_LOG` (default `warn`). Returns
/// the server, the proxy and an admin client.
pub async fn serve_namespace(ns: &str, certs: &Path) -> (Kruise, kruise_testenv::FaultProxy, kube::Client) {
    let c = cluster();
    manager_kubeconfig(certs).await;
    let token = c.service_account_token(NAMESPACE, "kruise-manager").await.unwrap();
    let proxy = c.fault_proxy_as(&token).await.unwrap();
    let made = Command::new(env!("CARGO_BIN_EXE_kruise")).args(["certs", "--out"]).arg(certs).status().unwrap();
    assert!(made.success());
    let log = std::env::var("KRUISE_E2E_LOG").unwrap_or_else(|_| "warn".into());
    let kruise = Kruise::spawn(certs, proxy.kubeconfig(), &["--namespace", ns], &log);
    install(&[&kruise]).await;
    let ca = std::fs::read(certs.join("ca.crt")).unwrap();
    let client = c.client().await.unwrap();
    kruise_testenv::register_webhooks(&client, &root().join("webhook-config"), &ca).await.unwrap();
    (kruise, proxy, client)
}
