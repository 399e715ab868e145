//! Benchmark (issue 34): a UnitedDeployment of N pods over two CloneSet subsets (`zone-a` 50%,
//! `zone-b` the rest; InPlaceIfPossible, maxUnavailable 20%) brought up, then rolled out to a new
//! image in place, on the real control plane; the controllers in a child process of their own
//! ([`rollout_support`](rollout_support/mod.rs) says what is measured and how). The child runs the
//! UnitedDeployment controller and the CloneSet controller on one set of informers, as `kruise
//! serve`'s leader does; the writes are reported for each (the UnitedDeployment's are its subset
//! workloads and its status), the CPU and memory for the whole child.
//!
//! `cargo run --example uniteddeployment_rollout -- 100 1000`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "rollout_support/mod.rs"]
mod rollout_support;

use std::sync::Arc;

use kruise::apis::uniteddeployment::UnitedDeployment;
use kruise::controller::Settings;
use kruise::controller::informers::Informers;
use kruise::metrics::Metrics;
use kube::api::{Api, Patch, PatchParams, PostParams};
use rollout_support::Bench;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The allocator of the `kruise` binary, so the memory figures are the product's.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: kruise_alloc::Mimalloc = kruise_alloc::Mimalloc;

struct UnitedDeploymentBench;

impl Bench for UnitedDeploymentBench {
    const CONTROLLER: &'static str = "uniteddeployment";
    const ALSO: &'static [&'static str] = &["cloneset"];

    async fn run(
        client: kube::Client,
        settings: Settings,
        metrics: Metrics,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        let token = CancellationToken::new();
        let informers = Informers::for_gates(&settings.gates);
        let view: Arc<dyn kruise::cluster::ClusterView> = Arc::new(kruise::cluster::EmptyView);
        let mut tasks = kruise::controller::cloneset::start(&informers, &client, &settings, &metrics, view, &token);
        tasks.extend(kruise::controller::uniteddeployment::start(&informers, &client, &settings, &metrics, &token));
        tasks.extend(informers.start(&client, settings.namespace.as_deref(), &metrics, &token));
        shutdown.await;
        token.cancel();
        futures::future::join_all(tasks).await;
    }

    async fn create(client: &kube::Client, ns: &str, n: i32) {
        let ud: UnitedDeployment = serde_json::from_value(json!({
            "apiVersion": "apps.kruise.io/v1alpha1", "kind": "UnitedDeployment", "metadata": {"name": "bench"},
            "spec": {
                "replicas": n, "selector": {"matchLabels": {"app": "bench"}},
                "template": {"cloneSetTemplate": {"metadata": {"labels": {"app": "bench"}}, "spec": {
                    "selector": {"matchLabels": {"app": "bench"}},
                    "template": {"metadata": {"labels": {"app": "bench"}},
                        "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}]}},
                    "updateStrategy": {"type": "InPlaceIfPossible", "partition": 0, "maxUnavailable": "20%",
                        "maxSurge": 0, "inPlaceUpdateStrategy": {}},
                    "scaleStrategy": {}, "revisionHistoryLimit": 10}}},
                "topology": {"subsets": [{"name": "zone-a", "replicas": "50%"}, {"name": "zone-b"}]},
                "updateStrategy": {"type": "Manual", "manualUpdate": {}},
                "revisionHistoryLimit": 10
            }
        }))
        .unwrap();
        Api::<UnitedDeployment>::namespaced(client.clone(), ns).create(&PostParams::default(), &ud).await.unwrap();
    }

    async fn patch_image(client: &kube::Client, ns: &str) {
        let image = json!({"spec": {"template": {"cloneSetTemplate": {"spec": {"template": {"spec": {
            "containers": [{"name": "main", "image": "nginx:1.26"}]}}}}}}});
        let api = Api::<UnitedDeployment>::namespaced(client.clone(), ns);
        api.patch("bench", &PatchParams::default(), &Patch::Merge(image)).await.unwrap();
    }

    /// The status, with `availableReplicas` (which a UnitedDeployment does not report) read as
    /// its ready replicas for the driver's wait.
    async fn status(client: &kube::Client, ns: &str) -> Option<Value> {
        let ud = Api::<UnitedDeployment>::namespaced(client.clone(), ns).get("bench").await.ok()?;
        let mut status = serde_json::to_value(ud.status?).ok()?;
        status["availableReplicas"] = status["readyReplicas"].clone();
        Some(status)
    }
}

fn main() {
    rollout_support::main::<UnitedDeploymentBench>();
}
