//! `TestEnv`: one running test cluster on `127.0.0.1`. It starts the REST server, the garbage
//! collector and (on request) the simulated kubelet, hands out a kubeconfig and `kube::Client`s,
//! routes webhook services to loopback addresses, applies manifests (CRDs, webhook configurations
//! with a CA bundle injected) and exposes the fault knobs. Dropping it stops everything.

use crate::admission::{AdmissionRecord, ServiceMap, ServiceRef};
use crate::api::{self, Target};
use crate::cluster::{Cluster, ClusterConfig, Ctx, User};
use crate::errors::{ApiError, Error};
use crate::faults::Faults;
use crate::kubelet::{self, Kubelet, KubeletConfig};
use crate::meta;
use base64::Engine;
use serde::Deserialize;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Namespaces every cluster starts with.
pub const INITIAL_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

/// Configures a [`TestEnv`] before it starts.
#[derive(Debug, Clone, Default)]
pub struct TestEnvBuilder {
    port: u16,
    config: ClusterConfig,
    kubelet: Option<KubeletConfig>,
    services: Vec<(ServiceRef, SocketAddr)>,
}

impl TestEnvBuilder {
    /// Listen on this loopback port (0, the default, picks a free one).
    pub fn port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Events kept for watch resumption (default 10 000).
    pub fn watch_history(mut self, events: usize) -> Self {
        self.config.watch_history = events;
        self
    }

    /// Interval of BOOKMARK events on watches that ask for them (default 1 s).
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.config.bookmark_interval = interval;
        self
    }

    /// Start the simulated kubelet with the cluster.
    pub fn kubelet(mut self, config: KubeletConfig) -> Self {
        self.kubelet = Some(config);
        self
    }

    /// Route a webhook service to a loopback address from the start.
    pub fn service(mut self, service: ServiceRef, addr: SocketAddr) -> Self {
        self.services.push((service, addr));
        self
    }

    /// Starts the cluster.
    pub async fn start(self) -> Result<TestEnv, Error> {
        let listener = TcpListener::bind(("127.0.0.1", self.port)).await.map_err(Error::Bind)?;
        let addr = listener.local_addr().map_err(Error::Bind)?;
        let (shutdown, shutdown_rx) = watch::channel(false);
        let cluster = Arc::new(Cluster::new(self.config, shutdown_rx));
        for (svc, a) in self.services {
            cluster.admission.services.insert(svc, a);
        }
        let ns_def = cluster
            .by_group_resource("", "namespaces")
            .ok_or_else(|| Error::Manifest("namespaces not served".into()))?;
        for ns in INITIAL_NAMESPACES {
            let t = Target::new(ns_def.clone(), "v1", "", "");
            let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            api::create(&cluster, &mut Ctx::new(User::admin()), &t, body).await.map_err(Error::Api)?;
        }
        tokio::spawn(crate::http::serve(cluster.clone(), listener));
        tokio::spawn(crate::gc::run(cluster.clone()));
        let mut env = TestEnv { cluster, addr, shutdown, kubelet: None };
        if let Some(cfg) = self.kubelet {
            env.start_kubelet(cfg).await?;
        }
        Ok(env)
    }
}

/// A running test cluster.
pub struct TestEnv {
    cluster: Arc<Cluster>,
    addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    kubelet: Option<Kubelet>,
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        self.shutdown.send_replace(true);
    }
}

#[derive(Deserialize)]
struct TypeMeta {
    #[serde(rename = "apiVersion", default)]
    api_version: String,
    #[serde(default)]
    kind: String,
}

impl TestEnv {
    /// Starts a cluster with default settings and no kubelet.
    pub async fn start() -> Result<Self, Error> {
        Self::builder().start().await
    }

