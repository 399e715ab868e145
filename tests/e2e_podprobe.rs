//! PodProbeMarker end to end (issue 30 item 4 "done means") on the real control plane of
//! `testenv/`: `kruise serve` with the rights of `deploy/rbac.yaml` (PodProbeMarkerGate is on by
//! default), one `kruise daemon` per simulated node with the `kruise-daemon` ServiceAccount's
//! token (`deploy/daemon-rbac.yaml`) talking to its node's CRI socket, where the test scripts the
//! exec probe's answer. Asserted:
//! - every node gets its NodePodProbe;
//! - a marker created as a user writes it (kubectl, through `webhook-config/`) gets its cleanup
//!   finalizer and `status.matchedPods`, and its probe appears in the pod's node's NodePodProbe;
//! - the daemon runs the exec probe through CRI ExecSync: the scripted success becomes the pod's
//!   condition True and the Succeeded marker labels/annotations; scripting a failure flips the
//!   condition to False, the label to the Failed value and removes the Succeeded-only annotation;
//! - a marker with a bad probe is denied by the webhook with kruise's message;
//! - deleting the marker takes its probe out of the NodePodProbe and the marker goes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::time::Duration;

use e2e_common::{Kubectl, cluster, eventually as poll, start_daemons};
use k8s_openapi::api::core::v1::Pod;
use kruise::apis::nodepodprobe::NodePodProbe;
use kruise::apis::podprobemarker::PodProbeMarker;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

async fn kubectl_create(kubectl: &Kubectl, name: &str, object: &Value) -> (bool, String) {
    let path = kubectl.dir().join(format!("{name}.json"));
    std::fs::write(&path, object.to_string()).unwrap();
    let (ok, out, err) = kubectl.run(&["create", "-f", path.to_str().unwrap()]).await;
    (ok, format!("{out}{err}"))
}

fn condition(pod: &Pod, type_: &str) -> Option<(String, String)> {
    let c = pod.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == type_)?;
    Some((c.status.clone(), c.message.clone().unwrap_or_default()))
}

