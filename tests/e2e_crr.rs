//! ContainerRecreateRequest end to end (issue 30 item 1 "done means") on the real control plane of
//! `testenv/`: `kruise serve` with the rights of `deploy/rbac.yaml` (KruiseDaemon is on by
//! default), one `kruise daemon` per simulated node with the `kruise-daemon` ServiceAccount's
//! token (`deploy/daemon-rbac.yaml`) talking to its node's CRI socket, and the simulated kubelet
//! restarting what the daemon stops. Requests are written as a user writes them (kubectl,
//! `apps.kruise.io/v1alpha1`) through the generated `webhook-config/`. Asserted:
//! - a request for two containers of a running pod (`orderedRecreate`, an exec preStop on the
//!   first) runs the hook, stops both in order through CRI, the kubelet restarts them (same pod
//!   uid, restartCount + 1 each, new container ids), the request ends `Completed` with both
//!   containers `Succeeded`, and is deleted after its `ttlSecondsAfterFinished`;
//! - a second request on the same pod, created while the first runs, waits Pending and then
//!   restarts its container right after the first ends (kruise #1058 #1626: it stayed Pending);
//! - `activeDeadlineSeconds: 5` on a container that does not come back ends the request `Completed`
//!   (kruise's phase: the manager completes it, it never writes `Failed`) with kruise's message
//!   "recreating has exceeded the activeDeadlineSeconds", no sooner than 5 s after its creation;
//! - a request naming a container the pod lacks is denied by the webhook with
//!   "container nope not found in Pod";
//! - a request written as kruise HEAD's `apps.kruise.io/v1beta1` is admitted (labels, defaults),
//!   stored through the conversion webhook, executed, and read as v1alpha1 and as v1beta1 (the
//!   `sync-container-statuses` annotation as `status.containerStatusSnapshot`); a v1beta1 spec
//!   change is denied.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::time::Duration;

use e2e_common::{Kubectl, cluster, eventually as poll, start_daemons};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::Timestamp;
use kruise::apis::containerrecreaterequest::ContainerRecreateRequest;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

/// `(containerID, restartCount, ready)` of container `name`.
fn status_of(pod: &Pod, name: &str) -> Option<(String, i32, bool)> {
    let s = pod.status.as_ref()?.container_statuses.as_ref()?.iter().find(|c| c.name == name)?;
    Some((s.container_id.clone()?, s.restart_count, s.ready))
}

fn started_second(pod: &Pod, name: &str) -> Option<i64> {
    let s = pod.status.as_ref()?.container_statuses.as_ref()?.iter().find(|c| c.name == name)?;
    Some(s.state.as_ref()?.running.as_ref()?.started_at.as_ref()?.0.as_second())
}

/// Waits until every container of the pod runs ready, and the clock has moved past the second
/// they started in (kruise compares a container's start with the request's creation time, which
/// has whole seconds).
async fn running_pod(pods: &Api<Pod>, name: &str, containers: &[&str]) -> Pod {
    poll(&format!("pod {name} running and ready"), Duration::from_secs(120), || async {
        let p = pods.get(name).await.ok()?;
        let ready = containers.iter().all(|c| status_of(&p, c).is_some_and(|(id, _, r)| !id.is_empty() && r));
        let latest = containers.iter().filter_map(|c| started_second(&p, c)).max()?;
        (ready && Timestamp::now().as_second() > latest + 1).then_some(p)
    })
    .await
}

async fn kubectl_apply(kubectl: &Kubectl, name: &str, object: &Value) -> (bool, String) {
    let path = kubectl.dir().join(format!("{name}.json"));
    std::fs::write(&path, object.to_string()).unwrap();
    let (ok, out, err) = kubectl.run(&["create", "-f", path.to_str().unwrap()]).await;
    (ok, format!("{out}{err}"))
}

fn request(ns: &str, name: &str, pod: &str, containers: &[&str], spec: Value) -> Value {
    let mut spec = spec;
    spec["podName"] = json!(pod);
    spec["containers"] = json!(containers.iter().map(|c| json!({"name": c})).collect::<Vec<_>>());
    json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "ContainerRecreateRequest",
        "metadata": {"name": name, "namespace": ns}, "spec": spec})
}

async fn completed(crrs: &Api<ContainerRecreateRequest>, name: &str) -> ContainerRecreateRequest {
    poll(&format!("request {name} to complete"), Duration::from_secs(120), || async {
        let c = crrs.get(name).await.ok()?;
        c.status.as_ref()?.completion_time.as_ref()?;
        Some(c)
    })
    .await
}

