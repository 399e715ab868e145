//! `kruise plan` for SidecarSets (issue 28 item 10): one round of the SidecarSet controller on
//! manifests or on what `kruise plan sidecarset NAME` read from the cluster, planned by the
//! controller's planner ([`crate::core::rollout::sidecarset::plan::plan`]) on the input the
//! controller builds: the objects are held in the cluster view's store
//! ([`crate::cluster::snapshot::Snapshot`], which converts a v1beta1 SidecarSet to the v1alpha1
//! model and defaults and hashes a set as the webhook would), the set's pods are those whose
//! `kruise.io/sidecarset-injected-list` names it (the controller's pod index) in the namespaces it
//! can reach ([`crate::core::sidecar::scope`]), and its revisions and namespace labels are read
//! by [`crate::cluster::sidecarset::round_objects`], as the controller reads them.
//!
//! On top of the plan it says, pod by pod, what the round makes of each injected pod: upgraded
//! next (to which images), updated, waiting and why (`updateStrategy.selector`, `partition`,
//! `maxUnavailable`, `paused`, `NotUpdate`, an upgrade still settling), not upgradable and which
//! container fields stop it, or not managed at all and why. These per-pod reasons are read from
//! the planner's own pieces (`pods::Facts`, `strategy::sort_indexes`, `upgrade::why_not_upgradable`)
//! in the order `GetNextUpgradePods` applies them; the pods chosen are the plan's, never
//! recomputed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use serde::Serialize;

use super::{PlanError, Settings};
use crate::apis::SidecarSet;
use crate::check::input::Manifest;
use crate::cluster::ClusterView;
use crate::cluster::sidecarset::round_objects;
use crate::cluster::snapshot::{Snapshot, ViewKind};
use crate::compat::intstr::calculate_partition_replicas;
use crate::compat::selector::Selector;
use crate::controller::index::injected_sets;
use crate::core::pods as core_pods;
use crate::core::rollout::actions::{Action, ActionKind, revision_actions};
use crate::core::rollout::sidecarset::plan::{Input, Plan, plan};
use crate::core::rollout::sidecarset::pods::{self, Facts, SetView};
use crate::core::rollout::sidecarset::{NOT_UPDATE, strategy, upgrade};
use crate::core::sidecar::{Scope, pod_namespace, scope};

/// What a round makes of one injected pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum PodState {
    /// Its sidecars are upgraded in place this round.
    UpgradeNext,
    /// The idle container of its hot-upgrade pair is reset to the empty image this round.
    ResetHotUpgrade,
    /// Runs the latest sidecars, ready.
    Updated,
    /// Has the latest sidecars in its spec, not yet running them or not ready (it counts against
    /// `maxUnavailable`).
    Updating,
    /// Not upgraded this round; the reason says why.
    Waiting,
    /// Cannot be upgraded in place: more than images differ.
    NotUpgradable,
    /// Injected, but the set does not manage it (the reason says why).
    NotManaged,
}

/// One pod's line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PodLine {
    /// `namespace/name`.
    pub pod: String,
    pub state: PodState,
    pub reason: String,
    /// For [`PodState::UpgradeNext`]: container → new image.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub images: BTreeMap<String, String>,
    /// For [`PodState::NotUpgradable`]: whether this round writes `SidecarSetUpgradable=False`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub marked: bool,
}

/// One SidecarSet's plan and its pods.
#[derive(Debug)]
pub struct PlannedSidecarSet {
    pub name: String,
    pub plan: Plan,
    /// The revision writes as actions (the plan keeps them apart from the pod actions).
    pub revision_actions: Vec<Action>,
    /// Every pod whose injected list names the set, in namespace/name order.
    pub pods: Vec<PodLine>,
}

/// Whether the manifests hold a SidecarSet.
pub fn has_sidecarset(manifests: &[Manifest]) -> bool {
    manifests.iter().any(|m| {
        let api = m.object["apiVersion"].as_str().unwrap_or("");
        ViewKind::of(api, m.object["kind"].as_str().unwrap_or("")) == Some(ViewKind::SidecarSet)
    })
}

/// The cluster view's store over the manifests of the kinds it holds.
fn snapshot(manifests: &[Manifest]) -> Result<Snapshot, PlanError> {
    let mut view = Snapshot::default();
    for m in manifests {
        view.insert(m.object.clone()).map_err(|e| PlanError::Decode {
            file: m.file.clone(),
            line: m.line,
            kind: m.object["kind"].as_str().unwrap_or("").to_string(),
            name: m.object["metadata"]["name"].as_str().unwrap_or("").to_string(),
            message: e.to_string(),
        })?;
    }
    Ok(view)
}

