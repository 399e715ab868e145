//! One round of the SidecarSet controller (spec §4.12, kruise `sidecarset_processor.go`
//! `UpdateSidecarSet`): matching pods, revisions, status, then the in-place upgrade of injected
//! sidecars. The interface the controller (`controller/sidecarset.rs`) and `kruise plan
//! sidecarset` build on.
//!
//! The round, as kruise's steps:
//! 1. `getMatchingPods`: pods of the set's namespaces matching its selector, active, whose
//!    injected list names the set and that still hold its containers ([`pods`]);
//! 2. `registerLatestRevision` + `truncateHistory` ([`revision`]);
//! 3. `calculateStatus` + `updateSidecarSetStatus` ([`status`]), written only when changed;
//! 4. stop when `updateStrategy.type: NotUpdate` or `paused`;
//! 5. hot upgrade: pods whose new container is consistent and ready get the old one reset to the
//!    empty image, and the round ends there ([`hotupgrade`]);
//! 6. stop when every matched pod is updated;
//! 7. `GetNextUpgradePods` ([`strategy`]): pods that cannot be upgraded are marked (condition,
//!    Event naming what differs) once; the chosen ones are upgraded in place ([`upgrade`]).
//!
//! kruise's update and resourceVersion expectations (wait until the cache shows the pods this
//! controller just wrote) belong to the reconciler: every pod write here is pinned to the
//! resourceVersion the round saw, so a stale view costs a 409, never a second write.
//!
//! Cost: linear in the candidate pods; the set's sidecars are read once per round
//! ([`pods::SetView`]), each pod's annotations once ([`pods::Facts`]), and only pods that are
//! written are cloned.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};

use super::pods::{self, Facts, SetView};
use super::{NOT_UPDATE, hotupgrade, revision, status, strategy, upgrade};
use crate::apis::SidecarSet;
use crate::apis::sidecarset::SidecarSetStatus;
use crate::compat::selector::Selector;
use crate::core::features::FeatureGates;
use crate::core::pods as core_pods;
use crate::core::rollout::actions::{Action, ActionKind, Write};
use crate::core::rollout::plan::{Event, name_list};

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

/// Event reason on a pod whose sidecars cannot be upgraded in place.
pub const NOT_UPGRADABLE_REASON: &str = "SidecarNotUpgradable";

fn pod_event(pod: &Pod, event: Event) -> PodEvent {
    PodEvent {
        namespace: pod.metadata.namespace.clone().unwrap_or_default(),
        name: core_pods::name(pod).to_string(),
        uid: pod.metadata.uid.clone(),
        event,
    }
}

fn push_action(plan: &mut Plan, pod: &Pod, action: Action) {
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    plan.pod_actions.entry(ns).or_default().push(action);
}

