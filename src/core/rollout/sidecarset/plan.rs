//! One round of the SidecarSet controller (spec §4.12, kruise `sidecarset_processor.go`
//! `UpdateSidecarSet`): matching pods, revisions, status, then the in-place upgrade of injected
//! sidecars. The interface the controller (`controller/sidecarset.rs`) and `kruise plan
//! sidecarset` build on.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use crate::apis::SidecarSet;
use crate::apis::sidecarset::SidecarSetStatus;
use crate::core::features::FeatureGates;
use crate::core::rollout::actions::{Action, Write};
use crate::core::rollout::plan::Event;

/// What a round is planned from.
pub struct Input<'a> {
    pub set: &'a SidecarSet,
    /// Candidate pods: the pods of every namespace the set can reach (its [`crate::core::sidecar::scope`]);
    /// the planner decides which of them the set manages (spec §4.12 item 1).
    pub pods: &'a [&'a Pod],
    /// Namespace name → its labels, for `namespaceSelector` (a namespace not listed is not matched).
    pub namespace_labels: &'a BTreeMap<String, BTreeMap<String, String>>,
    /// The ControllerRevisions of the manager namespace labelled `kruise.io/sidecarset-name=<set>`.
    pub revisions: &'a [&'a ControllerRevision],
    /// The manager namespace (kruise's `POD_NAMESPACE`), where revisions live.
    pub manager_namespace: &'a str,
    pub gates: &'a FeatureGates,
    pub now: Timestamp,
}

/// An Event recorded on a pod (not on the SidecarSet): why this pod's sidecars cannot be upgraded.
#[derive(Clone, Debug, PartialEq)]
pub struct PodEvent {
    pub namespace: String,
    pub name: String,
    pub uid: Option<String>,
    pub event: Event,
}

/// One round's decisions.
#[derive(Debug, Default)]
pub struct Plan {
    /// The latest revision's name (`<set>-<hash>`), also in `status.latestRevision`.
    pub latest_revision: String,
    /// Revision writes in the manager namespace (create, bump, truncate), sent first.
    pub revision_writes: Vec<Write>,
    /// Pod actions by pod namespace (pod updates and `SidecarSetUpgradable` condition writes), sent
    /// after the revision writes.
    pub pod_actions: BTreeMap<String, Vec<Action>>,
    /// Events on the SidecarSet.
    pub events: Vec<Event>,
    /// Events on pods.
    pub pod_events: Vec<PodEvent>,
    /// Why the upgrade is not moving further this round (for `kruise plan` and the log).
    pub waiting: Vec<String>,
    /// The round's status.
    pub status: SidecarSetStatus,
    /// Its write (the SidecarSet's status subresource), when it changed; sent last.
    pub status_write: Option<Write>,
    pub requeue_after: Option<SignedDuration>,
}

/// Plans one round for `input.set`.
pub fn plan(input: &Input<'_>) -> Plan {
    let _ = input;
    Plan::default()
}
