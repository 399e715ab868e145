//! ImagePullJob mutating handler `mimagepulljob.kb.io` (kruise `pkg/webhook/imagepulljob/
//! mutating`, spec §1.4): `core::defaults::imagepulljob` — spec defaults for both versions (one
//! shape, decoded on the v1alpha1 model), and the `apps.kruise.io/deletion-protection` finalizer
//! on a v1alpha1 CREATE only, as kruise HEAD does. No patch when nothing changed.

use kube::core::admission::Operation;
use serde::Serialize;

use super::review::{Review, Verdict};
use super::{Context, decode_object, writes_object};
use crate::apis::imagepulljob::{ImagePullJob, ImagePullJobSpec};
use crate::compat::patch::overlay_patch_typed;
use crate::core::defaults::imagepulljob::default_imagepulljob;

/// `{"metadata": {"finalizers": ...}, "spec": ...}`: the parts the defaults touch.
#[derive(Serialize)]
struct Defaulted<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<Finalizers<'a>>,
    spec: &'a ImagePullJobSpec,
}

#[derive(Serialize)]
struct Finalizers<'a> {
    finalizers: &'a [String],
}

/// Answers an ImagePullJob CREATE or UPDATE with its defaults.
pub fn mutate(_ctx: &Context, review: &Review) -> Verdict {
    let op = &review.request.operation;
    if !writes_object(op) {
        return Verdict::allow();
    }
    let version = review.request.resource.version.as_str();
    if !matches!(version, "v1alpha1" | "v1beta1") {
        return Verdict::errored(400, format!("unsupported version: {version}"));
    }
    let mut job: ImagePullJob = match decode_object(review.object.as_ref(), "ImagePullJob") {
        Ok(job) => job,
        Err(v) => return v,
    };
    let protect = version == "v1alpha1" && *op == Operation::Create;
    default_imagepulljob(&mut job, protect);
    let Some(raw) = review.object.as_ref() else { return Verdict::allow() };
    let metadata =
        if protect { job.metadata.finalizers.as_deref().map(|f| Finalizers { finalizers: f }) } else { None };
    overlay_patch_typed(raw, &Defaulted { metadata, spec: &job.spec })
        .map_or_else(|e| Verdict::errored(500, format!("cannot encode ImagePullJob: {e}")), Verdict::patched)
}
