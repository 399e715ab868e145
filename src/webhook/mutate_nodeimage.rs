//! NodeImage mutating handler `mnodeimage.kb.io` (kruise `pkg/webhook/nodeimage/mutating`):
//! `core::defaults::nodeimage` — a `createdAt` (the context's clock, to the second as Go's
//! `metav1.Time` encodes it) and a `pullPolicy` for every tag, spec and status tags sorted by
//! name. Both versions decode on the v1alpha1 model (v1beta1's extra `pullSecrets[].mode` is left
//! as sent by the overlay); no patch when nothing changed.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use serde::Serialize;

use super::review::{Review, Verdict};
use super::{Context, decode_object, writes_object};
use crate::apis::nodeimage::{NodeImage, NodeImageSpec, NodeImageStatus};
use crate::compat::patch::overlay_patch_typed;
use crate::core::defaults::nodeimage::default_nodeimage;

/// `{"spec": ..., "status": ...}`: the two parts the defaults touch.
#[derive(Serialize)]
struct SpecAndStatus<'a> {
    spec: &'a NodeImageSpec,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'a NodeImageStatus>,
}

/// Answers a NodeImage CREATE or UPDATE with its defaults.
pub fn mutate(ctx: &Context, review: &Review) -> Verdict {
    if !writes_object(&review.request.operation) {
        return Verdict::allow();
    }
    let version = review.request.resource.version.as_str();
    if !matches!(version, "v1alpha1" | "v1beta1") {
        return Verdict::errored(400, format!("unsupported version: {version}"));
    }
    let mut node_image: NodeImage = match decode_object(review.object.as_ref(), "NodeImage") {
        Ok(n) => n,
        Err(v) => return v,
    };
    let now = Timestamp::try_from(ctx.config.clock.now())
        .ok()
        .and_then(|t| Timestamp::from_second(t.as_second()).ok())
        .unwrap_or(Timestamp::UNIX_EPOCH);
    default_nodeimage(&mut node_image, &Time(now));
    let Some(raw) = review.object.as_ref() else { return Verdict::allow() };
    let typed = SpecAndStatus { spec: &node_image.spec, status: node_image.status.as_ref() };
    overlay_patch_typed(raw, &typed)
        .map_or_else(|e| Verdict::errored(500, format!("cannot encode NodeImage: {e}")), Verdict::patched)
}
