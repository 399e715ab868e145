//! What the workload end-to-end tests share: a [`Scenario`] (a namespace, the CloneSet and
//! Advanced StatefulSet reconcilers running in-process and scoped to it, optionally behind a fault proxy), waits that poll the API server
//! with a deadline, and a [`History`] of every pod state a watcher saw, for assertions about
//! moments (never more than N pods, never more than M unready) and order (its [`History::log`])
//! rather than end states only. A scenario's feature gates are written as for `kruise serve
//! --feature-gates` ([`Scenario::start_with_gates`]).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kruise::apis::cloneset::{CloneSet, CloneSetStatus};
use kruise::controller::Settings;
use kruise::core::features::FeatureGates;
use kruise::metrics::Metrics;
use kruise_testenv::{FaultProxy, TestCluster, TestNamespace};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};

/// How long a scenario waits for a condition.
pub const DEADLINE: Duration = Duration::from_secs(120);

pub fn cluster() -> &'static TestCluster {
    TestCluster::shared().unwrap_or_else(|e| panic!("the test cluster did not start: {e}"))
}

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Applies deploy/'s CRDs once per test binary and waits until CloneSets can be listed.
pub async fn crds() {
    static DONE: tokio::sync::OnceCell<()> = tokio::sync::OnceCell::const_new();
    DONE.get_or_init(|| async {
        let c = cluster();
        c.apply_path(root().join("deploy/crds")).await.unwrap();
        let api: Api<CloneSet> = Api::all(c.client().await.unwrap());
        poll("the CloneSet CRD to be served", || async { api.list(&ListParams::default().limit(1)).await.ok() }).await;
    })
    .await;
}

/// Polls `check` until it returns `Some`, or panics with `what` after [`DEADLINE`].
pub async fn poll<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    kruise_testenv::eventually(what, DEADLINE, check).await
}

/// A CloneSet spec as the mutating webhook leaves it: `replicas` pods of one container `main`
/// with label `app=web`, the update strategy's defaults overridden by `strategy`.
pub fn spec(replicas: i32, image: &str, strategy: Value) -> Value {
    let mut us = json!({"type": "ReCreate", "partition": 0, "maxUnavailable": "20%", "maxSurge": 0,
        "inPlaceUpdateStrategy": {}});
    if let (Value::Object(base), Value::Object(extra)) = (&mut us, strategy) {
        base.extend(extra);
    }
    json!({
        "replicas": replicas,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "main", "image": image}]}
        },
        "updateStrategy": us,
        "scaleStrategy": {},
        "revisionHistoryLimit": 10,
    })
}

pub fn label(p: &Pod, key: &str) -> String {
    p.metadata.labels.as_ref().and_then(|l| l.get(key)).cloned().unwrap_or_default()
}

pub fn uid(cs: &CloneSet) -> &str {
    cs.metadata.uid.as_deref().unwrap_or("")
}

pub fn node(p: &Pod) -> Option<String> {
    p.spec.as_ref().and_then(|s| s.node_name.clone())
}

pub fn condition(p: &Pod, t: &str) -> Option<String> {
    p.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == t).map(|c| c.status.clone())
}

pub fn is_ready(p: &Pod) -> bool {
    condition(p, "Ready").as_deref() == Some("True")
}

pub fn all_ready(pods: &[Pod]) -> bool {
    pods.iter().all(is_ready)
}

pub fn restarts(p: &Pod) -> i32 {
    p.status.as_ref().and_then(|s| s.container_statuses.as_ref()).map_or(0, |c| c.iter().map(|c| c.restart_count).sum())
}

/// The image the kubelet reports for container `main` (normalised, e.g. `docker.io/library/nginx:1.26`).
fn running_image(p: &Pod) -> String {
    p.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.iter().find(|c| c.name == "main"))
        .map(|c| c.image.clone())
        .unwrap_or_default()
}

fn spec_image(p: &Pod) -> String {
    p.spec.as_ref().and_then(|s| s.containers.first()).and_then(|c| c.image.clone()).unwrap_or_default()
}

