//! The fields of a text log line, written exactly as tracing-subscriber's `DefaultFields` writes
//! them without colours, at a fraction of the cost (issue 16: the per-review line cost about 6%
//! of a `/mutate-pod` request, most of it `DefaultFields` pushing every field, `=` and quote
//! through `core::fmt` and the message through its ANSI-escaping writer one character at a
//! time). Strings and messages that need no escaping are written as they are; anything else
//! (escapes, errors, `log.` and `r#` fields, coloured output) is handed to `DefaultVisitor`
//! itself, so the line is the same byte for byte. The JSON format is not affected.

use std::fmt::{self, Write as _};

use tracing::field::{Field, Visit};
use tracing_subscriber::field::{RecordFields, VisitOutput};
use tracing_subscriber::fmt::FormatFields;
use tracing_subscriber::fmt::format::{DefaultFields, DefaultVisitor, Writer};

/// `DefaultFields`, faster (see the module documentation).
#[derive(Debug, Default)]
pub struct TextFields;

impl<'writer> FormatFields<'writer> for TextFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'writer>, fields: R) -> fmt::Result {
        if writer.has_ansi_escapes() {
            return DefaultFields::new().format_fields(writer, fields);
        }
        let mut visitor = Visitor { writer, is_empty: true, result: Ok(()) };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct Visitor<'a> {
    writer: Writer<'a>,
    is_empty: bool,
    result: fmt::Result,
}

impl Visitor<'_> {
    /// `DefaultVisitor` writes this field (it pads before it as this visitor does).
    fn delegate(&mut self, record: impl FnOnce(&mut DefaultVisitor<'_>)) {
        let mut inner = DefaultVisitor::new(self.writer.by_ref(), self.is_empty);
        record(&mut inner);
        self.result = inner.finish();
        self.is_empty = false;
    }

    /// Whether this visitor writes the field named `name` itself.
    fn plain(&self, name: &str) -> bool {
        !name.starts_with("log.") && !name.starts_with("r#")
    }

    fn pad(&mut self) -> fmt::Result {
        if self.is_empty {
            self.is_empty = false;
            Ok(())
        } else {
            self.writer.write_char(' ')
        }
    }
}

impl Visit for Visitor<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        let name = field.name();
        if self.result.is_err() {
            return;
        }
        if name == "message" {
            return self.record_debug(field, &format_args!("{value}"));
        }
        if !self.plain(name) || !debug_is_quoted(value) {
            return self.delegate(|v| v.record_str(field, value));
        }
        self.result = self.pad().and_then(|()| {
            self.writer.write_str(name)?;
            self.writer.write_str("=\"")?;
            self.writer.write_str(value)?;
            self.writer.write_char('"')
        });
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        if self.result.is_err() {
            return;
        }
        if !self.plain(field.name()) {
            return self.delegate(|v| v.record_bool(field, value));
        }
        self.result = self.pad().and_then(|()| {
            self.writer.write_str(field.name())?;
            self.writer.write_str(if value { "=true" } else { "=false" })
        });
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        if self.result.is_err() {
            return;
        }
        self.delegate(|v| v.record_error(field, value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        let name = field.name();
        if self.result.is_err() {
            return;
        }
        if !self.plain(name) {
            return self.delegate(|v| v.record_debug(field, value));
        }
        self.result = self.pad().and_then(|()| {
            if name == "message" {
                if self.writer.sanitizes_ansi_escapes() {
                    write!(Sanitizing(&mut self.writer), "{value:?}")
                } else {
                    write!(self.writer, "{value:?}")
                }
            } else {
                self.writer.write_str(name)?;
                self.writer.write_char('=')?;
                write!(self.writer, "{value:?}")
            }
        });
    }
}

/// tracing-subscriber's message escaping: what it writes character by character, with the
/// chunks that need no escaping written whole.
struct Sanitizing<'a, 'b>(&'a mut Writer<'b>);

