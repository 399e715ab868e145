//! Resizing the claims of an Advanced StatefulSet as its pods roll (spec §6.5, gate
//! `StatefulSetAutoResizePVCGate` with `volumeClaimUpdateStrategy.type: OnPodRollingUpdate`):
//! kruise's `pkg/util/pvc/pvc_compare_utils.go` (`IsClaimCompatibleWithoutSize`,
//! `IsPVCCompatibleAndReady`, `IsPVCNeedExpand`, `CompareWithCheckFn`, `IsPatchPVCCompleted`) and
//! the claim side of `statefulset_resize_pvc.go` (`IsOwnedPVCsReady`, `IsClaimsCompatible`,
//! `TryPatchPVC`, `IsOwnedPVCsCompleted`, `resizeClaim`; `updatePVCStatus` is
//! [`super::status::volume_claims`]).
//!
//! A claim is compared with its template: the storage class (when both name one) and the access
//! modes must be equal, else nothing but deleting the claim reconciles them (the round stops with
//! kruise's error and a `FailedUpdatePVC` Warning); a request below the template's is expanded —
//! when the claim's StorageClass allows expansion — by a write of the template's resources and the
//! `apps.kruise.io/owned-by-asts` annotation; the pod is updated only once every claim is
//! compatible and either has its capacity or waits for the kubelet (`FileSystemResizePending`).
//! Missing and terminating claims are skipped, as kruise skips them. Storage quantities compare as
//! Go's `ResourceList.Storage()` does: a missing one is zero.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::api::storage::v1::StorageClass;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;

use super::identity;
use crate::apis::statefulset::ON_POD_ROLLING_UPDATE;
use crate::apis::statefulset::v1beta1::StatefulSet;
use crate::compat::quantity::{Format, Quantity};
use crate::core::features::{FeatureGates, Gate};

/// The annotation kruise puts on a claim it resized: the set's name (its PVC handler queues that
/// set when the claim changes).
pub const OWNED_BY_ASTS: &str = "apps.kruise.io/owned-by-asts";

/// Whether the rolling update resizes claims: the gate is on and the set asks for it.
pub fn enabled(set: &StatefulSet, gates: &FeatureGates) -> bool {
    gates.enabled(Gate::StatefulSetAutoResizePVCGate)
        && set.spec.volume_claim_update_strategy.type_ == ON_POD_ROLLING_UPDATE
}

/// `ResourceList.Storage()`: the `storage` entry, zero when absent (or not a quantity).
fn storage(list: Option<&BTreeMap<String, ApiQuantity>>) -> Quantity {
    list.and_then(|l| l.get("storage"))
        .and_then(|q| Quantity::parse(&q.0).ok())
        .unwrap_or_else(|| Quantity::from_int(0, Format::BinarySI))
}

fn requested(claim: &PersistentVolumeClaim) -> Quantity {
    storage(claim.spec.as_ref().and_then(|s| s.resources.as_ref()).and_then(|r| r.requests.as_ref()))
}

fn capacity(claim: &PersistentVolumeClaim) -> Quantity {
    storage(claim.status.as_ref().and_then(|s| s.capacity.as_ref()))
}

/// `IsClaimCompatibleWithoutSize`: the storage classes (when both are set) and the access modes
/// (in order) are equal.
pub fn compatible_without_size(claim: &PersistentVolumeClaim, template: &PersistentVolumeClaim) -> bool {
    let (c, t) = (claim.spec.clone().unwrap_or_default(), template.spec.clone().unwrap_or_default());
    if let (Some(cs), Some(ts)) = (&c.storage_class_name, &t.storage_class_name)
        && cs != ts
    {
        return false;
    }
    c.access_modes.unwrap_or_default() == t.access_modes.unwrap_or_default()
}

/// `IsPVCCompatibleAndReady`: compatible when the claim requests at least the template's storage
/// (and is compatible without size); ready when its capacity reaches its own request.
pub fn compatible_and_ready(claim: &PersistentVolumeClaim, template: &PersistentVolumeClaim) -> (bool, bool) {
    if !compatible_without_size(claim, template) {
        return (false, false);
    }
    let request = requested(claim);
    let compatible = request.cmp(&requested(template)) != Ordering::Less;
    let ready = capacity(claim).cmp(&request) != Ordering::Less;
    (compatible, ready)
}

/// `IsPVCNeedExpand`: the claim requests less storage than the template.
pub fn needs_expand(claim: &PersistentVolumeClaim, template: &PersistentVolumeClaim) -> bool {
    requested(claim).cmp(&requested(template)) == Ordering::Less
}

