//! In-place update decisions (spec §3): kruise's JSON diff, the classifier that decides whether
//! a template change can be applied to running pods in place (§3.2), and the InPlaceOnly guard of
//! the validating webhooks (§3.6, decisions §11.2/§11.8).

pub mod classify;
pub mod envref;
pub mod goshape;
pub mod guard;
pub mod jsondiff;
pub mod metapatch;
pub mod qos;
pub mod vertical;
