//! Which pull workers run on a node, and what each tag's status is: kruise's `realPuller.Sync`
//! and `realWorkerPool.Sync` / `GetStatus` / `UpdateStatus` (`pkg/daemon/imagepuller/
//! imagepuller_worker.go`) as plain data. The daemon keeps one [`Pools`]; each NodeImage event
//! runs [`Pools::sync`], which returns the workers to stop and to start; each worker's report
//! goes through [`Pools::update`]. Nothing here runs a pull.
//!
//! The rules, per image of `spec.images` (an image no longer there loses its pool: its workers
//! stop and its statuses are forgotten):
//! - a tag whose observed status has the same `version` and a `completionTime` is done: its
//!   status is adopted from the object (this is how a restarted daemon does not pull again, and
//!   how a tag the manager failed stops here) and a worker still running for it stops;
//! - any other tag is active: a worker runs for it at the spec's version, and a worker of another
//!   version (the tag's `version` changed: pull again) stops and a new one starts;
//! - statuses of tags no longer in the spec are forgotten.
//!
//! One difference from kruise on purpose: a report from a worker that was stopped (its version is
//! not the running one) is dropped, where kruise's pool takes intermediate reports of a stopped
//! worker until it notices. Kruise only guards the final report.

use std::collections::BTreeMap;

use crate::apis::nodeimage::v1beta1::NodeImageSpec;
use crate::apis::nodeimage::{ImageStatus, ImageTagSpec, ImageTagStatus, NodeImageStatus};

/// A tag's phase (kruise `ImagePullPhase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Queued behind `--max-concurrent-pulls`.
    Waiting,
    /// Pulling.
    Pulling,
    /// Pulled.
    Succeeded,
    /// Given up.
    Failed,
}

impl Phase {
    /// The API's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Waiting => "Waiting",
            Phase::Pulling => "Pulling",
            Phase::Succeeded => "Succeeded",
            Phase::Failed => "Failed",
        }
    }

    /// The phase of a status's `phase` string, if it is one of the four.
    pub fn parse(s: &str) -> Option<Phase> {
        [Phase::Waiting, Phase::Pulling, Phase::Succeeded, Phase::Failed].into_iter().find(|p| p.as_str() == s)
    }
}

/// Why a worker stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The image left the spec.
    ImageRemoved,
    /// The tag left the spec.
    TagRemoved,
    /// The tag's `version` changed (a new worker starts for the new version).
    VersionChanged,
    /// The object says the tag is complete at this version.
    Completed,
}

/// A change to the running workers.
#[derive(Clone, Debug, PartialEq)]
pub enum WorkerChange {
    /// Stop the worker of `image:tag` (the one at `version`).
    Stop { image: String, tag: String, version: i64, reason: StopReason },
    /// Start a worker for `image` and this tag.
    Start { image: String, tag: ImageTagSpec },
}

/// One image's pool: the version each running worker pulls, and the statuses of its tags.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pool {
    running: BTreeMap<String, i64>,
    statuses: BTreeMap<String, ImageTagStatus>,
    /// The spec's tags as last synced (kruise's `lastSyncSpec`): the tags [`Pools::status`] reports.
    spec_tags: Vec<String>,
}

/// Every image's pool on this node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pools {
    pools: BTreeMap<String, Pool>,
}

