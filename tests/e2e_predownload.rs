//! Image pre-download of CloneSet rollouts end to end on the real control plane of `testenv/`
//! (spec §7; kruise's e2e "pre-download for new image", `test/e2e/apps/v1alpha1/cloneset.go`):
//! the CloneSet reconciler runs in-process with `--feature-gates
//! PreDownloadImageForInPlaceUpdate=true` (the scenario harness of `tests/e2e_cloneset.rs`), the
//! ImagePullJob CRD of `deploy/crds` is served, so the reconciler's discovery finds the kind
//! (the jobs are written and read at v1beta1, the storage version: no conversion webhook runs here). No
//! daemon is needed: the job only has to exist, with the image and parallelism, and be deleted
//! when the rollout completes.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod e2e_cloneset_support;

use e2e_cloneset_support::*;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kruise::apis::cloneset::CloneSet;
use kruise::apis::imagepulljob::v1beta1::ImagePullJob;
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde_json::json;

const GATES: &str = "PreDownloadImageForInPlaceUpdate=true";

/// The jobs of the namespace, read at v1beta1 (the storage version: this harness runs no
/// conversion webhook).
async fn jobs(t: &Scenario) -> Vec<ImagePullJob> {
    let api: Api<ImagePullJob> = Api::namespaced(t.client.clone(), t.ns());
    api.list(&ListParams::default()).await.unwrap().items
}

async fn annotate(t: &Scenario, annotations: serde_json::Value) {
    let api: Api<CloneSet> = Api::namespaced(t.client.clone(), t.ns());
    api.patch("web", &PatchParams::default(), &Patch::Merge(json!({"metadata": {"annotations": annotations}})))
        .await
        .unwrap();
}

async fn set_image(t: &Scenario, image: &str) {
    t.patch_spec("web", json!({"template": {"spec": {"containers": [{"name": "main", "image": image}]}}})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_job_with_the_image_and_parallelism_deleted_when_the_rollout_completes() {
    let t = Scenario::start_with_gates("cs-predl", GATES).await;
    t.create("web", spec(5, "nginx:1.25", json!({"type": "InPlaceIfPossible", "partition": 3}))).await;
    annotate(&t, json!({"apps.kruise.io/image-predownload-parallelism": "2"})).await;
    t.wait_status("web", "5 ready", |s| s.ready_replicas == 5 && s.updated_replicas == 5).await;
    assert!(jobs(&t).await.is_empty(), "no job while nothing rolls out");

    set_image(&t, "nginx:1.26").await;
    let job = poll("one ImagePullJob", || async {
        let j = jobs(&t).await;
        (j.len() == 1).then(|| j[0].clone())
    })
    .await;
    let st = t.wait_status("web", "2 updated", |s| s.updated_replicas == 2 && s.updated_ready_replicas == 2).await;
    assert_eq!(job.metadata.name.as_deref(), Some(format!("{}-main", st.update_revision).as_str()));
    assert_eq!(job.spec.fields.image, "nginx:1.26");
    assert_eq!(job.spec.fields.parallelism, Some(IntOrString::Int(2)));
    let owner = &job.metadata.owner_references.clone().unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str(), owner.controller), ("CloneSet", "web", Some(true)));
    assert_eq!(jobs(&t).await.len(), 1, "exactly one job");
    let (notes, _) = poll("the CreatedImagePullJob event", || async {
        let (notes, count) = t.events("web", "CreatedImagePullJob").await;
        (count >= 1).then_some((notes, count))
    })
    .await;
    let name = job.metadata.name.clone().unwrap();
    assert!(notes.contains(&format!("created ImagePullJob {name} for image: nginx:1.26")), "{notes:?}");

    // The rollout completes: the job goes.
    t.patch_spec("web", json!({"updateStrategy": {"partition": 0}})).await;
    t.wait_status("web", "rollout complete", |s| {
        s.updated_ready_replicas == 5 && s.current_revision == s.update_revision
    })
    .await;
    poll("the job deleted", || async { jobs(&t).await.is_empty().then_some(()) }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_threshold_of_2_creates_no_job_until_2_updated_pods_are_ready() {
    let t = Scenario::start_with_gates("cs-predl-canary", GATES).await;
    t.create("web", spec(5, "nginx:1.25", json!({"type": "InPlaceIfPossible", "partition": 2, "maxUnavailable": 1})))
        .await;
    annotate(
        &t,
        json!({"apps.kruise.io/image-predownload-parallelism": "2",
               "apps.kruise.io/image-predownload-min-updated-ready-pods": "2"}),
    )
    .await;
    t.wait_status("web", "5 ready", |s| s.ready_replicas == 5 && s.updated_replicas == 5).await;

    set_image(&t, "nginx:1.26").await;
    let job = poll("a job once 2 updated pods are ready", || async {
        // Jobs first, then the status: a job seen with fewer than 2 updated ready pods in the
        // status read after it was created too early.
        let j = jobs(&t).await;
        let st = t.get("web").await.status.unwrap_or_default();
        let job = j.first()?.clone();
        assert!(st.updated_ready_replicas >= 2, "a job before 2 updated pods were ready: {st:?}");
        Some(job)
    })
    .await;
    // And from the times: the job was created no earlier than the second pod of the new revision
    // (named by the job, `<revision>-main`) became ready, so the rollout ran without a job until
    // the threshold. (The API's times are in seconds; a poll of the status alone can miss the
    // moment between the first and the second pod on a busy machine.)
    let revision = job.metadata.name.as_deref().and_then(|n| n.strip_suffix("-main")).unwrap().to_string();
    let mut ready_at: Vec<_> = t
        .pods()
        .await
        .iter()
        .filter(|p| p.metadata.labels.as_ref().and_then(|l| l.get("controller-revision-hash")) == Some(&revision))
        .filter_map(|p| {
            let conditions = p.status.as_ref()?.conditions.as_ref()?;
            let ready = conditions.iter().find(|c| c.type_ == "Ready" && c.status == "True")?;
            ready.last_transition_time.as_ref().map(|t| t.0)
        })
        .collect();
    ready_at.sort();
    assert!(ready_at.len() >= 2, "2 pods of {revision} ready: {ready_at:?}");
    let created = job.metadata.creation_timestamp.as_ref().unwrap().0;
    assert!(created >= ready_at[1], "the job ({created}) before the second updated pod was ready ({ready_at:?})");
    let j = jobs(&t).await;
    assert_eq!(j.len(), 1);
    assert_eq!(j[0].spec.fields.parallelism, Some(IntOrString::Int(2)));
}
