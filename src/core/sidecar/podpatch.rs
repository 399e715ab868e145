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
//! (not a cascade of replacements), everything else is compared key by key. [`patch`] is
//! `diff(raw, &target(..))` in one pass, without building the target pod: what the webhook runs.

use std::collections::BTreeSet;

use json_patch::Patch;
use k8s_openapi::api::core::v1::{Container, PodSpec, Volume};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::compat::patch::typed::{self, Hook};
use crate::compat::patch::{Ops, overlay, overlay_diff_by, push_index, push_token};
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
                match same_named(raw_list, new_list, name) {
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

/// The request element a mutated element named `name` is laid over: the one request element
/// of that name, when the name is also unique among the mutated elements. A name that is not
/// unique (an invalid pod the apiserver refuses after admission, or a request element whose
/// name is `null` and reads as `""`) pairs nothing: pairing the first match grafted one
/// volume's source onto another, and every re-invocation grafted again (found by the fuzzer,
/// `tests/data/fuzz/pod_shaped/`).
fn same_named<'a>(raw_list: &'a [Value], new_list: &[Value], name: &str) -> Option<&'a Value> {
    let named = |v: &&Value| v.get("name").and_then(Value::as_str) == Some(name);
    only_named(raw_list, name, || new_list.iter().filter(named).count())
}

/// [`same_named`] with the count of mutated elements named `name`.
fn only_named<'a>(raw_list: &'a [Value], name: &str, new_count: impl FnOnce() -> usize) -> Option<&'a Value> {
    let named = |v: &&Value| v.get("name").and_then(Value::as_str) == Some(name);
    let mut found = raw_list.iter().filter(named);
    let first = found.next()?;
    (found.next().is_none() && new_count() == 1).then_some(first)
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

/// The patch the webhook answers: `diff(raw, &target(raw, mutated, replaced))`, computed without
/// building the target pod. The request pod is walked alongside the mutation: keys the mutation
/// does not carry are the request's own and cannot differ, so only what the typed pod
/// re-serialised is compared, and only added or replaced values are copied. The named lists of
/// `spec` are merged as [`target`] merges them. Written for the pod hot path (issue 16); the
/// tests below and `tests/podpatch_props.rs` hold it to the two-step form byte for byte.
pub fn patch(raw: &Value, mutated: &Value, replaced: &BTreeSet<String>) -> Option<Patch> {
    let (Value::Object(raw_map), Value::Object(mutated_map)) = (raw, mutated) else {
        return diff(raw, &target(raw, mutated, replaced));
    };
    let mut ops = Ops::default();
    let mut path = String::new();
    for (key, tv) in mutated_map {
        push_token(&mut path, key);
        match (raw_map.get(key), key.as_str(), tv) {
            (None, _, _) => ops.add(&path, tv.clone()),
            (Some(Value::Object(rs)), "spec", Value::Object(ts)) => spec_patch(rs, ts, replaced, &mut path, &mut ops),
            (Some(rv), _, _) => overlay_diff(rv, tv, &mut path, &mut ops),
        }
        path.clear();
    }
    ops.finish()
}

/// [`patch`] of the mutated pod `{"metadata": metadata, "spec": spec}` (`metadata` left out
/// when empty, `spec` when `None`) without serialising the typed spec: it is walked alongside
/// the request pod ([`typed`]), its named lists merged by name as [`target`] merges them, and
/// only what differs is built. Anything the walk does not take is answered by [`patch`] over the
/// serialised spec; `Err` when the spec cannot be serialised. The tests below and
/// `tests/podpatch_props.rs` hold it to [`patch`] byte for byte.
pub fn pod_patch(
    raw: &Value,
    metadata: Map<String, Value>,
    spec: Option<&PodSpec>,
    replaced: &BTreeSet<String>,
) -> Result<Option<Patch>, serde_json::Error> {
    let built = |metadata: Map<String, Value>| {
        let mut changed = Map::new();
        if !metadata.is_empty() {
            changed.insert("metadata".into(), Value::Object(metadata));
        }
        if let Some(spec) = spec {
            changed.insert("spec".into(), serde_json::to_value(spec)?);
        }
        Ok(patch(raw, &Value::Object(changed), replaced))
    };
    let (Value::Object(raw_map), Some(spec)) = (raw, spec) else { return built(metadata) };
    let Some(raw_spec @ Value::Object(_)) = raw_map.get("spec") else { return built(metadata) };
    let mut ops = Ops::default();
    let mut path = String::new();
    if !metadata.is_empty() {
        push_token(&mut path, "metadata");
        let typed = Value::Object(metadata);
        match raw_map.get("metadata") {
            None => ops.add(&path, typed.clone()),
            Some(rv) => overlay_diff(rv, &typed, &mut path, &mut ops),
        }
        path.clear();
        return walk_spec(raw_spec, spec, replaced, path, ops).map_or_else(
            || match typed {
                Value::Object(metadata) => built(metadata),
                _ => built(Map::new()),
            },
            Ok,
        );
    }
    walk_spec(raw_spec, spec, replaced, path, ops).map_or_else(|| built(metadata), Ok)
}

