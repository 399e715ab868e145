//! Invariants of the ImagePullJob planner over random jobs (issue 29 "done means"): 1–4 jobs
//! (some on the same image, random `parallelism` 1–4, some with a failing node) over 3–16
//! NodeImages on the testkit's fake API; each round every job plans on the snapshot the round
//! started with (so later jobs of a round see a stale cache, as overlapping reconciles would),
//! its NodeImage patches are applied with their resourceVersion pins checked (a stale one is a
//! conflict, decided again next round), then the fake daemon answers. Every round checks:
//!
//! 1. never more than `parallelism` nodes pull for a job (tag owned, status not finished), also
//!    when two jobs race on one NodeImage; only a job that joins a tag whose pull failed pulls
//!    again for the jobs on it, and then the jobs of that image stay within their summed limits;
//! 2. a job never loses its owner reference on a node it was written to, and no write removes
//!    another job's reference (kruise #1517);
//!
//! and the jobs converge: every job completes with `succeeded + failed = desired`, the failed
//! nodes listed, and a further round writes nothing.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use serde_json::json;

use super::image_name_tag;
use super::testkit::{World, job};

#[derive(Clone, Debug)]
struct Case {
    nodes: usize,
    jobs: Vec<(u8, i32)>,
    failing: Option<usize>,
}

fn cases() -> impl Strategy<Value = Case> {
    (3usize..16, prop::collection::vec((0u8..2, 1i32..5), 1..5), prop::option::of(0usize..16))
        .prop_map(|(nodes, jobs, failing)| Case { nodes, jobs, failing: failing.filter(|f| *f < nodes) })
}

/// The (node, job) pairs whose tag lists the job.
fn owned(w: &World) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (name, ni) in &w.node_images {
        for spec in ni.spec.images.values() {
            for t in &spec.tags {
                for r in &t.owner_references {
                    out.insert((name.clone(), r.name.clone().unwrap_or_default()));
                }
            }
        }
    }
    out
}

fn run(case: &Case) {
    let mut w = World::with_nodes(case.nodes);
    let mut limits = BTreeMap::new();
    for (i, (image, par)) in case.jobs.iter().enumerate() {
        let name = format!("j{i}");
        let image = if *image == 0 { "nginx:1" } else { "foo/bar:v2" };
        w.jobs.insert(name.clone(), job(&name, json!({"image": image, "parallelism": par})));
        limits.insert(name, *par as usize);
    }
    let image_of = |n: &String| w.jobs[n].spec.fields.image.clone();
    let mut by_image: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for n in w.jobs.keys() {
        by_image.entry(image_of(n)).or_default().push(n.clone());
    }
    let shared: BTreeSet<String> = by_image.values().filter(|v| v.len() > 1).flatten().cloned().collect();
    let shared_limit: BTreeMap<String, usize> =
        w.jobs.keys().map(|n| (n.clone(), by_image[&image_of(n)].iter().map(|m| limits[m]).sum())).collect();
    let failing = case.failing.map(|f| format!("n{f}"));
    let fail = |n: &str| failing.as_deref() == Some(n);
    let mut seen = BTreeSet::new();
    for round in 0..200 {
        let view = w.snapshot();
        let names: Vec<String> = w.jobs.keys().cloned().collect();
        for j in &names {
            let p = w.plan_on(j, &view);
            w.apply(j, &p);
            for (name, limit) in &limits {
                let pulling = w.pulling_for(name);
                if failing.is_none() || !shared.contains(name) {
                    assert!(pulling <= *limit, "round {round}: {name} pulls on more than {limit} nodes");
                } else {
                    // A job joining a tag whose pull failed pulls it again, which counts for the
                    // jobs already on it too: together they stay within their summed limits.
                    assert!(pulling <= shared_limit[name], "round {round}: {name}: {pulling} pulls");
                }
            }
        }
        let now = owned(&w);
        assert!(
            seen.is_subset(&now),
            "round {round}: an owner reference was lost: {:?}",
            seen.difference(&now).collect::<Vec<_>>()
        );
        seen = now;
        w.daemon(&fail);
        w.cluster.advance(1);
        if w.jobs.values().all(|j| j.status.as_ref().is_some_and(|s| s.completion_time.is_some())) {
            break;
        }
    }
    for (name, j) in &w.jobs {
        let s = j.status.as_ref().unwrap();
        assert!(s.completion_time.is_some(), "{name} did not complete: {s:?}");
        assert_eq!(s.desired as usize, case.nodes);
        assert_eq!(s.succeeded + s.failed, s.desired);
        let want_failed: Vec<String> = failing.iter().cloned().collect();
        // A job whose tag another job joined later may have been re-pulled; the failing node
        // fails every pull, so it is the only failed node.
        assert_eq!(s.failed_nodes, want_failed, "{name}");
        let (image, _) = image_name_tag(&j.spec.fields.image).unwrap();
        assert!(w.node_images.values().all(|ni| ni.spec.images.contains_key(&image)));
    }
    // Converged: a further round writes nothing.
    let before = w.writes;
    let view = w.snapshot();
    let names: Vec<String> = w.jobs.keys().cloned().collect();
    for j in &names {
        let p = w.plan_on(j, &view);
        assert!(p.node_images.is_empty() && p.status.is_none(), "{j}: {p:?}");
        w.apply(j, &p);
    }
    assert_eq!(w.writes, before);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn parallelism_is_never_exceeded_owners_are_never_lost_and_jobs_converge(case in cases()) {
        run(&case);
    }
}

/// Two jobs on one image racing on the same snapshot: the second's writes conflict, and next
/// round both references are on every node.
#[test]
fn two_jobs_on_one_image_keep_both_references() {
    let mut w = World::with_nodes(3);
    for n in ["a", "b"] {
        w.jobs.insert(n.into(), job(n, json!({"image": "nginx:1", "parallelism": 3})));
    }
    let view = w.snapshot();
    let (pa, pb) = (w.plan_on("a", &view), w.plan_on("b", &view));
    w.apply("a", &pa);
    w.apply("b", &pb);
    assert_eq!(w.conflicts, 3, "b planned on the versions a replaced");
    let view = w.snapshot();
    let pb = w.plan_on("b", &view);
    w.apply("b", &pb);
    for ni in w.node_images.values() {
        let owners: Vec<_> =
            ni.spec.images["nginx"].tags[0].owner_references.iter().map(|r| r.name.clone().unwrap()).collect();
        assert_eq!(owners, ["a", "b"]);
    }
}
