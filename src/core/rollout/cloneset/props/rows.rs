//! The rows behind the notes of [`super`] (each the minimal case proptest found where kruise
//! guarantees less than the plain statement, checked against kruise's Go code), and the check
//! that the generators reach every decision the invariants are about.

use super::*;

/// A scenario with no edits: `start` settled pods, `replicas`, ReCreate, one round.
fn plain(start: usize, replicas: i32) -> Scenario {
    let edit = PodEdit {
        revision: 0,
        readiness: 0,
        gone: 0,
        state: None,
        hooked: false,
        specified_delete: false,
        named_in_pods_to_delete: false,
        in_place_not_ready: false,
    };
    Scenario {
        start,
        replicas,
        partition: None,
        max_surge: None,
        max_unavailable: None,
        scale_max_unavailable: None,
        paused: false,
        policy: "ReCreate",
        in_place_change: true,
        min_ready_seconds: 0,
        hooks: [false; 3],
        mark_not_ready: false,
        exclude_preparing_delete: false,
        rollback_gate: false,
        preparing_update_as_update: false,
        pods: vec![edit; start],
        rounds: vec![Between { kubelet: 0, hooks: 0, reap: false, tick: 0, replicas: None }],
    }
}

/// The row behind the note in item 5: replicas 3, maxUnavailable 0, two ready pods, a not-ready
/// pod and a ready one both specified for deletion. kruise's `deleteReadyLimit` is 0 + (4 − 3) −
/// 0 = 1 (the not-ready specified pod counts as surplus), so both specified pods go and two
/// available pods remain for three replicas: the budget is kruise's, not "available ≥ replicas −
/// maxUnavailable".
#[test]
fn surplus_row() {
    let mut w = World::new(cloneset(spec(4, "img:1", json!({"maxUnavailable": 0}))));
    for _ in 0..8 {
        w.round();
    }
    w.cs.spec.replicas = Some(3);
    let names: Vec<String> = w.pods.iter().map(|p| pods::name(p).to_string()).collect();
    for (i, p) in w.pods.iter_mut().enumerate().take(2) {
        p.metadata.labels.as_mut().unwrap().insert(SPECIFIED_DELETE.into(), "true".into());
        if i == 0 {
            let c = p.status.as_mut().unwrap().conditions.as_mut().unwrap();
            c.iter_mut().filter(|c| c.type_ == "Ready").for_each(|c| c.status = "False".into());
        }
    }
    let plan = w.plan();
    let deleted: BTreeSet<&str> =
        plan.actions.iter().filter(|a| a.kind == ActionKind::Delete).filter_map(|a| a.pod.as_deref()).collect();
    let specified: BTreeSet<&str> = names[..2].iter().map(String::as_str).collect();
    assert_eq!(deleted, specified, "{}", describe(&plan));
    let mut after = w.clone();
    after.apply(&plan).unwrap();
    let s = settings(&after);
    assert_eq!(active(&after).iter().filter(|p| s.is_available(p, after.now)).count(), 2);
    check_round(&w, &plan, &after).unwrap();
}

/// The row behind the note in item 7 (proptest's minimal case): replicas 2, partition 1, maxSurge
/// 1, maxUnavailable 50% (1), a template change; one pod is being deleted, the other (available)
/// is named in podsToDelete. Round one creates the missing pod at the update revision; round two
/// sees it unavailable, so deleting the specified pod would exceed maxUnavailable: kruise surges
/// one pod at the current revision (partition + surge at old revisions) instead of deleting.
#[test]
fn surge_follows_a_creation() {
    let mut s = plain(2, 2);
    s.partition = Some(json!(1));
    s.max_surge = Some(json!(1));
    s.max_unavailable = Some(json!("50%"));
    s.pods[0].gone = 1;
    s.pods[1].named_in_pods_to_delete = true;
    let w = build(&s);
    let first = w.plan();
    let mut after = w.clone();
    after.apply(&first).unwrap();
    let again = after.plan();
    let creations = |p: &Plan| -> Vec<String> {
        p.actions.iter().filter(|a| a.kind == ActionKind::Create).map(|a| a.revision.clone()).collect()
    };
    assert_eq!(creations(&first), std::slice::from_ref(&first.update_revision), "{}", describe(&first));
    assert_eq!(creations(&again), std::slice::from_ref(&again.current_revision), "{}", describe(&again));
    assert_eq!((first.diff.use_surge, again.diff.use_surge), (0, 1));
    check_idempotent(&first, &again, &w).unwrap();
}

