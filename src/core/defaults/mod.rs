//! Mutating-webhook defaults of the kruise workloads (spec §1.1.3, §1.2.3, §1.5): pure functions
//! over typed objects; the webhook turns the result into a patch.

pub mod cloneset;
pub mod pod;
pub mod statefulset;

pub use pod::QuantityError;