fn label<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata.labels.as_ref()?.get(key).map(String::as_str)
}

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata.annotations.as_ref()?.get(key).map(String::as_str)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_probe_marker_results_become_pod_conditions_and_labels_through_real_daemons() {
    let env = start_daemons("", true).await;
    let c = cluster();
    let client = env.client.clone();
    let nodes = env.nodes.clone();

    // Every node gets its NodePodProbe.
    let npps: Api<NodePodProbe> = Api::all(client.clone());
    for node in &nodes {
        poll(&format!("NodePodProbe {node}"), Duration::from_secs(120), || async {
            npps.get_opt(node).await.ok().flatten()
        })
        .await;
    }

    let ns = c.namespace("e2e-ppm").await.unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let markers: Api<PodProbeMarker> = Api::namespaced(client.clone(), ns.name());
    let kubectl = Kubectl::new();
    let node = nodes[0].clone();
    let runtime = c.cri(&node).expect("the node's runtime");
    // The probe's command is this test's own: its answer is scripted on the node's runtime.
    let cmd = ["/bin/sh", "-c", "/e2e-ppm/healthy.sh"];
    runtime.script_exec(&cmd, 0, "all good");

    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "game", "labels": {"app": "game"}},
        "spec": {"nodeName": node, "containers": [{"name": "main", "image": "nginx:1.25"}]}
    }))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let uid = poll("pod game running", Duration::from_secs(120), || async {
        let p = pods.get("game").await.ok()?;
        (p.status.as_ref()?.phase.as_deref() == Some("Running")).then(|| p.metadata.uid.clone().unwrap())
    })
    .await;

    // A bad marker is denied with kruise's message.
    let bad = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "PodProbeMarker",
        "metadata": {"name": "bad", "namespace": ns.name()},
        "spec": {"selector": {"matchLabels": {"app": "game"}}, "probes": [{"name": "Ready",
            "containerName": "main", "probe": {"exec": {"command": ["true"]}}, "podConditionType": "x"}]}});
    let (ok, out) = kubectl_create(&kubectl, "bad", &bad).await;
    assert!(!ok, "a bad marker was admitted: {out}");
    assert!(out.contains("probe name can't be Ready"), "{out}");

    let marker = json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "PodProbeMarker",
        "metadata": {"name": "healthy", "namespace": ns.name()},
        "spec": {"selector": {"matchLabels": {"app": "game"}}, "probes": [{
            "name": "check", "containerName": "main",
            "probe": {"exec": {"command": cmd}, "periodSeconds": 1},
            "podConditionType": "game.kruise.io/healthy",
            "markerPolicy": [
                {"state": "Succeeded", "labels": {"server-healthy": "true"},
                 "annotations": {"controller.kubernetes.io/pod-deletion-cost": "10", "healthy-since": "yes"}},
                {"state": "Failed", "labels": {"server-healthy": "false"},
                 "annotations": {"controller.kubernetes.io/pod-deletion-cost": "-10"}}]}]}});
    let (ok, out) = kubectl_create(&kubectl, "healthy", &marker).await;
    assert!(ok, "{out}");

    // The manager: finalizer, matched pods, the probe in the node's NodePodProbe.
    let ppm = poll("marker finalizer and status", Duration::from_secs(120), || async {
        let m = markers.get("healthy").await.ok()?;
        let has = m.metadata.finalizers.iter().flatten().any(|f| f == "kruise.io/node-pod-probe-cleanup");
        (has && m.status.as_ref()?.matched_pods == 1).then_some(m)
    })
    .await;
    assert_eq!(ppm.status.unwrap().observed_generation, ppm.metadata.generation.unwrap());
    let npp = poll("probe in the NodePodProbe", Duration::from_secs(120), || async {
        let n = npps.get(&node).await.ok()?;
        n.spec.pod_probes.iter().any(|p| p.uid == uid).then_some(n)
    })
    .await;
    let entry = npp.spec.pod_probes.iter().find(|p| p.uid == uid).unwrap();
    assert_eq!((entry.name.as_str(), entry.namespace.as_str()), ("game", ns.name()));
    assert_eq!(entry.probes[0].name, "healthy#check");
    assert_eq!(entry.probes[0].container_name, "main");

    // The daemon probes through CRI; the manager marks the pod.
    let healthy = poll("pod marked healthy", Duration::from_secs(180), || async {
        let p = pods.get("game").await.ok()?;
        let ok = condition(&p, "game.kruise.io/healthy") == Some(("True".into(), "all good".into()))
            && label(&p, "server-healthy") == Some("true")
            && annotation(&p, "controller.kubernetes.io/pod-deletion-cost") == Some("10");
        ok.then_some(p)
    })
    .await;
    assert_eq!(annotation(&healthy, "healthy-since"), Some("yes"));
    assert!(runtime.execs().iter().any(|(_, c)| c == &cmd), "the probe ran through CRI ExecSync");
    let status = npps.get(&node).await.unwrap().status.unwrap();
    let st = status.pod_probe_statuses.iter().find(|s| s.uid == uid).unwrap();
    assert_eq!((st.probe_states[0].name.as_str(), st.probe_states[0].state.as_str()), ("healthy#check", "Succeeded"));

    // The script now fails: the condition, the label and the annotations flip.
    runtime.script_exec(&cmd, 1, "");
    let failed = poll("pod marked unhealthy", Duration::from_secs(180), || async {
        let p = pods.get("game").await.ok()?;
        let ok = condition(&p, "game.kruise.io/healthy").is_some_and(|(s, _)| s == "False")
            && label(&p, "server-healthy") == Some("false")
            && annotation(&p, "controller.kubernetes.io/pod-deletion-cost") == Some("-10");
        ok.then_some(p)
    })
    .await;
    assert_eq!(annotation(&failed, "healthy-since"), None, "the Succeeded-only annotation is removed");
    assert_eq!(failed.metadata.uid.as_deref(), Some(uid.as_str()));
    // And back.
    runtime.script_exec(&cmd, 0, "all good");
    poll("pod marked healthy again", Duration::from_secs(180), || async {
        let p = pods.get("game").await.ok()?;
        (condition(&p, "game.kruise.io/healthy")?.0 == "True" && label(&p, "server-healthy") == Some("true"))
            .then_some(())
    })
    .await;

    // Deleting the marker takes its probe out of the NodePodProbe, then the marker goes.
    markers.delete("healthy", &DeleteParams::default()).await.unwrap();
    poll("probe removed from the NodePodProbe", Duration::from_secs(120), || async {
        let n = npps.get(&node).await.ok()?;
        (!n.spec.pod_probes.iter().any(|p| p.uid == uid)).then_some(())
    })
    .await;
    poll("marker deleted", Duration::from_secs(120), || async {
        markers.get_opt("healthy").await.ok()?.is_none().then_some(())
    })
    .await;
}
