//! The takeover of an Advanced StatefulSet Go kruise v1.8 left (issue 27, "adopted without a
//! single pod update"): the objects Go writes — its ControllerRevisions (names and data bytes from
//! the Go-generated fixtures of `core::rollout::statefulset::revision`), pods as
//! `newVersionedStatefulSetPod`, the pod webhook and an in-place update leave them, claims and
//! status — are built with the reconciler stopped, then ours starts and must write no pod.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use super::*;
use k8s_openapi::api::core::v1::Pod;
use kruise::apis::statefulset::v1beta1::StatefulSet;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

/// Go's revision of the set `takeover` whose template runs `image`: name and data bytes as kruise
/// v1.8 computes them (`src/core/rollout/statefulset/revision/go_fixtures.json`, written by the Go
/// program beside it, not by this crate), and the template.
fn go_revision_fixture(image: &str) -> (String, String, Value) {
    let all: Vec<Value> =
        serde_json::from_str(include_str!("../../src/core/rollout/statefulset/revision/go_fixtures.json")).unwrap();
    let f = all
        .into_iter()
        .find(|f| f["statefulSet"] == "takeover" && f["spec"]["template"]["spec"]["containers"][0]["image"] == image)
        .expect("the takeover fixture");
    (f["name"].as_str().unwrap().to_string(), f["data"].as_str().unwrap().to_string(), f["spec"]["template"].clone())
}

/// A set created by Go kruise v1.8 is taken over without a single pod write. With the reconciler
/// stopped, the test builds what Go leaves after a set created at nginx:1.24 was moved to
/// nginx:1.25 in place: the set (template defaults as kruise's webhook injects them, a claim
/// template, Retain/Retain), its two ControllerRevisions (Go's names and data bytes, the
/// short-hash label, owned by the set, revisions 1 and 2), the claims, three pods as
/// `newVersionedStatefulSetPod` and the pod webhook write them (generateName, owner,
/// `controller-revision-hash` = the full revision name, pod-name and pod-index labels, lifecycle
/// state Normal with its timestamp, hostname and subdomain, the claim volume, readiness gates
/// InPlaceUpdateReady and KruisePodReady) — pods 1 and 2 updated in place, with the
/// `apps.kruise.io/inplace-update-state` Go left on them — run by the simulated kubelet, their
/// gate conditions True as kruise sets them, and the set's status as Go writes it. Then our
/// reconciler starts, and once it has observed a new generation (a revisionHistoryLimit edit) and
/// a few more seconds have passed: no pod was created, deleted or modified (resourceVersions
/// unchanged, the watcher saw nothing), the revisions are Go's (none created, none bumped), and
/// the claims are untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_left_by_go_kruise_is_taken_over_without_a_pod_write() {
    go_takeover("asts-takeover", 0).await;
}

/// [`a_set_left_by_go_kruise_is_taken_over_without_a_pod_write`] with `partition: 1`: Go left
/// takeover-0 at the old revision (created from its template, nginx:1.24, by a kruise older than
/// the pod-index label and lifecycle states), the status naming the old revision current and the
/// new one the update revision; our reconciler leaves it so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_set_left_by_go_kruise_is_taken_over_without_a_pod_write() {
    go_takeover("asts-takeover-p", 1).await;
}

