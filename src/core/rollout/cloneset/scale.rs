//! The CloneSet scale step (spec §5.4; kruise's `sync/cloneset_scale.go`), in kruise's order,
//! returning after the first part that changes something:
//! 1. PreparingDelete pods that nobody asked to delete go back to PreparingNormal while replicas
//!    want them (not when a hook marks pods not ready);
//! 2. scale up by `scaleUpLimit` pods, the first `scaleUpNumOldRevision` at the current revision
//!    (so a scale-up keeps the partition), each with its PVCs, in slow-start batches;
//! 3. delete the pods already in PreparingDelete (their preDelete hook was released);
//! 4. delete the specified pods (podsToDelete or the specified-delete label): not-ready ones
//!    always, ready ones while `deleteReadyLimit` allows;
//! 5. scale down `scaleDownNum` pods chosen by [`super::ranking`], old revisions first, ready ones
//!    limited by `deleteReadyLimit` — unless specified deletions are still pending.
//!
//! Deleting a pod whose preDelete hook holds it moves it to PreparingDelete instead (with
//! markPodNotReady honoured); deleting a pod also deletes the PVCs with its instance id.

use k8s_openapi::api::core::v1::Pod;

use super::diff::{self, ExpectationDiffs};
use super::pods::{INSTANCE_ID, available_ids, claims, instance_id, new_pod};
use super::ranking::{SpreadConstraint, same_node_ranks, sort_for_deletion, spread_ranks};
use super::revision::{Revision, equal_to_revision_hash, template_of};
use super::round::{Event, Round, Step, name_list};
use crate::core::lifecycle;
use crate::core::lifecycle::State;
use crate::core::pods;
use crate::core::rollout::actions::{Action, ActionKind, Write, slow_start_batch};

fn is_update(r: &Round<'_>, p: &Pod) -> bool {
    (r.settings.gates.preparing_update_as_update && lifecycle::state(p) == State::PreparingUpdate)
        || equal_to_revision_hash(p, r.update.name())
}

/// The scale step. Also returns the diff it computed.
pub fn scale(r: &mut Round<'_>) -> (Step, ExpectationDiffs) {
    let mut step = Step::default();
    let s = r.settings;
    let pods: Vec<&Pod> = r.pods.to_vec();

    let specified: Vec<&Pod> = pods.iter().copied().filter(|p| s.is_specified_delete(p)).collect();
    let pre_delete: Vec<&Pod> =
        pods.iter().copied().filter(|p| lifecycle::state(p) == State::PreparingDelete).collect();
    let num_to_delete =
        pods.iter().filter(|p| s.is_specified_delete(p) || lifecycle::state(p) == State::PreparingDelete).count()
            as i32;

    // 1. Cancel PreparingDelete for pods replicas still want.
    if !lifecycle::marks_pod_not_ready(s.lifecycle.as_ref()) {
        let mut want = s.replicas - pods.len() as i32 + num_to_delete;
        for p in &pre_delete {
            if want <= 0 {
                break;
            }
            if s.is_specified_delete(p) {
                continue;
            }
            let current = r.changes.current(p).clone();
            if let Some(after) = lifecycle::update_lifecycle(&current, State::PreparingNormal, false, r.now) {
                let writes = r.changes.change(p, after);
                let reason = format!("replicas {} want it again: its deletion is cancelled", s.replicas);
                step.actions.push(set_lifecycle(p, State::PreparingNormal, r.update.name(), reason, writes));
            }
            want -= 1;
        }
        if !step.actions.is_empty() {
            return (step, ExpectationDiffs::default());
        }
    }

    let diff = diff::calculate(s, &pods, r.current.name(), r.update.name(), s.gates.preparing_update_as_update, r.now);
    let (updated, not_updated): (Vec<&Pod>, Vec<&Pod>) = pods.iter().copied().partition(|p| is_update(r, p));

    // 2. Scale up.
    if diff.scale_up_num > diff.scale_up_limit {
        step.events.push(Event::warning(
            "ScaleUpLimited",
            format!("scaleUp is limited because of scaleStrategy.maxUnavailable, limit: {}", diff.scale_up_limit),
        ));
        let unavailable: Vec<&Pod> = pods.iter().copied().filter(|p| !s.is_available(p, r.now)).collect();
        step.waiting.push(format!(
            "{} pods unavailable, scaleStrategy.maxUnavailable {}: {} of {} pods to create wait for {} to become available",
            unavailable.len(),
            s.scale_max_unavailable,
            diff.scale_up_num - diff.scale_up_limit,
            diff.scale_up_num,
            name_list(&unavailable)
        ));
    }
    if diff.scale_up_num > 0 {
        create(r, &mut step, &diff);
        return (step, diff);
    }

    // 3. Pods whose preDelete hook was released.
    if !pre_delete.is_empty() {
        let reason = |_: &Pod| "its preDelete hook was released".to_string();
        if delete_pods(r, &mut step, &pre_delete, reason) {
            return (step, diff);
        }
    }

    // 4. Specified deletions.
    let to_delete: Vec<&Pod> =
        specified.iter().copied().filter(|p| lifecycle::state(p) != State::PreparingDelete).collect();
    if !to_delete.is_empty() {
        let mut limit = diff.delete_ready_limit;
        let mut chosen = Vec::new();
        let mut held = Vec::new();
        for p in &to_delete {
            if !s.is_ready(p, r.now) {
                chosen.push(*p);
            } else if limit > 0 {
                chosen.push(*p);
                limit -= 1;
            } else {
                held.push(*p);
            }
        }
        if !held.is_empty() {
            step.waiting.push(unavailable_wait(r, &held, "to delete", diff.delete_ready_limit));
        }
        let reason = |p: &Pod| {
            if s.pods_to_delete.contains(pods::name(p)) {
                "named in scaleStrategy.podsToDelete".to_string()
            } else {
                format!("labelled {}", crate::apis::keys::SPECIFIED_DELETE)
            }
        };
        if delete_pods(r, &mut step, &chosen, reason) {
            return (step, diff);
        }
    }

    // 5. Scale down.
    if diff.scale_down_num > 0 {
        if num_to_delete > 0 {
            step.waiting.push(format!(
                "{} pods are being deleted: scaling down {} more waits for them",
                num_to_delete, diff.scale_down_num
            ));
            return (step, diff);
        }
        let candidates =
            choose_pods_to_delete(r, diff.scale_down_num, diff.scale_down_num_old_revision, &not_updated, &updated);
        let mut limit = diff.delete_ready_limit;
        let mut chosen = Vec::new();
        let mut held = Vec::new();
        for p in candidates {
            if !s.is_ready(p, r.now) {
                chosen.push(p);
            } else if limit > 0 {
                chosen.push(p);
                limit -= 1;
            } else {
                held.push(p);
            }
        }
        if !held.is_empty() {
            step.waiting.push(unavailable_wait(r, &held, "to scale down", diff.delete_ready_limit));
        }
        let reason = |_: &Pod| format!("scale down to {} replicas", s.replicas);
        delete_pods(r, &mut step, &chosen, reason);
    }
    (step, diff)
}

