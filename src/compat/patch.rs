//! How a mutation becomes an RFC 6902 patch (spec §2.0, §11.7).
//!
//! Handlers default a typed copy of the request object and re-serialise it. Typed structs only
//! know the fields of our API version, so the re-serialised object is first laid *over* the raw
//! request object ([`overlay`]): every field the typed object carries wins, every field it does
//! not know (a newer Kubernetes field, an annotation-like extension) is kept from the request.
//! The patch is the diff between the raw object and that overlay, so a patch never removes a field
//! the user sent unless a handler asks for it explicitly with [`Overlay::replace`].

use json_patch::Patch;
use serde_json::Value;

/// Lays `typed` over `raw`: objects merge key by key (typed wins, raw-only keys stay), arrays of
/// equal length merge element by element, anything else is taken from `typed`.
pub fn overlay(raw: &Value, typed: &Value) -> Value {
    match (raw, typed) {
        (Value::Object(r), Value::Object(t)) => {
            // Each raw value is copied or merged once (not copied, then overwritten).
            let mut out: serde_json::Map<String, Value> = r
                .iter()
                .map(|(key, rv)| {
                    let merged = match t.get(key) {
                        Some(tv) => overlay(rv, tv),
                        None => rv.clone(),
                    };
                    (key.clone(), merged)
                })
                .collect();
            for (key, tv) in t {
                if !r.contains_key(key) {
                    out.insert(key.clone(), tv.clone());
                }
            }
            Value::Object(out)
        }
        (Value::Array(r), Value::Array(t)) if r.len() == t.len() => {
            Value::Array(r.iter().zip(t).map(|(rv, tv)| overlay(rv, tv)).collect())
        }
        _ => typed.clone(),
    }
}

/// A mutation of a raw object, built from typed values.
#[derive(Debug, Clone)]
pub struct Overlay<'a> {
    raw: &'a Value,
    target: Value,
}

impl<'a> Overlay<'a> {
    /// Lays the re-serialised typed object over the raw request object (borrowed, not copied).
    pub fn new(raw: &'a Value, typed: &Value) -> Self {
        Overlay { raw, target: overlay(raw, typed) }
    }

    /// Sets a top-level field to exactly `value` (or removes it with `None`), discarding whatever
    /// the request had there: used where kruise deliberately resets a field (e.g. ASTS `status`).
    #[must_use]
    pub fn replace(mut self, key: &str, value: Option<Value>) -> Self {
        if let Value::Object(map) = &mut self.target {
            match value {
                Some(v) => {
                    map.insert(key.to_string(), v);
                }
                None => {
                    map.remove(key);
                }
            }
        }
        self
    }

    /// The patch from the raw object to the mutated one; `None` when nothing changed.
    pub fn patch(&self) -> Option<Patch> {
        let patch = json_patch::diff(self.raw, &self.target);
        if patch.0.is_empty() { None } else { Some(patch) }
    }

    /// The mutated object.
    pub fn into_target(self) -> Value {
        self.target
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn applied(raw: &Value, patch: &Option<Patch>) -> Value {
        let mut out = raw.clone();
        if let Some(p) = patch {
            json_patch::patch(&mut out, p).expect("patch applies");
        }
        out
    }

    #[test]
    fn overlay_keeps_unknown_fields_and_applies_typed_values() {
        let cases = [
            // (raw, typed, expected)
            (json!({"a": 1, "unknown": {"x": 1}}), json!({"a": 2}), json!({"a": 2, "unknown": {"x": 1}})),
            (
                json!({"list": [{"n": "a", "new": 1}]}),
                json!({"list": [{"n": "a", "d": 1}]}),
                json!({"list": [{"n": "a", "new": 1, "d": 1}]}),
            ),
            (json!({"list": [1, 2]}), json!({"list": [1]}), json!({"list": [1]})),
            (json!({"s": null}), json!({"s": {"t": "x"}}), json!({"s": {"t": "x"}})),
            (json!({"m": {"creationTimestamp": null}}), json!({"m": {}}), json!({"m": {"creationTimestamp": null}})),
        ];
        for (raw, typed, want) in cases {
            assert_eq!(overlay(&raw, &typed), want, "raw {raw} typed {typed}");
        }
    }

    #[test]
    fn patch_applies_and_escapes_keys() {
        let raw = json!({"metadata": {"annotations": {"a/b~c": "1"}}, "spec": {"x": 1}});
        let typed = json!({"metadata": {"annotations": {"a/b~c": "2", "k8s.io/x": "y"}}, "spec": {"x": 1, "y": [1]}});
        let o = Overlay::new(&raw, &typed);
        let p = o.patch();
        assert!(p.is_some());
        assert_eq!(applied(&raw, &p), o.into_target());
    }

    #[test]
    fn no_change_gives_no_patch() {
        let raw = json!({"spec": {"x": 1}, "extra": true});
        assert!(Overlay::new(&raw, &json!({"spec": {"x": 1}})).patch().is_none());
    }

    #[test]
    fn replace_resets_a_field() {
        let raw = json!({"spec": {}, "status": {"replicas": 3, "unknown": 1}});
        let o = Overlay::new(&raw, &json!({"spec": {}})).replace("status", Some(json!({"replicas": 0})));
        let p = o.patch();
        assert_eq!(applied(&raw, &p), json!({"spec": {}, "status": {"replicas": 0}}));
        let o = Overlay::new(&raw, &json!({})).replace("status", None);
        assert_eq!(applied(&raw, &o.patch()), json!({"spec": {}}));
    }
}