/// The pods of the namespaces the set can reach whose injected list names it (the controller's
/// `sidecarset/<name>` pod index), in namespace/name order.
fn injected_pods(view: &Snapshot, set: &SidecarSet, pod_namespaces: &BTreeSet<String>) -> Vec<Arc<Pod>> {
    let name = set.metadata.name.as_deref().unwrap_or("");
    let namespaces: Vec<String> = match scope(set) {
        Scope::Namespaces(ns) => ns.into_iter().collect::<BTreeSet<_>>().into_iter().collect(),
        Scope::Cluster => pod_namespaces.iter().cloned().collect(),
    };
    let mut out: Vec<Arc<Pod>> = namespaces
        .iter()
        .flat_map(|ns| view.pods_in_namespace(ns))
        .filter(|p| injected_sets(&p.metadata).any(|n| n == name))
        .collect();
    out.sort_by(|a, b| {
        (pod_namespace(a.metadata.namespace.as_deref()), &a.metadata.name)
            .cmp(&(pod_namespace(b.metadata.namespace.as_deref()), &b.metadata.name))
    });
    out
}

/// Plans every SidecarSet of the manifests, in name order.
pub fn plan_sidecarsets(manifests: &[Manifest], settings: &Settings<'_>) -> Result<Vec<PlannedSidecarSet>, PlanError> {
    let view = snapshot(manifests)?;
    let pod_namespaces: BTreeSet<String> = manifests
        .iter()
        .filter(|m| m.object["kind"] == "Pod" && m.object["apiVersion"] == "v1")
        .map(|m| pod_namespace(m.object["metadata"]["namespace"].as_str()).to_string())
        .collect();
    let mut sets = view.sidecarsets();
    sets.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut out = Vec::new();
    for set in sets {
        let name = set.metadata.name.clone().unwrap_or_default();
        let owned = injected_pods(&view, &set, &pod_namespaces);
        let pods: Vec<&Pod> = owned.iter().map(Arc::as_ref).collect();
        let read = round_objects(&view, &name, &pods, settings.manager_namespace);
        let revisions = read.revision_refs();
        let input = Input {
            set: &set,
            pods: &pods,
            namespace_labels: &read.namespace_labels,
            revisions: &revisions,
            manager_namespace: settings.manager_namespace,
            gates: settings.gates,
            now: settings.now,
        };
        let planned = plan(&input);
        let lines = pod_lines(&input, &planned);
        out.push(PlannedSidecarSet {
            revision_actions: revision_actions(&planned.revision_writes, "SidecarSet revision history"),
            name,
            plan: planned,
            pods: lines,
        });
    }
    Ok(out)
}

fn line(pod: &Pod, state: PodState, reason: String) -> PodLine {
    let ns = pod_namespace(pod.metadata.namespace.as_deref());
    PodLine { pod: format!("{ns}/{}", core_pods::name(pod)), state, reason, images: BTreeMap::new(), marked: false }
}

/// Why the set does not manage an injected pod (the planner's matching filter, spec §4.12
/// item 1), or `None` when it does.
fn not_managed(input: &Input<'_>, view: &SetView<'_>, selector: &Selector, pod: &Pod) -> Option<String> {
    let ns = pod_namespace(pod.metadata.namespace.as_deref());
    if selector.is_empty() {
        return Some("spec.selector is empty: it selects no pod".into());
    }
    if !selector.matches(core_pods::labels(pod)) {
        return Some("spec.selector no longer matches its labels".into());
    }
    if !pods::in_scope(input.set, ns, input.namespace_labels.get(ns)) {
        return Some(format!("namespace {ns} is outside spec.namespace / spec.namespaceSelector"));
    }
    if !core_pods::is_active(pod) {
        return Some("not active (terminating, Succeeded or Failed)".into());
    }
    if !pods::has_set_containers(view, pod) {
        return Some("it no longer has every container of the set".into());
    }
    None
}

