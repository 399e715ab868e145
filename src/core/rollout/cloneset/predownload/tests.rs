//! Pre-download through whole CloneSet rollouts on the shared fake API and kubelet
//! ([`crate::core::rollout::cloneset::testkit`]), as the controller runs it: each round plans
//! the rollout, then plans pre-download on what the round observed (the CloneSet before this
//! round's status write, the revisions stored before it), applies the rollout's writes, then the
//! pre-download writes one by one (a refused one does not stop the others, as in kruise). This is
//! kruise's e2e case "pre-download for new image" (`test/e2e/apps/v1alpha1/cloneset.go`) with
//! partition 3, the canary threshold, and the cleanup when the rollout completes.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::json;

use super::round;
use crate::apis::imagepulljob::ImagePullJob;
use crate::core::features::{FeatureGates, Gate};
use crate::core::predownload::{CREATED, IGNORED};
use crate::core::rollout::actions::{ActionKind, Write};
use crate::core::rollout::cloneset::testkit::{World, cloneset, spec};

const PARALLELISM: &str = "apps.kruise.io/image-predownload-parallelism";
const MIN_READY: &str = "apps.kruise.io/image-predownload-min-updated-ready-pods";

fn ready_world(replicas: i32, strategy: serde_json::Value, annotations: &[(&str, &str)]) -> World {
    let mut cs = cloneset(spec(replicas, "nginx:1", strategy));
    cs.metadata.annotations = Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
    let mut w = World::new(cs);
    w.gates = FeatureGates::default().with(Gate::PreDownloadImageForInPlaceUpdate, true);
    for _ in 0..10 {
        step(&mut w);
    }
    assert_eq!(w.unready(), 0, "all ready before the test starts");
    assert!(w.image_pull_jobs.is_empty(), "a settled CloneSet has no jobs");
    w
}

/// One controller round with pre-download; returns the Events it would record.
fn step(w: &mut World) -> Vec<String> {
    let observed = w.cs.clone();
    let stored = w.revisions.clone();
    let rollout = w.plan();
    let revisions: Vec<_> = stored.iter().collect();
    let jobs = w.image_pull_jobs.clone();
    let jobs: Vec<&ImagePullJob> = jobs.iter().collect();
    let pd = round(&observed, &w.gates, &revisions, &rollout.current_revision, &rollout.update_revision, &jobs);
    w.apply(&rollout).unwrap_or_else(|e| panic!("{e:?}"));
    let mut events = Vec::new();
    for a in &pd.actions {
        let result = w.cluster.apply_write(&mut w.cs, &a.writes[0], &mut BTreeMap::new());
        if let Write::CreateImagePullJob { job } = &a.writes[0] {
            match result {
                Ok(()) => events.push(format!("CreatedImagePullJob {}", job.metadata.name.clone().unwrap_or_default())),
                Err(e) if e.0.contains("AlreadyExists") => {}
                Err(e) => events.push(format!("FailedCreateImagePullJob {e:?}")),
            }
        }
    }
    w.kubelet();
    w.tick(1);
    events
}

fn set_image(w: &mut World, image: &str) {
    if let Some(spec) = w.cs.spec.template.spec.as_mut() {
        spec.containers[0].image = Some(image.into());
    }
    w.cs.metadata.generation = Some(w.cs.metadata.generation.unwrap_or(1) + 1);
}

fn revision_labels(w: &World, name: &str) -> BTreeMap<String, String> {
    w.revisions
        .iter()
        .find(|r| r.metadata.name.as_deref() == Some(name))
        .and_then(|r| r.metadata.labels.clone())
        .unwrap_or_default()
}

