//! The owner references `persistentVolumeClaimRetentionPolicy` asks of each claim (spec §6.5,
//! gate `StatefulSetAutoDeletePVC`), kruise's `claimOwnerMatchesSetAndPod`,
//! `updateClaimOwnerRefForSetAndPod`, `hasOwnerRef`, `hasStaleOwnerRef`, `setOwnerRef`,
//! `removeOwnerRef` (`stateful_set_utils.go`) and the claim side of `StatefulPodControl`
//! (`ClaimsMatchRetentionPolicy`, `UpdatePodClaimForRetentionPolicy`, `PodClaimIsStale`,
//! `createPersistentVolumeClaims`) with the claims looked up through a closure:
//!
//! | whenDeleted | whenScaled | claim of a replica | claim of a condemned pod |
//! |---|---|---|---|
//! | Retain | Retain | no set ref, no pod ref | no set ref, no pod ref |
//! | Delete | Retain | set ref | set ref |
//! | Retain | Delete | no refs | pod ref |
//! | Delete | Delete | set ref | pod ref, no set ref |
//!
//! A policy value that is neither Retain nor Delete counts as Retain/Retain, as in kruise (it logs
//! "Unknown policy, treating as Retain"). References are matched by uid; the ones kruise adds
//! carry apiVersion, kind, name and uid only (not controller, not blockOwnerDeletion).

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::identity;
use super::ordinals::ReplicaRange;
use crate::apis::statefulset::v1beta1::StatefulSet;
use crate::apis::statefulset::{DELETE, RETAIN};

/// `getPersistentVolumeClaimRetentionPolicy`: `(whenDeleted, whenScaled)`, Retain/Retain when the
/// set has no policy (an empty field stays empty and so counts as unknown).
pub fn retention_policy(set: &StatefulSet) -> (&str, &str) {
    match &set.spec.persistent_volume_claim_retention_policy {
        Some(p) => (p.when_deleted.as_str(), p.when_scaled.as_str()),
        None => (RETAIN, RETAIN),
    }
}

/// `hasOwnerRef`: a reference with the owner's uid.
pub fn has_owner_ref(target: &ObjectMeta, owner: &ObjectMeta) -> bool {
    let uid = owner.uid.as_deref().unwrap_or("");
    target.owner_references.iter().flatten().any(|r| r.uid == uid)
}

/// `hasStaleOwnerRef`: a reference with the owner's name but another uid.
pub fn has_stale_owner_ref(target: &ObjectMeta, owner: &ObjectMeta) -> bool {
    let (name, uid) = (owner.name.as_deref().unwrap_or(""), owner.uid.as_deref().unwrap_or(""));
    target.owner_references.iter().flatten().any(|r| r.name == name && r.uid != uid)
}

/// `setOwnerRef`: appends a reference to `owner` unless one is there; true when it changed.
pub fn set_owner_ref(target: &mut ObjectMeta, owner: &ObjectMeta, api_version: &str, kind: &str) -> bool {
    if has_owner_ref(target, owner) {
        return false;
    }
    target.owner_references.get_or_insert_with(Vec::new).push(OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: owner.name.clone().unwrap_or_default(),
        uid: owner.uid.clone().unwrap_or_default(),
        controller: None,
        block_owner_deletion: None,
    });
    true
}

/// `removeOwnerRef`: drops the references with the owner's uid; true when it changed.
pub fn remove_owner_ref(target: &mut ObjectMeta, owner: &ObjectMeta) -> bool {
    if !has_owner_ref(target, owner) {
        return false;
    }
    let uid = owner.uid.as_deref().unwrap_or("");
    if let Some(refs) = target.owner_references.as_mut() {
        refs.retain(|r| r.uid != uid);
    }
    true
}

/// The four policies kruise tells apart (anything unknown is Retain/Retain).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Policy {
    RetainRetain,
    DeleteWithSet,
    DeleteOnScaledown,
    DeleteOnBoth,
}

fn policy(set: &StatefulSet) -> Policy {
    match retention_policy(set) {
        (DELETE, RETAIN) => Policy::DeleteWithSet,
        (RETAIN, DELETE) => Policy::DeleteOnScaledown,
        (DELETE, DELETE) => Policy::DeleteOnBoth,
        _ => Policy::RetainRetain,
    }
}

/// The references a claim must have: (to the set, to the pod).
fn wanted_refs(set: &StatefulSet, pod: &Pod, range: &ReplicaRange) -> (bool, bool) {
    let scaled_down = !range.contains_pod(pod);
    match policy(set) {
        Policy::RetainRetain => (false, false),
        Policy::DeleteWithSet => (true, false),
        Policy::DeleteOnScaledown => (false, scaled_down),
        Policy::DeleteOnBoth => (!scaled_down, scaled_down),
    }
}

