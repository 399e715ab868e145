//! Invariants of the SidecarSet planner over random rollouts (issue 28 "done means"; spec §4.12):
//! a set (cold or hot upgrade) injected into 1–12 running pods gets a new image with a random
//! `maxUnavailable` (number or percent), `partition` (none, number or percent) and optionally
//! `scatterStrategy`; then rounds of plan → apply to the fake API of
//! [`crate::core::rollout::testkit`] (pins checked) → a kubelet that catches up on a random
//! subset of pods. Every round checks:
//!
//! 1. every write applies (the plan never conflicts with itself);
//! 2. never more than `maxUnavailable` pods (at least one for a percentage) are updated but not yet
//!    consistent and ready — the pods all start ready, so none is "always taken";
//! 3. partition: at least `partition` pods (as kruise computes it over the matched count) keep the
//!    old sidecars;
//! 4. the hash annotation always says what the containers run: a pod's entry is the new hash
//!    exactly when its (working) sidecar container has the new image; the idle container of a
//!    hot pair runs the old image or the empty one;
//! 5. the status counts are right (recounted from the pods with plain definitions);
//!
//! and, once the kubelet catches up everywhere, the rollout converges: every pod beyond the
//! partition is updated and ready, the idle containers are empty, and a further round writes
//! nothing.

use proptest::prelude::*;
use serde_json::json;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::pods;
use super::strategy::max_unavailable;
use super::testkit::{World, hot_set, sidecar_set};
use crate::apis::common::UpdateScatterTerm;
use crate::apis::keys::SIDECARSET_HASH;
use crate::compat::intstr::calculate_partition_replicas;

#[derive(Clone, Debug)]
struct Case {
    pods: usize,
    hot: bool,
    max_unavailable: Option<IntOrString>,
    partition: Option<IntOrString>,
    scatter: bool,
    /// Per round, which pods the kubelet catches up on (bit i: pod i).
    kubelet: Vec<u16>,
}

fn int_or_percent(max: i32) -> impl Strategy<Value = Option<IntOrString>> {
    prop_oneof![
        Just(None),
        (0..=max).prop_map(|i| Some(IntOrString::Int(i))),
        (0..=100i32).prop_map(|p| Some(IntOrString::String(format!("{p}%")))),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..=12, any::<bool>(), int_or_percent(4), int_or_percent(12), any::<bool>(), prop::collection::vec(any::<u16>(), 1..12))
        .prop_map(|(pods, hot, max_unavailable, partition, scatter, kubelet)| {
            // maxUnavailable 0 as a number would stop every ready pod: kruise validation refuses it.
            let max_unavailable = match max_unavailable {
                Some(IntOrString::Int(0)) => Some(IntOrString::Int(1)),
                other => other,
            };
            Case { pods, hot, max_unavailable, partition, scatter, kubelet }
        })
}

fn world(c: &Case) -> World {
    let set = if c.hot {
        hot_set("sidecar:1", "empty:1")
    } else {
        sidecar_set(json!({"containers": [{"name": "cold-sidecar", "image": "sidecar:1"}]}))
    };
    let mut w = World::new(set, c.pods);
    w.edit(|s| {
        s.spec.containers[0].container.image = Some("sidecar:2".into());
        let u = &mut s.spec.update_strategy;
        u.max_unavailable = c.max_unavailable.clone();
        u.partition = c.partition.clone();
        if c.scatter {
            u.scatter_strategy = vec![UpdateScatterTerm { key: "zone".into(), value: "*".into() }];
        }
    });
    w
}

/// The image of the sidecar the pod's hash annotation speaks for (cold: the container; hot: the
/// working one), and the idle one's.
fn sidecar_images(w: &World, p: &Pod) -> (String, Option<String>) {
    let image = |n: &str| pods::container(p, n).and_then(|c| c.image.clone()).unwrap_or_default();
    let name = &w.set.spec.containers[0].container.name;
    if w.set.spec.containers[0].upgrade_strategy.upgrade_type == "HotUpgrade" {
        let (working, idle) = pods::hot_containers(p, name);
        (image(&working), Some(image(&idle)))
    } else {
        (image(name), None)
    }
}

fn updated(w: &World, p: &Pod) -> bool {
    let hash = w.set.metadata.annotations.as_ref().unwrap()[SIDECARSET_HASH].clone();
    pods::hash_entry(p, SIDECARSET_HASH, "test-sidecarset").is_some_and(|e| e.hash == hash)
}

/// The kubelet runs what the spec says (every container status has the spec image).
fn caught_up(p: &Pod) -> bool {
    let statuses = p.status.as_ref().and_then(|s| s.container_statuses.as_ref());
    p.spec.as_ref().unwrap().containers.iter().all(|c| {
        statuses.into_iter().flatten().any(|s| s.name == c.name && Some(&s.image) == c.image.as_ref())
    })
}

