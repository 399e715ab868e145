//! The CloneSet update step (spec §5.5, §3.3–§3.5; kruise's `sync/cloneset_update.go`):
//! 1. every pod is refreshed — its in-place update followed to completion and `InPlaceUpdateReady`
//!    set True ([`crate::core::inplace::refresh`]), its lifecycle moved on (PreparingNormal → Normal
//!    once scheduled or all-hooked by preNormal; Updating → Updated/Normal once the update completed;
//!    Updated → Normal once the inPlaceUpdate hook is back; a PreparingUpdate pod already at the
//!    update revision → Updated/Normal), a missing `pod-template-hash` added; if any of that writes,
//!    the round ends;
//! 2. nothing more while paused (or with type OnDelete);
//! 3. `updateNum` from [`super::diff`] says how many pods move, to the update revision or (negative,
//!    gate CloneSetPartitionRollback) back to the current one;
//! 4. candidates — pods not at the target, skipping PreparingDelete pods and pods in a grace period
//!    — are ordered (Kubernetes' ActivePods order, then priority, then scatter, then PreparingUpdate
//!    first) and limited by maxUnavailable ([`limit`]);
//! 5. each chosen pod is updated in place when the policy allows and the two revisions can
//!    ([`crate::core::inplace::classify`]), with the inPlaceUpdate hook's PreparingUpdate gate
//!    first; otherwise it is labelled `apps.kruise.io/specified-delete` and the scale step replaces
//!    it (under InPlaceOnly that is an error instead).

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::SignedDuration;

use super::diff::{self, ExpectationDiffs};
use super::revision::{POD_TEMPLATE_HASH, Revision, equal_to_revision_hash, short_hash, write_revision_hash};
use super::round::{Event, Round, Step, name_list};
use super::settings::{Policy, Settings};
use crate::apis::keys::SPECIFIED_DELETE;
use crate::core::inplace::apply::{self, Options};
use crate::core::inplace::classify::{
    ClassifyOptions, Gates, UpdateSpec, VCT_HASH_ANNOTATION, classify_revision_update,
};
use crate::core::inplace::refresh::{self, Refresh};
use crate::core::inplace::state;
use crate::core::rollout::actions::{Action, ActionKind};
use crate::core::rollout::order::{PodLabels, sort_by_priority, sort_by_scatter};
use crate::core::{lifecycle, pods};

fn in_place_options(s: &Settings) -> Options {
    Options { grace_period_seconds: s.grace_period_seconds, vertical_scaling: s.gates.vertical_scaling }
}

/// The update step.
pub fn update(r: &mut Round<'_>) -> (Step, ExpectationDiffs) {
    let mut step = Step::default();
    let pods: Vec<&Pod> = r.pods.to_vec();
    for p in &pods {
        if let Err(e) = refresh_pod(r, &mut step, p) {
            step.error = Some(e);
            return (step, ExpectationDiffs::default());
        }
        fix_template_hash(r, &mut step, p);
    }
    if !step.actions.is_empty() {
        return (step, ExpectationDiffs::default());
    }
    let s = r.settings;
    if s.policy == Policy::OnDelete {
        step.waiting.push("updateStrategy.type is OnDelete: pods are only updated when deleted".into());
        return (step, ExpectationDiffs::default());
    }
    if s.paused {
        let behind = pods.iter().filter(|p| !equal_to_revision_hash(p, r.update.name())).count();
        if behind > 0 {
            step.waiting
                .push(format!("the update is paused (updateStrategy.paused): {behind} pods wait at old revisions"));
        }
        return (step, ExpectationDiffs::default());
    }

    let diff = diff::calculate(s, &pods, r.current.name(), r.update.name(), false, r.now);
    if diff.update_num == 0 {
        return (step, diff);
    }
    let (target, rollback) = if diff.update_num > 0 { (r.update, false) } else { (r.current, true) };

    let mut waiting_grace = Vec::new();
    let mut candidates: Vec<usize> = Vec::new();
    for (i, p) in pods.iter().enumerate() {
        let at_update = equal_to_revision_hash(p, r.update.name());
        if at_update != rollback {
            continue;
        }
        match lifecycle::state(p) {
            lifecycle::PREPARING_DELETE => {}
            lifecycle::UPDATED => candidates.push(i),
            _ if state::grace_text(p).is_some() => waiting_grace.push(*p),
            _ => candidates.push(i),
        }
    }
    let order = sort_update_indexes(r.cs, &pods, candidates);
    let chosen = limit(s, &diff, &order, &pods, target.name(), r.now);
    let wanted = order.len().min(diff.update_num.unsigned_abs() as usize);
    if chosen.len() < wanted {
        let now_updating: Vec<&Pod> = chosen.iter().map(|&i| pods[i]).collect();
        step.waiting.push(limit_wait(r, &diff, &pods, &now_updating, target.name(), wanted - chosen.len()));
    }
    if !waiting_grace.is_empty() {
        step.waiting.push(format!("{} in the grace period of an in-place update", name_list(&waiting_grace)));
    }
    for i in chosen {
        if let Err(e) = update_pod(r, &mut step, pods[i], target) {
            step.error = Some(e);
            break;
        }
    }
    (step, diff)
}

