//! The SidecarSet controller's decisions (spec §4.12, kruise `pkg/controller/sidecarset/`,
//! `pkg/control/sidecarcontrol/`; issue 28): which pods a SidecarSet manages, its revisions in the
//! manager namespace, its status, and which injected pods get the new sidecars in place (cold and
//! hot upgrade) this round. [`plan::plan`] is the round; the controller and `kruise plan
//! sidecarset` both call it.
//!
//! - [`pods`]: which pods the set manages and what the round reads of each (spec §4.12.1, kruise
//!   `util.go`, `sidecarset_control.go`): updated, consistent, ready, upgradable;
//! - [`revision`]: the set's ControllerRevisions (spec §4.12.2, `history_control.go`,
//!   `registerLatestRevision`, `truncateHistory`);
//! - [`status`]: the status counts (spec §4.12.3, `calculateStatus`);
//! - [`strategy`]: which pods are upgraded this round (`sidecarset_strategy.go`);
//! - [`upgrade`]: the pod update and the `SidecarSetUpgradable` condition
//!   (`updatePodSidecarAndHash`), and why a pod cannot be upgraded;
//! - [`hotupgrade`]: resetting the idle container of a hot-upgrade pair (`sidecarset_hotupgrade.go`).

pub mod hotupgrade;
pub mod plan;
pub mod pods;
pub mod revision;
pub mod status;
pub mod strategy;
pub mod upgrade;

#[cfg(test)]
mod props;
#[cfg(test)]
pub(crate) mod testkit;

/// Pod condition type saying whether the pod's sidecars can be upgraded in place.
pub const SIDECARSET_UPGRADABLE: &str = "SidecarSetUpgradable";
/// Pod annotation: per SidecarSet, the `InPlaceUpdateState` of its last in-place upgrade.
pub const INPLACE_UPDATE_STATE: &str = "kruise.io/sidecarset-inplace-update-state";
/// `updateStrategy.type` that stops in-place upgrades.
pub const NOT_UPDATE: &str = "NotUpdate";

/// `version.sidecarset.kruise.io/<container>`: the SidecarSet resourceVersion a hot-upgrade
/// container runs.
pub fn version_annotation(container: &str) -> String {
    format!("version.sidecarset.kruise.io/{container}")
}

/// `versionalt.sidecarset.kruise.io/<container>`: the version of its twin.
pub fn version_alt_annotation(container: &str) -> String {
    format!("versionalt.sidecarset.kruise.io/{container}")
}
