//! Manifest text as kubectl reads it (`k8s.io/apimachinery/pkg/util/yaml.NewYAMLOrJSONDecoder`,
//! which `kubectl apply -f` uses, over `sigs.k8s.io/yaml` and go-yaml v2):
//! - a stream whose first non-blank character is `{` is a stream of JSON values, read as JSON;
//! - anything else is YAML, split into documents at lines starting with `---` (only spaces or a
//!   `#` comment may follow on that line), each document read as YAML 1.1 with go-yaml v2's
//!   scalar resolution ([`resolve`]), anchors and aliases, and merge keys (`<<: *base`, a map or
//!   a list of maps; keys of the map win, and of the list the earlier entries);
//! - empty documents and documents that are `null` are dropped.
//!
//! Each document remembers the 1-based line of its first content (not of a comment or blank
//! line before it), and, for a mapping with an `items` list (a `kind: List`), the line of each
//! item. Documents fail one by one: a broken document is an error at its line and the other
//! documents of the file are still read (kubectl stops at the first one; a checker reports all).

pub mod emit;
pub mod resolve;

use std::collections::{HashMap, HashSet};

use granit_parser::{Event, Options, Parser, ScalarStyle, ScanError, Span};
use serde_json::{Map, Value};

use resolve::Tag;

/// One document of a manifest stream.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    /// 1-based line of the document's first content.
    pub line: usize,
    /// The document as the JSON kubectl would send.
    pub value: Value,
    /// When the document is a mapping with an `items` sequence: the line of each item.
    pub item_lines: Vec<usize>,
}

/// A document that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct DocumentError {
    /// 1-based line of the problem (of the document when the problem has no position).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Reads every document of a manifest stream, in order.
pub fn documents(text: &str) -> Vec<Result<Document, DocumentError>> {
    if text.trim_start().starts_with('{') { json_documents(text) } else { yaml_documents(text, 1) }
}

/// A stream of JSON values (`{...} {...}`). As apimachinery's decoder, a stream that fails as
/// JSON at its first or second value is read as YAML from there on (so `{a: 1}` is a YAML flow
/// mapping, and a JSON object may be followed by YAML); after two JSON values an error ends it.
fn json_documents(text: &str) -> Vec<Result<Document, DocumentError>> {
    let mut out = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let mut offset = 0;
    let mut count = 0;
    loop {
        let start = offset + text[offset..].len() - text[offset..].trim_start().len();
        let line = line_of(text, start);
        match stream.next() {
            None => break,
            Some(Ok(value)) => {
                offset = stream.byte_offset();
                count += 1;
                if !value.is_null() {
                    let item_lines = match value.get("items").and_then(Value::as_array) {
                        Some(items) => vec![line; items.len()],
                        None => Vec::new(),
                    };
                    out.push(Ok(Document { line, value, item_lines }));
                }
            }
            Some(Err(_)) if count <= 1 => {
                out.extend(yaml_documents(&text[offset..], line_of(text, offset)));
                break;
            }
            Some(Err(e)) => {
                out.push(Err(DocumentError { line: e.line().max(1), message: format!("invalid JSON: {e}") }));
                break;
            }
        }
    }
    out
}

fn line_of(text: &str, byte: usize) -> usize {
    text.as_bytes()[..byte.min(text.len())].iter().filter(|b| **b == b'\n').count() + 1
}

/// The YAML documents of `text` (whose first line is `first_line` of the file): kubectl's
/// `YAMLReader` split, then each part parsed alone.
fn yaml_documents(text: &str, first_line: usize) -> Vec<Result<Document, DocumentError>> {
    let mut out = Vec::new();
    let mut part_start = 0usize; // byte offset of the current part
    let mut part_line = first_line; // its first line
    let mut part_error: Option<DocumentError> = None;
    let mut offset = 0usize;
    for (line_no, line) in (first_line..).zip(text.split_inclusive('\n')) {
        if let Some(rest) = line.strip_prefix("---") {
            out.extend(finish_part(&text[part_start..offset], part_line, part_error.take()));
            let rest = rest.trim();
            if !rest.is_empty() && !rest.starts_with('#') {
                part_error =
                    Some(DocumentError { line: line_no, message: format!("invalid Yaml document separator: {rest}") });
            }
            part_start = offset + line.len();
            part_line = line_no + 1;
        }
        offset += line.len();
    }
    out.extend(finish_part(&text[part_start..], part_line, part_error));
    out
}