/// `SortUpdateIndexes`.
pub fn sort_update_indexes(cs: &crate::apis::cloneset::CloneSet, pods: &[&Pod], mut indexes: Vec<usize>) -> Vec<usize> {
    indexes.sort_by(|&i, &j| pods::active_pods_order(pods[i], pods[j]));
    let labels: Vec<PodLabels<'_>> = pods.iter().map(|p| Some(pods::labels(p))).collect();
    let us = &cs.spec.update_strategy;
    if let Some(priority) = &us.priority_strategy {
        sort_by_priority(priority, &labels, &mut indexes);
    }
    if !us.scatter_strategy.is_empty() {
        indexes = sort_by_scatter(&us.scatter_strategy, &labels, indexes);
    }
    let preparing = |i: usize| lifecycle::state(pods[i]) == lifecycle::PREPARING_UPDATE;
    indexes.sort_by_key(|&i| !preparing(i));
    indexes
}

/// `limitUpdateIndexes`: at most |updateNum| pods; stop once the target revision's unavailable
/// pods plus those chosen reach `updateMaxUnavailable`; an available pod may only be taken while
/// the total unavailable stays under it (and then counts as unavailable); unavailable pods do not
/// use the budget.
pub fn limit(
    s: &Settings,
    diff: &ExpectationDiffs,
    order: &[usize],
    pods: &[&Pod],
    target: &str,
    now: k8s_openapi::jiff::Timestamp,
) -> Vec<usize> {
    let n = diff.update_num.unsigned_abs() as usize;
    let order = &order[..order.len().min(n)];
    let mut unavailable = 0;
    let mut target_unavailable = 0;
    for p in pods {
        if !s.is_available(p, now) {
            unavailable += 1;
            if equal_to_revision_hash(p, target) {
                target_unavailable += 1;
            }
        }
    }
    let mut chosen = 0;
    for &i in order {
        if target_unavailable + chosen >= diff.update_max_unavailable {
            break;
        }
        if s.is_available(pods[i], now) {
            if unavailable >= diff.update_max_unavailable {
                break;
            }
            unavailable += 1;
        }
        chosen += 1;
    }
    order[..chosen as usize].to_vec()
}

fn limit_wait(
    r: &Round<'_>,
    diff: &ExpectationDiffs,
    pods: &[&Pod],
    now_updating: &[&Pod],
    target: &str,
    held: usize,
) -> String {
    let mut busy: Vec<&Pod> = pods.iter().copied().filter(|p| !r.settings.is_available(p, r.now)).collect();
    let already = busy.len();
    busy.extend(now_updating.iter().copied().filter(|p| r.settings.is_available(p, r.now)));
    let mut msg = format!("{} pods unavailable", busy.len());
    if busy.len() > already {
        msg.push_str(&format!(" ({} of them updating now)", busy.len() - already));
    }
    msg.push_str(&format!(
        ", maxUnavailable {}: {held} more pods wait to be updated to {target}",
        diff.update_max_unavailable
    ));
    if !busy.is_empty() {
        msg.push_str(&format!("; waiting for {} to become ready", name_list(&busy)));
    }
    msg
}

