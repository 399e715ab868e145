//! `kruise check` output: one text line per object, a JSON report, or JUnit XML (a test suite per
//! input file), and the mutated objects written out as YAML.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Value, json};

use super::{Outcome, Status};

fn object_name(o: &Outcome) -> String {
    if o.namespace.is_empty() {
        format!("{} {}", o.kind, o.name)
    } else {
        format!("{} {}/{}", o.kind, o.namespace, o.name)
    }
}

/// One line per object, warnings indented below it.
pub fn text(outcomes: &[Outcome]) -> String {
    let mut s = String::new();
    for o in outcomes {
        let verdict = match &o.status {
            Status::Ok => "ok".to_string(),
            Status::Mutated => "mutated".to_string(),
            Status::Denied => format!("denied: {}", o.message),
            Status::Skipped(why) => format!("skipped: {why}"),
            Status::Error(e) => format!("error: {e}"),
        };
        let _ = writeln!(s, "{}:{}: {} ({}): {verdict}", o.file, o.line, object_name(o), o.operation);
        for w in &o.warnings {
            let _ = writeln!(s, "  warning: {w}");
        }
    }
    let count = |f: fn(&Status) -> bool| outcomes.iter().filter(|o| f(&o.status)).count();
    let _ = writeln!(
        s,
        "{} objects: {} admitted ({} mutated), {} denied, {} skipped, {} errors",
        outcomes.len(),
        count(|s| matches!(s, Status::Ok | Status::Mutated)),
        count(|s| matches!(s, Status::Mutated)),
        count(|s| matches!(s, Status::Denied)),
        count(|s| matches!(s, Status::Skipped(_))),
        count(|s| matches!(s, Status::Error(_))),
    );
    s
}

fn status_word(s: &Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Mutated => "mutated",
        Status::Denied => "denied",
        Status::Skipped(_) => "skipped",
        Status::Error(_) => "error",
    }
}

/// A machine-readable report.
pub fn json(outcomes: &[Outcome]) -> Value {
    let results: Vec<Value> = outcomes
        .iter()
        .map(|o| {
            let message = match &o.status {
                Status::Skipped(m) | Status::Error(m) => m.clone(),
                _ => o.message.clone(),
            };
            json!({
                "file": o.file, "line": o.line,
                "object": {"apiVersion": o.api_version, "kind": o.kind, "namespace": o.namespace, "name": o.name},
                "operation": o.operation,
                "result": status_word(&o.status),
                "allowed": matches!(o.status, Status::Ok | Status::Mutated),
                "code": o.code,
                "message": message,
                "warnings": o.warnings,
                "patch": o.patch,
            })
        })
        .collect();
    json!({"kind": "KruiseCheckReport", "results": results})
}

fn xml_escape(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '&' => "&amp;".to_string(),
            '<' => "&lt;".to_string(),
            '>' => "&gt;".to_string(),
            '"' => "&quot;".to_string(),
            '\'' => "&apos;".to_string(),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => " ".to_string(),
            c => c.to_string(),
        })
        .collect()
}

/// JUnit XML: a test suite per input file, a test case per object.
pub fn junit(outcomes: &[Outcome]) -> String {
    let mut by_file: BTreeMap<&str, Vec<&Outcome>> = BTreeMap::new();
    for o in outcomes {
        by_file.entry(o.file.as_str()).or_default().push(o);
    }
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"kruise check\">\n");
    for (file, cases) in by_file {
        let failures = cases.iter().filter(|o| o.status == Status::Denied).count();
        let errors = cases.iter().filter(|o| matches!(o.status, Status::Error(_))).count();
        let skipped = cases.iter().filter(|o| matches!(o.status, Status::Skipped(_))).count();
        let _ = writeln!(
            s,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">",
            xml_escape(file),
            cases.len()
        );
        for o in cases {
            let name = format!("{} ({}) line {}", object_name(o), o.operation, o.line);
            let _ = write!(s, "    <testcase classname=\"{}\" name=\"{}\"", xml_escape(file), xml_escape(&name));
            let body = match &o.status {
                Status::Denied => format!("<failure message=\"{}\" type=\"{}\"/>", xml_escape(&o.message), o.code),
                Status::Error(e) => format!("<error message=\"{}\"/>", xml_escape(e)),
                Status::Skipped(why) => format!("<skipped message=\"{}\"/>", xml_escape(why)),
                _ if o.warnings.is_empty() => String::new(),
                _ => format!("<system-out>{}</system-out>", xml_escape(&o.warnings.join("\n"))),
            };
            if body.is_empty() {
                s.push_str("/>\n");
            } else {
                let _ = writeln!(s, ">{body}</testcase>");
            }
        }
        s.push_str("  </testsuite>\n");
    }
    s.push_str("</testsuites>\n");
    s
}

/// Writes every admitted object as `<kind>-<namespace>-<name>.yaml` under `dir`.
pub fn write_mutated(dir: &Path, outcomes: &[Outcome]) -> std::io::Result<usize> {
    std::fs::create_dir_all(dir)?;
    let mut n = 0;
    for o in outcomes {
        let Some(obj) = &o.mutated else { continue };
        let mut file = o.kind.to_lowercase();
        for part in [&o.namespace, &o.name] {
            if !part.is_empty() {
                file.push('-');
                file.push_str(part);
            }
        }
        let yaml = serde_yaml_ng::to_string(obj).map_err(std::io::Error::other)?;
        std::fs::write(dir.join(format!("{file}.yaml")), yaml)?;
        n += 1;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_is_escaped() {
        assert_eq!(xml_escape("a<b>&\"'\u{1}"), "a&lt;b&gt;&amp;&quot;&apos; ");
    }
}
