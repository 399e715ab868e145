//! The test cluster against itself: the real control plane's semantics that the in-process
//! server lacked (pod update validation, CRD pruning, finalizers, server-side apply conflicts,
//! RBAC, garbage collection), the simulated kubelet, and every fault of the proxy as a
//! `kube::Client` sees it. All tests share one control plane (started once for this binary) and
//! each works in a namespace of its own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod api;
mod common;
mod cri;
mod faults;
mod kubelet;
