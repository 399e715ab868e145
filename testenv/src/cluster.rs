//! The test cluster of one test binary: the control plane, started once on first use, and the
//! simulated kubelet, both running on a background thread of their own for as long as the test
//! binary runs (each `#[tokio::test]` has its own runtime; the cluster outlives them all). Tests
//! get a namespace each, clients, kubeconfigs and fault proxies from here.

use crate::controlplane::{ControlPlane, Ready};
use crate::kubelet::{Kubelet, KubeletSettings, nodes};
use crate::proxy::FaultProxy;
use crate::{Error, manifests};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How many simulated nodes the shared cluster has.
pub const NODES: usize = 3;

/// Set to keep test namespaces after their test (for a look with kubectl).
pub const KEEP_NAMESPACES_ENV: &str = "KRUISE_TESTENV_KEEP_NAMESPACES";

/// The shared test cluster.
pub struct TestCluster {
    ready: Ready,
    ca_pem: Vec<u8>,
    kubelet: Kubelet,
    background: tokio::runtime::Handle,
    background_client: kube::Client,
    started_in: Duration,
}

struct Started {
    ready: Ready,
    kubelet: Kubelet,
    handle: tokio::runtime::Handle,
    client: kube::Client,
    started_in: Duration,
}

impl TestCluster {
    /// The cluster of this test binary, started on first call (a few seconds; the first build of
    /// the control plane takes minutes). A failed start is reported to every caller.
    pub fn shared() -> Result<&'static TestCluster, Error> {
        static CLUSTER: OnceLock<Result<TestCluster, String>> = OnceLock::new();
        CLUSTER
            .get_or_init(|| Self::start(NODES).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| Error::ControlPlane(e.clone()))
    }

    /// Starts a cluster of its own (the `kruise-testenv` binary; tests use [`Self::shared`]).
    pub fn start(node_count: usize) -> Result<TestCluster, Error> {
        let (tx, rx) = std::sync::mpsc::channel::<Result<Started, Error>>();
        std::thread::Builder::new()
            .name("kruise-testenv".into())
            .spawn(move || {
                let started = Instant::now();
                let plane = match ControlPlane::start() {
                    Ok(p) => p,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                let runtime = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("kruise-testenv-bg")
                    .enable_all()
                    .build()
                {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = tx.send(Err(Error::io("background runtime", e)));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let ready = plane.ready().clone();
                    let setup = async {
                        let client = client_from_kubeconfig(&ready.kubeconfig).await?;
                        // The nodes' CRI sockets live in the control plane's directory, removed with it.
                        let cri_dir = ready.dir.join("cri");
                        let kubelet = Kubelet::start_with_cri_dir(client.clone(), node_count, Some(&cri_dir)).await?;
                        nodes::wait_schedulable(&client, kubelet.node_infos(), Duration::from_secs(60)).await?;
                        Ok::<_, Error>((client, kubelet))
                    };
                    match setup.await {
                        Ok((client, kubelet)) => {
                            let handle = tokio::runtime::Handle::current();
                            let _ =
                                tx.send(Ok(Started { ready, kubelet, handle, client, started_in: started.elapsed() }));
                            // The control plane lives as long as this thread: until the process exits.
                            let _plane = plane;
                            std::future::pending::<()>().await;
                        }
                        Err(e) => {
                            let _ = tx.send(Err(e));
                        }
                    }
                });
            })
            .map_err(|e| Error::io("spawn the test cluster thread", e))?;
        let s = rx.recv().map_err(|_| Error::ControlPlane("the test cluster thread died".into()))??;
        let ca_pem = std::fs::read(&s.ready.ca).map_err(|e| Error::io(format!("read {}", s.ready.ca.display()), e))?;
        tracing::info!(started_in = ?s.started_in, server = %s.ready.server, "test cluster ready");
        Ok(TestCluster {
            ready: s.ready,
            ca_pem,
            kubelet: s.kubelet,
            background: s.handle,
            background_client: s.client,
            started_in: s.started_in,
        })
    }

    /// The admin kubeconfig (for kubectl and `kruise serve --kubeconfig`).
    pub fn kubeconfig(&self) -> &Path {
        &self.ready.kubeconfig
    }

    /// The apiserver URL.
    pub fn server(&self) -> &str {
        &self.ready.server
    }

    /// The CA that verifies the apiserver (PEM).
    pub fn ca_pem(&self) -> &[u8] {
        &self.ca_pem
    }

    /// The component logs' directory.
    pub fn logs(&self) -> &Path {
        &self.ready.logs
    }

    /// The admin bearer token.
    pub fn admin_token(&self) -> &str {
        &self.ready.token
    }

    /// How long the control plane, the nodes and the kubelet took to start.
    pub fn started_in(&self) -> Duration {
        self.started_in
    }

    /// The simulated kubelet.
    pub fn kubelet(&self) -> &Kubelet {
        &self.kubelet
    }

    /// The CRI endpoint (unix socket path) of simulated node `node`: a runtime sharing its images
    /// with the node's status and pods (`kruise daemon --cri-endpoint` of that node). A name that is
    /// not a simulated node gives a path nothing listens on.
    pub fn cri_socket(&self, node: &str) -> PathBuf {
        self.kubelet.cri_socket(node).unwrap_or_else(|| self.kubelet.cri_dir().join(format!("{node}.sock")))
    }

    /// The container runtime of simulated node `node` (to script pulls, inspect images and
    /// concurrency); `None` for other names.
    pub fn cri(&self, node: &str) -> Option<kruise_cri::fake::FakeRuntime> {
        self.kubelet.cri(node)
    }

    /// An admin client on the current runtime.
    pub async fn client(&self) -> Result<kube::Client, Error> {
        client_from_kubeconfig(&self.ready.kubeconfig).await
    }

    /// A fault proxy in front of the apiserver, with the admin token (on the current runtime).
    pub async fn fault_proxy(&self) -> Result<FaultProxy, Error> {
        FaultProxy::start(&self.ready.server, &self.ca_pem, &self.ready.token).await
    }

    /// A fault proxy that authenticates as `token` (e.g. a ServiceAccount's).
    pub async fn fault_proxy_as(&self, token: &str) -> Result<FaultProxy, Error> {
        FaultProxy::start(&self.ready.server, &self.ca_pem, token).await
    }

    /// A fresh namespace `<prefix>-<random>` whose default ServiceAccount exists (so pods can be
    /// created at once); deleted when the returned value is dropped.
    pub async fn namespace(&'static self, prefix: &str) -> Result<TestNamespace, Error> {
        self.namespace_with(prefix, None).await
    }

    /// [`Self::namespace`] with kubelet settings of its own.
    pub async fn namespace_with(
        &'static self,
        prefix: &str,
        kubelet: Option<KubeletSettings>,
    ) -> Result<TestNamespace, Error> {
        let client = self.client().await?;
        let suffix: String = (0..5).map(|_| fastrand::lowercase()).collect();
        let name = format!("{}-{suffix}", prefix.trim_end_matches('-'));
        let ns: Namespace = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {"testenv.kruise.io/test": prefix}}
        }))
        .map_err(|e| Error::Manifest { path: name.clone(), detail: e.to_string() })?;
        Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &ns).await?;
        if let Some(settings) = kubelet {
            self.kubelet.configure_namespace(&name, settings);
        }
        let sa: Api<ServiceAccount> = Api::namespaced(client, &name);
        let deadline = Instant::now() + Duration::from_secs(30);
        while sa.get_opt("default").await?.is_none() {
            if Instant::now() > deadline {
                return Err(Error::Timeout(format!("ServiceAccount {name}/default")));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(TestNamespace { name, cluster: self })
    }

    /// A kubeconfig authenticating as ServiceAccount `namespace/name` (a TokenRequest token),
    /// written into `dir`.
    pub async fn service_account_kubeconfig(&self, namespace: &str, name: &str, dir: &Path) -> Result<PathBuf, Error> {
        let token = self.service_account_token(namespace, name).await?;
        let path = dir.join(format!("{namespace}-{name}.kubeconfig"));
        write_kubeconfig(&path, &self.ready.server, &self.ca_pem, &token)?;
        Ok(path)
    }

    /// A TokenRequest token of ServiceAccount `namespace/name`, valid for an hour.
    pub async fn service_account_token(&self, namespace: &str, name: &str) -> Result<String, Error> {
        let client = self.client().await?;
        let api: Api<ServiceAccount> = Api::namespaced(client, namespace);
        let request: k8s_openapi::api::authentication::v1::TokenRequest = serde_json::from_value(json!({
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600}
        }))
        .map_err(|e| Error::Manifest { path: "TokenRequest".into(), detail: e.to_string() })?;
        let answer = api.create_token_request(name, &PostParams::default(), &request).await?;
        answer.status.map(|s| s.token).ok_or_else(|| Error::Manifest {
            path: format!("{namespace}/{name}"),
            detail: "TokenRequest without a token".into(),
        })
    }

    /// Applies YAML/JSON manifests (a file or a directory) with server-side apply.
    pub async fn apply_path(&self, path: impl AsRef<Path>) -> Result<Vec<manifests::Applied>, Error> {
        manifests::apply_path(&self.client().await?, path.as_ref()).await
    }
}

