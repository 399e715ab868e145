//! The views and the pod review of the SidecarSet-count measurements (issue 4 item 4, issue 16),
//! shared by the criterion bench `injection` and `examples/loadtest_review_cost.rs`: `n`
//! SidecarSets, one of which matches the pod; of the others 95% are scoped to other namespaces
//! and 5% are cluster-wide with a selector the pod does not match.

use kruise::cluster::files::Snapshot;
use kruise::webhook::request::ReviewRequest;
use kruise::webhook::review::Review;
use kube::core::admission::Operation;
use objects::{ContainerExt, PodBuilder, SidecarSetBuilder, container};

/// The typed object builders of the integration tests.
#[allow(dead_code)]
#[path = "../tests/common/objects.rs"]
mod objects;

/// A view of `n` SidecarSets, one matching [`pod`].
pub fn snapshot(n: usize) -> Snapshot {
    let mut snap = Snapshot::default();
    let proxy = container("proxy", "envoy:1.30");
    let matching = SidecarSetBuilder::new("match").namespace("default").selector(&[("app", "web")]);
    snap.insert(matching.container(proxy).share_volumes().transfer_env("web", "LOG_LEVEL").json()).unwrap();
    for i in 1..n {
        let set = SidecarSetBuilder::new(&format!("set-{i}"));
        let set = if i % 20 == 0 {
            set.selector(&[("tier", "other")])
        } else {
            set.namespace(&format!("ns-{i}")).selector(&[("app", "web")])
        };
        snap.insert(set.container(container(&format!("side-{i}"), "busybox:1.36")).json()).unwrap();
    }
    snap
}

/// The pod of [`review`].
pub fn pod() -> serde_json::Value {
    let web = container("web", "nginx:1.27").env("LOG_LEVEL", "info").mount("data", "/data");
    PodBuilder::new("web-0").label("app", "web").container(web).empty_dir("data").json()
}

/// A CREATE review of [`pod`].
pub fn review() -> Review {
    ReviewRequest::for_object(Operation::Create, &pod()).username("bench").decode().unwrap()
}
