//! `kruise check` output: one text line per object and a summary, a JSON report closed by a
//! `summary`, or JUnit XML (a test suite per input file, test cases named by kind, namespace and
//! name so that CI history can follow them), and the mutated objects written out as YAML. Inputs
//! that could not be read are reported in every format.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Value, json};

use super::{Outcome, Report, Status, display_name};

/// The counts closing every report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Objects checked or looked at.
    pub objects: usize,
    /// Admitted (mutated or not).
    pub admitted: usize,
    /// Admitted with changes.
    pub mutated: usize,
    /// Denied.
    pub denied: usize,
    /// Not intercepted by any webhook.
    pub skipped: usize,
    /// Intercepted by kruise, not checkable by this build.
    pub unchecked: usize,
    /// Check errors.
    pub errors: usize,
    /// Inputs that could not be read.
    pub unreadable: usize,
    /// Objects with warnings.
    pub warned: usize,
}

/// Counts a report.
pub fn summary(report: &Report) -> Summary {
    let count = |f: fn(&Status) -> bool| report.outcomes.iter().filter(|o| f(&o.status)).count();
    Summary {
        objects: report.outcomes.len(),
        admitted: count(|s| matches!(s, Status::Ok | Status::Mutated)),
        mutated: count(|s| matches!(s, Status::Mutated)),
        denied: count(|s| matches!(s, Status::Denied)),
        skipped: count(|s| matches!(s, Status::Skipped(_))),
        unchecked: count(|s| matches!(s, Status::Unchecked(_))),
        errors: count(|s| matches!(s, Status::Error(_))),
        unreadable: report.problems.len(),
        warned: report.outcomes.iter().filter(|o| !o.warnings.is_empty()).count(),
    }
}

/// One line per object, warnings indented below it, unreadable inputs, then the summary.
pub fn text(report: &Report) -> String {
    let mut s = String::new();
    for o in &report.outcomes {
        let verdict = match &o.status {
            Status::Ok => "ok".to_string(),
            Status::Mutated => "mutated".to_string(),
            Status::Denied => format!("denied: {}", o.message),
            Status::Skipped(why) => format!("skipped: {why}"),
            Status::Unchecked(why) => format!("UNCHECKED: {why}"),
            Status::Error(e) => format!("error: {e}"),
        };
        let _ = writeln!(s, "{}:{}: {} ({}): {verdict}", o.file, o.line, display_name(o), o.operation);
        for w in
            o.warnings.iter().filter(|w| !matches!(o.status, Status::Unchecked(_)) || !w.starts_with("unchecked: "))
        {
            let _ = writeln!(s, "  warning: {w}");
        }
    }
    for p in &report.problems {
        let place = match p.line {
            Some(line) => format!("{}:{line}", p.file),
            None => p.file.clone(),
        };
        let _ = writeln!(s, "{place}: unreadable, not checked: {}", p.message);
    }
    let n = summary(report);
    let _ = write!(
        s,
        "{} objects: {} admitted ({} mutated), {} denied, {} skipped, {} errors",
        n.objects, n.admitted, n.mutated, n.denied, n.skipped, n.errors
    );
    if n.unchecked > 0 {
        let _ = write!(s, ", {} UNCHECKED", n.unchecked);
    }
    if n.unreadable > 0 {
        let _ = write!(s, ", {} unreadable inputs", n.unreadable);
    }
    s.push('\n');
    s
}

fn status_word(s: &Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Mutated => "mutated",
        Status::Denied => "denied",
        Status::Skipped(_) => "skipped",
        Status::Unchecked(_) => "unchecked",
        Status::Error(_) => "error",
    }
}

