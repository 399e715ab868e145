//! Integration tests of the harness: the real kube client, kube-runtime reflectors, kubectl and
//! an HTTPS admission webhook against a `TestEnv`. One binary, one module per area.

// Test code: failing loudly is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod admission;
mod client;
mod common;
mod faults;
mod gc;
mod kubectl;
mod kubelet;
mod reflector;
