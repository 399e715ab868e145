//! Admission handlers: decode the review, call the pure decisions of `core`, encode the verdict.
//! [`handle`] is the single entry point used by the HTTPS router and by offline checks alike.
//! One file per webhook of the path table, named after its [`Handler`] (`mutate_cloneset.rs`
//! answers [`Handler::MutateCloneSet`]); the decoding steps they share are here.

pub mod budget;
pub mod convert;
pub mod http;
pub mod mutate_advancedcronjob;
pub mod mutate_broadcastjob;
pub mod mutate_cloneset;
pub mod mutate_containerrecreaterequest;
pub mod mutate_daemonset;
pub mod mutate_imagelistpulljob;
pub mod mutate_imagepulljob;
pub mod mutate_nodeimage;
pub mod mutate_pod;
pub mod mutate_sidecarset;
pub mod mutate_statefulset;
pub mod mutate_uniteddeployment;
pub mod paths;
pub mod request;
pub mod review;
pub mod spread;
pub mod validate_advancedcronjob;
pub mod validate_broadcastjob;
pub mod validate_cloneset;
pub mod validate_daemonset;
pub mod validate_deletion;
pub mod validate_imagelistpulljob;
pub mod validate_imagepulljob;
pub mod validate_nodeimage;
pub mod validate_pod;
pub mod validate_podprobemarker;
pub mod validate_pub;
pub mod validate_sidecarset;
pub mod validate_statefulset;
pub mod validate_uniteddeployment;
pub mod validate_workloadspread;
pub mod written;

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::admission::Operation;
use std::borrow::Cow;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::apis::statefulset::{v1alpha1, v1beta1};
use crate::cluster::ClusterView;
use crate::config::Config;
use crate::core::conversion::{self, statefulset_to_v1beta1};
use crate::core::features::FeatureGates;
use crate::core::validation::protection::{self, CustomResources, NamespaceContents};
pub use paths::Handler;
pub use review::{Review, Verdict};

/// What handlers may read: the process settings and the cluster view.
#[derive(Clone)]
pub struct Context {
    /// Manager namespace, feature gates, clock.
    pub config: Arc<Config>,
    /// Other objects of the cluster.
    pub cluster: Arc<dyn ClusterView>,
    /// What was listed for this one review's Cascading deletion-protection check, when the
    /// router listed it ([`listing_needed`]); without it handlers decide on what the view holds.
    pub listed: Option<Arc<Listed>>,
}

/// Objects listed at admission time for one Cascading deletion-protection check.
#[derive(Debug, Clone)]
pub enum Listed {
    /// The pods and claims of the Namespace being deleted.
    Namespace(NamespaceContents),
    /// The custom resources of the CRD being deleted (their metadata).
    CustomResources(Result<Vec<ObjectMeta>, String>),
    /// The WorkloadSpreads of a WorkloadSpread's namespace and its target's pod template.
    WorkloadSpread(Box<validate_workloadspread::Listed>),
}

/// What a review's handler needs listed before it decides (see [`Listed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listing {
    /// The pods and claims of this namespace.
    Namespace(String),
    /// The custom resources a CRD serves.
    CustomResources(CustomResources),
    /// The WorkloadSpreads of a namespace and a WorkloadSpread's target workload.
    WorkloadSpread(validate_workloadspread::Listing),
}

/// The listing a review needs: a DELETE of a Namespace or CRD labelled `Cascading` with the
/// gates on (`core::validation::protection::needs_listing`); `None` for anything else, and for
/// an old object that does not decode (the handler answers that).
pub fn listing_needed(ctx: &Context, handler: Handler, review: &Review) -> Option<Listing> {
    if handler == Handler::ValidateWorkloadSpread {
        return validate_workloadspread::listing_needed(ctx, review).map(Listing::WorkloadSpread);
    }
    if review.request.operation != Operation::Delete || !review.request.sub_resource.as_deref().unwrap_or("").is_empty()
    {
        return None;
    }
    let old = review.old_object.as_ref()?;
    let gates = &ctx.config.gates;
    match handler {
        Handler::ValidateNamespace => {
            let meta: ObjectMeta = crate::compat::decode::from_value(old.get("metadata")?).ok()?;
            protection::needs_listing(&meta, gates, false).then(|| Listing::Namespace(meta.name.unwrap_or_default()))
        }
        Handler::ValidateCustomResourceDefinition => {
            let crd = validate_deletion::decode_crd(Some(old)).ok()?;
            protection::needs_listing(&crd.metadata, gates, true).then(|| Listing::CustomResources(crd.resources()))
        }
        _ => None,
    }
}

