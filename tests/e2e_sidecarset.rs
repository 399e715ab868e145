//! The SidecarSet controller end to end (spec §4.12, issue 28) on the real control plane of
//! `testenv/`: `kruise serve` as a user runs it (pod webhook registered from `webhook-config/`,
//! the controllers under leader election), talking to the apiserver through the fault proxy so a
//! scenario can inject 409s and cut or delay its watches. A watcher records every pod state it
//! sees, so the assertions hold for every observed moment, not only the end state:
//! - a cold upgrade of a log agent with `partition: 2`, `maxUnavailable: 1` upgrades exactly 4 of
//!   6 pods in place (same uids, the sidecar's restartCount + 1, the app container untouched), with
//!   never more than one pod whose sidecar is unready or not yet running its new image;
//! - a change of the sidecar's env marks the pods not upgradable (pod condition and Event) and
//!   leaves them alone;
//! - a hot-upgrade set swaps `-1`/`-2` and ends with the old container on the empty image;
//! - a native sidecar (init container with `restartPolicy: Always`) is upgraded in place too;
//! - under 409s and cut and delayed watches, an upgrade still converges and no pod is ever seen
//!   with hash annotations that do not match its containers.
//!
//! One kruise serves the whole binary, so the scenarios run one after another in one test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use e2e_common::{Kruise, cluster, install, root};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ContainerStatus, Event, Pod};
use kruise::apis::SidecarSet;
use kruise_testenv::{Share, WriteFault};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher;
use serde_json::{Value, json};

const HASH: &str = "kruise.io/sidecarset-hash";

async fn poll<T, F, Fut>(what: &str, timeout: Duration, check: F) -> T
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn container_status<'a>(p: &'a Pod, name: &str) -> Option<&'a ContainerStatus> {
    p.status.as_ref()?.container_statuses.as_ref()?.iter().find(|c| c.name == name)
}

fn spec_image(p: &Pod, name: &str) -> Option<String> {
    p.spec.as_ref()?.containers.iter().find(|c| c.name == name)?.image.clone()
}

fn restarts(p: &Pod, name: &str) -> i32 {
    container_status(p, name).map_or(-1, |c| c.restart_count)
}

fn running_image(p: &Pod, name: &str) -> Option<String> {
    let s = container_status(p, name)?;
    s.state.as_ref()?.running.as_ref()?;
    Some(s.image.clone())
}

/// Whether the kubelet's `image` (normalized: `docker.io/library/busybox:1.36`) is `spec`'s.
fn same_image(status: &str, spec: &str) -> bool {
    status == spec || status.ends_with(&format!("/{spec}"))
}

/// The sidecar of `p` is unavailable: not ready, or its spec asks for an image it does not run yet.
fn sidecar_unavailable(p: &Pod, name: &str) -> bool {
    let ready = container_status(p, name).is_some_and(|c| c.ready);
    let current = match (running_image(p, name), spec_image(p, name)) {
        (Some(running), Some(spec)) => same_image(&running, &spec),
        _ => false,
    };
    !ready || !current
}

fn hash_entry(p: &Pod, set: &str) -> Option<String> {
    let text = p.metadata.annotations.as_ref()?.get(HASH)?;
    let v: Value = serde_json::from_str(text).ok()?;
    v.get(set)?.get("hash")?.as_str().map(str::to_string)
}

fn condition(p: &Pod, t: &str) -> Option<(String, String)> {
    let c = p.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == t)?;
    Some((c.status.clone(), c.reason.clone().unwrap_or_default()))
}

/// Every pod state a watch of one namespace delivered, and what was wrong at any moment.
#[derive(Clone, Default)]
struct History {
    inner: Arc<Mutex<Seen>>,
}

#[derive(Default)]
struct Seen {
    latest: BTreeMap<String, Pod>,
    max_unavailable: usize,
    /// (sidecar container, set, set hash of the new version, image of the new version): a pod whose
    /// hash entry says the new version while its spec runs another image is a torn update.
    watch_for: Option<(String, String, String, String)>,
    torn: Vec<String>,
    /// Sidecar container whose unavailability is counted.
    sidecar: String,
}

