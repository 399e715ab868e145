//! Invariants of the CloneSet planner over random states (issue 13 item 2; spec §5.3–§5.5):
//! proptest builds a CloneSet whose pods were made by the planner itself, then changes its spec
//! at random (replicas, partition and maxSurge/maxUnavailable/scaleStrategy.maxUnavailable as
//! numbers or percents, paused, update type, an in-place or a recreate template change,
//! lifecycle hooks, podsToDelete, minReadySeconds, two feature gates) and its pods at random
//! (revision current/update/other, ready/not ready/unscheduled/ready too recently, being deleted
//! or finished, lifecycle state, hook labels, specified-delete, InPlaceUpdateReady False). Then
//! a few rounds: plan, apply the writes exactly as given to the fake API of [`super::testkit`]
//! (pins and delete preconditions checked), let a kubelet run on a random subset of pods, release
//! or add hook labels, advance the clock. Every round checks, with the spec read as kruise reads
//! it ([`Settings`]):
//!
//! 1. the writes apply (no conflict with the plan's own earlier writes, no name taken);
//! 2. nothing is written to a pod being deleted or finished, and PreparingDelete pods are never
//!    updated;
//! 3. after a round that creates pods, the active pods are at most replicas + maxSurge (PreparingDelete
//!    pods left out when the CloneSet excludes them, as kruise counts them);
//! 4. no two active pods share an instance id (nor two pods a name);
//! 5. the update budget: when the update step takes an available pod, the pods unavailable before
//!    plus the available ones it takes are at most maxUnavailable + (pods − replicas) (kruise's
//!    `updateMaxUnavailable`); the scale step deletes (or moves to PreparingDelete) at most
//!    maxUnavailable + (pods − replicas) − (PreparingDelete pods + unavailable pods not specified
//!    for deletion) ready pods (kruise's `deleteReadyLimit`). The plain "available pods never
//!    fall under replicas − maxUnavailable" is not what kruise guarantees: a not-ready pod
//!    specified for deletion counts as surplus, so a ready one may go with it (`surplus_row`);
//! 6. partition: the update step moves a pod to the update revision only while more than
//!    `partition` active pods stay at other revisions. With gate CloneSetPartitionRollback pods
//!    also move back, and kruise's `updateNum` is the smaller of two corrections — old pods
//!    towards `partition`, updated pods towards replicas − partition — so a move is bounded by
//!    one of them: it never goes past the side it corrects, though it may leave the other side
//!    short (with fewer or more pods than replicas, the same in Go; row
//!    `rollback_fills_the_smaller_deficit`); a creation at the
//!    update revision leaves at least `partition` pods at other revisions — while the current
//!    revision differs from the update revision: once every pod (replicas of them) was at the
//!    update revision, kruise's status makes it the current one and new pods are made at it,
//!    whatever the partition (`calculateStatus`, the same in Go; row `partition_ends_with_the_rollout`);
//! 7. idempotence: planning again on the state the plan produced (its expectations satisfied,
//!    the same instant) repeats none of its actions, and after a creation creates more only by
//!    using more surge. Not "nothing more": with a ready pod specified for deletion, kruise
//!    first replaces it within replicas, then — the new pod not yet available, so deleting the
//!    old one would exceed maxUnavailable — surges one more (`calculateDiffsWithExpectation`'s
//!    `scaleSurge`, the same in Go; row `surge_follows_a_creation`).
//!
//! Two generators, 256 cases each in `cargo test` (PROPTEST_CASES=N for a longer run): any
//! state, and rollouts (replicas as many as pods, nothing being deleted), where the update step
//! decides more often. The rows and the reach check are in [`rows`].

use proptest::prelude::*;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::plan::Plan;
use super::pods::{INSTANCE_ID, instance_id};
use super::revision::{CONTROLLER_REVISION_HASH, POD_TEMPLATE_HASH, equal_to_revision_hash, short_hash};
use super::settings::{Gates, Settings};
use super::testkit::{World, cloneset, spec};
use crate::apis::keys::{IN_PLACE_UPDATE_READY, LIFECYCLE_STATE, SPECIFIED_DELETE};
use crate::core::features::{FeatureGates, Gate};
use crate::core::lifecycle;
use crate::core::pods;
use crate::core::rollout::actions::{Action, ActionKind, Write};

