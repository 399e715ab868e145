//! In-place update decisions (spec §3): the classifier that decides whether a template change can
//! be applied to running pods in place (§3.2), the steps that perform it on a pod (`apply`, §3.3)
//! and follow it to completion (`refresh`, §3.4) with the annotations they keep (`state`), and the
//! InPlaceOnly guard of the validating webhooks (§3.6, decisions §11.2/§11.8). The classifier and
//! the guard read kruise's JSON diff ([`crate::compat::jsondiff`]) of templates in Go's shape
//! ([`crate::compat::goshape`]). Shared by the CloneSet and Advanced StatefulSet controllers.

pub mod apply;
pub mod classify;
pub mod envref;
pub mod guard;
pub mod qos;
pub mod refresh;
pub mod state;
pub mod vertical;