/// `refreshPodState`: in-place progress, then lifecycle.
fn refresh_pod(r: &mut Round<'_>, step: &mut Step, p: &Pod) -> Result<(), String> {
    let s = r.settings;
    let opts = in_place_options(s);
    let revision = pods::label(p, super::revision::CONTROLLER_REVISION_HASH).unwrap_or("").to_string();
    let refreshed = refresh::refresh(r.changes.current(p), opts, r.now, equal_to_revision_hash)?;
    match refreshed {
        Refresh::Nothing => {}
        Refresh::InGracePeriod(d) => {
            step.requeue_after(d);
            step.waiting.push(format!(
                "{} waits {}s more in its in-place update grace period",
                pods::name(p),
                d.as_secs()
            ));
        }
        Refresh::Updating(why) => step.waiting.push(format!("{} is updating in place: {why}", pods::name(p))),
        Refresh::FinishGrace { pod, applied } => {
            let reason = if applied {
                "its grace period ended: the new images are applied".to_string()
            } else {
                "it moved to another revision during its grace period: the parked update is dropped".to_string()
            };
            push_change(r, step, p, *pod, ActionKind::FinishGracePeriod, &revision, reason);
        }
        Refresh::NextBatch { pod, containers } => {
            let reason = format!("the previous batch is ready: updating containers {}", containers.join(", "));
            push_change(r, step, p, *pod, ActionKind::UpdateNextBatch, &revision, reason);
        }
        Refresh::MarkReady { pod } => {
            let reason = if state::state_text(p).is_some() {
                "its in-place update completed".to_string()
            } else {
                "it has the InPlaceUpdateReady readiness gate and no update in progress".to_string()
            };
            push_change(r, step, p, *pod, ActionKind::MarkInPlaceUpdateReady, &revision, reason);
        }
    }

    let lc = s.lifecycle.as_ref();
    let in_place_hook = lc.and_then(|l| l.in_place_update.as_ref());
    let next = match lifecycle::state(p) {
        lifecycle::PREPARING_NORMAL => {
            let normal = match lc.and_then(|l| l.pre_normal.as_ref()) {
                None => pods::is_scheduled(p),
                Some(hook) => lifecycle::is_all_hooked(Some(hook), p),
            };
            if !normal {
                let why = if lc.and_then(|l| l.pre_normal.as_ref()).is_some() {
                    "waits in PreparingNormal until its preNormal hook labels/finalizers are all present"
                } else {
                    "waits in PreparingNormal until it is scheduled"
                };
                step.waiting.push(format!("{} {why}", pods::name(p)));
            }
            normal.then_some(lifecycle::NORMAL)
        }
        lifecycle::PREPARING_UPDATE if equal_to_revision_hash(p, r.update.name()) => {
            Some(if lc.is_some() && !lifecycle::is_all_hooked(in_place_hook, p) {
                lifecycle::UPDATED
            } else {
                lifecycle::NORMAL
            })
        }
        lifecycle::UPDATING => match refresh::update_completed(p, opts) {
            Ok(()) => Some(if lc.is_some() && !lifecycle::is_all_hooked(in_place_hook, p) {
                lifecycle::UPDATED
            } else {
                lifecycle::NORMAL
            }),
            Err(_) => None,
        },
        lifecycle::UPDATED => (lc.is_none() || in_place_hook.is_none() || lifecycle::is_all_hooked(in_place_hook, p))
            .then_some(lifecycle::NORMAL),
        _ => None,
    };
    if let Some(next) = next {
        let mark = in_place_hook.is_some_and(|h| h.mark_pod_not_ready);
        let current = r.changes.current(p).clone();
        if let Some(after) = lifecycle::update_lifecycle(&current, next, mark, r.now) {
            let writes = r.changes.change(p, after);
            let reason = format!("{} -> {next}", lifecycle::state(p));
            step.actions.push(Action::new(ActionKind::SetLifecycle, Some(pods::name(p)), &revision, reason, writes));
        }
    }
    Ok(())
}