const STATES: [&str; 7] = [
    "",
    lifecycle::PREPARING_NORMAL,
    lifecycle::NORMAL,
    lifecycle::PREPARING_UPDATE,
    lifecycle::UPDATING,
    lifecycle::UPDATED,
    lifecycle::PREPARING_DELETE,
];

/// The hook labels of the generated lifecycle (one label per hook).
const HOOKS: [(&str, &str); 3] =
    [("pre-delete", "preDelete"), ("in-place", "inPlaceUpdate"), ("pre-normal", "preNormal")];

/// One pod's random edit.
#[derive(Clone, Debug)]
struct PodEdit {
    /// 0 current revision, 1 an older one, 2 the update revision.
    revision: u8,
    /// 0 ready, 1 not ready, 2 pending and unscheduled, 3 ready only now (minReadySeconds).
    readiness: u8,
    /// 0 active, 1 being deleted, 2 Succeeded, 3 Failed.
    gone: u8,
    /// Index into [`STATES`] (`None`: left as the planner made it).
    state: Option<usize>,
    /// Carries every hook label.
    hooked: bool,
    specified_delete: bool,
    named_in_pods_to_delete: bool,
    in_place_not_ready: bool,
}

/// What happens between two rounds.
#[derive(Clone, Debug)]
struct Between {
    /// Pods the kubelet runs (bit i: pod i).
    kubelet: u16,
    /// Pods whose hook labels flip.
    hooks: u16,
    /// Pods being deleted that the garbage collector finishes.
    reap: bool,
    /// Seconds that pass.
    tick: i64,
    /// A new replicas value.
    replicas: Option<i32>,
}

#[derive(Clone, Debug)]
struct Scenario {
    start: usize,
    replicas: i32,
    partition: Option<Value>,
    max_surge: Option<Value>,
    max_unavailable: Option<Value>,
    scale_max_unavailable: Option<Value>,
    paused: bool,
    policy: &'static str,
    in_place_change: bool,
    min_ready_seconds: i32,
    /// preDelete, inPlaceUpdate, preNormal hooks present; markPodNotReady.
    hooks: [bool; 3],
    mark_not_ready: bool,
    exclude_preparing_delete: bool,
    rollback_gate: bool,
    preparing_update_as_update: bool,
    pods: Vec<PodEdit>,
    rounds: Vec<Between>,
}

fn int_or_percent() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        1 => Just(None),
        2 => (0i64..4).prop_map(|n| Some(json!(n))),
        2 => prop::sample::select(vec![0, 10, 20, 25, 50, 99, 100]).prop_map(|p| Some(json!(format!("{p}%")))),
    ]
}

fn pod_edit() -> impl Strategy<Value = PodEdit> {
    (
        prop::sample::select(vec![0u8, 0, 1, 2, 2]),
        prop::sample::select(vec![0u8, 0, 0, 1, 2, 3]),
        prop::sample::select(vec![0u8, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3]),
        prop::option::weighted(0.4, prop::sample::select(vec![0, 1, 2, 3, 4, 5, 6, 6, 6])),
        prop::bool::weighted(0.5),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.1),
    )
        .prop_map(
            |(
                revision,
                readiness,
                gone,
                state,
                hooked,
                specified_delete,
                named_in_pods_to_delete,
                in_place_not_ready,
            )| {
                PodEdit {
                    revision,
                    readiness,
                    gone,
                    state,
                    hooked,
                    specified_delete,
                    named_in_pods_to_delete,
                    in_place_not_ready,
                }
            },
        )
}

fn between() -> impl Strategy<Value = Between> {
    (any::<u16>(), any::<u16>(), any::<bool>(), 0i64..20, prop::option::weighted(0.2, 0i32..9))
        .prop_map(|(kubelet, hooks, reap, tick, replicas)| Between { kubelet, hooks, reap, tick, replicas })
}