fn unavailable_wait(r: &Round<'_>, held: &[&Pod], what: &str, limit: i32) -> String {
    let unavailable: Vec<&Pod> = r.pods.iter().copied().filter(|p| !r.settings.is_available(p, r.now)).collect();
    let mut msg = format!(
        "{} ready pods {what} ({}) wait: {} pods unavailable, maxUnavailable {}",
        held.len(),
        name_list(held),
        unavailable.len(),
        r.settings.max_unavailable
    );
    if limit <= 0 && !unavailable.is_empty() {
        msg.push_str(&format!(": waiting for {} to become available", name_list(&unavailable)));
    }
    msg
}

fn set_lifecycle(p: &Pod, state: State, revision: &str, reason: String, writes: Vec<Write>) -> Action {
    Action::new(ActionKind::SetLifecycle, Some(pods::name(p)), revision, format!("{state}: {reason}"), writes)
}

/// `createPods` + `NewVersionedPods`.
fn create(r: &mut Round<'_>, step: &mut Step, diff: &ExpectationDiffs) {
    let expected = usize::try_from(diff.scale_up_limit).unwrap_or(0);
    let at_current = usize::try_from(diff.scale_up_num_old_revision).unwrap_or(0);
    let ids = available_ids(expected, r.pods, r.pvcs, &mut r.ids);
    let reusable: std::collections::BTreeSet<&str> =
        r.pvcs.iter().map(|p| instance_id(p.metadata.labels.as_ref())).filter(|id| !id.is_empty()).collect();
    let existing_pvcs: std::collections::BTreeSet<&str> =
        r.pvcs.iter().filter_map(|p| p.metadata.name.as_deref()).collect();
    let (current, update) = (r.current, r.update);
    let templates: Vec<(&Revision, Result<_, String>)> =
        [current, update].into_iter().map(|rev| (rev, template_of(&rev.object))).collect();
    for (i, id) in ids.iter().enumerate() {
        let (rev, template) = if i < at_current.min(expected) { &templates[0] } else { &templates[1] };
        let template = match template {
            Ok(t) => t,
            Err(e) => {
                step.error = Some(e.clone());
                return;
            }
        };
        let pod = new_pod(r.cs, template, rev.name(), id, r.settings.gates.short_hash, r.now);
        let mut writes: Vec<Write> = claims(r.cs, id)
            .into_iter()
            .filter(|c| !existing_pvcs.contains(c.metadata.name.as_deref().unwrap_or("")))
            .map(|c| Write::CreatePvc { pvc: Box::new(c) })
            .collect();
        let name = pod.metadata.name.clone().unwrap_or_default();
        writes.push(Write::CreatePod { pod: Box::new(pod) });
        let mut reason = if rev.name() == update.name() {
            format!("{} of {} replicas", r.pods.len() + i + 1, r.settings.replicas)
        } else {
            format!(
                "{} of {} replicas, at the current revision to keep partition {}",
                r.pods.len() + i + 1,
                r.settings.replicas,
                r.settings.partition
            )
        };
        if diff.use_surge > 0 {
            reason.push_str(&format!(" (surge {})", diff.use_surge));
        }
        if reusable.contains(id.as_str()) {
            reason.push_str(&format!("; reuses the PVCs of instance {id} ({name})"));
        }
        let mut action = Action::new(ActionKind::Create, None, rev.name(), reason, writes);
        action.batch = Some(slow_start_batch(i));
        step.actions.push(action);
        step.events.push(Event::normal("SuccessfulCreate", format!("succeed to create pod {name}")));
    }
}

