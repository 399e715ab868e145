//! Kubernetes-style field errors and how they are rendered (spec §2.0: "Messages keep kruise's
//! field-error format"). Reproduces `k8s.io/apimachinery/pkg/util/validation/field/errors.go`
//! (`Error.Error()`, `ErrorBody()`, the `Invalid`/`Required`/`NotSupported`/`TooLong`/`TooMany`
//! constructors), `field.Path.String()` for the path helpers, and
//! `k8s.io/apimachinery/pkg/util/errors.NewAggregate(..).Error()` for [`aggregate`].
//!
//! Value rendering follows Go: strings with `%q` (see [`go_quote`]), integers and booleans bare,
//! floats with `%v`, `null` for a nil value. Arrays and objects are rendered as compact Go
//! `encoding/json` (apimachinery ≥ v0.34); kruise's vendored v0.32 printed them with `%#v`
//! (`[]string{"a"}`, `v1.LabelSelector{...}`), which cannot be recovered from a JSON value, so that
//! one difference is kept on purpose.

use std::fmt;

use serde_json::Value;

/// One Kubernetes-style field error: `<path>: <Type>: <value>: <detail>`.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    pub path: String,
    pub kind: ErrorKind,
    pub value: Option<serde_json::Value>,
    pub detail: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    Invalid,
    Required,
    Forbidden,
    NotSupported,
    Duplicate,
    Internal,
    TooLong,
    TooMany,
    NotFound,
}

impl ErrorKind {
    /// The human text Go's `ErrorType.String()` prints.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Invalid => "Invalid value",
            ErrorKind::Required => "Required value",
            ErrorKind::Forbidden => "Forbidden",
            ErrorKind::NotSupported => "Unsupported value",
            ErrorKind::Duplicate => "Duplicate value",
            ErrorKind::Internal => "Internal error",
            ErrorKind::TooLong => "Too long",
            ErrorKind::TooMany => "Too many",
            ErrorKind::NotFound => "Not found",
        }
    }

    /// The machine-readable `ErrorType` (what goes into `Status.details.causes[].reason`).
    pub fn reason(self) -> &'static str {
        match self {
            ErrorKind::Invalid => "FieldValueInvalid",
            ErrorKind::Required => "FieldValueRequired",
            ErrorKind::Forbidden => "FieldValueForbidden",
            ErrorKind::NotSupported => "FieldValueNotSupported",
            ErrorKind::Duplicate => "FieldValueDuplicate",
            ErrorKind::Internal => "InternalError",
            ErrorKind::TooLong => "FieldValueTooLong",
            ErrorKind::TooMany => "FieldValueTooMany",
            ErrorKind::NotFound => "FieldValueNotFound",
        }
    }

    /// Go never prints the bad value for these kinds, whatever it holds.
    fn omits_value(self) -> bool {
        matches!(self, ErrorKind::Required | ErrorKind::Forbidden | ErrorKind::TooLong | ErrorKind::Internal)
    }
}

impl FieldError {
    fn new(path: &str, kind: ErrorKind, value: Option<Value>, detail: impl Into<String>) -> Self {
        FieldError { path: path.to_string(), kind, value, detail: detail.into() }
    }

    /// `field.Invalid(path, value, detail)`.
    pub fn invalid(path: &str, value: impl Into<Value>, detail: impl Into<String>) -> Self {
        Self::new(path, ErrorKind::Invalid, Some(value.into()), detail)
    }

    /// `field.Required(path, detail)`.
    pub fn required(path: &str, detail: impl Into<String>) -> Self {
        Self::new(path, ErrorKind::Required, None, detail)
    }

    /// `field.Forbidden(path, detail)`.
    pub fn forbidden(path: &str, detail: impl Into<String>) -> Self {
        Self::new(path, ErrorKind::Forbidden, None, detail)
    }

    /// `field.Duplicate(path, value)`.
    pub fn duplicate(path: &str, value: impl Into<Value>) -> Self {
        Self::new(path, ErrorKind::Duplicate, Some(value.into()), "")
    }

    /// `field.NotFound(path, value)`.
    pub fn not_found(path: &str, value: impl Into<Value>) -> Self {
        Self::new(path, ErrorKind::NotFound, Some(value.into()), "")
    }

    /// `field.InternalError(path, err)`.
    pub fn internal(path: &str, detail: impl Into<String>) -> Self {
        Self::new(path, ErrorKind::Internal, None, detail)
    }

