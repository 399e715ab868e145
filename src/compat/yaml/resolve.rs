//! YAML 1.1 scalar resolution as go-yaml v2 does it (`resolve.go`), which is what kubectl reads
//! through `sigs.k8s.io/yaml`: `0644` is the octal 420, `on`/`off`/`yes`/`no`/`y`/`n` are booleans,
//! `1_000` is 1000, `0b101`/`0o17`/`0x1F` are integers (Go's `strconv.ParseInt` with base 0),
//! timestamps stay strings, `.inf`/`.nan` are floats (which JSON then refuses); and how the result
//! becomes JSON (`encoding/json`'s float formatting, `sigs.k8s.io/yaml`'s map-key conversion).
//! Every rule below was checked against the Go libraries (see the table at the bottom and
//! `tests/fixtures/yaml/`).

use serde_json::{Number, Value};

/// A resolved scalar.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    /// `~`, `null`, empty.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer that fits `int64`.
    Int(i64),
    /// An integer above `int64` (go-yaml's `uint64`).
    Uint(u64),
    /// A float.
    Float(f64),
    /// Anything else.
    Str(String),
}

/// The tag of a scalar, as far as resolution cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tag {
    /// No tag: a plain scalar is resolved, a quoted or block one is a string.
    None,
    /// `!!str`.
    Str,
    /// `!!bool`.
    Bool,
    /// `!!int`.
    Int,
    /// `!!float`.
    Float,
    /// `!!null`.
    Null,
    /// `!!timestamp`.
    Timestamp,
    /// `!!binary`: base64, decoded.
    Binary,
    /// Any other tag (`!foo`, `!`, `!!map` on a scalar...): the text, unresolved.
    Other,
}

impl Tag {
    /// Classifies a full tag (`tag:yaml.org,2002:int`, `!foo`).
    pub fn from_full(full: &str) -> Tag {
        match full.strip_prefix("tag:yaml.org,2002:") {
            Some("str") => Tag::Str,
            Some("bool") => Tag::Bool,
            Some("int") => Tag::Int,
            Some("float") => Tag::Float,
            Some("null") => Tag::Null,
            Some("timestamp") => Tag::Timestamp,
            Some("binary") => Tag::Binary,
            _ => Tag::Other,
        }
    }

    fn short(self) -> &'static str {
        match self {
            Tag::None | Tag::Other => "",
            Tag::Str => "!!str",
            Tag::Bool => "!!bool",
            Tag::Int => "!!int",
            Tag::Float => "!!float",
            Tag::Null => "!!null",
            Tag::Timestamp => "!!timestamp",
            Tag::Binary => "!!binary",
        }
    }
}

/// Resolves one scalar: `plain` is false for quoted and block scalars (which are strings unless
/// tagged). Errors are go-yaml's.
pub fn resolve(tag: Tag, text: &str, plain: bool) -> Result<Scalar, String> {
    match tag {
        Tag::None if !plain => Ok(Scalar::Str(text.to_string())),
        Tag::Str | Tag::Other => Ok(Scalar::Str(text.to_string())),
        Tag::Binary => {
            use base64::Engine;
            let compact: String = text.chars().filter(|c| !c.is_ascii_whitespace()).collect();
            base64::engine::general_purpose::STANDARD
                .decode(compact.as_bytes())
                .map(|bytes| Scalar::Str(String::from_utf8_lossy(&bytes).into_owned()))
                .map_err(|_| "!!binary value contains invalid base64 data".to_string())
        }
        _ => {
            let (got_tag, value) = implicit(text, tag);
            match (tag, got_tag) {
                (Tag::None, _) => Ok(value),
                (want, got) if want == got => Ok(value),
                (Tag::Float, Tag::Int) => Ok(match value {
                    Scalar::Int(i) => Scalar::Float(i as f64),
                    Scalar::Uint(u) => Scalar::Uint(u),
                    other => other,
                }),
                (want, got) => Err(format!("cannot decode {} `{text}` as a {}", got.short(), want.short())),
            }
        }
    }
}

