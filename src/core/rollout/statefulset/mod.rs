//! The Advanced StatefulSet planner's pure decisions (spec §6): kruise's
//! `pkg/controller/statefulset` split by what each part decides. Nothing here talks to the API
//! server; callers pass the set, its pods, claims and revisions, and get owned answers back.
//! - [`adoption`]: which pods and revisions the set owns, adopts and releases;
//! - [`ordinals`]: which ordinals the set's replicas have (`spec.ordinals.start`,
//!   `reserveOrdinals`), which pods are replicas and which are condemned;
//! - [`identity`]: pod names, network identity, storage, and new pods built from the template;
//! - [`revision`]: the ControllerRevision data, names and the template a revision restores;
//! - [`pvc`]: the owner references `persistentVolumeClaimRetentionPolicy` asks of each claim;
//! - [`resize`]: claims expanded to their template's size as the pods roll
//!   (`volumeClaimUpdateStrategy: OnPodRollingUpdate`), and `status.volumeClaims`;
//! - [`scale`]: creations, failed-pod replacements, identity repairs and condemned deletions
//!   (OrderedReady one at a time, Parallel bounded by `scaleStrategy.maxUnavailable`);
//! - [`budget`]: `maxUnavailable`, the unavailable set, update order and which pods this round
//!   may update;
//! - [`status`]: the status counters computed from the pods;
//! - [`conditions`]: `FailedCreatePod` / `FailedUpdatePod` when a pod write of a round fails;
//! - [`predownload`]: the ImagePullJobs a rollout creates to pre-pull its images (spec §7);
//! - [`plan`]: one round of the controller assembled from all of the above and the shared
//!   pod-update machine ([`crate::core::rollout::podupdate`]).
//!
//! The in-place update and lifecycle-hook steps of a rolling update are the pod-update machinery
//! shared with the CloneSet; [`plan`] calls it.

pub mod adoption;
pub mod budget;
pub mod conditions;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod identity;
pub mod ordinals;
pub mod plan;
pub mod predownload;
#[cfg(test)]
mod props;
pub mod pvc;
pub mod resize;
pub mod revision;
pub mod scale;
pub mod status;
#[cfg(test)]
pub(crate) mod testkit;
