//! Container launch priority end to end (issue 28 item 9): `kruise serve` with deploy/'s
//! ServiceAccount, reaching the API server through the fault proxy, `webhook-config/` registered,
//! and the simulated kubelet holding a container whose env reads a missing ConfigMap key. A pod
//! annotated `apps.kruise.io/container-launch-priority: Ordered` gets the barrier env from the pod
//! webhook; the leader's controller writes `<pod>-barrier` one key at a time; the containers start
//! in order (each observed status: container k runs only if k-1 is ready; startedAt strictly
//! increasing) and the pod turns Ready, its barrier owned by it and collected with it. Then the
//! same with the barrier's writes answered 409 and the watches cut: it still converges. Its own
//! test binary: it registers webhooks with its own CA.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use e2e_common::{cluster, eventually, serve_namespace};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kruise_testenv::{Share, WriteFault};
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::watcher;
use serde_json::json;

const CONTAINERS: [&str; 3] = ["c0", "c1", "c2"];

fn ordered_pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "annotations": {
            "apps.kruise.io/container-launch-priority": "Ordered",
            // Each container turns ready 1.5 s after it starts, so the order shows in startedAt.
            "testenv.kruise.io/ready-delay-ms": "1500"}},
        "spec": {"terminationGracePeriodSeconds": 1, "containers": [
            {"name": "c0", "image": "nginx:1.25"},
            {"name": "c1", "image": "busybox:1.36"},
            {"name": "c2", "image": "redis:7"}
        ]}
    }))
    .unwrap()
}

/// (running, ready, startedAt seconds, waiting reason) of a container in a status.
fn container(p: &Pod, name: &str) -> (bool, bool, Option<i64>, Option<String>) {
    let Some(s) =
        p.status.as_ref().and_then(|s| s.container_statuses.as_ref()).and_then(|v| v.iter().find(|c| c.name == name))
    else {
        return (false, false, None, None);
    };
    let running = s.state.as_ref().and_then(|st| st.running.as_ref());
    let waiting = s.state.as_ref().and_then(|st| st.waiting.as_ref()).and_then(|w| w.reason.clone());
    (running.is_some(), s.ready, running.and_then(|r| r.started_at.as_ref()).map(|t| t.0.as_second()), waiting)
}

fn is_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// Every version of pod `name` the API server sends from now on.
fn record(api: &Api<Pod>, name: &str) -> Arc<Mutex<Vec<Pod>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (s, stream) =
        (Arc::clone(&seen), watcher(api.clone(), watcher::Config::default().fields(&format!("metadata.name={name}"))));
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            if let Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) = ev {
                s.lock().unwrap().push(p);
            }
        }
    });
    seen
}