    /// A builder for non-default settings.
    pub fn builder() -> TestEnvBuilder {
        TestEnvBuilder::default()
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kube client configuration for this cluster (namespace `default`).
    pub fn kube_config(&self) -> kube::Config {
        let uri = self.url().parse::<http::Uri>().unwrap_or_default();
        let mut cfg = kube::Config::new(uri);
        cfg.default_namespace = "default".into();
        cfg.read_timeout = Some(Duration::from_secs(300));
        cfg
    }

    /// A kube client talking to this cluster as the administrator.
    pub fn client(&self) -> Result<kube::Client, Error> {
        kube::Client::try_from(self.kube_config()).map_err(Error::Client)
    }

    /// A kubeconfig document pointing at this cluster (context `testenv`, namespace `default`,
    /// bearer token `kubernetes-admin`).
    pub fn kubeconfig_yaml(&self) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: testenv\n  cluster:\n    server: {url}\n\
             contexts:\n- name: testenv\n  context:\n    cluster: testenv\n    user: testenv\n    namespace: default\n\
             current-context: testenv\nusers:\n- name: testenv\n  user:\n    token: kubernetes-admin\n",
            url = self.url()
        )
    }

    /// Writes the kubeconfig to `path`.
    pub fn write_kubeconfig(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path.as_ref();
        std::fs::write(path, self.kubeconfig_yaml())
            .map_err(|source| Error::Io { path: path.display().to_string(), source })
    }

    /// Webhook service routing: `env.services().insert(ServiceRef::new(ns, name, 443), addr)`.
    pub fn services(&self) -> &ServiceMap {
        &self.cluster.admission.services
    }

    /// Routes `namespace/name:port` to `addr`.
    pub fn set_service(&self, namespace: &str, name: &str, port: u16, addr: SocketAddr) {
        self.services().insert(ServiceRef::new(namespace, name, port), addr);
    }

    /// Fault injection knobs.
    pub fn faults(&self) -> &Faults {
        &self.cluster.faults
    }

    /// Every webhook call made so far.
    pub fn admission_log(&self) -> Vec<AdmissionRecord> {
        self.cluster.admission.log()
    }

    /// Starts the simulated kubelet (once; later calls return the running one).
    pub async fn start_kubelet(&mut self, config: KubeletConfig) -> Result<Kubelet, Error> {
        if let Some(k) = &self.kubelet {
            return Ok(k.clone());
        }
        let k = kubelet::start(self.cluster.clone(), config).await?;
        self.kubelet = Some(k.clone());
        Ok(k)
    }

    /// The running kubelet, if started.
    pub fn kubelet(&self) -> Option<&Kubelet> {
        self.kubelet.as_ref()
    }

    /// Forgets the watch history: resuming watches get 410 Gone and must relist.
    pub fn compact_history(&self) {
        self.cluster.store.compact();
    }

    /// The cluster's current resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.cluster.store.current_rv()
    }

    /// Open watch streams.
    pub fn open_watches(&self) -> usize {
        self.cluster.open_watches()
    }

    /// Waits (event-driven) until at least `n` watch streams are open; false on timeout.
    pub async fn wait_for_watches(&self, n: usize, timeout: Duration) -> bool {
        self.wait_for_open_watches(|open| open >= n, timeout).await
    }

    /// Waits (event-driven) until the number of open watch streams satisfies `cond`; false on
    /// timeout. `|n| n == 0` after `faults().drop_watches()` waits for the drop to take effect.
    pub async fn wait_for_open_watches(&self, cond: impl Fn(usize) -> bool, timeout: Duration) -> bool {
        let mut rx = self.cluster.watch_count_changes();
        tokio::time::timeout(timeout, async {
            while !cond(self.cluster.open_watches()) {
                if rx.changed().await.is_err() {
                    return false;
                }
            }
            true
        })
        .await
        .unwrap_or(false)
    }

    /// Creates an object, or replaces it when it exists, as the administrator (admission runs).
    pub async fn apply(&self, obj: Value) -> Result<Value, Error> {
        let tm: TypeMeta = serde_json::from_value(obj.clone()).map_err(|e| Error::Manifest(e.to_string()))?;
        let (group, version) = tm.api_version.rsplit_once('/').unwrap_or(("", tm.api_version.as_str()));
        let def = self
            .cluster
            .registry()
            .all()
            .find(|d| d.group == group && d.kind == tm.kind && d.serves(version))
            .cloned()
            .ok_or_else(|| Error::Manifest(format!("{} {} is not served", tm.api_version, tm.kind)))?;
        let ns = match meta::namespace(&obj) {
            "" => "default",
            ns => ns,
        };
        let name = meta::name(&obj).to_string();
        let mut ctx = Ctx::new(User::admin());
        let collection = Target::new(def.clone(), version, ns, "");
        match api::create(&self.cluster, &mut ctx, &collection, obj.clone()).await {
            Err(e) if e.code == 409 && e.reason() == "AlreadyExists" => {}
            other => return other.map_err(Error::Api),
        }
        let target = Target::new(def, version, ns, &name);
        for _ in 0..8 {
            let current = api::get(&self.cluster, &target).map_err(Error::Api)?;
            let mut body = obj.clone();
            meta::set_meta(&mut body, "resourceVersion", json!(meta::meta_str(&current, "resourceVersion")));
            match api::update(&self.cluster, &mut ctx, &target, body).await {
                Err(e) if e.code == 409 => continue,
                other => return other.map_err(Error::Api),
            }
        }
        Err(Error::Api(ApiError::conflict(&target.def.group, &target.def.resource, &name)))
    }

    /// Applies every document of a (multi-document) YAML or JSON manifest, in order.
    pub async fn apply_yaml(&self, yaml: &str) -> Result<Vec<Value>, Error> {
        let mut out = Vec::new();
        for doc in parse_manifests(yaml)? {
            out.push(self.apply(doc).await?);
        }
        Ok(out)
    }

    /// Applies a manifest file, or every `.yaml`/`.yml`/`.json` file of a directory in name
    /// order (`deploy/crds/`).
    pub async fn apply_path(&self, path: impl AsRef<Path>) -> Result<Vec<Value>, Error> {
        let mut out = Vec::new();
        for file in manifest_files(path.as_ref())? {
            let text = std::fs::read_to_string(&file)
                .map_err(|source| Error::Io { path: file.display().to_string(), source })?;
            out.extend(self.apply_yaml(&text).await?);
        }
        Ok(out)
    }

    /// [`register_webhooks`](Self::register_webhooks) for a file, or every manifest of a
    /// directory (`webhook-config/`).
    pub async fn register_webhooks_from_path(
        &self,
        path: impl AsRef<Path>,
        ca_bundle_pem: &[u8],
    ) -> Result<Vec<Value>, Error> {
        let mut out = Vec::new();
        for file in manifest_files(path.as_ref())? {
            let text = std::fs::read_to_string(&file)
                .map_err(|source| Error::Io { path: file.display().to_string(), source })?;
            out.extend(self.register_webhooks(&text, ca_bundle_pem).await?);
        }
        Ok(out)
    }

    /// Applies Mutating/ValidatingWebhookConfigurations from a manifest with `ca_bundle_pem`
    /// injected into every webhook's `clientConfig.caBundle`.
    pub async fn register_webhooks(&self, yaml: &str, ca_bundle_pem: &[u8]) -> Result<Vec<Value>, Error> {
        let mut out = Vec::new();
        for mut doc in parse_manifests(yaml)? {
            inject_ca_bundle(&mut doc, ca_bundle_pem);
            out.push(self.apply(doc).await?);
        }
        Ok(out)
    }
}

