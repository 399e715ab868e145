//! The pod-metadata patch of an in-place update (spec §3.2 step 5, "metaDataPatch"): decides which
//! strategic-merge patch carries a template's label/annotation/finalizer changes onto an existing
//! pod. Kruise computes it with `strategicpatch.CreateTwoWayMergePatch(Pod{old meta}, Pod{new
//! meta}, Pod{})`; this module reproduces that for `ObjectMeta`, field by field, with the Pod
//! schema's patch strategies:
//! - `labels`, `annotations`: changed/added keys carry the new value, removed keys carry `null`;
//! - `finalizers` (merge list of strings): additions as the list, removals in
//!   `$deleteFromPrimitiveList/finalizers`, and the new order in `$setElementOrder/finalizers`
//!   whenever anything was removed or the list changed;
//! - `ownerReferences` (merge list keyed by `uid`): changed/added entries,
//!   `{"$patch":"delete","uid":…}` for removed ones, and `$setElementOrder/ownerReferences`;
//! - every other field (name, namespace, managedFields, …) is replaced whole, or set to `null` when
//!   gone.
//!
//! The result is `{"metadata":{…}}`, or `{}` when nothing differs (kruise then still stores the
//! `{}`). Keys come out sorted, as Go's encoder writes them, so the bytes match kruise's.
//!
//! Deliberate deviation: when a template drops `labels`, `annotations`, `finalizers` or
//! `ownerReferences` ENTIRELY, Go's patch says `"labels": null`, which on the pod deletes every
//! label — including the revision-hash and lifecycle labels the controller writes. Here the field
//! is diffed against an empty one instead, so only the template's own keys/items are removed.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;

/// Why no patch could be built (kruise then refuses the in-place update).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaPatchError(pub String);

impl fmt::Display for MetaPatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot build the pod metadata patch: {}", self.0)
    }
}

impl std::error::Error for MetaPatchError {}

const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

enum Strategy {
    /// map[string]string diffed key by key
    StringMap,
    /// `patchStrategy:"merge"` list of scalars
    MergeScalars,
    /// `patchStrategy:"merge"` list of objects with this merge key
    MergeObjects(&'static str),
    /// anything else: replaced whole when not equal
    Atomic,
}

fn strategy(field: &str) -> Strategy {
    match field {
        "labels" | "annotations" => Strategy::StringMap,
        "finalizers" => Strategy::MergeScalars,
        "ownerReferences" => Strategy::MergeObjects("uid"),
        _ => Strategy::Atomic,
    }
}

/// The strategic-merge patch turning a pod whose metadata came from `old` into one matching `new`:
/// `{"metadata":{…}}`, or `{}` when they agree.
pub fn metadata_patch(old: &ObjectMeta, new: &ObjectMeta) -> Result<Value, MetaPatchError> {
    let original = meta_fields(old)?;
    let modified = meta_fields(new)?;
    let mut patch = BTreeMap::new();
    let mut keys: Vec<&String> = original.keys().chain(modified.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        diff_field(key, original.get(key), modified.get(key), &mut patch)?;
    }
    let mut out = BTreeMap::new();
    if !patch.is_empty() {
        out.insert("metadata".to_owned(), sorted_object(patch));
    }
    Ok(sorted_object(out))
}

/// `ObjectMeta` as Go's encoder writes it: fields are `omitempty` (creationTimestamp is written as
/// `null`, which the diff treats like absent), so empty values are dropped.
fn meta_fields(meta: &ObjectMeta) -> Result<Map<String, Value>, MetaPatchError> {
    match serde_json::to_value(meta) {
        Ok(Value::Object(m)) => Ok(m.into_iter().filter(|(k, v)| !is_go_omitted(k, v)).collect()),
        Ok(other) => Err(MetaPatchError(format!("metadata serialised as {other}"))),
        Err(e) => Err(MetaPatchError(e.to_string())),
    }
}

/// Whether Go's encoder leaves this `ObjectMeta` field out: empty strings, maps and lists, a zero
/// `generation` (the only plain number; `deletionGracePeriodSeconds` is a pointer and is kept at 0).
fn is_go_omitted(key: &str, v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Number(n) => key == "generation" && n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        Value::Bool(_) => false,
    }
}

