//! The JSON patch from the request pod to the injected pod (spec §4.1 "Response", §11.7).
//!
//! The mutated typed pod is laid over the raw request pod (so fields our types do not know
//! survive, see [`crate::compat::patch`]), with the container, init container and volume lists
//! matched by name rather than by index: injection inserts elements, and an index-wise overlay
//! would graft one container's unknown fields onto another. A pod container replaced by a
//! same-named sidecar keeps its request form when it already equals the sidecar once both are
//! defaulted as the apiserver defaults pods — that is what a re-invocation of the webhook sees
//! after the apiserver has defaulted our first patch, and it must yield no patch.
//!
//! [`diff`] writes the patch: inserted list elements become `add` operations at their index
//! (not a cascade of replacements), everything else is compared key by key.

use std::collections::BTreeSet;

use json_patch::Patch;
use k8s_openapi::api::core::v1::{Container, PodSpec};
use serde_json::{Map, Value, json};

use crate::compat::patch::overlay;
use crate::core::defaults::pod::default_pod_spec;
use crate::core::features::FeatureGates;

/// Pod spec lists whose elements are identified by `name`.
const NAMED_LISTS: [&str; 3] = ["containers", "initContainers", "volumes"];

/// The request pod with the mutation applied. `replaced` names the containers injection put
/// into the pod (a same-named request container was replaced, not edited).
pub fn target(raw: &Value, mutated: &Value, replaced: &BTreeSet<String>) -> Value {
    let mut out = overlay(raw, mutated);
    for list in NAMED_LISTS {
        let (Some(raw_list), Some(new_list)) = (raw["spec"][list].as_array(), mutated["spec"][list].as_array()) else {
            continue;
        };
        let merged: Vec<Value> = new_list
            .iter()
            .map(|elem| {
                let name = elem.get("name").and_then(Value::as_str).unwrap_or("");
                match raw_list.iter().find(|r| r.get("name").and_then(Value::as_str) == Some(name)) {
                    None => elem.clone(),
                    Some(r) if list != "volumes" && replaced.contains(name) => {
                        if same_container(r, elem) {
                            r.clone()
                        } else {
                            elem.clone()
                        }
                    }
                    Some(r) => overlay(r, elem),
                }
            })
            .collect();
        out["spec"][list] = Value::Array(merged);
    }
    out
}

/// Whether two containers are equal once defaulted and with empty values dropped.
fn same_container(a: &Value, b: &Value) -> bool {
    match (normalized(a), normalized(b)) {
        (Some(a), Some(b)) => a == b,
        _ => a == b,
    }
}

fn normalized(v: &Value) -> Option<Value> {
    let c: Container = serde_json::from_value(v.clone()).ok()?;
    let mut spec = PodSpec { init_containers: Some(vec![c]), ..Default::default() };
    default_pod_spec(&mut spec, &FeatureGates::default(), "spec").ok()?;
    let c = spec.init_containers?.pop()?;
    let mut v = serde_json::to_value(c).ok()?;
    drop_empty(&mut v);
    Some(v)
}

/// Removes nulls, empty strings, lists and objects (what Go's `omitempty` and our `Option`s
/// disagree about).
fn drop_empty(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.values_mut().for_each(drop_empty);
            m.retain(|_, v| !is_empty(v));
        }
        Value::Array(a) => a.iter_mut().for_each(drop_empty),
        _ => {}
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// The RFC 6902 patch turning `from` into `to`; `None` when they are equal.
pub fn diff(from: &Value, to: &Value) -> Option<Patch> {
    let mut ops = Vec::new();
    diff_into(from, to, &mut String::new(), &mut ops);
    if ops.is_empty() {
        return None;
    }
    serde_json::from_value(Value::Array(ops)).ok()
}

fn diff_into(from: &Value, to: &Value, path: &mut String, ops: &mut Vec<Value>) {
    match (from, to) {
        (Value::Object(a), Value::Object(b)) => diff_objects(a, b, path, ops),
        (Value::Array(a), Value::Array(b)) => {
            if !diff_insertions(a, b, path, ops) {
                diff_indexed(a, b, path, ops);
            }
        }
        _ if from == to => {}
        _ => ops.push(json!({"op": "replace", "path": path.clone(), "value": to})),
    }
}

fn diff_objects(a: &Map<String, Value>, b: &Map<String, Value>, path: &mut String, ops: &mut Vec<Value>) {
    let len = path.len();
    for k in a.keys() {
        if !b.contains_key(k) {
            push_token(path, k);
            ops.push(json!({"op": "remove", "path": path.clone()}));
            path.truncate(len);
        }
    }
    for (k, bv) in b {
        push_token(path, k);
        match a.get(k) {
            Some(av) => diff_into(av, bv, path, ops),
            None => ops.push(json!({"op": "add", "path": path.clone(), "value": bv})),
        }
        path.truncate(len);
    }
}

