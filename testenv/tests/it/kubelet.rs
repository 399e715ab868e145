//! The simulated kubelet on the real API server: scheduling, statuses, in-place restarts, pod
//! update validation, readiness gates, pull failures, graceful deletion, volumes, nodes.

use crate::common::{cluster, eventually};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, PersistentVolume, PersistentVolumeClaim, Pod};
use kruise_testenv::KubeletSettings;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;
use std::time::Duration;

fn pod(name: &str, image: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "terminationGracePeriodSeconds": 30,
            "containers": [
                {"name": "app", "image": image, "env": [{"name": "MODE", "value": "a"}]},
                {"name": "log", "image": "busybox:1.36"}
            ]
        }
    }))
    .unwrap()
}

fn condition(p: &Pod, t: &str) -> Option<String> {
    p.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == t).map(|c| c.status.clone())
}

fn app_status(p: &Pod) -> k8s_openapi::api::core::v1::ContainerStatus {
    p.status.as_ref().unwrap().container_statuses.as_ref().unwrap().iter().find(|c| c.name == "app").unwrap().clone()
}

async fn wait_ready(api: &Api<Pod>, name: &str) -> Pod {
    eventually(&format!("pod {name} Ready"), Duration::from_secs(60), || async {
        let p = api.get(name).await.ok()?;
        (condition(&p, "Ready").as_deref() == Some("True")).then_some(p)
    })
    .await
}

#[tokio::test]
async fn pods_are_scheduled_and_run_with_a_kubelets_status() {
    let c = cluster();
    let ns = c.namespace("kubelet-status").await.unwrap();
    let api: Api<Pod> = Api::namespaced(c.client().await.unwrap(), ns.name());
    api.create(&PostParams::default(), &pod("web", "nginx:1.25")).await.unwrap();
    let p = wait_ready(&api, "web").await;
    let node = p.spec.as_ref().unwrap().node_name.clone().unwrap();
    assert!(c.kubelet().nodes().contains(&node), "bound by the scheduler to a simulated node: {node}");
    let s = p.status.as_ref().unwrap();
    assert_eq!(s.phase.as_deref(), Some("Running"));
    assert!(s.pod_ip.as_deref().unwrap().starts_with("10.244."), "{:?}", s.pod_ip);
    for t in ["PodScheduled", "Initialized", "ContainersReady", "Ready"] {
        assert_eq!(condition(&p, t).as_deref(), Some("True"), "{t}");
    }
    let app = app_status(&p);
    assert_eq!(app.image, "docker.io/library/nginx:1.25");
    assert!(app.image_id.starts_with("docker.io/library/nginx@sha256:"), "{}", app.image_id);
    assert!(app.container_id.as_deref().unwrap().starts_with("containerd://"));
    assert_eq!((app.ready, app.started, app.restart_count), (true, Some(true), 0));
    assert!(app.state.as_ref().unwrap().running.as_ref().unwrap().started_at.is_some());
    assert_eq!(s.qos_class.as_deref(), Some("BestEffort"), "set by the real apiserver");
}