/// An action changing `p` to `intended`.
fn push_change(
    r: &mut Round<'_>,
    step: &mut Step,
    p: &Pod,
    intended: Pod,
    kind: ActionKind,
    revision: &str,
    reason: String,
) {
    let writes = r.changes.change(p, intended);
    step.actions.push(Action::new(kind, Some(pods::name(p)), revision, reason, writes));
}

/// `fixPodTemplateHashLabel`: pods made before kruise v1.1 lack `pod-template-hash`.
fn fix_template_hash(r: &mut Round<'_>, step: &mut Step, p: &Pod) {
    if pods::labels(p).contains_key(POD_TEMPLATE_HASH) {
        return;
    }
    let revision = pods::label(p, super::revision::CONTROLLER_REVISION_HASH).unwrap_or("").to_string();
    let mut after = r.changes.current(p).clone();
    after
        .metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(POD_TEMPLATE_HASH.into(), short_hash(&revision).into());
    let writes = r.changes.change(p, after);
    step.actions.push(Action::new(
        ActionKind::FixTemplateHashLabel,
        Some(pods::name(p)),
        &revision,
        "pods made before kruise v1.1 lack it".into(),
        writes,
    ));
}

/// The in-place decision between the pod's revision and the target.
fn in_place_spec(r: &Round<'_>, p: &Pod, target: &Revision) -> Result<UpdateSpec, String> {
    let Some(old) =
        r.revisions.iter().find(|rev| equal_to_revision_hash(p, rev.metadata.name.as_deref().unwrap_or("")))
    else {
        return Err(format!(
            "its revision {} is not among the CloneSet's revisions",
            pods::label(p, super::revision::CONTROLLER_REVISION_HASH).unwrap_or("")
        ));
    };
    let s = r.settings;
    let vct = |rev: &k8s_openapi::api::apps::v1::ControllerRevision| {
        rev.metadata.annotations.as_ref().and_then(|a| a.get(VCT_HASH_ANNOTATION)).cloned()
    };
    let opts = ClassifyOptions {
        gates: Gates {
            in_place_update_env_from_metadata: s.gates.env_from_metadata,
            in_place_workload_vertical_scaling: s.gates.vertical_scaling,
            recreate_pod_when_change_vct_in_cloneset: s.gates.recreate_on_vct_change,
        },
        old_vct_hash: vct(old),
        new_vct_hash: vct(&target.object),
        ignore_vct_hash_diff: s.policy == Policy::InPlaceOnly,
    };
    let old_data = old.data.as_ref().map(|d| d.0.clone()).unwrap_or_default();
    classify_revision_update(&old_data, &target.data_value(), &opts).map_err(|e| e.to_string())
}

/// `updatePod`.
fn update_pod(r: &mut Round<'_>, step: &mut Step, p: &Pod, target: &Revision) -> Result<(), String> {
    let s = r.settings;
    let name = pods::name(p).to_string();
    let mut refused = None;
    if matches!(s.policy, Policy::InPlaceIfPossible | Policy::InPlaceOnly) {
        match in_place_spec(r, p, target) {
            Ok(spec) => return update_in_place(r, step, p, target, &spec),
            Err(why) => refused = Some(why),
        }
        if s.policy == Policy::InPlaceOnly {
            return Err(format!("find Pod {name} update strategy is InPlaceOnly but can not update in-place"));
        }
    }
    if pods::labels(p).contains_key(SPECIFIED_DELETE) {
        return Ok(());
    }
    let mut after = r.changes.current(p).clone();
    after.metadata.labels.get_or_insert_with(Default::default).insert(SPECIFIED_DELETE.into(), "true".into());
    let writes = r.changes.change(p, after);
    let reason = match refused {
        Some(why) => format!("cannot update in place ({why}): recreated at {}", target.name()),
        None => format!("updateStrategy ReCreate: recreated at {}", target.name()),
    };
    step.actions.push(Action::new(ActionKind::Recreate, Some(&name), target.name(), reason, writes));
    step.events.push(Event::normal(
        "SuccessfulUpdatePodReCreate",
        format!("successfully patch pod {name} specified-delete for update(revision {})", target.name()),
    ));
    Ok(())
}

