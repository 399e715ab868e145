//! WorkloadSpread validating handler `vworkloadspread.kb.io` (kruise `pkg/webhook/workloadspread/
//! validating`, v1.9.0; issue 34 item 1): with the `WorkloadSpread` gate off every CREATE and
//! UPDATE is refused (403, kruise's message); otherwise `core::validation::workloadspread` on
//! the new object, plus the update rules against the old one — 422 with the field errors (spec
//! §11.1; kruise answers 400), 400 for an object that does not decode.
//!
//! kruise reads its cache for the other WorkloadSpreads of the namespace (one target, one
//! WorkloadSpread) and for the target workload (whose pod template each subset's patch must
//! keep valid). Here the router lists them at admission time ([`listing_needed`], [`list`]);
//! offline (`kruise check`, in-process tests) the others are those the view holds and the
//! workload is unknown, so patches are not checked against it — as kruise does when the
//! WorkloadSpread is created before its workload.

use k8s_openapi::api::core::v1::PodTemplateSpec;
use kube::core::admission::Operation;
use serde_json::Value;

use super::review::{Review, Verdict};
use super::{Context, decode_object, writes_object};
use crate::apis::workloadspread::WorkloadSpread;
use crate::cluster::{ListSource, NamespacedResource};
use crate::core::features::Gate;
use crate::core::validation::workloadspread::{
    WorkloadTemplate, target_is_known, validate as validate_ws, validate_update,
};

/// What to list for one review.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    /// The WorkloadSpread's namespace.
    pub namespace: String,
    /// The target workload to read, when the reference names a kind kruise reads.
    pub workload: Option<(NamespacedResource, String)>,
}

/// What was listed.
#[derive(Clone, Debug)]
pub struct Listed {
    /// The WorkloadSpreads of the namespace, or why they could not be listed.
    pub others: Result<Vec<WorkloadSpread>, String>,
    /// The target's pod template, when the workload exists and could be read.
    pub workload: Option<WorkloadTemplate>,
}

const WORKLOADSPREADS: NamespacedResource =
    NamespacedResource { group: "apps.kruise.io", version: "v1alpha1", plural: "workloadspreads" };

/// The resource kruise reads for a target kind (an apps/v1 StatefulSet for every StatefulSet).
fn resource_of(kind: &str) -> Option<NamespacedResource> {
    let r = |group, version, plural| NamespacedResource { group, version, plural };
    match kind {
        "CloneSet" => Some(r("apps.kruise.io", "v1alpha1", "clonesets")),
        "Deployment" => Some(r("apps", "v1", "deployments")),
        "ReplicaSet" => Some(r("apps", "v1", "replicasets")),
        "Job" => Some(r("batch", "v1", "jobs")),
        "StatefulSet" => Some(r("apps", "v1", "statefulsets")),
        _ => None,
    }
}

/// The listing a CREATE or UPDATE needs (none with the gate off or an object that does not
/// decode: the handler answers those without it).
pub fn listing_needed(ctx: &Context, review: &Review) -> Option<Listing> {
    if !writes_object(&review.request.operation) || !ctx.config.gates.enabled(Gate::WorkloadSpread) {
        return None;
    }
    let ws: WorkloadSpread = crate::compat::decode::from_value(review.object.as_ref()?).ok()?;
    let namespace = review.request.namespace.clone().unwrap_or_default();
    let workload = ws
        .spec
        .target_ref
        .as_ref()
        .filter(|r| target_is_known(r) && !r.name.is_empty())
        .and_then(|r| Some((resource_of(&r.kind)?, r.name.clone())));
    Some(Listing { namespace, workload })
}

/// Lists what `listing` names from `source`.
pub async fn list(source: &dyn ListSource, listing: &Listing) -> Listed {
    let others = async {
        let items = source.namespaced_json(&WORKLOADSPREADS, &listing.namespace, None).await?;
        // One that does not decode cannot conflict in a way kruise would see either: skipped.
        Ok(items.iter().filter_map(|v| crate::compat::decode::from_value(v).ok()).collect())
    };
    let workload = async {
        let (resource, name) = listing.workload.as_ref()?;
        let items = source.namespaced_json(resource, &listing.namespace, Some(name)).await.ok()?;
        items.first().and_then(template_of)
    };
    let (others, workload) = futures::future::join(others, workload).await;
    Listed { others, workload }
}

/// The pod template and volumeClaimTemplate names of a workload's JSON.
fn template_of(workload: &Value) -> Option<WorkloadTemplate> {
    let template: PodTemplateSpec = crate::compat::decode::from_value(workload.pointer("/spec/template")?).ok()?;
    let claims = workload
        .pointer("/spec/volumeClaimTemplates")
        .and_then(Value::as_array)
        .map(|c| c.iter().filter_map(|c| c.pointer("/metadata/name")?.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    Some(WorkloadTemplate { template, claims })
}

/// Answers a WorkloadSpread CREATE or UPDATE.
pub fn validate(ctx: &Context, review: &Review) -> Verdict {
    if !ctx.config.gates.enabled(Gate::WorkloadSpread) {
        return Verdict::errored(403, "feature-gate WorkloadSpread is not enabled");
    }
    let op = &review.request.operation;
    if !writes_object(op) {
        return Verdict::allow();
    }
    let ws: WorkloadSpread = match decode_object(review.object.as_ref(), "WorkloadSpread") {
        Ok(ws) => ws,
        Err(v) => return v,
    };
    let old = if *op == Operation::Update {
        match decode_object::<WorkloadSpread>(review.old_object.as_ref(), "old WorkloadSpread") {
            Ok(old) => Some(old),
            Err(v) => return v,
        }
    } else {
        None
    };
    let namespace = review.request.namespace.clone().unwrap_or_default();
    let in_view: Vec<WorkloadSpread>;
    let (others, workload) = match ctx.listed.as_deref() {
        Some(super::Listed::WorkloadSpread(l)) => (l.others.as_deref().map_err(Clone::clone), l.workload.as_ref()),
        _ => {
            in_view = ctx.cluster.workload_spreads(&namespace).iter().map(|w| (**w).clone()).collect();
            (Ok(in_view.as_slice()), None)
        }
    };
    let mut errs = validate_ws(&ws, others, workload, &ctx.config.gates);
    if let Some(old) = &old {
        errs.extend(validate_update(&ws, old));
    }
    Verdict::validated(&errs)
}