/// What the round makes of each pod of `input` (see the module comment).
pub fn pod_lines(input: &Input<'_>, planned: &Plan) -> Vec<PodLine> {
    let set = input.set;
    let view = SetView::new(set);
    let selector = match Selector::from_validated(set.spec.selector.as_ref()) {
        Ok(s) => s,
        Err(e) => {
            let why = format!("spec.selector does not parse: {e}");
            return input.pods.iter().map(|p| line(p, PodState::NotManaged, why.clone())).collect();
        }
    };
    let actions: BTreeMap<(&str, &str), &Action> = planned
        .pod_actions
        .iter()
        .flat_map(|(ns, list)| list.iter().map(move |a| ((ns.as_str(), a.pod.as_deref().unwrap_or("")), a)))
        .collect();
    let action_of = |p: &Pod, kind: ActionKind| {
        let key = (p.metadata.namespace.as_deref().unwrap_or(""), core_pods::name(p));
        actions.get(&key).copied().filter(|a| a.kind == kind)
    };
    let strategy = &set.spec.update_strategy;
    let update_selector = strategy.selector.as_ref().map(|s| Selector::from_validated(Some(s)).ok());
    let resetting = planned.pod_actions.values().flatten().any(|a| a.kind == ActionKind::ResetHotUpgrade);
    let empty = BTreeMap::new();
    let mut live = None;

    let mut lines: Vec<Option<PodLine>> = vec![None; input.pods.len()];
    // Indexes into `input.pods` of the matched pods, in input order (the planner's order).
    let mut matched: Vec<usize> = Vec::new();
    for (i, p) in input.pods.iter().enumerate() {
        match not_managed(input, &view, &selector, p) {
            Some(why) => lines[i] = Some(line(p, PodState::NotManaged, why)),
            None => matched.push(i),
        }
    }
    let matched_pods: Vec<&Pod> = matched.iter().map(|&i| input.pods[i]).collect();
    let facts: Vec<Facts> = matched_pods.iter().map(|p| Facts::of(&view, p)).collect();
    // Positions in `matched_pods` of the pods GetNextUpgradePods would consider.
    let mut eligible = Vec::new();
    for (m, (p, f)) in matched_pods.iter().zip(&facts).enumerate() {
        let state = if let Some(a) = action_of(p, ActionKind::UpdateInPlace) {
            // Sorted with the others: the partition is counted over every candidate.
            eligible.push(m);
            let mut l = line(p, PodState::UpgradeNext, a.reason.clone());
            l.images = a.images.clone();
            Some(l)
        } else if let Some(a) = action_of(p, ActionKind::ResetHotUpgrade) {
            Some(line(p, PodState::ResetHotUpgrade, a.reason.clone()))
        } else if f.updated && f.consistent && f.ready {
            Some(line(p, PodState::Updated, format!("runs the sidecars of {}", planned.latest_revision)))
        } else if f.updated {
            let why = if f.consistent { "the pod is not ready" } else { "the new sidecars are not running yet" };
            Some(line(p, PodState::Updating, format!("updated, {why} (counts against maxUnavailable)")))
        } else if update_selector.as_ref().is_some_and(|s| !s.as_ref().is_some_and(|s| s.matches(core_pods::labels(p))))
        {
            Some(line(p, PodState::Waiting, "not selected by updateStrategy.selector".into()))
        } else if !f.can_upgrade {
            let ns = pod_namespace(p.metadata.namespace.as_deref());
            let live = live.get_or_insert_with(|| upgrade::live_for_injection(set));
            let why = upgrade::why_not_upgradable(live, p, input.namespace_labels.get(ns).unwrap_or(&empty));
            let mut l = line(p, PodState::NotUpgradable, why);
            l.marked = action_of(p, ActionKind::MarkNotUpgradable).is_some();
            Some(l)
        } else if strategy.type_ == NOT_UPDATE {
            Some(line(p, PodState::Waiting, "updateStrategy.type is NotUpdate".into()))
        } else if strategy.paused {
            Some(line(p, PodState::Waiting, "updateStrategy.paused is true".into()))
        } else if resetting {
            Some(line(
                p,
                PodState::Waiting,
                "this round only resets hot-upgrade containers; upgrades resume in the next round".into(),
            ))
        } else if !f.upgrade_settled {
            Some(line(p, PodState::Waiting, "a ready sidecar of the pod is still being upgraded".into()))
        } else {
            eligible.push(m);
            None
        };
        lines[matched[m]] = state;
    }
    // The candidates the strategy did not take: the last `partition` in its order are kept back
    // by the partition, the others by maxUnavailable.
    let sorted = strategy::sort_indexes(&view, &matched_pods, eligible);
    let total = i32::try_from(matched_pods.len()).ok();
    let partition =
        strategy.partition.as_ref().map_or(0, |p| calculate_partition_replicas(Some(p), total).unwrap_or(0));
    let partition = usize::try_from(partition).unwrap_or(0);
    let kept_from = sorted.len().saturating_sub(partition);
    let max = strategy::max_unavailable(strategy.max_unavailable.as_ref(), matched_pods.len());
    for (order, &m) in sorted.iter().enumerate() {
        let p = matched_pods[m];
        if lines[matched[m]].is_some() {
            continue;
        }
        let not_ready = if facts[m].ready { "" } else { " (not ready)" };
        let why = if order >= kept_from {
            format!("partition {partition} keeps it at the old sidecars (last in the update order){not_ready}")
        } else {
            format!("maxUnavailable {max} is used up by pods being upgraded or not ready{not_ready}")
        };
        lines[matched[m]] = Some(line(p, PodState::Waiting, why));
    }
    lines.into_iter().flatten().collect()
}