/// `CompareWithCheckFn(claim, template, IsPVCNeedExpand)`: `(matched, needs expanding only)`.
pub fn compare(claim: &PersistentVolumeClaim, template: &PersistentVolumeClaim) -> (bool, bool) {
    if !compatible_without_size(claim, template) {
        return (false, false);
    }
    if needs_expand(claim, template) {
        return (false, true);
    }
    (true, false)
}

/// `IsPatchPVCCompleted`: compatible, and ready or waiting for the kubelet's file-system resize.
pub fn patch_completed(claim: &PersistentVolumeClaim, template: &PersistentVolumeClaim) -> bool {
    match compatible_and_ready(claim, template) {
        (true, true) => true,
        (true, false) => claim
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| c.type_ == "FileSystemResizePending" && c.status == "True"),
        _ => false,
    }
}

/// `resizeClaim`: the claim with the annotation and, when it needs expanding, the template's
/// resources; `None` when only the annotation would change (kruise writes nothing then).
pub fn resize_claim(
    set: &StatefulSet,
    claim: &PersistentVolumeClaim,
    template: &PersistentVolumeClaim,
) -> Option<PersistentVolumeClaim> {
    if !needs_expand(claim, template) {
        return None;
    }
    let mut out = claim.clone();
    let name = set.metadata.name.clone().unwrap_or_default();
    out.metadata.annotations.get_or_insert_with(Default::default).insert(OWNED_BY_ASTS.into(), name);
    let spec = out.spec.get_or_insert_with(Default::default);
    spec.resources = template.spec.as_ref().and_then(|s| s.resources.clone());
    Some(out)
}

/// The claims of one pod against the set's templates (`handlePVCWithCustomFn` with
/// ignoreTerminatingPVC: missing and terminating claims are skipped).
#[derive(Clone, Debug, PartialEq)]
pub struct PodClaims {
    /// `IsClaimsCompatible`: every claim matches its template.
    pub matched: bool,
    /// `IsOwnedPVCsReady`: every claim has the capacity it requests (and the template's class and
    /// access modes).
    pub ready: bool,
    /// `IsOwnedPVCsCompleted`.
    pub completed: bool,
    /// `TryPatchPVC`: the claims to write (expanded, in template order, up to a refusal).
    pub writes: Vec<PersistentVolumeClaim>,
    /// Why the next claim cannot be patched (kruise stops at it and ends the round).
    pub refusal: Option<Refusal>,
}

/// Why a claim cannot be patched.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    /// The claim's name.
    pub claim: String,
    /// kruise's error text.
    pub message: String,
    /// Whether kruise also records a `FailedUpdatePVC` Warning (a diff other than the size).
    pub warn: bool,
}

/// The claims of `pod` as they are, with `claim` looking a claim up by name in the set's namespace
/// and `class` a StorageClass by name.
pub fn pod_claims<'a, 'c>(
    set: &StatefulSet,
    pod: &Pod,
    claim: impl Fn(&str) -> Option<&'a PersistentVolumeClaim>,
    class: impl Fn(&str) -> Option<&'c StorageClass>,
) -> PodClaims {
    let ordinal = identity::pod_ordinal(pod).map_or(-1, i64::from);
    let pod_name = pod.metadata.name.as_deref().unwrap_or("");
    let mut out = PodClaims { matched: true, ready: true, completed: true, writes: Vec::new(), refusal: None };
    for template in &set.spec.volume_claim_templates {
        let name = identity::claim_name(set, template, ordinal);
        let Some(c) = claim(&name).filter(|c| c.metadata.deletion_timestamp.is_none()) else { continue };
        // IsOwnedPVCsReady reads only the second answer: a claim still below its template's
        // size is ready when it has what it asks for.
        out.ready &= compatible_and_ready(c, template).1;
        out.completed &= patch_completed(c, template);
        let (matched, expand_only) = compare(c, template);
        out.matched &= matched;
        if matched || out.refusal.is_some() {
            continue;
        }
        let refuse = |message: String, warn: bool| Some(Refusal { claim: name.clone(), message, warn });
        let class_name = c.spec.as_ref().and_then(|s| s.storage_class_name.as_deref());
        out.refusal = if !expand_only {
            refuse(
                format!("can not patch pvc {name}: contains diff other than spec resource, wait pvc to be deleted"),
                true,
            )
        } else {
            match class_name.map(|sc| (sc, class(sc))) {
                Some((sc, None)) => {
                    refuse(format!("could not get sc {sc} for {pod_name} when checking PVC spec"), false)
                }
                Some((sc, Some(class))) if class.allow_volume_expansion != Some(true) => {
                    refuse(format!("storage class {sc} for {pod_name} does not support volume expansion"), false)
                }
                _ => None,
            }
        };
        if out.refusal.is_none() {
            out.writes.extend(resize_claim(set, c, template));
        }
    }
    out
}

#[cfg(test)]
mod tests;