#[tokio::test]
async fn the_apiserver_refuses_env_changes_and_the_kubelet_restarts_image_changes_in_place() {
    let c = cluster();
    let settings = KubeletSettings { ready_delay: Duration::from_millis(1500), ..KubeletSettings::default() };
    let ns = c.namespace_with("kubelet-inplace", Some(settings)).await.unwrap();
    let api: Api<Pod> = Api::namespaced(c.client().await.unwrap(), ns.name());
    api.create(&PostParams::default(), &pod("web", "nginx:1.25")).await.unwrap();
    let before = wait_ready(&api, "web").await;

    // A running pod's env cannot change: the apiserver's pod validation says so.
    let env = json!([{"op": "replace", "path": "/spec/containers/0/env/0/value", "value": "b"}]);
    let err = api.patch("web", &PatchParams::default(), &Patch::<()>::Json(serde_json::from_value(env).unwrap())).await;
    match err {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 422, "{s:?}");
            assert!(s.message.contains("pod updates may not change fields other than"), "{}", s.message);
        }
        other => panic!("an env change must be refused, got {other:?}"),
    }

    // An image change is accepted and restarts that container only.
    let image = json!([{"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:1.26"}]);
    api.patch("web", &PatchParams::default(), &Patch::<()>::Json(serde_json::from_value(image).unwrap()))
        .await
        .unwrap();
    eventually("a NotReady window after the restart", Duration::from_secs(20), || async {
        let p = api.get("web").await.ok()?;
        (condition(&p, "Ready").as_deref() == Some("False") && app_status(&p).image.ends_with("nginx:1.26"))
            .then_some(())
    })
    .await;
    let after = wait_ready(&api, "web").await;
    let (old, new) = (app_status(&before), app_status(&after));
    assert_eq!(new.image, "docker.io/library/nginx:1.26");
    assert_ne!(new.image_id, old.image_id);
    assert_ne!(new.container_id, old.container_id);
    assert_eq!(new.restart_count, 1);
    assert_eq!(after.metadata.uid, before.metadata.uid, "the same pod");
    assert_eq!(after.spec.as_ref().unwrap().node_name, before.spec.as_ref().unwrap().node_name);
    let log = |p: &Pod| p.status.as_ref().unwrap().container_statuses.as_ref().unwrap()[1].clone();
    assert_eq!(log(&after).container_id, log(&before).container_id, "the other container runs on");
    assert_eq!(log(&after).restart_count, 0);
    assert!(c.kubelet().stats().restarts >= 1);
}

#[tokio::test]
async fn ready_waits_for_readiness_gates_set_by_a_controller() {
    let c = cluster();
    let ns = c.namespace("kubelet-gates").await.unwrap();
    let api: Api<Pod> = Api::namespaced(c.client().await.unwrap(), ns.name());
    let mut p = pod("gated", "nginx");
    p.spec.as_mut().unwrap().readiness_gates =
        Some(vec![k8s_openapi::api::core::v1::PodReadinessGate { condition_type: "InPlaceUpdateReady".into() }]);
    api.create(&PostParams::default(), &p).await.unwrap();
    let p = eventually("containers ready, pod not", Duration::from_secs(30), || async {
        let p = api.get("gated").await.ok()?;
        (condition(&p, "ContainersReady").as_deref() == Some("True")).then_some(p)
    })
    .await;
    assert_eq!(condition(&p, "Ready").as_deref(), Some("False"));
    let gate = json!({"status": {"conditions": [{"type": "InPlaceUpdateReady", "status": "True"}]}});
    api.patch_status("gated", &PatchParams::default(), &Patch::Strategic(&gate)).await.unwrap();
    let p = wait_ready(&api, "gated").await;
    assert_eq!(
        condition(&p, "InPlaceUpdateReady").as_deref(),
        Some("True"),
        "the kubelet keeps a controller's condition"
    );
}

#[tokio::test]
async fn failing_pulls_back_off() {
    let c = cluster();
    let ns = c.namespace("kubelet-pull").await.unwrap();
    let api: Api<Pod> = Api::namespaced(c.client().await.unwrap(), ns.name());
    api.create(&PostParams::default(), &pod("broken", "registry.example/does-not-exist:1")).await.unwrap();
    for reason in ["ErrImagePull", "ImagePullBackOff"] {
        eventually(reason, Duration::from_secs(30), || async {
            let p = api.get("broken").await.ok()?;
            let app = p.status.as_ref()?.container_statuses.as_ref()?.iter().find(|c| c.name == "app")?.clone();
            (app.state?.waiting?.reason.as_deref() == Some(reason)).then_some(())
        })
        .await;
    }
    assert_eq!(condition(&api.get("broken").await.unwrap(), "Ready").as_deref(), Some("False"));
}