/// Element by element; extra elements added at the end or removed from the end.
fn diff_indexed(a: &[Value], b: &[Value], path: &mut String, ops: &mut Vec<Value>) {
    let len = path.len();
    for (i, (av, bv)) in a.iter().zip(b).enumerate() {
        path.push_str(&format!("/{i}"));
        diff_into(av, bv, path, ops);
        path.truncate(len);
    }
    for (i, bv) in b.iter().enumerate().skip(a.len()) {
        path.push_str(&format!("/{i}"));
        ops.push(json!({"op": "add", "path": path.clone(), "value": bv}));
        path.truncate(len);
    }
    for i in (b.len()..a.len()).rev() {
        path.push_str(&format!("/{i}"));
        ops.push(json!({"op": "remove", "path": path.clone()}));
        path.truncate(len);
    }
}

/// When every element of `a` is a named object found, in order, in `b` (i.e. `b` is `a` with
/// elements inserted), writes `add` ops for the insertions and diffs the kept elements in place.
fn diff_insertions(a: &[Value], b: &[Value], path: &mut String, ops: &mut Vec<Value>) -> bool {
    let name = |v: &Value| v.get("name").and_then(Value::as_str).map(str::to_string);
    if b.len() <= a.len() || a.iter().chain(b).any(|v| name(v).is_none()) {
        return false;
    }
    // Match a's names as a subsequence of b's.
    let mut matches = Vec::with_capacity(a.len());
    let mut j = 0;
    for av in a {
        while j < b.len() && name(&b[j]) != name(av) {
            j += 1;
        }
        if j == b.len() {
            return false;
        }
        matches.push(j);
        j += 1;
    }
    let len = path.len();
    let mut next = 0;
    for (i, bv) in b.iter().enumerate() {
        path.push_str(&format!("/{i}"));
        if matches.get(next) == Some(&i) {
            diff_into(&a[next], bv, path, ops);
            next += 1;
        } else {
            ops.push(json!({"op": "add", "path": path.clone(), "value": bv}));
        }
        path.truncate(len);
    }
    true
}

/// Appends `/token` with RFC 6901 escaping (`~` → `~0`, `/` → `~1`).
fn push_token(path: &mut String, token: &str) {
    path.push('/');
    path.push_str(&token.replace('~', "~0").replace('/', "~1"));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn applied(from: &Value, to: &Value) -> (Value, usize) {
        let mut out = from.clone();
        let patch = diff(from, to);
        let n = patch.as_ref().map_or(0, |p| p.0.len());
        if let Some(p) = patch {
            json_patch::patch(&mut out, &p).unwrap();
        }
        (out, n)
    }

    #[test]
    fn diff_applies_and_inserts_by_name() {
        let from = json!({"metadata": {"annotations": {"a/b~c": "1"}}, "spec": {"containers": [
            {"name": "app", "image": "a"}, {"name": "other", "image": "o"}]}});
        let to = json!({"metadata": {"annotations": {"a/b~c": "2", "x": "y"}}, "spec": {"containers": [
            {"name": "side", "image": "s"}, {"name": "app", "image": "a"}, {"name": "mid"}, {"name": "other", "image": "o2"},
            {"name": "last"}]}});
        let (out, n) = applied(&from, &to);
        assert_eq!(out, to);
        assert_eq!(n, 6, "three adds, one image replace, two annotation ops");
        let cases = [
            (json!([1, 2, 3]), json!([1])),
            (json!([1]), json!([3, 1, 2])),
            (json!({"a": [{"name": "x"}]}), json!({"a": [{"name": "y"}, {"name": "z"}]})),
            (json!({"a": 1, "b": {"c": null}}), json!({"b": {}})),
            (json!("x"), json!({"a": 1})),
        ];
        for (from, to) in cases {
            assert_eq!(applied(&from, &to).0, to, "{from} -> {to}");
        }
        assert!(diff(&from, &from).is_none());
    }

    #[test]
    fn target_keeps_unknown_fields_by_name_and_equal_replacements() {
        let raw = json!({"metadata": {"name": "p", "creationTimestamp": null}, "spec": {"containers": [
            {"name": "app", "image": "a", "futureField": 1},
            {"name": "side", "image": "s:1", "imagePullPolicy": "IfNotPresent", "resources": {},
             "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}]}});
        let mutated = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "first", "image": "f"}, {"name": "app", "image": "a"}, {"name": "side", "image": "s:1"}]}});
        let replaced: BTreeSet<String> = ["first".to_string(), "side".to_string()].into();
        let t = target(&raw, &mutated, &replaced);
        assert_eq!(t["spec"]["containers"][1]["futureField"], 1);
        assert_eq!(t["spec"]["containers"][2], raw["spec"]["containers"][1], "defaulted-equal replacement kept");
        assert_eq!(t["metadata"]["creationTimestamp"], Value::Null);
        let changed =
            json!({"spec": {"containers": [{"name": "app", "image": "a"}, {"name": "side", "image": "s:2"}]}});
        let t = target(&raw, &changed, &replaced);
        assert_eq!(t["spec"]["containers"][1], json!({"name": "side", "image": "s:2"}), "a real replacement");
    }
}
