//! Container meta end to end (issue 30 item 2 "done means": a CloneSet whose env reads a pod label
//! is updated in place when the label changes and the rollout completes) on the real control plane
//! of `testenv/`: `kruise serve` (its CloneSet controller and pod webhook) and one `kruise daemon`
//! per simulated node (`DaemonWatchingPod` and `InPlaceUpdateEnvFromMetadata` on by default),
//! talking to its node's CRI socket; the simulated kubelet starts each container with the env its
//! downward-API references resolve to and prints it for CRI `ExecSync env`. Asserted: every pod
//! gets kruise's `apps.kruise.io/runtime-containers-meta` report (its container ids, the env hash
//! measured in the container); after the template's label changes, the daemons stop the
//! containers through CRI, the kubelet restarts them with the new value, the daemons report the
//! new hash and the rollout completes — same pod uids, restartCount + 1, the new label, the report's
//! env hash equal to kruise's expected hash of the new pod; then the same for an Advanced
//! StatefulSet (`podUpdatePolicy: InPlaceIfPossible`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_common;

use std::collections::BTreeMap;
use std::time::Duration;

use e2e_common::{cluster, eventually as poll, start_daemons};
use k8s_openapi::api::core::v1::Pod;
use kruise::apis::cloneset::CloneSet;
use kruise::apis::statefulset::v1beta1::StatefulSet;
use kruise::core::inplace::refresh::env_from_metadata_hash;
use kruise::core::inplace::state::read_runtime_meta;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;

fn status_of(pod: &Pod, name: &str) -> Option<(String, i32)> {
    let s = pod.status.as_ref()?.container_statuses.as_ref()?.iter().find(|c| c.name == name)?;
    Some((s.container_id.clone().filter(|id| !id.is_empty())?, s.restart_count))
}

/// Whether the daemon's report names the pod's current container and holds the env hash kruise
/// expects of it.
fn reported(pod: &Pod) -> bool {
    let Ok(Some(meta)) = read_runtime_meta(pod) else { return false };
    let Some((id, _)) = status_of(pod, "main") else { return false };
    let container = &pod.spec.as_ref().unwrap().containers[0];
    meta.containers.iter().any(|m| {
        m.name == "main"
            && m.container_id == id
            && m.hashes.extracted_env_from_metadata_hash == env_from_metadata_hash(container, pod)
    })
}

