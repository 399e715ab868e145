//! SidecarSet v1alpha1 <-> v1beta1 on the JSON object (spec §1.3), as kruise's
//! `apis/apps/v1alpha1/sidecarset_conversion.go`:
//! - `spec.namespace: X` -> `namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: X}}`
//!   (the namespace wins over a namespaceSelector, as in kruise); `namespaceSelector` otherwise
//!   copied;
//! - the `apps.kruise.io/sidecarset-custom-version` label -> `spec.customVersion` (the label is
//!   removed from the v1beta1 object), and back.
//!
//! Deliberate difference: going to v1alpha1, a namespaceSelector that is exactly the one a
//! namespace becomes goes back to `namespace: X` (kruise leaves the selector). Same meaning, and
//! a v1alpha1 object read through the v1beta1 storage version looks as it was written, so
//! re-applying a v1alpha1 manifest is a no-op instead of setting both fields.

use serde_json::{Map, Value, json};

use super::{child, meta_map};
use crate::apis::keys::{NAMESPACE_NAME_LABEL, SIDECARSET_CUSTOM_VERSION};

/// v1alpha1 -> v1beta1, in place.
pub fn to_v1beta1(obj: &mut Map<String, Value>) {
    let custom = match obj.get_mut("metadata").and_then(|m| m.get_mut("labels")).and_then(Value::as_object_mut) {
        Some(labels) => {
            let v = labels.remove(SIDECARSET_CUSTOM_VERSION);
            if labels.is_empty()
                && let Some(Value::Object(meta)) = obj.get_mut("metadata")
            {
                meta.remove("labels");
            }
            v
        }
        None => None,
    };
    let Some(spec) = child(obj, "spec") else { return };
    match spec.remove("namespace") {
        Some(Value::String(ns)) if !ns.is_empty() => {
            spec.insert("namespaceSelector".into(), json!({"matchLabels": {NAMESPACE_NAME_LABEL: ns}}));
        }
        _ => {}
    }
    if let Some(v) = custom {
        spec.insert("customVersion".into(), v);
    }
}

/// v1beta1 -> v1alpha1, in place.
pub fn to_v1alpha1(obj: &mut Map<String, Value>) {
    let Some(spec) = child(obj, "spec") else { return };
    let custom = spec.remove("customVersion").filter(|v| v.as_str().is_some_and(|s| !s.is_empty()));
    if let Some(ns) = namespace_of(spec.get("namespaceSelector")) {
        spec.remove("namespaceSelector");
        spec.insert("namespace".into(), Value::String(ns));
    }
    if let Some(v) = custom
        && let Some(labels) = meta_map(obj, "labels")
    {
        labels.insert(SIDECARSET_CUSTOM_VERSION.into(), v);
    }
}

