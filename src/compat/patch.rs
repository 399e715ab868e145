//! How a mutation becomes an RFC 6902 patch (spec §2.0, §11.7).
//!
//! Handlers default a typed copy of the request object and re-serialise it. Typed structs only
//! know the fields of our API version, so the re-serialised object is first laid *over* the raw
//! request object ([`overlay`]): every field the typed object carries wins, every field it does
//! not know (a newer Kubernetes field, an annotation-like extension) is kept from the request.
//! The patch is the diff between the raw object and that overlay, so a patch never removes a field
//! the user sent unless a handler asks for it explicitly with [`Overlay::replace`].
//!
//! The patch is `json_patch::diff(raw, &overlay(raw, typed))`, operation for operation; it is
//! computed in one pass without building the overlay ([`overlay_diff`]), and from the typed
//! object without serialising it first ([`overlay_patch_typed`], issue 16). The tests below hold
//! both to the two-step form.

mod ops;
pub(crate) mod typed;

use typed::Fallback;

pub(crate) use ops::{Ops, push_index, push_token};

use json_patch::Patch;
use serde::Serialize;
use serde_json::{Map, Value};

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
    typed: &'a Value,
    /// Top-level fields set by [`Overlay::replace`], in the order set.
    replaced: Vec<(String, Option<Value>)>,
}

impl<'a> Overlay<'a> {
    /// Lays the re-serialised typed object over the raw request object (both borrowed).
    pub fn new(raw: &'a Value, typed: &'a Value) -> Self {
        Overlay { raw, typed, replaced: Vec::new() }
    }

    /// Sets a top-level field to exactly `value` (or removes it with `None`), discarding whatever
    /// the request had there: used where kruise deliberately resets a field (e.g. ASTS `status`).
    #[must_use]
    pub fn replace(mut self, key: &str, value: Option<Value>) -> Self {
        self.replaced.push((key.to_string(), value));
        self
    }

    /// The patch from the raw object to the mutated one; `None` when nothing changed.
    pub fn patch(&self) -> Option<Patch> {
        if self.replaced.is_empty() {
            let mut ops = Ops::default();
            overlay_diff(self.raw, self.typed, &mut String::new(), &mut ops);
            return ops.finish();
        }
        let patch = json_patch::diff(self.raw, &self.target());
        if patch.0.is_empty() { None } else { Some(patch) }
    }

    /// The mutated object.
    pub fn into_target(self) -> Value {
        self.target()
    }

    fn target(&self) -> Value {
        let mut target = overlay(self.raw, self.typed);
        if let Value::Object(map) = &mut target {
            for (key, value) in &self.replaced {
                match value {
                    Some(v) => {
                        map.insert(key.clone(), v.clone());
                    }
                    None => {
                        map.remove(key);
                    }
                }
            }
        }
        target
    }
}

/// `Overlay::new(raw, &serde_json::to_value(typed)?).patch()` without serialising `typed` (a
/// struct whose fields are the top-level fields it sets, such as [`SpecOf`]): the typed value
/// is walked alongside `raw` ([`typed`]), and built only where the walk cannot go.
pub fn overlay_patch_typed<T: Serialize + ?Sized>(raw: &Value, typed: &T) -> Result<Option<Patch>, serde_json::Error> {
    let mut ops = Ops::default();
    if typed::overlay_diff_typed(raw, typed, &mut String::new(), &mut ops, overlay_diff).is_ok() && !ops.failed {
        return Ok(ops.finish());
    }
    let built = serde_json::to_value(typed)?;
    Ok(Overlay::new(raw, &built).patch())
}

/// `{"spec": <T>}`: the typed object of a handler that only defaults the spec.
pub struct SpecOf<'a, T>(pub &'a T);

impl<T: Serialize> Serialize for SpecOf<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("SpecOf", 1)?;
        s.serialize_field("spec", self.0)?;
        s.end()
    }
}

/// `json_patch::diff(raw, &overlay(raw, typed))` at `path`, appended to `ops`, without building
/// the overlay ([`overlay_diff_by`] with `json_patch`'s own diff).
pub(crate) fn overlay_diff(raw: &Value, typed: &Value, path: &mut String, ops: &mut Ops) {
    overlay_diff_by(raw, typed, path, ops, diff);
}

