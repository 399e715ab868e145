//! In-place update decisions (spec §3): the classifier that decides whether a template change can
//! be applied to running pods in place (§3.2), and the InPlaceOnly guard of the validating
//! webhooks (§3.6, decisions §11.2/§11.8). Both read kruise's JSON diff
//! ([`crate::compat::jsondiff`]) of templates in Go's shape ([`crate::compat::goshape`]).

pub mod classify;
pub mod envref;
pub mod guard;
pub mod qos;
pub mod vertical;
