//! CloneSet mutating handler `mcloneset.kb.io` (spec §1.1.3, §1.1.4), both API versions on the
//! v1alpha1 model: a v1beta1 object is converted, defaulted (as kruise's
//! `SetDefaultsCloneSetV1beta1`: under OnDelete the rolling parameters stay unset), converted
//! back, and its spec laid over the request's own JSON. Template defaults only on CREATE or when
//! the template changed; no patch when nothing changed.

use kube::core::admission::Operation;
use serde_json::{Value, json};

use super::review::{Review, Verdict};
use super::{CLONESET, Context, decode_on_v1alpha1, spec_in_version, writes_object};
use crate::apis::CloneSet;
use crate::apis::cloneset::v1beta1::{ON_DELETE, ROLLING_UPDATE};
use crate::compat::patch::{Overlay, SpecOf, overlay_patch_typed};
use crate::core::defaults::cloneset::{default_cloneset, default_cloneset_v1beta1};
use crate::core::defaults::pod::should_inject_template_defaults;

/// Answers a CloneSet CREATE or UPDATE with its defaults.
pub fn mutate(ctx: &Context, review: &Review) -> Verdict {
    let req = &review.request;
    if !writes_object(&req.operation) {
        return Verdict::allow();
    }
    let version = req.resource.version.as_str();
    let (mut cloneset, model) =
        match decode_on_v1alpha1::<CloneSet>(review.object.as_ref(), "CloneSet", version, CLONESET) {
            Ok(pair) => pair,
            Err(v) => return v,
        };
    let template_equal = if req.operation == Operation::Update {
        match decode_on_v1alpha1::<CloneSet>(review.old_object.as_ref(), "old CloneSet", version, CLONESET) {
            Ok((old, _)) => Some(old.spec.template == cloneset.spec.template),
            Err(v) => return v,
        }
    } else {
        None
    };
    let inject = should_inject_template_defaults(template_equal, &ctx.config.gates);
    let defaulted = if version == "v1beta1" {
        default_cloneset_v1beta1(&mut cloneset.spec, inject, &ctx.config.gates)
    } else {
        default_cloneset(&mut cloneset.spec, inject, &ctx.config.gates)
    };
    if let Err(e) = defaulted {
        return Verdict::errored(400, e.to_string());
    }
    let Some(raw) = review.object.as_ref() else { return Verdict::allow() };
    let encode_error = |e: serde_json::Error| Verdict::errored(500, format!("cannot encode CloneSet: {e}"));
    // Defaults only touch `spec`: metadata and status are left exactly as sent.
    if version == "v1alpha1" {
        return overlay_patch_typed(raw, &SpecOf(&cloneset.spec)).map_or_else(encode_error, Verdict::patched);
    }
    let spec = match serde_json::to_value(&cloneset.spec) {
        Ok(spec) => spec,
        Err(e) => return encode_error(e),
    };
    let mutated = Overlay::new(&model, &json!({ "spec": spec })).into_target();
    let mut spec = spec_in_version(mutated, version, CLONESET);
    // SetDefaultsCloneSetV1beta1 leaves an unknown `type` and its strategy alone (the model
    // cannot carry it: it reads as RollingUpdate), for validation to name it.
    let sent = raw.pointer("/spec/updateStrategy");
    if !matches!(sent.and_then(|s| s.get("type")).and_then(Value::as_str), None | Some("" | ROLLING_UPDATE | ON_DELETE))
        && let (Some(sent), Some(spec)) = (sent, spec.as_object_mut())
    {
        spec.insert("updateStrategy".into(), sent.clone());
    }
    Verdict::patched(Overlay::new(raw, &json!({ "spec": spec })).patch())
}
