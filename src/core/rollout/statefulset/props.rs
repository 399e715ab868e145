//! Invariants of the Advanced StatefulSet planner over random sets and rounds (issue 27 item 3):
//! proptest builds a set (replicas, OrderedReady or Parallel, `maxUnavailable`, `partition`,
//! `podUpdatePolicy`, `reserveOrdinals`, a claim template and a retention policy), lets the
//! planner bring it up, then changes it at random (an image or an env change, new replicas, new
//! reserved ordinals, a new partition) and runs rounds: plan, apply the writes exactly as given to
//! the shared fake API (pins and delete preconditions checked), run the kubelet on some rounds
//! only, advance the clock. Every round checks:
//!
//! 1. the writes apply;
//! 2. no two pods ever hold one ordinal;
//! 3. the update budget: when the rolling update takes a pod that was available, the replicas
//!    unavailable before it plus the ones it takes are at most `maxUnavailable` (an unavailable
//!    pod is not Ready, terminating, in a lifecycle state other than Normal, or in an in-place
//!    update not yet complete — read from the pods, not from the planner);
//! 4. the partition: the rolling update never takes a pod whose ordinal is below
//!    `start + partition`;
//! 5. claims: no PVC is ever deleted by the planner, and under Retain/Retain no claim ever gets
//!    an owner reference.
//!
//! 64 cases in `cargo test` (PROPTEST_CASES=N for a longer run). The first bug they found: a pod
//! refreshed and recreated in one round had its delete refused (its precondition was the version
//! the refresh write replaced) — see `a_pod_written_this_round_is_deleted_the_next` in the plan
//! tests.

use proptest::prelude::*;
use serde_json::{Value, json};
use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::Pod;

use super::identity;
use super::testkit::{World, stateful_set};
use crate::core::inplace::{apply::Options, refresh};
use crate::core::lifecycle::{self, State};
use crate::core::pods;
use crate::core::rollout::actions::{ActionKind, Write};

#[derive(Clone, Debug)]
struct Case {
    replicas: i32,
    parallel: bool,
    max_unavailable: i32,
    partition: i32,
    policy: &'static str,
    reserved: Vec<i64>,
    when_scaled: &'static str,
    when_deleted: &'static str,
    env_change: bool,
    new_replicas: i32,
    new_reserved: Vec<i64>,
    kubelet: Vec<bool>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        (1..6i32, any::<bool>(), 1..4i32, 0..6i32, prop::sample::select(vec!["ReCreate", "InPlaceIfPossible"])),
        (prop::collection::btree_set(0..6i64, 0..3), prop::sample::select(vec!["Retain", "Delete"])),
        (prop::sample::select(vec!["Retain", "Delete"]), any::<bool>(), 0..7i32),
        (prop::collection::btree_set(0..6i64, 0..3), prop::collection::vec(prop::bool::weighted(0.7), 40)),
    )
        .prop_map(
            |((replicas, parallel, mu, partition, policy), (reserved, ws), (wd, env_change, nr), (nres, kubelet))| {
                Case {
                    replicas,
                    parallel,
                    // The webhook allows maxUnavailable > 1 only under Parallel.
                    max_unavailable: if parallel { mu } else { 1 },
                    partition,
                    policy,
                    reserved: reserved.into_iter().collect(),
                    when_scaled: ws,
                    when_deleted: wd,
                    env_change,
                    new_replicas: nr,
                    new_reserved: nres.into_iter().collect(),
                    kubelet,
                }
            },
        )
}

fn world(c: &Case) -> World {
    let mut set = stateful_set(
        c.replicas,
        "nginx:1",
        json!({
            "podManagementPolicy": if c.parallel { "Parallel" } else { "OrderedReady" },
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": c.partition,
                "maxUnavailable": c.max_unavailable, "podUpdatePolicy": c.policy}},
            "reserveOrdinals": c.reserved,
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"resources": {"requests": {"storage": "1Gi"}}}}],
            "persistentVolumeClaimRetentionPolicy": {"whenScaled": c.when_scaled, "whenDeleted": c.when_deleted},
        }),
    );
    let spec = set.spec.template.spec.as_mut().unwrap();
    spec.readiness_gates = Some(vec![serde_json::from_value(json!({"conditionType": "InPlaceUpdateReady"})).unwrap()]);
    World::new(set)
}

fn unavailable(p: &Pod) -> bool {
    !pods::is_ready(p)
        || p.metadata.deletion_timestamp.is_some()
        || !matches!(lifecycle::state(p), State::Unset | State::Normal)
        || refresh::update_completed(p, Options::default()).is_err()
}