/// `deletePods`: delete (with the pod's PVCs) or, when the preDelete hook holds the pod, move it
/// to PreparingDelete. Returns whether anything changed.
fn delete_pods(r: &mut Round<'_>, step: &mut Step, list: &[&Pod], reason: impl Fn(&Pod) -> String) -> bool {
    let before = step.actions.len();
    let pre_delete = r.settings.lifecycle.as_ref().and_then(|l| l.pre_delete.clone());
    for p in list {
        if lifecycle::is_hooked(pre_delete.as_ref(), p) {
            let mark = pre_delete.as_ref().is_some_and(|h| h.mark_pod_not_ready);
            let current = r.changes.current(p).clone();
            match lifecycle::update_lifecycle(&current, State::PreparingDelete, mark, r.now) {
                Some(after) => {
                    let writes = r.changes.change(p, after);
                    let why = format!("{}; its preDelete hook holds it", reason(p));
                    step.actions.push(set_lifecycle(p, State::PreparingDelete, r.update.name(), why, writes));
                }
                None => step.waiting.push(format!(
                    "{} is PreparingDelete: waiting for its preDelete hook labels/finalizers to be removed",
                    pods::name(p)
                )),
            }
            continue;
        }
        let name = pods::name(p).to_string();
        let mut writes = vec![Write::DeletePod {
            name: name.clone(),
            uid: p.metadata.uid.clone(),
            resource_version: p.metadata.resource_version.clone(),
        }];
        let id = instance_id(p.metadata.labels.as_ref());
        for pvc in r
            .pvcs
            .iter()
            .filter(|c| c.metadata.labels.as_ref().and_then(|l| l.get(INSTANCE_ID)).map(String::as_str) == Some(id))
        {
            writes.push(Write::DeletePvc {
                name: pvc.metadata.name.clone().unwrap_or_default(),
                uid: pvc.metadata.uid.clone(),
                resource_version: pvc.metadata.resource_version.clone(),
            });
        }
        let revision = pods::label(p, super::revision::CONTROLLER_REVISION_HASH).unwrap_or("").to_string();
        step.actions.push(Action::new(ActionKind::Delete, Some(&name), &revision, reason(p), writes));
        step.events.push(Event::normal("SuccessfulDelete", format!("succeed to delete pod {name}")));
    }
    step.actions.len() > before
}

/// `choosePodsToDelete`: `total` pods, the first `old` of them from old revisions.
fn choose_pods_to_delete<'p>(
    r: &Round<'_>,
    total: i32,
    old: i32,
    not_updated: &[&'p Pod],
    updated: &[&'p Pod],
) -> Vec<&'p Pod> {
    let constraints: Vec<SpreadConstraint> =
        r.cs.spec
            .template
            .spec
            .as_ref()
            .and_then(|s| s.topology_spread_constraints.as_ref())
            .map(|cs| {
                cs.iter()
                    .map(|c| SpreadConstraint { topology_key: c.topology_key.clone(), limited_values: vec![] })
                    .collect()
            })
            .unwrap_or_default();
    let choose = |list: &[&'p Pod], n: i32| -> Vec<&'p Pod> {
        let n = usize::try_from(n).unwrap_or(0);
        if n >= list.len() {
            return list.to_vec();
        }
        let ranks =
            if constraints.is_empty() { same_node_ranks(list) } else { spread_ranks(list, &constraints, r.nodes) };
        let available: Vec<bool> = list.iter().map(|p| r.settings.is_available(p, r.now)).collect();
        let mut order: Vec<usize> = (0..list.len()).collect();
        sort_for_deletion(list, &mut order, &ranks, &available);
        order.into_iter().take(n).map(|i| list[i]).collect()
    };
    if old >= total {
        choose(not_updated, total)
    } else if old > 0 {
        let mut out = choose(not_updated, old);
        out.extend(choose(updated, total - old));
        out
    } else {
        choose(updated, total)
    }
}

#[cfg(test)]
mod tests;
