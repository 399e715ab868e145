//! kruise-testenv: a Kubernetes API server for tests, in process, on `127.0.0.1`.
//!
//! Good enough for the real `kube::Client`, kube-runtime watchers/reflectors and kubectl
//! (`--validate=false`): in-memory storage with a cluster-wide resourceVersion, watches with
//! bookmarks and 410 Gone, merge/JSON/strategic merge patches, status and scale subresources,
//! finalizers, garbage collection, discovery, CRDs that make their resources served — and dynamic
//! admission that calls webhooks over HTTPS exactly as kube-apiserver does (rules, selectors,
//! caBundle, service names, failure policy, dry run). A simulated kubelet runs pods, and faults can
//! be injected per test. Test infrastructure only.
//!
//! # Using it
//! - [`TestEnv::start`] (or [`TestEnv::builder`]) binds `127.0.0.1:0`, creates the namespaces
//!   `default`, `kube-system`, `kube-public`, `kube-node-lease`, and runs the API server and the
//!   garbage collector until the `TestEnv` is dropped. [`TestEnv::client`] gives a `kube::Client`,
//!   [`TestEnv::kubeconfig_yaml`]/[`TestEnv::write_kubeconfig`] a kubeconfig (for kubectl or a
//!   separately started `kruise serve`).
//! - Manifests: [`TestEnv::apply`] (one object), [`TestEnv::apply_yaml`], [`TestEnv::apply_path`]
//!   (a file or a directory such as `deploy/crds/`). Applying a CRD makes its resource served at
//!   once.
//! - Webhooks: [`TestEnv::register_webhooks`] / [`TestEnv::register_webhooks_from_path`] apply
//!   webhook configurations with a CA bundle injected ([`inject_ca_bundle`]);
//!   [`TestEnv::set_service`] or `env.services().insert(ServiceRef::new(ns, name, port), addr)`
//!   routes `clientConfig.service` to a loopback address (TLS still names `<name>.<ns>.svc`).
//!   [`TestEnv::admission_log`] records every call.
//! - Pods: [`TestEnv::start_kubelet`] (or [`TestEnvBuilder::kubelet`]) with a [`KubeletConfig`];
//!   the returned [`Kubelet`] changes the ready delay and grace-period cap at any time.
//! - Faults: [`TestEnv::faults`] (latency, conflict rate, 5xx rate, watch drops and lifetimes,
//!   scoped to resources), [`TestEnv::compact_history`] for 410s, [`TestEnv::wait_for_watches`].
//!
//! ```no_run
//! # async fn demo() -> Result<(), kruise_testenv::Error> {
//! use kruise_testenv::{KubeletConfig, TestEnv};
//! let mut env = TestEnv::start().await?;
//! env.apply_path("deploy/crds").await?;
//! # let (ca_pem, webhook_addr): (Vec<u8>, std::net::SocketAddr) = (vec![], "127.0.0.1:9443".parse().unwrap());
//! env.register_webhooks_from_path("webhook-config", &ca_pem).await?;
//! env.set_service("kruise-system", "kruise-webhook-service", 443, webhook_addr);
//! env.start_kubelet(KubeletConfig::default()).await?;
//! let client = env.client()?;
//! # drop(client); Ok(()) }
//! ```

pub mod admission;
pub mod api;
pub mod cluster;
mod env;
pub mod errors;
pub mod faults;
mod gc;
pub mod http;
pub mod kubelet;
pub mod meta;
pub mod patch;
pub mod resources;
pub mod selectors;
pub mod store;

pub use admission::{AdmissionRecord, CallOutcome, ServiceMap, ServiceRef};
pub use env::{INITIAL_NAMESPACES, TestEnv, TestEnvBuilder, inject_ca_bundle, parse_manifests};
pub use errors::{ApiError, Error};
pub use faults::{FaultConfig, FaultCounts, Faults};
pub use kubelet::{Kubelet, KubeletConfig, READY_DELAY_ANNOTATION};
