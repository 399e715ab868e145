//! UnitedDeployment validating handler `vuniteddeployment.kb.io` (kruise `pkg/webhook/
//! uniteddeployment/validating`, v1.9.0; issue 34 item 1): `core::validation::uniteddeployment`
//! on CREATE (the new object) and UPDATE (the new object, then the update rules against the old
//! one) — 422 with the field errors, as kruise answers — and deletion protection on DELETE (403);
//! 400 for an object that does not decode or a version not served.

use super::review::{Review, Verdict};
use super::{Context, Objects, decode_object, decode_objects, deletion_verdict};
use crate::apis::uniteddeployment::UnitedDeployment;
use crate::core::validation::uniteddeployment::{validate as validate_ud, validate_update};

/// Answers a UnitedDeployment CREATE, UPDATE or DELETE.
pub fn validate(ctx: &Context, review: &Review) -> Verdict {
    let version = review.request.resource.version.as_str();
    if version != "v1alpha1" {
        return Verdict::errored(400, format!("unsupported version: {version}"));
    }
    let gates = &ctx.config.gates;
    match decode_objects(review, ["UnitedDeployment", "old UnitedDeployment"], decode_object::<UnitedDeployment>) {
        Err(v) => v,
        Ok(Objects::Create(new)) => Verdict::validated(&validate_ud(&new, gates)),
        Ok(Objects::Update(new, old)) => Verdict::validated(&validate_update(&new, &old, gates)),
        Ok(Objects::Delete(old)) => deletion_verdict(&old.metadata, old.spec.replicas, gates),
        Ok(Objects::Nothing) => Verdict::allow(),
    }
}
