//! CloneSet revisions (spec §3.1, §5.1 item 6, §5.8; decision §11.6 — names and data identical
//! to kruise's, so a CloneSet managed by Go kruise keeps its revisions, and its pods keep
//! matching them, after migration):
//! - data: `{"spec":{"template":{<template as Go encodes it>,"$patch":"replace"}}}`, every object's
//!   keys sorted (kruise re-encodes the template through a `map[string]interface{}`);
//! - name: `<cloneset>-<hash>`, hashed with the collision count (kruise always passes it, 0
//!   included); labels: the template labels plus the hash; annotations: the CloneSet's, plus
//!   `kruise.io/cloneset-volumeclaimtemplate-hash` (kruise's VCT hash, "" without templates);
//! - the update revision reuses the newest revision when its data is the same; an older equal
//!   revision becomes the newest again (rollback: its `.revision` is bumped); otherwise a new one is
//!   created, and a name taken by a different revision bumps the collision count;
//! - the current revision is the one named by `status.currentRevision`, or the update revision.
//!
//! Pods name their revision in `controller-revision-hash` (the short hash alone with gate
//! CloneSetShortHash) and its short hash in `pod-template-hash`; either spelling matches.

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

use crate::apis::cloneset::CloneSet;
use crate::core::history::{self, NewRevision, Parent};
use crate::core::inplace::classify::VCT_HASH_ANNOTATION;
pub use crate::core::revision::{
    CONTROLLER_REVISION_HASH, POD_TEMPLATE_HASH, Revision, equal_to_revision_hash, revision_data, short_hash,
    template_of, vct_hash, write_revision_hash,
};
use crate::core::rollout::actions::{Action, ActionKind, Pin, Write, object_patch};

/// The controller reference to a CloneSet (pods, PVCs and revisions carry it).
pub fn owner_reference(cs: &CloneSet) -> OwnerReference {
    OwnerReference {
        api_version: "apps.kruise.io/v1alpha1".into(),
        kind: "CloneSet".into(),
        name: cs.metadata.name.clone().unwrap_or_default(),
        uid: cs.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// kruise's `NewRevision` for the CloneSet's template.
pub fn new_revision(cs: &CloneSet, revision: i64, collision_count: i32) -> NewRevision {
    let name = cs.metadata.name.as_deref().unwrap_or("");
    let parent = Parent { name, namespace: cs.metadata.namespace.as_deref(), owner: owner_reference(cs) };
    let labels = cs.spec.template.metadata.as_ref().and_then(|m| m.labels.clone()).unwrap_or_default();
    let mut new = history::new_controller_revision(
        &parent,
        &labels,
        revision_data(&cs.spec.template),
        revision,
        Some(collision_count),
    );
    let annotations = new.revision.metadata.annotations.get_or_insert_with(Default::default);
    annotations.extend(cs.metadata.annotations.clone().unwrap_or_default());
    annotations.insert(VCT_HASH_ANNOTATION.into(), vct_hash(&cs.spec.volume_claim_templates));
    new
}

/// The current and update revisions and what it takes to have them.
#[derive(Clone, Debug, PartialEq)]
pub struct ActiveRevisions {
    /// The current revision.
    pub current: Revision,
    /// The update revision.
    pub update: Revision,
    /// The collision count to record in status.
    pub collision_count: i32,
    /// Creating the update revision, or bumping an older equal one (rollback).
    pub action: Option<Action>,
}

/// kruise's `getActiveRevisions` over the CloneSet's revisions (sorted, owned or ownerless,
/// matching its selector).
pub fn active_revisions(cs: &CloneSet, sorted: &[ControllerRevision]) -> ActiveRevisions {
    let status = cs.status.as_ref();
    let mut collision_count = status.and_then(|s| s.collision_count).unwrap_or(0);
    let next = history::next_revision(sorted);
    let mut candidate = new_revision(cs, next, collision_count);
    let equal = history::find_equal_revisions(sorted, &candidate.revision);

    let (update, action) = match equal.last() {
        // The newest revision already is this template.
        Some(_) if sorted.last().map(history::data_bytes).as_deref() == Some(candidate.data.as_str()) => {
            (Revision::existing(&sorted[sorted.len() - 1]), None)
        }
        // An older revision is: make it the newest (rollback), refreshing its VCT hash.
        Some(&i) => {
            let old = &sorted[i];
            let mut bumped = old.clone();
            bumped.revision = next;
            let want_hash = candidate.revision.metadata.annotations.as_ref().and_then(|a| a.get(VCT_HASH_ANNOTATION));
            let have_hash = old.metadata.annotations.as_ref().and_then(|a| a.get(VCT_HASH_ANNOTATION));
            if have_hash.is_none() || have_hash != want_hash {
                bumped
                    .metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .insert(VCT_HASH_ANNOTATION.into(), want_hash.cloned().unwrap_or_default());
            }
            let name = old.metadata.name.clone().unwrap_or_default();
            let write = Write::PatchRevision {
                name: name.clone(),
                pin: Pin::Observed(old.metadata.resource_version.clone().unwrap_or_default()),
                patch: object_patch(old, &bumped),
            };
            let reason = format!("the template is the one of revision {name} again: it becomes the newest (rollback)");
            let action = Action::new(ActionKind::UpdateRevision, None, &name, reason, vec![write]);
            (Revision::existing(&bumped), Some(action))
        }
        // A new template: create its revision, stepping over names other revisions hold.
        None => {
            let taken = |c: &NewRevision| {
                sorted.iter().any(|r| r.metadata.name == c.revision.metadata.name && history::data_bytes(r) != c.data)
            };
            while taken(&candidate) {
                collision_count += 1;
                candidate = new_revision(cs, next, collision_count);
            }
            let name = candidate.revision.metadata.name.clone().unwrap_or_default();
            let write = Write::CreateRevision {
                revision: Box::new(candidate.revision.clone()),
                data: candidate.data.clone(),
                collision_count,
            };
            let reason = format!("the template changed: new revision {name} (revision number {next})");
            let action = Action::new(ActionKind::CreateRevision, None, &name, reason, vec![write]);
            (Revision { object: candidate.revision, data: candidate.data }, Some(action))
        }
    };

    let current_name = status.map(|s| s.current_revision.as_str()).unwrap_or("");
    let current = sorted
        .iter()
        .find(|r| !current_name.is_empty() && r.metadata.name.as_deref() == Some(current_name))
        .map(Revision::existing)
        .unwrap_or_else(|| update.clone());
    ActiveRevisions { current, update, collision_count, action }
}

#[cfg(test)]
mod tests;
