//! The node's container runtime, seen through its CRI v1 gRPC API (issue 29 item 4): the client
//! `kruise daemon` pulls images with, runtime discovery (which socket to talk to, and why), and,
//! with the `fake` feature, an in-process runtime for tests. kruise's Go daemon does the same in
//! `pkg/daemon/criruntime` (factory.go for discovery, imageruntime/cri.go for pulls); we follow its
//! behaviour where users did not hurt and fix where they did (#1319 #1825 #851 #1196 #1663: wrong
//! runtime picked, crash loops when CRI v1 is missing).
//!
//! Table of contents:
//! - [`v1`]: the prost/tonic code generated at build time from `proto/api.proto` (k8s.io/cri-api).
//! - `client`: [`CriClient`], a connected client over a unix socket.
//! - `error`: [`CriError`] and how a runtime's answer is classified (auth failure, not found).
//! - `discover`: [`discover`] and the well-known sockets.
//! - [`fake`] (feature `fake`): [`fake::FakeRuntime`].

mod client;
mod discover;
mod error;
#[cfg(feature = "fake")]
pub mod fake;

pub use client::{
    CONTAINER_NAME_LABEL, CriClient, POD_UID_LABEL, RESTART_COUNT_ANNOTATION, RuntimeVersion, socket_path,
};
pub use discover::{
    DEFAULT_PROBE_TIMEOUT, Discovery, Probe, WELL_KNOWN_ENDPOINTS, discover, discover_with_timeout,
    kubelet_runtime_endpoint,
};
pub use error::CriError;

/// CRI v1 (`runtime.v1`), generated from `proto/api.proto` of k8s.io/cri-api (see proto/README.md).
#[allow(clippy::all, clippy::pedantic, missing_docs, rustdoc::all, unreachable_pub)]
pub mod v1 {
    tonic::include_proto!("runtime.v1");
}
