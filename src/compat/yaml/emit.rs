//! Writing JSON as YAML that kubectl reads back as the same JSON (`kruise check --mutated-out`).
//! A YAML 1.2 writer leaves `yes`, `on`, `0644` or `1_000` unquoted, which kubectl's YAML 1.1
//! reader turns into a boolean or a number; here a string is written plain only when
//! [`resolve`](super::resolve) reads it back as that string, and double-quoted (JSON escapes are
//! YAML escapes) otherwise.

use serde_json::Value;

use super::resolve::{Scalar, Tag, resolve};

/// The YAML of one document (block style, two-space indentation, a final newline).
pub fn to_yaml(value: &Value) -> String {
    let mut out = String::new();
    match value {
        Value::Object(m) if !m.is_empty() => block_map(value, 0, &mut out),
        Value::Array(a) if !a.is_empty() => block_seq(value, 0, &mut out),
        other => {
            out.push_str(&inline(other));
            out.push('\n');
        }
    }
    out
}

fn indent(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

fn block_map(value: &Value, level: usize, out: &mut String) {
    let Value::Object(map) = value else { return };
    for (k, v) in map {
        indent(out, level);
        out.push_str(&string(k));
        out.push(':');
        child(v, level, out);
    }
}

fn block_seq(value: &Value, level: usize, out: &mut String) {
    let Value::Array(items) = value else { return };
    for v in items {
        indent(out, level);
        out.push('-');
        match v {
            // A mapping item starts on the dash's line.
            Value::Object(m) if !m.is_empty() => {
                let mut nested = String::new();
                block_map(v, level + 2, &mut nested);
                out.push(' ');
                out.push_str(nested.trim_start());
            }
            _ => child(v, level, out),
        }
    }
}

/// The value after `key:` or `-`: inline scalars and empty collections, else a nested block.
fn child(v: &Value, level: usize, out: &mut String) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            block_map(v, level + 2, out);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            block_seq(v, level + 2, out);
        }
        other => {
            out.push(' ');
            out.push_str(&inline(other));
            out.push('\n');
        }
    }
}

fn inline(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s),
        Value::Array(_) => "[]".into(),
        Value::Object(_) => "{}".into(),
    }
}

/// A string, plain when that reads back as the same string, else double-quoted.
fn string(s: &str) -> String {
    if plain_is_safe(s) { s.to_string() } else { Value::String(s.to_string()).to_string() }
}

fn plain_is_safe(s: &str) -> bool {
    let Some(first) = s.chars().next() else { return false };
    let indicator = "-?:,[]{}#&*!|>'\"%@`".contains(first);
    let awkward = s.starts_with(' ')
        || s.ends_with(' ')
        || s.contains(": ")
        || s.contains(" #")
        || s.ends_with(':')
        || s.contains(['\n', '\r', '\t'])
        || s.chars().any(char::is_control)
        || s == "<<";
    !indicator && !awkward && matches!(resolve(Tag::None, s, true), Ok(Scalar::Str(ref back)) if back == s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compat::yaml::documents;
    use serde_json::json;

    #[test]
    fn strings_kubectl_would_retype_are_quoted() {
        let v = json!({"a": "yes", "b": "on", "c": "0644", "d": "1_000", "e": "plain text", "f": "", "g": "~",
            "h": "x: y", "i": "- item", "j": "multi\nline", "k": 420, "l": true, "m": null, "n": [], "o": {},
            "p": [{"name": "c", "ports": [{"containerPort": 80}]}, "s"], "on": "key", "q": "#x", "r": "a #b",
            "s": "3.0", "t": "2001-12-14", "u": "café", "<<": "merge", "w": [[1, 2], []]});
        let text = to_yaml(&v);
        assert!(text.contains("a: \"yes\"\n") && text.contains("\"on\": key\n"), "{text}");
        assert!(text.contains("e: plain text\n") && text.contains("u: café\n"), "{text}");
        let back = documents(&text).remove(0).unwrap().value;
        assert_eq!(back, v, "{text}");
    }
}
