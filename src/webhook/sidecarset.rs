//! SidecarSet handlers: `msidecarset.kb.io` defaults the object and writes its hash annotations
//! (spec §4.11, §1.3.2); `vsidecarset.kb.io` validates it against the rules of spec §2.3 and the
//! other SidecarSets of the cluster view, answering 422 when invalid (decision §11.1).

use std::sync::OnceLock;

use kube::core::admission::Operation;

use super::review::{Review, Verdict};
use super::{Context, decode_object, writes_object};
use crate::apis::SidecarSet;
use crate::apis::keys::{SIDECARSET_HASH, SIDECARSET_HASH_WITHOUT_IMAGE};
use crate::core::field::aggregate;
use crate::core::patch::Overlay;
use crate::core::sidecar::DEFAULT_KRUISE_NAMESPACE;
use crate::core::sidecar::defaults::default_sidecarset;
use crate::core::sidecar::validate::{CONFIGURATION_NAME, ValidationInput, WHITELIST_KEY, validate_sidecarset};

/// The namespace kruise runs in (`POD_NAMESPACE`, default `kruise-system`), where SidecarSet
/// ControllerRevisions and `kruise-configuration` live. Read once.
pub(crate) fn kruise_namespace() -> &'static str {
    static NAMESPACE: OnceLock<String> = OnceLock::new();
    NAMESPACE.get_or_init(|| {
        std::env::var("POD_NAMESPACE")
            .ok()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| DEFAULT_KRUISE_NAMESPACE.into())
    })
}

fn check_version(review: &Review) -> Result<(), Verdict> {
    let version = &review.request.resource.version;
    if version == "v1alpha1" { Ok(()) } else { Err(Verdict::errored(400, format!("unsupported version: {version}"))) }
}

/// Answers a SidecarSet CREATE or UPDATE with its defaults and hash annotations.
pub fn mutate(_ctx: &Context, review: &Review) -> Verdict {
    if !writes_object(&review.request.operation) {
        return Verdict::allow();
    }
    if let Err(v) = check_version(review) {
        return v;
    }
    let mut set: SidecarSet = match decode_object(review.object.as_ref(), "SidecarSet") {
        Ok(s) => s,
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
            let typed = serde_json::json!({"metadata": {"annotations": hashes}, "spec": spec});
            Verdict::patched(Overlay::new(raw, &typed).patch())
        }
        Err(e) => Verdict::errored(500, format!("cannot encode SidecarSet: {e}")),
    }
}

/// Answers a SidecarSet CREATE or UPDATE: allowed, or 422 with every field error.
pub fn validate(ctx: &Context, review: &Review) -> Verdict {
    let req = &review.request;
    if !writes_object(&req.operation) {
        return Verdict::allow();
    }
    if let Err(v) = check_version(review) {
        return v;
    }
    let set: SidecarSet = match decode_object(review.object.as_ref(), "SidecarSet") {
        Ok(s) => s,
        Err(v) => return v,
    };
    let old: Option<SidecarSet> = if req.operation == Operation::Update {
        match decode_object(review.old_object.as_ref(), "old SidecarSet") {
            Ok(s) => Some(s),
            Err(v) => return v,
        }
    } else {
        None
    };
    let namespace = kruise_namespace();
    let all = ctx.cluster.sidecarsets();
    let revisions = ctx.cluster.controller_revisions(namespace);
    let config = ctx.cluster.config_map(namespace, CONFIGURATION_NAME);
    let whitelist = config.as_ref().and_then(|cm| cm.data.as_ref()).and_then(|d| d.get(WHITELIST_KEY));
    let input = ValidationInput {
        old: old.as_ref(),
        all: &all,
        revisions: &revisions,
        whitelist: whitelist.map(String::as_str),
        gates: &ctx.gates,
    };
    let errs = validate_sidecarset(&set, &input);
    if errs.is_empty() { Verdict::allow() } else { Verdict::errored(422, aggregate(&errs)) }
}
