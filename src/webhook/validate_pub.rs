//! PodUnavailableBudget validating handler `vpodunavailablebudget.kb.io` (spec §2.6, decisions
//! §11.1): CREATE and UPDATE of the v1alpha1 object we serve, checked by
//! `core::validation::podunavailablebudget` against the other budgets of its namespace in the
//! cluster view. 403 when both PUB gates are off (kruise answers 400 with this message; §11.1
//! makes gate refusals 403), 422 with the field errors, 400 for an object that cannot be decoded
//! or a version not served. A v1beta1 object (kruise HEAD's version, served by the opt-in CRD) is
//! converted to v1alpha1 and validated as such, plus HEAD's checks of its own fields.

use super::review::{Review, Verdict};
use super::{Context, Objects, decode_object, decode_objects};
use crate::apis::podunavailablebudget::{PodUnavailableBudget, v1beta1};
use crate::core::features::Gate;
use crate::core::validation::podunavailablebudget::{validate as validate_budget, validate_v1beta1_fields};

/// Answers a PodUnavailableBudget CREATE or UPDATE.
pub fn validate(ctx: &Context, review: &Review) -> Verdict {
    let gates = &ctx.config.gates;
    if !gates.enabled(Gate::PodUnavailableBudgetDeleteGate) && !gates.enabled(Gate::PodUnavailableBudgetUpdateGate) {
        return Verdict::errored(
            403,
            "feature PodUnavailableBudget is invalid, please open via feature-gate(PodUnavailableBudgetDeleteGate, PodUnavailableBudgetUpdateGate)",
        );
    }
    let version = review.request.resource.version.as_str();
    let objects = match version {
        "v1alpha1" => decode_objects(review, ["PodUnavailableBudget", "old PodUnavailableBudget"], |raw, what| {
            decode_object::<PodUnavailableBudget>(raw, what)
        }),
        "v1beta1" => decode_objects(review, ["PodUnavailableBudget", "old PodUnavailableBudget"], |raw, what| {
            decode_object::<v1beta1::PodUnavailableBudget>(raw, what)?;
            as_v1alpha1(raw, what)
        }),
        _ => return Verdict::errored(400, format!("unsupported version: {version}")),
    };
    let objects = match objects {
        Ok(objects) => objects,
        Err(v) => return v,
    };
    let (new, old) = match objects {
        Objects::Create(new) => (new, None),
        Objects::Update(new, old) => (new, Some(old)),
        Objects::Delete(_) | Objects::Nothing => return Verdict::allow(),
    };
    let mut new = new;
    // The apiserver fills the namespace of a namespaced object from the request URL.
    if new.metadata.namespace.is_none() {
        new.metadata.namespace = review.request.namespace.clone();
    }
    let namespace = new.metadata.namespace.clone().unwrap_or_default();
    let listed = ctx.cluster.pod_unavailable_budgets(&namespace);
    let others: Vec<&PodUnavailableBudget> = listed.iter().map(AsRef::as_ref).collect();
    let mut errors = Vec::new();
    if version == "v1beta1"
        && let Ok(beta) = decode_object::<v1beta1::PodUnavailableBudget>(review.object.as_ref(), "PodUnavailableBudget")
    {
        errors = validate_v1beta1_fields(&beta);
    }
    errors.extend(validate_budget(&new, old.as_ref(), &others));
    Verdict::validated(&errors)
}

/// A v1beta1 budget's JSON as the v1alpha1 model (`core::conversion::podunavailablebudget`),
/// keeping `ignoredPodSelector` in memory.
fn as_v1alpha1(raw: Option<&serde_json::Value>, what: &str) -> Result<PodUnavailableBudget, Verdict> {
    let mut object = raw.cloned().unwrap_or_default();
    let ignored = object.pointer("/spec/ignoredPodSelector").cloned();
    if let serde_json::Value::Object(map) = &mut object {
        crate::core::conversion::podunavailablebudget::to_v1alpha1(map);
        map.insert("apiVersion".into(), crate::core::conversion::POLICY_V1ALPHA1.into());
    }
    let mut budget = decode_object::<PodUnavailableBudget>(Some(&object), what)?;
    budget.spec.ignored_pod_selector = ignored.and_then(|v| serde_json::from_value(v).ok());
    Ok(budget)
}
