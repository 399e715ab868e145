//! Advanced DaemonSet mutating handler `mdaemonset.kb.io` (kruise v1.9.0
//! `pkg/webhook/daemonset/mutating`): `core::defaults::daemonset` on the object of the version
//! the request names; no patch when nothing changed. The pod template is not defaulted, as in
//! kruise. kruise's patch would also add a zero `status` and `metadata.creationTimestamp: null`
//! (Go's serialisation of an object without them); the apiserver ignores both, so we leave them
//! out, as the Advanced StatefulSet handler does.

use super::review::{Review, Verdict};
use super::{Context, decode_object, writes_object};
use crate::apis::daemonset::{DaemonSet, v1beta1};
use crate::compat::patch::{SpecOf, overlay_patch_typed};
use crate::core::defaults::daemonset::{Version, default_daemonset};

/// Answers an Advanced DaemonSet CREATE or UPDATE with its defaults.
pub fn mutate(_ctx: &Context, review: &Review) -> Verdict {
    if !writes_object(&review.request.operation) {
        return Verdict::allow();
    }
    let Some(raw) = review.object.as_ref() else { return Verdict::allow() };
    let encode_error = |e: serde_json::Error| Verdict::errored(500, format!("cannot encode DaemonSet: {e}"));
    match review.request.resource.version.as_str() {
        "v1alpha1" => {
            let mut ds: DaemonSet = match decode_object(Some(raw), "DaemonSet") {
                Ok(ds) => ds,
                Err(v) => return v,
            };
            let s = &mut ds.spec;
            default_daemonset(
                &mut s.burst_replicas,
                &mut s.update_strategy,
                &mut s.revision_history_limit,
                Version::V1alpha1,
            );
            overlay_patch_typed(raw, &SpecOf(&ds.spec)).map_or_else(encode_error, Verdict::patched)
        }
        "v1beta1" => {
            let mut ds: v1beta1::DaemonSet = match decode_object(Some(raw), "DaemonSet") {
                Ok(ds) => ds,
                Err(v) => return v,
            };
            let s = &mut ds.spec;
            default_daemonset(
                &mut s.burst_replicas,
                &mut s.update_strategy,
                &mut s.revision_history_limit,
                Version::V1beta1,
            );
            overlay_patch_typed(raw, &SpecOf(&ds.spec)).map_or_else(encode_error, Verdict::patched)
        }
        other => Verdict::errored(400, format!("unsupported version: {other}")),
    }
}
