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
//!    it (under InPlaceOnly that is an error instead). With gate PodUnavailableBudgetUpdateGate each
//!    chosen pod is first put to its PodUnavailableBudget ([`UpdateAllowance`]); the first one it
//!    refuses ends the step (waiting, looked at again in a second); the units the others take are
//!    named for the controller to take before their writes.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::SignedDuration;

use super::diff::{self, ExpectationDiffs};
use super::revision::{POD_TEMPLATE_HASH, Revision, equal_to_revision_hash, short_hash, write_revision_hash};
use super::round::{Event, Round, Step, name_list};
use super::settings::{Policy, Settings};
use crate::apis::keys::SPECIFIED_DELETE;
use crate::core::budget::rollout::UpdateAllowance;
use crate::core::inplace::apply::Options;
use crate::core::inplace::classify::{ClassifyOptions, UpdateSpec, VCT_HASH_ANNOTATION, classify_revision_update};
use crate::core::inplace::state;
use crate::core::lifecycle::State;
use crate::core::rollout::actions::{Action, ActionKind};
use crate::core::rollout::order::{PodLabels, sort_by_priority, sort_by_scatter};
use crate::core::rollout::podupdate::{self, Machine};
use crate::core::{lifecycle, pods};

fn in_place_options(s: &Settings) -> Options {
    Options { grace_period_seconds: s.grace_period_seconds, vertical_scaling: s.gates.vertical_scaling }
}

/// The shared pod-update machine, with the CloneSet's lifecycle, options and revision labels.
fn machine<'a>(
    s: &'a Settings,
    update_revision: &'a str,
    now: k8s_openapi::jiff::Timestamp,
    write_revision: &'a dyn Fn(&mut Pod, &str),
) -> Machine<'a> {
    Machine {
        lifecycle: s.lifecycle.as_ref(),
        options: in_place_options(s),
        now,
        update_revision,
        at_revision: equal_to_revision_hash,
        write_revision,
    }
}

/// The update step.
pub fn update(r: &mut Round<'_>) -> (Step, ExpectationDiffs) {
    let mut step = Step::default();
    let pods: Vec<&Pod> = r.pods.to_vec();
    let (settings, update_revision) = (r.settings, r.update);
    let short = settings.gates.short_hash;
    let write_revision = move |pod: &mut Pod, revision: &str| write_revision_hash(pod, revision, short);
    let m = machine(settings, update_revision.name(), r.now, &write_revision);
    for p in &pods {
        if let Err(e) = m.refresh(&mut r.changes, &mut step, p) {
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
            State::PreparingDelete => {}
            State::Updated => candidates.push(i),
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
    let mut budgets = s.gates.budget_update.map(|g| UpdateAllowance::new(r.budgets, g));
    for i in chosen {
        match budgets.as_mut().map(|b| b.admit(pods[i])) {
            Some(Err(why)) => {
                // kruise returns from the update step and looks again in a second.
                step.waiting.push(format!("{} waits for its PodUnavailableBudget: {why}", pods::name(pods[i])));
                step.requeue_after(SignedDuration::from_secs(1));
                break;
            }
            Some(Ok(Some(take))) => r.budget_takes.push(take),
            _ => {}
        }
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
    let preparing = |i: usize| lifecycle::state(pods[i]) == State::PreparingUpdate;
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
        gates: s.gates.in_place,
        old_vct_hash: vct(old),
        new_vct_hash: vct(&target.object),
        ignore_vct_hash_diff: s.policy == Policy::InPlaceOnly,
    };
    let old_data = old.data.as_ref().map(|d| d.0.clone()).unwrap_or_default();
    let spec = classify_revision_update(&old_data, &target.data_value(), &opts).map_err(|e| e.to_string())?;
    podupdate::in_place_possible_on(p, &spec)?;
    Ok(spec)
}

/// `updatePod`.
fn update_pod(r: &mut Round<'_>, step: &mut Step, p: &Pod, target: &Revision) -> Result<(), String> {
    let s = r.settings;
    let name = pods::name(p).to_string();
    let mut refused = None;
    if matches!(s.policy, Policy::InPlaceIfPossible | Policy::InPlaceOnly) {
        match in_place_spec(r, p, target) {
            Ok(spec) => {
                let short = s.gates.short_hash;
                let write_revision = move |pod: &mut Pod, revision: &str| write_revision_hash(pod, revision, short);
                let m = machine(s, r.update.name(), r.now, &write_revision);
                return m.update_in_place(&mut r.changes, step, p, target.name(), &spec);
            }
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
    let reason = match &refused {
        Some(why) => format!("cannot update in place ({why}): recreated at {}", target.name()),
        None => format!("updateStrategy ReCreate: recreated at {}", target.name()),
    };
    if let Some(why) = refused.as_deref().filter(|w| w.starts_with(podupdate::ENV_FROM_METADATA_NEEDS_DAEMON)) {
        step.events.push(Event::normal(
            podupdate::RECREATE_FOR_ENV_FROM_METADATA,
            format!("pod {name} is recreated at revision {} instead of updated in place: {why}", target.name()),
        ));
    }
    step.actions.push(Action::new(ActionKind::Recreate, Some(&name), target.name(), reason, writes));
    step.events.push(Event::normal(
        "SuccessfulUpdatePodReCreate",
        format!("successfully patch pod {name} specified-delete for update(revision {})", target.name()),
    ));
    Ok(())
}

#[cfg(test)]
mod tests;
