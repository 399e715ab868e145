//! Admission handlers: decode the review, call the pure decisions of `core`, encode the verdict.
//! [`handle`] is the single entry point used by the HTTPS router and by offline checks alike.

pub mod cloneset;
pub mod http;
pub mod mutate_pod;
pub mod paths;
pub mod review;
pub mod sidecarset;
pub mod statefulset;
pub mod validate_cloneset;
pub mod validate_statefulset;

use std::sync::Arc;

use kube::core::admission::Operation;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::cluster::ClusterView;
use crate::core::features::FeatureGates;
pub use paths::Handler;
pub use review::{Review, Verdict};

/// What handlers may read: the feature gates and the cluster view.
#[derive(Clone)]
pub struct Context {
    /// Effective feature gates.
    pub gates: FeatureGates,
    /// Other objects of the cluster.
    pub cluster: Arc<dyn ClusterView>,
}

/// Answers a review with the given handler. `None` when the handler does not exist yet.
pub fn handle(ctx: &Context, handler: Handler, review: &Review) -> Option<Verdict> {
    match handler {
        Handler::MutatePod => Some(mutate_pod::mutate(ctx, review)),
        Handler::MutateSidecarSet => Some(sidecarset::mutate(ctx, review)),
        Handler::ValidateSidecarSet => Some(sidecarset::validate(ctx, review)),
        Handler::MutateCloneSet => Some(cloneset::mutate(ctx, review)),
        Handler::MutateStatefulSet => Some(statefulset::mutate(ctx, review)),
        Handler::ValidateCloneSet => Some(validate_cloneset::validate(ctx, review)),
        Handler::ValidateStatefulSet => Some(validate_statefulset::validate(ctx, review)),
        Handler::Missing => None,
    }
}

/// Decodes the request object of a CREATE or UPDATE as `T`, as Go decodes it (null is the zero
/// value, see [`crate::compat::decode`]); 400 when absent or malformed, as controller-runtime's
/// decoder answers, with the field error naming the field.
pub(crate) fn decode_object<T: DeserializeOwned>(raw: Option<&Value>, what: &str) -> Result<T, Verdict> {
    let raw = raw.ok_or_else(|| Verdict::errored(400, "there is no content to decode"))?;
    crate::compat::decode::from_value(raw).map_err(|e| Verdict::errored(400, format!("cannot decode {what}: {e}")))
}

/// Whether the operation carries a new object (CREATE or UPDATE).
pub(crate) fn writes_object(op: &Operation) -> bool {
    matches!(op, Operation::Create | Operation::Update)
}
