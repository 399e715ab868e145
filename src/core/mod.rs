//! Pure decisions: no kube client, no HTTP, no async, no I/O. Everything here takes typed values
//! and returns plans or verdicts, and is tested with tables at the bottom of each file.

pub mod conversion;
pub mod defaults;
pub mod expectations;
pub mod features;
pub mod field;
pub mod gotypes;
pub mod history;
pub mod image;
pub mod inplace;
pub mod lifecycle;
pub mod names;
pub mod patch;
pub mod pod_mutation;
pub mod pods;
pub mod quantity;
pub mod rollout;
pub mod selector;
pub mod sidecar;
pub mod validation;
