//! CloneSet mutating handler `mcloneset.kb.io` (spec §1.1.3): defaults the object; template
//! defaults only on CREATE or when the template changed; no patch when nothing changed.

use kube::core::admission::Operation;
use serde_json::json;

use super::review::{Review, Verdict};
use super::{Context, decode_object, decode_written};
use crate::apis::CloneSet;
use crate::compat::patch::Overlay;
use crate::core::defaults::cloneset::default_cloneset;
use crate::core::defaults::pod::should_inject_template_defaults;

/// Answers a CloneSet CREATE or UPDATE with its defaults.
pub fn mutate(ctx: &Context, review: &Review) -> Verdict {
    let req = &review.request;
    let mut cloneset: CloneSet = match decode_written(review, "v1alpha1", "CloneSet") {
        Ok(Some(o)) => o,
        Ok(None) => return Verdict::allow(),
        Err(v) => return v,
    };
    let template_equal = if req.operation == Operation::Update {
        let old: CloneSet = match decode_object(review.old_object.as_ref(), "old CloneSet") {
            Ok(c) => c,
            Err(v) => return v,
        };
        Some(old.spec.template == cloneset.spec.template)
    } else {
        None
    };
    let inject = should_inject_template_defaults(template_equal, &ctx.config.gates);
    if let Err(e) = default_cloneset(&mut cloneset.spec, inject, &ctx.config.gates) {
        return Verdict::errored(400, e.to_string());
    }
    let Some(raw) = review.object.as_ref() else { return Verdict::allow() };
    // Defaults only touch `spec`: metadata and status are left exactly as sent.
    match serde_json::to_value(&cloneset.spec) {
        Ok(spec) => Verdict::patched(Overlay::new(raw, &json!({ "spec": spec })).patch()),
        Err(e) => Verdict::errored(500, format!("cannot encode CloneSet: {e}")),
    }
}