/// `X` when the selector is exactly `{matchLabels: {kubernetes.io/metadata.name: X}}`.
fn namespace_of(selector: Option<&Value>) -> Option<String> {
    let selector = selector?.as_object()?;
    if selector.len() != 1 {
        return None;
    }
    let labels = selector.get("matchLabels")?.as_object()?;
    match (labels.len(), labels.get(NAMESPACE_NAME_LABEL)) {
        (1, Some(Value::String(ns))) if !ns.is_empty() => Some(ns.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::conversion::{V1ALPHA1, V1BETA1, convert};

    fn obj(version: &str, metadata: Value, spec: Value) -> Value {
        json!({"apiVersion": version, "kind": "SidecarSet", "metadata": metadata, "spec": spec})
    }

    fn containers() -> Value {
        json!({"initContainers": [{"name": "init-sidecar", "image": "init:latest", "podInjectPolicy": "BeforeAppContainer"}],
               "containers": [{"name": "sidecar", "image": "sidecar:latest", "podInjectPolicy": "AfterAppContainer",
                   "upgradeStrategy": {"upgradeType": "HotUpgrade", "hotUpgradeEmptyImage": "empty:latest"},
                   "shareVolumePolicy": {"type": "enabled"},
                   "transferEnv": [{"sourceContainerName": "main", "envName": "ENV"}],
                   "resourcesPolicy": {"targetContainersMode": "sum", "targetContainersNameRegex": ".*",
                       "resourcesExpr": {"limits": {"cpu": "50%", "memory": "50%"}, "requests": {"cpu": "25%"}}}}],
               "updateStrategy": {"type": "RollingUpdate", "selector": {"matchLabels": {"update": "true"}},
                   "partition": 1, "maxUnavailable": 1, "scatterStrategy": [{"key": "zone", "value": "us-west"}]},
               "injectionStrategy": {"paused": true, "revision": {"customVersion": "v1.0", "policy": "Always"}},
               "imagePullSecrets": [{"name": "secret"}], "revisionHistoryLimit": 10,
               "patchPodMetadata": [{"annotations": {"key": "value"}, "patchPolicy": "Retain"}]})
    }

    fn with(mut base: Value, extra: Value) -> Value {
        if let (Some(b), Value::Object(e)) = (base.as_object_mut(), extra) {
            b.extend(e);
        }
        base
    }

    /// kruise's `TestSidecarSet_ConvertTo` rows (the ResourcesPolicy rows are one: containers
    /// pass through verbatim, whatever their policy).
    #[test]
    fn kruise_convert_to_rows() {
        let sel = json!({"matchLabels": {"app": "nginx"}});
        let rows = [
            (
                "convert with all fields populated - Namespace takes priority",
                obj(
                    V1ALPHA1,
                    json!({"name": "test-sidecarset", "labels": {"app": "test", SIDECARSET_CUSTOM_VERSION: "v1.0"}}),
                    with(
                        containers(),
                        json!({"selector": sel, "namespace": "test-namespace",
                        "namespaceSelector": {"matchLabels": {"env": "prod"}}}),
                    ),
                ),
                obj(
                    V1BETA1,
                    json!({"name": "test-sidecarset", "labels": {"app": "test"}}),
                    with(
                        containers(),
                        json!({"selector": sel, "customVersion": "v1.0",
                        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: "test-namespace"}}}),
                    ),
                ),
            ),
            (
                "convert with minimal fields",
                obj(V1ALPHA1, json!({"name": "minimal"}), json!({"selector": {"matchLabels": {"app": "test"}}})),
                obj(V1BETA1, json!({"name": "minimal"}), json!({"selector": {"matchLabels": {"app": "test"}}})),
            ),
            (
                "convert with namespace only",
                obj(V1ALPHA1, json!({"name": "s"}), json!({"namespace": "test-ns"})),
                obj(
                    V1BETA1,
                    json!({"name": "s"}),
                    json!({"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: "test-ns"}}}),
                ),
            ),
            (
                "convert with namespaceSelector only",
                obj(V1ALPHA1, json!({"name": "s"}), json!({"namespaceSelector": {"matchLabels": {"env": "dev"}}})),
                obj(V1BETA1, json!({"name": "s"}), json!({"namespaceSelector": {"matchLabels": {"env": "dev"}}})),
            ),
        ];
        for (name, a, want) in rows {
            assert_eq!(convert(0, &a, V1BETA1).unwrap(), want, "{name}");
        }
    }

    /// kruise's `TestSidecarSet_ConvertFrom` rows.
    #[test]
    fn kruise_convert_from_rows() {
        let sel = json!({"matchLabels": {"app": "nginx"}});
        let rows = [
            (
                "convert from v1beta1 with all fields populated",
                obj(
                    V1BETA1,
                    json!({"name": "test-sidecarset", "labels": {"app": "test"}}),
                    with(
                        containers(),
                        json!({"selector": sel, "customVersion": "v1.0",
                        "namespaceSelector": {"matchLabels": {"env": "prod"}}}),
                    ),
                ),
                obj(
                    V1ALPHA1,
                    json!({"name": "test-sidecarset", "labels": {"app": "test", SIDECARSET_CUSTOM_VERSION: "v1.0"}}),
                    with(containers(), json!({"selector": sel, "namespaceSelector": {"matchLabels": {"env": "prod"}}})),
                ),
            ),
            (
                "convert from v1beta1 with minimal fields",
                obj(V1BETA1, json!({"name": "m"}), json!({"selector": {"matchLabels": {"app": "test"}}})),
                obj(V1ALPHA1, json!({"name": "m"}), json!({"selector": {"matchLabels": {"app": "test"}}})),
            ),
            (
                "convert from v1beta1 with NamespaceSelector",
                obj(V1BETA1, json!({"name": "s"}), json!({"namespaceSelector": {"matchLabels": {"env": "staging"}}})),
                obj(V1ALPHA1, json!({"name": "s"}), json!({"namespaceSelector": {"matchLabels": {"env": "staging"}}})),
            ),
            (
                "convert from v1beta1 with nil NamespaceSelector",
                obj(V1BETA1, json!({"name": "s"}), json!({"selector": sel})),
                obj(V1ALPHA1, json!({"name": "s"}), json!({"selector": sel})),
            ),
        ];
        for (name, b, want) in rows {
            assert_eq!(convert(0, &b, V1ALPHA1).unwrap(), want, "{name}");
        }
    }

    #[test]
    fn namespace_round_trips_both_ways() {
        let a = obj(
            V1ALPHA1,
            json!({"name": "s", "labels": {SIDECARSET_CUSTOM_VERSION: "v2"}}),
            json!({"namespace": "ns1"}),
        );
        let b = convert(0, &a, V1BETA1).unwrap();
        assert_eq!(b["metadata"], json!({"name": "s"}));
        assert_eq!(convert(0, &b, V1ALPHA1).unwrap(), a);
        // A selector with more than the name label stays a selector.
        let b = obj(
            V1BETA1,
            json!({"name": "s"}),
            json!({"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: "ns1", "env": "x"}}}),
        );
        let a = convert(0, &b, V1ALPHA1).unwrap();
        assert!(a["spec"].get("namespace").is_none());
        assert_eq!(convert(0, &a, V1BETA1).unwrap(), b);
    }
}
