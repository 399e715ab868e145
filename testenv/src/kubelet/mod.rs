//! The simulated kubelet: a client of the real API server (like kwok, with what OpenKruise
//! needs). It registers N Nodes and keeps their Leases and Ready condition fresh
//! ([`nodes`]), runs the pods the scheduler binds to them ([`pods`], with the container runtime
//! of [`runtime`]), and provisions PersistentVolumes for claims of its StorageClass
//! ([`volumes`]). Each node has a container runtime with a CRI socket ([`cri`]) whose images are
//! the node's `status.images` and the imageIDs its pods report.
//!
//! Settings apply cluster-wide ([`Kubelet::set_defaults`]) or to one namespace
//! ([`Kubelet::configure_namespace`]), so tests running in parallel do not disturb each other; the
//! pod annotation [`READY_DELAY_ANNOTATION`] overrides the ready delay of one pod.

pub mod cri;
pub mod exits;
pub mod nodes;
pub mod pods;
pub mod restart;
pub mod runtime;
pub mod volumes;

use kruise_cri::fake::FakeRuntime;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;

/// The annotation overriding the ready delay of one pod, in milliseconds.
pub const READY_DELAY_ANNOTATION: &str = "testenv.kruise.io/ready-delay-ms";

/// The StorageClass the simulated provisioner serves (the cluster's default class).
pub const STORAGE_CLASS: &str = "standard";

/// The provisioner name of [`STORAGE_CLASS`].
pub const PROVISIONER: &str = "testenv.kruise.io/simulated";

/// How the kubelet treats the pods of a namespace.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeletSettings {
    /// Time from a container's start to its readiness.
    pub ready_delay: Duration,
    /// Caps every pod's termination grace period (`None` honours it fully).
    pub max_grace_period: Option<Duration>,
    /// Images whose reference contains one of these fail to pull (`ErrImagePull`, then
    /// `ImagePullBackOff`).
    pub pull_failures: Vec<String>,
}

impl Default for KubeletSettings {
    fn default() -> Self {
        Self {
            ready_delay: Duration::ZERO,
            max_grace_period: Some(Duration::from_secs(2)),
            pull_failures: vec!["does-not-exist".into()],
        }
    }
}

/// Counters of what the kubelet did, for tests and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KubeletStats {
    /// Pod status writes.
    pub status_writes: u64,
    /// Containers restarted in place (image changes).
    pub restarts: u64,
    /// Pods deleted after their grace period.
    pub deletions: u64,
    /// PersistentVolumes provisioned.
    pub provisioned: u64,
}

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) status_writes: AtomicU64,
    pub(crate) restarts: AtomicU64,
    pub(crate) deletions: AtomicU64,
    pub(crate) provisioned: AtomicU64,
}

pub(crate) struct Shared {
    defaults: Mutex<KubeletSettings>,
    namespaces: Mutex<HashMap<String, KubeletSettings>>,
    pub(crate) changed: Notify,
    pub(crate) counters: Counters,
}

/// A handle on the running kubelet.
#[derive(Clone)]
pub struct Kubelet {
    shared: Arc<Shared>,
    nodes: Arc<Vec<nodes::NodeInfo>>,
    cri: Arc<cri::NodeRuntimes>,
}

impl Kubelet {
    /// Registers `node_count` nodes and starts the kubelet's tasks on the current runtime; the
    /// nodes' CRI sockets go to a temp dir of their own.
    pub async fn start(client: kube::Client, node_count: usize) -> Result<Self, crate::Error> {
        Self::start_with_cri_dir(client, node_count, None).await
    }

    /// [`Self::start`] with the nodes' CRI sockets in `cri_dir` (`<node>.sock`).
    pub async fn start_with_cri_dir(
        client: kube::Client,
        node_count: usize,
        cri_dir: Option<&Path>,
    ) -> Result<Self, crate::Error> {
        let shared = Arc::new(Shared {
            defaults: Mutex::new(KubeletSettings::default()),
            namespaces: Mutex::new(HashMap::new()),
            changed: Notify::new(),
            counters: Counters::default(),
        });
        let nodes = Arc::new(nodes::register(&client, node_count).await?);
        let cri = Arc::new(cri::NodeRuntimes::start(client.clone(), &nodes, cri_dir).await?);
        tokio::spawn(nodes::heartbeat(client.clone(), nodes.clone()));
        volumes::ensure_storage_class(&client).await?;
        tokio::spawn(volumes::provision(client.clone(), shared.clone()));
        let kubelet = Self { shared, nodes, cri };
        tokio::spawn(pods::run(client, kubelet.clone()));
        Ok(kubelet)
    }