fn finish_part(part: &str, first_line: usize, error: Option<DocumentError>) -> Option<Result<Document, DocumentError>> {
    if let Some(e) = error {
        return Some(Err(e));
    }
    match parse_part(part) {
        Ok(None) => None,
        Ok(Some(mut doc)) => {
            doc.line += first_line - 1;
            doc.item_lines.iter_mut().for_each(|l| *l += first_line - 1);
            Some(Ok(doc))
        }
        Err(mut e) => {
            e.line += first_line - 1;
            Some(Err(e))
        }
    }
}

/// Nodes alias expansion may add to one document before it is refused (go-yaml: "excessive
/// aliasing"); real manifests stay far below.
const ALIAS_BUDGET: usize = 1_000_000;

/// Builds the JSON of the first document of one part.
struct Builder<'a> {
    parser: Parser<'a, granit_parser::StrInput<'a>>,
    anchors: HashMap<usize, Value>,
    building: HashSet<usize>,
    budget: usize,
}

fn parse_part(part: &str) -> Result<Option<Document>, DocumentError> {
    let mut options = Options::default();
    options.set_emit_comments(false);
    let mut b = Builder {
        parser: Parser::new_from_str_with_options(part, options),
        anchors: HashMap::new(),
        building: HashSet::new(),
        budget: ALIAS_BUDGET,
    };
    loop {
        let (event, span) = b.next()?;
        match event {
            Event::StreamStart | Event::DocumentStart(..) => {}
            Event::StreamEnd => return Ok(None),
            event => {
                let line = span.start.line();
                let mut item_lines = Vec::new();
                let value = b.node(event, span, Some(&mut item_lines))?;
                // Only the first document of a part is read (go-yaml's Unmarshal).
                if value.is_null() {
                    return Ok(None);
                }
                return Ok(Some(Document { line, value, item_lines }));
            }
        }
    }
}

fn error_at(span: &Span, message: impl Into<String>) -> DocumentError {
    DocumentError { line: span.start.line(), message: message.into() }
}

fn scan_error(e: &ScanError) -> DocumentError {
    DocumentError { line: e.marker().line().max(1), message: e.info() }
}

fn tag_of(tag: Option<&granit_parser::Tag>) -> Tag {
    match tag {
        None => Tag::None,
        Some(t) => Tag::from_full(&format!("{}{}", t.handle(), t.suffix())),
    }
}

fn value_size(v: &Value) -> usize {
    match v {
        Value::Array(a) => 1 + a.iter().map(value_size).sum::<usize>(),
        Value::Object(m) => 1 + m.values().map(value_size).sum::<usize>(),
        _ => 1,
    }
}

impl<'a> Builder<'a> {
    fn next(&mut self) -> Result<(Event<'a>, Span), DocumentError> {
        match self.parser.next_event() {
            Some(Ok(pair)) => Ok(pair),
            Some(Err(e)) => Err(scan_error(&e)),
            None => Err(DocumentError { line: 1, message: "unexpected end of the document".into() }),
        }
    }

