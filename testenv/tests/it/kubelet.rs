//! The simulated kubelet: scheduling, Running with container statuses, readiness after the
//! configured delay and only with every readiness gate True, container restarts on image changes,
//! graceful deletion, and unschedulable pods staying Pending.

use crate::common::*;
use k8s_openapi::api::core::v1::Pod;
use kruise_testenv::{KubeletConfig, TestEnv};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{Condition, await_condition, conditions};
use serde_json::json;
use std::time::Duration;

fn pod(name: &str, extra_spec: serde_json::Value) -> Pod {
    let mut spec =
        json!({"containers": [{"name": "main", "image": "nginx:1.25"}, {"name": "side", "image": "envoy:1"}]});
    if let (Some(s), serde_json::Value::Object(e)) = (spec.as_object_mut(), extra_spec) {
        s.extend(e);
    }
    serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
}

fn condition_true(pod: &Pod, type_: &str) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == type_ && c.status == "True"))
}

fn ready() -> impl Condition<Pod> {
    |p: Option<&Pod>| p.is_some_and(|p| condition_true(p, "Ready"))
}

fn running() -> impl Condition<Pod> {
    |p: Option<&Pod>| p.is_some_and(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pods_run_and_become_ready() {
    let env = TestEnv::builder()
        .kubelet(KubeletConfig { nodes: 2, ready_delay: Duration::from_millis(200), max_grace_period: None })
        .start()
        .await
        .unwrap();
    let pods: Api<Pod> = Api::default_namespaced(env.client().unwrap());
    pods.create(&PostParams::default(), &pod("web", json!({}))).await.unwrap();
    let p = within("web to be ready", await_condition(pods.clone(), "web", ready())).await.unwrap().unwrap();
    let status = p.status.clone().unwrap();
    assert_eq!(status.phase.as_deref(), Some("Running"));
    assert!(status.pod_ip.is_some() && status.host_ip.is_some());
    let node = p.spec.as_ref().unwrap().node_name.clone().unwrap();
    assert!(env.kubelet().unwrap().nodes().contains(&node));
    let statuses = status.container_statuses.unwrap();
    assert_eq!(statuses.len(), 2);
    assert!(statuses.iter().all(|s| s.ready && s.restart_count == 0));
    assert_eq!(statuses[0].image_id, kruise_testenv::kubelet::image_id("nginx:1.25"));
    let on_node = pods.list(&kube::api::ListParams::default().fields(&format!("spec.nodeName={node}"))).await.unwrap();
    assert_eq!(on_node.items.len(), 1);

    // A changed image restarts just that container with a new imageID.
    pods.patch(
        "web",
        &PatchParams::default(),
        &Patch::Strategic(json!({"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}})),
    )
    .await
    .unwrap();
    let restarted = |p: Option<&Pod>| {
        p.and_then(|p| p.status.as_ref()?.container_statuses.clone())
            .is_some_and(|cs| cs.iter().any(|c| c.name == "main" && c.restart_count == 1 && c.ready))
    };
    let p = within("main to restart", await_condition(pods.clone(), "web", restarted)).await.unwrap().unwrap();
    let cs = p.status.unwrap().container_statuses.unwrap();
    assert_eq!(cs[0].image_id, kruise_testenv::kubelet::image_id("nginx:1.26"));
    assert_eq!(cs[1].restart_count, 0);

    // Graceful deletion: the pod lingers, marked, for its grace period, then disappears.
    let p = pods.get("web").await.unwrap();
    let uid = p.metadata.uid.clone().unwrap();
    pods.delete("web", &DeleteParams { grace_period_seconds: Some(1), ..Default::default() }).await.unwrap();
    let marked = pods.get_opt("web").await.unwrap();
    if let Some(marked) = marked {
        assert!(marked.metadata.deletion_timestamp.is_some());
    }
    within("web to go", await_condition(pods.clone(), "web", conditions::is_deleted(&uid))).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_gates_and_unschedulable_pods() {
    let mut env = TestEnv::start().await.unwrap();
    let kubelet = env.start_kubelet(KubeletConfig::default()).await.unwrap();
    let pods: Api<Pod> = Api::default_namespaced(env.client().unwrap());
    pods.create(
        &PostParams::default(),
        &pod("gated", json!({"readinessGates": [{"conditionType": "InPlaceUpdateReady"}]})),
    )
    .await
    .unwrap();
    let containers_ready = |p: Option<&Pod>| p.is_some_and(|p| condition_true(p, "ContainersReady"));
    let p =
        within("containers ready", await_condition(pods.clone(), "gated", containers_ready)).await.unwrap().unwrap();
    assert!(!condition_true(&p, "Ready"), "a False readiness gate keeps the pod unready");
    pods.patch_status(
        "gated",
        &PatchParams::default(),
        &Patch::Strategic(json!({"status": {"conditions": [{"type": "InPlaceUpdateReady", "status": "True"}]}})),
    )
    .await
    .unwrap();
    within("gated ready", await_condition(pods.clone(), "gated", ready())).await.unwrap();

    // The ready delay is a live knob; an annotation overrides it per pod.
    kubelet.set_ready_delay(Duration::from_secs(3600));
    pods.create(&PostParams::default(), &pod("slow", json!({}))).await.unwrap();
    let mut fast = pod("fast", json!({}));
    fast.metadata.annotations = Some([(kruise_testenv::READY_DELAY_ANNOTATION.to_string(), "0".to_string())].into());
    pods.create(&PostParams::default(), &fast).await.unwrap();
    within("fast ready", await_condition(pods.clone(), "fast", ready())).await.unwrap();
    let slow = within("slow running", await_condition(pods.clone(), "slow", running())).await.unwrap().unwrap();
    assert!(!condition_true(&slow, "Ready"));
    kubelet.set_ready_delay(Duration::ZERO);
    within("slow ready", await_condition(pods.clone(), "slow", ready())).await.unwrap();

    // No node matches: the pod stays Pending and unbound.
    pods.create(&PostParams::default(), &pod("nowhere", json!({"nodeSelector": {"disk": "ssd"}}))).await.unwrap();
    pods.create(&PostParams::default(), &pod("after", json!({}))).await.unwrap();
    within("after running", await_condition(pods.clone(), "after", running())).await.unwrap();
    let nowhere = pods.get("nowhere").await.unwrap();
    assert!(nowhere.spec.unwrap().node_name.is_none());
    assert_eq!(nowhere.status.unwrap().phase.as_deref(), Some("Pending"));
}
