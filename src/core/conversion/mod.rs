//! Conversion between the served versions of kruise's CRDs (spec §0, §1.1.4, §1.2.3, §1.3, §1.4),
//! as kruise's `apis/apps/v1alpha1/*_conversion.go`, for the `/convert` webhook and for admission
//! handlers that decide on one version's model.
//!
//! [`convert`] works on the JSON object, not on typed structs: every field it does not move is
//! passed through verbatim, so nothing a Kubernetes version newer than our types writes into a
//! pod template (schemaless in the CRDs) is lost on the way through the apiserver's conversion.
//! One file per kind says what moves and where it deliberately differs from kruise.

pub mod cloneset;
pub mod containerrecreaterequest;
pub mod daemonset;
pub mod imagepulljob;
pub mod podunavailablebudget;
pub mod review;
pub mod sidecarset;
pub mod statefulset;

use serde_json::{Map, Value};

pub use statefulset::{statefulset_to_v1alpha1, statefulset_to_v1beta1};

/// `apps.kruise.io/v1alpha1`.
pub const V1ALPHA1: &str = "apps.kruise.io/v1alpha1";
/// `apps.kruise.io/v1beta1`.
pub const V1BETA1: &str = "apps.kruise.io/v1beta1";
/// `policy.kruise.io/v1alpha1`.
pub const POLICY_V1ALPHA1: &str = "policy.kruise.io/v1alpha1";
/// `policy.kruise.io/v1beta1`.
pub const POLICY_V1BETA1: &str = "policy.kruise.io/v1beta1";

/// Why an object cannot be converted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConversionError {
    /// Not a JSON object.
    #[error("object {index} is not a JSON object")]
    NotAnObject {
        /// Position in the review.
        index: usize,
    },
    /// A kind this webhook does not convert.
    #[error(
        "object {index}: kind {kind:?} of {api_version:?} has no conversion (served: CloneSet, StatefulSet, SidecarSet, ImagePullJob, DaemonSet, ContainerRecreateRequest of apps.kruise.io; PodUnavailableBudget of policy.kruise.io)"
    )]
    UnknownKind {
        /// Position in the review.
        index: usize,
        /// `kind` of the object.
        kind: String,
        /// `apiVersion` of the object.
        api_version: String,
    },
    /// A version that is neither v1alpha1 nor v1beta1 of the kind's group.
    #[error("object {index}: cannot convert {kind} from {from:?} to {to:?} (versions: v1alpha1, v1beta1 of its group)")]
    UnknownVersion {
        /// Position in the review.
        index: usize,
        /// `kind` of the object.
        kind: String,
        /// `apiVersion` of the object.
        from: String,
        /// Desired `apiVersion`.
        to: String,
    },
}

/// Converts one object (at `index` of a review, for messages) to `desired` (`apps.kruise.io/v1alpha1`
/// or `apps.kruise.io/v1beta1`). An object already at `desired` is returned unchanged.
pub fn convert(index: usize, object: &Value, desired: &str) -> Result<Value, ConversionError> {
    let Value::Object(map) = object else { return Err(ConversionError::NotAnObject { index }) };
    let text = |k: &str| map.get(k).and_then(Value::as_str).unwrap_or_default().to_string();
    let (kind, from) = (text("kind"), text("apiVersion"));
    let step: fn(&mut Map<String, Value>) = match (kind.as_str(), from.as_str(), desired) {
        (_, f, d) if f == d && (d == V1ALPHA1 || d == V1BETA1) && known(&kind) => |_| {},
        ("PodUnavailableBudget", f, d) if f == d && (d == POLICY_V1ALPHA1 || d == POLICY_V1BETA1) => |_| {},
        ("PodUnavailableBudget", POLICY_V1ALPHA1, POLICY_V1BETA1) => podunavailablebudget::to_v1beta1,
        ("PodUnavailableBudget", POLICY_V1BETA1, POLICY_V1ALPHA1) => podunavailablebudget::to_v1alpha1,
        ("CloneSet", V1ALPHA1, V1BETA1) => cloneset::to_v1beta1,
        ("CloneSet", V1BETA1, V1ALPHA1) => cloneset::to_v1alpha1,
        ("SidecarSet", V1ALPHA1, V1BETA1) => sidecarset::to_v1beta1,
        ("SidecarSet", V1BETA1, V1ALPHA1) => sidecarset::to_v1alpha1,
        ("ImagePullJob", V1ALPHA1, V1BETA1) | ("ImagePullJob", V1BETA1, V1ALPHA1) => imagepulljob::convert,
        ("StatefulSet", V1ALPHA1, V1BETA1) => |_| {},
        ("StatefulSet", V1BETA1, V1ALPHA1) => statefulset::json_to_v1alpha1,
        ("DaemonSet", V1ALPHA1, V1BETA1) => daemonset::to_v1beta1,
        ("DaemonSet", V1BETA1, V1ALPHA1) => daemonset::to_v1alpha1,
        ("ContainerRecreateRequest", V1ALPHA1, V1BETA1) => containerrecreaterequest::to_v1beta1,
        ("ContainerRecreateRequest", V1BETA1, V1ALPHA1) => containerrecreaterequest::to_v1alpha1,
        (k, _, _) if !known(k) => {
            return Err(ConversionError::UnknownKind { index, kind, api_version: from });
        }
        _ => return Err(ConversionError::UnknownVersion { index, kind, from, to: desired.to_string() }),
    };
    let mut out = map.clone();
    step(&mut out);
    out.insert("apiVersion".into(), Value::String(desired.to_string()));
    Ok(Value::Object(out))
}

fn known(kind: &str) -> bool {
    matches!(
        kind,
        "CloneSet"
            | "SidecarSet"
            | "ImagePullJob"
            | "StatefulSet"
            | "DaemonSet"
            | "PodUnavailableBudget"
            | "ContainerRecreateRequest"
    )
}

/// The object at `key` of `map`, created empty when absent (or not an object). `None` cannot
/// happen (the key was just made an object); callers skip their step then, rather than panic.
pub(crate) fn child<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    let entry = map.entry(key.to_string()).or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut()
}

/// `metadata.labels` or `metadata.annotations` as a mutable map (created on demand).
pub(crate) fn meta_map<'a>(object: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Map<String, Value>> {
    child(child(object, "metadata")?, key)
}

/// The string at `metadata.<key>.<name>`.
pub(crate) fn meta_value<'a>(object: &'a Map<String, Value>, key: &str, name: &str) -> Option<&'a str> {
    object.get("metadata")?.get(key)?.get(name)?.as_str()
}
