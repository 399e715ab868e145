//! JSON normalisation used before comparing workload specs (spec §11.8, §10.4): two encodings of
//! the same object must compare equal, or a kubectl merge patch that dropped an empty field would
//! look like a change. Go's encoder omits empty slices and maps (`omitempty`) while k8s-openapi
//! writes `Some(vec![])` as `[]`, so both sides are brought to Go's shape first.

use serde_json::Value;

/// Map-valued fields of a pod template that Go omits when empty.
const MAP_FIELDS: &[&str] = &[
    "labels",
    "annotations",
    "nodeSelector",
    "limits",
    "requests",
    "overhead",
    "matchLabels",
    "volumeAttributes",
    "options",
];

/// Go `omitempty` on a serialised pod template (or pod spec): `null` members, empty arrays
/// (except `containers`, which Go always writes) and empty maps of [`MAP_FIELDS`] are removed,
/// recursively. Empty STRUCTS are kept (`securityContext: {}`, `emptyDir: {}` mean something).
pub fn omit_empty(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for v in map.values_mut() {
                omit_empty(v);
            }
            map.retain(|k, v| match v {
                Value::Null => false,
                Value::Array(a) => !a.is_empty() || k == "containers",
                Value::Object(o) => !o.is_empty() || !MAP_FIELDS.contains(&k.as_str()),
                _ => true,
            });
        }
        Value::Array(items) => items.iter_mut().for_each(omit_empty),
        _ => {}
    }
}

/// Go's `apiequality.Semantic.DeepEqual` as far as JSON can tell: nil and empty slices and maps
/// are equal (so are absent and empty objects, which reflect would tell apart for pointers).
pub fn semantic_eq(a: &Value, b: &Value) -> bool {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.values_mut().for_each(strip);
                map.retain(|_, v| !is_empty(v));
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    fn is_empty(v: &Value) -> bool {
        match v {
            Value::Null => true,
            Value::Array(a) => a.is_empty(),
            Value::Object(o) => o.is_empty(),
            _ => false,
        }
    }
    let (mut a, mut b) = (a.clone(), b.clone());
    strip(&mut a);
    strip(&mut b);
    a == b || (is_empty(&a) && is_empty(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn omit_empty_table() {
        #[rustfmt::skip]
        let cases: Vec<(Value, Value)> = vec![
            (json!({"containers": [{"name": "a", "env": [], "args": [], "resources": {"limits": {}}}]}),
             json!({"containers": [{"name": "a", "resources": {}}]})),
            (json!({"containers": [], "volumes": []}), json!({"containers": []})),
            (json!({"securityContext": {}, "nodeSelector": {}, "x": null}), json!({"securityContext": {}})),
            (json!({"volumes": [{"name": "v", "emptyDir": {}}]}), json!({"volumes": [{"name": "v", "emptyDir": {}}]})),
            (json!({"metadata": {"labels": {}, "annotations": {"a": "b"}}}), json!({"metadata": {"annotations": {"a": "b"}}})),
        ];
        for (mut input, want) in cases {
            omit_empty(&mut input);
            assert_eq!(input, want);
        }
    }

    #[test]
    fn semantic_eq_table() {
        #[rustfmt::skip]
        let cases: Vec<(Value, Value, bool)> = vec![
            (json!({"selector": {"matchLabels": {"a": "b"}}}), json!({"selector": {"matchLabels": {"a": "b"}, "matchExpressions": []}}), true),
            (json!({"selector": {"matchLabels": {"a": "b"}}}), json!({"selector": {"matchLabels": {"a": "c"}}}), false),
            (json!({}), json!({"serviceName": null}), true),
            (json!({"serviceName": "a"}), json!({"serviceName": "b"}), false),
            (json!(null), json!({}), true),
        ];
        for (a, b, want) in cases {
            assert_eq!(semantic_eq(&a, &b), want, "{a} vs {b}");
        }
    }
}
