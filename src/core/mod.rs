//! Pure decisions: no kube client, no HTTP, no async, no I/O. Everything here takes typed values
//! and returns plans or verdicts, and is tested with tables beside it (at the bottom of each
//! file, or in a sibling `tests.rs`). The Go and apimachinery behaviour these decisions are built
//! from (quantities, field errors, selectors, JSON diffs, pod validation...) is in
//! [`crate::compat`].
//!
//! - [`defaults`]: what the mutating webhooks default in CloneSets, Advanced StatefulSets and
//!   their pod templates (spec §1).
//! - [`validation`]: whether a CloneSet or Advanced StatefulSet is valid, may be updated this way,
//!   or deleted (spec §2, §3.6).
//! - [`inplace`]: whether a template change can be applied to running pods in place (spec §3).
//! - [`sidecar`]: SidecarSets: defaults, hashes, validity, which apply to a pod and what
//!   injecting them changes (spec §1.3, §2.3, §4).
//! - [`pod_mutation`]: the other pod mutators, readiness gate and launch priority (spec §4.1).
//! - [`conversion`]: Advanced StatefulSet v1alpha1 <-> v1beta1.
//! - [`features`]: which feature gates are on (kruise's names, defaults and dependencies).
//! - [`certs`]: the webhook certificate's next step: renewal and overlapping CA rotation (§8.4).
//! - [`leader`]: leader election on a Lease, as client-go decides it (§8.5).

pub mod certs;
pub mod conversion;
pub mod defaults;
pub mod features;
pub mod inplace;
pub mod leader;
pub mod pod_mutation;
pub mod sidecar;
pub mod validation;
