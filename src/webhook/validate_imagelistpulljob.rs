//! ImageListPullJob validating handler `vimagelistpulljob.kb.io` (kruise
//! `pkg/webhook/imagelistpulljob/validating`): 403 when `KruiseDaemon` or `ImagePullJobGate` is
//! off (kruise's words: `feature-gate X is not enabled`; `PreDownloadImageForInPlaceUpdate`
//! forces the latter on), then `core::validation::imagelistpulljob` on the new object of a CREATE
//! or UPDATE — 422 with the field errors (spec §11.1; kruise answers 400), 400 for an object
//! that does not decode or a version not served. Both versions share one shape.

use super::review::{Review, Verdict};
use super::{Context, Objects, decode_object, decode_objects};
use crate::apis::imagelistpulljob::ImageListPullJob;
use crate::core::features::Gate;
use crate::core::validation::imagelistpulljob::validate as validate_list;

/// Answers an ImageListPullJob CREATE or UPDATE.
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
    let objects =
        match decode_objects(review, ["ImageListPullJob", "old ImageListPullJob"], decode_object::<ImageListPullJob>) {
            Ok(objects) => objects,
            Err(v) => return v,
        };
    match objects {
        Objects::Create(new) | Objects::Update(new, _) => Verdict::validated(&validate_list(&new.spec)),
        Objects::Delete(_) | Objects::Nothing => Verdict::allow(),
    }
}
