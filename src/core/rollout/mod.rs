//! Workload rollout planners (spec §5, §6): given a workload and what it owns, this round's actions
//! with their reasons. [`cloneset`] is the CloneSet planner; [`actions`] (what a plan asks a
//! reconciler to do) and [`order`] (priority and scatter update ordering) are shared with the
//! Advanced StatefulSet and SidecarSet planners to come.

pub mod actions;
pub mod cloneset;
pub mod order;
pub mod statefulset;
