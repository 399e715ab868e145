//! Pre-download through whole Advanced StatefulSet rollouts on the shared fake API and kubelet
//! ([`crate::core::rollout::statefulset::testkit`]), as the controller runs it
//! (`controller/statefulset.rs`): each round plans the rollout, then plans pre-download on what
//! the round observed (the set before this round's status write, the revisions stored before
//! it), sends the pre-download writes one by one (a refused one does not stop the others, as in
//! kruise's `doPreDownload`), then the rollout's writes. The CloneSet's rollout test
//! (`cloneset/predownload/tests.rs`, kruise's e2e "pre-download for new image") for an ASTS:
//! 5 replicas, partition 3, parallelism "2" make exactly one job with parallelism 2; the canary
//! threshold; the jobs deleted when the rollout completes.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::json;

use super::round;
use crate::apis::imagepulljob::ImagePullJob;
use crate::core::features::{FeatureGates, Gate};
use crate::core::predownload::{CREATED, IGNORED};
use crate::core::rollout::actions::Write;
use crate::core::rollout::statefulset::testkit::{World, stateful_set};

const PARALLELISM: &str = "apps.kruise.io/image-predownload-parallelism";
const MIN_READY: &str = "apps.kruise.io/image-predownload-min-updated-ready-pods";

fn ready_world(replicas: i32, rolling: serde_json::Value, annotations: &[(&str, &str)]) -> World {
    let mut set = stateful_set(
        replicas,
        "nginx:1",
        json!({"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": rolling}}),
    );
    set.metadata.annotations = Some(annotations.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect());
    let mut w = World::new(set);
    w.gates = FeatureGates::default().with(Gate::PreDownloadImageForInPlaceUpdate, true);
    for _ in 0..30 {
        step(&mut w);
    }
    assert_eq!(w.pods.len(), replicas as usize, "all pods before the test starts");
    assert_eq!(w.set.status.clone().unwrap_or_default().ready_replicas, replicas, "all ready before the test starts");
    assert!(w.image_pull_jobs.is_empty(), "a settled set has no jobs");
    w
}

/// One controller round with pre-download; returns the Events it would record.
fn step(w: &mut World) -> Vec<String> {
    let observed = w.set.clone();
    let stored = w.revisions.clone();
    let rollout = w.plan();
    assert!(rollout.errors.is_empty(), "errors {:?}", rollout.errors);
    let revisions: Vec<_> = stored.iter().collect();
    let jobs = w.image_pull_jobs.clone();
    let jobs: Vec<&ImagePullJob> = jobs.iter().collect();
    let pd = round(&observed, &w.gates, &revisions, &rollout.current_revision, &rollout.update_revision, &jobs);
    let mut events = Vec::new();
    for a in &pd.actions {
        let result = w.cluster.apply_write(&mut w.set, &a.writes[0], &mut BTreeMap::new());
        if let Write::CreateImagePullJob { job } = &a.writes[0] {
            match result {
                Ok(()) => events.push(format!("CreatedImagePullJob {}", job.metadata.name.clone().unwrap_or_default())),
                Err(e) if e.0.contains("AlreadyExists") => {}
                Err(e) => events.push(format!("FailedCreateImagePullJob {e:?}")),
            }
        }
    }
    w.apply(&rollout).unwrap_or_else(|e| panic!("{e:?}"));
    w.kubelet();
    w.advance(1);
    events
}

fn set_image(w: &mut World, image: &str) {
    w.edit(|s| {
        if let Some(spec) = s.spec.template.spec.as_mut() {
            spec.containers[0].image = Some(image.into());
        }
    });
}

fn set_partition(w: &mut World, partition: i32) {
    w.edit(|s| {
        if let Some(r) = s.spec.update_strategy.rolling_update.as_mut() {
            r.partition = Some(partition);
        }
    });
}

fn revision_labels(w: &World, name: &str) -> BTreeMap<String, String> {
    w.revisions
        .iter()
        .find(|r| r.metadata.name.as_deref() == Some(name))
        .and_then(|r| r.metadata.labels.clone())
        .unwrap_or_default()
}

fn at_revision(w: &World, revision: &str) -> usize {
    w.pods
        .iter()
        .filter(|p| {
            p.metadata.labels.as_ref().and_then(|l| l.get("controller-revision-hash")).map(String::as_str)
                == Some(revision)
        })
        .count()
}

