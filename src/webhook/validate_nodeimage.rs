//! NodeImage validating handler `vnodeimage.kb.io` (kruise `pkg/webhook/nodeimage/validating`):
//! 403 when `KruiseDaemon` is off (`feature-gate KruiseDaemon is not enabled`), then
//! `core::validation::nodeimage` on the new object of a CREATE or UPDATE — 422 with the field
//! errors (spec §11.1; kruise answers 400), 400 for an object that does not decode or a version
//! not served.

use super::review::{Review, Verdict};
use super::{Context, Objects, decode_object, decode_objects};
use crate::apis::nodeimage::NodeImage;
use crate::core::features::Gate;
use crate::core::validation::nodeimage::validate as validate_node_image;

/// Answers a NodeImage CREATE or UPDATE.
pub fn validate(ctx: &Context, review: &Review) -> Verdict {
    if !ctx.config.gates.enabled(Gate::KruiseDaemon) {
        return Verdict::errored(403, format!("feature-gate {} is not enabled", Gate::KruiseDaemon.name()));
    }
    let version = review.request.resource.version.as_str();
    if !matches!(version, "v1alpha1" | "v1beta1") {
        return Verdict::errored(400, format!("unsupported version: {version}"));
    }
    let objects = match decode_objects(review, ["NodeImage", "old NodeImage"], decode_object::<NodeImage>) {
        Ok(objects) => objects,
        Err(v) => return v,
    };
    match objects {
        Objects::Create(new) | Objects::Update(new, _) => Verdict::validated(&validate_node_image(&new.spec)),
        Objects::Delete(_) | Objects::Nothing => Verdict::allow(),
    }
}
