//! `overlay_diff(raw, &serde_json::to_value(typed))` without building the typed value (issue 16):
//! a [`Serializer`] walks the typed value alongside the request JSON and writes only the
//! operations. Objects over objects and lists over lists of the same length are compared in
//! place (keys in the order a `serde_json::Map` gives them, whatever order the type writes its
//! fields in); a scalar is compared as it is; anything else — a value where the request has
//! something of another shape, a list that changed length, tuples, enums — is built with
//! `serde_json::value::Serializer` and handed to the caller's `overlay_diff` (a [`Fallback`]),
//! so every answer is the one the built value gives. An error (a map key that is not a string,
//! a sequence whose length was announced wrongly, duplicate map keys) makes the caller take the
//! built path instead.
//!
//! Two callers: [`super::overlay_patch_typed`] (workload defaults, `json_patch::diff` over the
//! overlay) and the pod patch (`core::sidecar::podpatch`, whose lists merge by name, written by
//! a [`Hook`]).

use serde::Serialize;
use serde::ser::{self, Serializer};
use serde_json::{Map, Value};

use super::{Ops, push_index, push_token};

type Error = serde_json::Error;
use serde_json::value::Serializer as ValueSerializer;

/// `overlay_diff(raw, typed, path, ops)` for a `typed` value that is not walked (built, or of
/// another shape than `raw`): the diff whose answers the walk reproduces.
pub(crate) type Fallback = fn(&Value, &Value, &mut String, &mut Ops);

/// `fallback(raw, &serde_json::to_value(typed)?)`, appending to `ops`.
pub(crate) fn overlay_diff_typed<T: Serialize + ?Sized>(
    raw: &Value,
    typed: &T,
    path: &mut String,
    ops: &mut Ops,
    fallback: Fallback,
) -> Result<(), Error> {
    typed.serialize(Walk { raw, path, ops, hook: None, fallback })
}

/// The same as [`overlay_diff_typed`] for an object whose fields named in `hook.keys` are
/// written by `hook.write` (the pod spec's name-merged lists).
pub(crate) fn overlay_diff_hooked<'a, T: Serialize + ?Sized>(
    raw: &'a Value,
    typed: &T,
    path: &'a mut String,
    ops: &'a mut Ops,
    fallback: Fallback,
    hook: Hook<'a>,
) -> Result<(), Error> {
    typed.serialize(Walk { raw, path, ops, hook: Some(hook), fallback })
}

/// Fields of one object written by the caller: `write(key, raw value, path, ops)`.
pub(crate) struct Hook<'a> {
    pub(crate) keys: &'static [&'static str],
    pub(crate) write: Lists<'a>,
}

type Lists<'a> = &'a mut dyn FnMut(&str, Option<&Value>, &mut String, &mut Ops) -> Result<(), Error>;

struct Walk<'a> {
    raw: &'a Value,
    path: &'a mut String,
    ops: &'a mut Ops,
    hook: Option<Hook<'a>>,
    fallback: Fallback,
}

fn fail(message: &str) -> Error {
    <Error as ser::Error>::custom(message)
}

impl<'a> Walk<'a> {
    /// A scalar `typed`: `overlay_diff` replaces what differs.
    fn scalar(self, typed: Value) -> Result<(), Error> {
        if *self.raw != typed {
            self.ops.replace(self.path, typed);
        }
        Ok(())
    }

    /// A value built whole.
    fn built(self, typed: Result<Value, Error>) -> Result<(), Error> {
        (self.fallback)(self.raw, &typed?, self.path, self.ops);
        Ok(())
    }