#[tokio::test]
async fn deleted_pods_go_after_their_grace_period_and_finalizers_hold_them() {
    let c = cluster();
    let settings = KubeletSettings { max_grace_period: Some(Duration::from_secs(1)), ..KubeletSettings::default() };
    let ns = c.namespace_with("kubelet-delete", Some(settings)).await.unwrap();
    let api: Api<Pod> = Api::namespaced(c.client().await.unwrap(), ns.name());
    api.create(&PostParams::default(), &pod("graceful", "nginx")).await.unwrap();
    let mut held = pod("held", "nginx");
    held.metadata.finalizers = Some(vec!["testenv.kruise.io/hold".into()]);
    api.create(&PostParams::default(), &held).await.unwrap();
    wait_ready(&api, "graceful").await;
    wait_ready(&api, "held").await;

    api.delete("graceful", &DeleteParams::default()).await.unwrap();
    let terminating = api.get("graceful").await.unwrap();
    assert!(terminating.metadata.deletion_timestamp.is_some(), "a bound pod terminates gracefully");
    eventually("the pod gone after the capped grace period", Duration::from_secs(20), || async {
        api.get_opt("graceful").await.ok()?.is_none().then_some(())
    })
    .await;

    api.delete("held", &DeleteParams::default()).await.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let p = api.get("held").await.unwrap();
    assert!(p.metadata.deletion_timestamp.is_some(), "kept by its finalizer");
    let release = json!({"metadata": {"finalizers": null}});
    api.patch("held", &PatchParams::default(), &Patch::Merge(&release)).await.unwrap();
    eventually("the held pod gone", Duration::from_secs(20), || async {
        api.get_opt("held").await.ok()?.is_none().then_some(())
    })
    .await;
}

#[tokio::test]
async fn claims_are_provisioned_and_pods_start_once_bound() {
    let c = cluster();
    let ns = c.namespace("kubelet-volumes").await.unwrap();
    let client = c.client().await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), ns.name());
    let mut p = pod("with-data", "nginx");
    let spec = p.spec.as_mut().unwrap();
    spec.volumes = Some(vec![
        serde_json::from_value(json!({"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}})).unwrap(),
    ]);
    pods.create(&PostParams::default(), &p).await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let waiting = pods.get("with-data").await.unwrap();
    assert_ne!(condition(&waiting, "Ready").as_deref(), Some("True"), "no claim yet: the pod cannot start");

    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data-0"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2Gi"}}}
    }))
    .unwrap();
    claims.create(&PostParams::default(), &claim).await.unwrap();
    let bound = eventually("the claim Bound", Duration::from_secs(30), || async {
        let c = claims.get("data-0").await.ok()?;
        (c.status.as_ref()?.phase.as_deref() == Some("Bound")).then_some(c)
    })
    .await;
    let pv_name = bound.spec.as_ref().unwrap().volume_name.clone().unwrap();
    let pv = Api::<PersistentVolume>::all(client.clone()).get(&pv_name).await.unwrap();
    assert_eq!(pv.spec.as_ref().unwrap().capacity.as_ref().unwrap()["storage"].0, "2Gi");
    assert_eq!(bound.spec.as_ref().unwrap().storage_class_name.as_deref(), Some("standard"), "the default class");
    wait_ready(&pods, "with-data").await;
    assert!(c.kubelet().stats().provisioned >= 1);

    // Deleting the pod and the claim releases the volume, which its provisioner deletes.
    pods.delete("with-data", &DeleteParams::default().grace_period(0)).await.unwrap();
    claims.delete("data-0", &DeleteParams::default()).await.unwrap();
    let volumes: Api<PersistentVolume> = Api::all(client);
    eventually("the released volume deleted", Duration::from_secs(60), || async {
        volumes.get_opt(&pv_name).await.ok()?.is_none().then_some(())
    })
    .await;
}