impl Pools {
    /// Aligns the pools with `spec`, given the object's `observed` status; returns the workers to
    /// stop and to start, stops first. A started worker's first report is [`Phase::Waiting`].
    pub fn sync(&mut self, spec: &NodeImageSpec, observed: Option<&NodeImageStatus>) -> Vec<WorkerChange> {
        let mut changes = Vec::new();
        let removed: Vec<String> = self.pools.keys().filter(|i| !spec.images.contains_key(*i)).cloned().collect();
        for image in removed {
            if let Some(pool) = self.pools.remove(&image) {
                for (tag, version) in pool.running {
                    changes.push(WorkerChange::Stop {
                        image: image.clone(),
                        tag,
                        version,
                        reason: StopReason::ImageRemoved,
                    });
                }
            }
        }
        let mut starts = Vec::new();
        for (image, image_spec) in &spec.images {
            let pool = self.pools.entry(image.clone()).or_default();
            let observed_tags = observed.and_then(|s| s.image_statuses.get(image)).map(|s| s.tags.as_slice());
            let mut active: BTreeMap<&str, &ImageTagSpec> = BTreeMap::new();
            for tag_spec in &image_spec.tags {
                let done = observed_tags
                    .unwrap_or_default()
                    .iter()
                    .find(|s| s.tag == tag_spec.tag && s.version == tag_spec.version && s.completion_time.is_some());
                match done {
                    Some(status) => {
                        pool.statuses.insert(status.tag.clone(), status.clone());
                    }
                    None => {
                        active.insert(tag_spec.tag.as_str(), tag_spec);
                    }
                }
            }
            let running: Vec<(String, i64)> = pool.running.iter().map(|(t, v)| (t.clone(), *v)).collect();
            for (tag, version) in running {
                let reason = match active.get(tag.as_str()) {
                    None if image_spec.tags.iter().any(|t| t.tag == tag) => Some(StopReason::Completed),
                    None => Some(StopReason::TagRemoved),
                    Some(spec) if spec.version != version => Some(StopReason::VersionChanged),
                    Some(_) => None,
                };
                if let Some(reason) = reason {
                    pool.running.remove(&tag);
                    changes.push(WorkerChange::Stop { image: image.clone(), tag, version, reason });
                }
            }
            pool.statuses.retain(|tag, _| image_spec.tags.iter().any(|t| &t.tag == tag));
            pool.spec_tags = image_spec.tags.iter().map(|t| t.tag.clone()).collect();
            for (tag, tag_spec) in active {
                if !pool.running.contains_key(tag) {
                    pool.running.insert(tag.to_string(), tag_spec.version);
                    // The worker's first report, written here so the status says Waiting at once.
                    pool.statuses.insert(
                        tag.to_string(),
                        ImageTagStatus {
                            tag: tag.to_string(),
                            phase: Phase::Waiting.as_str().into(),
                            version: tag_spec.version,
                            ..Default::default()
                        },
                    );
                    starts.push(WorkerChange::Start { image: image.clone(), tag: (*tag_spec).clone() });
                }
            }
        }
        changes.extend(starts);
        changes
    }

    /// A worker's report (kruise `UpdateStatus`); `false` (dropped) when no worker of that image,
    /// tag and version runs any more.
    pub fn update(&mut self, image: &str, status: ImageTagStatus) -> bool {
        let Some(pool) = self.pools.get_mut(image) else { return false };
        if pool.running.get(&status.tag) != Some(&status.version) {
            return false;
        }
        pool.statuses.insert(status.tag.clone(), status);
        true
    }

    /// Whether a worker of `image:tag` at `version` runs.
    pub fn is_running(&self, image: &str, tag: &str, version: i64) -> bool {
        self.pools.get(image).and_then(|p| p.running.get(tag)) == Some(&version)
    }

    /// Workers not retired (running, or finished and not yet complete in the object).
    pub fn running(&self) -> usize {
        self.pools.values().map(|p| p.running.len()).sum()
    }

