//! Small accessors for Kubernetes objects held as `serde_json::Value`: metadata fields, labels,
//! owner references, timestamps, uids and generated names. The server stores every object as
//! JSON so that built-in kinds and custom resources go through the same code.

use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// `metadata.<field>` as a string, or "".
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata").and_then(|m| m.get(field)).and_then(Value::as_str).unwrap_or("")
}

/// `metadata.name`.
pub fn name(obj: &Value) -> &str {
    meta_str(obj, "name")
}

/// `metadata.namespace`.
pub fn namespace(obj: &Value) -> &str {
    meta_str(obj, "namespace")
}

/// `metadata.uid`.
pub fn uid(obj: &Value) -> &str {
    meta_str(obj, "uid")
}

/// `metadata.resourceVersion` parsed as the server's counter (0 when absent or foreign).
pub fn resource_version(obj: &Value) -> u64 {
    meta_str(obj, "resourceVersion").parse().unwrap_or(0)
}

/// `metadata.deletionTimestamp` is set.
pub fn is_deleting(obj: &Value) -> bool {
    !meta_str(obj, "deletionTimestamp").is_empty()
}

/// `metadata.generation` (0 when absent).
pub fn generation(obj: &Value) -> i64 {
    obj.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0)
}

/// A string map at `metadata.<field>` (labels or annotations).
pub fn string_map(obj: &Value, field: &str) -> BTreeMap<String, String> {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string())).collect())
        .unwrap_or_default()
}

/// `metadata.labels`.
pub fn labels(obj: &Value) -> BTreeMap<String, String> {
    string_map(obj, "labels")
}

/// `metadata.finalizers`.
pub fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// The uids of `metadata.ownerReferences`.
pub fn owner_uids(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|r| r.get("uid").and_then(Value::as_str)).map(str::to_string).collect())
        .unwrap_or_default()
}

/// The `metadata` map, created when missing. Returns `None` only when `obj` is not an object.
pub fn meta_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let map = obj.as_object_mut()?;
    let meta = map.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut()
}

/// Sets `metadata.<field>`; a `Value::Null` removes it.
pub fn set_meta(obj: &mut Value, field: &str, value: Value) {
    if let Some(meta) = meta_mut(obj) {
        if value.is_null() {
            meta.remove(field);
        } else {
            meta.insert(field.to_string(), value);
        }
    }
}

/// Sets a top-level field; does nothing when `obj` is not a JSON object.
pub fn set_field(obj: &mut Value, key: &str, value: Value) {
    if let Some(map) = obj.as_object_mut() {
        map.insert(key.to_string(), value);
    }
}

/// Sets `metadata.finalizers`, removing the field when the list is empty.
pub fn set_finalizers(obj: &mut Value, finalizers: &[String]) {
    if finalizers.is_empty() {
        set_meta(obj, "finalizers", Value::Null);
    } else {
        set_meta(obj, "finalizers", Value::from(finalizers.to_vec()));
    }
}

/// The current time in the second-precision RFC 3339 form of `meta/v1 Time`.
pub fn now() -> String {
    format_time(jiff::Timestamp::now())
}

/// A timestamp in the `meta/v1 Time` form.
pub fn format_time(ts: jiff::Timestamp) -> String {
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Parses a `meta/v1 Time` (or `MicroTime`).
pub fn parse_time(s: &str) -> Option<jiff::Timestamp> {
    s.parse().ok()
}

/// A random RFC 4122 version-4 uid, the form kube-apiserver assigns.
pub fn new_uid() -> String {
    let a = fastrand::u64(..);
    let b = fastrand::u64(..);
    let b = (b & 0x3fff_ffff_ffff_ffff) | 0x8000_0000_0000_0000;
    let a = (a & 0xffff_ffff_ffff_0fff) | 0x0000_0000_0000_4000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xffff,
        b >> 48,
        b & 0xffff_ffff_ffff
    )
}

/// The 5-character suffix kube-apiserver appends to `generateName` (consonants and digits that
/// cannot spell words).
pub fn name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    (0..5).map(|_| char::from(ALPHABET[fastrand::usize(..ALPHABET.len())])).collect()
}

/// Follows a dotted path (`spec.nodeName`, `.status.replicas`) through nested maps.
pub fn dotted<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    path.trim_start_matches('.').split('.').filter(|s| !s.is_empty()).try_fold(obj, |v, key| v.get(key))
}

/// Sets a dotted path, creating intermediate maps.
pub fn set_dotted(obj: &mut Value, path: &str, value: Value) {
    let keys: Vec<&str> = path.trim_start_matches('.').split('.').filter(|s| !s.is_empty()).collect();
    let Some((last, parents)) = keys.split_last() else {
        return;
    };
    let mut cur = obj;
    for key in parents {
        let Some(map) = cur.as_object_mut() else {
            return;
        };
        let next = map.entry(key.to_string()).or_insert_with(|| Value::Object(Map::new()));
        if !next.is_object() {
            *next = Value::Object(Map::new());
        }
        cur = next;
    }
    if let Some(map) = cur.as_object_mut() {
        map.insert(last.to_string(), value);
    }
}

/// Human age as kubectl prints it (`5s`, `3m`, `2h`, `4d`).
pub fn age(created: &str) -> String {
    let Some(ts) = parse_time(created) else {
        return "<unknown>".into();
    };
    let secs = (jiff::Timestamp::now().as_second() - ts.as_second()).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m", s / 60),
        s if s < 172_800 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn uid_has_uuid_shape() {
        let u = new_uid();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
    }

    #[test]
    fn dotted_paths() {
        let mut v = json!({"spec": {"nodeName": "n1"}});
        assert_eq!(dotted(&v, "spec.nodeName"), Some(&json!("n1")));
        assert_eq!(dotted(&v, ".spec.nodeName"), Some(&json!("n1")));
        set_dotted(&mut v, ".status.replicas", json!(3));
        assert_eq!(v["status"]["replicas"], 3);
    }

    #[test]
    fn time_round_trip() {
        let t = now();
        assert!(parse_time(&t).is_some());
        assert!(t.ends_with('Z'));
    }
}