/// Plans one round for `input.set`.
pub fn plan(input: &Input<'_>) -> Plan {
    let set = input.set;
    let view = SetView::new(set);
    let mut plan = Plan::default();

    // 1. Matching pods.
    let selector = match Selector::from_validated(set.spec.selector.as_ref()) {
        Ok(s) => s,
        Err(e) => {
            plan.waiting.push(format!("spec.selector does not parse: {e}"));
            return plan;
        }
    };
    let empty = BTreeMap::new();
    let matched: Vec<&Pod> = input
        .pods
        .iter()
        .copied()
        .filter(|p| {
            let ns = crate::core::sidecar::pod_namespace(p.metadata.namespace.as_deref());
            let labels = input.namespace_labels.get(ns);
            !selector.is_empty()
                && selector.matches(core_pods::labels(p))
                && pods::in_scope(set, ns, labels)
                && core_pods::is_active(p)
                && pods::is_injected(p, view.name)
                && pods::has_set_containers(&view, p)
        })
        .collect();
    let facts: Vec<Facts> = matched.iter().map(|p| Facts::of(&view, p)).collect();

    // 2. Revisions.
    let pod_revisions: BTreeSet<&str> =
        facts.iter().map(|f| f.controller_revision.as_str()).filter(|r| !r.is_empty()).collect();
    let registered = revision::register(set, input.revisions, input.manager_namespace, &pod_revisions);
    plan.latest_revision = registered.latest.clone();
    plan.revision_writes = registered.writes;
    plan.waiting.extend(registered.waiting);

    // 3. Status.
    plan.status = status::calculate(set, &facts, &registered.latest, registered.collision_count);
    plan.status_write = status::write(set, &plan.status);

    // 4. NotUpdate and paused.
    let strategy = &set.spec.update_strategy;
    if strategy.type_ == NOT_UPDATE {
        plan.waiting.push("updateStrategy.type is NotUpdate: running pods keep their sidecars".into());
        return plan;
    }
    if strategy.paused {
        plan.waiting.push("updateStrategy.paused: the upgrade is paused".into());
        return plan;
    }

    // 5. Hot upgrade: reset the old containers of pairs whose new container is up.
    if hotupgrade::has_hot_upgrade(&view) {
        let ready: Vec<&Pod> = matched.iter().copied().filter(|p| hotupgrade::ready_to_flip(&view, p)).collect();
        if !ready.is_empty() {
            for p in ready {
                let (flipped, changed) = hotupgrade::flipped(&view, p, input.now);
                let reason = format!("reset the old container(s) {} of hot-upgrade sidecars to the empty image", changed.join(", "));
                let writes = crate::core::rollout::actions::pod_writes(p, &flipped);
                push_action(&mut plan, p, Action::new(ActionKind::ResetHotUpgrade, Some(core_pods::name(p)), &registered.latest, reason, writes));
                plan.pod_events.push(pod_event(
                    p,
                    Event::normal("ResetContainerSucceed", "reset sidecar container image empty successfully".into()),
                ));
            }
            return plan;
        }
    }

    // 6. Done.
    if plan.status.updated_pods >= plan.status.matched_pods {
        return plan;
    }

    // 7. Next pods.
    let selection = strategy::next_upgrade_pods(&view, &matched, &facts);
    plan.waiting.extend(selection.waiting);
    let mut newly_marked = 0usize;
    let mut live = None;
    for &i in &selection.not_upgradable {
        let p = matched[i];
        let Some(write) = upgrade::not_upgradable_write(p, view.name, input.now) else { continue };
        newly_marked += 1;
        let live = live.get_or_insert_with(|| upgrade::live_for_injection(set));
        let ns = crate::core::sidecar::pod_namespace(p.metadata.namespace.as_deref());
        let why = upgrade::why_not_upgradable(live, p, input.namespace_labels.get(ns).unwrap_or(&empty));
        push_action(
            &mut plan,
            p,
            Action::new(ActionKind::MarkNotUpgradable, Some(core_pods::name(p)), &registered.latest, why.clone(), vec![write]),
        );
        plan.pod_events.push(pod_event(p, Event::warning(NOT_UPGRADABLE_REASON, why)));
    }
    if !selection.not_upgradable.is_empty() {
        let names: Vec<&Pod> = selection.not_upgradable.iter().map(|&i| matched[i]).collect();
        plan.waiting.push(format!(
            "{} pod(s) cannot be upgraded in place (more than images differ): {}",
            names.len(),
            name_list(&names)
        ));
    }
    if newly_marked > 0 {
        plan.events.push(Event::normal(
            "NotUpgradablePods",
            format!(
                "SidecarSet in-place update detected {newly_marked} not upgradable pod(s) in this round, will skip them."
            ),
        ));
    }
    for &i in &selection.upgrade {
        let p = matched[i];
        match upgrade::upgraded_pod(&view, p, &registered.latest, input.now) {
            Ok(up) => {
                let writes = upgrade::upgrade_writes(p, &up, view.name, input.now);
                let mut action = Action::new(
                    ActionKind::UpdateInPlace,
                    Some(core_pods::name(p)),
                    &registered.latest,
                    format!("upgrade the sidecars of SidecarSet {} in place", view.name),
                    writes,
                );
                for s in &view.sidecars {
                    let name = if s.hot() { upgrade::hot_upgrade_target(&view, p, s).0 } else { s.name().to_string() };
                    if pods::container(&up, &name).and_then(|c| c.image.as_deref())
                        != pods::container(p, &name).and_then(|c| c.image.as_deref())
                    {
                        action.images.insert(name, s.image().to_string());
                    }
                }
                push_action(&mut plan, p, action);
            }
            Err(e) => plan.waiting.push(format!("pod {}: patchPodMetadata cannot be applied: {e}", core_pods::name(p))),
        }
    }
    plan
}

#[cfg(test)]
mod tests;