impl fmt::Write for Sanitizing<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if !needs_sanitizing(s) {
            return self.0.write_str(s);
        }
        for ch in s.chars() {
            match ch {
                '\x1b' => self.0.write_str("\\x1b")?,
                '\x07' => self.0.write_str("\\x07")?,
                '\x08' => self.0.write_str("\\x08")?,
                '\x0c' => self.0.write_str("\\x0c")?,
                '\x7f' => self.0.write_str("\\x7f")?,
                ch if ('\u{80}'..='\u{9f}').contains(&ch) => write!(self.0, "\\u{{{:x}}}", ch as u32)?,
                _ => self.0.write_char(ch)?,
            }
        }
        Ok(())
    }
}

/// Whether `{:?}` of `s` is `s` in double quotes: printable ASCII without `"` or `\`.
fn debug_is_quoted(s: &str) -> bool {
    s.bytes().all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\')
}

/// Whether the message escaping of tracing-subscriber changes `s` (ESC, BEL, BS, FF, DEL and
/// the C1 controls U+0080–U+009F, which are written as `\xc2\x80`–`\xc2\x9f`).
fn needs_sanitizing(s: &str) -> bool {
    let bytes = s.as_bytes();
    bytes.iter().enumerate().any(|(i, &b)| {
        matches!(b, 0x1b | 0x07 | 0x08 | 0x0c | 0x7f)
            || (b == 0xc2 && bytes.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl io::Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[derive(Debug, thiserror::Error)]
    #[error("outer \"failure\"")]
    struct Outer(#[source] io::Error);

    /// Every kind of field, with and without what needs escaping.
    fn events() {
        let texts = [
            "plain text",
            "",
            "with \"quotes\" and \\ backslash",
            "new\nline\ttab",
            "\u{1b}[31mred\u{1b}[0m",
            "bell\u{7} del\u{7f} c1\u{85}\u{9f} nbsp\u{a0}",
            "été ☺ \u{200b}",
            "'single'",
            "~/a{b}",
        ];
        for t in texts {
            tracing::info!(webhook = "/mutate-pod", namespace = t, "admission review");
            tracing::info!(uid = %t, kind = ?t, message = %t, "m");
            tracing::warn!(error = %t, "bad admission request");
            tracing::info!("{t}");
            tracing::info!(r#type = t, log.target = t, a = t);
            tracing::info!(message = t);
        }
        let err = Outer(io::Error::other("inner \u{1b}x"));
        tracing::error!(error = &err as &(dyn std::error::Error + 'static), "failed");
        tracing::info!(
            allowed = true,
            dry_run = false,
            code = 200u16,
            duration_us = 1234u64,
            n = -5i64,
            f = 1.5f64,
            big = u128::MAX,
            operation = ?kube::core::admission::Operation::Create,
            opt = ?Some("x"),
            "admission review"
        );
        tracing::info!(empty = "");
        tracing::info!(only = 1);
    }

    fn lines(fields: bool, ansi: bool) -> String {
        let buffer = Buffer::default();
        let writer = buffer.clone();
        let builder = tracing_subscriber::fmt().without_time().with_ansi(ansi).with_writer(move || writer.clone());
        if fields {
            tracing::subscriber::with_default(builder.fmt_fields(TextFields).finish(), events);
        } else {
            tracing::subscriber::with_default(builder.finish(), events);
        }
        String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap()
    }

    /// The lines are those of tracing-subscriber's own fields, byte for byte, with and without
    /// colours.
    #[test]
    fn same_lines_as_default_fields() {
        for ansi in [false, true] {
            let (ours, theirs) = (lines(true, ansi), lines(false, ansi));
            assert!(theirs.lines().count() >= 50, "{theirs}");
            assert_eq!(ours, theirs);
        }
    }

    #[test]
    fn escaping_predicates() {
        for (s, quoted, sanitized) in [
            ("abc /-:~", true, false),
            ("a\"b", false, false),
            ("a\\b", false, false),
            ("é", false, false),
            ("\u{85}", false, true),
            ("\u{a0}", false, false),
            ("\u{1b}", false, true),
            ("\n", false, false),
        ] {
            assert_eq!(debug_is_quoted(s), quoted, "{s:?}");
            // Conservative: printable non-ASCII is written as it is by `{:?}` but delegated here.
            assert!(!debug_is_quoted(s) || format!("{s:?}") == format!("\"{s}\""), "{s:?}");
            assert_eq!(needs_sanitizing(s), sanitized, "{s:?}");
        }
    }
}
