//! The shared state behind one test cluster: storage, the resource catalogue, the admission
//! machinery, fault knobs, watch bookkeeping and the shutdown signal. The HTTP front end, the
//! garbage collector and the simulated kubelet all act on the cluster through `api`.

use crate::admission::Admission;
use crate::faults::Faults;
use crate::resources::{Registry, ResourceDef};
use crate::store::{ObjKey, Store};
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::watch;

/// Who makes a request: the name and groups sent to webhooks as `userInfo`.
#[derive(Debug, Clone, PartialEq)]
pub struct User {
    /// `userInfo.username`.
    pub username: String,
    /// `userInfo.groups`.
    pub groups: Vec<String>,
}

impl User {
    /// The cluster administrator (what the kubeconfig authenticates as).
    pub fn admin() -> Self {
        Self::named("kubernetes-admin", &["system:masters", "system:authenticated"])
    }

    /// A user with the given name and groups.
    pub fn named(name: &str, groups: &[&str]) -> Self {
        Self { username: name.into(), groups: groups.iter().map(|g| g.to_string()).collect() }
    }
}

/// Per-request context: who asks, whether it is a dry run, and the warnings to return.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The requesting user.
    pub user: User,
    /// `dryRun=All`: run everything, store nothing.
    pub dry_run: bool,
    /// Warnings collected from admission webhooks.
    pub warnings: Vec<String>,
}

impl Ctx {
    /// A context for `user`.
    pub fn new(user: User) -> Self {
        Self { user, dry_run: false, warnings: Vec::new() }
    }
}

/// Tunables fixed at start.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// How many events the store keeps for watch resumption.
    pub watch_history: usize,
    /// How often watches that asked for bookmarks receive one.
    pub bookmark_interval: Duration,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self { watch_history: 10_000, bookmark_interval: Duration::from_secs(1) }
    }
}

/// One cluster.
pub struct Cluster {
    /// Objects.
    pub store: Store,
    /// Served resources.
    pub registry: RwLock<Registry>,
    /// Webhook calling.
    pub admission: Admission,
    /// Fault injection knobs.
    pub faults: Arc<Faults>,
    /// Start-time tunables.
    pub config: ClusterConfig,
    /// Flips to `true` when the test environment shuts down.
    pub shutdown: watch::Receiver<bool>,
    open_watches: AtomicUsize,
    watch_changes: watch::Sender<usize>,
}

impl Cluster {
    /// A fresh cluster.
    pub fn new(config: ClusterConfig, shutdown: watch::Receiver<bool>) -> Self {
        Self {
            store: Store::new(config.watch_history),
            registry: RwLock::new(Registry::default()),
            admission: Admission::default(),
            faults: Arc::new(Faults::default()),
            config,
            shutdown,
            open_watches: AtomicUsize::new(0),
            watch_changes: watch::channel(0).0,
        }
    }

    /// The served resource at `group/version/resource`.
    pub fn lookup(&self, group: &str, version: &str, resource: &str) -> Option<Arc<ResourceDef>> {
        self.registry.read().unwrap_or_else(|e| e.into_inner()).lookup(group, version, resource)
    }

    /// The resource `group/resource` in any served version.
    pub fn by_group_resource(&self, group: &str, resource: &str) -> Option<Arc<ResourceDef>> {
        self.registry.read().unwrap_or_else(|e| e.into_inner()).by_group_resource(group, resource)
    }

    /// A copy of the catalogue.
    pub fn registry(&self) -> Registry {
        self.registry.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Rebuilds the CRD-defined resources from the stored CRDs.
    pub fn refresh_crds(&self) {
        let (crds, _) = self.store.list("apiextensions.k8s.io", "customresourcedefinitions", None);
        self.registry.write().unwrap_or_else(|e| e.into_inner()).set_crds(crds.iter().map(|c| c.as_ref()));
    }

    /// The Namespace object named `ns`, if it exists.
    pub fn namespace(&self, ns: &str) -> Option<Value> {
        self.store.get(&ObjKey::new("", "namespaces", "", ns)).map(|n| (*n).clone())
    }

    /// Counts a watch stream in or out and wakes waiters.
    pub fn watch_opened(&self, delta: isize) {
        let n = if delta >= 0 {
            self.open_watches.fetch_add(delta.unsigned_abs(), Ordering::SeqCst) + delta.unsigned_abs()
        } else {
            self.open_watches.fetch_sub(delta.unsigned_abs(), Ordering::SeqCst) - delta.unsigned_abs()
        };
        self.watch_changes.send_replace(n);
    }

    /// Open watch streams right now.
    pub fn open_watches(&self) -> usize {
        self.open_watches.load(Ordering::SeqCst)
    }

    /// A receiver that changes whenever the number of open watches does.
    pub fn watch_count_changes(&self) -> watch::Receiver<usize> {
        self.watch_changes.subscribe()
    }
}
