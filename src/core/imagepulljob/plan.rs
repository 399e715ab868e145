//! One ImagePullJob round (kruise `imagepulljob_controller.go` `Reconcile`), with the secret
//! sync done by the caller first ([`super::secrets`]):
//! 1. a job being deleted: release its secrets, drop the protection finalizer;
//! 2. a completed job: the same, then delete it once `ttlSecondsAfterFinished` has passed
//!    (or look again when it will have);
//! 3. add the protection finalizer (kruise adds it to every running job);
//! 4. pick the target NodeImages ([`super::targets`]), compute the status ([`super::status`]);
//! 5. write the job's tag into at most `parallelism − active` more NodeImages ([`super::sync`]);
//! 6. write the status when it changed, else look again when the deadline will have passed.
//!
//! Every write is planned against what the cache showed; a NodeImage patch is pinned to the
//! version it was computed from, so nothing here can overwrite a change it did not see.

use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::PROTECTION_FINALIZER;
use super::status::{Finished, calculate, deadline_requeue, finished};
use super::sync::{NodeImagePatch, plan_writes};
use super::targets::{select, targeting};
use crate::apis::imagepulljob::ImagePullJobStatus;
use crate::apis::imagepulljob::v1beta1::ImagePullJob;
use crate::apis::nodeimage::v1beta1::{NodeImage, ReferenceObject};

/// What a round reads.
pub struct Input<'a> {
    pub job: &'a ImagePullJob,
    /// Every NodeImage in the cache, sorted by name.
    pub node_images: &'a [Arc<NodeImage>],
    /// The pods of the job's namespace (read only with `podSelector`).
    pub pods: &'a [Arc<Pod>],
    /// The job's pull secrets as synced into `kruise-daemon-config`.
    pub secrets: &'a [ReferenceObject],
    pub now: Timestamp,
}

/// What a round does.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    /// Release the job's synced secrets and drop the protection finalizer.
    pub finalize: bool,
    /// Delete the job (ttlSecondsAfterFinished).
    pub delete: bool,
    /// Add the protection finalizer.
    pub add_finalizer: bool,
    /// The NodeImage writes, in name order.
    pub node_images: Vec<NodeImagePatch>,
    /// The new status, when it changed.
    pub status: Option<ImagePullJobStatus>,
    /// The NodeImages the job targets (their names; the NodeImage controller looks at them when
    /// the job goes, as kruise's `PopCachedNodeImagesForJob`).
    pub targets: Vec<String>,
    /// Look again after this long.
    pub requeue: Option<SignedDuration>,
}

/// Why a round cannot be planned.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("parse selector error: {0}")]
    Selector(#[from] crate::compat::selector::SelectorError),
    #[error("invalid image {image}: {source}")]
    Image { image: String, source: crate::compat::image::ImageError },
}

fn has_finalizer(job: &ImagePullJob) -> bool {
    job.metadata.finalizers.iter().flatten().any(|f| f == PROTECTION_FINALIZER)
}

