//! Advanced DaemonSet v1alpha1 <-> v1beta1 on the JSON object, as kruise v1.9.0's
//! `apis/apps/v1alpha1/daemonset_conversion.go` (`ConvertTo` / `ConvertFrom`):
//! - to v1beta1: `rollingUpdate.rollingUpdateType: Surging` (deprecated) becomes `Standard`; the
//!   `daemonset.kruise.io/progressive-create-pod: "true"` annotation becomes
//!   `scaleStrategy: {partitionedScaling: true}` (the annotation stays: metadata is shared), any
//!   other value no `scaleStrategy`; `status.daemonSetHash` becomes `status.updateRevision`;
//! - to v1alpha1: `scaleStrategy.partitionedScaling: true` sets the annotation to `"true"` (an
//!   annotation already there otherwise stays, as in kruise); `scaleStrategy` goes;
//!   `status.updateRevision` becomes `status.daemonSetHash`; the rolling-update type is copied;
//! - everything else is copied verbatim (kruise copies every other field one by one; unknown
//!   fields pass through, as for the other kinds of this module).
//!
//! Like kruise, each side's field of the other version (`spec.scaleStrategy` or
//! `status.updateRevision` on a v1alpha1 object, `status.daemonSetHash` on a v1beta1 one) is
//! dropped, not carried, and an empty revision is omitted (Go's `omitempty`).

use serde_json::{Map, Value, json};

use super::meta_map;
use crate::apis::daemonset::{DEPRECATED_SURGING, PROGRESSIVE_CREATE_POD, STANDARD};

/// v1alpha1 -> v1beta1, in place (kruise's `ConvertTo`).
pub fn to_v1beta1(obj: &mut Map<String, Value>) {
    let progressive = super::meta_value(obj, "annotations", PROGRESSIVE_CREATE_POD) == Some("true");
    if let Some(Value::Object(spec)) = obj.get_mut("spec") {
        if let Some(Value::Object(rolling)) = spec.get_mut("updateStrategy").and_then(|s| s.get_mut("rollingUpdate"))
            && rolling.get("rollingUpdateType").and_then(Value::as_str) == Some(DEPRECATED_SURGING)
        {
            rolling.insert("rollingUpdateType".into(), Value::String(STANDARD.into()));
        }
        spec.remove("scaleStrategy");
        if progressive {
            spec.insert("scaleStrategy".into(), json!({"partitionedScaling": true}));
        }
    } else if progressive {
        obj.insert("spec".into(), json!({"scaleStrategy": {"partitionedScaling": true}}));
    }
    move_revision(obj, "daemonSetHash", "updateRevision");
}

/// v1beta1 -> v1alpha1, in place (kruise's `ConvertFrom`).
pub fn to_v1alpha1(obj: &mut Map<String, Value>) {
    let partitioned = match obj.get_mut("spec") {
        Some(Value::Object(spec)) => spec
            .remove("scaleStrategy")
            .is_some_and(|s| s.get("partitionedScaling").and_then(Value::as_bool) == Some(true)),
        _ => false,
    };
    if partitioned && let Some(annotations) = meta_map(obj, "annotations") {
        annotations.insert(PROGRESSIVE_CREATE_POD.into(), Value::String("true".into()));
    }
    move_revision(obj, "updateRevision", "daemonSetHash");
}

/// `status.<from>` becomes `status.<to>` (a `<to>` already there is dropped; an empty or
/// non-string value is omitted, as Go's `omitempty` string would be).
fn move_revision(obj: &mut Map<String, Value>, from: &str, to: &str) {
    let Some(Value::Object(status)) = obj.get_mut("status") else { return };
    status.remove(to);
    match status.remove(from) {
        Some(Value::String(rev)) if !rev.is_empty() => {
            status.insert(to.into(), Value::String(rev));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