fn scenario() -> impl Strategy<Value = Scenario> {
    // Replicas as many as the pods half the time, so that updates (which wait for scaling)
    // get their share; scaleStrategy.maxUnavailable mostly unset (it holds back creations).
    let spec = (
        0usize..8,
        prop::option::weighted(0.5, 0i32..9),
        int_or_percent(),
        int_or_percent(),
        int_or_percent(),
        prop_oneof![3 => Just(None), 1 => int_or_percent()],
        prop::bool::weighted(0.15),
        prop::sample::select(vec!["ReCreate", "InPlaceIfPossible", "InPlaceOnly"]),
        any::<bool>(),
        prop::sample::select(vec![0, 0, 10]),
    );
    let rest = (
        prop::array::uniform3(prop::bool::weighted(0.4)),
        any::<bool>(),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.3),
        prop::collection::vec(pod_edit(), 8),
        prop::collection::vec(between(), 2..8),
    );
    (spec, rest).prop_map(
        |(
            (start, replicas, partition, max_surge, max_unavailable, scale_max_unavailable, paused, policy, ip, mrs),
            (hooks, mark_not_ready, exclude, rollback, pua, mut pods, rounds),
        )| {
            pods.truncate(start);
            Scenario {
                start,
                replicas: replicas.unwrap_or(start as i32),
                partition,
                max_surge,
                max_unavailable,
                scale_max_unavailable,
                paused,
                policy,
                in_place_change: ip,
                min_ready_seconds: mrs,
                hooks,
                mark_not_ready,
                exclude_preparing_delete: exclude,
                rollback_gate: rollback,
                preparing_update_as_update: pua,
                pods,
                rounds,
            }
        },
    )
}

fn set_image(w: &mut World, image: &str) {
    w.cs.spec.template.spec.as_mut().unwrap().containers[0].image = Some(image.into());
    w.cs.metadata.generation = Some(w.cs.metadata.generation.unwrap_or(1) + 1);
}

fn only_revisions(w: &mut World) {
    let p = w.plan();
    let revs: Vec<Action> = p.actions.into_iter().filter(|a| a.kind == ActionKind::CreateRevision).collect();
    w.apply_actions(&revs).unwrap();
}

fn hook_labels(s: &Scenario) -> Vec<(&'static str, &'static str)> {
    HOOKS.iter().zip(s.hooks).filter(|(_, on)| *on).map(|(h, _)| *h).collect()
}