impl History {
    fn start(client: kube::Client, ns: &str, sidecar: &str) -> (History, tokio::task::JoinHandle<()>) {
        let h = History::default();
        h.inner.lock().unwrap().sidecar = sidecar.to_string();
        let api: Api<Pod> = Api::namespaced(client, ns);
        let h2 = h.clone();
        let task = tokio::spawn(async move {
            let mut events = std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
            while let Some(ev) = events.next().await {
                match ev {
                    Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) => h2.record(p, false),
                    Ok(watcher::Event::Delete(p)) => h2.record(p, true),
                    _ => {}
                }
            }
        });
        (h, task)
    }

    fn record(&self, p: Pod, deleted: bool) {
        let mut s = self.inner.lock().unwrap();
        let name = p.metadata.name.clone().unwrap();
        if let Some((container, set, hash, image)) = s.watch_for.clone()
            && hash_entry(&p, &set).as_deref() == Some(&hash)
            && spec_image(&p, &container).as_deref() != Some(&image)
        {
            s.torn.push(format!("{name}: hash {hash} with image {:?}", spec_image(&p, &container)));
        }
        if deleted {
            s.latest.remove(&name);
        } else {
            s.latest.insert(name, p);
        }
        let sidecar = s.sidecar.clone();
        let n = s.latest.values().filter(|p| sidecar_unavailable(p, &sidecar)).count();
        s.max_unavailable = s.max_unavailable.max(n);
    }

    /// Forget the maxima so far (call once everything is ready).
    fn mark(&self, watch_for: Option<(&str, &str, &str, &str)>) {
        let mut s = self.inner.lock().unwrap();
        s.max_unavailable = 0;
        s.torn.clear();
        s.watch_for = watch_for.map(|(a, b, c, d)| (a.into(), b.into(), c.into(), d.into()));
    }

    fn max_unavailable(&self) -> usize {
        self.inner.lock().unwrap().max_unavailable
    }

    fn torn(&self) -> Vec<String> {
        self.inner.lock().unwrap().torn.clone()
    }
}

struct World {
    client: kube::Client,
    proxy: kruise_testenv::FaultProxy,
    _kruise: Kruise,
    _certs: tempfile::TempDir,
}

async fn world() -> World {
    let c = cluster();
    let certs = tempfile::tempdir().unwrap();
    let proxy = c.fault_proxy().await.unwrap();
    // KRUISE_E2E_LOG (a KRUISE_LOG filter) shows the manager's log on the test's stderr.
    let log = std::env::var("KRUISE_E2E_LOG").unwrap_or_else(|_| "warn".into());
    let made = std::process::Command::new(env!("CARGO_BIN_EXE_kruise"))
        .args(["certs", "--out"])
        .arg(certs.path())
        .status()
        .unwrap();
    assert!(made.success());
    let kruise = Kruise::spawn(certs.path(), proxy.kubeconfig(), &[], &log);
    install(&[&kruise]).await;
    let client = c.client().await.unwrap();
    kruise_testenv::register_webhooks(&client, &root().join("webhook-config"), kruise.ca.as_ref().unwrap())
        .await
        .unwrap();
    World { client, proxy, _kruise: kruise, _certs: certs }
}

fn sidecarset(name: &str, ns: &str, app: &str, containers: Value, strategy: Value) -> SidecarSet {
    serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
        "metadata": {"name": name},
        "spec": {
            "namespace": ns,
            "selector": {"matchLabels": {"app": app}},
            "containers": containers,
            "updateStrategy": strategy,
        }
    }))
    .unwrap()
}

fn app_pod(name: &str, app: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"app": app}},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}]}
    }))
    .unwrap()
}

/// Creates the set, waits until the controller reports it (so the webhook's view holds it), then
/// creates `n` pods it injects into and waits until all are matched and ready.
async fn set_up(w: &World, ns: &str, set: &SidecarSet, app: &str, n: usize) -> Vec<Pod> {
    let sets: Api<SidecarSet> = Api::all(w.client.clone());
    let name = set.metadata.name.clone().unwrap();
    sets.create(&PostParams::default(), set).await.unwrap();
    poll("the controller to see the set", Duration::from_secs(60), || async {
        let s = sets.get(&name).await.ok()?;
        (s.status?.observed_generation == s.metadata.generation?).then_some(())
    })
    .await;
    let pods: Api<Pod> = Api::namespaced(w.client.clone(), ns);
    for i in 0..n {
        pods.create(&PostParams::default(), &app_pod(&format!("{app}-{i}"), app)).await.unwrap();
    }
    poll("every pod matched and ready", Duration::from_secs(120), || async {
        let s = sets.get(&name).await.ok()?.status?;
        (s.matched_pods == n as i32 && s.ready_pods == n as i32 && s.updated_pods == n as i32).then_some(())
    })
    .await;
    pods.list(&ListParams::default().labels(&format!("app={app}"))).await.unwrap().items
}

