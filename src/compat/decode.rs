//! Decoding a JSON object into our types as Go's `encoding/json` decodes into kruise's structs,
//! which is what the apiserver and kruise do with every object (issue 14 item 1):
//! - `null` is the zero value: a `null` field is as if absent (`updateStrategy: null`,
//!   `scaleStrategy:` with its body commented out), a `null` list element or map value is the
//!   element's zero value (`""`, `0`, an empty object);
//! - an object without `metadata` or `spec` decodes with empty ones, so validation can say what
//!   is missing (`metadata.name: Required value`) instead of the decoder;
//! - a value of the wrong type is a Kubernetes field error naming the field:
//!   `spec.replicas: Invalid value: "ten": must be an integer` (objects and lists are shown by
//!   their type, as the apiserver shows them).
//!
//! It is a thin [`serde::Deserializer`] over a borrowed [`serde_json::Value`]: strings are
//! borrowed, nothing is allocated on the way, and the path of a field is only written out when
//! its decoding fails.

use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::compat::field::FieldError;

/// Decodes `value` as `T` with Go's semantics (see the module documentation).
pub fn from_value<T: DeserializeOwned>(value: &Value) -> Result<T, Error> {
    T::deserialize(De { value, path: Path::Root })
}

/// Why a value does not decode: where, and what was wrong.
#[derive(Clone, Debug, PartialEq)]
pub struct Error {
    path: Option<String>,
    got: Option<Value>,
    kind: ErrorKind,
}

#[derive(Clone, Debug, PartialEq)]
enum ErrorKind {
    /// A value of the wrong type; `expected` is serde's description of the type.
    Type { expected: String },
    /// A value of the right type but out of range (`3000000000` for an int32).
    Value { expected: String },
    /// A field the type requires.
    Missing(String),
    /// Anything else a type's own deserializer says.
    Other(String),
}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error { path: None, got: None, kind: ErrorKind::Other(msg.to_string()) }
    }
    fn invalid_type(_: de::Unexpected, exp: &dyn de::Expected) -> Self {
        Error { path: None, got: None, kind: ErrorKind::Type { expected: exp.to_string() } }
    }
    fn invalid_value(_: de::Unexpected, exp: &dyn de::Expected) -> Self {
        Error { path: None, got: None, kind: ErrorKind::Value { expected: exp.to_string() } }
    }
    fn missing_field(field: &'static str) -> Self {
        Error { path: None, got: None, kind: ErrorKind::Missing(field.to_string()) }
    }
}

impl std::error::Error for Error {}

impl Error {
    /// Places an error raised while decoding `value` at `path` (the innermost place wins).
    fn at(mut self, path: &Path<'_>, value: &Value) -> Self {
        if self.path.is_none() {
            self.path = Some(path.to_string());
            self.got = Some(shown(value));
        }
        self
    }

