//! Applies the patch kinds kube-apiserver accepts: JSON patch (RFC 6902), JSON merge patch
//! (RFC 7386), strategic merge patch (built-in kinds only, as for real custom resources get
//! 415) and a simplified server-side apply (create when missing, otherwise merged like a strategic
//! merge patch; no field ownership and no conflicts).

pub mod smp;

use crate::errors::ApiError;
use serde_json::Value;

/// The patch kinds, by request `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// `application/json-patch+json`
    Json,
    /// `application/merge-patch+json`
    Merge,
    /// `application/strategic-merge-patch+json`
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply)
    Apply,
}

impl PatchKind {
    /// The kind named by a `Content-Type` header.
    pub fn from_content_type(ct: &str) -> Result<Self, ApiError> {
        let media = ct.split(';').next().unwrap_or("").trim();
        match media {
            "application/json-patch+json" => Ok(PatchKind::Json),
            "application/merge-patch+json" => Ok(PatchKind::Merge),
            "application/strategic-merge-patch+json" => Ok(PatchKind::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => Ok(PatchKind::Apply),
            other => Err(ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format - accepted media types include: \
                 application/json-patch+json, application/merge-patch+json, \
                 application/apply-patch+yaml (got {other:?})"
            ))),
        }
    }
}

/// Parses a patch body: JSON for every kind, YAML also accepted for apply.
pub fn parse_body(kind: PatchKind, body: &[u8]) -> Result<Value, ApiError> {
    match kind {
        PatchKind::Apply => {
            serde_yaml_ng::from_slice(body).map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))
        }
        _ => serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}"))),
    }
}

/// Applies a parsed patch to the current object.
pub fn apply(kind: PatchKind, current: &Value, patch: &Value, custom: bool) -> Result<Value, ApiError> {
    match kind {
        PatchKind::Json => {
            let ops: json_patch::Patch = serde_json::from_value(patch.clone()).map_err(|e| {
                ApiError::bad_request(format!("the server rejected our request due to an error in our request: {e}"))
            })?;
            let mut out = current.clone();
            json_patch::patch(&mut out, &ops).map_err(|e| {
                ApiError::new(
                    422,
                    "Invalid",
                    format!("the server rejected our request due to an error in our request: {e}"),
                )
            })?;
            Ok(out)
        }
        PatchKind::Merge => {
            let mut out = current.clone();
            json_patch::merge(&mut out, patch);
            Ok(out)
        }
        PatchKind::Strategic if custom => Err(ApiError::unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types include: \
             application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        )),
        PatchKind::Strategic | PatchKind::Apply => {
            smp::apply(current, patch).map_err(|e| ApiError::bad_request(format!("strategic merge patch: {e}")))
        }
    }
}