/// The round.
pub fn plan(input: &Input<'_>) -> Result<Plan, PlanError> {
    let job = input.job;
    let mut plan = Plan::default();
    if job.metadata.deletion_timestamp.is_some() {
        plan.finalize = has_finalizer(job);
        return Ok(plan);
    }
    if let Some(done) = finished(job, input.now) {
        plan.finalize = has_finalizer(job);
        match done {
            Finished::Delete => plan.delete = true,
            Finished::WaitTtl(left) => plan.requeue = Some(left),
            Finished::Keep => {}
        }
        return Ok(plan);
    }
    plan.add_finalizer = !has_finalizer(job);
    let t = targeting(job)?;
    let targets = select(&t, input.node_images, input.pods);
    plan.targets = targets.iter().filter_map(|ni| ni.metadata.name.clone()).collect();
    let image_err = |source| PlanError::Image { image: job.spec.fields.image.clone(), source };
    let observed = calculate(job, &targets, input.secrets, input.now).map_err(image_err)?;
    plan.node_images = plan_writes(job, &observed, &targets, input.secrets, input.now).map_err(image_err)?;
    if job.status.as_ref() != Some(&observed.status) {
        plan.status = Some(observed.status);
    } else {
        plan.requeue = deadline_requeue(job, &observed.status, input.now);
    }
    Ok(plan)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::imagepulljob::testkit::{at, job, node_image};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use serde_json::json;

    fn nodes(n: usize) -> Vec<Arc<NodeImage>> {
        (0..n).map(|i| Arc::new(node_image(&format!("n{i}"), &[]))).collect()
    }

    fn run(j: &ImagePullJob, nis: &[Arc<NodeImage>], now: i64) -> Plan {
        plan(&Input { job: j, node_images: nis, pods: &[], secrets: &[], now: at(now) }).unwrap()
    }

    #[test]
    fn a_new_job_gets_its_finalizer_first_writes_and_status() {
        let j = job("j", json!({"image": "nginx:1", "parallelism": 2}));
        let p = run(&j, &nodes(3), 5);
        assert!(p.add_finalizer);
        assert_eq!(p.node_images.iter().map(|w| w.name.as_str()).collect::<Vec<_>>(), ["n0", "n1"]);
        let st = p.status.unwrap();
        assert_eq!((st.desired, st.active, st.start_time), (3, 0, Some(Time(at(5)))));
        assert_eq!(p.targets, ["n0", "n1", "n2"]);
    }

    #[test]
    fn deleting_completed_and_ttl_rows() {
        let mut j = job("j", json!({"image": "nginx:1", "completionPolicy": {"ttlSecondsAfterFinished": 10}}));
        j.metadata.finalizers = Some(vec![PROTECTION_FINALIZER.into()]);
        j.status = Some(ImagePullJobStatus { completion_time: Some(Time(at(100))), ..Default::default() });
        let p = run(&j, &nodes(1), 105);
        assert_eq!((p.finalize, p.delete, p.requeue), (true, false, Some(SignedDuration::from_secs(5))));
        assert!(p.node_images.is_empty() && p.status.is_none());
        let p = run(&j, &nodes(1), 110);
        assert!(p.delete);
        j.metadata.deletion_timestamp = Some(Time(at(111)));
        let p = run(&j, &nodes(1), 111);
        assert_eq!((p.finalize, p.delete), (true, false));
        j.metadata.finalizers = None;
        assert_eq!(run(&j, &nodes(1), 112), Plan::default(), "nothing left to do");
    }

    #[test]
    fn an_unchanged_status_is_not_written_and_the_deadline_is_waited_for() {
        let mut j =
            job("j", json!({"image": "nginx:1", "parallelism": 0, "completionPolicy": {"activeDeadlineSeconds": 100}}));
        j.metadata.finalizers = Some(vec![PROTECTION_FINALIZER.into()]);
        let first = run(&j, &nodes(2), 10);
        j.status = first.status.clone();
        let again = run(&j, &nodes(2), 20);
        assert_eq!(again.status, None);
        assert!(again.node_images.is_empty(), "parallelism 0 pauses");
        assert_eq!(again.requeue, Some(SignedDuration::from_secs(90)));
    }

    #[test]
    fn a_bad_selector_or_image_is_an_error() {
        let j = job("j", json!({"image": "UPPER:1"}));
        assert!(matches!(
            plan(&Input { job: &j, node_images: &[], pods: &[], secrets: &[], now: at(0) }),
            Err(PlanError::Image { .. })
        ));
        let j =
            job("j", json!({"image": "nginx", "selector": {"matchExpressions": [{"key": "a", "operator": "Bad"}]}}));
        assert!(matches!(
            plan(&Input { job: &j, node_images: &[], pods: &[], secrets: &[], now: at(0) }),
            Err(PlanError::Selector(_))
        ));
    }
}