    /// The Kubernetes field error.
    pub fn field_error(&self) -> FieldError {
        let path = self.path.clone().unwrap_or_default();
        let got = self.got.clone().unwrap_or(Value::Null);
        match &self.kind {
            ErrorKind::Type { expected } => FieldError::invalid(&path, got, must_be(expected)),
            ErrorKind::Value { expected } => {
                FieldError::invalid(&path, got, format!("{}: out of range", must_be(expected)))
            }
            ErrorKind::Missing(field) => {
                let path = if path.is_empty() { field.clone() } else { format!("{path}.{field}") };
                FieldError::required(&path, "")
            }
            ErrorKind::Other(message) => FieldError::invalid(&path, got, message.clone()),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.field_error().fmt(f)
    }
}

/// The bad value as a field error shows it: scalars as they are, objects and lists by type.
fn shown(value: &Value) -> Value {
    match value {
        Value::Object(_) => Value::String("object".into()),
        Value::Array(_) => Value::String("array".into()),
        other => other.clone(),
    }
}

/// "must be ..." from serde's description of the expected type.
fn must_be(expected: &str) -> String {
    const INTEGERS: &[&str] = &["i8", "i16", "i32", "i64", "i128", "u8", "u16", "u32", "u64", "u128", "isize", "usize"];
    let e = expected.trim();
    let what = if INTEGERS.contains(&e) || e.contains("integer") && !e.contains("string") {
        "an integer"
    } else if e == "f32" || e == "f64" || e.contains("float") || e.contains("number") {
        "a number"
    } else if e.contains("bool") {
        "a boolean"
    } else if e.contains("IntOrString") || e.contains("integer or a string") || e.contains("int or string") {
        "an integer or a string"
    } else if e.contains("string") || e.contains("char") || e.contains("quantity") || e.contains("Quantity") {
        "a string"
    } else if e.contains("sequence") || e.contains("array") || e.contains("list") || e.contains("tuple") {
        "a list"
    } else if e.contains("map") || e.starts_with("struct ") || e.contains("object") {
        "an object"
    } else {
        return format!("must be {e}");
    };
    format!("must be {what}")
}

/// Where a value sits, as `field.Path` prints it (`spec.containers[0].name`, `labels[app]`).
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    Field(&'a Path<'a>, &'a str),
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Path::Root => Ok(()),
            Path::Field(Path::Root, name) => f.write_str(name),
            Path::Field(parent, name) => write!(f, "{parent}.{name}"),
            Path::Key(parent, key) => write!(f, "{parent}[{key}]"),
            Path::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

static NULL: Value = Value::Null;

/// Fields of a top-level object that Go fills with their zero value when absent, though the
/// derived Rust types require them (`kube`'s `CustomResource` roots).
const ROOT_FIELDS: &[&str] = &["metadata", "spec"];

struct De<'p, 'de> {
    value: &'de Value,
    path: Path<'p>,
}

impl<'de> De<'_, 'de> {
    fn any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let result = match self.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    visitor.visit_u64(u)
                } else if let Some(i) = n.as_i64() {
                    visitor.visit_i64(i)
                } else {
                    visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => {
                let mut seq = Seq { items: items.iter(), index: 0, parent: &self.path };
                match visitor.visit_seq(&mut seq) {
                    Ok(v) if seq.items.len() == 0 => Ok(v),
                    Ok(_) => Err(de::Error::invalid_length(items.len(), &"fewer elements")),
                    Err(e) => Err(e),
                }
            }
            Value::Object(map) => visitor.visit_map(Map {
                entries: map.iter(),
                value: None,
                parent: &self.path,
                keys: KeyKind::Key,
                extra: &[],
            }),
        };
        result.map_err(|e| e.at(&self.path, self.value))
    }

    /// `null` as the zero value of a scalar type: `visit` is called with the zero.
    fn scalar<V: Visitor<'de>>(
        self,
        visitor: V,
        zero: impl FnOnce(V) -> Result<V::Value, Error>,
    ) -> Result<V::Value, Error> {
        if self.value.is_null() {
            let path = self.path;
            return zero(visitor).map_err(|e| e.at(&path, &NULL));
        }
        self.any(visitor)
    }
}

macro_rules! scalar_zero {
    ($($method:ident => $zero:expr),* $(,)?) => {
        $(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                self.scalar(visitor, $zero)
            }
        )*
    };
}

