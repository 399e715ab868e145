//! Benchmark (issue 11): an in-place rollout of a CloneSet of N pods (maxUnavailable 20%) on the
//! real control plane, the controller in a child process of its own
//! ([`rollout_support`](rollout_support/mod.rs) says what is measured and how).
//!
//! `cargo run --example cloneset_rollout -- 100 1000`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "rollout_support/mod.rs"]
mod rollout_support;

use kruise::apis::cloneset::CloneSet;
use kruise::controller::Settings;
use kruise::metrics::Metrics;
use kube::api::{Api, Patch, PatchParams, PostParams};
use rollout_support::Bench;
use serde_json::{Value, json};

/// The allocator of the `kruise` binary, so the memory figures are the product's.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: kruise_alloc::Mimalloc = kruise_alloc::Mimalloc;

struct CloneSetBench;

impl Bench for CloneSetBench {
    const CONTROLLER: &'static str = "cloneset";

    async fn run(
        client: kube::Client,
        settings: Settings,
        metrics: Metrics,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        kruise::controller::cloneset::run(client, settings, metrics, shutdown).await;
    }

    async fn create(client: &kube::Client, ns: &str, n: i32) {
        let cs: CloneSet = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "metadata": {"name": "bench"},
            "spec": {
                "replicas": n, "selector": {"matchLabels": {"app": "bench"}},
                "template": {"metadata": {"labels": {"app": "bench"}},
                    "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}},
                "updateStrategy": {"type": "InPlaceIfPossible", "partition": 0, "maxUnavailable": "20%",
                    "maxSurge": 0, "inPlaceUpdateStrategy": {}},
                "scaleStrategy": {}, "revisionHistoryLimit": 10
            }
        }))
        .unwrap();
        Api::<CloneSet>::namespaced(client.clone(), ns).create(&PostParams::default(), &cs).await.unwrap();
    }

    async fn patch_image(client: &kube::Client, ns: &str) {
        let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}});
        let api = Api::<CloneSet>::namespaced(client.clone(), ns);
        api.patch("bench", &PatchParams::default(), &Patch::Merge(image)).await.unwrap();
    }

    async fn status(client: &kube::Client, ns: &str) -> Option<Value> {
        let cs = Api::<CloneSet>::namespaced(client.clone(), ns).get("bench").await.ok()?;
        serde_json::to_value(cs.status?).ok()
    }
}

fn main() {
    rollout_support::main::<CloneSetBench>();
}
