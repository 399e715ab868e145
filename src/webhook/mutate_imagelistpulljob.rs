//! ImageListPullJob mutating handler `mimagelistpulljob.kb.io` (kruise
//! `pkg/webhook/imagelistpulljob/mutating`): `core::defaults::imagelistpulljob` on the spec, both
//! API versions (v1alpha1 and v1beta1 share one shape, so both decode on the v1alpha1 model); no
//! patch when nothing changed; 400 for an object that does not decode or a version not served.

use super::review::{Review, Verdict};
use super::{Context, decode_object, writes_object};
use crate::apis::imagelistpulljob::ImageListPullJob;
use crate::compat::patch::{SpecOf, overlay_patch_typed};
use crate::core::defaults::imagelistpulljob::default_imagelistpulljob;

/// Answers an ImageListPullJob CREATE or UPDATE with its defaults.
pub fn mutate(_ctx: &Context, review: &Review) -> Verdict {
    if !writes_object(&review.request.operation) {
        return Verdict::allow();
    }
    let version = review.request.resource.version.as_str();
    if !matches!(version, "v1alpha1" | "v1beta1") {
        return Verdict::errored(400, format!("unsupported version: {version}"));
    }
    let mut job: ImageListPullJob = match decode_object(review.object.as_ref(), "ImageListPullJob") {
        Ok(job) => job,
        Err(v) => return v,
    };
    default_imagelistpulljob(&mut job.spec);
    let Some(raw) = review.object.as_ref() else { return Verdict::allow() };
    overlay_patch_typed(raw, &SpecOf(&job.spec))
        .map_or_else(|e| Verdict::errored(500, format!("cannot encode ImageListPullJob: {e}")), Verdict::patched)
}
