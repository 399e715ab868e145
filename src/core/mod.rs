//! Pure decisions: no kube client, no HTTP, no async, no I/O. Everything here takes typed values
//! and returns plans or verdicts, and is tested with tables at the bottom of each file.

pub mod conversion;
pub mod defaults;
pub mod features;
pub mod inplace;
pub mod pod_mutation;
pub mod sidecar;
pub mod validation;