    /// `field.NotSupported(path, value, valid)`: detail `supported values: "a", "b"`.
    pub fn not_supported(path: &str, value: impl Into<Value>, valid: &[&str]) -> Self {
        let detail = if valid.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = valid.iter().map(|v| go_quote(v)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(path, ErrorKind::NotSupported, Some(value.into()), detail)
    }

    /// `field.TooLong(path, _, max)` (apimachinery v0.32 wording); a negative `max` gives
    /// "value is too long".
    pub fn too_long(path: &str, max_len: i64) -> Self {
        let detail = if max_len >= 0 {
            format!("may not be more than {max_len} bytes")
        } else {
            "value is too long".to_string()
        };
        Self::new(path, ErrorKind::TooLong, None, detail)
    }

    /// `field.TooMany(path, actual, max)`; negative numbers mean "unknown", as in Go.
    pub fn too_many(path: &str, actual: i64, max: i64) -> Self {
        let detail = if max >= 0 { format!("must have at most {max} items") } else { "has too many items".to_string() };
        let value = (actual >= 0).then(|| Value::from(actual));
        Self::new(path, ErrorKind::TooMany, value, detail)
    }

    /// Go's `ErrorBody()`: the message without the leading `path: `.
    pub fn body(&self) -> String {
        let mut s = String::from(self.kind.as_str());
        if !self.kind.omits_value()
            && let Some(value) = &self.value
        {
            s.push_str(": ");
            s.push_str(&render_value(value));
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.body())
    }
}

impl std::error::Error for FieldError {}

/// `utilerrors.NewAggregate(errs).Error()` (and `ErrorList.ToAggregate().Error()`): identical
/// messages are reported once; a single message is bare, several are `[e1, e2]`; none is "".
pub fn aggregate(errors: &[FieldError]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for msg in errors.iter().map(ToString::to_string) {
        if !seen.contains(&msg) {
            seen.push(msg);
        }
    }
    match seen.len() {
        0 => String::new(),
        1 => seen.remove(0),
        _ => format!("[{}]", seen.join(", ")),
    }
}

/// `fldPath.Child(name)`: `parent.name`, or `name` under the empty (nil) path.
pub fn child(parent: &str, name: &str) -> String {
    if parent.is_empty() { name.to_string() } else { format!("{parent}.{name}") }
}

/// `fldPath.Index(i)`: `parent[i]`.
pub fn index(parent: &str, i: usize) -> String {
    format!("{parent}[{i}]")
}

/// `fldPath.Key(k)`: `parent[k]` (Go does not quote the key).
pub fn key(parent: &str, k: &str) -> String {
    format!("{parent}[{k}]")
}

fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        Value::Number(n) => go_number(n, go_float_v),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_string(),
        Value::Array(_) | Value::Object(_) => {
            let mut out = String::new();
            go_json(value, &mut out);
            out
        }
    }
}

fn go_number(n: &serde_json::Number, float: fn(f64) -> String) -> String {
    if n.is_i64() || n.is_u64() { n.to_string() } else { n.as_f64().map(float).unwrap_or_else(|| n.to_string()) }
}

/// Go's `strconv.Quote` / `%q`: printable runes are kept, the rest escaped.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if go_is_print(c) => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// Approximates Go's `unicode.IsPrint` (letters, marks, numbers, punctuation, symbols and the
/// ASCII space). Exact for ASCII and Latin-1; above that, spaces, format characters, private use
/// and noncharacters are treated as non-printable, while unassigned code points (which Go also
/// escapes) are printed raw because there is no Unicode category table here.
fn go_is_print(c: char) -> bool {
    let u = c as u32;
    if u < 0x80 {
        return (0x20..0x7f).contains(&u);
    }
    if c.is_control() {
        return false;
    }
    let not_print: &[(u32, u32)] = &[
        (0x00a0, 0x00a0),
        (0x00ad, 0x00ad),
        (0x0600, 0x0605),
        (0x061c, 0x061c),
        (0x06dd, 0x06dd),
        (0x070f, 0x070f),
        (0x0890, 0x0891),
        (0x08e2, 0x08e2),
        (0x1680, 0x1680),
        (0x180e, 0x180e),
        (0x2000, 0x200f),
        (0x2028, 0x202f),
        (0x205f, 0x206f),
        (0x3000, 0x3000),
        (0xd800, 0xf8ff),
        (0xfdd0, 0xfdef),
        (0xfeff, 0xfeff),
        (0xfff9, 0xfffb),
        (0xfffe, 0xffff),
        (0x110bd, 0x110bd),
        (0x110cd, 0x110cd),
        (0x13430, 0x1343f),
        (0x1bca0, 0x1bca3),
        (0x1d173, 0x1d17a),
        (0xe0000, 0xe00ff),
        (0xe01f0, 0xe0fff),
        (0xf0000, 0x10ffff),
    ];
    if not_print.iter().any(|&(lo, hi)| (lo..=hi).contains(&u)) {
        return false;
    }
    // Every plane ends with two noncharacters (U+xFFFE, U+xFFFF).
    u & 0xfffe != 0xfffe
}

