//! RFC 6902 JSON diff with the semantics of kruise's diff library (appscode/jsonpatch v1.0.1
//! `CreatePatch`, vendored by OpenKruise): it decides which `add`/`remove`/`replace` operations
//! turn an old document into a new one, and in which order. Both the in-place update decision (spec
//! §3.2 step 1) and the InPlaceOnly webhook guard (spec §3.6, decision §11.2) read these
//! operations, and the guard reports the first offending one to the user, so shape and order
//! matter.
//!
//! The algorithm, as in the Go library:
//! - objects are compared key by key: keys of the new object first (absent in old → `add`; present
//!   → recurse), then keys only in the old object (`remove`);
//! - `null` in old and a value in new → `add`; any change of JSON type → `replace` of the whole
//!   value; scalars that differ → `replace` (numbers compare as f64, like Go's `float64`);
//! - arrays are handled two ways. A "simple" array (see [`is_simple_array`]) on both sides is
//!   diffed with a Levenshtein edit distance whose backtrace emits ops from the END of the array
//!   towards the start; any other pair of arrays is diffed positionally: first `remove` of the
//!   surplus old tail from the highest index down, then `add` of the new tail in ascending order,
//!   then each common index in ascending order, recursively. Kubernetes containers (which carry
//!   nested objects such as `resources`) take the positional route, so inserting a container at the
//!   front shows up as an `add` at the end plus `replace` ops at every earlier index;
//! - object keys are RFC 6901 escaped in paths (`~` → `~0`, `/` → `~1`).
//!
//! Deliberate deviations, each because the Go behaviour is random or produces a wrong patch:
//! - Go iterates object keys in random map order; here keys are visited in sorted (byte) order, so
//!   the "first offending op" is deterministic;
//! - Go emits `add` for `null` → value inside an ARRAY, which would insert rather than overwrite;
//!   here that case is a `replace`;
//! - Go builds a malformed path under an empty-string key (`makePath` drops the separator); here
//!   the path is always `parent + "/" + escaped key`;
//! - Go runs the edit distance on arrays of any size (O(n·m) memory); above
//!   [`EDIT_DISTANCE_MAX_CELLS`] this falls back to the positional diff, which is still a correct
//!   patch, so a huge `args` list in a webhook request cannot exhaust memory;
//! - Go's `CreatePatch` rejects a non-object root; here any two values can be diffed (a scalar root
//!   change is a `replace` at the empty path).

use serde_json::{Map, Value};
use std::fmt;

use crate::compat::patch::{push_index, push_token};

/// Largest `(old_len + 1) * (new_len + 1)` for which simple arrays get the edit-distance diff.
pub const EDIT_DISTANCE_MAX_CELLS: usize = 1 << 20;

/// The three operations the diff emits (it never emits `move`, `copy` or `test`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    Add,
    Remove,
    Replace,
}

impl OpKind {
    /// The RFC 6902 spelling (`add`, `remove`, `replace`).
    pub fn as_str(self) -> &'static str {
        match self {
            OpKind::Add => "add",
            OpKind::Remove => "remove",
            OpKind::Replace => "replace",
        }
    }
}

impl fmt::Display for OpKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One RFC 6902 operation. `value` is `None` exactly for `remove`; `Some(Value::Null)` is a real
/// null.
#[derive(Clone, Debug, PartialEq)]
pub struct PatchOp {
    pub op: OpKind,
    pub path: String,
    pub value: Option<Value>,
}

impl PatchOp {
    pub fn add(path: impl Into<String>, value: Value) -> Self {
        PatchOp { op: OpKind::Add, path: path.into(), value: Some(value) }
    }

    pub fn remove(path: impl Into<String>) -> Self {
        PatchOp { op: OpKind::Remove, path: path.into(), value: None }
    }

    pub fn replace(path: impl Into<String>, value: Value) -> Self {
        PatchOp { op: OpKind::Replace, path: path.into(), value: Some(value) }
    }

