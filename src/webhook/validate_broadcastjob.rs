//! BroadcastJob validating handler `vbroadcastjob.kb.io` (kruise `pkg/webhook/broadcastjob/
//! validating`, v1.8.4; issue 33 item 1): `core::validation::broadcastjob` on the new object of
//! a CREATE or UPDATE, both API versions (one shape) — 422 with the field errors (spec §11.1;
//! kruise answers 500), 400 for an object that does not decode or a version not served.

use super::review::{Review, Verdict};
use super::{Context, decode_object, writes_object};
use crate::apis::broadcastjob::BroadcastJob;
use crate::core::validation::broadcastjob::validate as validate_job;

/// Answers a BroadcastJob CREATE or UPDATE.
pub fn validate(ctx: &Context, review: &Review) -> Verdict {
    let version = review.request.resource.version.as_str();
    if !matches!(version, "v1alpha1" | "v1beta1") {
        return Verdict::errored(400, format!("unsupported version: {version}"));
    }
    if !writes_object(&review.request.operation) {
        return Verdict::allow();
    }
    // Only the new object is read, as kruise decodes only `object`.
    match decode_object::<BroadcastJob>(review.object.as_ref(), "BroadcastJob") {
        Ok(job) => Verdict::validated(&validate_job(&job, &ctx.config.gates)),
        Err(v) => v,
    }
}
