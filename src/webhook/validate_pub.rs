//! PodUnavailableBudget validating handler `vpodunavailablebudget.kb.io` (spec §2.6, decisions
//! §11.1): CREATE and UPDATE of the v1alpha1 object we serve, checked by
//! `core::validation::podunavailablebudget` against the other budgets of its namespace in the
//! cluster view. 403 when both PUB gates are off (kruise answers 400 with this message; §11.1
//! makes gate refusals 403), 422 with the field errors, 400 for an object that cannot be decoded
//! or a version not served.

use super::review::{Review, Verdict};
use super::{Context, Objects, decode_object, decode_objects};
use crate::apis::podunavailablebudget::PodUnavailableBudget;
use crate::core::features::Gate;
use crate::core::validation::podunavailablebudget::validate as validate_budget;

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
    if version != "v1alpha1" {
        return Verdict::errored(400, format!("unsupported version: {version}"));
    }
    let objects = match decode_objects(review, ["PodUnavailableBudget", "old PodUnavailableBudget"], |raw, what| {
        decode_object::<PodUnavailableBudget>(raw, what)
    }) {
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
    Verdict::validated(&validate_budget(&new, old.as_ref(), &others))
}