    /// Builds the node that starts with `event`; `item_lines` (root only) collects the lines of
    /// the elements of an `items` sequence.
    fn node(
        &mut self,
        event: Event<'a>,
        span: Span,
        item_lines: Option<&mut Vec<usize>>,
    ) -> Result<Value, DocumentError> {
        match event {
            Event::Scalar(text, style, anchor, tag) => {
                let scalar = resolve::resolve(tag_of(tag.as_deref()), &text, style == ScalarStyle::Plain)
                    .map_err(|m| error_at(&span, m))?;
                let value = resolve::to_json(scalar).map_err(|m| error_at(&span, m))?;
                self.anchor(anchor, &value);
                Ok(value)
            }
            Event::Alias(id) => {
                if self.building.contains(&id) {
                    return Err(error_at(&span, "anchor value contains itself"));
                }
                let value =
                    self.anchors.get(&id).cloned().ok_or_else(|| error_at(&span, "unknown anchor referenced"))?;
                self.budget = self
                    .budget
                    .checked_sub(value_size(&value))
                    .ok_or_else(|| error_at(&span, "document contains excessive aliasing"))?;
                Ok(value)
            }
            Event::SequenceStart(_, anchor, _) => {
                self.building.insert(anchor);
                let mut items = Vec::new();
                let mut lines = item_lines;
                loop {
                    let (event, span) = self.next()?;
                    if matches!(event, Event::SequenceEnd) {
                        break;
                    }
                    if let Some(lines) = lines.as_deref_mut() {
                        lines.push(span.start.line());
                    }
                    items.push(self.node(event, span, None)?);
                }
                let value = Value::Array(items);
                self.building.remove(&anchor);
                self.anchor(anchor, &value);
                Ok(value)
            }
            Event::MappingStart(_, anchor, _) => {
                self.building.insert(anchor);
                let value = Value::Object(self.mapping(item_lines)?);
                self.building.remove(&anchor);
                self.anchor(anchor, &value);
                Ok(value)
            }
            other => Err(error_at(&span, format!("unexpected YAML event {other:?}"))),
        }
    }

    fn anchor(&mut self, anchor: usize, value: &Value) {
        if anchor != 0 {
            self.anchors.insert(anchor, value.clone());
        }
    }

    /// The entries of a mapping, up to its end: keys in order, a later key replacing an earlier
    /// one, merge keys (`<<`) setting every key of the merged maps at their place (go-yaml v2).
    fn mapping(&mut self, mut item_lines: Option<&mut Vec<usize>>) -> Result<Map<String, Value>, DocumentError> {
        let mut map = Map::new();
        loop {
            let (event, span) = self.next()?;
            let key = match event {
                Event::MappingEnd => return Ok(map),
                Event::Scalar(ref text, style, anchor, ref tag) => {
                    let tag_full = tag.as_deref().map(|t| format!("{}{}", t.handle(), t.suffix()));
                    let is_merge = text == "<<"
                        && ((style == ScalarStyle::Plain && tag.is_none())
                            || tag_full.as_deref() == Some("tag:yaml.org,2002:merge"));
                    if is_merge {
                        let (event, vspan) = self.next()?;
                        let merged = self.node(event, vspan, None)?;
                        merge_into(&mut map, merged).map_err(|m| error_at(&vspan, m))?;
                        continue;
                    }
                    let scalar = resolve::resolve(tag_of(tag.as_deref()), text, style == ScalarStyle::Plain)
                        .map_err(|m| error_at(&span, m))?;
                    let key = resolve::key_string(scalar).map_err(|m| error_at(&span, m))?;
                    if anchor != 0 {
                        self.anchors.insert(anchor, Value::String(key.clone()));
                    }
                    key
                }
                Event::Alias(id) => match self.anchors.get(&id) {
                    Some(Value::String(s)) => s.clone(),
                    Some(Value::Bool(b)) => b.to_string(),
                    Some(Value::Number(n)) => n.to_string(),
                    Some(other) => return Err(error_at(&span, format!("invalid map key: {other}"))),
                    None => return Err(error_at(&span, "unknown anchor referenced")),
                },
                other => {
                    // A sequence or mapping as a key: read it to report it as go-yaml does.
                    let key = self.node(other, span, None)?;
                    return Err(error_at(&span, format!("invalid map key: {key}")));
                }
            };
            let (event, vspan) = self.next()?;
            let lines = if key == "items" { item_lines.take() } else { None };
            let value = self.node(event, vspan, lines)?;
            map.insert(key, value);
        }
    }
}