/// go-yaml's implicit resolution of a plain scalar: its tag and value.
fn implicit(text: &str, tag: Tag) -> (Tag, Scalar) {
    let string = || (Tag::Str, Scalar::Str(text.to_string()));
    let Some(first) = text.bytes().next() else { return (Tag::Null, Scalar::Null) };
    match text {
        "y" | "Y" | "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => {
            return (Tag::Bool, Scalar::Bool(true));
        }
        "n" | "N" | "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => {
            return (Tag::Bool, Scalar::Bool(false));
        }
        "~" | "null" | "Null" | "NULL" => return (Tag::Null, Scalar::Null),
        ".nan" | ".NaN" | ".NAN" => return (Tag::Float, Scalar::Float(f64::NAN)),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return (Tag::Float, Scalar::Float(f64::INFINITY)),
        "-.inf" | "-.Inf" | "-.INF" => return (Tag::Float, Scalar::Float(f64::NEG_INFINITY)),
        _ => {}
    }
    match first {
        b'.' => match parse_float(text) {
            Some(f) => (Tag::Float, Scalar::Float(f)),
            None => string(),
        },
        b'0'..=b'9' | b'+' | b'-' => {
            if (tag == Tag::None || tag == Tag::Timestamp) && looks_like_timestamp(text) {
                return (Tag::Timestamp, Scalar::Str(text.to_string()));
            }
            let plain = text.replace('_', "");
            if let Some(i) = go_parse_int(&plain) {
                return (Tag::Int, Scalar::Int(i));
            }
            if let Some(u) = go_parse_uint(&plain) {
                return (Tag::Int, Scalar::Uint(u));
            }
            if yaml_style_float(&plain)
                && let Some(f) = parse_float(&plain)
            {
                return (Tag::Float, Scalar::Float(f));
            }
            string()
        }
        _ => string(),
    }
}

/// `strconv.ParseFloat(s, 64)` for the decimal spellings that reach it: out-of-range values are
/// errors in Go (and so stay strings), not infinities.
fn parse_float(s: &str) -> Option<f64> {
    let f: f64 = s.parse().ok()?;
    f.is_finite().then_some(f)
}

/// `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`, written by hand.
fn yaml_style_float(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// go-yaml's quick test before trying its timestamp layouts: a 4-digit year and `-`, then one of
/// `2006-1-2`, `2006-1-2T15:4:5...`, `2006-1-2 15:4:5...`. A timestamp is a string either way;
/// this only matters for `!!timestamp` and to keep `2001-12-14` out of the number parsers.
fn looks_like_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 8 || !b[..4].iter().all(u8::is_ascii_digit) || b[4] != b'-' {
        return false;
    }
    let date_end = s.find(['T', 't', ' ']).unwrap_or(s.len());
    let mut parts = s[5..date_end].split('-');
    let ok = |p: Option<&str>| p.is_some_and(|p| (1..=2).contains(&p.len()) && p.bytes().all(|c| c.is_ascii_digit()));
    ok(parts.next()) && ok(parts.next()) && parts.next().is_none()
}

