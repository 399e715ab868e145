//! What the scale and update steps of one CloneSet round share: the observed world (the CloneSet
//! read as [`Settings`], its active pods, PVCs, revisions, nodes, the clock and the id seed), and
//! what a step produces — actions, Events (with kruise's reasons), the reasons the rollout waits,
//! an error (it becomes the FailedScale/FailedUpdate condition) and when to look again.

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Node, PersistentVolumeClaim, Pod};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde::Serialize;

use super::pods::IdSource;
use super::revision::Revision;
use super::settings::Settings;
use crate::apis::cloneset::CloneSet;
use crate::core::pods;
use crate::core::rollout::actions::{Action, PodChanges};

/// An Event to record on the CloneSet, as kruise names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Event {
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: &'static str,
    /// Kruise's reason (`SuccessfulCreate`, `ScaleUpLimited`, …).
    pub reason: &'static str,
    /// Message.
    pub message: String,
}

impl Event {
    /// A Normal event.
    pub fn normal(reason: &'static str, message: String) -> Event {
        Event { type_: "Normal", reason, message }
    }

    /// A Warning event.
    pub fn warning(reason: &'static str, message: String) -> Event {
        Event { type_: "Warning", reason, message }
    }
}

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
    pub ids: IdSource,
    pub changes: PodChanges,
}

impl Round<'_> {
    /// The CloneSet's name.
    pub fn name(&self) -> &str {
        self.cs.metadata.name.as_deref().unwrap_or("")
    }
}

/// What one step decided.
#[derive(Debug, Default)]
pub struct Step {
    pub actions: Vec<Action>,
    pub events: Vec<Event>,
    pub waiting: Vec<String>,
    pub error: Option<String>,
    pub requeue: Option<SignedDuration>,
}

impl Step {
    /// Requeue after `d` (the shortest positive wins, as kruise's DurationStore keeps it).
    pub fn requeue_after(&mut self, d: SignedDuration) {
        if d > SignedDuration::ZERO && self.requeue.is_none_or(|r| d < r) {
            self.requeue = Some(d);
        }
    }
}

/// "web-a, web-b and 3 more": names for a waiting message.
pub fn name_list(pods: &[&Pod]) -> String {
    let names: Vec<&str> = pods.iter().map(|p| pods::name(p)).collect();
    match names.len() {
        0 => String::new(),
        1..=3 => names.join(", "),
        n => format!("{} and {} more", names[..3].join(", "), n - 3),
    }
}