fn check_round(w: &World, plan: &super::plan::Plan) -> Result<(), TestCaseError> {
    let set = &w.set;
    let ru = set.spec.update_strategy.rolling_update.clone().unwrap_or_default();
    let max = ru.max_unavailable.as_ref().map_or(1, |m| match m {
        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(i) => *i as usize,
        k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(_) => 1,
    });
    let partition = i64::from(ru.partition.unwrap_or(0));
    let by_name = |n: &str| w.pods.iter().find(|p| pods::name(p) == n);
    let taken: Vec<&Pod> = plan
        .actions
        .iter()
        .filter(|a| matches!(a.kind, ActionKind::UpdateInPlace | ActionKind::Recreate))
        .filter_map(|a| a.pod.as_deref().and_then(by_name))
        .collect();
    for p in &taken {
        let o = identity::pod_ordinal(p).map_or(-1, i64::from);
        prop_assert!(o >= partition, "{} updated below partition {partition}", pods::name(p));
    }
    if taken.iter().any(|p| !unavailable(p)) {
        let range = super::ordinals::ReplicaRange::of(set, &w.gates);
        let mut busy: BTreeSet<&str> =
            w.pods.iter().filter(|p| range.contains_pod(p) && unavailable(p)).map(pods::name).collect();
        busy.extend(taken.iter().map(|p| pods::name(p)));
        prop_assert!(busy.len() <= max, "{} unavailable with maxUnavailable {max}: {busy:?}", busy.len());
    }
    for a in &plan.actions {
        for wr in &a.writes {
            prop_assert!(!matches!(wr, Write::DeletePvc { .. }), "a claim deleted: {a:?}");
        }
    }
    Ok(())
}

fn check_state(w: &World, c: &Case) -> Result<(), TestCaseError> {
    let mut seen = BTreeSet::new();
    for p in &w.pods {
        if let Some(o) = identity::pod_ordinal(p) {
            prop_assert!(seen.insert(o), "two pods with ordinal {o}");
        }
    }
    if c.when_scaled == "Retain" && c.when_deleted == "Retain" {
        for claim in &w.pvcs {
            prop_assert!(
                claim.metadata.owner_references.as_ref().is_none_or(|r| r.is_empty()),
                "Retain/Retain claim {:?} got owners",
                claim.metadata.name
            );
        }
    }
    Ok(())
}

fn run(c: &Case) -> Result<World, TestCaseError> {
    let mut w = world(c);
    for _ in 0..30 {
        let p = w.plan();
        prop_assert!(p.errors.is_empty(), "{:?}", p.errors);
        w.apply(&p).map_err(|e| TestCaseError::fail(format!("{e:?}")))?;
        check_state(&w, c)?;
        w.kubelet();
        w.advance(1);
    }
    w.edit(|s| {
        let ctr = &mut s.spec.template.spec.as_mut().unwrap().containers[0];
        if c.env_change {
            ctr.env = Some(vec![serde_json::from_value(json!({"name": "A", "value": "1"})).unwrap()]);
        } else {
            ctr.image = Some("nginx:2".into());
        }
        s.spec.replicas = Some(c.new_replicas);
        s.spec.reserve_ordinals =
            c.new_reserved.iter().map(|o| serde_json::from_value::<_>(Value::from(*o)).unwrap()).collect();
    });
    for &kubelet in &c.kubelet {
        let p = w.plan();
        prop_assert!(p.errors.is_empty(), "{:?}", p.errors);
        check_round(&w, &p)?;
        let before = w.pods.clone();
        w.apply(&p).map_err(|e| {
            let names: Vec<(String, Option<String>, Option<String>)> = before
                .iter()
                .map(|p| {
                    (
                        pods::name(p).to_string(),
                        p.metadata.resource_version.clone(),
                        p.status.as_ref().and_then(|s| s.phase.clone()),
                    )
                })
                .collect();
            TestCaseError::fail(format!("{e:?} applying {:#?} on {names:?}", p.actions))
        })?;
        check_state(&w, c)?;
        if kubelet {
            w.kubelet();
        }
        w.advance(1);
    }
    Ok(w)
}

/// The generator's cases do roll out: one fixed case run to its end updates exactly the pods
/// above the partition, in place.
#[test]
fn a_generated_style_case_reaches_the_end_of_its_rollout() {
    let c = Case {
        replicas: 5,
        parallel: true,
        max_unavailable: 2,
        partition: 1,
        policy: "InPlaceIfPossible",
        reserved: vec![],
        when_scaled: "Delete",
        when_deleted: "Delete",
        env_change: false,
        new_replicas: 5,
        new_reserved: vec![],
        kubelet: vec![true; 40],
    };
    let w = run(&c).unwrap();
    let images: Vec<&str> = (0..5)
        .map(|o| {
            let name = identity::pod_name(&w.set, o);
            let p = w.pods.iter().find(|p| pods::name(p) == name).unwrap();
            p.spec.as_ref().unwrap().containers[0].image.as_deref().unwrap()
        })
        .collect();
    assert_eq!(images, ["nginx:1", "nginx:2", "nginx:2", "nginx:2", "nginx:2"]);
    // Delete/Delete: the claims of replicas carry the set's reference (a pod's only once condemned).
    assert_eq!(w.pvcs.len(), 5);
    for claim in &w.pvcs {
        let refs = claim.metadata.owner_references.clone().unwrap_or_default();
        assert!(
            refs.len() == 1 && refs[0].kind == "StatefulSet" && refs[0].uid == "uid-web",
            "{:?}: {refs:?}",
            claim.metadata.name
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(64),
        ..ProptestConfig::default()
    })]

    #[test]
    fn rounds_keep_the_invariants(c in case()) {
        run(&c)?;
    }
}
