//! `apps.kruise.io` (and `policy.kruise.io`) API types (spec §1), with exactly kruise's field names
//! and JSON shapes.
//!
//! Only types live here: no decisions. Every field decodes leniently, as Go's `encoding/json` does
//! (a missing field is its zero value; enum-like fields are plain strings so that an unknown value
//! reaches validation instead of failing the decode). Pod templates and volume claim templates are
//! schemaless in the CRDs, as in kruise, so the apiserver never prunes fields kruise does not know.

// kube-derive's repeated `printcolumn(...)`/`shortname` arguments look like duplicated attributes.
#![allow(clippy::duplicated_attributes)]

pub mod advancedcronjob;
pub mod broadcastjob;
pub mod cloneset;
pub mod common;
pub mod containerrecreaterequest;
pub mod daemonset;
pub mod ephemeraljob;
pub mod imagelistpulljob;
pub mod imagepulljob;
pub mod keys;
pub mod nodeimage;
pub mod nodepodprobe;
pub mod persistentpodstate;
pub mod podprobemarker;
pub mod podunavailablebudget;
pub mod resourcedistribution;
pub mod schema;
pub mod sidecarset;
pub mod statefulset;
pub mod uniteddeployment;
pub mod workloadspread;

pub use cloneset::{CloneSet, CloneSetSpec, CloneSetStatus};
pub use imagepulljob::ImagePullJob;
pub use sidecarset::SidecarSet;

/// The API group of every workload served here.
pub const GROUP: &str = "apps.kruise.io";

/// `true` when a value equals its type's default; used to omit empty structs on serialisation so that
/// re-serialising an object never adds `{}` noise the user did not send.
pub(crate) fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}
