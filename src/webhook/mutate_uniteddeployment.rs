//! UnitedDeployment mutating handler `muniteddeployment.kb.io` (kruise `pkg/webhook/
//! uniteddeployment/mutating`, v1.9.0; issue 34 item 1): `core::defaults::uniteddeployment` on
//! CREATE and UPDATE of v1alpha1 (the only version served), template defaults on CREATE and on an
//! UPDATE that changes the template, never with `TemplateNoDefaults`. Only `spec` is laid over the
//! request's own JSON; no patch when nothing changed. kruise also empties `status` in its patch;
//! the apiserver ignores `status` on writes to the main resource of a CRD with a status
//! subresource, so that part of the patch would change nothing and is not sent.

use kube::core::admission::Operation;

use super::review::{Review, Verdict};
use super::{Context, decode_object, writes_object};
use crate::apis::uniteddeployment::UnitedDeployment;
use crate::compat::patch::{SpecOf, overlay_patch_typed};
use crate::core::defaults::pod::should_inject_template_defaults;
use crate::core::defaults::uniteddeployment::default_uniteddeployment;

/// Answers a UnitedDeployment CREATE or UPDATE with its defaults.
pub fn mutate(ctx: &Context, review: &Review) -> Verdict {
    let req = &review.request;
    if !writes_object(&req.operation) {
        return Verdict::allow();
    }
    let version = req.resource.version.as_str();
    if version != "v1alpha1" {
        return Verdict::errored(400, format!("unsupported version: {version}"));
    }
    let mut ud: UnitedDeployment = match decode_object(review.object.as_ref(), "UnitedDeployment") {
        Ok(ud) => ud,
        Err(v) => return v,
    };
    let template_equal = if req.operation == Operation::Update {
        match decode_object::<UnitedDeployment>(review.old_object.as_ref(), "old UnitedDeployment") {
            Ok(old) => Some(old.spec.template == ud.spec.template),
            Err(v) => return v,
        }
    } else {
        None
    };
    let inject = should_inject_template_defaults(template_equal, &ctx.config.gates);
    if let Err(e) = default_uniteddeployment(&mut ud.spec, inject, &ctx.config.gates) {
        return Verdict::errored(400, e.to_string());
    }
    let Some(raw) = review.object.as_ref() else { return Verdict::allow() };
    overlay_patch_typed(raw, &SpecOf(&ud.spec))
        .map_or_else(|e| Verdict::errored(500, format!("cannot encode UnitedDeployment: {e}")), Verdict::patched)
}