fn label(p: &Pod, key: &str) -> String {
    p.metadata.labels.as_ref().and_then(|l| l.get(key)).cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_env_from_metadata_change_is_applied_in_place_by_the_daemons() {
    let env = start_daemons("", true).await;
    let c = cluster();
    let client = env.client.clone();

    let ns = c.namespace("e2e-containermeta").await.unwrap();
    let sets: Api<CloneSet> = Api::namespaced(client.clone(), ns.name());
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns.name());
    let cs: CloneSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web", "ver": "v1"}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.25", "env": [
                    {"name": "VER", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['ver']"}}}]}]}
            },
            "updateStrategy": {"type": "InPlaceIfPossible"}
        }
    }))
    .unwrap();
    sets.create(&PostParams::default(), &cs).await.unwrap();

    let list = ListParams::default().labels("app=web");
    // Two ready pods, each reported by its node's daemon.
    let before: BTreeMap<String, (String, i32)> =
        poll("2 pods reported by their daemons", Duration::from_secs(240), || {
            let (pods, list) = (pods.clone(), list.clone());
            async move {
                let items = pods.list(&list).await.ok()?.items;
                let ready = items.len() == 2 && items.iter().all(reported);
                ready.then(|| {
                    items
                        .iter()
                        .map(|p| {
                            (
                                p.metadata.name.clone().unwrap(),
                                (p.metadata.uid.clone().unwrap(), status_of(p, "main").unwrap().1),
                            )
                        })
                        .collect()
                })
            }
        })
        .await;
    let first = sets.get("web").await.unwrap().status.unwrap().update_revision;

    // The label the env reads changes in the template.
    let patch = json!({"spec": {"template": {"metadata": {"labels": {"app": "web", "ver": "v2"}}}}});
    sets.patch("web", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    poll("the rollout to complete", Duration::from_secs(300), || async {
        let s = sets.get("web").await.ok()?.status?;
        let done = s.update_revision != first
            && s.updated_ready_replicas == 2
            && s.ready_replicas == 2
            && s.replicas == 2
            && s.current_revision == s.update_revision;
        done.then_some(())
    })
    .await;

    let after = pods.list(&list).await.unwrap().items;
    assert_eq!(after.len(), 2);
    for p in &after {
        let name = p.metadata.name.clone().unwrap();
        let (uid, restarts) = before.get(&name).unwrap_or_else(|| panic!("{name} is not one of the original pods"));
        assert_eq!(p.metadata.uid.as_ref(), Some(uid), "{name} updated in place");
        assert_eq!(status_of(p, "main").unwrap().1, restarts + 1, "{name} restarted once");
        assert_eq!(label(p, "ver"), "v2");
        assert!(reported(p), "{name}: the daemon reports the new container with the new env hash");
    }
    // The same for an Advanced StatefulSet (the shared pod-update machine).
    let asts: Api<StatefulSet> = Api::namespaced(client.clone(), ns.name());
    let set: StatefulSet = serde_json::from_value(json!({
        "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 2,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db", "ver": "v1"}},
                "spec": {
                    "readinessGates": [{"conditionType": "InPlaceUpdateReady"}],
                    "containers": [{"name": "main", "image": "nginx:1.25", "env": [
                        {"name": "VER", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['ver']"}}}]}]}
            },
            "podManagementPolicy": "Parallel",
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"podUpdatePolicy": "InPlaceIfPossible"}}
        }
    }))
    .unwrap();
    asts.create(&PostParams::default(), &set).await.unwrap();
    let db = ListParams::default().labels("app=db");
    let before: BTreeMap<String, (String, i32)> =
        poll("2 StatefulSet pods reported by their daemons", Duration::from_secs(240), || {
            let (pods, db) = (pods.clone(), db.clone());
            async move {
                let items = pods.list(&db).await.ok()?.items;
                let ready = items.len() == 2 && items.iter().all(reported);
                ready.then(|| {
                    items
                        .iter()
                        .map(|p| {
                            (
                                p.metadata.name.clone().unwrap(),
                                (p.metadata.uid.clone().unwrap(), status_of(p, "main").unwrap().1),
                            )
                        })
                        .collect()
                })
            }
        })
        .await;
    let first = asts.get("db").await.unwrap().status.unwrap().update_revision;
    let patch = json!({"spec": {"template": {"metadata": {"labels": {"app": "db", "ver": "v2"}}}}});
    asts.patch("db", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    poll("the StatefulSet rollout to complete", Duration::from_secs(300), || async {
        let s = asts.get("db").await.ok()?.status?;
        let done = s.update_revision != first
            && s.updated_ready_replicas == 2
            && s.ready_replicas == 2
            && s.current_revision == s.update_revision;
        done.then_some(())
    })
    .await;
    for p in &pods.list(&db).await.unwrap().items {
        let name = p.metadata.name.clone().unwrap();
        let (uid, restarts) = before.get(&name).unwrap_or_else(|| panic!("{name} is not one of the original pods"));
        assert_eq!(p.metadata.uid.as_ref(), Some(uid), "{name} updated in place");
        assert_eq!(status_of(p, "main").unwrap().1, restarts + 1, "{name} restarted once");
        assert_eq!(label(p, "ver"), "v2");
        assert!(reported(p), "{name}: the daemon reports the new container with the new env hash");
    }

    // No pod was recreated on the way: the RecreateForEnvFromMetadata event is absent.
    let events: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(client.clone(), ns.name());
    let recreated = events.list(&ListParams::default()).await.unwrap().items;
    assert!(
        !recreated.iter().any(|e| e.reason.as_deref() == Some("RecreateForEnvFromMetadata")),
        "a pod was recreated"
    );
}