/// Go's `strconv.ParseUint(s, 0, 64)` (no sign; `0x`, `0o`, `0b` and a leading `0` choose the base).
fn go_parse_uint(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.is_empty() {
        return None;
    }
    let (radix, digits) = if b[0] == b'0' {
        match b.get(1).map(u8::to_ascii_lowercase) {
            Some(b'b') if b.len() >= 3 => (2, &s[2..]),
            Some(b'o') if b.len() >= 3 => (8, &s[2..]),
            Some(b'x') if b.len() >= 3 => (16, &s[2..]),
            _ => (8, &s[1..]),
        }
    } else {
        (10, s)
    };
    if digits.is_empty() {
        // "0" alone: base 8 with no more digits is zero.
        return (s == "0").then_some(0);
    }
    if !digits.bytes().all(|c| (c as char).is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// Go's `strconv.ParseInt(s, 0, 64)`.
fn go_parse_int(s: &str) -> Option<i64> {
    let (negative, rest) = match s.as_bytes().first() {
        Some(b'+') => (false, &s[1..]),
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    let u = go_parse_uint(rest)?;
    if negative { if u <= 1 << 63 { Some((u as i64).wrapping_neg()) } else { None } } else { i64::try_from(u).ok() }
}

/// The JSON `sigs.k8s.io/yaml` writes for a resolved scalar value (`encoding/json`: floats that
/// are whole numbers print without a fraction, so `3.0` reaches the apiserver as `3`; NaN and the
/// infinities are refused).
pub fn to_json(scalar: Scalar) -> Result<Value, String> {
    Ok(match scalar {
        Scalar::Null => Value::Null,
        Scalar::Bool(b) => Value::Bool(b),
        Scalar::Int(i) => Value::from(i),
        Scalar::Uint(u) => Value::from(u),
        Scalar::Str(s) => Value::String(s),
        Scalar::Float(f) => Value::Number(json_float(f)?),
    })
}

/// `encoding/json`'s float64 encoding, read back as JSON would read it.
fn json_float(f: f64) -> Result<Number, String> {
    if !f.is_finite() {
        let shown = if f.is_nan() {
            "NaN"
        } else if f > 0.0 {
            "+Inf"
        } else {
            "-Inf"
        };
        return Err(format!("json: unsupported value: {shown}"));
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        return Number::from_f64(f).ok_or_else(|| format!("json: unsupported value: {f}"));
    }
    // Rust's shortest round-trip digits, without an exponent, as Go's 'f' format with precision -1.
    let text = format!("{f}");
    serde_json::from_str::<Number>(&text).map_err(|e| e.to_string())
}

/// The JSON object key `sigs.k8s.io/yaml` makes of a resolved scalar key.
pub fn key_string(scalar: Scalar) -> Result<String, String> {
    match scalar {
        Scalar::Str(s) => Ok(s),
        Scalar::Int(i) => Ok(i.to_string()),
        Scalar::Bool(b) => Ok(b.to_string()),
        Scalar::Float(f) => Ok(go_float32_g(f)),
        Scalar::Uint(u) => Err(format!("unsupported map key of type: uint64, key: 0x{u:x}")),
        Scalar::Null => Err("unsupported map key of type: %!s(<nil>), key: <nil>".to_string()),
    }
}

/// `strconv.FormatFloat(f, 'g', -1, 32)` with go-yaml's spellings of the non-finite values.
fn go_float32_g(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf".into() } else { "-.inf".into() };
    }
    let f32v = f as f32;
    if f32v == 0.0 {
        return if f32v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // Shortest digits of the float32 and its decimal exponent, from Rust's `{:e}`.
    let sci = format!("{f32v:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let (head, tail) = digits.split_at(1);
        let frac = if tail.is_empty() { String::new() } else { format!(".{tail}") };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{head}{frac}e{esign}{:02}", exp.abs())
    } else if exp < 0 {
        format!("{sign}0.{}{digits}", "0".repeat((-exp - 1) as usize))
    } else {
        let point = (exp + 1) as usize;
        if digits.len() <= point {
            format!("{sign}{digits}{}", "0".repeat(point - digits.len()))
        } else {
            format!("{sign}{}.{}", &digits[..point], &digits[point..])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plain(text: &str) -> Result<Value, String> {
        resolve(Tag::None, text, true).and_then(to_json)
    }

    /// Plain scalars as kubectl reads them (each row checked with sigs.k8s.io/yaml v1.6 over
    /// go.yaml.in/yaml/v2 v2.4, Go 1.26).
    #[test]
    fn plain_scalars_resolve_as_go_yaml_v2() {
        let rows: &[(&str, Value)] = &[
            ("0644", json!(420)),
            ("0o644", json!(420)),
            ("0O17", json!(15)),
            ("0x1F", json!(31)),
            ("0x_1F", json!(31)),
            ("+0x1F", json!(31)),
            ("-012", json!(-10)),
            ("0b101", json!(5)),
            ("-0b11", json!(-3)),
            ("1_000", json!(1000)),
            ("00", json!(0)),
            ("-0", json!(0)),
            ("08", json!(8)),
            ("012345678", json!(12345678)),
            ("0b2", json!("0b2")),
            ("0o8", json!("0o8")),
            ("+12", json!(12)),
            ("9223372036854775807", json!(9223372036854775807i64)),
            ("9223372036854775808", json!(9223372036854775808u64)),
            ("18446744073709551616", json!(18446744073709552000.0)),
            ("-9223372036854775809", json!(-9223372036854776000.0)),
            ("3.0", json!(3)),
            ("1e3", json!(1000)),
            ("1.", json!(1)),
            (".5", json!(0.5)),
            ("-.5", json!(-0.5)),
            ("0.1", json!(0.1)),
            ("1e-7", json!(1e-7)),
            ("1e21", json!(1e21)),
            ("1e400", json!("1e400")),
            ("1:20", json!("1:20")),
            ("_1", json!("_1")),
            (".", json!(".")),
            ("on", json!(true)),
            ("On", json!(true)),
            ("oN", json!("oN")),
            ("off", json!(false)),
            ("yes", json!(true)),
            ("yEs", json!("yEs")),
            ("y", json!(true)),
            ("Y", json!(true)),
            ("n", json!(false)),
            ("NO", json!(false)),
            ("True", json!(true)),
            ("tRUE", json!("tRUE")),
            ("~", Value::Null),
            ("", Value::Null),
            ("Null", Value::Null),
            ("nULL", json!("nULL")),
            ("2001-12-14", json!("2001-12-14")),
            ("2001-12-14t21:59:43.10-05:00", json!("2001-12-14t21:59:43.10-05:00")),
            ("inf", json!("inf")),
            ("NaN", json!("NaN")),
        ];
        for (text, want) in rows {
            assert_eq!(plain(text).as_ref(), Ok(want), "{text:?}");
        }
        for text in [".inf", "-.Inf", ".nan"] {
            assert!(plain(text).unwrap_err().starts_with("json: unsupported value: "), "{text}");
        }
    }

    #[test]
    fn quoted_and_tagged_scalars() {
        let r = |tag, text: &str, plain| resolve(tag, text, plain).and_then(to_json);
        assert_eq!(r(Tag::None, "0644", false), Ok(json!("0644")), "quoted");
        assert_eq!(r(Tag::None, "on", false), Ok(json!("on")));
        assert_eq!(r(Tag::Str, "12", true), Ok(json!("12")));
        assert_eq!(r(Tag::Int, "0644", false), Ok(json!(420)), "a tag resolves a quoted scalar");
        assert_eq!(r(Tag::Float, "1", true), Ok(json!(1)));
        assert_eq!(r(Tag::Bool, "yes", true), Ok(json!(true)));
        assert_eq!(r(Tag::Other, "12", true), Ok(json!("12")));
        assert_eq!(r(Tag::Binary, "aGVs\n bG8=", false), Ok(json!("hello")));
        assert_eq!(r(Tag::Timestamp, "2001-12-14", true), Ok(json!("2001-12-14")));
        assert_eq!(r(Tag::Int, "abc", true), Err("cannot decode !!str `abc` as a !!int".into()));
        assert_eq!(r(Tag::Bool, "1", true), Err("cannot decode !!int `1` as a !!bool".into()));
        assert_eq!(r(Tag::Binary, "!!", false), Err("!!binary value contains invalid base64 data".into()));
    }

    #[test]
    fn keys_become_strings_as_sigs_yaml_writes_them() {
        let k = |text: &str| resolve(Tag::None, text, true).and_then(key_string);
        assert_eq!(k("12"), Ok("12".into()));
        assert_eq!(k("0x10"), Ok("16".into()));
        assert_eq!(k("true"), Ok("true".into()));
        assert_eq!(k("1.5"), Ok("1.5".into()));
        assert_eq!(k("1e6"), Ok("1e+06".into()));
        assert_eq!(k("100000.0"), Ok("100000".into()));
        assert_eq!(k("0.0001"), Ok("0.0001".into()));
        assert_eq!(k("0.00001"), Ok("1e-05".into()));
        assert_eq!(k("0.1"), Ok("0.1".into()));
        assert!(k("~").unwrap_err().starts_with("unsupported map key"));
    }
}