fn idle_empty(w: &World, p: &Pod) -> bool {
    sidecar_images(w, p).1.is_none_or(|idle| idle == "empty:1")
}

fn check_round(c: &Case, w: &World, status: &crate::apis::sidecarset::SidecarSetStatus) -> Result<(), TestCaseError> {
    let n = w.cluster.pods.len();
    let max = max_unavailable(c.max_unavailable.as_ref(), n);
    let partition = c.partition.as_ref().map_or(0, |p| calculate_partition_replicas(Some(p), Some(n as i32)).unwrap()) as usize;
    let mut unavailable = 0;
    let mut not_updated = 0;
    for p in &w.cluster.pods {
        let up = updated(w, p);
        let (working, idle) = sidecar_images(w, p);
        // 4. The hash entry and the containers agree.
        prop_assert_eq!(up, working == "sidecar:2", "pod {:?}: updated {} but runs {}", p.metadata.name, up, working);
        if let Some(idle) = idle {
            prop_assert!(idle == "empty:1" || idle == "sidecar:1", "idle container runs {}", idle);
        }
        if up && !(caught_up(p) && idle_empty(w, p)) {
            unavailable += 1;
        }
        if !up {
            not_updated += 1;
        }
    }
    // 2. maxUnavailable.
    prop_assert!(unavailable <= max, "{} pods being upgraded, maxUnavailable {}", unavailable, max);
    // 3. partition.
    prop_assert!(not_updated >= partition.min(n), "{} pods at the old sidecars, partition {}", not_updated, partition);
    // 5. Status, as planned from the pods before this round's writes: recounted on the pods the
    // plan saw (the caller passes the plan's status and checks it against the previous state).
    prop_assert_eq!(status.matched_pods as usize, n);
    Ok(())
}

fn recount(w: &World) -> [i32; 4] {
    let mut out = [w.cluster.pods.len() as i32, 0, 0, 0];
    for p in &w.cluster.pods {
        let up = updated(w, p);
        let ready = caught_up(p) && idle_empty(w, p);
        out[1] += i32::from(up);
        out[2] += i32::from(ready);
        out[3] += i32::from(up && ready);
    }
    out
}

fn run_case(c: Case) -> Result<(), TestCaseError> {
    let mut w = world(&c);
    let mut rounds = c.kubelet.clone();
    // Then the kubelet catches up everywhere until the rollout ends.
    rounds.extend(std::iter::repeat_n(u16::MAX, 3 * c.pods + 6));
    for mask in rounds {
        let before = recount(&w);
        let plan = w.plan();
        let s = &plan.status;
        // 5. Status counts.
        prop_assert_eq!([s.matched_pods, s.updated_pods, s.ready_pods, s.updated_ready_pods], before);
        // 1. Writes apply.
        let refused = w.apply(&plan);
        prop_assert!(refused.is_empty(), "{:?}", refused);
        check_round(&c, &w, &plan.status)?;
        w.kubelet(|p| {
            let i: usize = p.metadata.name.as_deref().unwrap_or("").trim_start_matches("pod-").parse().unwrap_or(0);
            mask & (1 << (i % 16)) != 0
        });
        w.cluster.advance(1);
    }
    // Convergence.
    let n = c.pods;
    let partition =
        c.partition.as_ref().map_or(0, |p| calculate_partition_replicas(Some(p), Some(n as i32)).unwrap()) as usize;
    let [matched, up, ready, up_ready] = recount(&w);
    let want_updated = n.saturating_sub(partition) as i32;
    prop_assert_eq!([matched, up, ready, up_ready], [n as i32, want_updated, n as i32, want_updated]);
    let last = w.plan();
    prop_assert!(last.pod_actions.is_empty(), "{:?}", last.pod_actions);
    prop_assert!(last.revision_writes.is_empty() && last.status_write.is_none());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(128),
        ..ProptestConfig::default()
    })]

    #[test]
    fn rollouts_keep_the_invariants(c in case()) {
        run_case(c)?;
    }
}

/// A fixed row: 6 pods, partition 2, maxUnavailable 1 (the end-to-end shape) upgrades
/// exactly 4 pods, one at a time.
#[test]
fn six_pods_partition_two() {
    let c = Case {
        pods: 6,
        hot: false,
        max_unavailable: Some(IntOrString::Int(1)),
        partition: Some(IntOrString::Int(2)),
        scatter: false,
        kubelet: vec![0, 0, u16::MAX, 0],
    };
    run_case(c).unwrap();
}
