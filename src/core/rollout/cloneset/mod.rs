//! The CloneSet planner (spec §5): one reconcile round of kruise's CloneSet controller as a pure
//! function. [`plan::plan`] is the entry point; the steps live in their own files:
//! [`settings`] (the spec as the controller reads it), [`revision`] (ControllerRevisions),
//! [`diff`] (the scale/update arithmetic), [`scale`] with [`pods`] (new pods, PVCs, instance
//! ids) and [`ranking`] (which pods go first on scale-down), [`update`] (in-place and recreate
//! updates, their order and limits), [`status`] (status and the Progressing condition).
//! [`predownload`] is the round's image pre-download (spec §7).
//! [`owner`] says what a CloneSet plans with (it never adopts orphan pods).

pub mod diff;
pub mod plan;
pub mod pods;
pub mod predownload;
#[cfg(test)]
mod props;
pub mod ranking;
pub mod revision;
pub mod round;
pub mod scale;
pub mod settings;
pub mod status;
#[cfg(test)]
pub(crate) mod testkit;
pub mod update;

use crate::apis::cloneset::CloneSet;
use crate::compat::selector::Selector;
use crate::core::rollout::ownership::Owner;

/// The CloneSet as the owner its pods, PVCs and revisions are sorted out for: kruise never adopts
/// orphan pods into a CloneSet (it adopts orphan revisions).
pub fn owner<'a>(cs: &'a CloneSet, selector: Option<&'a Selector>) -> Owner<'a> {
    Owner { group: "apps.kruise.io", kind: "CloneSet", meta: &cs.metadata, selector, adopt_orphans: false }
}