impl<'de> de::Deserializer<'de> for De<'_, 'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.any(visitor)
    }

    scalar_zero! {
        deserialize_bool => |v: V| v.visit_bool(false),
        deserialize_i8 => |v: V| v.visit_i64(0),
        deserialize_i16 => |v: V| v.visit_i64(0),
        deserialize_i32 => |v: V| v.visit_i64(0),
        deserialize_i64 => |v: V| v.visit_i64(0),
        deserialize_u8 => |v: V| v.visit_u64(0),
        deserialize_u16 => |v: V| v.visit_u64(0),
        deserialize_u32 => |v: V| v.visit_u64(0),
        deserialize_u64 => |v: V| v.visit_u64(0),
        deserialize_f32 => |v: V| v.visit_f64(0.0),
        deserialize_f64 => |v: V| v.visit_f64(0.0),
        deserialize_char => |v: V| v.visit_borrowed_str(""),
        deserialize_str => |v: V| v.visit_borrowed_str(""),
        deserialize_string => |v: V| v.visit_borrowed_str(""),
        deserialize_bytes => |v: V| v.visit_borrowed_str(""),
        deserialize_byte_buf => |v: V| v.visit_borrowed_str(""),
        deserialize_unit => |v: V| v.visit_unit(),
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.value.is_null() { visitor.visit_none() } else { visitor.visit_some(self) }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _: &'static str, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.value.is_null() {
            let path = self.path;
            let mut empty = Seq { items: [].iter(), index: 0, parent: &path };
            return visitor.visit_seq(&mut empty).map_err(|e| e.at(&path, &NULL));
        }
        self.any(visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _: usize, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.value.is_null() {
            let path = self.path;
            let empty = Map { entries: EMPTY.iter(), value: None, parent: &path, keys: KeyKind::Key, extra: &[] };
            return visitor.visit_map(empty).map_err(|e| e.at(&path, &NULL));
        }
        self.any(visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let map = match self.value {
            Value::Object(map) => map,
            Value::Null => &*EMPTY,
            _ => return self.any(visitor),
        };
        // A top-level object: metadata and spec Go would leave empty.
        let extra: &[&str] = if matches!(self.path, Path::Root) { ROOT_FIELDS } else { &[] };
        let extra = if extra.iter().all(|f| map.contains_key(*f) || !fields.contains(f)) { &[][..] } else { extra };
        let access =
            Map { entries: map.iter(), value: None, parent: &self.path, keys: KeyKind::Field { map, fields }, extra };
        visitor.visit_map(access).map_err(|e| e.at(&self.path, self.value))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_enum(self.value, name, variants, visitor)
            .map_err(|e| <Error as de::Error>::custom(e).at(&self.path, self.value))
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.any(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }
}

static EMPTY: std::sync::LazyLock<serde_json::Map<String, Value>> = std::sync::LazyLock::new(serde_json::Map::new);

struct Seq<'a, 'p, 'de> {
    items: std::slice::Iter<'de, Value>,
    index: usize,
    parent: &'a Path<'p>,
}

impl<'de> SeqAccess<'de> for &mut Seq<'_, '_, 'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, Error> {
        let Some(value) = self.items.next() else { return Ok(None) };
        let i = self.index;
        self.index += 1;
        seed.deserialize(De { value, path: Path::Index(self.parent, i) }).map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// How the keys of an object read: struct fields (nulls skipped, missing root fields supplied) or
/// map keys.
enum KeyKind<'de> {
    Field { map: &'de serde_json::Map<String, Value>, fields: &'static [&'static str] },
    Key,
}

struct Map<'a, 'p, 'de> {
    entries: serde_json::map::Iter<'de>,
    value: Option<(&'de str, &'de Value)>,
    parent: &'a Path<'p>,
    keys: KeyKind<'de>,
    /// Root fields still to supply as `null` once the entries are read.
    extra: &'static [&'static str],
}

