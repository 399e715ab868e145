//! The JSON shape Go's encoder gives pod templates, which decides what kruise's diff sees (spec
//! §3.1: revisions hold the template "as serialised by the API codec"; §10.4/§11.8: templates are
//! compared after normalisation). Go never omits struct-valued fields: every template has
//! `metadata` (with `creationTimestamp: null` when unset) and every container a `resources` object.
//! k8s-openapi omits unset optionals instead, which changes the diff: a template gaining its first
//! label becomes `add /metadata` (not in place) instead of `add /metadata/labels` (in place), and
//! containers without nested objects would be diffed as a "simple" array (edit distance) instead of
//! positionally. These functions add exactly those fields back before diffing.

use serde_json::{Map, Value};

/// A serialised `PodTemplateSpec` in Go's shape: `metadata` present with `creationTimestamp`,
/// `spec` present, and [`go_shape_pod_spec`] applied to the spec.
pub fn go_shape_template(template: &mut Value) {
    let Value::Object(t) = template else { return };
    if let Value::Object(m) = t.entry("metadata").or_insert_with(|| Value::Object(Map::new())) {
        m.entry("creationTimestamp").or_insert(Value::Null);
    }
    go_shape_pod_spec(t.entry("spec").or_insert_with(|| Value::Object(Map::new())));
}

/// A serialised `PodSpec` in Go's shape: `containers` present (null when unset) and every
/// container, init container and ephemeral container with a `resources` object.
pub fn go_shape_pod_spec(spec: &mut Value) {
    let Value::Object(s) = spec else { return };
    s.entry("containers").or_insert(Value::Null);
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        if let Some(Value::Array(items)) = s.get_mut(list) {
            for c in items.iter_mut().filter_map(Value::as_object_mut) {
                c.entry("resources").or_insert_with(|| Value::Object(Map::new()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::PodTemplateSpec;
    use serde_json::json;

    #[test]
    fn shape_table() {
        #[rustfmt::skip]
        let cases: Vec<(Value, Value)> = vec![
            (json!({}), json!({"metadata": {"creationTimestamp": null}, "spec": {"containers": null}})),
            (json!({"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}], "initContainers": [{"name": "i"}]}}),
             json!({"metadata": {"labels": {"a": "b"}, "creationTimestamp": null},
                    "spec": {"containers": [{"name": "c", "resources": {}}], "initContainers": [{"name": "i", "resources": {}}]}})),
            (json!({"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"},
                    "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1"}}}], "ephemeralContainers": [{"name": "e"}]}}),
             json!({"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"},
                    "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1"}}}],
                             "ephemeralContainers": [{"name": "e", "resources": {}}]}})),
            (json!(null), json!(null)),
        ];
        for (i, (mut input, want)) in cases.into_iter().enumerate() {
            go_shape_template(&mut input);
            assert_eq!(input, want, "case {i}");
        }
    }

    #[test]
    fn shaped_typed_template_still_decodes() {
        let mut v = serde_json::to_value(PodTemplateSpec::default()).unwrap();
        go_shape_template(&mut v);
        let back: PodTemplateSpec = serde_json::from_value(v).unwrap();
        let empty = PodTemplateSpec { metadata: Some(Default::default()), spec: Some(Default::default()) };
        assert_eq!(back, empty);
    }
}