    /// The status the daemon reports for `spec` (kruise `Controller.sync`): `desired` counts the
    /// spec's tags; each image of the spec with a pool reports the statuses of its synced tags,
    /// sorted by tag; the phases are counted. `firstSyncStatus` is not the daemon's: it is kept
    /// from `observed`.
    pub fn status(&self, spec: &NodeImageSpec, observed: Option<&NodeImageStatus>) -> NodeImageStatus {
        let mut status = NodeImageStatus {
            first_sync_status: observed.and_then(|o| o.first_sync_status.clone()),
            ..Default::default()
        };
        for (image, image_spec) in &spec.images {
            status.desired += i32::try_from(image_spec.tags.len()).unwrap_or(i32::MAX);
            let Some(pool) = self.pools.get(image) else { continue };
            let mut tags: Vec<ImageTagStatus> =
                pool.spec_tags.iter().filter_map(|t| pool.statuses.get(t)).cloned().collect();
            if tags.is_empty() {
                continue;
            }
            tags.sort_by(|a, b| a.tag.cmp(&b.tag));
            for t in &tags {
                match Phase::parse(&t.phase) {
                    Some(Phase::Succeeded) => status.succeeded += 1,
                    Some(Phase::Failed) => status.failed += 1,
                    Some(Phase::Pulling) => status.pulling += 1,
                    Some(Phase::Waiting) => status.waiting += 1,
                    None => {}
                }
            }
            status.image_statuses.insert(image.clone(), ImageStatus { tags });
        }
        status
    }
}