/// `claimOwnerMatchesSetAndPod`: the claim's references are the ones the policy asks for.
/// `range` is the set's replica range (a pod outside it is scaled down).
pub fn claim_owner_matches_set_and_pod(
    claim: &PersistentVolumeClaim,
    set: &StatefulSet,
    pod: &Pod,
    range: &ReplicaRange,
) -> bool {
    let (set_ref, pod_ref) = wanted_refs(set, pod, range);
    has_owner_ref(&claim.metadata, &set.metadata) == set_ref && has_owner_ref(&claim.metadata, &pod.metadata) == pod_ref
}

/// `updateClaimOwnerRefForSetAndPod`: adds and removes references as the policy asks; true when
/// the claim changed. A set reference is `apps.kruise.io/v1beta1 StatefulSet`, a pod one `v1 Pod`
/// (kruise fills the type when the object's TypeMeta is empty, as it is from an informer).
pub fn update_claim_owner_ref_for_set_and_pod(
    claim: &mut PersistentVolumeClaim,
    set: &StatefulSet,
    pod: &Pod,
    range: &ReplicaRange,
) -> bool {
    let (set_ref, pod_ref) = wanted_refs(set, pod, range);
    let meta = &mut claim.metadata;
    let mut changed = false;
    // Go's order: the set reference first, then the pod's.
    changed |= if set_ref {
        set_owner_ref(meta, &set.metadata, identity::API_VERSION, identity::KIND)
    } else {
        remove_owner_ref(meta, &set.metadata)
    };
    changed |=
        if pod_ref { set_owner_ref(meta, &pod.metadata, "v1", "Pod") } else { remove_owner_ref(meta, &pod.metadata) };
    changed
}

fn pod_claim_names(set: &StatefulSet, pod: &Pod) -> Vec<String> {
    // Go uses ordinal -1 for a name without one.
    let ordinal = identity::pod_ordinal(pod).map_or(-1, i64::from);
    set.spec.volume_claim_templates.iter().map(|t| identity::claim_name(set, t, ordinal)).collect()
}

/// `ClaimsMatchRetentionPolicy`: every existing claim of the pod has the references the policy
/// asks for (a missing claim is picked up later and does not count).
pub fn claims_match_retention_policy<'a>(
    set: &StatefulSet,
    pod: &Pod,
    range: &ReplicaRange,
    claim: impl Fn(&str) -> Option<&'a PersistentVolumeClaim>,
) -> bool {
    pod_claim_names(set, pod)
        .iter()
        .filter_map(|name| claim(name))
        .all(|c| claim_owner_matches_set_and_pod(c, set, pod, range))
}

/// `UpdatePodClaimForRetentionPolicy`: the pod's existing claims whose references must change,
/// changed (to be written pinned to the resourceVersion they carry).
pub fn claim_updates_for_retention_policy<'a>(
    set: &StatefulSet,
    pod: &Pod,
    range: &ReplicaRange,
    claim: impl Fn(&str) -> Option<&'a PersistentVolumeClaim>,
) -> Vec<PersistentVolumeClaim> {
    pod_claim_names(set, pod)
        .iter()
        .filter_map(|name| claim(name))
        .filter(|c| !claim_owner_matches_set_and_pod(c, set, pod, range))
        .filter_map(|c| {
            let mut updated = c.clone();
            update_claim_owner_ref_for_set_and_pod(&mut updated, set, pod, range).then_some(updated)
        })
        .collect()
}

/// `PodClaimIsStale`: with `whenScaled: Delete`, one of the pod's claims has a reference named
/// like the pod but with another uid (a previous pod of that name, or a pod not created yet):
/// the pod must not be created onto it. With `whenScaled: Retain` claims are reused, never stale.
pub fn pod_claim_is_stale<'a>(
    set: &StatefulSet,
    pod: &Pod,
    claim: impl Fn(&str) -> Option<&'a PersistentVolumeClaim>,
) -> bool {
    if retention_policy(set).1 == RETAIN {
        return false;
    }
    pod_claim_names(set, pod)
        .iter()
        .filter_map(|name| claim(name))
        .any(|c| has_stale_owner_ref(&c.metadata, &pod.metadata))
}

/// What `createPersistentVolumeClaims` does for a pod.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClaimCreation {
    /// Claims that do not exist yet, to create.
    pub create: Vec<PersistentVolumeClaim>,
    /// Claims that exist but are being deleted: an error, the pod waits (`pvc <name> is to be
    /// deleted`).
    pub deleting: Vec<String>,
}

/// `createPersistentVolumeClaims`: the pod's missing claims, and the ones being deleted.
pub fn claims_to_create<'a>(
    set: &StatefulSet,
    pod: &Pod,
    claim: impl Fn(&str) -> Option<&'a PersistentVolumeClaim>,
) -> ClaimCreation {
    let ordinal = identity::pod_ordinal(pod).map_or(-1, i64::from);
    let mut out = ClaimCreation::default();
    for (_, wanted) in identity::persistent_volume_claims(set, ordinal) {
        let name = wanted.metadata.name.clone().unwrap_or_default();
        match claim(&name) {
            None => out.create.push(wanted),
            Some(existing) if existing.metadata.deletion_timestamp.is_some() => out.deleting.push(name),
            Some(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests;
