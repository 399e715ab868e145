//! Workload rollout planners (spec §5, §6): given a workload and what it owns, this round's actions
//! with their reasons. [`cloneset`] is the CloneSet planner, [`statefulset`] the Advanced
//! StatefulSet's decisions (its round is being assembled); what every planner shares is here:
//! [`actions`] (what a plan asks a reconciler to write), [`plan`] (steps, Events, the planned
//! status write), [`ownership`] (which pods, PVCs and revisions a workload owns), [`podupdate`]
//! (the in-place update and lifecycle machine every workload runs on its pods) and [`order`]
//! (priority and scatter update ordering).

pub mod actions;
pub mod cloneset;
pub mod daemonset;
pub mod order;
pub mod ownership;
pub mod plan;
pub mod podupdate;
pub mod sidecarset;
pub mod statefulset;
#[cfg(test)]
pub(crate) mod testkit;