/// Shortest round-trip decimal digits of a finite, non-zero |f| and the exponent of the first
/// digit: 1234.5 -> ("12345", 3).
fn shortest_digits(f: f64) -> (String, i32) {
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exp.parse().unwrap_or(0))
}

fn exp_form(digits: &str, exp: i32, min_exp_digits: usize) -> String {
    let mut s = String::new();
    s.push_str(&digits[..1]);
    if digits.len() > 1 {
        s.push('.');
        s.push_str(&digits[1..]);
    }
    s.push('e');
    s.push(if exp < 0 { '-' } else { '+' });
    s.push_str(&format!("{:0width$}", exp.unsigned_abs(), width = min_exp_digits));
    s
}

fn plain_form(digits: &str, exp: i32) -> String {
    let point = exp + 1; // digits before the decimal point
    if point <= 0 {
        format!("0.{}{}", "0".repeat(point.unsigned_abs() as usize), digits)
    } else if point as usize >= digits.len() {
        format!("{}{}", digits, "0".repeat(point as usize - digits.len()))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    }
}

/// Go's `fmt.Sprintf("%v", f)` = `strconv.FormatFloat(f, 'g', -1, 64)`.
fn go_float_v(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let sign = if f < 0.0 { "-" } else { "" };
    let (digits, exp) = shortest_digits(f);
    if !(-4..6).contains(&exp) {
        format!("{sign}{}", exp_form(&digits, exp, 2))
    } else {
        format!("{sign}{}", plain_form(&digits, exp))
    }
}

/// Go's `encoding/json` float64 encoding ('f' unless the magnitude is below 1e-6 or at least
/// 1e21, then 'e' with a one-digit negative exponent kept as `e-7`).
fn go_float_json(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    let sign = if f < 0.0 { "-" } else { "" };
    let (digits, exp) = shortest_digits(f);
    let abs = f.abs();
    if !(1e-6..1e21).contains(&abs) {
        format!("{sign}{}", exp_form(&digits, exp, if exp < 0 { 1 } else { 2 }))
    } else {
        format!("{sign}{}", plain_form(&digits, exp))
    }
}

/// Compact Go `json.Marshal` of a JSON value (HTML-escaping `<`, `>`, `&`, U+2028, U+2029).
fn go_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&go_number(n, go_float_json)),
        Value::String(s) => go_json_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                go_json_string(k, out);
                out.push(':');
                go_json(v, out);
            }
            out.push('}');
        }
    }
}

