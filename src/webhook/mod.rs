//! Admission handlers: decode the review, call the pure decisions of `core`, encode the verdict.
//! [`handle`] is the single entry point used by the HTTPS router and by offline checks alike.
//! One file per webhook of the path table, named after its [`Handler`] (`mutate_cloneset.rs`
//! answers [`Handler::MutateCloneSet`]); the decoding steps they share are here.

pub mod convert;
pub mod http;
pub mod mutate_cloneset;
pub mod mutate_pod;
pub mod mutate_sidecarset;
pub mod mutate_statefulset;
pub mod paths;
pub mod request;
pub mod review;
pub mod validate_cloneset;
pub mod validate_sidecarset;
pub mod validate_statefulset;

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::admission::Operation;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::apis::statefulset::{v1alpha1, v1beta1};
use crate::cluster::ClusterView;
use crate::config::Config;
use crate::core::conversion::statefulset_to_v1beta1;
use crate::core::features::FeatureGates;
pub use paths::Handler;
pub use review::{Review, Verdict};

/// What handlers may read: the process settings and the cluster view.
#[derive(Clone)]
pub struct Context {
    /// Manager namespace, feature gates, clock.
    pub config: Arc<Config>,
    /// Other objects of the cluster.
    pub cluster: Arc<dyn ClusterView>,
}

impl Context {
    /// A context over `cluster` with these settings.
    pub fn new(config: Arc<Config>, cluster: Arc<dyn ClusterView>) -> Self {
        Self { config, cluster }
    }

    /// The default settings with these gates (tests, benches).
    pub fn with_gates(gates: FeatureGates, cluster: Arc<dyn ClusterView>) -> Self {
        Self::new(Arc::new(Config::with_gates(gates)), cluster)
    }
}

/// The pods a review's handler reads from the view, when there are any: `(namespace, names)`.
/// Only the CloneSet validation reads pods (the new names of `scaleStrategy.podsToDelete`).
pub fn pods_needed(handler: Handler, review: &Review) -> Option<(String, Vec<String>)> {
    if handler != Handler::ValidateCloneSet {
        return None;
    }
    let names = |v: Option<&Value>| -> Option<Vec<String>> {
        let list = v?.pointer("/spec/scaleStrategy/podsToDelete")?.as_array()?;
        Some(list.iter().filter_map(|n| n.as_str().map(str::to_string)).collect())
    };
    let new = names(review.object.as_ref())?;
    let old = names(review.old_object.as_ref());
    let wanted = crate::core::validation::cloneset::pods_to_look_up(&new, old.as_deref());
    let namespace = review.request.namespace.clone().unwrap_or_default();
    (!wanted.is_empty()).then_some((namespace, wanted))
}

/// Answers a review with the given handler. `None` when the handler does not exist yet.
pub fn handle(ctx: &Context, handler: Handler, review: &Review) -> Option<Verdict> {
    match handler {
        Handler::MutatePod => Some(mutate_pod::mutate(ctx, review)),
        Handler::MutateSidecarSet => Some(mutate_sidecarset::mutate(ctx, review)),
        Handler::ValidateSidecarSet => Some(validate_sidecarset::validate(ctx, review)),
        Handler::MutateCloneSet => Some(mutate_cloneset::mutate(ctx, review)),
        Handler::MutateStatefulSet => Some(mutate_statefulset::mutate(ctx, review)),
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

/// The answer to a workload DELETE: 403 when deletion protection forbids it.
pub(crate) fn deletion_verdict(meta: &ObjectMeta, replicas: Option<i32>, gates: &FeatureGates) -> Verdict {
    match crate::core::validation::protection::check_workload_deletion(meta, replicas, gates) {
        Ok(()) => Verdict::allow(),
        Err(msg) => Verdict::errored(403, msg),
    }
}

/// The new object of a CREATE or UPDATE for a handler serving one API version: `None` for
/// other operations (nothing to mutate or validate), 400 for another version or an object that
/// does not decode.
pub(crate) fn decode_written<T: DeserializeOwned>(
    review: &Review,
    served: &str,
    what: &str,
) -> Result<Option<T>, Verdict> {
    if !writes_object(&review.request.operation) {
        return Ok(None);
    }
    require_version(review, served)?;
    decode_object(review.object.as_ref(), what).map(Some)
}

/// 400 unless the request is for the one API version a handler serves.
pub(crate) fn require_version(review: &Review, served: &str) -> Result<(), Verdict> {
    let version = &review.request.resource.version;
    if version == served { Ok(()) } else { Err(Verdict::errored(400, format!("unsupported version: {version}"))) }
}

/// Decodes an Advanced StatefulSet of the request's API version as v1beta1 (v1alpha1 objects are
/// converted); 400 for any other version. Both StatefulSet handlers decide on the v1beta1 shape.
pub(crate) fn decode_statefulset(
    raw: Option<&Value>,
    what: &str,
    version: &str,
) -> Result<v1beta1::StatefulSet, Verdict> {
    match version {
        "v1beta1" => decode_object(raw, what),
        "v1alpha1" => decode_object::<v1alpha1::StatefulSet>(raw, what).map(|o| statefulset_to_v1beta1(&o)),
        other => Err(Verdict::errored(400, format!("unsupported version: {other}"))),
    }
}