impl Context {
    /// A context over `cluster` with these settings.
    pub fn new(config: Arc<Config>, cluster: Arc<dyn ClusterView>) -> Self {
        Self { config, cluster, listed: None }
    }

    /// This context with what was listed for one review.
    pub fn with_listed(mut self, listed: Listed) -> Self {
        self.listed = Some(Arc::new(listed));
        self
    }

    /// The default settings with these gates (tests, benches).
    pub fn with_gates(gates: FeatureGates, cluster: Arc<dyn ClusterView>) -> Self {
        Self::new(Arc::new(Config::with_gates(gates)), cluster)
    }
}

/// The pods a review's handler reads from the view, when there are any: `(namespace, names)`.
/// The CloneSet validation reads the new names of `scaleStrategy.podsToDelete`; the pod
/// validation reads the pod of an eviction (when the PUB delete gate is on).
pub fn pods_needed(ctx: &Context, handler: Handler, review: &Review) -> Option<(String, Vec<String>)> {
    let req = &review.request;
    if handler == Handler::ValidatePod {
        let eviction = req.operation == Operation::Create && req.sub_resource.as_deref() == Some("eviction");
        let gate = ctx.config.gates.enabled(crate::core::features::Gate::PodUnavailableBudgetDeleteGate)
            || ctx.config.gates.enabled(crate::core::features::Gate::WorkloadSpread);
        return (eviction && gate)
            .then(|| (req.namespace.clone().unwrap_or_else(|| "default".into()), vec![req.name.clone()]));
    }
    if handler == Handler::MutateContainerRecreateRequest {
        return mutate_containerrecreaterequest::pod_needed(review);
    }
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
        Handler::ValidateBuiltinWorkload => Some(validate_deletion::workload(ctx, review)),
        Handler::ValidateNamespace => Some(validate_deletion::namespace(ctx, review)),
        Handler::ValidateService => Some(validate_deletion::service(ctx, review)),
        Handler::ValidateIngress => Some(validate_deletion::ingress(ctx, review)),
        Handler::ValidateCustomResourceDefinition => Some(validate_deletion::crd(ctx, review)),
        Handler::ValidatePod => Some(validate_pod::validate(ctx, review)),
        Handler::ValidatePodUnavailableBudget => Some(validate_pub::validate(ctx, review)),
        Handler::MutateImagePullJob => Some(mutate_imagepulljob::mutate(ctx, review)),
        Handler::ValidateImagePullJob => Some(validate_imagepulljob::validate(ctx, review)),
        Handler::MutateImageListPullJob => Some(mutate_imagelistpulljob::mutate(ctx, review)),
        Handler::ValidateImageListPullJob => Some(validate_imagelistpulljob::validate(ctx, review)),
        Handler::MutateNodeImage => Some(mutate_nodeimage::mutate(ctx, review)),
        Handler::ValidateNodeImage => Some(validate_nodeimage::validate(ctx, review)),
        Handler::MutateDaemonSet => Some(mutate_daemonset::mutate(ctx, review)),
        Handler::ValidateDaemonSet => Some(validate_daemonset::validate(ctx, review)),
        Handler::MutateBroadcastJob => Some(mutate_broadcastjob::mutate(ctx, review)),
        Handler::ValidateBroadcastJob => Some(validate_broadcastjob::validate(ctx, review)),
        Handler::MutateAdvancedCronJob => Some(mutate_advancedcronjob::mutate(ctx, review)),
        Handler::ValidateAdvancedCronJob => Some(validate_advancedcronjob::validate(ctx, review)),
        Handler::MutateContainerRecreateRequest => Some(mutate_containerrecreaterequest::mutate(ctx, review)),
        Handler::ValidatePodProbeMarker => Some(validate_podprobemarker::validate(ctx, review)),
        Handler::MutateUnitedDeployment => Some(mutate_uniteddeployment::mutate(ctx, review)),
        Handler::ValidateUnitedDeployment => Some(validate_uniteddeployment::validate(ctx, review)),
        Handler::ValidateWorkloadSpread => Some(validate_workloadspread::validate(ctx, review)),
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

/// The objects of a review a validating handler decides on, decoded.
pub(crate) enum Objects<T> {
    /// CREATE: the new object.
    Create(T),
    /// UPDATE: the new object, then the old one.
    Update(T, T),
    /// DELETE: the object being deleted (`oldObject`).
    Delete(T),
    /// Nothing to decide on: CONNECT, or a DELETE without `oldObject` (Kubernetes < 1.16 sends
    /// none).
    Nothing,
}

/// The first step of every validating handler: decodes the objects the operation carries with
/// `decode` — `names` are the new and the old object's names in a 400 ("CloneSet", "old
/// CloneSet"); the new one is decoded first, so its error is the one answered when both fail.
pub(crate) fn decode_objects<T>(
    review: &Review,
    names: [&str; 2],
    decode: impl Fn(Option<&Value>, &str) -> Result<T, Verdict>,
) -> Result<Objects<T>, Verdict> {
    let [new, old] = names;
    Ok(match review.request.operation {
        Operation::Create => Objects::Create(decode(review.object.as_ref(), new)?),
        Operation::Update => {
            let object = decode(review.object.as_ref(), new)?;
            Objects::Update(object, decode(review.old_object.as_ref(), old)?)
        }
        Operation::Delete if review.old_object.is_none() => Objects::Nothing,
        Operation::Delete => Objects::Delete(decode(review.old_object.as_ref(), old)?),
        Operation::Connect => Objects::Nothing,
    })
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

/// How a kind's v1beta1 JSON becomes v1alpha1 and back (`core::conversion::<kind>`).
#[derive(Clone, Copy)]
pub(crate) struct Versions {
    /// v1beta1 -> v1alpha1, in place.
    pub to_v1alpha1: fn(&mut Map<String, Value>),
    /// v1alpha1 -> v1beta1, in place.
    pub to_v1beta1: fn(&mut Map<String, Value>),
}

/// CloneSet conversions.
pub(crate) const CLONESET: Versions =
    Versions { to_v1alpha1: conversion::cloneset::to_v1alpha1, to_v1beta1: conversion::cloneset::to_v1beta1 };
/// SidecarSet conversions.
pub(crate) const SIDECARSET: Versions =
    Versions { to_v1alpha1: conversion::sidecarset::to_v1alpha1, to_v1beta1: conversion::sidecarset::to_v1beta1 };

/// Decodes a CloneSet or SidecarSet of the request's API version on the one model the
/// decisions use, v1alpha1 (spec §1.1.4): a v1beta1 object is converted on its JSON first.
/// Returns the typed object and the v1alpha1 JSON it was decoded from (the request's own JSON
/// for v1alpha1). 400 for another version or an object that does not decode.
pub(crate) fn decode_on_v1alpha1<'a, T: DeserializeOwned>(
    raw: Option<&'a Value>,
    what: &str,
    version: &str,
    versions: Versions,
) -> Result<(T, Cow<'a, Value>), Verdict> {
    let raw = match version {
        "v1alpha1" => raw.map(Cow::Borrowed),
        "v1beta1" => raw.map(|r| {
            let mut r = r.clone();
            if let Value::Object(map) = &mut r {
                (versions.to_v1alpha1)(map);
            }
            Cow::Owned(r)
        }),
        other => return Err(Verdict::errored(400, format!("unsupported version: {other}"))),
    };
    let typed = decode_object(raw.as_deref(), what)?;
    Ok((typed, raw.unwrap_or(Cow::Owned(Value::Null))))
}

/// The `spec` of a mutated v1alpha1 object in the request's version: itself for v1alpha1,
/// converted for v1beta1. Handlers lay it over the request's own JSON, so the patch is computed
/// against what the apiserver sent.
pub(crate) fn spec_in_version(mutated_v1alpha1: Value, version: &str, versions: Versions) -> Value {
    let mut object = mutated_v1alpha1;
    if version == "v1beta1"
        && let Value::Object(map) = &mut object
    {
        (versions.to_v1beta1)(map);
    }
    match object {
        Value::Object(mut map) => map.remove("spec").unwrap_or(Value::Null),
        _ => Value::Null,
    }
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