/// The world of a scenario: revision `img:0` (an older one), `start` settled pods at `img:1`, then
/// the new spec with `img:2` and the pod edits.
fn build(s: &Scenario) -> World {
    let mut w = World::new(cloneset(spec(s.start as i32, "img:0", json!({}))));
    only_revisions(&mut w);
    set_image(&mut w, "img:1");
    for _ in 0..8 {
        w.round();
    }
    assert_eq!(w.pods.len(), s.start, "setup: the pods settle");
    let old = w.cs.status.clone().unwrap_or_default().current_revision;
    let other = w.revisions.iter().map(|r| r.metadata.name.clone().unwrap_or_default()).find(|n| *n != old).unwrap();

    let mut v = serde_json::to_value(&w.cs).unwrap();
    let sp = &mut v["spec"];
    sp["replicas"] = json!(s.replicas);
    sp["minReadySeconds"] = json!(s.min_ready_seconds);
    let mut us = json!({"type": s.policy, "paused": s.paused});
    for (k, val) in [("partition", &s.partition), ("maxSurge", &s.max_surge), ("maxUnavailable", &s.max_unavailable)] {
        if let Some(val) = val {
            us[k] = val.clone();
        }
    }
    sp["updateStrategy"] = us;
    if let Some(val) = &s.scale_max_unavailable {
        sp["scaleStrategy"] = json!({"maxUnavailable": val});
    }
    let hooks = hook_labels(s);
    if !hooks.is_empty() {
        let mut lc = json!({});
        for (label, field) in &hooks {
            let mut handler = serde_json::Map::new();
            handler.insert((*label).to_string(), json!("true"));
            lc[*field] = json!({"labelsHandler": handler, "markPodNotReady": s.mark_not_ready});
        }
        sp["lifecycle"] = lc;
    }
    if !s.in_place_change {
        sp["template"]["spec"]["containers"][0]["env"] = json!([{"name": "V", "value": "2"}]);
    }
    if s.exclude_preparing_delete {
        let mut labels = serde_json::Map::new();
        labels.insert(super::settings::SCALING_EXCLUDE_PREPARING_DELETE.into(), json!("true"));
        v["metadata"]["labels"] = Value::Object(labels);
    }
    w.cs = serde_json::from_value(v).unwrap();
    set_image(&mut w, "img:2");
    w.gates = FeatureGates::default()
        .with(Gate::CloneSetPartitionRollback, s.rollback_gate)
        .with(Gate::PreparingUpdateAsUpdate, s.preparing_update_as_update);
    let update = w.plan().update_revision;
    if s.pods.iter().any(|e| e.revision == 2) {
        // Pods at the update revision: it exists (else the first round creates it).
        only_revisions(&mut w);
    }

    let now = w.now;
    let mut to_delete = Vec::new();
    for (p, e) in w.pods.iter_mut().zip(&s.pods) {
        let (rev, image) = match e.revision {
            0 => (old.as_str(), "img:1"),
            1 => (other.as_str(), "img:0"),
            _ => (update.as_str(), "img:2"),
        };
        let labels = p.metadata.labels.get_or_insert_with(Default::default);
        labels.insert(CONTROLLER_REVISION_HASH.into(), rev.into());
        labels.insert(POD_TEMPLATE_HASH.into(), short_hash(rev).into());
        if let Some(i) = e.state {
            if STATES[i].is_empty() {
                labels.remove(LIFECYCLE_STATE);
            } else {
                labels.insert(LIFECYCLE_STATE.into(), STATES[i].into());
            }
        }
        if e.hooked {
            for (label, _) in &hooks {
                labels.insert((*label).into(), "true".into());
            }
        }
        if e.specified_delete {
            labels.insert(SPECIFIED_DELETE.into(), "true".into());
        }
        if e.named_in_pods_to_delete {
            to_delete.push(pods::name(p).to_string());
        }
        let spec = p.spec.as_mut().unwrap();
        spec.containers[0].image = Some(image.into());
        let status = p.status.as_mut().unwrap();
        if let Some(c) = status.container_statuses.as_mut().and_then(|c| c.first_mut()) {
            c.image = image.into();
            c.image_id = format!("sha-{image}");
        }
        let conditions = status.conditions.get_or_insert_with(Vec::new);
        let mut set = |t: &str, on: bool, at: Option<Time>| {
            conditions.retain(|c| c.type_ != t);
            conditions.push(PodCondition {
                type_: t.into(),
                status: if on { "True" } else { "False" }.into(),
                last_transition_time: at,
                ..Default::default()
            });
        };
        match e.readiness {
            1 => set("Ready", false, Some(Time(now))),
            2 => {
                set("Ready", false, Some(Time(now)));
                status.phase = Some("Pending".into());
                spec.node_name = None;
            }
            3 => set("Ready", true, Some(Time(now))),
            _ => {}
        }
        if e.in_place_not_ready {
            let conditions = p.status.as_mut().unwrap().conditions.get_or_insert_with(Vec::new);
            conditions.retain(|c| c.type_ != IN_PLACE_UPDATE_READY);
            conditions.push(PodCondition {
                type_: IN_PLACE_UPDATE_READY.into(),
                status: "False".into(),
                ..Default::default()
            });
        }
        match e.gone {
            1 => p.metadata.deletion_timestamp = Some(Time(now)),
            2 => p.status.as_mut().unwrap().phase = Some("Succeeded".into()),
            3 => p.status.as_mut().unwrap().phase = Some("Failed".into()),
            _ => {}
        }
    }
    to_delete.push("sample-gone0".into());
    w.cs.spec.scale_strategy.pods_to_delete = to_delete;
    w
}

fn settings(w: &World) -> Settings {
    Settings::new(&w.cs, Gates::from_feature_gates(&w.gates))
}

fn active(w: &World) -> Vec<&Pod> {
    w.pods.iter().filter(|p| pods::is_active(p)).collect()
}

fn find<'a>(w: &'a World, name: &str) -> Option<&'a Pod> {
    w.pods.iter().find(|p| pods::name(p) == name)
}

/// Pods the writes of an action touch (by name).
fn touched(a: &Action) -> Vec<&str> {
    a.writes
        .iter()
        .filter_map(|w| match w {
            Write::DeletePod { name, .. }
            | Write::PatchPod { name, .. }
            | Write::PatchPodStatus { name, .. }
            | Write::PatchPodResize { name, .. } => Some(name.as_str()),
            _ => None,
        })
        .collect()
}

fn created(a: &Action) -> Option<&Pod> {
    a.writes.iter().find_map(|w| match w {
        Write::CreatePod { pod } => Some(&**pod),
        _ => None,
    })
}

/// The lifecycle state an action leaves its pod in, read from the state after the round.
fn state_after<'a>(after: &'a World, a: &Action) -> &'a str {
    a.pod.as_deref().and_then(|n| find(after, n)).map_or("", lifecycle::state_text)
}

