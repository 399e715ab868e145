//! ImagePullJob validating handler `vimagepulljob.kb.io` (kruise `pkg/webhook/imagepulljob/
//! validating`, spec §2.5): 403 when `KruiseDaemon` or `ImagePullJobGate` is off (`feature-gate X
//! is not enabled`); on UPDATE a changed `spec.pullSecrets` is denied (403 Forbidden,
//! `spec.pullSecrets is immutable`); then `core::validation::imagepulljob` — 422 with the field
//! errors (spec §11.1; kruise answers 400), 400 for an object that does not decode or a version
//! not served. Both versions share one shape.

use super::review::{Review, Verdict};
use super::{Context, Objects, decode_object, decode_objects};
use crate::apis::imagepulljob::ImagePullJob;
use crate::core::features::Gate;
use crate::core::validation::imagepulljob::validate as validate_job;

/// Answers an ImagePullJob CREATE or UPDATE.
pub fn validate(ctx: &Context, review: &Review) -> Verdict {
    for gate in [Gate::KruiseDaemon, Gate::ImagePullJobGate] {
        if !ctx.config.gates.enabled(gate) {
            return Verdict::errored(403, format!("feature-gate {} is not enabled", gate.name()));
        }
    }
    let version = review.request.resource.version.as_str();
    if !matches!(version, "v1alpha1" | "v1beta1") {
        return Verdict::errored(400, format!("unsupported version: {version}"));
    }
    let objects = match decode_objects(review, ["ImagePullJob", "old ImagePullJob"], decode_object::<ImagePullJob>) {
        Ok(objects) => objects,
        Err(v) => return v,
    };
    match objects {
        Objects::Create(new) => Verdict::validated(&validate_job(&new.spec)),
        Objects::Update(new, old) => {
            if new.spec.pull_secrets != old.spec.pull_secrets {
                return Verdict::forbidden("spec.pullSecrets is immutable");
            }
            Verdict::validated(&validate_job(&new.spec))
        }
        Objects::Delete(_) | Objects::Nothing => Verdict::allow(),
    }
}