    fn fields(self, raw: &'a Map<String, Value>) -> Fields<'a> {
        let start = self.ops.ops.len();
        let len = self.path.len();
        Fields::Walk(FieldsWalk {
            raw,
            path: self.path,
            ops: self.ops,
            hook: self.hook,
            fallback: self.fallback,
            len,
            start,
            groups: Vec::new(),
            key: None,
            last: None,
        })
    }
}

impl<'a> Serializer for Walk<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Seq<'a>;
    type SerializeTuple = Built<'a, <ValueSerializer as Serializer>::SerializeTuple>;
    type SerializeTupleStruct = Built<'a, <ValueSerializer as Serializer>::SerializeTupleStruct>;
    type SerializeTupleVariant = Built<'a, <ValueSerializer as Serializer>::SerializeTupleVariant>;
    type SerializeMap = Fields<'a>;
    type SerializeStruct = Fields<'a>;
    type SerializeStructVariant = Built<'a, <ValueSerializer as Serializer>::SerializeStructVariant>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.scalar(Value::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.scalar(ValueSerializer.serialize_i8(v)?)
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.scalar(ValueSerializer.serialize_i16(v)?)
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.scalar(ValueSerializer.serialize_i32(v)?)
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.scalar(ValueSerializer.serialize_i64(v)?)
    }
    fn serialize_i128(self, v: i128) -> Result<(), Error> {
        self.scalar(ValueSerializer.serialize_i128(v)?)
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.scalar(ValueSerializer.serialize_u8(v)?)
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.scalar(ValueSerializer.serialize_u16(v)?)
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.scalar(ValueSerializer.serialize_u32(v)?)
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.scalar(ValueSerializer.serialize_u64(v)?)
    }
    fn serialize_u128(self, v: u128) -> Result<(), Error> {
        self.scalar(ValueSerializer.serialize_u128(v)?)
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.scalar(ValueSerializer.serialize_f32(v)?)
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.scalar(ValueSerializer.serialize_f64(v)?)
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.scalar(ValueSerializer.serialize_char(v)?)
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        if self.raw.as_str() != Some(v) {
            self.ops.replace(self.path, Value::String(v.to_owned()));
        }
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        let built = ValueSerializer.serialize_bytes(v);
        self.built(built)
    }
    fn serialize_none(self) -> Result<(), Error> {
        self.scalar(Value::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.scalar(Value::Null)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.scalar(Value::Null)
    }
    fn serialize_unit_variant(self, name: &'static str, index: u32, variant: &'static str) -> Result<(), Error> {
        self.scalar(ValueSerializer.serialize_unit_variant(name, index, variant)?)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _name: &'static str, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        let built = ValueSerializer.serialize_newtype_variant(name, index, variant, value);
        self.built(built)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Seq<'a>, Error> {
        match self.raw {
            Value::Array(raw) if len == Some(raw.len()) => {
                let len = self.path.len();
                Ok(Seq::Walk { raw, path: self.path, ops: self.ops, fallback: self.fallback, len, next: 0 })
            }
            _ => Ok(Seq::Built(Built { inner: ValueSerializer.serialize_seq(len)?, walk: self })),
        }
    }
    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, Error> {
        Ok(Built { inner: ValueSerializer.serialize_tuple(len)?, walk: self })
    }
    fn serialize_tuple_struct(self, name: &'static str, len: usize) -> Result<Self::SerializeTupleStruct, Error> {
        Ok(Built { inner: ValueSerializer.serialize_tuple_struct(name, len)?, walk: self })
    }
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Ok(Built { inner: ValueSerializer.serialize_tuple_variant(name, index, variant, len)?, walk: self })
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Fields<'a>, Error> {
        match self.raw {
            Value::Object(raw) => Ok(self.fields(raw)),
            _ => Ok(Fields::Built(Built { inner: ValueSerializer.serialize_map(len)?, walk: self })),
        }
    }
    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Fields<'a>, Error> {
        match self.raw {
            // serde_json's raw values are structs of this name: built as serde_json builds them.
            Value::Object(raw) if !name.starts_with("$serde_json") => Ok(self.fields(raw)),
            _ => Ok(Fields::Built(Built { inner: ValueSerializer.serialize_struct(name, len)?, walk: self })),
        }
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Ok(Built { inner: ValueSerializer.serialize_struct_variant(name, index, variant, len)?, walk: self })
    }
}

/// A compound value built by serde_json, then diffed.
pub(crate) struct Built<'a, S> {
    inner: S,
    walk: Walk<'a>,
}

macro_rules! built {
    ($trait:ident, $method:ident $(, $key:ident)?) => {
        impl<S: ser::$trait<Ok = Value, Error = Error>> ser::$trait for Built<'_, S> {
            type Ok = ();
            type Error = Error;
            fn $method<T: Serialize + ?Sized>(&mut self, $($key: &'static str,)? value: &T) -> Result<(), Error> {
                self.inner.$method($($key,)? value)
            }
            fn end(self) -> Result<(), Error> {
                let Built { inner, walk } = self;
                walk.built(inner.end())
            }
        }
    };
}

built!(SerializeTuple, serialize_element);
built!(SerializeTupleStruct, serialize_field);
built!(SerializeTupleVariant, serialize_field);
built!(SerializeStructVariant, serialize_field, key);

/// A list: walked element by element over a request list of the same length, else built.
pub(crate) enum Seq<'a> {
    Walk { raw: &'a [Value], path: &'a mut String, ops: &'a mut Ops, fallback: Fallback, len: usize, next: usize },
    Built(Built<'a, <ValueSerializer as Serializer>::SerializeSeq>),
}

impl ser::SerializeSeq for Seq<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match self {
            Seq::Walk { raw, path, ops, fallback, len, next } => {
                let raw = raw.get(*next).ok_or_else(|| fail("more elements than announced"))?;
                push_index(path, *next);
                value.serialize(Walk { raw, path, ops, hook: None, fallback: *fallback })?;
                path.truncate(*len);
                *next += 1;
                Ok(())
            }
            Seq::Built(b) => ser::SerializeSeq::serialize_element(&mut b.inner, value),
        }
    }

    fn end(self) -> Result<(), Error> {
        match self {
            Seq::Walk { raw, next, .. } if next == raw.len() => Ok(()),
            Seq::Walk { .. } => Err(fail("fewer elements than announced")),
            Seq::Built(b) => {
                let value = ser::SerializeSeq::end(b.inner);
                b.walk.built(value)
            }
        }
    }
}