fn describe(p: &Plan) -> String {
    let lines: Vec<String> =
        p.actions.iter().map(|a| format!("{:?} {:?} -> {} ({})", a.kind, a.pod, a.revision, a.reason)).collect();
    format!("actions:\n  {}\nwaiting: {:?}\nerrors: {:?}\ndiff: {:?}", lines.join("\n  "), p.waiting, p.errors, p.diff)
}

fn pod_facts(w: &World, s: &Settings) -> String {
    let lines: Vec<String> = w
        .pods
        .iter()
        .map(|p| {
            format!(
                "{} rev={} state={:?} active={} ready={} available={} specified={} labels={:?}",
                pods::name(p),
                pods::label(p, CONTROLLER_REVISION_HASH).unwrap_or(""),
                lifecycle::state(p),
                pods::is_active(p),
                s.is_ready(p, w.now),
                s.is_available(p, w.now),
                s.is_specified_delete(p),
                pods::labels(p).keys().filter(|k| HOOKS.iter().any(|(h, _)| h == k)).collect::<Vec<_>>(),
            )
        })
        .collect();
    lines.join("\n  ")
}

/// Checks one round: `before` planned `plan`, which applied gives `after`.
fn check_round(before: &World, plan: &Plan, after: &World) -> Result<(), String> {
    let s = settings(before);
    let now = before.now;
    let act = active(before);
    let total = act.len() as i32;
    let update = plan.update_revision.as_str();
    let ctx = || format!("{}\npods before:\n  {}", describe(plan), pod_facts(before, &s));

    // 2. Nothing for pods being deleted or finished; PreparingDelete pods are not updated.
    for a in &plan.actions {
        for name in touched(a) {
            let Some(p) = find(before, name) else { return Err(format!("{name} does not exist\n{}", ctx())) };
            if !pods::is_active(p) {
                return Err(format!("{:?} writes to {name}, which is being deleted or finished\n{}", a.kind, ctx()));
            }
            let updates = matches!(a.kind, ActionKind::UpdateInPlace | ActionKind::Recreate);
            if updates && lifecycle::state(p) == lifecycle::PREPARING_DELETE {
                return Err(format!("{:?} on PreparingDelete pod {name}\n{}", a.kind, ctx()));
            }
        }
    }

    // 3. replicas + maxSurge after a creation.
    let creations: Vec<&Pod> = plan.actions.iter().filter_map(created).collect();
    if !creations.is_empty() {
        let counted = active(after)
            .into_iter()
            .filter(|p| !(s.exclude_preparing_delete && lifecycle::state(p) == lifecycle::PREPARING_DELETE))
            .count() as i32;
        if counted > s.replicas + s.max_surge {
            return Err(format!(
                "{counted} pods after creating {}: more than replicas {} + maxSurge {}\n{}",
                creations.len(),
                s.replicas,
                s.max_surge,
                ctx()
            ));
        }
    }

    // 4. Names and instance ids are unique.
    let mut ids = BTreeSet::new();
    for p in active(after) {
        let id = instance_id(p.metadata.labels.as_ref());
        if !ids.insert(id) {
            return Err(format!("two active pods with {INSTANCE_ID}={id}\n{}", ctx()));
        }
    }
    let names: BTreeSet<&str> = after.pods.iter().map(pods::name).collect();
    if names.len() != after.pods.len() {
        return Err(format!("two pods with one name\n{}", ctx()));
    }

    // 5. Budgets.
    let unavailable = act.iter().filter(|p| !s.is_available(p, now)).count() as i32;
    let mut update_taken = BTreeSet::new();
    let mut ready_deleted = BTreeSet::new();
    for a in &plan.actions {
        let Some(name) = a.pod.as_deref() else { continue };
        let Some(p) = find(before, name) else { continue };
        let to = state_after(after, a);
        let is_update = match a.kind {
            ActionKind::UpdateInPlace | ActionKind::Recreate => true,
            ActionKind::SetLifecycle => to == lifecycle::PREPARING_UPDATE && lifecycle::state(p) != to,
            _ => false,
        };
        let is_delete = a.kind == ActionKind::Delete
            || (a.kind == ActionKind::SetLifecycle && to == lifecycle::PREPARING_DELETE && lifecycle::state(p) != to);
        if is_update && s.is_available(p, now) {
            update_taken.insert(name);
        }
        if is_delete && s.is_ready(p, now) {
            ready_deleted.insert(name);
        }
    }
    let update_budget = s.max_unavailable + total - s.replicas;
    if !update_taken.is_empty() && unavailable + update_taken.len() as i32 > update_budget {
        return Err(format!(
            "{unavailable} unavailable pods and {} available ones taken for update ({update_taken:?}): over \
             maxUnavailable {} + pods {total} - replicas {}\n{}",
            update_taken.len(),
            s.max_unavailable,
            s.replicas,
            ctx()
        ));
    }
    let counted_unavailable = act
        .iter()
        .filter(|p| {
            lifecycle::state(p) == lifecycle::PREPARING_DELETE || (!s.is_specified_delete(p) && !s.is_available(p, now))
        })
        .count() as i32;
    let delete_limit = (s.max_unavailable + total - s.replicas - counted_unavailable).max(0);
    if ready_deleted.len() as i32 > delete_limit {
        return Err(format!(
            "{} ready pods deleted ({ready_deleted:?}): over the limit {delete_limit} (maxUnavailable {} + pods \
             {total} - replicas {} - {counted_unavailable} unavailable)\n{}",
            ready_deleted.len(),
            s.max_unavailable,
            s.replicas,
            ctx()
        ));
    }

    // 6. Partition.
    let is_new = |p: &Pod| equal_to_revision_hash(p, update);
    let steady = |p: &&&Pod| lifecycle::state(p) != lifecycle::PREPARING_DELETE;
    let old_active = act.iter().filter(steady).filter(|p| !is_new(p)).count() as i32;
    let (mut forward, mut back) = (BTreeSet::new(), BTreeSet::new());
    for a in &plan.actions {
        let Some(p) = a.pod.as_deref().and_then(|n| find(before, n)) else { continue };
        let moves = match a.kind {
            ActionKind::UpdateInPlace | ActionKind::Recreate => true,
            ActionKind::SetLifecycle => state_after(after, a) == lifecycle::PREPARING_UPDATE,
            _ => false,
        };
        if !moves {
            continue;
        }
        if a.revision == update && !is_new(p) {
            forward.insert(pods::name(p));
        } else if a.revision != update && is_new(p) {
            back.insert(pods::name(p));
        }
    }
    // A move fixes a surplus or a deficit of one side and never goes past that side's target:
    // old pods `partition`, updated pods replicas − partition. Without the rollback gate pods
    // only move forward and old pods never go under partition.
    let new_active = act.iter().filter(steady).filter(|p| is_new(p)).count() as i32;
    let target_new = s.replicas - s.partition;
    let rollback = s.gates.partition_rollback;
    let (kf, kb) = (forward.len() as i32, back.len() as i32);
    if kf > 0 && !(old_active - kf >= s.partition || (rollback && new_active + kf <= target_new)) {
        return Err(format!(
            "{kf} of {old_active} old pods moved to {update} ({forward:?}): fewer than partition {} stay \
             ({new_active} updated, replicas - partition {target_new})\n{}",
            s.partition,
            ctx()
        ));
    }
    if kb > 0 && !(rollback && (old_active + kb <= s.partition || new_active - kb >= target_new)) {
        return Err(format!(
            "{kb} of {new_active} updated pods moved back ({back:?}) to {old_active} old ones: past partition {} \
             and past replicas - partition {target_new} (rollback gate {rollback})\n{}",
            s.partition,
            ctx()
        ));
    }
    if plan.current_revision != update && creations.iter().any(|p| is_new(p)) {
        let old_after = active(after)
            .into_iter()
            .filter(|p| !(s.exclude_preparing_delete && lifecycle::state(p) == lifecycle::PREPARING_DELETE))
            .filter(|p| !is_new(p))
            .count() as i32;
        if old_after < s.partition {
            return Err(format!(
                "a pod created at {update} leaves {old_after} old pods, partition {}\n{}",
                s.partition,
                ctx()
            ));
        }
    }
    Ok(())
}