    /// The operation as an RFC 6902 JSON object (`{"op":…,"path":…,"value":…}`).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("op".to_owned(), Value::String(self.op.as_str().to_owned()));
        m.insert("path".to_owned(), Value::String(self.path.clone()));
        if let Some(v) = &self.value {
            m.insert("value".to_owned(), v.clone());
        }
        Value::Object(m)
    }
}

/// `"<op> <path>"`, e.g. `replace /containers/0/image` — the form kruise puts in its messages.
impl fmt::Display for PatchOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.op, self.path)
    }
}

/// RFC 6901 escaping of one reference token: `~` → `~0`, then `/` → `~1`.
pub fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// RFC 6901 unescaping of one reference token in a single left-to-right pass (`~01` → `~1`, not
/// `/`).
pub fn unescape_token(token: &str) -> String {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.peek() {
                Some('1') => {
                    out.push('/');
                    chars.next();
                }
                Some('0') => {
                    out.push('~');
                    chars.next();
                }
                _ => out.push('~'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The operations that turn `old` into `new`, in the order kruise's library emits them (module
/// doc). Equal documents give an empty list.
pub fn create_patch(old: &Value, new: &Value) -> Vec<PatchOp> {
    let mut ops = Vec::new();
    handle_values(old, new, &mut String::new(), false, &mut ops);
    ops
}

/// Go's `isSimpleArray`, quirk included: strings, numbers and booleans are skipped; the FIRST
/// element that is neither decides — an object is simple iff all its values are scalars or null
/// (later elements are not looked at), anything else (null, array) is not simple. An empty array is
/// simple.
pub fn is_simple_array(items: &[Value]) -> bool {
    for item in items {
        match item {
            Value::String(_) | Value::Number(_) | Value::Bool(_) => continue,
            Value::Object(m) => {
                return m.values().all(|v| !matches!(v, Value::Object(_) | Value::Array(_)));
            }
            Value::Null | Value::Array(_) => return false,
        }
    }
    true
}

/// Deep equality with Go's `reflect.DeepEqual` on decoded JSON: numbers compare as f64.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => false,
    }
}

fn same_type(a: &Value, b: &Value) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// Keys in sorted (byte) order: a `serde_json::Map` is a `BTreeMap` (no `preserve_order`; the
/// test `maps_iterate_in_byte_order` fails if that ever changes). The path grows and shrinks
/// with the walk and is copied only into an operation.
fn diff_objects(a: &Map<String, Value>, b: &Map<String, Value>, path: &mut String, ops: &mut Vec<PatchOp>) {
    let len = path.len();
    for (key, bv) in b {
        push_token(path, key);
        match a.get(key) {
            None => ops.push(PatchOp::add(path.clone(), bv.clone())),
            Some(av) => handle_values(av, bv, path, false, ops),
        }
        path.truncate(len);
    }
    for key in a.keys() {
        if !b.contains_key(key) {
            push_token(path, key);
            ops.push(PatchOp::remove(path.clone()));
            path.truncate(len);
        }
    }
}

fn handle_values(av: &Value, bv: &Value, path: &mut String, in_array: bool, ops: &mut Vec<PatchOp>) {
    match (av, bv) {
        (Value::Null, Value::Null) => {}
        // Go emits `add` here; inside an array that would insert, so an element is replaced instead.
        (Value::Null, _) if in_array => ops.push(PatchOp::replace(path.clone(), bv.clone())),
        (Value::Null, _) => ops.push(PatchOp::add(path.clone(), bv.clone())),
        _ if !same_type(av, bv) => ops.push(PatchOp::replace(path.clone(), bv.clone())),
        (Value::Object(a), Value::Object(b)) => diff_objects(a, b, path, ops),
        (Value::Array(a), Value::Array(b)) => diff_arrays(a, b, path, ops),
        _ => {
            if !json_equal(av, bv) {
                ops.push(PatchOp::replace(path.clone(), bv.clone()));
            }
        }
    }
}

fn diff_arrays(a: &[Value], b: &[Value], path: &mut String, ops: &mut Vec<PatchOp>) {
    let cells = (a.len() + 1).saturating_mul(b.len() + 1);
    if is_simple_array(a) && is_simple_array(b) && cells <= EDIT_DISTANCE_MAX_CELLS {
        edit_distance_ops(a, b, path, ops);
    } else {
        positional_ops(a, b, path, ops);
    }
}

/// Non-simple arrays: remove the old tail from the end, add the new tail, then diff common indexes.
fn positional_ops(a: &[Value], b: &[Value], path: &mut String, ops: &mut Vec<PatchOp>) {
    let n = a.len().min(b.len());
    for i in (n..a.len()).rev() {
        ops.push(PatchOp::remove(index_path(path, i)));
    }
    for (i, item) in b.iter().enumerate().skip(n) {
        ops.push(PatchOp::add(index_path(path, i), item.clone()));
    }
    let len = path.len();
    for i in 0..n {
        push_index(path, i);
        handle_values(&a[i], &b[i], path, true, ops);
        path.truncate(len);
    }
}

/// `path/index`, for an operation.
fn index_path(path: &str, index: usize) -> String {
    let mut p = path.to_string();
    push_index(&mut p, index);
    p
}

/// Simple arrays: Wagner–Fischer distance matrix, then Go's backtrace from (len a, len b) to (0,
/// 0), preferring remove, then add, then replace, then a free diagonal step. Ops come out from the
/// end of the array towards the start, so every index stays valid when they are applied in order.
fn edit_distance_ops(s: &[Value], t: &[Value], path: &mut String, ops: &mut Vec<PatchOp>) {
    let (m, n) = (s.len(), t.len());
    let width = n + 1;
    let mut d = vec![0usize; (m + 1) * width];
    let at = |i: usize, j: usize| i * width + j;
    for i in 0..=m {
        d[at(i, 0)] = i;
    }
    for j in 0..=n {
        d[at(0, j)] = j;
    }
    for j in 1..=n {
        for i in 1..=m {
            d[at(i, j)] = if json_equal(&s[i - 1], &t[j - 1]) {
                d[at(i - 1, j - 1)]
            } else {
                let del = d[at(i - 1, j)] + 1;
                let add = d[at(i, j - 1)] + 1;
                let rep = d[at(i - 1, j - 1)] + 1;
                rep.min(add.min(del))
            };
        }
    }
    let (mut i, mut j) = (m, n);
    loop {
        let cur = d[at(i, j)];
        if i > 0 && d[at(i - 1, j)] + 1 == cur {
            ops.push(PatchOp::remove(index_path(path, i - 1)));
            i -= 1;
        } else if j > 0 && d[at(i, j - 1)] + 1 == cur {
            ops.push(PatchOp::add(index_path(path, i), t[j - 1].clone()));
            j -= 1;
        } else if i > 0 && j > 0 && d[at(i - 1, j - 1)] + 1 == cur {
            // Go checks the type of the array's FIRST element, not of the one being replaced.
            if matches!(s[0], Value::String(_) | Value::Number(_) | Value::Bool(_)) {
                ops.push(PatchOp::replace(index_path(path, i - 1), t[j - 1].clone()));
            } else {
                let len = path.len();
                push_index(path, i - 1);
                handle_values(&s[i - 1], &t[j - 1], path, true, ops);
                path.truncate(len);
            }
            i -= 1;
            j -= 1;
        } else if i > 0 && j > 0 && d[at(i - 1, j - 1)] == cur {
            i -= 1;
            j -= 1;
        } else {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The diff visits keys in byte order by iterating maps: `serde_json::Map` must stay a
    /// `BTreeMap` (the `preserve_order` feature would make it insertion-ordered).
    #[test]
    fn maps_iterate_in_byte_order() {
        let mut m = Map::new();
        for k in ["b", "a/", "B", "a", "~", "é"] {
            m.insert(k.to_string(), Value::Null);
        }
        let keys: Vec<&str> = m.keys().map(String::as_str).collect();
        assert_eq!(keys, ["B", "a", "a/", "b", "~", "é"]);
        let ops = create_patch(&json!({"z": 1, "a": 1}), &json!({"y/": 2, "b~": 2}));
        let paths: Vec<&str> = ops.iter().map(|o| o.path.as_str()).collect();
        assert_eq!(paths, ["/b~0", "/y~1", "/a", "/z"]);
    }

    /// Minimal RFC 6902 applier for add/remove/replace, used to check every diff by applying it.
    fn apply(doc: &Value, ops: &[PatchOp]) -> Result<Value, String> {
        let mut doc = doc.clone();
        for op in ops {
            apply_one(&mut doc, op).map_err(|e| format!("{op}: {e}"))?;
        }
        Ok(doc)
    }

    fn apply_one(doc: &mut Value, op: &PatchOp) -> Result<(), String> {
        if op.path.is_empty() {
            return match op.op {
                OpKind::Remove => Err("cannot remove the root".into()),
                _ => {
                    *doc = op.value.clone().ok_or("missing value")?;
                    Ok(())
                }
            };
        }
        let tokens: Vec<String> =
            op.path.strip_prefix('/').ok_or("path must start with /")?.split('/').map(unescape_token).collect();
        let (last, parents) = tokens.split_last().ok_or("empty path")?;
        let mut cur = doc;
        for t in parents {
            cur = match cur {
                Value::Object(m) => m.get_mut(t).ok_or("missing parent key")?,
                Value::Array(a) => a.get_mut(t.parse::<usize>().map_err(|e| e.to_string())?).ok_or("bad index")?,
                _ => return Err("parent is a scalar".into()),
            };
        }
        match (cur, op.op) {
            (Value::Object(m), OpKind::Add) => {
                m.insert(last.clone(), op.value.clone().ok_or("missing value")?);
            }
            (Value::Object(m), OpKind::Replace) => {
                let slot = m.get_mut(last).ok_or("replace of a missing key")?;
                *slot = op.value.clone().ok_or("missing value")?;
            }
            (Value::Object(m), OpKind::Remove) => {
                m.remove(last).ok_or("remove of a missing key")?;
            }
            (Value::Array(a), kind) => {
                let i = last.parse::<usize>().map_err(|e| e.to_string())?;
                match kind {
                    OpKind::Add if i <= a.len() => a.insert(i, op.value.clone().ok_or("missing value")?),
                    OpKind::Replace if i < a.len() => a[i] = op.value.clone().ok_or("missing value")?,
                    OpKind::Remove if i < a.len() => {
                        a.remove(i);
                    }
                    _ => return Err("index out of range".into()),
                }
            }
            _ => return Err("target parent is a scalar".into()),
        }
        Ok(())
    }

    /// Applies `ops` to `old` and checks the result equals `new` (numbers compared as Go does).
    fn assert_applies(old: &Value, ops: &[PatchOp], new: &Value, ctx: &str) {
        match apply(old, ops) {
            Ok(got) => assert!(json_equal(&got, new), "{ctx}: applying {:?} gave {got}, want {new}", rendered(ops)),
            Err(e) => panic!("{ctx}: applying {:?} failed: {e}", rendered(ops)),
        }
    }

    fn rendered(ops: &[PatchOp]) -> Vec<String> {
        ops.iter().map(|o| o.to_string()).collect()
    }

    #[test]
    fn emitted_ops_match_the_go_library() {
        // (old, new, expected "<op> <path>" list in emission order)
        let cases: Vec<(Value, Value, Vec<&str>)> = vec![
            (json!({"a": 1}), json!({"a": 1}), vec![]),
            (json!({"a": 1}), json!({"a": 2}), vec!["replace /a"]),
            (json!({"a": 1}), json!({"a": 1.0}), vec![]),
            (json!({"a": 1}), json!({"a": "1"}), vec!["replace /a"]),
            (json!({"a": 1, "b": 2}), json!({"a": 1}), vec!["remove /b"]),
            (json!({"a": 1}), json!({"a": 1, "b": {"c": 1}}), vec!["add /b"]),
            (json!({"a": null}), json!({"a": 1}), vec!["add /a"]),
            (json!({"a": 1}), json!({"a": null}), vec!["replace /a"]),
            (json!({"a": null}), json!({"a": null}), vec![]),
            (json!({"a": {"b": 1}}), json!({"a": [1]}), vec!["replace /a"]),
            // new keys (sorted) before removed keys, removals sorted too
            (
                json!({"z": 1, "y": 1, "b": 1}),
                json!({"a": 1, "b": 2, "c": 3}),
                vec!["add /a", "replace /b", "add /c", "remove /y", "remove /z"],
            ),
            // RFC 6901 escaping
            (
                json!({"labels": {"a/b": "1", "c~d": "1"}}),
                json!({"labels": {"a/b": "2", "c~d": "2", "~/": "x"}}),
                vec!["replace /labels/a~1b", "replace /labels/c~0d", "add /labels/~0~1"],
            ),
            // non-simple arrays: tail removed from the end, then common indexes
            (
                json!({"c": [{"n": "a", "r": {}}, {"n": "b", "r": {}}, {"n": "c", "r": {}}]}),
                json!({"c": [{"n": "x", "r": {}}]}),
                vec!["remove /c/2", "remove /c/1", "replace /c/0/n"],
            ),
            // non-simple arrays: inserting at the front → add at the end, then replaces
            (
                json!({"c": [{"name": "a", "image": "1", "resources": {}}]}),
                json!({"c": [{"name": "z", "image": "9", "resources": {}}, {"name": "a", "image": "1", "resources": {}}]}),
                vec!["add /c/1", "replace /c/0/image", "replace /c/0/name"],
            ),
            // equal-length non-simple arrays: element by element, recursively
            (
                json!({"c": [{"image": "a", "env": [{"name": "X", "value": "1"}]}, {"image": "b", "r": {}}]}),
                json!({"c": [{"image": "a2", "env": [{"name": "X", "value": "2"}]}, {"image": "b2", "r": {}}]}),
                vec!["replace /c/0/env/0/value", "replace /c/0/image", "replace /c/1/image"],
            ),
            // simple scalar arrays: edit distance, ops from the end
            (json!({"a": ["x", "y", "z"]}), json!({"a": ["y", "z"]}), vec!["remove /a/0"]),
            (json!({"a": ["x", "y"]}), json!({"a": ["w", "x", "y"]}), vec!["add /a/0"]),
            (json!({"a": ["x", "y"]}), json!({"a": ["x", "q"]}), vec!["replace /a/1"]),
            (json!({"a": ["a", "b"]}), json!({"a": ["b", "c"]}), vec!["add /a/2", "remove /a/0"]),
            (json!({"a": ["x", "x"]}), json!({"a": ["x"]}), vec!["remove /a/1"]),
            (json!({"a": []}), json!({"a": [1, 2]}), vec!["add /a/0", "add /a/0"]),
            // the library's own fixture (arraySrc → arrayDst)
            (
                json!({"spec": {"loadBalancerSourceRanges": ["192.101.0.0/16", "192.0.0.0/24"]}}),
                json!({"spec": {"loadBalancerSourceRanges": ["192.101.0.0/24"]}}),
                vec!["remove /spec/loadBalancerSourceRanges/1", "replace /spec/loadBalancerSourceRanges/0"],
            ),
            // simple arrays of flat objects: edit distance, changed element diffed recursively
            (
                json!({"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]}),
                json!({"env": [{"name": "A", "value": "1"}, {"name": "B", "value": "3"}]}),
                vec!["replace /env/1/value"],
            ),
            (
                json!({"env": [{"name": "A", "value": "1"}]}),
                json!({"env": [{"name": "Z", "value": "0"}, {"name": "A", "value": "1"}]}),
                vec!["add /env/0"],
            ),
            // flat containers (no nested objects) are "simple": edit distance, then recursion
            (
                json!({"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}),
                json!({"containers": [{"name": "a", "image": "x2"}, {"name": "b", "image": "y"}]}),
                vec!["replace /containers/0/image"],
            ),
            // root arrays and scalars
            (json!([1, 2]), json!([1, 2, 3]), vec!["add /2"]),
            (json!(1), json!("x"), vec!["replace "]),
        ];
        for (i, (old, new, want)) in cases.iter().enumerate() {
            let ops = create_patch(old, new);
            assert_eq!(rendered(&ops), *want, "case {i}: {old} -> {new}");
            assert_applies(old, &ops, new, &format!("case {i}: apply"));
        }
    }

    #[test]
    fn simple_array_rule_keeps_the_first_element_quirk() {
        let cases: Vec<(Value, bool)> = vec![
            (json!([]), true),
            (json!(["a", 1, true]), true),
            (json!([{"a": "b", "c": null, "d": 1}]), true),
            (json!([{"a": {}}]), false),
            (json!([{"a": []}]), false),
            (json!([null]), false),
            (json!([[1]]), false),
            (json!(["a", {"a": "b"}, {"nested": {}}]), true), // later elements not inspected
            (json!(["a", null, {"a": "b"}]), false),
        ];
        for (i, (v, want)) in cases.iter().enumerate() {
            let items = v.as_array().cloned().unwrap_or_default();
            assert_eq!(is_simple_array(&items), *want, "case {i}: {v}");
        }
    }

    #[test]
    fn null_inside_arrays_is_replaced_not_inserted() {
        let cases: Vec<(Value, Value, Vec<&str>)> = vec![
            (json!({"a": [null, {"x": {}}]}), json!({"a": [1, {"x": {}}]}), vec!["replace /a/0"]),
            (json!({"a": [{"k": "v"}, null]}), json!({"a": [{"k": "v"}, {"k": "w"}]}), vec!["replace /a/1"]),
        ];
        for (i, (old, new, want)) in cases.iter().enumerate() {
            let ops = create_patch(old, new);
            assert_eq!(rendered(&ops), *want, "case {i}");
            assert_applies(old, &ops, new, &format!("case {i}: apply"));
        }
    }

    #[test]
    fn escaping_round_trips() {
        let cases = [("a/b", "a~1b"), ("c~d", "c~0d"), ("~1", "~01"), ("/~", "~1~0"), ("", ""), ("plain", "plain")];
        for (raw, escaped) in cases {
            assert_eq!(escape_token(raw), escaped);
            assert_eq!(unescape_token(escaped), raw);
            let mut path = String::from("/p");
            push_token(&mut path, raw);
            assert_eq!(path, format!("/p/{escaped}"), "the diff's paths escape as escape_token");
        }
        assert_eq!(unescape_token("~2"), "~2");
        assert_eq!(unescape_token("a~"), "a~");
    }

    #[test]
    fn display_and_json_forms() {
        let cases = [
            (
                PatchOp::replace("/containers/0/image", json!("nginx")),
                "replace /containers/0/image",
                json!({"op": "replace", "path": "/containers/0/image", "value": "nginx"}),
            ),
            (PatchOp::remove("/a"), "remove /a", json!({"op": "remove", "path": "/a"})),
            (PatchOp::add("/a", Value::Null), "add /a", json!({"op": "add", "path": "/a", "value": null})),
        ];
        for (op, text, as_json) in cases {
            assert_eq!(op.to_string(), text);
            assert_eq!(op.to_json(), as_json);
        }
    }

    #[test]
    fn huge_simple_arrays_fall_back_to_positional_diff() {
        let old: Vec<Value> = (0..2000).map(|i| json!(format!("a{i}"))).collect();
        let mut new = old.clone();
        new.insert(0, json!("front"));
        let (old, new) = (json!({ "args": old }), json!({ "args": new }));
        let ops = create_patch(&old, &new);
        assert_eq!(ops.first().map(|o| o.to_string()).as_deref(), Some("add /args/2000"));
        assert_applies(&old, &ops, &new, "huge array");
    }

    /// xorshift64*, so the generated cases are the same on every run without a dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    const KEYS: [&str; 6] = ["a", "b/c", "d~e", "~1", "image", ""];

    fn gen_value(rng: &mut Rng, depth: u32) -> Value {
        let pick = if depth == 0 { rng.below(5) } else { rng.below(8) };
        match pick {
            0 => Value::Null,
            1 => json!(rng.below(3) == 0),
            2 => json!(rng.below(4)),
            3 | 4 => json!(["x", "y", "z"][rng.below(3) as usize]),
            5 | 6 => {
                let mut m = Map::new();
                for _ in 0..rng.below(4) {
                    m.insert(KEYS[rng.below(6) as usize].to_owned(), gen_value(rng, depth - 1));
                }
                Value::Object(m)
            }
            _ => Value::Array((0..rng.below(5)).map(|_| gen_value(rng, depth - 1)).collect()),
        }
    }

    /// A variant of `v`: most nodes kept, some changed, some array items inserted or dropped.
    fn mutate(rng: &mut Rng, v: &Value, depth: u32) -> Value {
        if rng.below(7) == 0 {
            return gen_value(rng, depth);
        }
        match v {
            Value::Object(m) => {
                let mut out = Map::new();
                for (k, x) in m {
                    if rng.below(6) != 0 {
                        out.insert(k.clone(), mutate(rng, x, depth.saturating_sub(1)));
                    }
                }
                if rng.below(4) == 0 {
                    out.insert(KEYS[rng.below(6) as usize].to_owned(), gen_value(rng, depth.saturating_sub(1)));
                }
                Value::Object(out)
            }
            Value::Array(a) => {
                let mut out: Vec<Value> = Vec::new();
                for x in a {
                    match rng.below(6) {
                        0 => {}
                        1 => {
                            out.push(gen_value(rng, depth.saturating_sub(1)));
                            out.push(x.clone());
                        }
                        _ => out.push(mutate(rng, x, depth.saturating_sub(1))),
                    }
                }
                if rng.below(4) == 0 {
                    out.push(gen_value(rng, depth.saturating_sub(1)));
                }
                Value::Array(out)
            }
            other => other.clone(),
        }
    }

    #[test]
    fn generated_diffs_apply_back_to_the_new_document() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for case in 0..3000 {
            let old = gen_value(&mut rng, 4);
            let new = mutate(&mut rng, &old, 4);
            let ops = create_patch(&old, &new);
            assert_applies(&old, &ops, &new, &format!("case {case}: {old} -> {new}"));
            assert!(create_patch(&old, &old).is_empty(), "case {case}: self diff");
            for op in &ops {
                assert_eq!(op.value.is_none(), op.op == OpKind::Remove, "case {case}: {op}");
            }
        }
    }

    #[test]
    fn pod_template_shapes_round_trip() {
        let old = json!({
            "metadata": {"labels": {"app": "web", "kruise.io/x": "1"}, "annotations": {"a~b/c": "v"}},
            "spec": {
                "containers": [
                    {"name": "main", "image": "nginx:1", "imagePullPolicy": "Always", "resources": {},
                     "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}}],
                     "ports": [{"containerPort": 80, "protocol": "TCP"}]},
                    {"name": "side", "image": "busybox", "resources": {"limits": {"cpu": "1"}}, "args": ["sleep", "1d"]}
                ],
                "volumes": [{"name": "v", "emptyDir": {}}],
                "tolerations": [{"key": "k", "operator": "Exists"}]
            }
        });
        let variants = [
            json!({"metadata": {"labels": {"app": "web2"}}, "spec": old["spec"].clone()}),
            {
                let mut v = old.clone();
                v["spec"]["containers"][1]["args"] = json!(["sleep", "2d", "x"]);
                v["spec"]["containers"][0]["env"] = json!([{"name": "B", "value": "2"}]);
                v["spec"]["volumes"] = json!([]);
                v
            },
            {
                let mut v = old.clone();
                v["spec"]["containers"] = json!([{"name": "new", "image": "x", "resources": {}}, old["spec"]["containers"][0].clone(), old["spec"]["containers"][1].clone()]);
                v["metadata"]["annotations"] = json!({"a~b/c": "w", "/": "~"});
                v
            },
        ];
        for (i, new) in variants.iter().enumerate() {
            let ops = create_patch(&old, new);
            assert_applies(&old, &ops, new, &format!("variant {i}"));
        }
    }
}
