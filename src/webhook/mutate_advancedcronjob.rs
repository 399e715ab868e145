//! AdvancedCronJob mutating handler `madvancedcronjob.kb.io` (kruise `pkg/webhook/advancedcronjob/
//! mutating`, v1.8.4): `core::defaults::advancedcronjob` — spec defaults, and pod template
//! defaults on CREATE or when the template changed (never with `TemplateNoDefaults`). The
//! defaulted spec is laid over the request's own JSON; no patch when nothing changed. A v1beta1
//! request (kruise HEAD serves the kind in both versions) is decoded on the v1beta1 model, whose
//! template may be an ImageListPullJob's, and defaulted as kruise HEAD defaults it
//! (`default_advancedcronjob_v1beta1`).

use kube::core::admission::Operation;

use super::review::{Review, Verdict};
use super::{Context, decode_object, writes_object};
use crate::apis::advancedcronjob::AdvancedCronJob;
use crate::apis::advancedcronjob::v1beta1;
use crate::compat::patch::{SpecOf, overlay_patch_typed};
use crate::core::defaults::advancedcronjob::{default_advancedcronjob, default_advancedcronjob_v1beta1};
use crate::core::defaults::pod::should_inject_template_defaults;

/// Answers an AdvancedCronJob CREATE or UPDATE with its defaults.
pub fn mutate(ctx: &Context, review: &Review) -> Verdict {
    let req = &review.request;
    if !writes_object(&req.operation) {
        return Verdict::allow();
    }
    match req.resource.version.as_str() {
        "v1beta1" => return mutate_v1beta1(ctx, review),
        "v1alpha1" => {}
        other => return Verdict::errored(400, format!("unsupported version: {other}")),
    }
    let mut acj: AdvancedCronJob = match decode_object(review.object.as_ref(), "AdvancedCronJob") {
        Ok(acj) => acj,
        Err(v) => return v,
    };
    let template_equal = if req.operation == Operation::Update {
        match decode_object::<AdvancedCronJob>(review.old_object.as_ref(), "old AdvancedCronJob") {
            Ok(old) => Some(old.spec.template == acj.spec.template),
            Err(v) => return v,
        }
    } else {
        None
    };
    let inject = should_inject_template_defaults(template_equal, &ctx.config.gates);
    if let Err(e) = default_advancedcronjob(&mut acj.spec, inject, &ctx.config.gates) {
        return Verdict::errored(400, e.to_string());
    }
    let Some(raw) = review.object.as_ref() else { return Verdict::allow() };
    overlay_patch_typed(raw, &SpecOf(&acj.spec))
        .map_or_else(|e| Verdict::errored(500, format!("cannot encode AdvancedCronJob: {e}")), Verdict::patched)
}

/// A v1beta1 CREATE or UPDATE.
fn mutate_v1beta1(ctx: &Context, review: &Review) -> Verdict {
    let req = &review.request;
    let mut acj: v1beta1::AdvancedCronJob = match decode_object(review.object.as_ref(), "AdvancedCronJob") {
        Ok(acj) => acj,
        Err(v) => return v,
    };
    let template_equal = if req.operation == Operation::Update {
        match decode_object::<v1beta1::AdvancedCronJob>(review.old_object.as_ref(), "old AdvancedCronJob") {
            Ok(old) => Some(old.spec.template == acj.spec.template),
            Err(v) => return v,
        }
    } else {
        None
    };
    let inject = should_inject_template_defaults(template_equal, &ctx.config.gates);
    if let Err(e) = default_advancedcronjob_v1beta1(&mut acj.spec, inject, &ctx.config.gates) {
        return Verdict::errored(400, e.to_string());
    }
    let Some(raw) = review.object.as_ref() else { return Verdict::allow() };
    overlay_patch_typed(raw, &SpecOf(&acj.spec))
        .map_or_else(|e| Verdict::errored(500, format!("cannot encode AdvancedCronJob: {e}")), Verdict::patched)
}