impl<'de> MapAccess<'de> for Map<'_, '_, 'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Error> {
        loop {
            let (key, value) = match self.entries.next() {
                Some((k, v)) => (k.as_str(), v),
                None => {
                    let KeyKind::Field { map, fields } = self.keys else { return Ok(None) };
                    let Some((first, rest)) = self.extra.split_first() else { return Ok(None) };
                    self.extra = rest;
                    if map.contains_key(*first) || !fields.contains(first) {
                        continue;
                    }
                    (*first, &NULL)
                }
            };
            if value.is_null() && matches!(self.keys, KeyKind::Field { .. }) && !self.extra_contains(key) {
                continue;
            }
            self.value = Some((key, value));
            let key_de = de::value::BorrowedStrDeserializer::<'de, Error>::new(key);
            return seed.deserialize(key_de).map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let Some((key, value)) = self.value.take() else {
            return Err(de::Error::custom("a map value was asked for before its key"));
        };
        let path = match self.keys {
            KeyKind::Field { .. } => Path::Field(self.parent, key),
            KeyKind::Key => Path::Key(self.parent, key),
        };
        seed.deserialize(De { value, path })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

impl Map<'_, '_, '_> {
    /// A null root field (`spec: null`) is supplied like a missing one.
    fn extra_contains(&self, key: &str) -> bool {
        matches!(self.parent, Path::Root) && ROOT_FIELDS.contains(&key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::apis::{CloneSet, SidecarSet};
    use k8s_openapi::api::core::v1::Pod;

    fn cloneset(spec: Value) -> Result<CloneSet, Error> {
        from_value(&json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
            "metadata": {"name": "c"}, "spec": spec}))
    }

    #[test]
    fn nulls_are_zero_values() {
        let c = cloneset(json!({"replicas": null, "updateStrategy": null, "scaleStrategy": null,
            "volumeClaimTemplates": null, "selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": null}, "spec": {"containers": [
                {"name": "c", "image": null, "env": [null, {"name": "E", "value": null}], "resources": null}]}},
            "lifecycle": {"preDelete": null}}))
        .unwrap();
        assert_eq!(c.spec.replicas, None);
        assert_eq!(c.spec.update_strategy, Default::default());
        assert!(c.spec.volume_claim_templates.is_empty());
        let container = &c.spec.template.spec.as_ref().unwrap().containers[0];
        assert_eq!(container.image, None);
        let env = container.env.as_ref().unwrap();
        assert_eq!((env[0].name.as_str(), env[1].name.as_str()), ("", "E"), "a null element is the zero value");
        assert_eq!(env[1].value, None);
        let set: SidecarSet = from_value(&json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
            "metadata": {"name": "s", "labels": {"a": null}}, "spec": {"updateStrategy": null,
            "injectionStrategy": null, "containers": [{"name": "s", "image": "x", "podInjectPolicy": null}]}}))
        .unwrap();
        assert_eq!(set.metadata.labels.unwrap()["a"], "", "a null map value is the zero value");
    }

    #[test]
    fn missing_or_null_metadata_and_spec_are_empty() {
        let c: CloneSet = from_value(&json!({"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet"})).unwrap();
        assert_eq!(c.metadata.name, None);
        let c: CloneSet = from_value(&json!({"kind": "CloneSet", "metadata": null, "spec": null})).unwrap();
        assert_eq!(c.spec, Default::default());
        let p: Pod = from_value(&json!({"apiVersion": "v1", "kind": "Pod"})).unwrap();
        assert_eq!(p.spec, None, "an optional root field stays absent");
    }

    #[test]
    fn wrong_types_are_field_errors() {
        let cases = [
            (json!({"replicas": "ten"}), "spec.replicas: Invalid value: \"ten\": must be an integer"),
            (json!({"replicas": 1.5}), "spec.replicas: Invalid value: 1.5: must be an integer"),
            (
                json!({"replicas": 3000000000u64}),
                "spec.replicas: Invalid value: 3000000000: must be an integer: out of range",
            ),
            (json!({"minReadySeconds": true}), "spec.minReadySeconds: Invalid value: true: must be an integer"),
            (
                json!({"updateStrategy": {"paused": "yes"}}),
                "spec.updateStrategy.paused: Invalid value: \"yes\": must be a boolean",
            ),
            (
                json!({"updateStrategy": "RollingUpdate"}),
                "spec.updateStrategy: Invalid value: \"RollingUpdate\": must be an object",
            ),
            (
                json!({"scaleStrategy": {"podsToDelete": "a"}}),
                "spec.scaleStrategy.podsToDelete: Invalid value: \"a\": must be a list",
            ),
            (
                json!({"scaleStrategy": {"podsToDelete": ["a", 10]}}),
                "spec.scaleStrategy.podsToDelete[1]: Invalid value: 10: must be a string",
            ),
            (
                json!({"template": {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": "80"}]}]}}}),
                "spec.template.spec.containers[0].ports[0].containerPort: Invalid value: \"80\": must be an integer",
            ),
            (
                json!({"selector": {"matchLabels": {"app": 1}}}),
                "spec.selector.matchLabels[app]: Invalid value: 1: must be a string",
            ),
            (
                json!({"updateStrategy": {"partition": [1]}}),
                "spec.updateStrategy.partition: Invalid value: \"array\": must be an integer or a string",
            ),
        ];
        for (spec, want) in cases {
            let got = cloneset(spec.clone()).map(|_| ()).unwrap_err().to_string();
            assert_eq!(got, want, "{spec}");
        }
    }

    #[test]
    fn values_decode_as_with_serde_json() {
        let v = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "annotations": {"a/b": "c"}},
            "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"limits": {"cpu": "1"}},
            "ports": [{"containerPort": 80, "protocol": "TCP"}]}], "overhead": {"memory": "1Gi"}},
            "status": {"phase": "Running"}});
        let ours: Pod = from_value(&v).unwrap();
        let theirs: Pod = serde_json::from_value(v).unwrap();
        assert_eq!(ours, theirs);
    }
}
