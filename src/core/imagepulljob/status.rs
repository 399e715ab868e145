//! An ImagePullJob's status from the NodeImages it targets (kruise `imagepulljob_controller.go`
//! `calculateStatus`, `formatStatusMessage`), and what a finished job waits for (`Reconcile`:
//! `ttlSecondsAfterFinished`, the requeue for `activeDeadlineSeconds`).
//!
//! A node counts for the job once one of its NodeImage's tags for the job's image carries the
//! job's uid among its owners; the NodeImage status of that tag at the same version says
//! Succeeded, Failed, or anything else (pulling). A node without the tag (or without every synced
//! pull secret) is "not synced": it waits for [`super::sync`]. With `completionPolicy: Always`
//! the job completes once every desired node succeeded or failed, or fails every unfinished node
//! with "job exceeds activeDeadlineSeconds" when the deadline passes first.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::{PHASE_FAILED, PHASE_SUCCEEDED, image_name_tag, is_never};
use crate::apis::imagepulljob::ImagePullJobStatus;
use crate::apis::imagepulljob::v1beta1::ImagePullJob;
use crate::apis::nodeimage::v1beta1::{NodeImage, ReferenceObject};
use crate::compat::image::ImageError;

/// What the status round found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    /// The new status.
    pub status: ImagePullJobStatus,
    /// NodeImages without the job's tag, or missing one of its secrets (sorted; empty once the
    /// job completed).
    pub not_synced: BTreeSet<String>,
    /// Of those, the ones without the job's tag at all (a write there starts a pull).
    pub untagged: BTreeSet<String>,
}

/// The version of the job's tag in `ni` when the tag lists the job's uid among its owners.
pub fn owned_tag_version(ni: &NodeImage, image: &str, tag: &str, uid: &str) -> Option<i64> {
    let spec = ni.spec.images.get(image)?;
    // kruise looks at the first tag spec with this tag only.
    let t = spec.tags.iter().find(|t| t.tag == tag)?;
    t.owner_references.iter().any(|r| r.uid.as_deref() == Some(uid)).then_some(t.version)
}

/// The phase the NodeImage reports for `tag` of `image` at `version`: `None` when it reports none
/// for that version yet.
pub fn tag_phase<'a>(ni: &'a NodeImage, image: &str, tag: &str, version: i64) -> Option<&'a str> {
    let st = ni.status.as_ref()?.image_statuses.get(image)?;
    let t = st.tags.iter().find(|t| t.tag == tag)?;
    (t.version == version).then_some(t.phase.as_str())
}

fn contains(list: &[ReferenceObject], r: &ReferenceObject) -> bool {
    list.iter().any(|o| o.namespace == r.namespace && o.name == r.name)
}

