//! Advanced StatefulSet revisions (spec §6.2, §6.7, §5.8), kruise's `getPatch`, `newRevision`,
//! `ApplyRevision`, `getStatefulSetRevisions` and `isCurrentRevisionNeeded`:
//! - data: `{"spec":{"template":{<template>,"$patch":"replace"}}}` exactly as Go writes it — the set
//!   encoded with `encoding/json`, decoded into a `map[string]interface{}` (so keys sorted and
//!   every number a float64: an int64 above 2^53 loses precision, `9223372036854775807` is written
//!   `9223372036854776000`) and encoded again; `go_fixtures.json` holds what Go computes;
//! - name `<set>-<hash>` hashed with the collision count (kruise always passes it, 0 included);
//!   labels: the template's plus the hash; annotations: the set's; owner: the set;
//! - the update revision is the newest one when its data equals the set's, an older equal one is
//!   made the newest again (rollback: its `.revision` is bumped), otherwise a new one is created,
//!   stepping the collision count over names other data holds; the current revision is the one
//!   named by `status.currentRevision`, or the update revision;
//! - `ApplyRevision` is a strategic merge patch whose `$patch: replace` replaces the template
//!   whole: the set with the revision's template;
//! - a pod created for a missing ordinal gets the current revision when `isCurrentRevisionNeeded`;
//! - history keeps `revisionHistoryLimit` revisions besides the live ones (`truncateHistory`).

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Pod, PodTemplateSpec};
use serde_json::{Map, Value};

use super::budget::is_pod_update;
use super::identity;
use super::ordinals::Slot;
use crate::apis::statefulset::ROLLING_UPDATE;
use crate::apis::statefulset::v1beta1::StatefulSet;
use crate::core::features::FeatureGates;
use crate::core::history::{self, NewRevision, Parent};

/// kruise's `getPatch` for a template: the revision's data bytes (the shared
/// [`crate::core::revision::revision_data`], one code path with the CloneSet).
pub fn revision_data(template: &PodTemplateSpec) -> String {
    crate::core::revision::revision_data(template)
}

/// kruise's `newRevision` for the set's template.
pub fn new_revision(set: &StatefulSet, revision: i64, collision_count: i32) -> NewRevision {
    let parent = Parent {
        name: set.metadata.name.as_deref().unwrap_or(""),
        namespace: set.metadata.namespace.as_deref(),
        owner: identity::controller_ref(set),
    };
    let labels = set.spec.template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default();
    let data = revision_data(&set.spec.template);
    let mut new = history::new_controller_revision(&parent, &labels, data, revision, Some(collision_count));
    if let Some(annotations) = set.metadata.annotations.as_ref().filter(|a| !a.is_empty()) {
        new.revision.metadata.annotations.get_or_insert_with(Default::default).extend(annotations.clone());
    }
    new
}

/// kruise's `Match`: the revision holds the set's template.
pub fn matches(set: &StatefulSet, revision: &ControllerRevision) -> bool {
    history::data_bytes(revision) == revision_data(&set.spec.template)
}

/// kruise's `ApplyRevision`: the set with the revision's template (the set unchanged when the
/// data has no template, as the strategic merge patch leaves it).
pub fn apply_revision(set: &StatefulSet, revision: &ControllerRevision) -> Result<StatefulSet, String> {
    let name = revision.metadata.name.as_deref().unwrap_or("");
    let Some(data) = revision.data.as_ref().map(|d| &d.0) else {
        return Err(format!("revision {name} has no data"));
    };
    let mut out = set.clone();
    match data.get("spec").and_then(|s| s.get("template")) {
        None => {}
        Some(Value::Null) => out.spec.template = PodTemplateSpec::default(),
        Some(Value::Object(t)) => {
            let t: Map<String, Value> =
                t.iter().filter(|(k, _)| *k != "$patch").map(|(k, v)| (k.clone(), v.clone())).collect();
            out.spec.template = serde_json::from_value(Value::Object(t))
                .map_err(|e| format!("revision {name}: template does not decode: {e}"))?;
        }
        Some(other) => return Err(format!("revision {name}: template is not an object: {other}")),
    }
    Ok(out)
}

/// How the update revision comes to exist.
#[derive(Clone, Debug, PartialEq)]
pub enum RevisionChange {
    /// The newest revision already is the set's template.
    None,
    /// Create this revision (its name already stepped over collisions).
    Create(Box<NewRevision>),
    /// Make the older revision `name` the newest by setting its `.revision` (rollback).
    Bump {
        /// The revision.
        name: String,
        /// Its resourceVersion as observed.
        resource_version: String,
        /// The new `.revision`.
        revision: i64,
    },
}