/// `diff(raw, &overlay(raw, typed))` at `path` without building the overlay, for a `diff` that
/// compares objects key by key (writing nothing for equal values) and arrays of equal length
/// index by index: objects compare only the keys `typed` carries (the raw-only keys are the same
/// on both sides), in key order; arrays of equal length element by element; anything else is
/// `typed` itself, handed to `diff`. The pod patch uses it with its own list diff.
pub(crate) fn overlay_diff_by(raw: &Value, typed: &Value, path: &mut String, ops: &mut Ops, diff: Fallback) {
    match (raw, typed) {
        (Value::Object(r), Value::Object(t)) => {
            let len = path.len();
            for (key, tv) in t {
                push_token(path, key);
                match r.get(key) {
                    Some(rv) => overlay_diff_by(rv, tv, path, ops, diff),
                    None => ops.add(path, tv.clone()),
                }
                path.truncate(len);
            }
        }
        (Value::Array(r), Value::Array(t)) if r.len() == t.len() => {
            let len = path.len();
            for (i, (rv, tv)) in r.iter().zip(t).enumerate() {
                push_index(path, i);
                overlay_diff_by(rv, tv, path, ops, diff);
                path.truncate(len);
            }
        }
        _ => diff(raw, typed, path, ops),
    }
}

/// `json_patch::diff` (json-patch 4.2 `diff_impl`) at `path`, appended to `ops`: objects add
/// or recurse in `right`'s key order, then remove `left`'s extra keys; arrays index by index,
/// the extra elements of a longer `left` removed at the shifted index (so each at
/// `right.len()`), those of a longer `right` added.
fn diff(left: &Value, right: &Value, path: &mut String, ops: &mut Ops) {
    let len = path.len();
    match (left, right) {
        (Value::Object(l), Value::Object(r)) => diff_objects(l, r, path, ops),
        (Value::Array(l), Value::Array(r)) => {
            let mut shift = 0;
            for idx in 0..l.len().max(r.len()) {
                push_index(path, idx - shift);
                match (l.get(idx), r.get(idx)) {
                    (Some(lv), Some(rv)) => diff(lv, rv, path, ops),
                    (Some(_), None) => {
                        shift += 1;
                        ops.remove(path);
                    }
                    (None, Some(rv)) => ops.add(path, rv.clone()),
                    (None, None) => {}
                }
                path.truncate(len);
            }
        }
        _ if left == right => {}
        _ => ops.replace(path, right.clone()),
    }
}

