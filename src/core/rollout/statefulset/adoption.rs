//! Which pods and ControllerRevisions an Advanced StatefulSet owns (spec §6.1 "Adoption"),
//! kruise's `getPodsForStatefulSet` (Kubernetes' `PodControllerRefManager.ClaimPods` with the
//! `isMemberOf` filter) and `adoptOrphanRevisions` (`history.ListControllerRevisions`):
//! - a pod whose controller is another object is left alone;
//! - a pod the set controls stays while it matches the selector and its name is `<set>-<n>`, and
//!   is released otherwise (not while the set is being deleted);
//! - an orphan pod that matches is adopted, unless the set or the pod is being deleted or it is
//!   in another namespace;
//! - revisions matching the selector that the set controls, or that have no controller, are the
//!   set's; the orphans among them are adopted.
//!
//! The "is the set still there" re-read kruise does before adopting (`RecheckDeletionTimestamp`)
//! is the caller's: it needs the API server.

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use super::identity;
use crate::apis::statefulset::v1beta1::StatefulSet;
use crate::compat::selector::Selector;
use crate::core::pods;

/// `metav1.GetControllerOf`.
fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references.iter().flatten().find(|r| r.controller == Some(true))
}

fn selector(set: &StatefulSet) -> Result<Selector, String> {
    Selector::from_optional(set.spec.selector.as_ref()).map_err(|e| format!("invalid selector: {e:?}"))
}

/// The set's pods after `ClaimPods`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodClaims<'a> {
    /// The pods the set manages this round (those it controls and keeps, and those it adopts).
    pub owned: Vec<&'a Pod>,
    /// Orphans to adopt (set the controller reference).
    pub adopt: Vec<&'a Pod>,
    /// Pods to release (drop the controller reference).
    pub release: Vec<&'a Pod>,
}

/// `ClaimPods` over every pod of the namespace.
pub fn claim_pods<'a>(set: &StatefulSet, pods: &[&'a Pod]) -> Result<PodClaims<'a>, String> {
    let selector = selector(set)?;
    let set_uid = set.metadata.uid.as_deref().unwrap_or("");
    let set_deleting = set.metadata.deletion_timestamp.is_some();
    let mut out = PodClaims::default();
    for &pod in pods {
        let matches = selector.matches(pods::labels(pod)) && identity::is_member_of(set, pod);
        match controller_of(&pod.metadata) {
            Some(r) if r.uid != set_uid => {}
            Some(_) if matches => out.owned.push(pod),
            Some(_) => {
                if !set_deleting {
                    out.release.push(pod);
                }
            }
            None => {
                let same_namespace = set.metadata.namespace.as_deref().unwrap_or("").is_empty()
                    || set.metadata.namespace == pod.metadata.namespace;
                if matches && !set_deleting && pod.metadata.deletion_timestamp.is_none() && same_namespace {
                    out.adopt.push(pod);
                    out.owned.push(pod);
                }
            }
        }
    }
    Ok(out)
}

/// The set's revisions (`ListControllerRevisions`: matching the selector, controlled by the set
/// or by nothing) and, among them, the orphans to adopt.
pub fn claim_revisions<'r>(
    set: &StatefulSet,
    revisions: &'r [ControllerRevision],
) -> Result<(Vec<&'r ControllerRevision>, Vec<&'r ControllerRevision>), String> {
    let selector = selector(set)?;
    let set_uid = set.metadata.uid.as_deref().unwrap_or("");
    let empty = Default::default();
    let listed: Vec<&ControllerRevision> = revisions
        .iter()
        .filter(|r| selector.matches(r.metadata.labels.as_ref().unwrap_or(&empty)))
        .filter(|r| controller_of(&r.metadata).is_none_or(|c| c.uid == set_uid))
        .collect();
    let orphans = listed.iter().copied().filter(|r| controller_of(&r.metadata).is_none()).collect();
    Ok((listed, orphans))
}

#[cfg(test)]
mod tests;