async fn go_takeover(prefix: &str, partition: i32) {
    use k8s_openapi::api::apps::v1::ControllerRevision;
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;
    use kube::api::{ApiResource, DynamicObject};
    let t = Scenario::start(prefix).await;
    t.stop_reconciler().await;
    let ns = t.ns().to_string();
    let (old_revision, old_data, old_template) = go_revision_fixture("nginx:1.24");
    let (revision, data, template) = go_revision_fixture("nginx:1.25");

    // The set, as posted through Go kruise's mutating webhook.
    let dynamic: Api<DynamicObject> =
        Api::namespaced_with(t.client.clone(), &ns, &ApiResource::erase::<StatefulSet>(&()));
    let claim_spec = json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
        "volumeMode": "Filesystem"});
    let created = dynamic
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet",
                "metadata": {"name": "takeover"},
                "spec": {
                    "replicas": 3,
                    "serviceName": "takeover",
                    "selector": {"matchLabels": {"app": "takeover"}},
                    "template": template,
                    "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": claim_spec}],
                    "podManagementPolicy": "Parallel",
                    "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": partition,
                        "maxUnavailable": 1, "podUpdatePolicy": "InPlaceIfPossible", "minReadySeconds": 0}},
                    "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
                    "revisionHistoryLimit": 10,
                },
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(created.data["spec"]["template"], template, "the API server stored the template Go hashed");
    let set_uid = created.metadata.uid.clone().unwrap();
    let generation = created.metadata.generation.unwrap();
    let owner = json!({"apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "name": "takeover",
        "uid": set_uid, "controller": true, "blockOwnerDeletion": true});

    // Its revisions, Go's data bytes sent verbatim.
    for (n, (name, data)) in [(&old_revision, &old_data), (&revision, &data)].into_iter().enumerate() {
        let hash = name.strip_prefix("takeover-").unwrap();
        let meta = json!({"name": name, "namespace": ns, "ownerReferences": [owner],
            "labels": {"app": "takeover", "controller-revision-hash": hash}});
        let body = format!(
            r#"{{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{meta},"data":{data},"revision":{}}}"#,
            n + 1
        );
        let url = format!("/apis/apps/v1/namespaces/{ns}/controllerrevisions");
        let request =
            hyper::Request::post(url).header("content-type", "application/json").body(body.into_bytes()).unwrap();
        t.client.request_text(request).await.unwrap();
        let stored = hyper::Request::get(format!("/apis/apps/v1/namespaces/{ns}/controllerrevisions/{name}"))
            .body(Vec::new())
            .unwrap();
        let stored = t.client.request_text(stored).await.unwrap();
        assert!(stored.contains(&format!(r#""data":{data}"#)), "the revision holds Go's bytes: {stored}");
    }

    // The claims, then the pods.
    let claims_api: Api<PersistentVolumeClaim> = Api::namespaced(t.client.clone(), &ns);
    let pods_api: Api<Pod> = Api::namespaced(t.client.clone(), &ns);
    for i in 0..3 {
        // Below the partition at the old revision, as created; the others moved in place.
        let in_place = i >= partition;
        let (template, revision) = if in_place { (&template, &revision) } else { (&old_template, &old_revision) };
        let mut pod_spec = template["spec"].clone();
        pod_spec["readinessGates"].as_array_mut().unwrap().push(json!({"conditionType": "KruisePodReady"}));
        let (pod, claim) = (format!("takeover-{i}"), format!("data-takeover-{i}"));
        let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": claim, "labels": {"app": "takeover"}}, "spec": claim_spec});
        claims_api.create(&PostParams::default(), &serde_json::from_value(pvc).unwrap()).await.unwrap();
        let mut spec = pod_spec.clone();
        spec["hostname"] = json!(pod);
        spec["subdomain"] = json!("takeover");
        spec["volumes"] = json!([{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]);
        let mut annotations = json!({"team": "storage", "lifecycle.apps.kruise.io/timestamp": "2026-01-05T10:00:00Z"});
        if in_place {
            // Updated in place from nginx:1.24: the state Go's `updatePodInPlace` and
            // `defaultPatchUpdateSpecToPod` leave (encoding/json, fields in declaration order).
            let old_image = kruise_testenv::kubelet::runtime::image_id("docker.io/library/nginx:1.24");
            let state = format!(
                r#"{{"revision":"{revision}","updateTimestamp":"2026-01-06T09:00:00Z","lastContainerStatuses":{{"main":{{"imageID":"{old_image}"}}}},"updateImages":true,"containerBatchesRecord":[{{"timestamp":"2026-01-06T09:00:00Z","containers":["main"]}}]}}"#
            );
            annotations["apps.kruise.io/inplace-update-state"] = json!(state);
            annotations["lifecycle.apps.kruise.io/timestamp"] = json!("2026-01-06T09:00:05Z");
        }
        let mut labels = json!({"app": "takeover", "controller-revision-hash": revision,
            "statefulset.kubernetes.io/pod-name": pod, "apps.kubernetes.io/pod-index": i.to_string(),
            "lifecycle.apps.kruise.io/state": "Normal"});
        if !in_place {
            // An older pod, from a kruise before the pod-index label and lifecycle states:
            // kruise v1.8 leaves it so (identityMatches does not look at the index; no state is
            // no transition).
            let old = labels.as_object_mut().unwrap();
            old.remove("apps.kubernetes.io/pod-index");
            old.remove("lifecycle.apps.kruise.io/state");
            annotations.as_object_mut().unwrap().remove("lifecycle.apps.kruise.io/timestamp");
        }
        let p = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": pod, "generateName": "takeover-", "ownerReferences": [owner],
                "labels": labels, "annotations": annotations,
            },
            "spec": spec});
        pods_api.create(&PostParams::default(), &serde_json::from_value(p).unwrap()).await.unwrap();
    }
    // Running (the kubelet), then the gates' conditions as kruise's controllers set them.
    t.eventually("3 running pods", |pods| {
        (pods.len() == 3 && pods.iter().all(|p| condition(p, "ContainersReady").as_deref() == Some("True")))
            .then_some(())
    })
    .await;
    for i in 0..3 {
        let at = "2026-01-05T10:00:05Z";
        let conditions = json!({"status": {"conditions": [
            {"type": "InPlaceUpdateReady", "status": "True", "lastTransitionTime": at},
            {"type": "KruisePodReady", "status": "True", "lastTransitionTime": at}]}});
        pods_api
            .patch_status(&format!("takeover-{i}"), &PatchParams::default(), &Patch::Strategic(&conditions))
            .await
            .unwrap();
    }
    t.eventually("3 ready pods", |pods| (pods.len() == 3 && all_ready(pods)).then_some(())).await;
    let (current, current_replicas, updated) =
        if partition > 0 { (&old_revision, partition, 3 - partition) } else { (&revision, 3, 3) };
    // `updateStatefulSet`'s status, `updatePVCStatus`'s volumeClaims included.
    let mut status = json!({"observedGeneration": generation, "replicas": 3, "readyReplicas": 3,
        "availableReplicas": 3, "currentReplicas": current_replicas, "updatedReplicas": updated,
        "updatedReadyReplicas": updated, "updatedAvailableReplicas": updated, "currentRevision": current,
        "updateRevision": revision, "collisionCount": 0, "labelSelector": "app=takeover",
        "volumeClaims": [{"volumeClaimName": "data", "compatibleReplicas": 3, "compatibleReadyReplicas": 3}]});
    let go_status = json!({"status": status});
    asts(&t).patch_status("takeover", &PatchParams::default(), &Patch::Merge(&go_status)).await.unwrap();

    // What Go left, once the kubelet is done with it.
    let snapshot = || async {
        let pods: BTreeMap<String, (String, String)> = t
            .pods()
            .await
            .into_iter()
            .map(|p| (p.metadata.name.unwrap(), (p.metadata.uid.unwrap(), p.metadata.resource_version.unwrap())))
            .collect();
        let claims: BTreeMap<String, (String, String)> = claims_api
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|c| (c.metadata.name.unwrap(), (c.metadata.uid.unwrap(), c.metadata.resource_version.unwrap())))
            .collect();
        (pods, claims)
    };
    poll("3 bound claims", || async {
        let list = claims_api.list(&Default::default()).await.ok()?.items;
        (list.len() == 3 && list.iter().all(|c| c.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound")))
            .then_some(())
    })
    .await;
    t.history.mark().await;
    let (go_pods, go_claims) = snapshot().await;
    poll("the watcher to see the pods as listed", || async { (t.history.versions() == go_pods).then_some(()) }).await;
    let from = t.history.seen();

    // Our reconciler takes over.
    t.start_reconciler().await;
    let edit = json!({"spec": {"revisionHistoryLimit": 11}});
    let edited = asts(&t).patch("takeover", &PatchParams::default(), &Patch::Merge(&edit)).await.unwrap();
    let observed = edited.metadata.generation.unwrap();
    assert!(observed > generation);
    let st = poll("the reconciler to observe the new generation", || async {
        let s = asts(&t).get("takeover").await.ok()?.status?;
        (s.observed_generation == observed).then_some(s)
    })
    .await;
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;

    let (pods, claims) = snapshot().await;
    assert_eq!(pods, go_pods, "no pod was created, deleted or written");
    assert_eq!(claims, go_claims, "no claim was created, deleted or written");
    let seen: Vec<String> = t.history.log().await[from..]
        .iter()
        .map(|e| format!("{:?} {} {:?}", e.kind, e.name(), e.pod.metadata.resource_version))
        .collect();
    assert!(seen.is_empty(), "the watcher saw pod changes after the takeover: {seen:?}");
    let revisions: Api<ControllerRevision> = Api::namespaced(t.client.clone(), &ns);
    let mut revisions: Vec<(String, i64)> = revisions
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|r| (r.metadata.name.unwrap(), r.revision))
        .collect();
    revisions.sort_by_key(|(_, n)| *n);
    assert_eq!(
        revisions,
        [(old_revision.clone(), 1), (revision.clone(), 2)],
        "Go's revisions: none created, none bumped"
    );
    assert_eq!((&st.current_revision, &st.update_revision), (current, &revision));
    // The status is Go's but for the generation observed.
    status["observedGeneration"] = json!(observed);
    assert_eq!(dynamic.get("takeover").await.unwrap().data["status"], status);
}
