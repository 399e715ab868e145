//! Advanced DaemonSet validating handler `vdaemonset.kb.io` (kruise v1.9.0
//! `pkg/webhook/daemonset/validating`): the object of the version the request names, checked by
//! `core::validation::daemonset`; 422 with the aggregated field errors for an invalid object, 400
//! for one that cannot be decoded or an unknown version.

use super::review::{Review, Verdict};
use super::{Context, Objects, decode_object, decode_objects};
use crate::apis::daemonset::{DaemonSet, v1beta1};
use crate::core::validation::daemonset::{validate_create, validate_update};

/// Answers an Advanced DaemonSet CREATE or UPDATE.
pub fn validate(ctx: &Context, review: &Review) -> Verdict {
    let gates = &ctx.config.gates;
    let names = ["DaemonSet", "old DaemonSet"];
    match review.request.resource.version.as_str() {
        "v1alpha1" => match decode_objects(review, names, decode_object::<DaemonSet>) {
            Ok(Objects::Create(new)) => Verdict::validated(&validate_create((&new).into(), gates)),
            Ok(Objects::Update(new, old)) => Verdict::validated(&validate_update((&new).into(), (&old).into(), gates)),
            Ok(Objects::Delete(_) | Objects::Nothing) => Verdict::allow(),
            Err(v) => v,
        },
        "v1beta1" => match decode_objects(review, names, decode_object::<v1beta1::DaemonSet>) {
            Ok(Objects::Create(new)) => Verdict::validated(&validate_create((&new).into(), gates)),
            Ok(Objects::Update(new, old)) => Verdict::validated(&validate_update((&new).into(), (&old).into(), gates)),
            Ok(Objects::Delete(_) | Objects::Nothing) => Verdict::allow(),
            Err(v) => v,
        },
        other => Verdict::errored(400, format!("unsupported version: {other}")),
    }
}
