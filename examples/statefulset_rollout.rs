//! Benchmark (issue 27): an in-place rollout of an Advanced StatefulSet of N pods (Parallel,
//! InPlaceIfPossible, maxUnavailable 20%) on the real control plane, the controller in a child
//! process of its own ([`rollout_support`](rollout_support/mod.rs) says what is measured and how).
//! The child runs the workload controllers as tests do (`controller::run_workloads`: the CloneSet
//! controller beside it has nothing to do in the benchmark's namespace).
//!
//! `cargo run --example statefulset_rollout -- 100 1000`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "rollout_support/mod.rs"]
mod rollout_support;

use kruise::apis::statefulset::v1beta1::StatefulSet;
use kruise::controller::Settings;
use kruise::metrics::Metrics;
use kube::api::{Api, Patch, PatchParams, PostParams};
use rollout_support::Bench;
use serde_json::{Value, json};

/// The allocator of the `kruise` binary, so the memory figures are the product's.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: kruise_alloc::Mimalloc = kruise_alloc::Mimalloc;

struct StatefulSetBench;

impl Bench for StatefulSetBench {
    const CONTROLLER: &'static str = "statefulset";

    async fn run(
        client: kube::Client,
        settings: Settings,
        metrics: Metrics,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        kruise::controller::run_workloads(client, settings, metrics, shutdown).await;
    }

    async fn create(client: &kube::Client, ns: &str, n: i32) {
        // As the mutating webhook leaves it (the readiness gate of in-place updates included).
        let set: StatefulSet = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1beta1", "kind": "StatefulSet", "metadata": {"name": "bench"},
            "spec": {
                "replicas": n, "serviceName": "bench", "selector": {"matchLabels": {"app": "bench"}},
                "template": {"metadata": {"labels": {"app": "bench"}},
                    "spec": {"readinessGates": [{"conditionType": "InPlaceUpdateReady"}],
                        "containers": [{"name": "main", "image": "nginx:1.25"}]}},
                "podManagementPolicy": "Parallel",
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {
                    "podUpdatePolicy": "InPlaceIfPossible", "partition": 0, "maxUnavailable": "20%"}},
                "revisionHistoryLimit": 10
            }
        }))
        .unwrap();
        Api::<StatefulSet>::namespaced(client.clone(), ns).create(&PostParams::default(), &set).await.unwrap();
    }

    async fn patch_image(client: &kube::Client, ns: &str) {
        let image = json!({"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "nginx:1.26"}]}}}});
        let api = Api::<StatefulSet>::namespaced(client.clone(), ns);
        api.patch("bench", &PatchParams::default(), &Patch::Merge(image)).await.unwrap();
    }

    async fn status(client: &kube::Client, ns: &str) -> Option<Value> {
        let set = Api::<StatefulSet>::namespaced(client.clone(), ns).get("bench").await.ok()?;
        serde_json::to_value(set.status?).ok()
    }
}

fn main() {
    rollout_support::main::<StatefulSetBench>();
}