/// An object (struct or map): walked key by key over a request object, else built.
pub(crate) enum Fields<'a> {
    Walk(FieldsWalk<'a>),
    Built(Built<'a, <ValueSerializer as Serializer>::SerializeMap>),
}

pub(crate) struct FieldsWalk<'a> {
    raw: &'a Map<String, Value>,
    path: &'a mut String,
    ops: &'a mut Ops,
    /// Fields the caller writes (the pod spec's named lists).
    hook: Option<Hook<'a>>,
    fallback: Fallback,
    /// The path's length at this object.
    len: usize,
    /// The number of operations before this object's.
    start: usize,
    /// Keys and the end of their operations, in the order written (a key without operations
    /// is not recorded).
    groups: Vec<(String, usize)>,
    /// The map key awaiting its value.
    key: Option<String>,
    /// The last map key written: keys must come in increasing order (as a `BTreeMap` writes
    /// them), so that none is written twice.
    last: Option<String>,
}

impl FieldsWalk<'_> {
    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Error> {
        let before = self.ops.ops.len();
        push_token(self.path, key);
        let raw = self.raw.get(key);
        match (&mut self.hook, raw) {
            (Some(hook), _) if hook.keys.contains(&key) => (hook.write)(key, raw, self.path, self.ops)?,
            (_, None) => {
                let value = serde_json::to_value(value)?;
                self.ops.add(self.path, value);
            }
            (_, Some(raw)) => {
                let (path, ops) = (&mut *self.path, &mut *self.ops);
                value.serialize(Walk { raw, path, ops, hook: None, fallback: self.fallback })?
            }
        }
        self.path.truncate(self.len);
        if self.ops.ops.len() > before {
            self.groups.push((key.to_string(), self.ops.ops.len()));
        }
        Ok(())
    }

    /// Puts the operations in the order of the keys, as a `serde_json::Map` iterates them.
    fn end(self) -> Result<(), Error> {
        if self.groups.windows(2).all(|w| w[0].0 < w[1].0) {
            return Ok(());
        }
        let ops = self.ops.ops.split_off(self.start);
        let mut slices = Vec::with_capacity(self.groups.len());
        let mut from = 0;
        for (key, end) in &self.groups {
            let end = *end - self.start;
            slices.push((key.as_str(), from, end));
            from = end;
        }
        slices.sort_by(|a, b| a.0.cmp(b.0));
        if slices.windows(2).any(|w| w[0].0 == w[1].0) {
            return Err(fail("a key written twice"));
        }
        let mut ops = ops.into_iter().map(Some).collect::<Vec<_>>();
        for (_, from, end) in slices {
            self.ops.ops.extend(ops[from..end].iter_mut().filter_map(Option::take));
        }
        Ok(())
    }
}

impl ser::SerializeStruct for Fields<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        match self {
            Fields::Walk(w) => w.field(key, value),
            Fields::Built(b) => ser::SerializeStruct::serialize_field(&mut b.inner, key, value),
        }
    }

    fn end(self) -> Result<(), Error> {
        match self {
            Fields::Walk(w) => w.end(),
            Fields::Built(b) => {
                let value = ser::SerializeStruct::end(b.inner);
                b.walk.built(value)
            }
        }
    }
}

