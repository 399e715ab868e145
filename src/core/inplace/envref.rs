//! Env-from-metadata references (spec §3.2 step 5, gate InPlaceUpdateEnvFromMetadata): decides
//! which changed template labels/annotations are read by a container through an env
//! `valueFrom.fieldRef`, so that the container is restarted by kruise-daemon with the new value
//! instead of the label simply being patched onto the pod. Only `add`/`replace` ops on ONE key
//! (`/metadata/labels/<k>`, `/metadata/annotations/<k>`, RFC 6901-unescaped) count; the reference
//! must use the single-quoted subscript form `metadata.labels['<k>']` (k8s
//! `SplitMaybeSubscriptedPath`); env vars with a literal value and the SidecarSet version vars are
//! ignored (kruise's `IsContainerReferenceToMeta`). Quirk kept from kruise: the first label of a
//! template arrives as `add /metadata/labels {…}` (the whole map), which is not a single-key op, so
//! it is never treated as a reference.

use crate::compat::jsondiff::{OpKind, PatchOp, unescape_token};
use k8s_openapi::api::core::v1::Container;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;
use std::collections::BTreeMap;

/// Env vars never treated as metadata references (kruise's `excludeEnvs`).
pub const EXCLUDED_ENVS: [&str; 2] = ["SIDECARSET_VERSION", "SIDECARSET_VERSION_ALT"];

/// For every metadata op whose key is read by a container of the NEW template: records `container
/// -> {labels|annotations: {key: new value}}` and removes the key from both metadata copies (so the
/// later metadata patch leaves it alone). Returns the records; empty when nothing matched.
pub fn extract_env_references(
    metadata_ops: &[PatchOp],
    new_containers: &[Container],
    old_meta: &mut ObjectMeta,
    new_meta: &mut ObjectMeta,
) -> BTreeMap<String, ObjectMeta> {
    let mut refs: BTreeMap<String, ObjectMeta> = BTreeMap::new();
    for op in metadata_ops {
        if !matches!(op.op, OpKind::Add | OpKind::Replace) {
            continue;
        }
        let words: Vec<&str> = op.path.splitn(4, '/').collect();
        let [_, _, kind @ ("labels" | "annotations"), raw_key] = words.as_slice() else {
            continue;
        };
        // Kruise type-asserts a string here; a typed template cannot produce anything else.
        let Some(Value::String(value)) = &op.value else {
            continue;
        };
        let key = unescape_token(raw_key);
        let field = format!("metadata.{kind}");
        for container in new_containers {
            if !references_metadata(container, &field, &key) {
                continue;
            }
            let meta = refs.entry(container.name.clone()).or_default();
            let (target, old_map, new_map) = if *kind == "labels" {
                (&mut meta.labels, &mut old_meta.labels, &mut new_meta.labels)
            } else {
                (&mut meta.annotations, &mut old_meta.annotations, &mut new_meta.annotations)
            };
            target.get_or_insert_with(BTreeMap::new).insert(key.clone(), value.clone());
            for map in [old_map, new_map].into_iter().flatten() {
                map.remove(&key);
            }
        }
    }
    refs
}

/// Kruise's `IsContainerReferenceToMeta`: does an env var of `c` (without a literal value, not one
/// of [`EXCLUDED_ENVS`]) read `<path>['<key>']` through `valueFrom.fieldRef`?
pub fn references_metadata(c: &Container, path: &str, key: &str) -> bool {
    c.env.iter().flatten().any(|env| {
        if env.value.as_deref().is_some_and(|v| !v.is_empty()) || EXCLUDED_ENVS.contains(&env.name.as_str()) {
            return false;
        }
        let Some(field_ref) = env.value_from.as_ref().and_then(|v| v.field_ref.as_ref()) else {
            return false;
        };
        split_subscripted_path(&field_ref.field_path) == Some((path, key))
    })
}