/// `calculateStatus` at `now` over the job's target NodeImages and its synced secrets.
pub fn calculate(
    job: &ImagePullJob,
    targets: &[Arc<NodeImage>],
    secrets: &[ReferenceObject],
    now: Timestamp,
) -> Result<Observed, ImageError> {
    let old = job.status.clone().unwrap_or_default();
    let start = old.start_time.clone().unwrap_or(Time(now));
    let mut status = ImagePullJobStatus {
        start_time: Some(start.clone()),
        desired: i32::try_from(targets.len()).unwrap_or(i32::MAX),
        ..Default::default()
    };
    let (image, tag) = image_name_tag(&job.spec.fields.image)?;
    let uid = job.metadata.uid.as_deref().unwrap_or("");
    let (mut pulling, mut succeeded, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    let mut not_synced = BTreeSet::new();
    let mut untagged = BTreeSet::new();
    for ni in targets {
        let name = ni.metadata.name.clone().unwrap_or_default();
        if let Some(spec) = ni.spec.images.get(&image)
            && secrets.iter().any(|s| !contains(&spec.pull_secrets, s))
        {
            not_synced.insert(name.clone());
        }
        let Some(version) = owned_tag_version(ni, &image, &tag, uid) else {
            not_synced.insert(name.clone());
            untagged.insert(name);
            continue;
        };
        match tag_phase(ni, &image, &tag, version) {
            Some(PHASE_SUCCEEDED) => succeeded.push(name),
            Some(PHASE_FAILED) => failed.push(name),
            _ => pulling.push(name),
        }
    }
    let done = succeeded.len() + failed.len();
    let policy = &job.spec.fields.completion_policy;
    if !is_never(job)
        && let Some(deadline) = policy.active_deadline_seconds
        && usize::try_from(status.desired).unwrap_or(0) != done
        && SignedDuration::from_secs(deadline) <= now.duration_since(start.0)
    {
        status.completion_time = Some(Time(now));
        status.succeeded = count(&succeeded);
        failed.extend(pulling);
        failed.extend(not_synced.iter().cloned());
        status.failed = count(&failed);
        status.failed_nodes = failed;
        status.message = "job exceeds activeDeadlineSeconds".into();
        return Ok(Observed { status, ..Default::default() });
    }
    status.active = count(&pulling);
    status.succeeded = count(&succeeded);
    status.failed = count(&failed);
    status.failed_nodes = failed;
    if !is_never(job) && status.desired - status.succeeded - status.failed == 0 {
        status.completion_time = Some(Time(now));
    }
    status.message = message(&status);
    status.failed_nodes.sort();
    Ok(Observed { status, not_synced, untagged })
}

fn count<T>(v: &[T]) -> i32 {
    i32::try_from(v.len()).unwrap_or(i32::MAX)
}

/// `formatStatusMessage`.
pub fn message(status: &ImagePullJobStatus) -> String {
    if status.completion_time.is_some() {
        return "job has completed".into();
    }
    if status.desired == 0 {
        return "job is running, no progress".into();
    }
    let done = f64::from(status.succeeded + status.failed);
    format!("job is running, progress {:.1}%", 100.0 * done / f64::from(status.desired))
}

/// What becomes of a completed job at `now`: deleted (`ttlSecondsAfterFinished` passed), looked
/// at again after the time left, or kept (`None`: no TTL).
#[derive(Clone, Debug, PartialEq)]
pub enum Finished {
    Delete,
    WaitTtl(SignedDuration),
    Keep,
}

/// `Reconcile`'s branch for a job whose `status.completionTime` is set.
pub fn finished(job: &ImagePullJob, now: Timestamp) -> Option<Finished> {
    let done = job.status.as_ref()?.completion_time.as_ref()?;
    let Some(ttl) = job.spec.fields.completion_policy.ttl_seconds_after_finished else {
        return Some(Finished::Keep);
    };
    let left = SignedDuration::from_secs(i64::from(ttl)) - now.duration_since(done.0);
    Some(if left <= SignedDuration::ZERO { Finished::Delete } else { Finished::WaitTtl(left) })
}

/// The requeue kruise asks for a running Always job with a deadline: the time left, at least 1 s.
pub fn deadline_requeue(job: &ImagePullJob, status: &ImagePullJobStatus, now: Timestamp) -> Option<SignedDuration> {
    if is_never(job) {
        return None;
    }
    let deadline = job.spec.fields.completion_policy.active_deadline_seconds?;
    let start = status.start_time.as_ref()?;
    let left = SignedDuration::from_secs(deadline) - now.duration_since(start.0);
    Some(left.max(SignedDuration::from_secs(1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::imagepulljob::testkit::{at, job, node_image, tagged};
    use serde_json::json;

    fn running_job(spec: serde_json::Value, start: i64) -> ImagePullJob {
        let mut j = job("j", spec);
        j.status = Some(ImagePullJobStatus { start_time: Some(Time(at(start))), ..Default::default() });
        j
    }

    #[test]
    fn counts_each_node_by_its_tag_status_at_the_tag_version() {
        let j = running_job(json!({"image": "nginx:1", "parallelism": 2}), 0);
        let uid = "uid-j";
        let nis: Vec<Arc<NodeImage>> = vec![
            Arc::new(tagged(node_image("n1", &[]), "nginx", "1", 2, &[uid], Some(("Succeeded", 2)))),
            Arc::new(tagged(node_image("n2", &[]), "nginx", "1", 1, &[uid], Some(("Failed", 1)))),
            // The status answers an older version: still pulling.
            Arc::new(tagged(node_image("n3", &[]), "nginx", "1", 3, &[uid], Some(("Succeeded", 2)))),
            Arc::new(tagged(node_image("n4", &[]), "nginx", "1", 1, &[uid], Some(("Pulling", 1)))),
            // Another job's tag: not synced for this one.
            Arc::new(tagged(node_image("n5", &[]), "nginx", "1", 1, &["uid-other"], Some(("Succeeded", 1)))),
            Arc::new(node_image("n6", &[])),
        ];
        let o = calculate(&j, &nis, &[], at(10)).unwrap();
        assert_eq!((o.status.desired, o.status.active, o.status.succeeded, o.status.failed), (6, 2, 1, 1));
        assert_eq!(o.status.failed_nodes, ["n2"]);
        assert_eq!(o.status.start_time, Some(Time(at(0))));
        assert_eq!(o.status.completion_time, None);
        assert_eq!(o.status.message, "job is running, progress 33.3%");
        assert_eq!(o.not_synced.iter().collect::<Vec<_>>(), ["n5", "n6"]);
        assert_eq!(o.untagged, o.not_synced);
    }

    #[test]
    fn a_missing_secret_leaves_a_tagged_node_not_synced_but_counted() {
        let j = running_job(json!({"image": "nginx:1"}), 0);
        let ni = tagged(node_image("n1", &[]), "nginx", "1", 1, &["uid-j"], None);
        let secret =
            ReferenceObject { namespace: "kruise-daemon-config".into(), name: "s-abc".into(), mode: "batch".into() };
        let o = calculate(&j, &[Arc::new(ni)], &[secret], at(1)).unwrap();
        assert_eq!(o.status.active, 1);
        assert_eq!(o.not_synced.iter().collect::<Vec<_>>(), ["n1"]);
        assert!(o.untagged.is_empty());
    }

    #[test]
    fn completion_deadline_and_never() {
        let all_done = |spec| {
            let j = running_job(spec, 0);
            let nis = vec![
                Arc::new(tagged(node_image("n1", &[]), "nginx", "1", 0, &["uid-j"], Some(("Succeeded", 0)))),
                Arc::new(tagged(node_image("n2", &[]), "nginx", "1", 0, &["uid-j"], Some(("Failed", 0)))),
            ];
            calculate(&j, &nis, &[], at(100)).unwrap().status
        };
        let s = all_done(json!({"image": "nginx:1"}));
        assert_eq!((s.completion_time, s.message.as_str()), (Some(Time(at(100))), "job has completed"));
        let s = all_done(json!({"image": "nginx:1", "completionPolicy": {"type": "Never"}}));
        assert_eq!(s.completion_time, None, "Never keeps following nodes");
        assert_eq!(s.message, "job is running, progress 100.0%");

        // Deadline passed with one node pulling and one not synced.
        let j = running_job(json!({"image": "nginx:1", "completionPolicy": {"activeDeadlineSeconds": 60}}), 0);
        let nis = vec![
            Arc::new(tagged(node_image("n1", &[]), "nginx", "1", 0, &["uid-j"], Some(("Succeeded", 0)))),
            Arc::new(tagged(node_image("n2", &[]), "nginx", "1", 0, &["uid-j"], None)),
            Arc::new(node_image("n3", &[])),
        ];
        let before = calculate(&j, &nis, &[], at(59)).unwrap();
        assert_eq!(before.status.completion_time, None);
        assert_eq!(deadline_requeue(&j, &before.status, at(59)), Some(SignedDuration::from_secs(1)));
        let o = calculate(&j, &nis, &[], at(60)).unwrap();
        assert_eq!(o.status.completion_time, Some(Time(at(60))));
        assert_eq!((o.status.succeeded, o.status.failed, o.status.active), (1, 2, 0));
        assert_eq!(o.status.failed_nodes, ["n2", "n3"]);
        assert_eq!(o.status.message, "job exceeds activeDeadlineSeconds");
        assert!(o.not_synced.is_empty(), "a failed job syncs nothing more");
    }

    #[test]
    fn no_targets_completes_at_once_and_a_new_job_starts_now() {
        let j = job("j", json!({"image": "nginx:1"}));
        let s = calculate(&j, &[], &[], at(5)).unwrap().status;
        assert_eq!(
            (s.desired, s.start_time.clone(), s.completion_time.clone()),
            (0, Some(Time(at(5))), Some(Time(at(5))))
        );
        assert_eq!(message(&ImagePullJobStatus::default()), "job is running, no progress");
    }

    #[test]
    fn finished_jobs_wait_their_ttl() {
        let mut j = job("j", json!({"image": "nginx:1", "completionPolicy": {"ttlSecondsAfterFinished": 30}}));
        assert_eq!(finished(&j, at(0)), None);
        j.status = Some(ImagePullJobStatus { completion_time: Some(Time(at(100))), ..Default::default() });
        assert_eq!(finished(&j, at(110)), Some(Finished::WaitTtl(SignedDuration::from_secs(20))));
        assert_eq!(finished(&j, at(130)), Some(Finished::Delete));
        j.spec.fields.completion_policy.ttl_seconds_after_finished = None;
        assert_eq!(finished(&j, at(1000)), Some(Finished::Keep));
    }
}