fn phases(c: &ContainerRecreateRequest) -> Vec<(String, String)> {
    c.status.iter().flat_map(|s| &s.container_recreate_states).map(|s| (s.name.clone(), s.phase.clone())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn container_recreate_requests_restart_containers_in_place_through_real_daemons() {
    let env = start_daemons("", true).await;
    let c = cluster();
    let client = env.client.clone();
    let nodes = env.nodes.clone();

    let ns = c.namespace("e2e-crr").await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let crrs: Api<ContainerRecreateRequest> = Api::namespaced(client.clone(), ns.name());
    let kubectl = Kubectl::new();
    let node = nodes[0].clone();
    let runtime = c.cri(&node).expect("the node's runtime");

    // A running pod with three containers; `a` has an exec preStop hook.
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"nodeName": node, "containers": [
            {"name": "a", "image": "nginx:1.25", "lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "echo bye"]}}}},
            {"name": "b", "image": "nginx:1.25"},
            {"name": "c", "image": "busybox:1.36"}
        ]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let before = running_pod(&pods, "web", &["a", "b", "c"]).await;
    let uid = before.metadata.uid.clone().unwrap();
    let (a0, b0, c0) =
        (status_of(&before, "a").unwrap(), status_of(&before, "b").unwrap(), status_of(&before, "c").unwrap());

    // 4. A container the pod lacks: denied with a clear message.
    let (ok, out) = kubectl_apply(&kubectl, "nope", &request(ns.name(), "nope", "web", &["nope"], json!({}))).await;
    assert!(!ok, "a request for a missing container was admitted: {out}");
    assert!(out.contains("container nope not found in Pod"), "{out}");

    // 1 and 2. Two containers in order, then (created at once) a second request on the same pod.
    let first = request(
        ns.name(),
        "first",
        "web",
        &["a", "b"],
        json!({
        "strategy": {"orderedRecreate": true}, "ttlSecondsAfterFinished": 10}),
    );
    let second = request(ns.name(), "second", "web", &["c"], json!({}));
    // One kubectl call: both exist before the daemon has finished the first.
    let both = json!({"apiVersion": "v1", "kind": "List", "items": [first, second]});
    let (ok, out) = kubectl_apply(&kubectl, "both", &both).await;
    assert!(ok, "{out}");
    let admitted = crrs.get("first").await.unwrap();
    let labels = admitted.metadata.labels.clone().unwrap();
    assert_eq!(labels["crr.apps.kruise.io/pod-uid"], uid);
    assert_eq!(labels["crr.apps.kruise.io/node-name"], node);
    assert_eq!(admitted.spec.strategy.as_ref().unwrap().failure_policy, "Fail");
    assert_eq!(admitted.spec.containers[0].status_context.as_ref().unwrap().container_id, a0.0);
    assert!(admitted.spec.containers[0].pre_stop.is_some(), "the pod's preStop is copied");

    let first_done = completed(&crrs, "first").await;
    let st = first_done.status.clone().unwrap();
    assert_eq!(st.phase, "Completed", "{st:?}");
    assert_eq!(st.message, "", "{st:?}");
    assert_eq!(
        phases(&first_done),
        vec![("a".to_string(), "Succeeded".to_string()), ("b".to_string(), "Succeeded".to_string())]
    );
    let after = pods.get("web").await.unwrap();
    assert_eq!(after.metadata.uid.as_deref(), Some(uid.as_str()), "the pod is the same");
    let (a1, b1) = (status_of(&after, "a").unwrap(), status_of(&after, "b").unwrap());
    assert_eq!(a1.1, a0.1 + 1, "a restarted once");
    assert_eq!(b1.1, b0.1 + 1, "b restarted once");
    assert_ne!(a1.0, a0.0);
    assert_ne!(b1.0, b0.0);
    let bare = |id: &str| id.split_once("://").map(|(_, b)| b.to_string()).unwrap();
    let stops = runtime.stops();
    let pos = |id: &str| stops.iter().position(|s| *s == bare(id));
    let (pa, pb) = (pos(&a0.0).expect("a stopped through CRI"), pos(&b0.0).expect("b stopped through CRI"));
    assert!(pa < pb, "a is stopped before b (orderedRecreate): {stops:?}");
    assert_eq!(stops.iter().filter(|s| **s == bare(&a0.0)).count(), 1, "a is stopped once");
    assert!(
        runtime.execs().iter().any(|(id, cmd)| *id == bare(&a0.0) && cmd == &["sh", "-c", "echo bye"]),
        "a's preStop ran in the old container: {:?}",
        runtime.execs()
    );

    // The second request starts as soon as the first ends and restarts c.
    let second_done = completed(&crrs, "second").await;
    assert_eq!(second_done.status.as_ref().unwrap().phase, "Completed");
    assert_eq!(phases(&second_done), vec![("c".to_string(), "Succeeded".to_string())]);
    let stops = runtime.stops();
    let pc = stops.iter().position(|s| *s == bare(&c0.0)).expect("c stopped through CRI");
    assert!(pc > pb, "the second request stops c after the first ended: {stops:?}");
    let p = pods.get("web").await.unwrap();
    let c1 = status_of(&p, "c").unwrap();
    assert_eq!(c1.1, c0.1 + 1);
    assert_ne!(c1.0, c0.0);

    // kruise's short name.
    let (ok, out, err) = kubectl.run(&["get", "crr", "-n", ns.name(), "-o", "name"]).await;
    assert!(ok && out.contains("second"), "kubectl get crr: {out}{err}");

    // 5. A v1beta1 request (kruise HEAD): admitted by the same webhook, stored as v1alpha1 through
    // the conversion webhook, executed by the daemon (which reads v1alpha1), and read back both ways.
    let mut beta = request(ns.name(), "beta", "web", &["b"], json!({"ttlSecondsAfterFinished": 600}));
    beta["apiVersion"] = json!("apps.kruise.io/v1beta1");
    let (ok, out) = kubectl_apply(&kubectl, "beta", &beta).await;
    assert!(ok, "{out}");
    let beta_done = completed(&crrs, "beta").await;
    let labels = beta_done.metadata.labels.clone().unwrap();
    assert_eq!(labels["crr.apps.kruise.io/pod-uid"], uid, "the webhook labelled the v1beta1 request");
    assert_eq!(beta_done.spec.strategy.as_ref().unwrap().failure_policy, "Fail");
    assert_eq!(beta_done.status.as_ref().unwrap().phase, "Completed");
    assert_eq!(phases(&beta_done), vec![("b".to_string(), "Succeeded".to_string())]);
    let b2 = status_of(&pods.get("web").await.unwrap(), "b").unwrap();
    assert_eq!(b2.1, b1.1 + 1, "b restarted once more");
    let beta_view = |out: &str| serde_json::from_str::<Value>(out).unwrap();
    let (ok, out, err) = kubectl
        .run(&["get", "containerrecreaterequests.v1beta1.apps.kruise.io", "beta", "-n", ns.name(), "-o", "json"])
        .await;
    assert!(ok, "{err}");
    let view = beta_view(&out);
    assert_eq!(view["apiVersion"], "apps.kruise.io/v1beta1");
    assert_eq!(view["status"]["phase"], "Completed");
    assert_eq!(view["spec"]["containers"][0]["statusContext"]["containerID"], json!(b1.0));
    // The manager's `sync-container-statuses` annotation is v1beta1's `containerStatusSnapshot`.
    let annotations = beta_done.metadata.annotations.clone().unwrap_or_default();
    if let Some(text) = annotations.get("crr.apps.kruise.io/sync-container-statuses") {
        let listed: Value = serde_json::from_str(text).unwrap();
        assert_eq!(view["status"]["containerStatusSnapshot"], listed, "{view}");
    }
    // kruise HEAD's v1beta1 UPDATE check: the spec is immutable.
    let (ok, out, err) = kubectl
        .run(&[
            "patch",
            "containerrecreaterequests.v1beta1.apps.kruise.io",
            "beta",
            "-n",
            ns.name(),
            "--type",
            "merge",
            "-p",
            r#"{"spec":{"ttlSecondsAfterFinished":1}}"#,
        ])
        .await;
    assert!(!ok, "a v1beta1 spec change was admitted: {out}");
    assert!(err.contains("spec of ContainerRecreateRequest is immutable"), "{err}");

    // The first is deleted after its TTL.
    poll("the first request to be deleted after its TTL", Duration::from_secs(120), || async {
        match crrs.get_opt("first").await {
            Ok(None) => Some(()),
            _ => None,
        }
    })
    .await;

    // 3. A container that does not come back: the deadline completes the request.
    let stuck: Pod = serde_json::from_value(json!({
        "metadata": {"name": "stuck", "annotations": {kruise_testenv::kubelet::restart::NO_RESTART_ANNOTATION: "s"}},
        "spec": {"nodeName": node, "containers": [{"name": "s", "image": "nginx:1.25"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &stuck).await.unwrap();
    let stuck_before = running_pod(&pods, "stuck", &["s"]).await;
    let s0 = status_of(&stuck_before, "s").unwrap();
    let (ok, out) = kubectl_apply(
        &kubectl,
        "deadline",
        &request(
            ns.name(),
            "deadline",
            "stuck",
            &["s"],
            json!({
        "activeDeadlineSeconds": 5}),
        ),
    )
    .await;
    assert!(ok, "{out}");
    let done = completed(&crrs, "deadline").await;
    let st = done.status.clone().unwrap();
    assert_eq!(st.phase, "Completed", "{st:?}");
    assert_eq!(st.message, "recreating has exceeded the activeDeadlineSeconds");
    let created = done.metadata.creation_timestamp.clone().unwrap().0;
    let took = st.completion_time.clone().unwrap().0.duration_since(created);
    assert!(took.as_secs() >= 5, "completed {took:?} after creation, before the deadline");
    assert!(runtime.was_stopped(&s0.0), "s was stopped");
    assert_eq!(phases(&done), vec![("s".to_string(), "Recreating".to_string())], "the container never came back");
}