/// Whether some tag of `spec` is not finished in `status` (kruise `isImageInPulling`): fewer
/// tags succeeded or failed than desired, or a reported tag answers another version.
pub fn is_image_in_pulling(spec: &NodeImageSpec, status: &NodeImageStatus) -> bool {
    if status.succeeded + status.failed < status.desired {
        return true;
    }
    status.image_statuses.iter().any(|(image, s)| {
        s.tags.iter().any(|t| {
            spec.images.get(image).is_some_and(|i| i.tags.iter().any(|ts| ts.tag == t.tag && ts.version != t.version))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apis::nodeimage::v1beta1::ImageSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn tag(t: &str, version: i64) -> ImageTagSpec {
        ImageTagSpec { tag: t.into(), version, ..Default::default() }
    }

    fn spec(images: &[(&str, &[(&str, i64)])]) -> NodeImageSpec {
        NodeImageSpec {
            images: images
                .iter()
                .map(|(i, tags)| {
                    (
                        i.to_string(),
                        ImageSpec { tags: tags.iter().map(|(t, v)| tag(t, *v)).collect(), ..Default::default() },
                    )
                })
                .collect(),
        }
    }

    fn done(t: &str, version: i64, phase: Phase) -> ImageTagStatus {
        ImageTagStatus {
            tag: t.into(),
            phase: phase.as_str().into(),
            version,
            completion_time: Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH)),
            ..Default::default()
        }
    }

    fn observed(images: &[(&str, Vec<ImageTagStatus>)]) -> NodeImageStatus {
        NodeImageStatus {
            image_statuses: images
                .iter()
                .map(|(i, tags)| (i.to_string(), ImageStatus { tags: tags.clone() }))
                .collect(),
            ..Default::default()
        }
    }

    fn starts(changes: &[WorkerChange]) -> Vec<String> {
        changes
            .iter()
            .filter_map(|c| match c {
                WorkerChange::Start { image, tag } => Some(format!("{image}:{}@{}", tag.tag, tag.version)),
                _ => None,
            })
            .collect()
    }

    fn stops(changes: &[WorkerChange]) -> Vec<(String, StopReason)> {
        changes
            .iter()
            .filter_map(|c| match c {
                WorkerChange::Stop { image, tag, version, reason } => {
                    Some((format!("{image}:{tag}@{version}"), *reason))
                }
                _ => None,
            })
            .collect()
    }

    /// kruise `TestRealPullerSync` ("add new image", "remove image", "add image"): the pools
    /// after a sync are exactly the spec's images, and the removed image's workers stop.
    #[test]
    fn pools_follow_the_spec_images() {
        let mut pools = Pools::default();
        let base = spec(&[("nginx", &[("latest", 1)])]);
        // add new image
        let c = pools.sync(&base, None);
        assert_eq!(starts(&c), ["nginx:latest@1"]);
        assert_eq!(pools.pools.keys().collect::<Vec<_>>(), ["nginx"]);
        // remove image: a pool for redis existed
        let mut with_redis = pools.clone();
        with_redis.sync(&spec(&[("nginx", &[("latest", 1)]), ("redis", &[("7", 1)])]), None);
        let c = with_redis.sync(&base, None);
        assert_eq!(stops(&c), [("redis:7@1".to_string(), StopReason::ImageRemoved)]);
        assert!(starts(&c).is_empty(), "nginx keeps its worker");
        assert_eq!(with_redis.pools.keys().collect::<Vec<_>>(), ["nginx"]);
        // add image
        let c = pools.sync(&spec(&[("nginx", &[("latest", 1)]), ("busybox", &[("1.15", 1)])]), None);
        assert_eq!(starts(&c), ["busybox:1.15@1"]);
        assert_eq!(pools.pools.keys().collect::<Vec<_>>(), ["busybox", "nginx"]);
    }

    /// The worker pool's rules, row by row (kruise `realWorkerPool.Sync`).
    #[test]
    fn tags_start_stop_and_keep() {
        struct Row {
            name: &'static str,
            before: &'static [(&'static str, i64)],
            spec: &'static [(&'static str, i64)],
            observed: Vec<ImageTagStatus>,
            starts: &'static [&'static str],
            stops: &'static [(&'static str, StopReason)],
        }
        let rows = [
            Row {
                name: "same tag and version: the worker keeps running",
                before: &[("1", 1)],
                spec: &[("1", 1)],
                observed: vec![],
                starts: &[],
                stops: &[],
            },
            Row {
                name: "version changed: stop the old worker, start one at the new version",
                before: &[("1", 1)],
                spec: &[("1", 2)],
                observed: vec![],
                starts: &["app:1@2"],
                stops: &[("app:1@1", StopReason::VersionChanged)],
            },
            Row {
                name: "tag removed",
                before: &[("1", 1), ("2", 1)],
                spec: &[("2", 1)],
                observed: vec![],
                starts: &[],
                stops: &[("app:1@1", StopReason::TagRemoved)],
            },
            Row {
                name: "completed in the object at this version: adopted, the worker stops",
                before: &[("1", 1)],
                spec: &[("1", 1)],
                observed: vec![done("1", 1, Phase::Failed)],
                starts: &[],
                stops: &[("app:1@1", StopReason::Completed)],
            },
            Row {
                name: "completed at an older version: pulled again",
                before: &[],
                spec: &[("1", 2)],
                observed: vec![done("1", 1, Phase::Succeeded)],
                starts: &["app:1@2"],
                stops: &[],
            },
            Row {
                name: "a restarted daemon does not pull what the object says is done",
                before: &[],
                spec: &[("1", 1), ("2", 1)],
                observed: vec![done("1", 1, Phase::Succeeded)],
                starts: &["app:2@1"],
                stops: &[],
            },
            Row {
                name: "pulling in the object (no completionTime): pulled again after a restart",
                before: &[],
                spec: &[("1", 1)],
                observed: vec![ImageTagStatus {
                    tag: "1".into(),
                    phase: "Pulling".into(),
                    version: 1,
                    ..Default::default()
                }],
                starts: &["app:1@1"],
                stops: &[],
            },
        ];
        for row in rows {
            let mut pools = Pools::default();
            pools.sync(&spec(&[("app", row.before)]), None);
            let c = pools.sync(&spec(&[("app", row.spec)]), Some(&observed(&[("app", row.observed.clone())])));
            assert_eq!(starts(&c), row.starts, "{}", row.name);
            let want: Vec<(String, StopReason)> = row.stops.iter().map(|(s, r)| (s.to_string(), *r)).collect();
            assert_eq!(stops(&c), want, "{}", row.name);
            // Every spec tag has a status right after the sync (Waiting or adopted).
            let status = pools.status(&spec(&[("app", row.spec)]), None);
            assert_eq!(status.image_statuses["app"].tags.len(), row.spec.len(), "{}", row.name);
        }
    }

    /// kruise `TestRealPullerSyncWithLimitedPool`'s phases as counts: 3 images, 2 pulling and 1
    /// waiting; then one succeeds and the third pulls; then all succeed.
    #[test]
    fn status_counts_phases_and_sorts_tags() {
        let s = spec(&[("nginx", &[("latest", 1)]), ("busybox", &[("latest", 1)]), ("redis", &[("latest", 1)])]);
        let mut pools = Pools::default();
        pools.sync(&s, None);
        let pulling =
            |t: &str| ImageTagStatus { tag: t.into(), phase: "Pulling".into(), version: 1, ..Default::default() };
        assert!(pools.update("nginx", pulling("latest")));
        assert!(pools.update("busybox", pulling("latest")));
        let st = pools.status(&s, None);
        assert_eq!((st.desired, st.pulling, st.waiting, st.succeeded, st.failed), (3, 2, 1, 0, 0));
        assert!(is_image_in_pulling(&s, &st));
        pools.update("nginx", done("latest", 1, Phase::Succeeded));
        pools.update("redis", pulling("latest"));
        let st = pools.status(&s, None);
        assert_eq!((st.desired, st.pulling, st.waiting, st.succeeded), (3, 2, 0, 1));
        pools.update("busybox", done("latest", 1, Phase::Succeeded));
        pools.update("redis", done("latest", 1, Phase::Failed));
        let st = pools.status(&s, None);
        assert_eq!((st.desired, st.pulling, st.waiting, st.succeeded, st.failed), (3, 0, 0, 2, 1));
        assert!(!is_image_in_pulling(&s, &st));

        // Tags sorted by tag (kruise `SortStatusImageTagsV1beta1`), only the spec's tags.
        let s = spec(&[("app", &[("b", 1), ("a", 1), ("c", 1)])]);
        let mut pools = Pools::default();
        pools.sync(&s, None);
        let st = pools.status(&s, None);
        let tags: Vec<&str> = st.image_statuses["app"].tags.iter().map(|t| t.tag.as_str()).collect();
        assert_eq!(tags, ["a", "b", "c"]);
        // No image statuses at all: the map is empty (omitted), desired still counts the spec.
        let st = Pools::default().status(&s, None);
        assert!(st.image_statuses.is_empty());
        assert_eq!(st.desired, 3);
    }

    #[test]
    fn reports_of_stopped_workers_are_dropped() {
        let mut pools = Pools::default();
        pools.sync(&spec(&[("app", &[("1", 1)])]), None);
        pools.sync(&spec(&[("app", &[("1", 2)])]), None);
        let old = ImageTagStatus { tag: "1".into(), phase: "Pulling".into(), version: 1, ..Default::default() };
        assert!(!pools.update("app", old), "version 1's worker was stopped");
        assert!(!pools.update("gone", ImageTagStatus { tag: "1".into(), version: 2, ..Default::default() }));
        assert!(pools.is_running("app", "1", 2));
        assert_eq!(pools.running(), 1);
        // A finished worker stays until the object says its tag is complete (kruise keeps it in
        // `pullWorkers`): a sync before the status write lands does not pull again.
        pools.update("app", done("1", 2, Phase::Succeeded));
        let c = pools.sync(&spec(&[("app", &[("1", 2)])]), None);
        assert!(c.is_empty(), "{c:?}");
        let c = pools
            .sync(&spec(&[("app", &[("1", 2)])]), Some(&observed(&[("app", vec![done("1", 2, Phase::Succeeded)])])));
        assert_eq!(stops(&c), [("app:1@2".to_string(), StopReason::Completed)]);
        assert_eq!(pools.running(), 0);
    }

    #[test]
    fn in_pulling_when_a_reported_version_is_behind() {
        let s = spec(&[("app", &[("1", 2)])]);
        let mut st = observed(&[("app", vec![done("1", 1, Phase::Succeeded)])]);
        st.desired = 1;
        st.succeeded = 1;
        assert!(is_image_in_pulling(&s, &st));
        st.image_statuses.get_mut("app").unwrap().tags[0].version = 2;
        assert!(!is_image_in_pulling(&s, &st));
    }
}