#[tokio::test]
async fn nodes_report_ready_and_renew_their_leases() {
    let c = cluster();
    let client = c.client().await.unwrap();
    let nodes: Api<Node> = Api::all(client.clone());
    let leases: Api<Lease> = Api::namespaced(client, "kube-node-lease");
    let mut zones = std::collections::BTreeSet::new();
    for name in c.kubelet().nodes() {
        let node = nodes.get(&name).await.unwrap();
        let ready = node
            .status
            .as_ref()
            .unwrap()
            .conditions
            .as_ref()
            .unwrap()
            .iter()
            .find(|c| c.type_ == "Ready")
            .unwrap()
            .clone();
        assert_eq!(ready.status, "True");
        assert!(
            node.spec.as_ref().unwrap().taints.clone().unwrap_or_default().is_empty(),
            "node-lifecycle lifted the taints"
        );
        zones.insert(node.metadata.labels.as_ref().unwrap()["topology.kubernetes.io/zone"].clone());
        let lease = leases.get(&name).await.unwrap();
        let renewed = lease.spec.unwrap().renew_time.unwrap().0;
        let age = jiff::Timestamp::now().duration_since(renewed);
        assert!(age < jiff::SignedDuration::from_secs(30), "lease of {name} renewed {age:?} ago");
    }
    assert_eq!(zones.len(), 3, "{zones:?}");
}

/// A container whose env reads a missing ConfigMap key waits in `CreateContainerConfigError` while
/// the other runs, and starts once the key is written (the kubelet watches ConfigMaps).
#[tokio::test]
async fn a_missing_config_map_key_holds_the_container_until_it_is_written() {
    use k8s_openapi::api::core::v1::ConfigMap;
    let c = cluster();
    let ns = c.namespace("kubelet-configmap").await.unwrap();
    let client = c.client().await.unwrap();
    let api: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let held: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "held"},
        "spec": {"containers": [
            {"name": "app", "image": "nginx:1.25",
             "env": [{"name": "B", "valueFrom": {"configMapKeyRef": {"name": "held-barrier", "key": "p_0"}}}]},
            {"name": "log", "image": "busybox:1.36"}
        ]}
    }))
    .unwrap();
    api.create(&PostParams::default(), &held).await.unwrap();
    let waiting = |p: &Pod| {
        let app = p.status.as_ref()?.container_statuses.as_ref()?.iter().find(|c| c.name == "app")?.clone();
        app.state.and_then(|s| s.waiting).map(|w| (w.reason.unwrap_or_default(), w.message.unwrap_or_default()))
    };
    let p = eventually("app held by its env", Duration::from_secs(60), || async {
        let p = api.get("held").await.ok()?;
        waiting(&p).is_some_and(|(r, _)| r == "CreateContainerConfigError").then_some(p)
    })
    .await;
    assert_eq!(waiting(&p).unwrap().1, "configmap \"held-barrier\" not found");
    let log = p.status.as_ref().unwrap().container_statuses.as_ref().unwrap().iter().find(|s| s.name == "log").unwrap();
    assert!(log.state.as_ref().unwrap().running.is_some(), "the other container runs");

    let cms: Api<ConfigMap> = Api::namespaced(client, ns.name());
    let cm = |data: serde_json::Value| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": "held-barrier"}, "data": data})).unwrap()
    };
    cms.create(&PostParams::default(), &cm(json!({"other": "x"}))).await.unwrap();
    eventually("the kubelet names the missing key", Duration::from_secs(30), || async {
        let p = api.get("held").await.ok()?;
        (waiting(&p)?.1 == format!("couldn't find key p_0 in ConfigMap {}/held-barrier", ns.name())).then_some(())
    })
    .await;
    cms.patch("held-barrier", &PatchParams::default(), &Patch::Merge(json!({"data": {"p_0": "true"}}))).await.unwrap();
    let p = wait_ready(&api, "held").await;
    let app = app_status(&p);
    assert_eq!((app.ready, app.restart_count), (true, 0));
}