fn update_in_place(
    r: &mut Round<'_>,
    step: &mut Step,
    p: &Pod,
    target: &Revision,
    spec: &UpdateSpec,
) -> Result<(), String> {
    let s = r.settings;
    let name = pods::name(p).to_string();
    let hook = s.lifecycle.as_ref().and_then(|l| l.in_place_update.as_ref());
    match lifecycle::state(p) {
        "" | lifecycle::PREPARING_NORMAL | lifecycle::NORMAL if lifecycle::is_hooked(hook, p) => {
            let mark = hook.is_some_and(|h| h.mark_pod_not_ready);
            let current = r.changes.current(p).clone();
            if let Some(after) = lifecycle::update_lifecycle(&current, lifecycle::PREPARING_UPDATE, mark, r.now) {
                let writes = r.changes.change(p, after);
                let reason = format!(
                    "{} -> PreparingUpdate: its inPlaceUpdate hook holds it before the update to {}",
                    lifecycle::state(p),
                    target.name()
                );
                step.actions.push(Action::new(ActionKind::SetLifecycle, Some(&name), target.name(), reason, writes));
            }
            return Ok(());
        }
        "" | lifecycle::PREPARING_NORMAL | lifecycle::NORMAL | lifecycle::UPDATING => {}
        lifecycle::UPDATED => {
            let current = r.changes.current(p).clone();
            if let Some(after) =
                lifecycle::update_lifecycle_with_handler(&current, lifecycle::PREPARING_UPDATE, hook, r.now)
            {
                let writes = r.changes.change(p, after);
                let reason = format!(
                    "Updated -> PreparingUpdate: the inPlaceUpdate hook is put back before the update to {}",
                    target.name()
                );
                step.actions.push(Action::new(ActionKind::SetLifecycle, Some(&name), target.name(), reason, writes));
            }
            return Ok(());
        }
        lifecycle::PREPARING_UPDATE => {
            if lifecycle::is_hooked(hook, p) {
                step.waiting.push(format!(
                    "{name} waits in PreparingUpdate until its inPlaceUpdate hook labels/finalizers are removed"
                ));
                return Ok(());
            }
        }
        other => return Err(format!("not allowed to in-place update pod {name} in state {other}")),
    }
    let short = s.gates.short_hash;
    let target_name = target.name().to_string();
    let now = r.now;
    let current = r.changes.current(p).clone();
    let after = apply::begin(
        &current,
        spec,
        &target_name,
        in_place_options(s),
        now,
        |pod| write_revision_hash(pod, &target_name, short),
        |pod| lifecycle::set_state(pod, lifecycle::UPDATING, now),
    )?;
    let writes = r.changes.change(p, after);
    let mut action = Action::new(
        ActionKind::UpdateInPlace,
        Some(&name),
        target.name(),
        in_place_reason(spec, s.grace_period_seconds),
        writes,
    );
    action.images = spec.container_images.clone();
    step.actions.push(action);
    if s.grace_period_seconds > 0 {
        step.requeue_after(SignedDuration::from_secs(i64::from(s.grace_period_seconds)));
    }
    step.events.push(Event::normal(
        "SuccessfulUpdatePodInPlace",
        format!("successfully update pod {name} in-place(revision {})", target.name()),
    ));
    Ok(())
}

fn in_place_reason(spec: &UpdateSpec, grace: i32) -> String {
    let mut parts = Vec::new();
    if !spec.container_images.is_empty() {
        let images: Vec<String> = spec.container_images.iter().map(|(c, i)| format!("{c}={i}")).collect();
        parts.push(format!("images {}", images.join(", ")));
    }
    if spec.update_env_from_metadata {
        parts.push("env from labels/annotations".into());
    }
    if !spec.container_resources.is_empty() {
        parts.push("resources".into());
    }
    if spec.meta_data_patch.as_ref().is_some_and(|p| p.as_object().is_some_and(|o| !o.is_empty())) {
        parts.push("labels/annotations".into());
    }
    let what = if parts.is_empty() { "nothing but the revision".to_string() } else { parts.join("; ") };
    if grace > 0 { format!("in place: {what} (after a {grace}s grace period)") } else { format!("in place: {what}") }
}

#[cfg(test)]
mod tests;