/// Creates an ordered pod and checks the launch: barrier env injected, containers started one
/// priority at a time, Ready, barrier owned by the pod with every key, the pod marked completed.
async fn launches_in_order(client: &kube::Client, ns: &str, name: &str) {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let history = record(&pods, name);
    // The watch is open before the pod exists.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let created = pods.create(&PostParams::default(), &ordered_pod(name)).await.unwrap();
    // The pod webhook gave each container its barrier key: c0 p_0, c1 p_-1, c2 p_-2.
    for (i, c) in created.spec.as_ref().unwrap().containers.iter().enumerate() {
        let env = c.env.as_ref().and_then(|e| e.iter().find(|e| e.name == "KRUISE_CONTAINER_BARRIER")).unwrap();
        let r = env.value_from.as_ref().unwrap().config_map_key_ref.as_ref().unwrap();
        let want = (format!("{name}-barrier"), format!("p_{}", -(i as i64)));
        assert_eq!((r.name.clone(), r.key.clone()), want);
    }
    let pod = eventually(&format!("{name} Ready"), Duration::from_secs(90), || async {
        pods.get(name).await.ok().filter(is_ready)
    })
    .await;

    // Started in order, 1.5 s (the ready delay) or more apart: whole seconds strictly increase.
    let started: Vec<i64> = CONTAINERS.iter().map(|c| container(&pod, c).2.unwrap()).collect();
    let history = history.lock().unwrap().clone();
    let states: Vec<Vec<_>> = history.iter().map(|p| CONTAINERS.iter().map(|c| container(p, c)).collect()).collect();
    assert!(started.windows(2).all(|w| w[0] < w[1]), "startedAt not in order: {started:?}; states seen: {states:?}");
    // No observed status has container k running before k-1 is ready, and the later containers
    // were seen held by their env.
    let mut held = [false; 3];
    for p in &history {
        for k in 0..3 {
            let (running, _, _, waiting) = container(p, CONTAINERS[k]);
            if k > 0 && running {
                assert!(
                    container(p, CONTAINERS[k - 1]).1,
                    "{} runs before {} is ready: {:?}",
                    CONTAINERS[k],
                    CONTAINERS[k - 1],
                    p.status
                );
            }
            held[k] |= waiting.as_deref() == Some("CreateContainerConfigError");
        }
    }
    assert!(held[1] && held[2], "c1 and c2 waited in CreateContainerConfigError ({} states seen)", history.len());

    // The barrier: kruise's name and keys, owned by the pod (apiVersion v1, kind Pod, name, uid).
    let barriers: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let barrier = barriers.get(&format!("{name}-barrier")).await.unwrap();
    let keys: Vec<&str> = barrier.data.as_ref().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["p_-1", "p_-2", "p_0"]);
    assert!(barrier.data.as_ref().unwrap().values().all(|v| v == "true"));
    let owner = &barrier.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.api_version.as_str(), owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
        ("v1", "Pod", name, pod.metadata.uid.as_deref().unwrap())
    );
    eventually("the completed mark", Duration::from_secs(30), || async {
        let p = pods.get(name).await.ok()?;
        let a = p.metadata.annotations.as_ref()?;
        (a.get("apps.kruise.io/container-launch-priority-completed").map(String::as_str) == Some("true")).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ordered_pod_starts_its_containers_in_order_even_with_conflicts_and_cut_watches() {
    let c = cluster();
    let ns = c.namespace("launch-priority").await.unwrap();
    let certs = tempfile::tempdir().unwrap();
    let (kruise, proxy, client) = serve_namespace(ns.name(), certs.path()).await;

    // 1. No faults.
    launches_in_order(&client, ns.name(), "ordered").await;

    // The barrier goes with the pod (the garbage collector follows its ownerReference).
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let barriers: Api<ConfigMap> = Api::namespaced(client.clone(), ns.name());
    pods.delete("ordered", &DeleteParams::default()).await.unwrap();
    eventually("the barrier collected with its pod", Duration::from_secs(90), || async {
        barriers.get_opt("ordered-barrier").await.ok().flatten().is_none().then_some(())
    })
    .await;

    // 2. The barrier's writes answered 409 (create: as AlreadyExists would be; patches: as a stale
    // write) and every watch cut: retried with the runner's backoff, the launch completes.
    proxy.fail_writes(WriteFault::Conflict, Share::Next(3), &["configmaps"]);
    proxy.cut_watches();
    launches_in_order(&client, ns.name(), "ordered-faults").await;
    let counts = proxy.counts();
    assert_eq!(counts.conflicts, 3, "{counts:?}");
    assert!(counts.cut_watches >= 1, "{counts:?}");
    proxy.heal();

    let (code, metrics) = kruise.admin_get("/metrics").await;
    assert_eq!(code, 200);
    for line in [
        "controller_runtime_reconcile_total{controller=\"container-launch-priority\",result=\"success\"}",
        "controller_runtime_reconcile_total{controller=\"container-launch-priority\",result=\"error\"}",
    ] {
        assert!(metrics.contains(line), "{line} not in\n{metrics}");
    }
}
