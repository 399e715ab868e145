//! A SidecarSet's status (spec §4.12 item 3; kruise `sidecarset_processor.go` `calculateStatus`,
//! `updateSidecarSetStatus`, `inconsistentStatus`): matched, updated (the pod's hash entry is the
//! set's hash), ready (every sidecar runs what the spec says and the pod is running and ready,
//! idle hot-upgrade containers on the empty image), updated-and-ready, the latest revision, the
//! collision count and the observed generation. Written only when it changed, as a diff of the
//! status subresource pinned to the observed resourceVersion.

use super::pods::Facts;
use crate::apis::SidecarSet;
use crate::apis::sidecarset::SidecarSetStatus;
use crate::core::rollout::actions::Write;
use crate::core::rollout::plan::status_write;

/// `calculateStatus`.
pub fn calculate<'f>(
    set: &SidecarSet,
    facts: impl IntoIterator<Item = &'f Facts>,
    latest: &str,
    collision_count: i32,
) -> SidecarSetStatus {
    let mut status = SidecarSetStatus {
        observed_generation: set.metadata.generation.unwrap_or(0),
        latest_revision: latest.to_string(),
        collision_count: Some(collision_count),
        ..Default::default()
    };
    for f in facts {
        status.matched_pods += 1;
        if f.updated {
            status.updated_pods += 1;
        }
        if f.consistent && f.ready {
            status.ready_pods += 1;
            if f.updated {
                status.updated_ready_pods += 1;
            }
        }
    }
    status
}

/// The status write, `None` when nothing changed.
pub fn write(set: &SidecarSet, status: &SidecarSetStatus) -> Option<Write> {
    let name = set.metadata.name.as_deref().unwrap_or("");
    let rv = set.metadata.resource_version.as_deref().unwrap_or("");
    status_write(set, name, rv, |s| s.status = Some(status.clone()), false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::rollout::actions::Pin;
    use crate::core::rollout::sidecarset::testkit::*;
    use serde_json::json;

    fn facts(updated: bool, consistent: bool, ready: bool) -> Facts {
        Facts { updated, consistent, ready, ..Default::default() }
    }

    /// kruise `sidecarset_controller_test.go` / `TestCalculateStatus`-style rows.
    #[test]
    fn counts() {
        let mut set = sidecar_set(json!({"containers": [{"name": "c", "image": "a:1"}]}));
        set.metadata.generation = Some(4);
        let all = [
            facts(true, true, true),
            facts(true, false, true),
            facts(true, true, false),
            facts(false, true, true),
            facts(false, false, false),
        ];
        let s = calculate(&set, &all, "r-1", 2);
        assert_eq!(
            (s.matched_pods, s.updated_pods, s.ready_pods, s.updated_ready_pods),
            (5, 3, 2, 1)
        );
        assert_eq!((s.latest_revision.as_str(), s.collision_count, s.observed_generation), ("r-1", Some(2), 4));
        let empty = calculate(&set, &[], "r-1", 0);
        assert_eq!((empty.matched_pods, empty.collision_count), (0, Some(0)));
    }

    /// Written only when it changed; the write applies to the observed set.
    #[test]
    fn written_only_when_changed() {
        let mut set = sidecar_set(json!({"containers": [{"name": "c", "image": "a:1"}]}));
        let s = calculate(&set, &[facts(true, true, true)], "r-1", 0);
        let w = write(&set, &s).unwrap();
        let Write::PatchWorkloadStatus { pin, patch, .. } = &w else { panic!("{w:?}") };
        assert_eq!(pin, &Pin::Observed("1".into()));
        let mut v = serde_json::to_value(&set).unwrap();
        json_patch::patch(&mut v, patch).unwrap();
        assert_eq!(v["status"]["matchedPods"], 1);
        assert_eq!(v["status"]["latestRevision"], "r-1");
        set.status = Some(s.clone());
        assert_eq!(write(&set, &s), None);
    }
}