/// The rest of [`pod_patch`]: the spec's operations after those in `ops`; `None` when the walk
/// did not take the spec.
fn walk_spec(
    raw_spec: &Value,
    spec: &PodSpec,
    replaced: &BTreeSet<String>,
    mut path: String,
    mut ops: Ops,
) -> Option<Option<Patch>> {
    push_token(&mut path, "spec");
    let mut lists = |key: &str, raw: Option<&Value>, path: &mut String, ops: &mut Ops| match key {
        "containers" => typed_list(key, raw, &spec.containers, replaced, path, ops),
        "initContainers" => {
            typed_list(key, raw, spec.init_containers.as_deref().unwrap_or_default(), replaced, path, ops)
        }
        _ => typed_list(key, raw, spec.volumes.as_deref().unwrap_or_default(), replaced, path, ops),
    };
    let hook = Hook { keys: &NAMED_LISTS, write: &mut lists };
    let walked = typed::overlay_diff_hooked(raw_spec, spec, &mut path, &mut ops, overlay_diff, hook);
    (walked.is_ok() && !ops.failed).then(|| ops.finish())
}

/// A named list of the typed spec, as [`spec_patch`] writes its value.
fn typed_list<E: Named>(
    list: &str,
    raw: Option<&Value>,
    new: &[E],
    replaced: &BTreeSet<String>,
    path: &mut String,
    ops: &mut Ops,
) -> Result<(), serde_json::Error> {
    match raw {
        None => {
            let value = serde_json::to_value(new)?;
            ops.add(path, value);
        }
        Some(Value::Array(raw_list)) => {
            let mut merged = Vec::with_capacity(new.len());
            for elem in new {
                let name = elem.name();
                let count = || new.iter().filter(|e| e.name() == name).count();
                merged.push(match only_named(raw_list, name, count) {
                    None => Typed::Value(serde_json::to_value(elem)?),
                    Some(r) if list != "volumes" && replaced.contains(name) => {
                        let value = serde_json::to_value(elem)?;
                        if same_container(r, &value) { Typed::Raw(r) } else { Typed::Value(value) }
                    }
                    Some(r) => Typed::Overlay(r, elem),
                });
            }
            diff_list(raw_list, merged, path, ops);
        }
        Some(rv) => typed::overlay_diff_typed(rv, new, path, ops, overlay_diff)?,
    }
    Ok(())
}

/// Elements of the named lists: their `name` is always written.
trait Named: Serialize {
    fn name(&self) -> &str;
}

impl Named for Container {
    fn name(&self) -> &str {
        &self.name
    }
}

impl Named for Volume {
    fn name(&self) -> &str {
        &self.name
    }
}

/// [`Node`] over a typed element: its value built, a request element, or the typed element
/// laid over the request element.
enum Typed<'a, E> {
    Value(Value),
    Raw(&'a Value),
    Overlay(&'a Value, &'a E),
}

impl<E: Named> Target for Typed<'_, E> {
    fn name(&self) -> Option<&str> {
        match self {
            Typed::Value(v) => v.get("name").and_then(Value::as_str),
            Typed::Raw(r) => r.get("name").and_then(Value::as_str),
            // `Node::name` of `Overlay(r, to_value(t))`: the request element is an object (it
            // was found by name), and the typed one always carries its name.
            Typed::Overlay(_, t) => Some(t.name()),
        }
    }

    fn diff_from(self, from: &Value, path: &mut String, ops: &mut Ops) {
        match self {
            Typed::Value(v) => diff_into(from, &v, path, ops),
            Typed::Raw(r) => diff_into(from, r, path, ops),
            Typed::Overlay(r, t) if std::ptr::eq(from, r) => {
                if typed::overlay_diff_typed(r, t, path, ops, overlay_diff).is_err() {
                    ops.failed = true;
                }
            }
            Typed::Overlay(..) => {
                let value = self.materialize(ops);
                diff_into(from, &value, path, ops);
            }
        }
    }

    fn materialize(self, ops: &mut Ops) -> Value {
        match self {
            Typed::Value(v) => v,
            Typed::Raw(r) => r.clone(),
            Typed::Overlay(r, t) => match serde_json::to_value(t) {
                Ok(t) => overlay(r, &t),
                Err(_) => {
                    ops.failed = true;
                    Value::Null
                }
            },
        }
    }
}

