//! Cost of a pod CREATE through `/mutate-pod` as the number of SidecarSets grows (issue 4
//! item 4, issue 16): 1, 100, 1,000 and 10,000 SidecarSets, one of which matches the pod; of the
//! others 95% are scoped to other namespaces and 5% are cluster-wide with a selector the pod does
//! not match. `indexed` uses the view's namespace and label indexes (what the server does), and
//! should stay flat; `full-scan` uses the trait's default lookups, which filter every
//! SidecarSet, for comparison.
//!
//! Run: `cargo bench --bench injection -- --warm-up-time 1 --measurement-time 3`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use k8s_openapi::api::apps::v1::ControllerRevision;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kruise::apis::SidecarSet;
use kruise::cluster::ClusterView;
use kruise::cluster::files::Snapshot;
use kruise::webhook::{Context, Handler, handle};
use serde_json::json;

/// The allocator of the `kruise` binary, so the figures are the server's.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: kruise_alloc::Mimalloc = kruise_alloc::Mimalloc;

/// The views of n SidecarSets and the pod review (shared with examples/loadtest_review_cost.rs).
mod views;
use views::{review, snapshot};

/// The same objects without the namespace index: the trait's default lookup.
struct FullScan(Snapshot);

impl ClusterView for FullScan {
    fn namespace(&self, name: &str) -> Option<Arc<Namespace>> {
        self.0.namespace(name)
    }
    fn pod(&self, namespace: &str, name: &str) -> Option<Arc<Pod>> {
        self.0.pod(namespace, name)
    }
    fn sidecarsets(&self) -> Vec<Arc<SidecarSet>> {
        self.0.sidecarsets()
    }
    fn controller_revisions(&self, namespace: &str) -> Vec<Arc<ControllerRevision>> {
        self.0.controller_revisions(namespace)
    }
}

fn injection(c: &mut Criterion) {
    let review = review();
    let mut group = c.benchmark_group("mutate-pod");
    for n in [1usize, 100, 1000, 10_000] {
        let ctx = Context::with_gates(Default::default(), Arc::new(snapshot(n)));
        let verdict = handle(&ctx, Handler::MutatePod, &review).unwrap();
        assert!(verdict.allowed && verdict.patch.is_some(), "the matching set is injected");
        group.bench_with_input(BenchmarkId::new("indexed", n), &ctx, |b, ctx| {
            b.iter(|| black_box(handle(ctx, Handler::MutatePod, black_box(&review))))
        });
    }
    let ctx = Context::with_gates(Default::default(), Arc::new(FullScan(snapshot(1000))));
    group.bench_with_input(BenchmarkId::new("full-scan", 1000), &ctx, |b, ctx| {
        b.iter(|| black_box(handle(ctx, Handler::MutatePod, black_box(&review))))
    });
    group.finish();
}

/// Where the time goes for the 1,000-set view: the pure plan alone, and decode + plan + patch
/// without the handler's bookkeeping.
fn breakdown(c: &mut Criterion) {
    use kruise::core::sidecar::inject::{InjectionInput, plan_injection};
    use kruise::core::sidecar::podpatch;
    let review = review();
    let raw = review.object.clone().unwrap();
    let pod: Pod = serde_json::from_value(raw.clone()).unwrap();
    let snap = snapshot(1000);
    let candidates = snap.sidecarsets_for_pod("default", pod.metadata.labels.as_ref().unwrap());
    let labels = kruise::cluster::namespace_labels(&snap, "default");
    let revisions = Vec::new;
    let input = InjectionInput {
        namespace_labels: &labels,
        revisions: &revisions,
        draw: 0.5,
        now: "2024-01-01T00:00:00Z",
        sort_by_name: false,
    };
    let mut group = c.benchmark_group("breakdown-1000");
    group.bench_function("plan", |b| b.iter(|| black_box(plan_injection(black_box(&pod), &candidates, &input))));
    group.bench_function("decode-plan-apply-patch", |b| {
        b.iter(|| {
            let pod: Pod = serde_json::from_value(black_box(&raw).clone()).unwrap();
            let plan = plan_injection(&pod, &candidates, &input).unwrap();
            let mut mutated = pod;
            let replaced = plan.injected_names();
            plan.apply(&mut mutated);
            let changed = json!({"metadata": {"annotations": mutated.metadata.annotations}, "spec": mutated.spec});
            black_box(podpatch::patch(&raw, &changed, &replaced))
        })
    });
    group.finish();
}

criterion_group!(benches, injection, breakdown);
criterion_main!(benches);
