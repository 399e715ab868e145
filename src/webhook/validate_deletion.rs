//! The deletion-protection webhooks of kinds kruise does not own (spec §8.2; kruise
//! `pkg/webhook/{builtinworkloads,namespace,service,ingress,customresourcedefinition}/validating`):
//! `vbuiltindeployment/replicaset/statefulset.kb.io`, `vnamespace.kb.io`, `vservice.kb.io`,
//! `vingress.kb.io`, `vcustomresourcedefinition.kb.io`. Each one allows anything but a DELETE of
//! the object itself (no subresource) that carries its old object, decodes that (400 when it does
//! not decode), and answers 403 with the message of `core::validation::protection` when
//! protection refuses. The Cascading checks of Namespaces and CRDs count objects the router
//! listed for this review ([`super::Listed`]); without a listing (`--standalone`, `kruise check`)
//! they count what the view holds: its pods, and no claims nor custom resources (no view holds
//! them).

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Namespace, Service};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::admission::Operation;
use serde::Deserialize;
use serde_json::Value;

use super::review::{Review, Verdict};
use super::{Context, Listed, decode_object};
use crate::core::validation::protection::{
    CustomResources, NamespaceContents, check_always_only, check_crd_deletion, check_namespace_deletion,
    check_workload_deletion,
};

/// The old object of a DELETE these webhooks decide on; `None` for anything else (allowed).
fn deleted(review: &Review) -> Option<&Value> {
    let r = &review.request;
    if r.operation != Operation::Delete || !r.sub_resource.as_deref().unwrap_or("").is_empty() {
        return None;
    }
    // Kubernetes < 1.16 sends no old object on DELETE: kruise lets those through.
    review.old_object.as_ref()
}

fn verdict(decision: Result<(), String>) -> Verdict {
    match decision {
        Ok(()) => Verdict::allow(),
        Err(msg) => Verdict::errored(403, msg),
    }
}

/// apps/v1 Deployment, ReplicaSet and StatefulSet (kruise `WorkloadHandler`), told apart by the
/// request's kind; another kind is allowed.
pub fn workload(ctx: &Context, review: &Review) -> Verdict {
    let Some(old) = deleted(review) else { return Verdict::allow() };
    let gates = &ctx.config.gates;
    let decoded =
        match review.request.kind.kind.as_str() {
            "Deployment" => decode_object::<Deployment>(Some(old), "Deployment")
                .map(|o| (o.metadata, o.spec.and_then(|s| s.replicas))),
            "ReplicaSet" => decode_object::<ReplicaSet>(Some(old), "ReplicaSet")
                .map(|o| (o.metadata, o.spec.and_then(|s| s.replicas))),
            "StatefulSet" => decode_object::<StatefulSet>(Some(old), "StatefulSet")
                .map(|o| (o.metadata, o.spec.and_then(|s| s.replicas))),
            _ => return Verdict::allow(),
        };
    match decoded {
        Ok((meta, replicas)) => verdict(check_workload_deletion(&meta, replicas, gates)),
        Err(v) => v,
    }
}

/// Namespace (kruise `NamespaceHandler`).
pub fn namespace(ctx: &Context, review: &Review) -> Verdict {
    let Some(old) = deleted(review) else { return Verdict::allow() };
    let ns = match decode_object::<Namespace>(Some(old), "Namespace") {
        Ok(ns) => ns,
        Err(v) => return v,
    };
    let name = ns.metadata.name.clone().unwrap_or_default();
    let contents = || match ctx.listed.as_deref() {
        Some(Listed::Namespace(contents)) => contents.clone(),
        _ => NamespaceContents {
            pods: Ok(ctx.cluster.pods_in_namespace(&name).iter().map(|p| (**p).clone()).collect()),
            claims: Ok(Vec::new()),
        },
    };
    verdict(check_namespace_deletion(&ns.metadata, &ctx.config.gates, contents))
}

/// Service (kruise `ServiceHandler`).
pub fn service(ctx: &Context, review: &Review) -> Verdict {
    let Some(old) = deleted(review) else { return Verdict::allow() };
    match decode_object::<Service>(Some(old), "Service") {
        Ok(svc) => verdict(check_always_only(&svc.metadata, &ctx.config.gates)),
        Err(v) => v,
    }
}

/// Ingress (kruise `IngressHandler`): networking.k8s.io v1 and v1beta1 share the metadata the
/// decision reads; another version is allowed.
pub fn ingress(ctx: &Context, review: &Review) -> Verdict {
    let Some(old) = deleted(review) else { return Verdict::allow() };
    let meta = match review.request.kind.version.as_str() {
        "v1" => decode_object::<Ingress>(Some(old), "Ingress").map(|i| i.metadata),
        "v1beta1" => decode_object::<Metadata>(Some(old), "Ingress").map(|i| i.metadata),
        _ => return Verdict::allow(),
    };
    match meta {
        Ok(meta) => verdict(check_always_only(&meta, &ctx.config.gates)),
        Err(v) => v,
    }
}

/// An object of which only the metadata is read.
#[derive(Debug, Deserialize)]
struct Metadata {
    #[serde(default)]
    metadata: ObjectMeta,
}

/// The fields of a CustomResourceDefinition (v1 or v1beta1) the decision reads.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Crd {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    spec: CrdSpec,
}

#[derive(Debug, Default, Deserialize)]
struct CrdSpec {
    #[serde(default)]
    group: String,
    #[serde(default)]
    names: CrdNames,
    #[serde(default)]
    versions: Option<Vec<CrdVersion>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CrdNames {
    #[serde(default)]
    plural: String,
    #[serde(default)]
    list_kind: String,
}

#[derive(Debug, Default, Deserialize)]
struct CrdVersion {
    #[serde(default)]
    name: String,
    #[serde(default)]
    storage: bool,
}

impl Crd {
    /// Its custom resources as kruise lists them: the first storage version's (kruise
    /// `CRDHandler`; no storage version leaves the version empty).
    pub fn resources(&self) -> CustomResources {
        let versions = self.spec.versions.as_deref().unwrap_or_default();
        let version = versions.iter().find(|v| v.storage).map(|v| v.name.clone()).unwrap_or_default();
        CustomResources {
            group: self.spec.group.clone(),
            version,
            list_kind: self.spec.names.list_kind.clone(),
            plural: self.spec.names.plural.clone(),
        }
    }
}

/// Decodes the old CRD of a review.
pub(crate) fn decode_crd(raw: Option<&Value>) -> Result<Crd, Verdict> {
    decode_object(raw, "CustomResourceDefinition")
}

/// CustomResourceDefinition (kruise `CRDHandler`), apiextensions.k8s.io v1 and v1beta1; another
/// version is allowed.
pub fn crd(ctx: &Context, review: &Review) -> Verdict {
    let Some(old) = deleted(review) else { return Verdict::allow() };
    if !matches!(review.request.kind.version.as_str(), "v1" | "v1beta1") {
        return Verdict::allow();
    }
    let crd = match decode_crd(Some(old)) {
        Ok(crd) => crd,
        Err(v) => return v,
    };
    let list = || match ctx.listed.as_deref() {
        Some(Listed::CustomResources(items)) => items.clone(),
        _ => Ok(Vec::new()),
    };
    verdict(check_crd_deletion(&crd.metadata, &ctx.config.gates, &crd.resources(), list))
}