fn go_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_like_go_field_error() {
        let cases: Vec<(FieldError, &str)> = vec![
            (
                FieldError::invalid("spec.replicas", -1, "must be greater than or equal to 0"),
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            ),
            (FieldError::required("spec.selector", ""), "spec.selector: Required value"),
            (
                FieldError::required("spec.template.spec.containers[0].image", "image is required"),
                "spec.template.spec.containers[0].image: Required value: image is required",
            ),
            (FieldError::forbidden("spec", "updates are forbidden"), "spec: Forbidden: updates are forbidden"),
            (
                FieldError::not_supported("spec.x", "foo", &["a", "b"]),
                "spec.x: Unsupported value: \"foo\": supported values: \"a\", \"b\"",
            ),
            (FieldError::not_supported("spec.x", "foo", &[]), "spec.x: Unsupported value: \"foo\""),
            (
                FieldError::invalid(
                    "spec.updateStrategy.type",
                    "X",
                    "must be 'ReCreate', InPlaceIfPossible or 'InPlaceOnly'",
                ),
                "spec.updateStrategy.type: Invalid value: \"X\": must be 'ReCreate', \
                 InPlaceIfPossible or 'InPlaceOnly'",
            ),
            (FieldError::duplicate("spec.names[1]", "a"), "spec.names[1]: Duplicate value: \"a\""),
            (FieldError::not_found("spec.node", "n1"), "spec.node: Not found: \"n1\""),
            (
                FieldError::too_long("metadata.annotations", 262144),
                "metadata.annotations: Too long: may not be more than 262144 bytes",
            ),
            (FieldError::too_long("x", -1), "x: Too long: value is too long"),
            (FieldError::too_many("x", 5, 3), "x: Too many: 5: must have at most 3 items"),
            (FieldError::too_many("x", -1, -1), "x: Too many: has too many items"),
            (FieldError::internal("spec", "boom"), "spec: Internal error: boom"),
            (FieldError::invalid("a", true, "d"), "a: Invalid value: true: d"),
            (FieldError::invalid("a", Value::Null, "d"), "a: Invalid value: null: d"),
            (FieldError::invalid("a", "", "d"), "a: Invalid value: \"\": d"),
            (FieldError::invalid("a", 1.5, "d"), "a: Invalid value: 1.5: d"),
            (FieldError::invalid("a", 1e6, "d"), "a: Invalid value: 1e+06: d"),
            (FieldError::invalid("a", 123456.0, "d"), "a: Invalid value: 123456: d"),
            (FieldError::invalid("a", 0.0001, "d"), "a: Invalid value: 0.0001: d"),
            (FieldError::invalid("a", 0.00001, "d"), "a: Invalid value: 1e-05: d"),
            (FieldError::invalid("a", -2.5e-7, "d"), "a: Invalid value: -2.5e-07: d"),
            (FieldError::invalid("a", u64::MAX, "d"), "a: Invalid value: 18446744073709551615: d"),
            (
                FieldError::invalid("spec.scaleStrategy.podsToDelete", json!(["p0", "p0"]), "dup"),
                "spec.scaleStrategy.podsToDelete: Invalid value: [\"p0\",\"p0\"]: dup",
            ),
            (
                FieldError::invalid("m", json!({"b": "<&>", "a": [1, 2.5, 1e21, 1e-7]}), ""),
                "m: Invalid value: {\"a\":[1,2.5,1e+21,1e-7],\"b\":\"\\u003c\\u0026\\u003e\"}",
            ),
            (
                FieldError { path: "p".into(), kind: ErrorKind::Invalid, value: None, detail: "omitted".into() },
                "p: Invalid value: omitted",
            ),
            (
                FieldError {
                    path: "p".into(),
                    kind: ErrorKind::Forbidden,
                    value: Some(json!("ignored")),
                    detail: String::new(),
                },
                "p: Forbidden",
            ),
        ];
        for (err, want) in cases {
            assert_eq!(err.to_string(), want, "{err:?}");
        }
    }

    #[test]
    fn quotes_like_go_strconv_quote() {
        let cases = [
            ("abc", r#""abc""#),
            ("a\"b\\c", r#""a\"b\\c""#),
            ("tab\there\nnl", r#""tab\there\nnl""#),
            ("\u{7}\u{8}\u{b}\u{c}\r", r#""\a\b\v\f\r""#),
            ("\u{1b}[0m\u{7f}", r#""\x1b[0m\x7f""#),
            ("héllo 世界", "\"héllo 世界\""),
            ("nb\u{a0}sp", r#""nb\u00a0sp""#),
            ("zw\u{200b}", r#""zw\u200b""#),
            ("bom\u{feff}", r#""bom\ufeff""#),
            ("\u{85}", r#""\u0085""#),
            ("emoji 😀", "\"emoji 😀\""),
            ("pua \u{f0000}", r#""pua \U000f0000""#),
        ];
        for (input, want) in cases {
            assert_eq!(go_quote(input), want, "{input:?}");
        }
    }

    #[test]
    fn aggregates_like_utilerrors() {
        let a = FieldError::required("a", "");
        let b = FieldError::forbidden("b", "no");
        let cases: Vec<(Vec<FieldError>, &str)> = vec![
            (vec![], ""),
            (vec![a.clone()], "a: Required value"),
            (vec![a.clone(), a.clone()], "a: Required value"),
            (vec![a.clone(), b.clone()], "[a: Required value, b: Forbidden: no]"),
            (vec![b.clone(), a.clone(), b.clone()], "[b: Forbidden: no, a: Required value]"),
        ];
        for (errs, want) in cases {
            assert_eq!(aggregate(&errs), want);
        }
    }

    #[test]
    fn builds_paths_like_field_path() {
        assert_eq!(child("", "key"), "key");
        assert_eq!(child("spec", "selector"), "spec.selector");
        assert_eq!(index(&child("spec", "containers"), 2), "spec.containers[2]");
        assert_eq!(key(&index("values", 0), "app"), "values[0][app]");
    }

    #[test]
    fn kind_reasons() {
        assert_eq!(ErrorKind::Invalid.reason(), "FieldValueInvalid");
        assert_eq!(ErrorKind::Internal.reason(), "InternalError");
        assert_eq!(ErrorKind::NotSupported.as_str(), "Unsupported value");
    }
}
