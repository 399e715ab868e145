//! What the scale and update steps of one CloneSet round share: the observed world (the CloneSet
//! read as [`Settings`], its active pods, PVCs, revisions, nodes, the clock and the id seed). What
//! a step produces is the shared [`Step`] (its error becomes the FailedScale/FailedUpdate
//! condition).

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod};
use k8s_openapi::jiff::Timestamp;

use super::pods::IdSource;
use super::revision::Revision;
use super::settings::Settings;
use crate::apis::cloneset::CloneSet;
use crate::apis::podunavailablebudget::PodUnavailableBudget;
use crate::core::rollout::actions::PodChanges;
pub use crate::core::rollout::plan::{Event, Step, name_list};

/// The observed world of one round.
pub struct Round<'a> {
    pub cs: &'a CloneSet,
    pub settings: &'a Settings,
    pub now: Timestamp,
    pub current: &'a Revision,
    pub update: &'a Revision,
    /// Every known revision (sorted), the update revision included even when it is being created.
    pub revisions: &'a [ControllerRevision],
    /// Active owned pods.
    pub pods: &'a [&'a Pod],
    pub pvcs: &'a [&'a PersistentVolumeClaim],
    pub nodes: &'a [Node],
    /// PodUnavailableBudgets of the CloneSet's namespace (read with gate
    /// PodUnavailableBudgetUpdateGate only).
    pub budgets: &'a [&'a PodUnavailableBudget],
    /// Budget units the controller takes before the writes of the pods they name, in order.
    pub budget_takes: Vec<crate::core::budget::rollout::BudgetTake>,
    pub ids: IdSource,
    pub changes: PodChanges,
}

impl Round<'_> {
    /// The CloneSet's name.
    pub fn name(&self) -> &str {
        self.cs.metadata.name.as_deref().unwrap_or("")
    }
}