/// What the watcher saw happen to a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PodEventKind {
    /// The first state seen of a uid (created, or listed when the watch started).
    Added,
    /// A later state of it (a new resourceVersion).
    Modified,
    /// Its deletion.
    Deleted,
}

/// One pod state, in the order the watcher saw them.
#[derive(Clone, Debug)]
pub struct PodEvent {
    pub kind: PodEventKind,
    pub pod: Pod,
}

impl PodEvent {
    pub fn name(&self) -> &str {
        self.pod.metadata.name.as_deref().unwrap_or("")
    }

    pub fn uid(&self) -> &str {
        self.pod.metadata.uid.as_deref().unwrap_or("")
    }

    /// The image of the first container in the spec.
    pub fn image(&self) -> String {
        spec_image(&self.pod)
    }

    pub fn terminating(&self) -> bool {
        self.pod.metadata.deletion_timestamp.is_some()
    }
}

#[derive(Default)]
struct Seen {
    /// Every new pod state, in order (a re-listing after a cut watch adds nothing new).
    log: Vec<PodEvent>,
    /// uid → latest state.
    pods: BTreeMap<String, Pod>,
    /// uid → name, of every pod ever seen.
    ever: BTreeMap<String, String>,
    max_live: usize,
    max_unready_since_mark: usize,
    /// Pods seen with a new image in the spec, not yet running it, and InPlaceUpdateReady True.
    violations: Vec<String>,
    watch_new_image: Option<String>,
}

/// Every pod state a watcher of the namespace saw (admin client, not behind any fault proxy).
#[derive(Clone)]
pub struct History {
    seen: Arc<Mutex<Seen>>,
    client: kube::Client,
    ns: String,
}