/// The current and update revisions (`getStatefulSetRevisions`).
#[derive(Clone, Debug, PartialEq)]
pub struct ActiveRevisions {
    /// The current revision (the object, as it is or will be).
    pub current: ControllerRevision,
    /// The update revision.
    pub update: ControllerRevision,
    /// The collision count to record in status.
    pub collision_count: i32,
    /// The write that makes the update revision exist.
    pub change: RevisionChange,
}

/// `getStatefulSetRevisions` over the set's revisions, sorted (`history::sort_revisions`).
pub fn active_revisions(set: &StatefulSet, sorted: &[ControllerRevision]) -> ActiveRevisions {
    let status = set.status.as_ref();
    let mut collision_count = status.and_then(|s| s.collision_count).unwrap_or(0);
    let next = history::next_revision(sorted);
    let mut candidate = new_revision(set, next, collision_count);
    let equal = history::find_equal_revisions(sorted, &candidate.revision);
    let newest_is_equal = sorted.last().is_some_and(|r| history::data_bytes(r) == candidate.data);

    let (update, change) = match equal.last() {
        Some(_) if newest_is_equal => (sorted[sorted.len() - 1].clone(), RevisionChange::None),
        Some(&i) => {
            let mut bumped = sorted[i].clone();
            bumped.revision = next;
            let change = RevisionChange::Bump {
                name: bumped.metadata.name.clone().unwrap_or_default(),
                resource_version: bumped.metadata.resource_version.clone().unwrap_or_default(),
                revision: next,
            };
            (bumped, change)
        }
        None => {
            // `CreateControllerRevision`: a name held by other data bumps the collision count.
            let taken = |c: &NewRevision| {
                sorted.iter().any(|r| r.metadata.name == c.revision.metadata.name && history::data_bytes(r) != c.data)
            };
            while taken(&candidate) {
                collision_count = collision_count.saturating_add(1);
                candidate = new_revision(set, next, collision_count);
            }
            (candidate.revision.clone(), RevisionChange::Create(Box::new(candidate)))
        }
    };
    let current_name = status.map(|s| s.current_revision.as_str()).unwrap_or("");
    let current = sorted
        .iter()
        .find(|r| r.metadata.name.as_deref() == Some(current_name))
        .cloned()
        .unwrap_or_else(|| update.clone());
    ActiveRevisions { current, update, collision_count, change }
}

/// `truncateHistory`: the revisions to delete so that at most `revisionHistoryLimit` (default 10)
/// non-live ones remain, oldest first. Live: the current and update revisions and every pod's
/// revision. `sorted` is the list as read at the start of the round (kruise truncates that list,
/// so a revision created this round is not counted until the next one).
pub fn revisions_to_truncate<'r>(
    set: &StatefulSet,
    sorted: &'r [ControllerRevision],
    pods: &[&Pod],
    current: &str,
    update: &str,
) -> Vec<&'r ControllerRevision> {
    let live = |r: &ControllerRevision| {
        let name = r.metadata.name.as_deref().unwrap_or("");
        name == current || name == update || pods.iter().any(|p| identity::pod_revision(p) == name)
    };
    history::revisions_to_truncate(sorted, live, set.spec.revision_history_limit.unwrap_or(10))
}

/// `isCurrentRevisionNeeded`: whether the missing pod of `ordinal` is created at the current
/// revision. `start` is the first ordinal, `slots` the replicas (with the pods created so far);
/// `status.currentReplicas` is read from the set.
pub fn is_current_revision_needed(
    set: &StatefulSet,
    update_revision: &str,
    ordinal: i64,
    start: i64,
    slots: &[Slot<'_>],
    gates: &FeatureGates,
) -> bool {
    if set.spec.update_strategy.type_ != ROLLING_UPDATE {
        return false;
    }
    let Some(ru) = &set.spec.update_strategy.rolling_update else {
        let current = set.status.as_ref().map_or(0, |s| i64::from(s.current_replicas));
        return ordinal < start + current;
    };
    let partition = i64::from(ru.partition.unwrap_or(0));
    if ru.unordered_update.is_none() {
        // Pods below this ordinal (reserved slots hold none).
        let below = slots.iter().filter(|s| s.ordinal < ordinal && s.pod.is_some()).count() as i64;
        return below < partition; // Go: below + 1 <= partition
    }
    let not_updated = slots
        .iter()
        .filter_map(|s| s.pod)
        .filter(|p| identity::pod_ordinal(p).map(i64::from) != Some(ordinal))
        .filter(|p| !is_pod_update(p, update_revision, gates))
        .count() as i64;
    not_updated < partition
}

#[cfg(test)]
mod tests;
