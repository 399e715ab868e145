//! The Advanced DaemonSet's ControllerRevisions as kruise keeps them (`daemonset_history.go`):
//! - the data is `getPatch`: `{"spec":{"template":{…,"$patch":"replace"}}}` through Go's map
//!   round trip ([`crate::core::revision::revision_data`]);
//! - `constructHistory`: a revision without the `controller-revision-hash` label gets it (its
//!   name); revisions whose data equals the template's are current, the rest old; none current →
//!   `snapshot` creates `<ds>-<hash>` (labels: the template's plus the hash, annotations: the
//!   set's, revision = highest old + 1); several → `dedupCurHistories` keeps the highest and
//!   deletes the others (the pods move to its hash); a current one below the highest old is
//!   bumped;
//! - `cleanupHistory`: old revisions beyond `revisionHistoryLimit` (default 10), oldest first,
//!   skipping those whose hash a live pod carries.

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::runtime::RawExtension;

use super::hash::template_hash;
use crate::apis::daemonset::v1beta1::DaemonSet;
use crate::core::history;
use crate::core::pods;
use crate::core::revision::{CONTROLLER_REVISION_HASH, revision_data};

/// What the round does to the revisions before it plans pods.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// Add the hash label (its name) to a revision without it.
    Label { name: String },
    /// Create the update revision with these data bytes.
    Create { revision: Box<ControllerRevision>, data: String },
    /// Make the current revision the newest.
    Bump { name: String, revision: i64 },
    /// Delete a duplicate of the current revision.
    DeleteDuplicate { name: String },
    /// Move a pod to the kept duplicate's hash.
    RelabelPod { pod: String, hash: String },
}

/// The history a round works with.
#[derive(Clone, Debug)]
pub struct History {
    /// The update revision's hash (`cur.Labels[controller-revision-hash]`).
    pub hash: String,
    /// Its name.
    pub name: String,
    /// The update revision (as it is or will be created).
    pub current: ControllerRevision,
    /// The other revisions.
    pub old: Vec<ControllerRevision>,
    pub changes: Vec<Change>,
}

/// The set's controller reference.
pub fn controller_ref(ds: &DaemonSet) -> OwnerReference {
    OwnerReference {
        api_version: "apps.kruise.io/v1beta1".into(),
        kind: "DaemonSet".into(),
        name: ds.metadata.name.clone().unwrap_or_default(),
        uid: ds.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// A revision's hash label (its name when it has none: `constructHistory` adds that).
pub fn revision_hash(r: &ControllerRevision) -> &str {
    r.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(CONTROLLER_REVISION_HASH))
        .map(String::as_str)
        .unwrap_or_else(|| r.metadata.name.as_deref().unwrap_or(""))
}

/// `constructHistory` over the revisions the set controls, with its pods.
pub fn construct_history(ds: &DaemonSet, controlled: &[&ControllerRevision], pods: &[&Pod]) -> History {
    let data = revision_data(&ds.spec.template);
    let mut changes = Vec::new();
    let (mut current, mut old): (Vec<ControllerRevision>, Vec<ControllerRevision>) = (Vec::new(), Vec::new());
    for r in controlled {
        let mut r = (*r).clone();
        if !r.metadata.labels.as_ref().is_some_and(|l| l.contains_key(CONTROLLER_REVISION_HASH)) {
            let name = r.metadata.name.clone().unwrap_or_default();
            r.metadata
                .labels
                .get_or_insert_with(Default::default)
                .insert(CONTROLLER_REVISION_HASH.into(), name.clone());
            changes.push(Change::Label { name });
        }
        if history::data_bytes(&r) == data {
            current.push(r);
        } else {
            old.push(r);
        }
    }
    let next = old.iter().map(|r| r.revision).max().unwrap_or(0) + 1;
    let cur = if current.is_empty() {
        let collision = ds.status.as_ref().and_then(|s| s.collision_count);
        let template = serde_json::to_value(&ds.spec.template).unwrap_or_default();
        let hash = template_hash(&template, collision);
        let name = format!("{}-{hash}", ds.metadata.name.as_deref().unwrap_or(""));
        let mut labels = ds.spec.template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default();
        labels.insert(CONTROLLER_REVISION_HASH.into(), hash);
        let revision = ControllerRevision {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: ds.metadata.namespace.clone(),
                labels: Some(labels),
                annotations: ds.metadata.annotations.clone(),
                owner_references: Some(vec![controller_ref(ds)]),
                ..Default::default()
            },
            data: Some(RawExtension(serde_json::from_str(&data).unwrap_or_default())),
            revision: next,
        };
        changes.push(Change::Create { revision: Box::new(revision.clone()), data });
        revision
    } else {
        // dedupCurHistories: the highest revision (the last of equals) is kept.
        let mut keep = 0;
        for (i, r) in current.iter().enumerate() {
            if r.revision >= current[keep].revision {
                keep = i;
            }
        }
        let kept = current[keep].clone();
        if current.len() > 1 {
            let hash = revision_hash(&kept).to_string();
            for p in pods {
                if pods::label(p, CONTROLLER_REVISION_HASH) != Some(hash.as_str()) {
                    changes.push(Change::RelabelPod { pod: pods::name(p).to_string(), hash: hash.clone() });
                }
            }
            for (i, r) in current.iter().enumerate() {
                if i != keep {
                    changes.push(Change::DeleteDuplicate { name: r.metadata.name.clone().unwrap_or_default() });
                }
            }
        }
        let mut kept = kept;
        if kept.revision < next {
            changes.push(Change::Bump { name: kept.metadata.name.clone().unwrap_or_default(), revision: next });
            kept.revision = next;
        }
        kept
    };
    History {
        hash: revision_hash(&cur).to_string(),
        name: cur.metadata.name.clone().unwrap_or_default(),
        current: cur,
        old,
        changes,
    }
}