/// k8s `fieldpath.SplitMaybeSubscriptedPath`: `metadata.labels['k']` → `("metadata.labels", "k")`;
/// splits at the FIRST `['`, so `metadata.annotations['a['b']` → `("metadata.annotations",
/// "a['b")`.
pub fn split_subscripted_path(field_path: &str) -> Option<(&str, &str)> {
    let inner = field_path.strip_suffix("']")?;
    let (path, subscript) = inner.split_once("['")?;
    (!path.is_empty()).then_some((path, subscript))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(name: &str, path: &str) -> Value {
        json!({"name": name, "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}}})
    }

    #[test]
    fn reference_rules() {
        let mut literal = env("LIT", "metadata.labels['lit']");
        literal["value"] = json!("x");
        let mut empty_literal = env("EMPTY", "metadata.labels['e']");
        empty_literal["value"] = json!("");
        let c: Container = serde_json::from_value(json!({"name": "c", "env": [
            env("A", "metadata.labels['a']"), env("B", "metadata.annotations['x['y']"),
            env("SIDECARSET_VERSION", "metadata.labels['s1']"), env("SIDECARSET_VERSION_ALT", "metadata.labels['s2']"),
            env("C", "['c']"), env("DQ", "metadata.labels[\"dq\"]"), env("W", "metadata.labels"), literal, empty_literal,
        ]}))
        .unwrap();
        #[rustfmt::skip]
        let cases = [
            ("metadata.labels", "a", true), ("metadata.annotations", "x['y", true), ("metadata.labels", "e", true),
            ("metadata.labels", "s1", false), ("metadata.labels", "s2", false), ("", "c", false),
            ("metadata.labels", "dq", false), ("metadata.labels", "", false), ("metadata.labels", "lit", false),
            ("metadata.annotations", "a", false), ("metadata.labels", "b", false),
        ];
        for (path, key, want) in cases {
            assert_eq!(references_metadata(&c, path, key), want, "{path}['{key}']");
        }
    }

    #[test]
    fn extraction_table() {
        let containers: Vec<Container> = serde_json::from_value(json!([
            {"name": "a", "env": [env("K", "metadata.labels['k']"), env("S", "metadata.annotations['x/y~z']")]},
            {"name": "b", "env": [env("K", "metadata.labels['k']")]},
            {"name": "c"}
        ]))
        .unwrap();
        #[rustfmt::skip]
        let cases: Vec<(&str, PatchOp, Value)> = vec![
            ("label read by two containers", PatchOp::replace("/metadata/labels/k", json!("v2")),
             json!({"a": {"labels": {"k": "v2"}}, "b": {"labels": {"k": "v2"}}})),
            ("added annotation, key unescaped", PatchOp::add("/metadata/annotations/x~1y~0z", json!("1")),
             json!({"a": {"annotations": {"x/y~z": "1"}}})),
            ("removal is not extracted", PatchOp::remove("/metadata/labels/k"), json!({})),
            ("whole map is not extracted", PatchOp::add("/metadata/labels", json!({"k": "v"})), json!({})),
            ("unreferenced key", PatchOp::replace("/metadata/labels/other", json!("1")), json!({})),
            ("other metadata field", PatchOp::add("/metadata/finalizers/0", json!("k")), json!({})),
            ("non-string value", PatchOp::replace("/metadata/labels/k", json!(1)), json!({})),
        ];
        for (name, op, want) in cases {
            let meta = |v: &str| ObjectMeta {
                labels: Some(BTreeMap::from([("k".to_owned(), v.to_owned()), ("o".to_owned(), "1".to_owned())])),
                annotations: Some(BTreeMap::from([("x/y~z".to_owned(), v.to_owned())])),
                ..Default::default()
            };
            let (mut old, mut new) = (meta("old"), meta("new"));
            let refs = extract_env_references(std::slice::from_ref(&op), &containers, &mut old, &mut new);
            assert_eq!(serde_json::to_value(&refs).unwrap(), want, "{name}");
            // Whatever was extracted is gone from both copies; everything else is untouched.
            for m in [&old, &new] {
                let extracted = |kind: &str, key: &str| {
                    refs.values().any(|r| {
                        let map = if kind == "labels" { &r.labels } else { &r.annotations };
                        map.as_ref().is_some_and(|m| m.contains_key(key))
                    })
                };
                let has_k = m.labels.as_ref().is_some_and(|l| l.contains_key("k"));
                let has_xyz = m.annotations.as_ref().is_some_and(|a| a.contains_key("x/y~z"));
                assert_eq!(has_k, !extracted("labels", "k"), "{name}: label k");
                assert_eq!(has_xyz, !extracted("annotations", "x/y~z"), "{name}: annotation");
                assert!(m.labels.as_ref().is_some_and(|l| l.contains_key("o")), "{name}: label o");
            }
        }
    }
}