/// `spec`: like [`overlay_diff`] on objects, except that the named lists present on both sides
/// are merged by name first (see [`target`]).
fn spec_patch(
    raw: &Map<String, Value>,
    mutated: &Map<String, Value>,
    replaced: &BTreeSet<String>,
    path: &mut String,
    ops: &mut Ops,
) {
    let len = path.len();
    for (key, tv) in mutated {
        push_token(path, key);
        match (raw.get(key), tv) {
            (None, _) => ops.add(path, tv.clone()),
            (Some(Value::Array(raw_list)), Value::Array(new_list)) if NAMED_LISTS.contains(&key.as_str()) => {
                let merged: Vec<Node<'_>> =
                    new_list.iter().map(|elem| merged_element(key, raw_list, new_list, elem, replaced)).collect();
                diff_list(raw_list, merged, path, ops);
            }
            (Some(rv), _) => overlay_diff(rv, tv, path, ops),
        }
        path.truncate(len);
    }
}

/// One element of a merged named list, as [`target`] builds it.
fn merged_element<'a>(
    list: &str,
    raw_list: &'a [Value],
    new_list: &[Value],
    elem: &'a Value,
    replaced: &BTreeSet<String>,
) -> Node<'a> {
    let name = elem.get("name").and_then(Value::as_str).unwrap_or("");
    match same_named(raw_list, new_list, name) {
        None => Node::Value(elem),
        Some(r) if list != "volumes" && replaced.contains(name) => {
            Node::Value(if same_container(r, elem) { r } else { elem })
        }
        Some(r) => Node::Overlay(r, elem),
    }
}

/// A value of the target pod without building it: a value as it is, or `overlay(raw, typed)`.
#[derive(Clone, Copy)]
enum Node<'a> {
    Value(&'a Value),
    Overlay(&'a Value, &'a Value),
}

impl<'a> Node<'a> {
    fn materialize(self) -> Value {
        match self {
            Node::Value(v) => v.clone(),
            Node::Overlay(r, t) => overlay(r, t),
        }
    }

    /// The `name` the materialised value would have.
    fn name(self) -> Option<&'a str> {
        match self {
            Node::Value(v) => v.get("name").and_then(Value::as_str),
            Node::Overlay(r, t) => match (r, t) {
                // `overlay(rn, tn)` is a string exactly when `tn` is one (then it is `tn`).
                (Value::Object(_), Value::Object(tm)) => match tm.get("name") {
                    Some(tn) => tn.as_str(),
                    None => r.get("name").and_then(Value::as_str),
                },
                _ => t.get("name").and_then(Value::as_str),
            },
        }
    }
}

/// `diff_into(from, to)` for a target node.
fn diff_node(from: &Value, to: Node<'_>, path: &mut String, ops: &mut Ops) {
    match to {
        Node::Value(v) => diff_into(from, v, path, ops),
        Node::Overlay(r, t) if std::ptr::eq(from, r) => overlay_diff(r, t, path, ops),
        Node::Overlay(..) => diff_into(from, &to.materialize(), path, ops),
    }
}

/// `diff_into(raw, &overlay(raw, typed))` without building the overlay (objects key by key,
/// arrays of equal length element by element, anything else through [`diff_into`]).
fn overlay_diff(raw: &Value, typed: &Value, path: &mut String, ops: &mut Ops) {
    overlay_diff_by(raw, typed, path, ops, diff_into);
}

/// The RFC 6902 patch turning `from` into `to`; `None` when they are equal.
pub fn diff(from: &Value, to: &Value) -> Option<Patch> {
    let mut ops = Ops::default();
    diff_into(from, to, &mut String::new(), &mut ops);
    ops.finish()
}

fn diff_into(from: &Value, to: &Value, path: &mut String, ops: &mut Ops) {
    match (from, to) {
        (Value::Object(a), Value::Object(b)) => diff_objects(a, b, path, ops),
        (Value::Array(a), Value::Array(b)) => diff_list(a, b.iter().map(Node::Value).collect(), path, ops),
        _ if from == to => {}
        _ => ops.replace(path, to.clone()),
    }
}