#[test]
fn one_job_with_the_image_and_parallelism_then_deleted_when_the_rollout_completes() {
    let mut w = ready_world(
        5,
        json!({"partition": 3, "maxUnavailable": 1, "podUpdatePolicy": "InPlaceIfPossible"}),
        &[(PARALLELISM, "2")],
    );
    set_image(&mut w, "nginx:2");
    let mut created = Vec::new();
    for _ in 0..30 {
        created.extend(step(&mut w));
        assert!(w.image_pull_jobs.len() <= 1, "never more than one job: {:?}", w.image_pull_jobs);
    }
    let update = w.set.status.clone().unwrap_or_default().update_revision;
    assert_eq!(created, [format!("CreatedImagePullJob {update}-main")], "created once, in one round");
    let job = &w.image_pull_jobs[0];
    assert_eq!(job.metadata.name.as_deref(), Some(format!("{update}-main").as_str()));
    assert_eq!(job.spec.image, "nginx:2");
    assert_eq!(job.spec.parallelism, Some(IntOrString::Int(2)));
    let owner = &job.metadata.owner_references.clone().unwrap_or_default()[0];
    assert_eq!(
        (owner.api_version.as_str(), owner.kind.as_str(), owner.uid.as_str(), owner.controller),
        ("apps.kruise.io/v1beta1", "StatefulSet", "uid-web", Some(true))
    );
    let selector = serde_json::to_value(&job.spec.pod_selector).unwrap_or_default();
    assert_eq!(selector["matchExpressions"][0]["operator"], "NotIn");
    assert_eq!(selector["matchExpressions"][0]["values"][0], json!(update));
    assert_eq!(revision_labels(&w, &update).get(CREATED).map(String::as_str), Some("true"));
    assert_eq!(at_revision(&w, &update), 2, "replicas - partition pods updated meanwhile");
    assert!(w.pods.iter().all(|p| p.metadata.deletion_timestamp.is_none()), "updated in place");

    // partition 0: the rollout completes and the job goes.
    set_partition(&mut w, 0);
    for _ in 0..40 {
        step(&mut w);
    }
    let st = w.set.status.clone().unwrap_or_default();
    assert_eq!(st.current_revision, st.update_revision);
    assert_eq!(at_revision(&w, &update), 5);
    assert!(w.image_pull_jobs.is_empty(), "deleted: {:?}", w.image_pull_jobs);
}

#[test]
fn a_canary_threshold_of_2_waits_for_2_updated_ready_pods() {
    let mut w = ready_world(
        5,
        json!({"partition": 2, "maxUnavailable": 1, "podUpdatePolicy": "InPlaceIfPossible"}),
        &[(PARALLELISM, "2"), (MIN_READY, "2")],
    );
    set_image(&mut w, "nginx:2");
    let mut first_job_at = None;
    for i in 0..40 {
        let status = w.set.status.clone().unwrap_or_default();
        let had = w.image_pull_jobs.len();
        step(&mut w);
        if had == 0 && !w.image_pull_jobs.is_empty() {
            assert!(
                status.updated_ready_replicas >= 2,
                "created when the observed status had {} updated ready pods",
                status.updated_ready_replicas
            );
            first_job_at = Some(i);
        }
        if w.image_pull_jobs.is_empty() {
            assert!(
                status.updated_ready_replicas < 2 || i == 0,
                "no job yet although {} updated pods were ready",
                status.updated_ready_replicas
            );
        }
    }
    assert!(first_job_at.is_some(), "a job once 2 updated pods were ready");
    assert_eq!(w.image_pull_jobs.len(), 1);
    assert_eq!(w.image_pull_jobs[0].spec.parallelism, Some(IntOrString::Int(2)));
}

#[test]
fn recreate_pods_label_the_revision_ignored_and_create_nothing() {
    let mut w = ready_world(5, json!({"partition": 3, "maxUnavailable": 1, "podUpdatePolicy": "ReCreate"}), &[]);
    set_image(&mut w, "nginx:2");
    for _ in 0..30 {
        step(&mut w);
    }
    let update = w.set.status.clone().unwrap_or_default().update_revision;
    assert!(w.image_pull_jobs.is_empty());
    assert_eq!(revision_labels(&w, &update).get(IGNORED).map(String::as_str), Some("true"));
}
