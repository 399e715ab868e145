//! SidecarSet validating handler `vsidecarset.kb.io`: validates the object against the rules of
//! spec §2.3 and the other SidecarSets of the cluster view, answering 422 when invalid (decision
//! §11.1). Both API versions, decided on the v1alpha1 model (a v1beta1 object is converted).

use super::review::{Review, Verdict};
use super::{Context, Objects, SIDECARSET, decode_objects, decode_on_v1alpha1, writes_object};
use crate::apis::SidecarSet;
use crate::core::sidecar::validate::{CONFIGURATION_NAME, ValidationInput, WHITELIST_KEY, validate_sidecarset};

/// Answers a SidecarSet CREATE or UPDATE: allowed, or 422 with every field error.
pub fn validate(ctx: &Context, review: &Review) -> Verdict {
    let req = &review.request;
    if !writes_object(&req.operation) {
        return Verdict::allow();
    }
    let version = req.resource.version.as_str();
    let decode = |raw: Option<&serde_json::Value>, what: &str| {
        decode_on_v1alpha1::<SidecarSet>(raw, what, version, SIDECARSET).map(|(s, _)| s)
    };
    let (set, old) = match decode_objects(review, ["SidecarSet", "old SidecarSet"], decode) {
        Ok(Objects::Create(set)) => (set, None),
        Ok(Objects::Update(set, old)) => (set, Some(old)),
        Ok(Objects::Delete(_) | Objects::Nothing) => return Verdict::allow(),
        Err(v) => return v,
    };
    let namespace = ctx.config.namespace.as_str();
    let all = ctx.cluster.sidecarsets();
    let revisions = ctx.cluster.controller_revisions(namespace);
    let config = ctx.cluster.config_map(namespace, CONFIGURATION_NAME);
    let whitelist = config.as_ref().and_then(|cm| cm.data.as_ref()).and_then(|d| d.get(WHITELIST_KEY));
    let input = ValidationInput {
        old: old.as_ref(),
        all: &all,
        revisions: &revisions,
        whitelist: whitelist.map(String::as_str),
        gates: &ctx.config.gates,
    };
    Verdict::validated(&validate_sidecarset(&set, &input))
}