fn diff_objects(l: &Map<String, Value>, r: &Map<String, Value>, path: &mut String, ops: &mut Ops) {
    let len = path.len();
    for (key, rv) in r {
        push_token(path, key);
        match l.get(key) {
            Some(lv) => diff(lv, rv, path, ops),
            None => ops.add(path, rv.clone()),
        }
        path.truncate(len);
    }
    for key in l.keys() {
        if !r.contains_key(key) {
            push_token(path, key);
            ops.remove(path);
            path.truncate(len);
        }
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

    /// `json_patch::diff(raw, &overlay(raw, typed))`, the two-step form.
    fn two_steps(raw: &Value, typed: &Value) -> Option<Patch> {
        let patch = json_patch::diff(raw, &overlay(raw, typed));
        (!patch.0.is_empty()).then_some(patch)
    }

    fn text(p: &Option<Patch>) -> String {
        serde_json::to_string(p).unwrap()
    }

    /// The one-pass patch is the two-step one operation for operation, on the shapes where
    /// `json_patch` has its own order: removes after adds, lists that shrink (every extra element
    /// removed at the same shifted index) or grow, and values of another shape.
    #[test]
    fn one_pass_patch_is_json_patch_diff_of_the_overlay() {
        let cases = [
            (json!({"a": 1, "b": {"c": [1, 2, 3], "d": null}}), json!({"b": {"c": [1]}, "z": [{"x": 1}]})),
            (json!({"l": [1, 2, 3, 4]}), json!({"l": [{"a": 1}]})),
            (json!({"l": [{"k": 1, "j": 2}]}), json!({"l": [{"k": 2}, {"n": 1}, 3]})),
            (json!({"l": [{"k": 1, "j": 2}, 5]}), json!({"l": [{"j": 3}, [1]]})),
            (json!({"o": {"k": 1}}), json!({"o": [1]})),
            (json!({"o": "s"}), json!({"o": {"k": {"j": 1}}})),
            (json!({"a/b": {"~": 1}}), json!({"a/b": {"~": 2, "/": 3}})),
            (json!([1, 2]), json!({"a": 1})),
            (json!(null), json!({"spec": {}})),
            (json!({"spec": {"x": 1}}), json!({"spec": {"x": 1}})),
            (json!({"n": 1.0}), json!({"n": 1})),
        ];
        for (raw, typed) in cases {
            let got = Overlay::new(&raw, &typed).patch();
            assert_eq!(text(&got), text(&two_steps(&raw, &typed)), "raw {raw} typed {typed}");
            assert_eq!(applied(&raw, &got), overlay(&raw, &typed), "raw {raw} typed {typed}");
        }
    }

    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Spec {
        replicas: Option<i32>,
        labels: std::collections::BTreeMap<String, String>,
        list: Vec<Item>,
        #[serde(skip_serializing_if = "Option::is_none")]
        strategy: Option<Item>,
    }

    #[derive(serde::Serialize)]
    struct Item {
        name: String,
        value: Option<u8>,
    }

    /// `overlay_patch_typed` of `{"spec": typed}` is the patch of the serialised spec, over
    /// request specs that agree, differ, lack fields, or are of another shape.
    #[test]
    fn typed_patch_is_the_patch_of_the_serialised_object() {
        let spec = Spec {
            replicas: Some(2),
            labels: [("app".to_string(), "a".to_string()), ("a/b".to_string(), "~".to_string())].into(),
            list: vec![Item { name: "x".into(), value: Some(1) }, Item { name: "y".into(), value: None }],
            strategy: Some(Item { name: "s".into(), value: None }),
        };
        let raws = [
            json!({"metadata": {"name": "c"}, "spec": {"replicas": 2, "labels": {"app": "a", "a/b": "~"},
                "list": [{"name": "x", "value": 1}, {"name": "y", "value": null}], "strategy": {"name": "s", "value": null}}}),
            json!({"metadata": {"name": "c"}, "spec": {"replicas": 1, "labels": {"app": "b", "other": "o"},
                "list": [{"name": "x", "extra": true}], "unknown": {"k": 1}}}),
            json!({"spec": {"list": [{"name": "x"}, {"name": "y"}, {"name": "z"}], "strategy": "s", "labels": null}}),
            json!({"spec": null, "status": {"replicas": 3}}),
            json!({"metadata": {}}),
            json!({"spec": []}),
            json!("not an object"),
        ];
        for raw in &raws {
            let built = json!({"spec": serde_json::to_value(&spec).unwrap()});
            let want = Overlay::new(raw, &built).patch();
            assert_eq!(text(&overlay_patch_typed(raw, &SpecOf(&spec)).unwrap()), text(&want), "{raw}");
            assert_eq!(text(&want), text(&two_steps(raw, &built)), "{raw}");
        }
        assert!(overlay_patch_typed(&raws[0], &SpecOf(&spec)).unwrap().is_none(), "nothing to change");
    }

    #[test]
    fn replace_resets_a_field() {
        let raw = json!({"spec": {}, "status": {"replicas": 3, "unknown": 1}});
        let (spec, empty) = (json!({"spec": {}}), json!({}));
        let o = Overlay::new(&raw, &spec).replace("status", Some(json!({"replicas": 0})));
        let p = o.patch();
        assert_eq!(applied(&raw, &p), json!({"spec": {}, "status": {"replicas": 0}}));
        let o = Overlay::new(&raw, &empty).replace("status", None);
        assert_eq!(applied(&raw, &o.patch()), json!({"spec": {}}));
    }
}