/// The generator reaches the decisions the invariants are about (a property that never sees an
/// update or a deletion proves nothing about them).
#[test]
fn scenarios_reach_every_decision() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    // How many actions of each kind, lifecycle moves and waits the scenarios produce.
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let scenarios = 200;
    for i in 0..scenarios {
        let s = if i % 2 == 0 {
            scenario().new_tree(&mut runner).unwrap().current()
        } else {
            rollout_scenario().new_tree(&mut runner).unwrap().current()
        };
        run(&s, |plan, after| {
            for a in &plan.actions {
                *seen.entry(format!("{:?}", a.kind)).or_default() += 1;
                if a.kind == ActionKind::SetLifecycle {
                    *seen.entry(format!("-> {}", state_after(after, a))).or_default() += 1;
                }
            }
            for (key, needle) in [
                ("wait: update budget", "more pods wait to be updated"),
                ("wait: delete budget", "ready pods to"),
                ("wait: scale-up limit", "scaleStrategy.maxUnavailable"),
                ("wait: paused", "paused"),
            ] {
                if plan.waiting.iter().any(|m| m.contains(needle)) {
                    *seen.entry(key.into()).or_default() += 1;
                }
            }
        })
        .unwrap();
    }
    eprintln!("{scenarios} scenarios: {seen:#?}");
    let wanted = [
        "Create",
        "Delete",
        "UpdateInPlace",
        "Recreate",
        "MarkInPlaceUpdateReady",
        "TrimPodsToDelete",
        "CreateRevision",
        "-> PreparingDelete",
        "-> PreparingUpdate",
        "-> PreparingNormal",
        "-> Normal",
        "wait: update budget",
        "wait: delete budget",
        "wait: scale-up limit",
        "wait: paused",
    ];
    for w in wanted {
        assert!(seen.contains_key(w), "never seen: {w} ({seen:?})");
    }
}

/// The row behind the note in item 6 (proptest's minimal case): replicas 1, partition 1, and the
/// one active pod already at the update revision (the other is being deleted). The status makes
/// the update revision current (every pod, replicas of them, is at it), so when replicas go to 2
/// the new pod is made at the update revision although partition is 1 — kruise's
/// `calculateStatus` and `createPods` do the same.
#[test]
fn partition_ends_with_the_rollout() {
    let mut s = plain(2, 1);
    s.partition = Some(json!(1));
    s.in_place_change = false;
    s.pods[0].gone = 1;
    s.pods[1].revision = 2;
    let mut w = build(&s);
    let first = w.plan();
    assert_eq!(first.status.current_revision, first.update_revision, "{}", describe(&first));
    w.apply(&first).unwrap();
    w.cs.spec.replicas = Some(2);
    let second = w.plan();
    let created: Vec<&str> =
        second.actions.iter().filter(|a| a.kind == ActionKind::Create).map(|a| a.revision.as_str()).collect();
    assert_eq!(created, [second.update_revision.as_str()], "{}", describe(&second));
}

/// The row behind the note in item 6 (proptest's minimal case): gate CloneSetPartitionRollback,
/// replicas 4, partition 1, one active pod, at the update revision; scaleStrategy.maxUnavailable
/// 0 blocks creations, so the update step runs. Old pods lack 1 (0 of partition 1), updated pods
/// lack 2 (1 of 3): kruise's `updateNum` takes the smaller deficit, −1, and moves the only
/// updated pod back.
#[test]
fn rollback_fills_the_smaller_deficit() {
    let mut s = plain(2, 4);
    s.partition = Some(json!(1));
    s.max_unavailable = Some(json!("99%"));
    s.scale_max_unavailable = Some(json!(0));
    s.in_place_change = false;
    s.rollback_gate = true;
    s.pods[0].gone = 1;
    s.pods[1].revision = 2;
    let w = build(&s);
    let plan = w.plan();
    assert_eq!(plan.diff.update_num, -1, "kruise's updateNum: {}", describe(&plan));
    let back: Vec<(ActionKind, &str)> =
        plan.actions.iter().filter(|a| a.kind == ActionKind::Recreate).map(|a| (a.kind, a.revision.as_str())).collect();
    assert_eq!(back, [(ActionKind::Recreate, plan.current_revision.as_str())], "{}", describe(&plan));
    let mut after = w.clone();
    after.apply(&plan).unwrap();
    check_round(&w, &plan, &after).unwrap();
}
