//! `patchPodMetadata` (spec §4.3 item 1): SidecarSets write pod annotations before their
//! containers are injected. `Retain` (or empty) sets a key only when absent, `Overwrite` always
//! sets it, `MergePatchJson` RFC 7386-merges the given JSON into a non-empty existing value (and
//! sets it otherwise). The merged value is written as Go's `json.Marshal` writes it (keys
//! sorted); an existing value the merge leaves unchanged is kept byte for byte, so that a second
//! invocation of the webhook changes nothing (kruise would re-format it).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::apis::sidecarset::SidecarSetPatchPodMetadata;
use crate::compat::gojson;

/// Why a `MergePatchJson` entry cannot be applied (the pod webhook answers 500).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetadataError {
    /// The pod's annotation value is not a JSON document.
    #[error("annotation {key}: Invalid JSON Document")]
    BadDocument {
        /// The annotation key.
        key: String,
    },
    /// The SidecarSet's value is not a JSON merge patch.
    #[error("annotation {key}: Invalid JSON Patch")]
    BadPatch {
        /// The annotation key.
        key: String,
    },
}

/// Applies every entry in order; returns whether the annotations changed.
pub fn patch_pod_metadata(
    annotations: &mut BTreeMap<String, String>,
    patches: &[SidecarSetPatchPodMetadata],
) -> Result<bool, MetadataError> {
    let before = annotations.clone();
    for patch in patches {
        match patch.patch_policy.as_str() {
            "" | "Retain" => {
                for (k, v) in &patch.annotations {
                    annotations.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            "Overwrite" => {
                for (k, v) in &patch.annotations {
                    annotations.insert(k.clone(), v.clone());
                }
            }
            "MergePatchJson" => {
                for (k, v) in &patch.annotations {
                    let merged = match annotations.get(k).filter(|o| !o.is_empty()) {
                        Some(origin) => merge_patch(k, origin, v)?,
                        None => v.clone(),
                    };
                    annotations.insert(k.clone(), merged);
                }
            }
            // Unknown policies are rejected by validation; kruise ignores them here.
            _ => {}
        }
    }
    Ok(*annotations != before)
}

/// evanphx/json-patch `MergePatch(origin, patch)`.
fn merge_patch(key: &str, origin: &str, patch: &str) -> Result<String, MetadataError> {
    let bad_doc = || MetadataError::BadDocument { key: key.to_string() };
    let bad_patch = || MetadataError::BadPatch { key: key.to_string() };
    let doc: Value = serde_json::from_str(origin).map_err(|_| bad_doc())?;
    let patch_value: Value = serde_json::from_str(patch).map_err(|_| bad_patch())?;
    if doc.is_null() {
        return Err(bad_doc());
    }
    let merged = match &patch_value {
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => return Err(bad_patch()),
        Value::Array(items) => Value::Array(items.iter().filter(|v| !v.is_null()).cloned().collect()),
        Value::Object(_) => {
            let mut merged = if doc.is_object() { doc.clone() } else { Value::Object(Default::default()) };
            json_patch::merge(&mut merged, &patch_value);
            merged
        }
    };
    if merged == doc {
        return Ok(origin.to_string());
    }
    Ok(gojson::to_string(&merged))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(policy: &str, pairs: &[(&str, &str)]) -> SidecarSetPatchPodMetadata {
        SidecarSetPatchPodMetadata {
            annotations: pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            patch_policy: policy.into(),
        }
    }

    fn run(existing: &[(&str, &str)], patches: &[SidecarSetPatchPodMetadata]) -> (BTreeMap<String, String>, bool) {
        let mut a: BTreeMap<String, String> = existing.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let changed = patch_pod_metadata(&mut a, patches).unwrap();
        (a, changed)
    }

    #[test]
    fn policies() {
        let (a, changed) = run(&[("k", "old")], &[entry("Retain", &[("k", "new"), ("n", "1")])]);
        assert_eq!((a["k"].as_str(), a["n"].as_str(), changed), ("old", "1", true));
        let (a, changed) = run(&[("k", "old")], &[entry("", &[("k", "new")])]);
        assert_eq!((a["k"].as_str(), changed), ("old", false));
        let (a, _) = run(&[("k", "old")], &[entry("Overwrite", &[("k", "new")])]);
        assert_eq!(a["k"], "new");
        let (a, _) = run(&[], &[entry("MergePatchJson", &[("k", r#"{"b": 1}"#)])]);
        assert_eq!(a["k"], r#"{"b": 1}"#, "absent: set as given");
        let (a, _) =
            run(&[("k", r#"{"z":0,"a":{"x":1}}"#)], &[entry("MergePatchJson", &[("k", r#"{"a":{"y":2},"z":null}"#)])]);
        assert_eq!(a["k"], r#"{"a":{"x":1,"y":2}}"#);
        let (a, changed) = run(&[("k", r#"{"b": 1}"#)], &[entry("MergePatchJson", &[("k", r#"{"b":1}"#)])]);
        assert_eq!((a["k"].as_str(), changed), (r#"{"b": 1}"#, false), "unchanged value kept byte for byte");
        let (a, _) = run(&[("k", "[1]")], &[entry("MergePatchJson", &[("k", r#"{"b":1}"#)])]);
        assert_eq!(a["k"], r#"{"b":1}"#);
    }

    #[test]
    fn bad_json_is_an_error() {
        let mut a: BTreeMap<String, String> = [("k".to_string(), "{".to_string())].into();
        let err = patch_pod_metadata(&mut a, &[entry("MergePatchJson", &[("k", "{}")])]).unwrap_err();
        assert_eq!(err, MetadataError::BadDocument { key: "k".into() });
        let mut a: BTreeMap<String, String> = [("k".to_string(), "{}".to_string())].into();
        let err = patch_pod_metadata(&mut a, &[entry("MergePatchJson", &[("k", "nope")])]).unwrap_err();
        assert_eq!(err, MetadataError::BadPatch { key: "k".into() });
    }
}