#[test]
fn one_job_with_the_image_and_parallelism_then_deleted_when_the_rollout_completes() {
    let mut w = ready_world(5, json!({"type": "InPlaceIfPossible", "partition": 3}), &[(PARALLELISM, "2")]);
    set_image(&mut w, "nginx:2");
    let mut created = Vec::new();
    for _ in 0..20 {
        created.extend(step(&mut w));
        assert!(w.image_pull_jobs.len() <= 1, "never more than one job: {:?}", w.image_pull_jobs);
    }
    let update = w.cs.status.clone().unwrap_or_default().update_revision;
    assert_eq!(created, [format!("CreatedImagePullJob {update}-main")], "created once, in one round");
    let job = &w.image_pull_jobs[0];
    assert_eq!(job.metadata.name.as_deref(), Some(format!("{update}-main").as_str()));
    assert_eq!(job.spec.image, "nginx:2");
    assert_eq!(job.spec.parallelism, Some(IntOrString::Int(2)));
    let owner = &job.metadata.owner_references.clone().unwrap_or_default()[0];
    assert_eq!((owner.kind.as_str(), owner.uid.as_str(), owner.controller), ("CloneSet", "uid-sample", Some(true)));
    let selector = serde_json::to_value(&job.spec.pod_selector).unwrap_or_default();
    assert_eq!(selector["matchExpressions"][0]["operator"], "NotIn");
    assert_eq!(selector["matchExpressions"][0]["values"][0], json!(update));
    assert_eq!(revision_labels(&w, &update).get(CREATED).map(String::as_str), Some("true"));
    assert_eq!(w.at_revision(&update).len(), 2, "replicas - partition pods updated meanwhile");

    // partition 0: the rollout completes and the job goes.
    w.cs.spec.update_strategy.partition = Some(IntOrString::Int(0));
    for _ in 0..30 {
        step(&mut w);
    }
    let st = w.cs.status.clone().unwrap_or_default();
    assert_eq!(st.current_revision, st.update_revision);
    assert_eq!(w.at_revision(&update).len(), 5);
    assert!(w.image_pull_jobs.is_empty(), "deleted: {:?}", w.image_pull_jobs);
}

#[test]
fn a_canary_threshold_of_2_waits_for_2_updated_ready_pods() {
    let mut w = ready_world(
        5,
        json!({"type": "InPlaceIfPossible", "partition": 2, "maxUnavailable": 1}),
        &[(PARALLELISM, "2"), (MIN_READY, "2")],
    );
    set_image(&mut w, "nginx:2");
    let mut first_job_at = None;
    for i in 0..30 {
        let ready_before = w.cs.status.clone().unwrap_or_default().updated_ready_replicas;
        let status_revision = w.cs.status.clone().unwrap_or_default().update_revision;
        let had = w.image_pull_jobs.len();
        step(&mut w);
        if had == 0 && !w.image_pull_jobs.is_empty() {
            assert!(ready_before >= 2, "created when the observed status had {ready_before} updated ready pods");
            assert!(!status_revision.is_empty());
            first_job_at = Some(i);
        }
        if w.image_pull_jobs.is_empty() {
            assert!(ready_before < 2 || i == 0, "no job yet although {ready_before} updated pods were ready");
        }
    }
    assert!(first_job_at.is_some(), "a job once 2 updated pods were ready");
    assert_eq!(w.image_pull_jobs.len(), 1);
    assert_eq!(w.image_pull_jobs[0].spec.parallelism, Some(IntOrString::Int(2)));
}

#[test]
fn a_recreate_cloneset_labels_its_revision_ignored_and_creates_nothing() {
    let mut w = ready_world(5, json!({"type": "ReCreate", "partition": 3}), &[]);
    set_image(&mut w, "nginx:2");
    for _ in 0..10 {
        step(&mut w);
    }
    let update = w.cs.status.clone().unwrap_or_default().update_revision;
    assert!(w.image_pull_jobs.is_empty());
    assert_eq!(revision_labels(&w, &update).get(IGNORED).map(String::as_str), Some("true"));
}

#[test]
fn a_settled_cloneset_without_jobs_has_nothing_to_delete() {
    // The controller does not call the planner with the gate off; the planner itself only
    // decides. Here: the enablement the controller checks.
    assert!(!crate::core::predownload::enabled(&FeatureGates::default(), true));
    let w = ready_world(5, json!({"type": "InPlaceIfPossible", "partition": 3}), &[]);
    let revisions: Vec<_> = w.revisions.iter().collect();
    let name = w.cs.status.clone().unwrap_or_default().update_revision;
    let settled = round(&w.cs, &w.gates, &revisions, &name, &name, &[]);
    assert!(settled.plan.delete_owned && settled.actions.is_empty(), "nothing of ours to delete");
    assert!(settled.actions.iter().all(|a| a.kind != ActionKind::CreateImagePullJob));
}
