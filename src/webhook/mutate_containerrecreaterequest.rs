//! ContainerRecreateRequest mutating handler `mcontainerrecreaterequest.kb.io` (kruise
//! `pkg/webhook/containerrecreaterequest/mutating`, which validates too: kruise has no validating
//! webhook for this kind). 403 while the `KruiseDaemon` gate is off; on CREATE the decisions of
//! [`crate::core::crr::admission`] on the pod the router fetched (see `pods_needed`), answered as
//! a patch of the labels and spec; on UPDATE the immutability checks. v1beta1 objects (kruise
//! HEAD) are decided on the v1alpha1 model: both versions have the same spec and labels, and the
//! patch touches only those.

use serde::Serialize;
use std::collections::BTreeMap;

use super::review::{Review, Verdict};
use super::{Context, decode_object};
use crate::apis::containerrecreaterequest::{ContainerRecreateRequest, ContainerRecreateRequestSpec};
use crate::compat::patch::overlay_patch_typed;
use crate::core::crr::admission::{admit_update, admit_update_v1beta1, admit_with_pod, precheck_create};
use crate::core::features::Gate;
use kube::core::admission::Operation;

#[derive(Serialize)]
struct Injected<'a> {
    metadata: Labels<'a>,
    spec: &'a ContainerRecreateRequestSpec,
}

#[derive(Serialize)]
struct Labels<'a> {
    labels: &'a BTreeMap<String, String>,
}

/// The namespace and pod name a CREATE needs read (for the router's pod fetch).
pub fn pod_needed(review: &Review) -> Option<(String, Vec<String>)> {
    if review.request.operation != Operation::Create {
        return None;
    }
    let name = review.object.as_ref()?.pointer("/spec/podName")?.as_str()?.to_string();
    if name.is_empty() {
        return None;
    }
    Some((review.request.namespace.clone().unwrap_or_else(|| "default".into()), vec![name]))
}

/// Answers a ContainerRecreateRequest CREATE or UPDATE.
pub fn mutate(ctx: &Context, review: &Review) -> Verdict {
    if !ctx.config.gates.enabled(Gate::KruiseDaemon) {
        return Verdict::errored(403, "feature-gate KruiseDaemon is not enabled");
    }
    let op = &review.request.operation;
    if !matches!(op, Operation::Create | Operation::Update) {
        return Verdict::allow();
    }
    let mut crr: ContainerRecreateRequest = match decode_object(review.object.as_ref(), "ContainerRecreateRequest") {
        Ok(c) => c,
        Err(v) => return v,
    };
    if *op == Operation::Update {
        let old: ContainerRecreateRequest =
            match decode_object(review.old_object.as_ref(), "old ContainerRecreateRequest") {
                Ok(c) => c,
                Err(v) => return v,
            };
        // kruise HEAD's v1beta1 handler has the same checks but the annotation's (v1beta1 keeps
        // that time in a condition); its spec and labels are v1alpha1's.
        let admitted = if review.request.resource.version == "v1beta1" {
            admit_update_v1beta1(&crr, &old)
        } else {
            admit_update(&crr, &old)
        };
        return match admitted {
            Ok(()) => Verdict::allow(),
            Err(r) => Verdict::errored(r.code, r.message),
        };
    }
    if let Err(r) = precheck_create(&mut crr) {
        return Verdict::errored(r.code, r.message);
    }
    let namespace = review.request.namespace.clone().unwrap_or_else(|| "default".into());
    let pod = ctx.cluster.pod(&namespace, &crr.spec.pod_name);
    if let Err(r) = admit_with_pod(&mut crr, pod.as_deref(), None) {
        return Verdict::errored(r.code, r.message);
    }
    let Some(raw) = review.object.as_ref() else { return Verdict::allow() };
    let labels = crr.metadata.labels.clone().unwrap_or_default();
    overlay_patch_typed(raw, &Injected { metadata: Labels { labels: &labels }, spec: &crr.spec }).map_or_else(
        |e| Verdict::errored(500, format!("cannot encode ContainerRecreateRequest: {e}")),
        Verdict::patched,
    )
}
