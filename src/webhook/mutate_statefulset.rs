//! Advanced StatefulSet mutating handler `mstatefulset.kb.io` (spec §1.2.3): v1beta1 objects are
//! defaulted directly; v1alpha1 objects are converted to v1beta1, defaulted, converted back and
//! answered against the v1alpha1 object. `status` is reset to its zero value, as kruise does.

use kube::core::admission::Operation;
use serde_json::{Value, json};

use super::review::{Review, Verdict};
use super::{Context, decode_statefulset, writes_object};
use crate::apis::statefulset::v1beta1;
use crate::compat::patch::{Overlay, SpecOf, overlay_patch_typed};
use crate::core::conversion::statefulset_to_v1alpha1;
use crate::core::defaults::pod::should_inject_template_defaults;
use crate::core::defaults::statefulset::default_statefulset;

/// Answers an Advanced StatefulSet CREATE or UPDATE with its defaults.
pub fn mutate(ctx: &Context, review: &Review) -> Verdict {
    let req = &review.request;
    if !writes_object(&req.operation) {
        return Verdict::allow();
    }
    let version = req.resource.version.as_str();
    let (mut sts, old) = match decode_both(review, version) {
        Ok(pair) => pair,
        Err(v) => return v,
    };
    let template_equal = old.map(|o| o.spec.template == sts.spec.template);
    let inject = should_inject_template_defaults(template_equal, &ctx.config.gates);
    if let Err(e) = default_statefulset(&mut sts.spec, inject, &ctx.config.gates) {
        return Verdict::errored(400, e.to_string());
    }
    // Defaults only touch `spec` (and `status`, reset below): metadata is left exactly as sent.
    let Some(raw) = review.object.as_ref() else { return Verdict::allow() };
    let encode_error = |e: serde_json::Error| Verdict::errored(500, format!("cannot encode StatefulSet: {e}"));
    let v1alpha1 = (version == "v1alpha1").then(|| statefulset_to_v1alpha1(&sts));
    let has_status = raw.get("status").is_some_and(|s| !s.is_null());
    if !has_status {
        // The common case: the spec alone, walked typed (no serialised spec, no overlay).
        let patch = match &v1alpha1 {
            Some(alpha) => overlay_patch_typed(raw, &SpecOf(&alpha.spec)),
            None => overlay_patch_typed(raw, &SpecOf(&sts.spec)),
        };
        return patch.map_or_else(encode_error, Verdict::patched);
    }
    let typed = match &v1alpha1 {
        Some(alpha) => serde_json::to_value(&alpha.spec),
        None => serde_json::to_value(&sts.spec),
    }
    .map(|spec| json!({ "spec": spec }));
    match typed {
        Ok(typed) => Verdict::patched(Overlay::new(raw, &typed).replace("status", Some(zero_status())).patch()),
        Err(e) => encode_error(e),
    }
}

/// Decodes the new object and, on UPDATE, the old one, both as v1beta1.
fn decode_both(
    review: &Review,
    version: &str,
) -> Result<(v1beta1::StatefulSet, Option<v1beta1::StatefulSet>), Verdict> {
    let new = decode_statefulset(review.object.as_ref(), "StatefulSet", version)?;
    let old = if review.request.operation == Operation::Update {
        Some(decode_statefulset(review.old_object.as_ref(), "old StatefulSet", version)?)
    } else {
        None
    };
    Ok((new, old))
}

/// kruise emits `status` as Go's zero value: the counters Go always serialises, nothing else. A
/// request without status keeps having none (Go would add a zero status there: noise we skip).
fn zero_status() -> Value {
    json!({"replicas": 0, "readyReplicas": 0, "availableReplicas": 0, "currentReplicas": 0, "updatedReplicas": 0})
}