    /// Adds simulated node `name` to the running cluster, with a kubelet of its own (its pods,
    /// heartbeat and CRI socket in `cri_dir`) beside the cluster's: the node gets the simulated
    /// labels plus `labels` and `taints` (Node taint objects). `index` picks its pod CIDR
    /// (`10.244.<index>.0/24`) and must differ from every other node's (the cluster's nodes use
    /// 0..N; take 100 and up). A taint only the test's workloads tolerate keeps tests sharing the
    /// cluster from placing pods there. [`AddedNode::remove`] deletes it again.
    pub async fn add_node(
        client: kube::Client,
        name: &str,
        index: usize,
        labels: &std::collections::BTreeMap<String, String>,
        taints: &[serde_json::Value],
        cri_dir: Option<&Path>,
    ) -> Result<AddedNode, crate::Error> {
        let shared = Arc::new(Shared {
            defaults: Mutex::new(KubeletSettings::default()),
            namespaces: Mutex::new(HashMap::new()),
            changed: Notify::new(),
            counters: Counters::default(),
        });
        let info = nodes::register_extra(&client, name, index, labels, taints).await?;
        let nodes = Arc::new(vec![info]);
        let cri = Arc::new(cri::NodeRuntimes::start(client.clone(), &nodes, cri_dir).await?);
        let heartbeat = tokio::spawn(nodes::heartbeat(client.clone(), nodes.clone()));
        let kubelet = Self { shared, nodes, cri };
        let pods = tokio::spawn(pods::run(client.clone(), kubelet.clone()));
        nodes::wait_schedulable(&client, kubelet.node_infos(), Duration::from_secs(60)).await?;
        Ok(AddedNode { client, kubelet, tasks: vec![heartbeat, pods] })
    }

    /// The node names.
    pub fn nodes(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.name.clone()).collect()
    }

    pub(crate) fn node_infos(&self) -> &[nodes::NodeInfo] {
        &self.nodes
    }

    /// The CRI endpoint (a unix socket path) of node `node`.
    pub fn cri_socket(&self, node: &str) -> Option<PathBuf> {
        self.cri.get(node).map(|n| n.socket.clone())
    }

    /// The container runtime of node `node`, to script pulls and inspect its images.
    pub fn cri(&self, node: &str) -> Option<FakeRuntime> {
        self.cri.get(node).map(|n| n.runtime.clone())
    }

    /// The directory of the nodes' CRI sockets.
    pub fn cri_dir(&self) -> &Path {
        self.cri.dir()
    }

    pub(crate) fn runtimes(&self) -> cri::Runtimes {
        cri::Runtimes(Arc::new(self.cri.all().to_vec()))
    }

    /// The settings of namespaces without their own.
    pub fn defaults(&self) -> KubeletSettings {
        lock(&self.shared.defaults).clone()
    }

    /// Changes the settings of namespaces without their own (takes effect for running pods now).
    pub fn set_defaults(&self, settings: KubeletSettings) {
        *lock(&self.shared.defaults) = settings;
        self.shared.changed.notify_one();
    }

    /// Gives the pods of `namespace` their own settings.
    pub fn configure_namespace(&self, namespace: &str, settings: KubeletSettings) {
        lock(&self.shared.namespaces).insert(namespace.to_string(), settings);
        self.shared.changed.notify_one();
    }

    /// Drops the settings of `namespace`.
    pub fn forget_namespace(&self, namespace: &str) {
        lock(&self.shared.namespaces).remove(namespace);
    }

    /// The settings for pods of `namespace`.
    pub fn settings_for(&self, namespace: &str) -> KubeletSettings {
        lock(&self.shared.namespaces).get(namespace).cloned().unwrap_or_else(|| self.defaults())
    }

    /// What the kubelet has done so far.
    pub fn stats(&self) -> KubeletStats {
        let c = &self.shared.counters;
        KubeletStats {
            status_writes: c.status_writes.load(Ordering::Relaxed),
            restarts: c.restarts.load(Ordering::Relaxed),
            deletions: c.deletions.load(Ordering::Relaxed),
            provisioned: c.provisioned.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.shared.counters
    }
}

/// A node added by [`Kubelet::add_node`]; its kubelet runs until [`AddedNode::remove`] or the
/// drop of the handle (the Node object stays then).
pub struct AddedNode {
    client: kube::Client,
    kubelet: Kubelet,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl AddedNode {
    /// The node's name.
    pub fn name(&self) -> &str {
        &self.kubelet.node_infos()[0].name
    }

    /// Its kubelet (settings, CRI runtime).
    pub fn kubelet(&self) -> &Kubelet {
        &self.kubelet
    }

    /// Stops its kubelet and deletes the Node object and its Lease. The pods bound to it stay, as
    /// on a real cluster until its pod garbage collector deletes them: the test control plane runs
    /// none, [`nodes::collect_orphans`] does what it does.
    pub async fn remove(mut self) -> Result<(), crate::Error> {
        self.stop();
        let name = self.name().to_string();
        let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(self.client.clone());
        match nodes.delete(&name, &Default::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
        let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
            kube::Api::namespaced(self.client.clone(), "kube-node-lease");
        match leases.delete(&name, &Default::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    fn stop(&mut self) {
        for t in self.tasks.drain(..) {
            t.abort();
        }
    }
}

impl Drop for AddedNode {
    fn drop(&mut self) {
        self.stop();
    }
}

pub(crate) fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