impl History {
    fn lock(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn record(&self, p: Pod, deleted: bool) {
        let mut s = self.lock();
        let uid = p.metadata.uid.clone().unwrap_or_default();
        let kind = match s.pods.get(&uid) {
            Some(_) if deleted => Some(PodEventKind::Deleted),
            Some(old) if old.metadata.resource_version == p.metadata.resource_version => None,
            Some(_) => Some(PodEventKind::Modified),
            None if deleted || s.ever.contains_key(&uid) => None,
            None => Some(PodEventKind::Added),
        };
        if let Some(kind) = kind {
            s.log.push(PodEvent { kind, pod: p.clone() });
        }
        s.ever.insert(uid.clone(), p.metadata.name.clone().unwrap_or_default());
        if let Some(new) = s.watch_new_image.clone()
            && spec_image(&p) == new
            && !running_image(&p).ends_with(&new)
            && condition(&p, "InPlaceUpdateReady").as_deref() == Some("True")
        {
            s.violations.push(format!(
                "{} (rv {:?}): image {new} in the spec with InPlaceUpdateReady True",
                p.metadata.name.clone().unwrap_or_default(),
                p.metadata.resource_version
            ));
        }
        if deleted {
            s.pods.remove(&uid);
        } else {
            s.pods.insert(uid, p);
        }
        let live: Vec<&Pod> = s.pods.values().filter(|p| p.metadata.deletion_timestamp.is_none()).collect();
        let (n, unready) = (live.len(), live.iter().filter(|p| !is_ready(p)).count());
        s.max_live = s.max_live.max(n);
        s.max_unready_since_mark = s.max_unready_since_mark.max(unready);
    }

    /// Waits until the watcher sees every live pod ready, then starts counting unready pods (so
    /// the pods' first start does not count).
    pub async fn mark(&self) {
        self.catch_up().await;
        poll("the history watcher to see every pod ready", || async {
            let mut s = self.lock();
            let unready = s.pods.values().filter(|p| p.metadata.deletion_timestamp.is_none() && !is_ready(p)).count();
            (unready == 0).then(|| s.max_unready_since_mark = 0)
        })
        .await;
    }

    /// The most live pods seen unready at one moment since [`Self::mark`].
    pub async fn max_unready(&self) -> usize {
        self.catch_up().await;
        self.lock().max_unready_since_mark
    }

    /// Watches for pods whose spec shows `image` before their InPlaceUpdateReady turned False.
    pub fn watch_image(&self, image: &str) {
        self.lock().watch_new_image = Some(image.to_string());
    }

    /// Waits until the watcher has seen every pod the API server lists now.
    async fn catch_up(&self) {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), &self.ns);
        let listed: Vec<String> =
            api.list(&ListParams::default()).await.unwrap().items.into_iter().filter_map(|p| p.metadata.uid).collect();
        poll("the history watcher to catch up", || async {
            let s = self.lock();
            listed.iter().all(|u| s.ever.contains_key(u)).then_some(())
        })
        .await;
    }

    /// How many distinct pods were ever created.
    pub async fn created(&self) -> usize {
        self.catch_up().await;
        self.lock().ever.len()
    }

    /// Every pod state the watcher saw, in order (after catching up with the API server).
    pub async fn log(&self) -> Vec<PodEvent> {
        self.catch_up().await;
        self.lock().log.clone()
    }

    /// How many pod states the watcher has seen so far (an index into [`Self::log`]).
    pub fn seen(&self) -> usize {
        self.lock().log.len()
    }

    /// The pods the watcher sees now, not being deleted: name → (uid, resourceVersion).
    pub fn versions(&self) -> BTreeMap<String, (String, String)> {
        self.lock()
            .pods
            .values()
            .filter(|p| p.metadata.deletion_timestamp.is_none())
            .map(|p| {
                let m = &p.metadata;
                (
                    m.name.clone().unwrap_or_default(),
                    (m.uid.clone().unwrap_or_default(), m.resource_version.clone().unwrap_or_default()),
                )
            })
            .collect()
    }

    /// The names of every pod ever created.
    pub fn names(&self) -> Vec<String> {
        self.lock().ever.values().cloned().collect()
    }

    pub async fn assert_never_more_live_than(&self, n: usize) {
        self.catch_up().await;
        let max = self.lock().max_live;
        assert!(max <= n, "at one moment {max} pods were live, more than {n}");
    }

    pub async fn assert_at_most_unready(&self, n: usize) {
        self.catch_up().await;
        let max = self.lock().max_unready_since_mark;
        assert!(max <= n, "at one moment {max} pods were unready, more than {n}");
    }

    pub fn assert_image_patched_only_when_not_ready(&self) {
        let v = self.lock().violations.clone();
        assert!(v.is_empty(), "InPlaceUpdateReady must be False before the image is patched: {v:#?}");
    }
}

/// The reconciler running in this test's runtime; stopped (gracefully) on [`Running::stop`] or drop.
struct Running {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    fn start(client: kube::Client, ns: &str, metrics: Metrics, gates: FeatureGates) -> Running {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let settings = Settings { namespace: Some(ns.to_string()), gates, ..Settings::default() };
        let task = tokio::spawn(kruise::controller::run_workloads(client, settings, metrics, async move {
            let _ = rx.await;
        }));
        Running { stop: Some(tx), task }
    }

    async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        let task = std::mem::replace(&mut self.task, tokio::spawn(async {}));
        tokio::time::timeout(Duration::from_secs(30), task).await.expect("the reconciler stops").unwrap();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One test's world.
pub struct Scenario {
    pub ns: TestNamespace,
    /// Admin client, straight to the API server.
    pub client: kube::Client,
    /// The fault proxy the reconciler talks through, if any.
    pub proxy: Option<FaultProxy>,
    reconciler_client: kube::Client,
    reconciler: Mutex<Option<Running>>,
    pub history: History,
    /// The reconciler's metrics.
    pub metrics: Metrics,
    /// The reconciler's feature gates.
    gates: FeatureGates,
    watcher: tokio::task::JoinHandle<()>,
    dir: tempfile::TempDir,
}

impl Drop for Scenario {
    fn drop(&mut self) {
        self.watcher.abort();
    }
}

impl Scenario {
    /// A namespace with the reconciler on an admin client.
    pub async fn start(prefix: &str) -> Scenario {
        Self::start_with(prefix, false, FeatureGates::default()).await
    }