/// Builds a JSON object with keys inserted in sorted order (so the output is sorted even when
/// serde_json's `preserve_order` feature is on somewhere in the build).
fn sorted_object(m: BTreeMap<String, Value>) -> Value {
    let mut out = Map::new();
    for (k, v) in m {
        out.insert(k, v);
    }
    Value::Object(out)
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

fn diff_field(
    key: &str,
    original: Option<&Value>,
    modified: Option<&Value>,
    patch: &mut BTreeMap<String, Value>,
) -> Result<(), MetaPatchError> {
    match strategy(key) {
        Strategy::StringMap => {
            let empty = empty_object();
            let (Value::Object(o), Value::Object(m)) = (original.unwrap_or(&empty), modified.unwrap_or(&empty)) else {
                return diff_atomic(key, original, modified, patch);
            };
            let sub = diff_plain_maps(o, m);
            if !sub.is_empty() {
                patch.insert(key.to_owned(), sorted_object(sub));
            }
            Ok(())
        }
        Strategy::MergeScalars => {
            let o = list_items(original, key)?;
            let m = list_items(modified, key)?;
            let (add, delete, order) = diff_scalar_lists(&o, &m);
            if !add.is_empty() {
                patch.insert(key.to_owned(), Value::Array(add));
            }
            if !delete.is_empty() {
                patch.insert(format!("{DELETE_FROM_PRIMITIVE_LIST}/{key}"), Value::Array(delete));
            }
            if !order.is_empty() {
                patch.insert(format!("{SET_ELEMENT_ORDER}/{key}"), Value::Array(order));
            }
            Ok(())
        }
        Strategy::MergeObjects(merge_key) => {
            let o = list_items(original, key)?;
            let m = list_items(modified, key)?;
            let (list, order) = diff_object_lists(&o, &m, merge_key)?;
            if !list.is_empty() {
                patch.insert(key.to_owned(), Value::Array(list));
            }
            if !order.is_empty() {
                patch.insert(format!("{SET_ELEMENT_ORDER}/{key}"), Value::Array(order));
            }
            Ok(())
        }
        Strategy::Atomic => diff_atomic(key, original, modified, patch),
    }
}

fn list_items(v: Option<&Value>, key: &str) -> Result<Vec<Value>, MetaPatchError> {
    match v {
        None => Ok(Vec::new()),
        Some(Value::Array(a)) => Ok(a.clone()),
        Some(other) => Err(MetaPatchError(format!("{key} is not a list: {other}"))),
    }
}

fn diff_atomic(
    key: &str,
    original: Option<&Value>,
    modified: Option<&Value>,
    patch: &mut BTreeMap<String, Value>,
) -> Result<(), MetaPatchError> {
    match (original, modified) {
        (_, None) if original.is_some() => {
            patch.insert(key.to_owned(), Value::Null);
        }
        (Some(o), Some(m)) if o == m => {}
        (_, Some(m)) => {
            patch.insert(key.to_owned(), m.clone());
        }
        _ => {}
    }
    Ok(())
}

/// Go's `diffMaps` for a struct or map without list strategies below it: added or changed keys
/// carry the new value (nested objects are diffed recursively), removed keys carry `null`.
fn diff_plain_maps(original: &Map<String, Value>, modified: &Map<String, Value>) -> BTreeMap<String, Value> {
    let mut patch = BTreeMap::new();
    for (key, m) in modified {
        match (original.get(key), m) {
            (None, _) => {
                patch.insert(key.clone(), m.clone());
            }
            (Some(Value::Object(o)), Value::Object(mm)) => {
                let sub = diff_plain_maps(o, mm);
                if !sub.is_empty() {
                    patch.insert(key.clone(), sorted_object(sub));
                }
            }
            (Some(o), _) if o != m => {
                patch.insert(key.clone(), m.clone());
            }
            _ => {}
        }
    }
    for key in original.keys() {
        if !modified.contains_key(key) {
            patch.insert(key.clone(), Value::Null);
        }
    }
    patch
}

/// Go's `fmt.Sprintf("%v", x)` for decoded JSON scalars; lists are sorted and compared by this
/// form.
fn go_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".to_owned(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e21 => format!("{f:.0}"),
            Some(f) => f.to_string(),
            None => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// `diffLists` for a merge list of scalars: (additions in new-list order, deletions,
/// set-element-order).
fn diff_scalar_lists(original: &[Value], modified: &[Value]) -> (Vec<Value>, Vec<Value>, Vec<Value>) {
    if original.is_empty() {
        return (modified.to_vec(), Vec::new(), Vec::new());
    }
    let mut o: Vec<&Value> = original.iter().collect();
    let mut m: Vec<&Value> = modified.iter().collect();
    o.sort_by_key(|v| go_string(v));
    m.sort_by_key(|v| go_string(v));
    let (mut i, mut j) = (0, 0);
    let (mut add, mut delete) = (Vec::new(), Vec::new());
    while i < o.len() || j < m.len() {
        let (os, ms) = (o.get(i).map(|v| go_string(v)), m.get(j).map(|v| go_string(v)));
        match (os, ms) {
            (Some(a), Some(b)) if a == b => {
                i += 1;
                j += 1;
            }
            (None, Some(_)) => {
                add.push(m[j].clone());
                j += 1;
            }
            (Some(a), Some(b)) if a > b => {
                add.push(m[j].clone());
                j += 1;
            }
            _ => {
                delete.push(o[i].clone());
                i += 1;
            }
        }
    }
    // normalizeSliceOrder: additions follow their order in the new list (stable sort).
    add.sort_by_key(|v| modified.iter().position(|x| x == v).unwrap_or(usize::MAX));
    let delete = deduplicate_scalars(delete);
    let order = if !delete.is_empty() || original != modified { modified.to_vec() } else { Vec::new() };
    (add, delete, order)
}

/// Go's `deduplicateScalars`, including the way it moves the last element into a duplicate's slot.
fn deduplicate_scalars(mut s: Vec<Value>) -> Vec<Value> {
    let mut i = 0;
    while i + 1 < s.len() {
        let mut j = i + 1;
        while j < s.len() {
            if s[i] == s[j] {
                let last = s.len() - 1;
                s.swap(j, last);
                s.truncate(last);
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    s
}

fn merge_key_of<'a>(item: &'a Value, merge_key: &str) -> Result<&'a Value, MetaPatchError> {
    item.get(merge_key)
        .ok_or_else(|| MetaPatchError(format!("map: {item} does not contain declared merge key: {merge_key}")))
}

/// `diffLists` for a merge list of objects: (patch list with deletions at the end,
/// set-element-order).
fn diff_object_lists(
    original: &[Value],
    modified: &[Value],
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), MetaPatchError> {
    if original.is_empty() {
        return Ok((modified.to_vec(), Vec::new()));
    }
    let keyed = |list: &[Value]| -> Result<Vec<(String, Value)>, MetaPatchError> {
        let mut out = list
            .iter()
            .map(|item| Ok((go_string(merge_key_of(item, merge_key)?), item.clone())))
            .collect::<Result<Vec<_>, MetaPatchError>>()?;
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    };
    let (o, m) = (keyed(original)?, keyed(modified)?);
    let (mut i, mut j) = (0, 0);
    let (mut patch, mut deletions) = (Vec::new(), Vec::new());
    while i < o.len() || j < m.len() {
        match (o.get(i), m.get(j)) {
            (Some((ok, ov)), Some((mk, mv))) if ok == mk => {
                if let (Value::Object(oo), Value::Object(mm)) = (ov, mv) {
                    let mut sub = diff_plain_maps(oo, mm);
                    if !sub.is_empty() {
                        sub.insert(merge_key.to_owned(), merge_key_of(mv, merge_key)?.clone());
                        patch.push(sorted_object(sub));
                    }
                } else {
                    return Err(MetaPatchError(format!("list items are not objects: {ov}, {mv}")));
                }
                i += 1;
                j += 1;
            }
            (None, Some((_, mv))) => {
                patch.push(mv.clone());
                j += 1;
            }
            (Some((ok, _)), Some((mk, mv))) if ok > mk => {
                patch.push(mv.clone());
                j += 1;
            }
            (Some((_, ov)), _) => {
                let mut d = BTreeMap::new();
                d.insert("$patch".to_owned(), Value::String("delete".to_owned()));
                d.insert(merge_key.to_owned(), merge_key_of(ov, merge_key)?.clone());
                deletions.push(sorted_object(d));
                i += 1;
            }
            (None, None) => break,
        }
    }
    let position = |v: &Value| {
        let key = v.get(merge_key);
        modified.iter().position(|x| x.get(merge_key) == key).unwrap_or(usize::MAX)
    };
    patch.sort_by_key(position);
    let order_same = original.len() == modified.len()
        && original.iter().zip(modified).all(|(a, b)| a.get(merge_key) == b.get(merge_key));
    patch.extend(deletions);
    let order = if !patch.is_empty() || !order_same {
        modified
            .iter()
            .map(|v| {
                let mut e = BTreeMap::new();
                e.insert(merge_key.to_owned(), v.get(merge_key).cloned().unwrap_or(Value::Null));
                sorted_object(e)
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok((patch, order))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
    use serde_json::json;

    fn meta(v: Value) -> ObjectMeta {
        serde_json::from_value(v).unwrap()
    }

    /// Test-only strategic-merge application for the metadata fields above (maps, merge lists).
    fn apply(old: &ObjectMeta, patch: &Value) -> ObjectMeta {
        let mut doc = serde_json::to_value(old).unwrap();
        let Some(p) = patch.get("metadata").and_then(Value::as_object) else {
            return old.clone();
        };
        let d = doc.as_object_mut().unwrap();
        for (k, v) in p {
            if k.starts_with('$') {
                continue;
            }
            match (strategy(k), v) {
                (_, Value::Null) => {
                    d.remove(k);
                }
                (Strategy::StringMap, Value::Object(changes)) => {
                    let target = d.entry(k.clone()).or_insert_with(empty_object);
                    for (ck, cv) in changes {
                        let t = target.as_object_mut().unwrap();
                        if cv.is_null() {
                            t.remove(ck);
                        } else {
                            t.insert(ck.clone(), cv.clone());
                        }
                    }
                }
                (Strategy::MergeScalars, Value::Array(adds)) => {
                    let list = d.entry(k.clone()).or_insert_with(|| json!([])).as_array_mut().unwrap();
                    for a in adds {
                        if !list.contains(a) {
                            list.push(a.clone());
                        }
                    }
                }
                _ => {
                    d.insert(k.clone(), v.clone());
                }
            }
        }
        for (k, v) in p {
            if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/")
                && let Some(list) = d.get_mut(field).and_then(Value::as_array_mut)
            {
                list.retain(|x| !v.as_array().unwrap().contains(x));
            }
        }
        for (k, v) in p {
            if let Some(field) = k.strip_prefix("$setElementOrder/")
                && let Some(list) = d.get_mut(field).and_then(Value::as_array_mut)
            {
                let order = v.as_array().unwrap();
                list.sort_by_key(|x| order.iter().position(|o| o == x).unwrap_or(usize::MAX));
            }
        }
        d.retain(|k, v| !is_go_omitted(k, v));
        serde_json::from_value(doc).unwrap()
    }

    fn normalised(m: &ObjectMeta) -> Value {
        Value::Object(meta_fields(m).unwrap())
    }

    #[test]
    fn patch_table() {
        // (old metadata, new metadata, expected patch); each patch is also applied back.
        let cases: Vec<(Value, Value, Value)> = vec![
            (json!({}), json!({}), json!({})),
            (json!({"labels": {"k": "v"}}), json!({"labels": {"k": "v"}}), json!({})),
            // kruise's own fixtures (inplace_update_test.go)
            (
                json!({"labels": {"k": "v"}}),
                json!({"labels": {"k": "v", "k1": "v1"}}),
                json!({"metadata": {"labels": {"k1": "v1"}}}),
            ),
            (
                json!({"labels": {"k": "v", "k2": "v2"}, "finalizers": ["fz1", "fz2"]}),
                json!({"labels": {"k": "v", "k1": "v1"}, "finalizers": ["fz2"]}),
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["fz1"], "$setElementOrder/finalizers": ["fz2"],
                                 "labels": {"k1": "v1", "k2": null}}}),
            ),
            // first labels/annotations added: the whole map
            (
                json!({}),
                json!({"labels": {"a": "1"}, "annotations": {"x/y": "z"}}),
                json!({"metadata": {"annotations": {"x/y": "z"}, "labels": {"a": "1"}}}),
            ),
            // annotation value change and removal
            (
                json!({"annotations": {"a": "1", "b": "2"}}),
                json!({"annotations": {"a": "3"}}),
                json!({"metadata": {"annotations": {"a": "3", "b": null}}}),
            ),
            // map dropped entirely: per-key nulls (deviation from Go's `"annotations": null`)
            (
                json!({"annotations": {"a": "1", "b": "2"}}),
                json!({}),
                json!({"metadata": {"annotations": {"a": null, "b": null}}}),
            ),
            // finalizers added to an empty list: the list only
            (json!({}), json!({"finalizers": ["b", "a"]}), json!({"metadata": {"finalizers": ["b", "a"]}})),
            // finalizer appended: addition + new order
            (
                json!({"finalizers": ["b"]}),
                json!({"finalizers": ["b", "a"]}),
                json!({"metadata": {"$setElementOrder/finalizers": ["b", "a"], "finalizers": ["a"]}}),
            ),
            // reorder only
            (
                json!({"finalizers": ["a", "b"]}),
                json!({"finalizers": ["b", "a"]}),
                json!({"metadata": {"$setElementOrder/finalizers": ["b", "a"]}}),
            ),
            // all finalizers dropped: deletion list (deviation from Go's `"finalizers": null`)
            (
                json!({"finalizers": ["z", "a"]}),
                json!({}),
                json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a", "z"]}}),
            ),
            // scalar fields
            (
                json!({"name": "a", "namespace": "ns"}),
                json!({"generateName": "g-", "namespace": "ns"}),
                json!({"metadata": {"generateName": "g-", "name": null}}),
            ),
            // Go omits generation 0 but keeps a pointer-valued 0
            (
                json!({"generation": 0}),
                json!({"deletionGracePeriodSeconds": 0}),
                json!({"metadata": {"deletionGracePeriodSeconds": 0}}),
            ),
        ];
        for (i, (old, new, want)) in cases.into_iter().enumerate() {
            let (old, new) = (meta(old), meta(new));
            let got = metadata_patch(&old, &new).unwrap();
            assert_eq!(got, want, "case {i}");
            assert_eq!(normalised(&apply(&old, &got)), normalised(&new), "case {i}: apply");
        }
    }

    #[test]
    fn bytes_are_sorted_like_go() {
        let old = meta(json!({"labels": {"k": "v", "k2": "v2"}, "finalizers": ["fz1", "fz2"]}));
        let new = meta(json!({"labels": {"k": "v", "k1": "v1"}, "finalizers": ["fz2"]}));
        let got = serde_json::to_string(&metadata_patch(&old, &new).unwrap()).unwrap();
        assert_eq!(
            got,
            r#"{"metadata":{"$deleteFromPrimitiveList/finalizers":["fz1"],"$setElementOrder/finalizers":["fz2"],"labels":{"k1":"v1","k2":null}}}"#
        );
    }

    #[test]
    fn owner_references_merge_by_uid() {
        let owner = |uid: &str, name: &str| OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: name.into(),
            uid: uid.into(),
            ..Default::default()
        };
        let old = ObjectMeta { owner_references: Some(vec![owner("u1", "a"), owner("u2", "b")]), ..Default::default() };
        let new =
            ObjectMeta { owner_references: Some(vec![owner("u3", "c"), owner("u1", "a2")]), ..Default::default() };
        let got = metadata_patch(&old, &new).unwrap();
        assert_eq!(
            got,
            json!({"metadata": {
                "$setElementOrder/ownerReferences": [{"uid": "u3"}, {"uid": "u1"}],
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u3"},
                    {"name": "a2", "uid": "u1"},
                    {"$patch": "delete", "uid": "u2"}
                ]
            }})
        );
        let same = metadata_patch(&old, &old).unwrap();
        assert_eq!(same, json!({}));
    }

    #[test]
    fn scalar_list_helpers_follow_go() {
        let v = |xs: &[&str]| xs.iter().map(|s| json!(s)).collect::<Vec<_>>();
        assert_eq!(deduplicate_scalars(v(&["a", "a", "b", "c"])), v(&["a", "c", "b"]));
        assert_eq!(deduplicate_scalars(v(&["a", "b"])), v(&["a", "b"]));
        let (add, del, order) = diff_scalar_lists(&v(&["a", "a", "c", "d"]), &v(&["e", "c", "b"]));
        assert_eq!((add, del, order), (v(&["e", "b"]), v(&["a", "d"]), v(&["e", "c", "b"])));
        assert_eq!(go_string(&json!(1.0)), "1");
        assert_eq!(go_string(&json!(true)), "true");
    }
}
