//! SidecarSet mutating handler `msidecarset.kb.io`: defaults the object and writes its hash
//! annotations (spec §4.11, §1.3.2); only the spec and the two hash annotations change. Both API
//! versions on the v1alpha1 model: a v1beta1 object is converted, defaulted, converted back and
//! its spec laid over the request's own JSON.

use super::review::{Review, Verdict};
use super::{Context, SIDECARSET, decode_on_v1alpha1, spec_in_version, writes_object};
use crate::apis::SidecarSet;
use crate::apis::keys::{SIDECARSET_HASH, SIDECARSET_HASH_WITHOUT_IMAGE};
use crate::compat::patch::Overlay;
use crate::core::sidecar::defaults::default_sidecarset;

/// Answers a SidecarSet CREATE or UPDATE with its defaults and hash annotations.
pub fn mutate(_ctx: &Context, review: &Review) -> Verdict {
    if !writes_object(&review.request.operation) {
        return Verdict::allow();
    }
    let version = review.request.resource.version.as_str();
    let (mut set, model) =
        match decode_on_v1alpha1::<SidecarSet>(review.object.as_ref(), "SidecarSet", version, SIDECARSET) {
            Ok(pair) => pair,
            Err(v) => return v,
        };
    if let Err(e) = default_sidecarset(&mut set) {
        return Verdict::errored(400, e.to_string());
    }
    let Some(raw) = review.object.as_ref() else { return Verdict::allow() };
    // Only the spec and the two hash annotations change: the rest of the object stays as sent.
    let annotations = set.metadata.annotations.unwrap_or_default();
    let hashes: serde_json::Map<String, serde_json::Value> = [SIDECARSET_HASH, SIDECARSET_HASH_WITHOUT_IMAGE]
        .into_iter()
        .filter_map(|k| annotations.get(k).map(|v| (k.to_string(), serde_json::Value::from(v.as_str()))))
        .collect();
    match serde_json::to_value(&set.spec) {
        Ok(spec) => {
            let spec = if version == "v1alpha1" {
                spec
            } else {
                let mutated = Overlay::new(&model, &serde_json::json!({ "spec": spec })).into_target();
                spec_in_version(mutated, version, SIDECARSET)
            };
            let typed = serde_json::json!({"metadata": {"annotations": hashes}, "spec": spec});
            Verdict::patched(Overlay::new(raw, &typed).patch())
        }
        Err(e) => Verdict::errored(500, format!("cannot encode SidecarSet: {e}")),
    }
}