fn diff_objects(a: &Map<String, Value>, b: &Map<String, Value>, path: &mut String, ops: &mut Ops) {
    let len = path.len();
    for k in a.keys() {
        if !b.contains_key(k) {
            push_token(path, k);
            ops.remove(path);
            path.truncate(len);
        }
    }
    for (k, bv) in b {
        push_token(path, k);
        match a.get(k) {
            Some(av) => diff_into(av, bv, path, ops),
            None => ops.add(path, bv.clone()),
        }
        path.truncate(len);
    }
}

/// A value of the target pod, as the list diff takes it: its name, how it is diffed against a
/// request value in place, and the value itself when it is added.
trait Target: Sized {
    fn name(&self) -> Option<&str>;
    fn diff_from(self, from: &Value, path: &mut String, ops: &mut Ops);
    fn materialize(self, ops: &mut Ops) -> Value;
}

impl Target for Node<'_> {
    fn name(&self) -> Option<&str> {
        Node::name(*self)
    }
    fn diff_from(self, from: &Value, path: &mut String, ops: &mut Ops) {
        diff_node(from, self, path, ops);
    }
    fn materialize(self, _: &mut Ops) -> Value {
        Node::materialize(self)
    }
}

/// The diff of a list: insertions by name when `b` is `a` with named elements inserted (see
/// [`insertions`]), else element by element.
fn diff_list<T: Target>(a: &[Value], b: Vec<T>, path: &mut String, ops: &mut Ops) {
    let len = path.len();
    match insertions(a, &b) {
        Some(matches) => {
            let mut next = 0;
            for (i, bv) in b.into_iter().enumerate() {
                push_index(path, i);
                if matches.get(next) == Some(&i) {
                    bv.diff_from(&a[next], path, ops);
                    next += 1;
                } else {
                    let value = bv.materialize(ops);
                    ops.add(path, value);
                }
                path.truncate(len);
            }
        }
        None => diff_indexed(a, b, path, ops),
    }
}

/// Element by element; extra elements added at the end or removed from the end.
fn diff_indexed<T: Target>(a: &[Value], b: Vec<T>, path: &mut String, ops: &mut Ops) {
    let len = path.len();
    let b_len = b.len();
    for (i, bv) in b.into_iter().enumerate() {
        push_index(path, i);
        match a.get(i) {
            Some(av) => bv.diff_from(av, path, ops),
            None => {
                let value = bv.materialize(ops);
                ops.add(path, value);
            }
        }
        path.truncate(len);
    }
    for i in (b_len..a.len()).rev() {
        push_index(path, i);
        ops.remove(path);
        path.truncate(len);
    }
}