impl ser::SerializeMap for Fields<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        match self {
            Fields::Walk(w) => match key.serialize(ValueSerializer)? {
                // Other keys are turned into strings by serde_json's map serializer: built.
                Value::String(k) => {
                    if w.last.as_ref().is_some_and(|last| *last >= k) {
                        return Err(fail("map keys out of order"));
                    }
                    w.key = Some(k);
                    Ok(())
                }
                _ => Err(fail("a map key that is not a string")),
            },
            Fields::Built(b) => ser::SerializeMap::serialize_key(&mut b.inner, key),
        }
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match self {
            Fields::Walk(w) => {
                let key = w.key.take().ok_or_else(|| fail("a map value without its key"))?;
                w.field(&key, value)?;
                w.last = Some(key);
                Ok(())
            }
            Fields::Built(b) => ser::SerializeMap::serialize_value(&mut b.inner, value),
        }
    }

    fn end(self) -> Result<(), Error> {
        match self {
            Fields::Walk(w) => w.end(),
            Fields::Built(b) => {
                let value = ser::SerializeMap::end(b.inner);
                b.walk.built(value)
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashMap;

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Shapes {
        /// Written before `alpha`: the operations still come in key order.
        zulu: Option<u8>,
        alpha: Vec<i64>,
        middle: Option<Box<Shapes>>,
        tuple: (u8, String),
        unit: (),
        variant: Choice,
        bytes: serde_bytes_like::Bytes,
        float: f64,
        map: std::collections::BTreeMap<String, bool>,
    }

    #[derive(Serialize)]
    enum Choice {
        Unit,
        New(u8),
        Tuple(u8, u8),
        Struct { x: u8 },
    }

    mod serde_bytes_like {
        /// Serialised with `serialize_bytes`.
        pub struct Bytes(pub Vec<u8>);
        impl serde::Serialize for Bytes {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(&self.0)
            }
        }
    }

    fn shapes(n: u8, variant: Choice) -> Shapes {
        Shapes {
            zulu: n.is_multiple_of(2).then_some(n),
            alpha: (0..i64::from(n % 3)).collect(),
            middle: (n < 3).then(|| Box::new(shapes(n + 1, Choice::Unit))),
            tuple: (n, "t".into()),
            unit: (),
            variant,
            bytes: serde_bytes_like::Bytes(vec![n; usize::from(n % 2)]),
            float: if n == 1 { f64::NAN } else { f64::from(n) / 2.0 },
            map: [("a/b".to_string(), n > 1), ("~".to_string(), true)].into(),
        }
    }

    fn walked<T: Serialize>(raw: &Value, typed: &T, fallback: Fallback) -> Result<String, Error> {
        let mut ops = Ops::default();
        overlay_diff_typed(raw, typed, &mut "/x".to_string(), &mut ops, fallback)?;
        serde_json::to_string(&ops.ops)
    }

    fn built<T: Serialize>(raw: &Value, typed: &T, fallback: Fallback) -> String {
        let mut ops = Ops::default();
        fallback(raw, &serde_json::to_value(typed).unwrap(), &mut "/x".to_string(), &mut ops);
        serde_json::to_string(&ops.ops).unwrap()
    }

    /// The walk with `json_patch`'s diff (`overlay_patch_typed`) is that diff of the built value.
    #[test]
    fn walk_is_overlay_diff_of_the_built_value() {
        walk_is_the_built_value(crate::compat::patch::overlay_diff);
    }

    /// Every shape of serde's data model gives the operations of the built value, over request
    /// values of the same shape, of other shapes, and partly missing, with `fallback` as the
    /// diff of what is built (called for the pod patch's diff by its own tests).
    pub(crate) fn walk_is_the_built_value(fallback: Fallback) {
        let variants = || [Choice::Unit, Choice::New(1), Choice::Tuple(1, 2), Choice::Struct { x: 1 }];
        let mut raws: Vec<Value> = vec![json!(null), json!({}), json!([]), json!("s"), json!(1)];
        for n in 0..4 {
            for v in variants() {
                raws.push(serde_json::to_value(shapes(n, v)).unwrap());
            }
        }
        let mut edited = raws[5].clone();
        edited["alpha"] = json!([1, 2, 3]);
        edited["middle"]["zulu"] = json!("z");
        edited["map"] = json!({"a/b": null, "other": 1});
        edited["tuple"] = json!([0]);
        raws.push(edited);
        let mut compared = 0;
        for raw in &raws {
            for n in 0..4 {
                for v in variants() {
                    let typed = shapes(n, v);
                    assert_eq!(walked(raw, &typed, fallback).unwrap(), built(raw, &typed, fallback), "{raw}");
                    compared += 1;
                }
            }
        }
        assert!(compared > 300);
        // Keys come back in the order of the built object even though `zulu` is written first.
        let ops = walked(&json!({"zulu": 0, "alpha": []}), &shapes(2, Choice::Unit), fallback).unwrap();
        assert!(ops.find("/x/alpha").unwrap() < ops.find("/x/zulu").unwrap(), "{ops}");
    }

    /// What the walk does not take is refused, so the caller builds the value.
    #[test]
    fn refuses_maps_it_cannot_order() {
        let raw = json!({"a": 1, "b": 2, "c": 3});
        let fallback: Fallback = crate::compat::patch::overlay_diff;
        let keys: HashMap<u8, u8> = [(1, 1)].into();
        assert!(walked(&raw, &keys, fallback).is_err(), "integer keys");
        let many: HashMap<String, u8> = (0..32).map(|i| (format!("k{i}"), i)).collect();
        assert!(walked(&raw, &many, fallback).is_err(), "keys out of order");
        let sorted: std::collections::BTreeMap<String, u8> = many.into_iter().collect();
        assert_eq!(walked(&raw, &sorted, fallback).unwrap(), built(&raw, &sorted, fallback));
    }
}