/// 7. The plan made on the state `plan` produced repeats none of its actions.
fn check_idempotent(plan: &Plan, again: &Plan, before: &World) -> Result<(), String> {
    let key = |a: &Action| (a.kind, a.pod.clone(), a.revision.clone(), a.reason.clone());
    let first: BTreeSet<_> = plan.actions.iter().filter(|a| a.pod.is_some()).map(key).collect();
    let ctx = || {
        format!(
            "first plan:\n{}\nsecond plan:\n{}\npods before:\n  {}",
            describe(plan),
            describe(again),
            pod_facts(before, &settings(before))
        )
    };
    for a in &again.actions {
        if a.pod.is_some() && first.contains(&key(a)) {
            return Err(format!("{:?} on {:?} planned again\n{}", a.kind, a.pod, ctx()));
        }
        let once = [ActionKind::CreateRevision, ActionKind::TrimPodsToDelete, ActionKind::DeleteRevision];
        if a.pod.is_none() && once.contains(&a.kind) && plan.actions.iter().any(|b| key(b) == key(a)) {
            return Err(format!("{:?} {} planned again\n{}", a.kind, a.revision, ctx()));
        }
    }
    let creates = |p: &Plan| p.actions.iter().filter(|a| a.kind == ActionKind::Create).count();
    if creates(plan) > 0 && creates(again) > 0 && again.diff.use_surge <= plan.diff.use_surge {
        return Err(format!(
            "{} more pods created right after {}, with no more surge\n{}",
            creates(again),
            creates(plan),
            ctx()
        ));
    }
    Ok(())
}