    /// A namespace with the reconciler on an admin client and the feature gates `gates`, written
    /// as for `kruise serve --feature-gates` (e.g. `StatefulSetStartOrdinal=true`).
    pub async fn start_with_gates(prefix: &str, gates: &str) -> Scenario {
        let gates = FeatureGates::parse(gates).unwrap_or_else(|e| panic!("--feature-gates={gates}: {e}"));
        Self::start_with(prefix, false, gates).await
    }

    /// A namespace with the reconciler talking through a fault proxy.
    pub async fn start_behind_fault_proxy(prefix: &str) -> Scenario {
        Self::start_with(prefix, true, FeatureGates::default()).await
    }

    async fn start_with(prefix: &str, proxied: bool, gates: FeatureGates) -> Scenario {
        crds().await;
        let c = cluster();
        let ns = c.namespace(prefix).await.unwrap();
        let client = c.client().await.unwrap();
        let proxy = if proxied { Some(c.fault_proxy().await.unwrap()) } else { None };
        let reconciler_client = match &proxy {
            Some(p) => p.client().await.unwrap(),
            None => client.clone(),
        };
        let history = History { seen: Arc::default(), client: client.clone(), ns: ns.name().to_string() };
        let h = history.clone();
        let api: Api<Pod> = Api::namespaced(client.clone(), ns.name());
        let watcher = tokio::spawn(async move {
            let mut events = std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
            while let Some(ev) = events.next().await {
                match ev {
                    Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) => h.record(p, false),
                    Ok(watcher::Event::Delete(p)) => h.record(p, true),
                    _ => {}
                }
            }
        });
        let metrics = Metrics::new();
        let running = Running::start(reconciler_client.clone(), ns.name(), metrics.clone(), gates.clone());
        Scenario {
            ns,
            client,
            proxy,
            reconciler_client,
            reconciler: Mutex::new(Some(running)),
            history,
            metrics,
            gates,
            watcher,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn ns(&self) -> &str {
        self.ns.name()
    }

    fn api(&self) -> Api<CloneSet> {
        Api::namespaced(self.client.clone(), self.ns())
    }

    /// Stops the reconciler (reconciles in flight finish).
    pub async fn stop_reconciler(&self) {
        let running = self.reconciler.lock().unwrap().take();
        if let Some(r) = running {
            r.stop().await;
        }
    }

    /// Starts a fresh reconciler (new caches, no expectations).
    pub async fn start_reconciler(&self) {
        let mut slot = self.reconciler.lock().unwrap();
        assert!(slot.is_none(), "the reconciler runs already");
        *slot =
            Some(Running::start(self.reconciler_client.clone(), self.ns(), self.metrics.clone(), self.gates.clone()));
    }

    /// Creates CloneSet `name` with `spec`.
    pub async fn create(&self, name: &str, spec: Value) -> CloneSet {
        let cs: CloneSet = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": name}, "spec": spec,
        }))
        .unwrap();
        self.api().create(&PostParams::default(), &cs).await.unwrap()
    }

    pub async fn get(&self, name: &str) -> CloneSet {
        self.api().get(name).await.unwrap()
    }

    /// A JSON merge patch of the CloneSet's spec (lists are replaced whole).
    pub async fn patch_spec(&self, name: &str, spec: Value) {
        self.api().patch(name, &PatchParams::default(), &Patch::Merge(json!({"spec": spec}))).await.unwrap();
    }

    /// Waits until the status satisfies `check`.
    pub async fn wait_status(&self, name: &str, what: &str, check: impl Fn(&CloneSetStatus) -> bool) -> CloneSetStatus {
        let api = self.api();
        poll(what, || async {
            let cs = api.get(name).await.ok()?;
            cs.status.filter(|s| check(s))
        })
        .await
    }

    pub async fn eventually_cs<T>(&self, what: &str, check: impl Fn(&CloneSet) -> Option<T>) -> T {
        let api = self.api();
        poll(what, || async { api.get("web").await.ok().and_then(|cs| check(&cs)) }).await
    }

    /// Pods of the namespace not being deleted, by name.
    pub async fn pods(&self) -> Vec<Pod> {
        let mut pods: Vec<Pod> =
            self.all_pods().await.into_iter().filter(|p| p.metadata.deletion_timestamp.is_none()).collect();
        pods.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        pods
    }

    async fn all_pods(&self) -> Vec<Pod> {
        let api: Api<Pod> = Api::namespaced(self.client.clone(), self.ns());
        api.list(&ListParams::default()).await.unwrap().items
    }

    /// The PVCs of the namespace not being deleted: name → uid.
    pub async fn claims(&self) -> BTreeMap<String, String> {
        let api: Api<PersistentVolumeClaim> = Api::namespaced(self.client.clone(), self.ns());
        api.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|c| c.metadata.deletion_timestamp.is_none())
            .map(|c| (c.metadata.name.unwrap_or_default(), c.metadata.uid.unwrap_or_default()))
            .collect()
    }

    /// The Events recorded on CloneSet `name` with `reason`: their notes, and how many times they
    /// were observed in all (kube's recorder folds repeats of one reason into an event series).
    pub async fn events(&self, name: &str, reason: &str) -> (BTreeSet<String>, i32) {
        let api: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(self.client.clone(), self.ns());
        let events: Vec<_> = api
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
            .filter(|e| e.reason.as_deref() == Some(reason))
            .collect();
        let count = events.iter().map(|e| e.series.as_ref().map_or(1, |s| s.count)).sum();
        (events.into_iter().filter_map(|e| e.note).collect(), count)
    }

    /// Waits until the live pods satisfy `check`.
    pub async fn eventually<T>(&self, what: &str, check: impl Fn(&[Pod]) -> Option<T>) -> T {
        poll(what, || async { check(&self.pods().await) }).await
    }

    /// Waits until every pod, being deleted or not, satisfies `check`.
    pub async fn eventually_all<T>(&self, what: &str, check: impl Fn(&[Pod]) -> Option<T>) -> T {
        poll(what, || async { check(&self.all_pods().await) }).await
    }

    /// `kubectl get cloneset,pods,controllerrevisions,pvc -o yaml` of the namespace, saved to a file.
    pub async fn kubectl_snapshot(&self) -> PathBuf {
        let out = tokio::process::Command::new("kubectl")
            .args([
                "get",
                "clonesets.v1alpha1.apps.kruise.io,pods,controllerrevisions,pvc",
                "-n",
                self.ns(),
                "-o",
                "yaml",
            ])
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .env("KUBECONFIG", cluster().kubeconfig())
            .env("HOME", self.dir.path())
            .kill_on_drop(true)
            .output()
            .await
            .expect("kubectl runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let path = self.dir.path().join("snapshot.yaml");
        std::fs::write(&path, &out.stdout).unwrap();
        path
    }
}

/// `kruise plan -f FILE -o json`: the pods of the actions of `kind`.
pub fn kruise_plan(file: &Path, kind: &str) -> BTreeSet<String> {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kruise"));
    command.args(["plan", "-o", "json", "-f"]).arg(file);
    plan_actions(command, kind)
}

/// `kruise plan cloneset NAME -n NS -o json` on the test cluster: the pods of the actions of `kind`.
pub fn kruise_plan_live(ns: &str, name: &str, kind: &str) -> BTreeSet<String> {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_kruise"));
    command.args(["plan", "cloneset", name, "-n", ns, "-o", "json"]).env("KUBECONFIG", cluster().kubeconfig());
    plan_actions(command, kind)
}

fn plan_actions(mut command: std::process::Command, kind: &str) -> BTreeSet<String> {
    let out = command.output().unwrap();
    assert!(out.status.success(), "kruise plan: {}", String::from_utf8_lossy(&out.stderr));
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    plan["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["action"] == kind)
        .map(|a| a["pod"].as_str().unwrap().to_string())
        .collect()
}