/// `cleanupHistory`: the old revisions to delete.
pub fn to_clean_up<'a>(ds: &DaemonSet, old: &'a [ControllerRevision], pods: &[&Pod]) -> Vec<&'a ControllerRevision> {
    let keep = ds.spec.revision_history_limit.unwrap_or(10).max(0) as usize;
    let Some(mut to_kill) = old.len().checked_sub(keep).filter(|n| *n > 0) else { return Vec::new() };
    let live: BTreeSet<&str> = pods.iter().filter_map(|p| pods::label(p, CONTROLLER_REVISION_HASH)).collect();
    let mut sorted: Vec<&ControllerRevision> = old.iter().collect();
    sorted.sort_by_key(|r| r.revision);
    let mut out = Vec::new();
    for r in sorted {
        if to_kill == 0 {
            break;
        }
        if live.contains(revision_hash(r)) {
            continue;
        }
        out.push(r);
        to_kill -= 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ds() -> DaemonSet {
        serde_json::from_value(json!({"metadata": {"name": "ds", "namespace": "ns", "uid": "u1",
            "annotations": {"a": "b"}},
            "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}}))
        .unwrap()
    }

    fn rev(name: &str, data: &str, revision: i64, hash: Option<&str>) -> ControllerRevision {
        let mut labels = json!({"app": "d"});
        if let Some(h) = hash {
            labels["controller-revision-hash"] = json!(h);
        }
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}, "data":
            serde_json::from_str::<serde_json::Value>(data).unwrap(), "revision": revision}))
        .unwrap()
    }

    #[test]
    fn the_first_round_snapshots_the_template_as_kruise_names_and_labels_it() {
        let d = ds();
        let h = construct_history(&d, &[], &[]);
        let [Change::Create { revision, data }] = h.changes.as_slice() else { panic!("{:?}", h.changes) };
        assert_eq!(data, &revision_data(&d.spec.template));
        assert_eq!(
            data,
            r#"{"spec":{"template":{"$patch":"replace","metadata":{"creationTimestamp":null,"labels":{"app":"d"}},"spec":{"containers":[{"image":"i:1","name":"c","resources":{}}]}}}}"#
        );
        assert_eq!(revision.metadata.name.as_deref(), Some(format!("ds-{}", h.hash).as_str()));
        assert_eq!(revision.revision, 1);
        let labels = revision.metadata.labels.as_ref().unwrap();
        assert_eq!(labels.get("app").map(String::as_str), Some("d"));
        assert_eq!(labels.get(CONTROLLER_REVISION_HASH), Some(&h.hash));
        assert_eq!(revision.metadata.annotations, d.metadata.annotations);
        assert_eq!(revision.metadata.owner_references.as_ref().unwrap()[0].kind, "DaemonSet");
    }

    #[test]
    fn an_equal_revision_is_current_and_bumped_above_the_old_ones() {
        let d = ds();
        let data = revision_data(&d.spec.template);
        let cur = rev("ds-aaa", &data, 1, Some("aaa"));
        let old = rev("ds-bbb", r#"{"spec":{"template":{"$patch":"replace"}}}"#, 2, None);
        let h = construct_history(&d, &[&cur, &old], &[]);
        assert_eq!((h.hash.as_str(), h.name.as_str()), ("aaa", "ds-aaa"));
        assert_eq!(h.current.revision, 3);
        assert_eq!(
            h.changes,
            vec![Change::Label { name: "ds-bbb".into() }, Change::Bump { name: "ds-aaa".into(), revision: 3 }]
        );
        // Duplicates: the highest is kept, pods move to its hash, the others go.
        let dup = rev("ds-ccc", &data, 5, Some("ccc"));
        let pod: Pod =
            serde_json::from_value(json!({"metadata": {"name": "p", "labels": {"controller-revision-hash": "aaa"}}}))
                .unwrap();
        let h = construct_history(&d, &[&cur, &dup], &[&pod]);
        assert_eq!(h.hash, "ccc");
        assert!(h.changes.contains(&Change::RelabelPod { pod: "p".into(), hash: "ccc".into() }));
        assert!(h.changes.contains(&Change::DeleteDuplicate { name: "ds-aaa".into() }));
    }

    #[test]
    fn cleanup_keeps_the_limit_and_revisions_live_pods_use() {
        let mut d = ds();
        d.spec.revision_history_limit = Some(1);
        let old =
            vec![rev("ds-a", "{}", 1, Some("a")), rev("ds-b", "{}", 2, Some("b")), rev("ds-c", "{}", 3, Some("c"))];
        let pod: Pod =
            serde_json::from_value(json!({"metadata": {"name": "p", "labels": {"controller-revision-hash": "a"}}}))
                .unwrap();
        let gone: Vec<&str> =
            to_clean_up(&d, &old, &[&pod]).iter().map(|r| r.metadata.name.as_deref().unwrap()).collect();
        assert_eq!(gone, ["ds-b", "ds-c"]);
        d.spec.revision_history_limit = None;
        assert!(to_clean_up(&d, &old, &[]).is_empty());
    }
}