/// What happens between rounds.
fn between_rounds(w: &mut World, b: &Between, hooks: &[(&'static str, &'static str)]) {
    let mut ran = w.clone();
    ran.kubelet();
    for (i, p) in w.pods.iter_mut().enumerate() {
        if i < 16 && b.kubelet & (1 << i) != 0 {
            *p = ran.pods[i].clone();
        }
        if i < 16 && b.hooks & (1 << i) != 0 {
            let labels = p.metadata.labels.get_or_insert_with(Default::default);
            for (label, _) in hooks {
                if labels.remove(*label).is_none() {
                    labels.insert((*label).into(), "true".into());
                }
            }
        }
    }
    if b.reap {
        w.pods.retain(|p| p.metadata.deletion_timestamp.is_none());
    }
    if let Some(r) = b.replicas {
        w.cs.spec.replicas = Some(r);
    }
    w.tick(b.tick);
}

/// Runs a scenario's rounds, checking each; `seen` gets every plan with the state it produced.
fn run(s: &Scenario, mut seen: impl FnMut(&Plan, &World)) -> Result<(), String> {
    let mut w = build(s);
    let hooks = hook_labels(s);
    for (round, b) in s.rounds.iter().enumerate() {
        let plan = w.plan();
        let mut after = w.clone();
        after.apply(&plan).map_err(|e| format!("round {round}: {e:?}\n{}", describe(&plan)))?;
        check_round(&w, &plan, &after).map_err(|e| format!("round {round}: {e}"))?;
        let again = after.plan();
        check_idempotent(&plan, &again, &w).map_err(|e| format!("round {round}: {e}"))?;
        seen(&plan, &after);
        w = after;
        between_rounds(&mut w, b, &hooks);
    }
    Ok(())
}

/// Scenarios of a rollout: replicas as many as the pods and staying so, not paused, no pod
/// being deleted, finished, specified for deletion or PreparingDelete — so the scale step
/// mostly rests and the update step decides (in the general scenarios it plans an update in
/// about one round of a hundred).
fn rollout_scenario() -> impl Strategy<Value = Scenario> {
    scenario().prop_map(|mut s| {
        s.replicas = s.start as i32;
        s.paused = false;
        for p in &mut s.pods {
            p.gone = 0;
            p.named_in_pods_to_delete = false;
            p.specified_delete = false;
            p.state = p.state.filter(|&i| STATES[i] != lifecycle::PREPARING_DELETE);
        }
        for b in &mut s.rounds {
            b.replicas = None;
            b.reap = false;
        }
        s
    })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(256),
        ..ProptestConfig::default()
    })]

    #[test]
    fn planner_invariants_hold(s in scenario()) {
        if let Err(e) = run(&s, |_, _| {}) {
            prop_assert!(false, "{}", e);
        }
    }

    #[test]
    fn planner_invariants_hold_in_rollouts(s in rollout_scenario()) {
        if let Err(e) = run(&s, |_, _| {}) {
            prop_assert!(false, "{}", e);
        }
    }
}

mod rows;