/// `<<: value`: a map, or a list of maps of which the earlier win.
fn merge_into(map: &mut Map<String, Value>, merged: Value) -> Result<(), String> {
    const WANT_MAP: &str = "map merge requires map or sequence of maps as the value";
    match merged {
        Value::Object(m) => {
            map.extend(m);
            Ok(())
        }
        Value::Array(list) => {
            if !list.iter().all(Value::is_object) {
                return Err(WANT_MAP.into());
            }
            for m in list.into_iter().rev() {
                if let Value::Object(m) = m {
                    map.extend(m);
                }
            }
            Ok(())
        }
        _ => Err(WANT_MAP.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(text: &str) -> Vec<(usize, Value)> {
        documents(text).into_iter().map(|d| d.map(|d| (d.line, d.value)).unwrap()).collect()
    }

    #[test]
    fn lines_are_those_of_each_documents_first_content() {
        let text = "# leading comment\n\napiVersion: v1\nkind: A\n---\n# c\n\nkind: B\ndata: |\n  # not a comment\n  x\n\n---\n\n# only a comment\n---   # a comment after the separator\nkind: C\n";
        let docs = ok(text);
        assert_eq!(docs.iter().map(|(l, _)| *l).collect::<Vec<_>>(), vec![3, 8, 17]);
        assert_eq!(docs[1].1["data"], "# not a comment\nx\n");
        // A blank line before `---` does not give the document the next one's line.
        let docs = ok("a: 1\n\n---\nb: 2\n");
        assert_eq!(docs.iter().map(|(l, _)| *l).collect::<Vec<_>>(), vec![1, 4]);
    }

    #[test]
    fn list_items_have_their_own_lines() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- kind: A\n  x: 1\n- kind: B\n-   kind: C\n";
        let d = documents(text).remove(0).unwrap();
        assert_eq!(d.item_lines, vec![4, 6, 7]);
    }

    #[test]
    fn merge_keys_anchors_and_aliases() {
        let text = "base: &b {a: 1, b: 1}\nother: &o {b: 2, c: 2}\nx:\n  <<: [*b, *o]\n  c: 3\nz:\n  a: 0\n  <<: *b\ny: yes\n\"<<\": quoted\n";
        let v = &ok(text)[0].1;
        assert_eq!(v["x"], json!({"a": 1, "b": 1, "c": 3}));
        assert_eq!(v["z"], json!({"a": 1, "b": 1}), "go-yaml v2: a merge sets keys already present");
        assert_eq!(v["true"], true, "the key `y` is the YAML 1.1 boolean true");
        assert_eq!(v["<<"], "quoted");
        let errs = |t: &str| documents(t).remove(0).unwrap_err().message;
        assert_eq!(errs("a: 1\n<<: 3\n"), "map merge requires map or sequence of maps as the value");
        assert_eq!(errs("a: &a [*a]\n"), "anchor value contains itself");
    }

    #[test]
    fn errors_stay_in_their_document() {
        let text = "a: 1\n---\nb: [oops\n---\nc: 3\n--- x\nd: 4\n---\ne: .inf\n";
        let docs = documents(text);
        assert_eq!(docs.len(), 5);
        assert_eq!(docs[0].as_ref().map(|d| d.line), Ok(1));
        let e = docs[1].as_ref().unwrap_err();
        assert!(e.line >= 3, "{e}");
        assert_eq!(docs[2].as_ref().map(|d| d.value.clone()), Ok(json!({"c": 3})));
        assert_eq!(docs[3], Err(DocumentError { line: 6, message: "invalid Yaml document separator: x".into() }));
        assert_eq!(docs[4], Err(DocumentError { line: 9, message: "json: unsupported value: +Inf".into() }));
    }

    #[test]
    fn json_streams_are_json() {
        let text = "  {\"a\": 3.0, \"b\": \"on\"}\n\n{\"b\": [1,\n 2]}\n{\"c\": ";
        let docs = documents(text);
        assert_eq!(docs[0].as_ref().map(|d| (d.line, d.value.clone())), Ok((1, json!({"a": 3.0, "b": "on"}))));
        assert_eq!(docs[1].as_ref().map(|d| d.line), Ok(3));
        assert!(docs[2].is_err());
    }

    #[test]
    fn empty_and_null_documents_are_dropped() {
        assert!(documents("").is_empty());
        assert!(documents("---\n# nothing\n---\nnull\n---\n~\n").is_empty());
        assert_eq!(ok("--- \n--- #c\nk: v\n...\n"), vec![(3, json!({"k": "v"}))]);
    }
}