/// Splits a manifest into its non-empty documents.
pub fn parse_manifests(text: &str) -> Result<Vec<Value>, Error> {
    let mut docs = Vec::new();
    for de in serde_yaml_ng::Deserializer::from_str(text) {
        let v = Value::deserialize(de).map_err(Error::Yaml)?;
        match v {
            Value::Null => {}
            Value::Object(_) if v.get("kind").and_then(Value::as_str) == Some("List") => {
                docs.extend(v.get("items").and_then(Value::as_array).cloned().unwrap_or_default());
            }
            other => docs.push(other),
        }
    }
    Ok(docs)
}

fn manifest_files(path: &Path) -> Result<Vec<std::path::PathBuf>, Error> {
    let io = |source| Error::Io { path: path.display().to_string(), source };
    if !path.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<_> = std::fs::read_dir(path)
        .map_err(io)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml" || e == "json"))
        .collect();
    files.sort();
    Ok(files)
}

/// Sets `clientConfig.caBundle` of every webhook in a webhook configuration object.
pub fn inject_ca_bundle(config: &mut Value, ca_bundle_pem: &[u8]) {
    let b64 = base64::engine::general_purpose::STANDARD.encode(ca_bundle_pem);
    if let Some(hooks) = config.get_mut("webhooks").and_then(Value::as_array_mut) {
        for h in hooks {
            if let Some(cc) = h.get_mut("clientConfig").and_then(Value::as_object_mut) {
                cc.insert("caBundle".into(), json!(b64));
            }
        }
    }
}
