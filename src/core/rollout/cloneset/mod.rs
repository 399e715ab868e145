//! The CloneSet planner (spec §5): one reconcile round of kruise's CloneSet controller as a pure
//! function. [`plan::plan`] is the entry point; the steps live in their own files:
//! [`settings`] (the spec as the controller reads it), [`revision`] (ControllerRevisions),
//! [`diff`] (the scale/update arithmetic), [`scale`] with [`pods`] (new pods, PVCs, instance
//! ids) and [`ranking`] (which pods go first on scale-down), [`update`] (in-place and recreate
//! updates, their order and limits), [`status`] (status and the Progressing condition).

pub mod diff;
pub mod plan;
pub mod pods;
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
