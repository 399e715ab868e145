//! Criterion benchmarks of the admission path without the network: decode a review, default the
//! object, build the patch, encode the response (what one HTTPS request costs in CPU besides TLS).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use kruise::cluster::EmptyView;
use kruise::core::features::FeatureGates;
use kruise::webhook::paths::Handler;
use kruise::webhook::review::{decode, respond};
use kruise::webhook::{Context, handle};

fn review(name: &str) -> Vec<u8> {
    std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/reviews").join(name)).unwrap()
}

fn bench(c: &mut Criterion) {
    let ctx = Context { gates: FeatureGates::default(), cluster: Arc::new(EmptyView) };
    for (name, file, handler) in [
        ("mutate_cloneset_create", "cloneset-create.json", Handler::MutateCloneSet),
        ("mutate_statefulset_create", "statefulset-create.json", Handler::MutateStatefulSet),
    ] {
        let body = review(file);
        c.bench_function(name, |b| {
            b.iter(|| {
                let r = decode(&body).unwrap();
                let v = handle(&ctx, handler, &r).unwrap();
                serde_json::to_vec(&respond(&r.request, v)).unwrap()
            })
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
