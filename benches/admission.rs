//! Criterion benchmarks of the admission path without the network: decode a review, run the
//! handler, encode the response (what one HTTPS request costs in CPU besides TLS and HTTP), for
//! the pod mutating path with the sample SidecarSet and the CloneSet and Advanced StatefulSet
//! mutating and validating paths, and the pod validating path (`/validate-pod`) for a pod no
//! PodUnavailableBudget covers and one a budget covers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use kruise::cluster::files::Snapshot;
use kruise::core::features::FeatureGates;
use kruise::webhook::review::{decode, encode};
use kruise::webhook::{Context, handle};

/// The allocator of the `kruise` binary, so the figures are the server's.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: kruise_alloc::Mimalloc = kruise_alloc::Mimalloc;

#[path = "reviews.rs"]
mod reviews;

fn example(name: &str) -> Vec<u8> {
    std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples").join(name)).unwrap()
}

fn bench(c: &mut Criterion) {
    let mut snapshot = Snapshot::default();
    let sample: serde_json::Value = serde_yaml_ng::from_slice(&example("sidecarset.yaml")).unwrap();
    assert!(snapshot.insert(sample).unwrap());
    assert!(snapshot.insert(reviews::budget()).unwrap());
    let ctx = Context::with_gates(FeatureGates::default(), Arc::new(snapshot));
    for (name, file, handler) in reviews::CASES {
        let body = example(file);
        if name.starts_with("validate_pod_") {
            // The two pod cases measure what they say: one decided at once, one on the budget.
            let check = kruise::webhook::validate_pod::check(&ctx, &decode(&body).unwrap());
            let on_budget = matches!(check, kruise::webhook::validate_pod::PodCheck::Budget(_));
            assert_eq!(on_budget, name.ends_with("_budget"), "{name}");
        }
        c.bench_function(name, |b| {
            b.iter(|| {
                let r = decode(&body).unwrap();
                let v = handle(&ctx, handler, &r).unwrap();
                encode(&r.request, &v)
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
