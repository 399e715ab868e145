//! BroadcastJob mutating handler `mbroadcastjob.kb.io` (kruise `pkg/webhook/broadcastjob/
//! mutating`, v1.8.4; issue 33 item 1): `core::defaults::broadcastjob` on both API versions
//! (one shape, decoded on the v1alpha1 model); template defaults on CREATE, and on UPDATE only
//! when the template changed, never with `TemplateNoDefaults`. Only `spec` is laid over the
//! request's own JSON; no patch when nothing changed.

use kube::core::admission::Operation;

use super::review::{Review, Verdict};
use super::{Context, decode_object, writes_object};
use crate::apis::broadcastjob::BroadcastJob;
use serde_json::{Value, json};

use crate::compat::patch::{Overlay, SpecOf, overlay_patch_typed};
use crate::core::defaults::broadcastjob::default_broadcastjob;
use crate::core::defaults::pod::should_inject_template_defaults;

/// Answers a BroadcastJob CREATE or UPDATE with its defaults.
pub fn mutate(ctx: &Context, review: &Review) -> Verdict {
    let req = &review.request;
    if !writes_object(&req.operation) {
        return Verdict::allow();
    }
    let version = req.resource.version.as_str();
    if !matches!(version, "v1alpha1" | "v1beta1") {
        return Verdict::errored(400, format!("unsupported version: {version}"));
    }
    let mut job: BroadcastJob = match decode_object(review.object.as_ref(), "BroadcastJob") {
        Ok(job) => job,
        Err(v) => return v,
    };
    let template_equal = if req.operation == Operation::Update {
        match decode_object::<BroadcastJob>(review.old_object.as_ref(), "old BroadcastJob") {
            Ok(old) => Some(old.spec.template == job.spec.template),
            Err(v) => return v,
        }
    } else {
        None
    };
    let inject = should_inject_template_defaults(template_equal, &ctx.config.gates);
    if let Err(e) = default_broadcastjob(&mut job.spec, inject, &ctx.config.gates) {
        return Verdict::errored(400, e.to_string());
    }
    let Some(raw) = review.object.as_ref() else { return Verdict::allow() };
    let encode_error = |e: serde_json::Error| Verdict::errored(500, format!("cannot encode BroadcastJob: {e}"));
    let null_containers = raw.pointer("/spec/template/spec/containers").is_some_and(Value::is_null);
    if !null_containers {
        return overlay_patch_typed(raw, &SpecOf(&job.spec)).map_or_else(encode_error, Verdict::patched);
    }
    // Go decodes `containers: null` to a nil slice and writes it back as null: no change there.
    let mut spec = match serde_json::to_value(&job.spec) {
        Ok(spec) => spec,
        Err(e) => return encode_error(e),
    };
    if let Some(c) = spec.pointer_mut("/template/spec/containers")
        && c.as_array().is_some_and(Vec::is_empty)
    {
        *c = Value::Null;
    }
    Verdict::patched(Overlay::new(raw, &json!({ "spec": spec })).patch())
}
