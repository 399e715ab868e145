//! kruise-testenv: a real Kubernetes control plane for kruise's tests.
//!
//! - [`controlplane`]: the Go program of `testenv/controlplane/` — embedded etcd, kube-apiserver
//!   (RBAC, the default admission plugins, webhooks), kube-controller-manager (garbage
//!   collection, namespaces, service accounts and tokens, node lifecycle, PV binding) and
//!   kube-scheduler, all of one pinned Kubernetes release, on 127.0.0.1; built into
//!   `target/testenv/` on first use.
//! - [`kubelet`]: a simulated kubelet, a client of that API server: nodes with Lease heartbeats,
//!   pods run with the statuses a kubelet reports (in-place image restarts, pull failures,
//!   readiness gates, graceful deletion), and a volume provisioner.
//! - [`proxy`]: a fault proxy between a client under test and the API server (latency, 409/429/5xx
//!   on writes, cut and delayed watches, resets after committed writes), with counters.
//! - [`webhooks`]: webhook configurations registered with a CA, and servers under test reached
//!   through their Service as pods are.
//! - [`cluster`]: the API tests use — [`TestCluster::shared`] starts all of it once per test
//!   binary and hands out a namespace per test, clients and kubeconfigs.
//!
//! ```no_run
//! # async fn demo() -> Result<(), kruise_testenv::Error> {
//! use kruise_testenv::TestCluster;
//! let cluster = TestCluster::shared()?;
//! let ns = cluster.namespace("my-test").await?;
//! let client = cluster.client().await?;
//! cluster.apply_path("deploy/crds").await?;
//! # drop((ns, client)); Ok(()) }
//! ```

pub mod cluster;
pub mod controlplane;
mod errors;
pub mod kubelet;
pub mod manifests;
pub mod proxy;
pub mod wait;
pub mod webhooks;

pub use cluster::{TestCluster, TestNamespace, client_from_kubeconfig, write_kubeconfig};
pub use errors::Error;
pub use kubelet::{Kubelet, KubeletSettings, KubeletStats, READY_DELAY_ANNOTATION};
pub use proxy::{FaultCounts, FaultProxy, Share, WriteFault};
pub use wait::{eventually, eventually_ok};
pub use webhooks::{Endpoint, PodAddress, publish_endpoints, register_webhooks};