/// When every element of `a` is a named object found, in order, in `b` (i.e. `b` is `a` with
/// elements inserted): the index in `b` of each element of `a`. The insertions become `add`
/// operations and the kept elements are diffed in place.
fn insertions<T: Target>(a: &[Value], b: &[T]) -> Option<Vec<usize>> {
    fn name(v: &Value) -> Option<&str> {
        v.get("name").and_then(Value::as_str)
    }
    if b.len() <= a.len() || a.iter().any(|v| name(v).is_none()) || b.iter().any(|v| v.name().is_none()) {
        return None;
    }
    // Match a's names as a subsequence of b's.
    let mut matches = Vec::with_capacity(a.len());
    let mut j = 0;
    for av in a {
        while j < b.len() && b[j].name() != name(av) {
            j += 1;
        }
        if j == b.len() {
            return None;
        }
        matches.push(j);
        j += 1;
    }
    Some(matches)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        for mutated in [&mutated, &changed] {
            let one_pass = patch(&raw, mutated, &replaced).map(|p| serde_json::to_string(&p).unwrap());
            let two_steps = diff(&raw, &target(&raw, mutated, &replaced)).map(|p| serde_json::to_string(&p).unwrap());
            assert_eq!(one_pass, two_steps);
        }
    }

    /// Names that do not identify one element pair nothing: the first match used to take the
    /// other volume's source (fuzzer, tests/data/fuzz/pod_shaped/), and a re-invocation grafted
    /// it once more.
    #[test]
    fn ambiguous_names_pair_nothing() {
        let raw = json!({"spec": {"volumes": [
            {"name": null, "persistentVolumeClaim": {"claimName": "c"}}, {"name": "", "emptyDir": {}}]}});
        let typed = json!({"spec": {"volumes": [
            {"name": "", "persistentVolumeClaim": {"claimName": "c"}}, {"name": "", "emptyDir": {}}]}});
        let none = BTreeSet::new();
        assert_eq!(target(&raw, &typed, &none), typed);
        let (patched, _) = applied(&raw, &target(&raw, &typed, &none));
        assert_eq!(patched, typed);
        assert!(patch(&patched, &typed, &none).is_none(), "a re-invocation patches nothing");
        // Duplicates on the mutated side only (an unknown field stays with its unique pair).
        let raw = json!({"spec": {"containers": [{"name": "a", "x": 1}, {"name": "b", "y": 2}]}});
        let typed = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "b"}]}});
        let t = target(&raw, &typed, &none);
        assert_eq!(t["spec"]["containers"], json!([{"name": "a", "x": 1}, {"name": "b"}, {"name": "b"}]));
        let one_pass = patch(&raw, &typed, &none).map(|p| serde_json::to_string(&p).unwrap());
        let two_steps = diff(&raw, &t).map(|p| serde_json::to_string(&p).unwrap());
        assert_eq!(one_pass, two_steps);
    }

    /// The typed walk with this module's diff is that diff of the built value, for every shape.
    #[test]
    fn typed_walk_is_overlay_diff_of_the_built_value() {
        crate::compat::patch::typed::tests::walk_is_the_built_value(overlay_diff);
    }

    /// `pod_patch` is `patch` of the serialised spec, byte for byte, on the example pod with the
    /// mutations injection makes, and on request forms the walk does not take; the walk takes
    /// the example pod itself (it does not fall back).
    #[test]
    fn typed_patch_is_the_patch_of_the_serialised_spec() {
        let review: Value = serde_json::from_str(include_str!("../../../examples/reviews/pod-create.json")).unwrap();
        let raw = review["request"]["object"].clone();
        let pod: k8s_openapi::api::core::v1::Pod = crate::compat::decode::from_value(&raw).unwrap();
        let base = pod.spec.unwrap();
        let sidecar = Container { name: "side".into(), image: Some("s:1".into()), ..Default::default() };
        let mut specs = vec![base.clone()];
        let mut s = base.clone();
        s.containers.insert(0, sidecar.clone());
        s.volumes.get_or_insert_default().push(Volume { name: "v".into(), ..Default::default() });
        specs.push(s);
        let mut s = base.clone();
        s.containers[0].image = Some("nginx:2".into());
        s.containers[0].env = None;
        s.node_selector = Some([("a/b".to_string(), "~".to_string())].into());
        specs.push(s);
        let mut s = base.clone();
        s.containers[0] = Container { name: "web".into(), ..sidecar.clone() };
        specs.push(s);
        let mut s = base.clone();
        s.containers.clear();
        s.init_containers = Some(vec![sidecar.clone()]);
        specs.push(s);

        let mut raws = vec![raw.clone()];
        let mut r = raw.clone();
        r["spec"]["containers"] = json!("x");
        raws.push(r);
        let mut r = raw.clone();
        r["spec"]["containers"][0]["env"] = Value::Null;
        r["spec"]["containers"][0]["ports"] = json!([{"containerPort": 1.5}]);
        r["spec"]["volumes"] = json!([]);
        r["spec"]["nodeSelector"] = json!({"a/b": 1});
        raws.push(r);
        let mut r = raw.clone();
        r["spec"].as_object_mut().unwrap().remove("containers");
        raws.push(r);
        let mut r = raw.clone();
        r["spec"] = Value::Null;
        raws.push(r);
        let mut r = raw.clone();
        r.as_object_mut().unwrap().remove("metadata");
        raws.push(r);

        let replaced: BTreeSet<String> = ["side".to_string(), "web".to_string()].into();
        let metadata = json!({"annotations": {"a": "1"}, "name": "sample-pod"});
        let mut patched = 0;
        for raw in &raws {
            for spec in &specs {
                let changed = json!({"metadata": metadata, "spec": serde_json::to_value(spec).unwrap()});
                let want = patch(raw, &changed, &replaced);
                let got = pod_patch(raw, metadata.as_object().unwrap().clone(), Some(spec), &replaced).unwrap();
                patched += usize::from(got.is_some());
                assert_eq!(
                    serde_json::to_string(&got).unwrap(),
                    serde_json::to_string(&want).unwrap(),
                    "{raw} {spec:?}"
                );
            }
        }
        assert!(patched > 20, "the mutations change the pod");
        for spec in &specs {
            let walked = walk_spec(&raw["spec"], spec, &replaced, String::new(), Ops::default());
            assert!(walked.is_some(), "{spec:?}");
        }
    }
}