async fn patch_set(w: &World, name: &str, patch: Value) -> SidecarSet {
    let sets: Api<SidecarSet> = Api::all(w.client.clone());
    sets.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap()
}

fn set_hash(s: &SidecarSet) -> String {
    s.metadata.annotations.as_ref().unwrap()[HASH].clone()
}

/// Issue 28's headline case.
async fn cold_upgrade_within_partition_and_max_unavailable(w: &World) {
    let ns = cluster().namespace("e2e-sc-cold").await.unwrap();
    let (history, watch) = History::start(w.client.clone(), ns.name(), "log-agent");
    let set = sidecarset(
        "logs",
        ns.name(),
        "cold",
        json!([{"name": "log-agent", "image": "busybox:1.36"}]),
        json!({"type": "RollingUpdate", "partition": 2, "maxUnavailable": 1}),
    );
    let before = set_up(w, ns.name(), &set, "cold", 6).await;
    for p in &before {
        let names: Vec<&str> = p.spec.as_ref().unwrap().containers.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["log-agent", "app"], "injected before the app container");
    }
    let before: BTreeMap<String, Pod> = before.into_iter().map(|p| (p.metadata.name.clone().unwrap(), p)).collect();
    let sets: Api<SidecarSet> = Api::all(w.client.clone());
    let current = sets.get("logs").await.unwrap();
    let updated =
        patch_set(w, "logs", json!({"spec": {"containers": [{"name": "log-agent", "image": "busybox:1.37"}]}})).await;
    assert_ne!(set_hash(&updated), set_hash(&current));
    history.mark(Some(("log-agent", "logs", &set_hash(&updated), "busybox:1.37")));
    let status = poll("4 pods upgraded and ready", Duration::from_secs(120), || async {
        let s = sets.get("logs").await.ok()?.status?;
        (s.updated_pods == 4 && s.updated_ready_pods == 4 && s.ready_pods == 6).then_some(s)
    })
    .await;
    assert_eq!(status.matched_pods, 6);
    // The partition holds: nothing more happens.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let pods: Api<Pod> = Api::namespaced(w.client.clone(), ns.name());
    let after = pods.list(&ListParams::default().labels("app=cold")).await.unwrap().items;
    let mut upgraded = 0;
    for p in &after {
        let name = p.metadata.name.clone().unwrap();
        let old = &before[&name];
        assert_eq!(p.metadata.uid, old.metadata.uid, "{name} was updated in place, not recreated");
        assert_eq!(restarts(p, "app"), restarts(old, "app"), "{name}: the app container is untouched");
        assert_eq!(spec_image(p, "app").as_deref(), Some("nginx:1.25"));
        match spec_image(p, "log-agent").as_deref() {
            Some("busybox:1.37") => {
                upgraded += 1;
                assert_eq!(
                    restarts(p, "log-agent"),
                    restarts(old, "log-agent") + 1,
                    "{name}: the sidecar restarted once"
                );
                assert_eq!(hash_entry(p, "logs").as_deref(), Some(set_hash(&updated).as_str()), "{name}");
                assert_eq!(condition(p, "SidecarSetUpgradable").map(|c| c.0).as_deref(), Some("True"), "{name}");
            }
            Some("busybox:1.36") => {
                assert_eq!(restarts(p, "log-agent"), restarts(old, "log-agent"), "{name}");
                assert_eq!(hash_entry(p, "logs").as_deref(), Some(set_hash(&current).as_str()), "{name}");
            }
            other => panic!("{name}: log-agent image {other:?}"),
        }
    }
    assert_eq!(upgraded, 4, "exactly len - partition pods upgraded");
    assert_eq!(sets.get("logs").await.unwrap().status.unwrap().updated_pods, 4);
    assert!(history.max_unavailable() <= 1, "{} pods had an unavailable sidecar at once", history.max_unavailable());
    assert!(history.torn().is_empty(), "{:?}", history.torn());

    // Partition 0 finishes the rollout.
    patch_set(w, "logs", json!({"spec": {"updateStrategy": {"partition": 0}}})).await;
    poll("all 6 upgraded", Duration::from_secs(120), || async {
        let s = sets.get("logs").await.ok()?.status?;
        (s.updated_pods == 6 && s.updated_ready_pods == 6).then_some(())
    })
    .await;
    assert!(history.max_unavailable() <= 1);

    // A change of the sidecar's env cannot be made in place: every pod is marked and left alone.
    let env_change = json!({"spec": {"containers": [{"name": "log-agent", "image": "busybox:1.37",
        "env": [{"name": "LEVEL", "value": "debug"}]}]}});
    patch_set(w, "logs", env_change).await;
    let marked = poll("pods marked not upgradable", Duration::from_secs(60), || async {
        let pods = pods.list(&ListParams::default().labels("app=cold")).await.ok()?.items;
        pods.iter()
            .all(|p| condition(p, "SidecarSetUpgradable") == Some(("False".into(), "UpdateImmutableField".into())))
            .then_some(pods)
    })
    .await;
    for p in &marked {
        assert_eq!(spec_image(p, "log-agent").as_deref(), Some("busybox:1.37"), "left alone");
        let env = &p.spec.as_ref().unwrap().containers[0].env;
        assert!(!env.iter().flatten().any(|e| e.name == "LEVEL"), "left alone");
    }
    let events: Api<Event> = Api::namespaced(w.client.clone(), ns.name());
    let pod_name = marked[0].metadata.name.clone().unwrap();
    let event = poll("an Event on the pod naming the field", Duration::from_secs(30), || async {
        let list = events.list(&ListParams::default()).await.ok()?.items;
        list.into_iter()
            .find(|e| e.involved_object.name.as_deref() == Some(&pod_name) && e.type_.as_deref() == Some("Warning"))
    })
    .await;
    let message = event.message.unwrap_or_default();
    assert!(message.contains("log-agent") && message.contains("env"), "{message}");
    let status = sets.get("logs").await.unwrap().status.unwrap();
    assert_eq!((status.matched_pods, status.updated_pods), (6, 0), "no pod has the new version");
    watch.abort();
}

