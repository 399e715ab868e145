//! The status an Advanced StatefulSet round reports (spec §6.6), kruise's `computeReplicaStatus`,
//! `updateStatus`, `completeRollingUpdate` and `inconsistentStatus`:
//! - counted over the replicas and the condemned pods: `replicas` = created pods (with a phase),
//!   `readyReplicas` = Running+Ready, `availableReplicas` = also available for `minReadySeconds`,
//!   `currentReplicas` / `updatedReplicas` = created, not terminating, labelled with the current /
//!   update revision name, `updatedReadyReplicas` / `updatedAvailableReplicas` likewise among the
//!   ready ones;
//! - the status starts fresh each round (`observedGeneration`, the revision names, the collision
//!   count, the selector string; no conditions unless this round adds one);
//! - a RollingUpdate whose updated and ready counts both reach `replicas` completes: the current
//!   revision becomes the update revision;
//! - `volumeClaims` (kruise's `updatePVCStatus` with `IsPVCCompatibleAndReady`, computed whatever
//!   the resize gate says): per claim template, how many replica slots have a claim of it, not
//!   being deleted, that is compatible (same access modes in the same order, the same storage
//!   class when both name one, a storage request at least the template's), and how many of those
//!   are ready (a capacity at least the claim's request). The slots are every replica ordinal
//!   (Go fills the missing ones with the pods it would create), or the owned pods' ordinals when
//!   the round stops early (set being deleted); claims are read from the cache, so one created
//!   this round counts from the next;
//! - it is written only when one of the fields kruise compares differs (kruise does not compare
//!   the updated ready/available counts, the collision count or the conditions, and an observed
//!   generation only when it went up — kept; of `volumeClaims` only the entries the old status
//!   has).

use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use k8s_openapi::jiff::Timestamp;

use super::budget::{is_created, is_running_and_ready, is_terminating, min_ready_seconds, running_and_available};
use super::identity::{claim_name, pod_revision};
use crate::apis::statefulset::v1beta1::{StatefulSet, StatefulSetStatus};
use crate::apis::statefulset::{ROLLING_UPDATE, VolumeClaimStatus};
use crate::compat::selector::to_selector_string;

/// `computeReplicaStatus` over pods, added into `status`.
pub fn count_pods<'a>(
    status: &mut StatefulSetStatus,
    pods: impl IntoIterator<Item = &'a Pod>,
    min_ready_seconds: i32,
    current_revision: &str,
    update_revision: &str,
    now: Timestamp,
) {
    for pod in pods {
        let created = is_created(pod);
        let revision = pod_revision(pod);
        if created {
            status.replicas += 1;
        }
        if is_running_and_ready(pod) {
            status.ready_replicas += 1;
            let available = running_and_available(pod, min_ready_seconds, now).0;
            if revision == update_revision {
                status.updated_ready_replicas += 1;
                if available {
                    status.updated_available_replicas += 1;
                }
            }
            if available {
                status.available_replicas += 1;
            }
        }
        if created && !is_terminating(pod) {
            if revision == current_revision {
                status.current_replicas += 1;
            }
            if revision == update_revision {
                status.updated_replicas += 1;
            }
        }
    }
}

/// The status of a round (`updateStatefulSet`'s fresh status plus `updateStatus`) over the
/// replicas and the condemned pods, before `completeRollingUpdate`. Errors when the selector
/// does not convert.
pub fn round_status<'a>(
    set: &StatefulSet,
    pods: impl IntoIterator<Item = &'a Pod>,
    current_revision: &str,
    update_revision: &str,
    collision_count: i32,
    now: Timestamp,
) -> Result<StatefulSetStatus, String> {
    let label_selector = match &set.spec.selector {
        Some(sel) => to_selector_string(sel).map_err(|e| format!("invalid selector: {e:?}"))?,
        None => String::new(),
    };
    let mut status = StatefulSetStatus {
        observed_generation: set.metadata.generation.unwrap_or(0),
        current_revision: current_revision.to_string(),
        update_revision: update_revision.to_string(),
        collision_count: Some(collision_count),
        label_selector,
        ..Default::default()
    };
    count_pods(&mut status, pods, min_ready_seconds(set), current_revision, update_revision, now);
    Ok(status)
}

/// `IsPVCCompatibleAndReady` (with `IsClaimCompatibleWithoutSize`): [`super::resize`] has it,
/// with kruise's tables.
pub use super::resize::compatible_and_ready as claim_compatible_and_ready;

/// `updatePVCStatus` over the pods of `ordinals`: one entry per claim template, in template order.
pub fn volume_claims<'a>(
    set: &StatefulSet,
    ordinals: impl IntoIterator<Item = i64>,
    claim: impl Fn(&str) -> Option<&'a PersistentVolumeClaim>,
) -> Vec<VolumeClaimStatus> {
    let templates = &set.spec.volume_claim_templates;
    let mut out: Vec<VolumeClaimStatus> = templates
        .iter()
        .map(|t| VolumeClaimStatus {
            volume_claim_name: t.metadata.name.clone().unwrap_or_default(),
            ..Default::default()
        })
        .collect();
    for ordinal in ordinals {
        for template in templates {
            let Some(found) = claim(&claim_name(set, template, ordinal)) else { continue };
            if found.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let (compatible, ready) = claim_compatible_and_ready(found, template);
            // Go indexes the entries by template name in a map: the last of a name counts.
            let name = template.metadata.name.as_deref().unwrap_or("");
            if compatible && let Some(entry) = out.iter_mut().rev().find(|e| e.volume_claim_name == name) {
                entry.compatible_replicas += 1;
                entry.compatible_ready_replicas += i32::from(ready);
            }
        }
    }
    out
}

/// `completeRollingUpdate`.
pub fn complete_rolling_update(set: &StatefulSet, status: &mut StatefulSetStatus) {
    if set.spec.update_strategy.type_ == ROLLING_UPDATE
        && status.updated_replicas == status.replicas
        && status.ready_replicas == status.replicas
    {
        status.current_replicas = status.updated_replicas;
        status.current_revision = status.update_revision.clone();
    }
}

/// `inconsistentStatus`: whether `status` must be written over the set's.
pub fn inconsistent_status(set: &StatefulSet, status: &StatefulSetStatus) -> bool {
    let old = set.status.clone().unwrap_or_default();
    if status.observed_generation > old.observed_generation
        || status.replicas != old.replicas
        || status.current_replicas != old.current_replicas
        || status.ready_replicas != old.ready_replicas
        || status.available_replicas != old.available_replicas
        || status.updated_replicas != old.updated_replicas
        || status.current_revision != old.current_revision
        || status.update_revision != old.update_revision
        || status.label_selector != old.label_selector
    {
        return true;
    }
    old.volume_claims.iter().any(|v| {
        match status.volume_claims.iter().find(|n| n.volume_claim_name == v.volume_claim_name) {
            None => true,
            Some(n) => {
                n.compatible_replicas != v.compatible_replicas
                    || n.compatible_ready_replicas != v.compatible_ready_replicas
            }
        }
    })
}

#[cfg(test)]
mod tests;