/// A namespace of one test, deleted on drop (unless [`KEEP_NAMESPACES_ENV`] is set).
pub struct TestNamespace {
    name: String,
    cluster: &'static TestCluster,
}

impl TestNamespace {
    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl std::fmt::Display for TestNamespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

impl Drop for TestNamespace {
    fn drop(&mut self) {
        if std::env::var_os(KEEP_NAMESPACES_ENV).is_some() {
            return;
        }
        let (name, client, kubelet) =
            (self.name.clone(), self.cluster.background_client.clone(), self.cluster.kubelet.clone());
        self.cluster.background.spawn(async move {
            let _ = Api::<Namespace>::all(client).delete(&name, &DeleteParams::background()).await;
            // Its pods still terminate under the namespace's settings; forget them a minute later.
            tokio::time::sleep(Duration::from_secs(60)).await;
            kubelet.forget_namespace(&name);
        });
    }
}

/// A client from a kubeconfig file.
pub async fn client_from_kubeconfig(path: &Path) -> Result<kube::Client, Error> {
    let kubeconfig = kube::config::Kubeconfig::read_from(path).map_err(|e| Error::Kubeconfig(e.to_string()))?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &kube::config::KubeConfigOptions::default())
        .await
        .map_err(|e| Error::Kubeconfig(e.to_string()))?;
    Ok(kube::Client::try_from(config)?)
}

/// Writes a kubeconfig for `server` with a bearer token.
pub fn write_kubeconfig(path: &Path, server: &str, ca_pem: &[u8], token: &str) -> Result<(), Error> {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(ca_pem);
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: kruise-testenv\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: user\n  user:\n    token: {token}\ncontexts:\n- name: kruise-testenv\n  context:\n    cluster: kruise-testenv\n    user: user\n    namespace: default\ncurrent-context: kruise-testenv\n"
    );
    std::fs::write(path, text).map_err(|e| Error::io(format!("write {}", path.display()), e))
}