/// A hot-upgrade sidecar: the idle twin gets the new image, becomes the working one, and the old
/// one is reset to the empty image.
async fn hot_upgrade_swaps_the_pair(w: &World) {
    let ns = cluster().namespace("e2e-sc-hot").await.unwrap();
    let set = sidecarset(
        "mesh",
        ns.name(),
        "hot",
        json!([{"name": "proxy", "image": "envoy:1.30",
            "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "envoy:empty"}}]),
        json!({"type": "RollingUpdate", "maxUnavailable": 1}),
    );
    let before = set_up(w, ns.name(), &set, "hot", 2).await;
    for p in &before {
        assert_eq!(spec_image(p, "proxy-1").as_deref(), Some("envoy:1.30"));
        assert_eq!(spec_image(p, "proxy-2").as_deref(), Some("envoy:empty"));
    }
    patch_set(
        w,
        "mesh",
        json!({"spec": {"containers": [{"name": "proxy", "image": "envoy:1.31",
        "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "envoy:empty"}}]}}),
    )
    .await;
    let sets: Api<SidecarSet> = Api::all(w.client.clone());
    let pods: Api<Pod> = Api::namespaced(w.client.clone(), ns.name());
    let after = poll("both pods swapped and the old twin emptied", Duration::from_secs(120), || async {
        let s = sets.get("mesh").await.ok()?.status?;
        if s.updated_pods != 2 || s.updated_ready_pods != 2 || s.observed_generation < 2 {
            return None;
        }
        let pods = pods.list(&ListParams::default().labels("app=hot")).await.ok()?.items;
        pods.iter().all(|p| spec_image(p, "proxy-1").as_deref() == Some("envoy:empty")).then_some(pods)
    })
    .await;
    for p in &after {
        let name = p.metadata.name.clone().unwrap();
        let old = before.iter().find(|b| b.metadata.name.as_deref() == Some(&name)).unwrap();
        assert_eq!(p.metadata.uid, old.metadata.uid, "{name} in place");
        assert_eq!(spec_image(p, "proxy-2").as_deref(), Some("envoy:1.31"), "{name}");
        let working = &p.metadata.annotations.as_ref().unwrap()["kruise.io/sidecarset-working-hotupgrade-container"];
        assert_eq!(serde_json::from_str::<Value>(working).unwrap(), json!({"proxy": "proxy-2"}), "{name}");
        assert_eq!(restarts(p, "app"), restarts(old, "app"), "{name}: the app is untouched");
    }
}

fn init_status<'a>(p: &'a Pod, name: &str) -> Option<&'a ContainerStatus> {
    p.status.as_ref()?.init_container_statuses.as_ref()?.iter().find(|c| c.name == name)
}

fn init_image(p: &Pod, name: &str) -> Option<String> {
    p.spec.as_ref()?.init_containers.as_ref()?.iter().find(|c| c.name == name)?.image.clone()
}

/// A native sidecar (an init container with `restartPolicy: Always`) is upgraded in place like a
/// container (kruise #1540, #1671): same pod, the sidecar restarted once on the new image.
async fn native_sidecar_upgrades_in_place(w: &World) {
    let ns = cluster().namespace("e2e-sc-native").await.unwrap();
    let sets: Api<SidecarSet> = Api::all(w.client.clone());
    let mut set = sidecarset("native", ns.name(), "native", json!([]), json!({"type": "RollingUpdate"}));
    set.spec.init_containers =
        serde_json::from_value(json!([{"name": "agent", "image": "busybox:1.36", "restartPolicy": "Always"}])).unwrap();
    let before = set_up(w, ns.name(), &set, "native", 2).await;
    for p in &before {
        assert_eq!(init_image(p, "agent").as_deref(), Some("busybox:1.36"));
    }
    patch_set(
        w,
        "native",
        json!({"spec": {"initContainers": [{"name": "agent", "image": "busybox:1.37", "restartPolicy": "Always"}]}}),
    )
    .await;
    let pods: Api<Pod> = Api::namespaced(w.client.clone(), ns.name());
    let after = poll("both native sidecars upgraded", Duration::from_secs(120), || async {
        let s = sets.get("native").await.ok()?.status?;
        if s.updated_pods != 2 || s.updated_ready_pods != 2 || s.observed_generation < 2 {
            return None;
        }
        let pods = pods.list(&ListParams::default().labels("app=native")).await.ok()?.items;
        pods.iter()
            .all(|p| init_status(p, "agent").is_some_and(|c| same_image(&c.image, "busybox:1.37") && c.ready))
            .then_some(pods)
    })
    .await;
    for p in &after {
        let name = p.metadata.name.clone().unwrap();
        let old = before.iter().find(|b| b.metadata.name.as_deref() == Some(&name)).unwrap();
        assert_eq!(p.metadata.uid, old.metadata.uid, "{name} in place");
        assert_eq!(init_image(p, "agent").as_deref(), Some("busybox:1.37"));
        let restarts = |p: &Pod| init_status(p, "agent").map_or(-1, |c| c.restart_count);
        assert_eq!(restarts(p), restarts(old) + 1, "{name}: the native sidecar restarted once");
        assert_eq!(self::restarts(p, "app"), self::restarts(old, "app"), "{name}: the app is untouched");
    }
}

/// 409s on pod writes and cut and delayed watches on the manager's connection: the upgrade still
/// converges, within maxUnavailable, and no pod is ever seen half-updated.
async fn faults_never_tear_an_update(w: &World) {
    let ns = cluster().namespace("e2e-sc-faults").await.unwrap();
    let (history, watch) = History::start(w.client.clone(), ns.name(), "agent");
    let set = sidecarset(
        "agents",
        ns.name(),
        "faults",
        json!([{"name": "agent", "image": "busybox:1.36"}]),
        json!({"type": "RollingUpdate", "maxUnavailable": 2}),
    );
    set_up(w, ns.name(), &set, "faults", 5).await;
    w.proxy.fail_writes(WriteFault::Conflict, Share::Probability(0.4), &["pods"]);
    w.proxy.delay_watch_events(Duration::from_millis(300));
    let updated =
        patch_set(w, "agents", json!({"spec": {"containers": [{"name": "agent", "image": "busybox:1.37"}]}})).await;
    history.mark(Some(("agent", "agents", &set_hash(&updated), "busybox:1.37")));
    let sets: Api<SidecarSet> = Api::all(w.client.clone());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(180);
    for round in 0u32.. {
        let s = sets.get("agents").await.unwrap().status.unwrap();
        if Some(s.observed_generation) == updated.metadata.generation
            && s.updated_pods == 5
            && s.updated_ready_pods == 5
        {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the upgrade did not converge under faults: {s:?}");
        if round % 5 == 0 && round < 60 {
            w.proxy.cut_watches();
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    w.proxy.heal();
    let counts = w.proxy.counts();
    assert!(counts.conflicts > 0, "the proxy answered some writes with 409: {counts:?}");
    assert!(counts.cut_watches > 0 && counts.delayed_events > 0, "watches were cut and delayed: {counts:?}");
    assert!(history.max_unavailable() <= 2, "{}", history.max_unavailable());
    assert!(history.torn().is_empty(), "{:?}", history.torn());
    watch.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sidecarsets_upgrade_injected_pods_in_place() {
    let w = world().await;
    cold_upgrade_within_partition_and_max_unavailable(&w).await;
    hot_upgrade_swaps_the_pair(&w).await;
    native_sidecar_upgrades_in_place(&w).await;
    faults_never_tear_an_update(&w).await;
}