/// A machine-readable report. Objects no webhook decided on (skipped, unchecked) carry no
/// verdict (`allowed`, `code`); a `summary` closes it.
pub fn json(report: &Report) -> Value {
    let results: Vec<Value> = report
        .outcomes
        .iter()
        .map(|o| {
            let mut r = json!({
                "file": o.file, "line": o.line,
                "object": {"apiVersion": o.api_version, "kind": o.kind, "namespace": o.namespace, "name": o.name},
                "operation": o.operation,
                "result": status_word(&o.status),
                "warnings": o.warnings,
            });
            if !o.generate_name.is_empty() {
                r["object"]["generateName"] = json!(o.generate_name);
            }
            match &o.status {
                Status::Skipped(m) | Status::Unchecked(m) | Status::Error(m) => r["message"] = json!(m),
                Status::Ok | Status::Mutated | Status::Denied => {
                    r["allowed"] = json!(matches!(o.status, Status::Ok | Status::Mutated));
                    r["code"] = json!(o.code);
                    r["message"] = json!(o.message);
                    r["patch"] = json!(o.patch);
                }
            }
            r
        })
        .collect();
    let problems: Vec<Value> =
        report.problems.iter().map(|p| json!({"file": p.file, "line": p.line, "message": p.message})).collect();
    let n = summary(report);
    json!({
        "kind": "KruiseCheckReport",
        "results": results,
        "unreadable": problems,
        "summary": {
            "objects": n.objects, "admitted": n.admitted, "mutated": n.mutated, "denied": n.denied,
            "skipped": n.skipped, "unchecked": n.unchecked, "errors": n.errors, "unreadable": n.unreadable,
            "warnings": n.warned,
        },
    })
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

/// JUnit XML: a test suite per input file, a test case per object named `Kind namespace/name
/// (OPERATION)` (the line is an attribute, so that moving an object does not rename its test), and
/// a test case in error per input that could not be read.
pub fn junit(report: &Report) -> String {
    let mut by_file: BTreeMap<&str, (Vec<&Outcome>, Vec<&super::Problem>)> = BTreeMap::new();
    for o in &report.outcomes {
        by_file.entry(o.file.as_str()).or_default().0.push(o);
    }
    for p in &report.problems {
        by_file.entry(p.file.as_str()).or_default().1.push(p);
    }
    let mut s = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"kruise check\">\n");
    for (file, (cases, problems)) in by_file {
        let failures = cases.iter().filter(|o| o.status == Status::Denied).count();
        let errors = cases.iter().filter(|o| matches!(o.status, Status::Error(_))).count() + problems.len();
        let skipped = cases.iter().filter(|o| matches!(o.status, Status::Skipped(_) | Status::Unchecked(_))).count();
        let _ = writeln!(
            s,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"{skipped}\">",
            xml_escape(file),
            cases.len() + problems.len()
        );
        for o in cases {
            let name = format!("{} ({})", display_name(o), o.operation);
            let _ = write!(
                s,
                "    <testcase classname=\"{}\" name=\"{}\" file=\"{}\" line=\"{}\"",
                xml_escape(file),
                xml_escape(&name),
                xml_escape(file),
                o.line
            );
            let body = match &o.status {
                Status::Denied => format!("<failure message=\"{}\" type=\"{}\"/>", xml_escape(&o.message), o.code),
                Status::Error(e) => format!("<error message=\"{}\"/>", xml_escape(e)),
                Status::Skipped(why) => format!("<skipped message=\"{}\"/>", xml_escape(why)),
                Status::Unchecked(why) => {
                    format!("<skipped message=\"{}\"/>", xml_escape(&format!("UNCHECKED: {why}")))
                }
                _ if o.warnings.is_empty() => String::new(),
                _ => format!("<system-out>{}</system-out>", xml_escape(&o.warnings.join("\n"))),
            };
            if body.is_empty() {
                s.push_str("/>\n");
            } else {
                let _ = writeln!(s, ">{body}</testcase>");
            }
        }
        for p in problems {
            let name = match p.line {
                Some(line) => format!("read document at line {line}"),
                None => "read file".to_string(),
            };
            let _ = writeln!(
                s,
                "    <testcase classname=\"{}\" name=\"{}\"><error message=\"{}\"/></testcase>",
                xml_escape(file),
                xml_escape(&name),
                xml_escape(&p.message)
            );
        }
        s.push_str("  </testsuite>\n");
    }
    s.push_str("</testsuites>\n");
    s
}

/// Writes every admitted object as `<kind>-<namespace>-<name>.yaml` under `dir`, in YAML that
/// kubectl reads back as the same object.
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
        // YAML kubectl reads back as this object (`yes`, `on`, `0644` quoted).
        let yaml = crate::compat::yaml::emit::to_yaml(obj);
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
