//! Reading `kruise check` inputs: files, directories (recursively: `.yaml`, `.yml`, `.json`), `-` for
//! stdin, and `git:REV` for the same paths at a git revision. Multi-document YAML and `kind: List`
//! are split into objects; each object remembers its file and the line its document starts on.
//! Anything unreadable or unparseable is an [`InputError`] naming the file and line (exit 2).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;
use serde_json::Value;

/// One object of the input.
#[derive(Clone, Debug)]
pub struct Manifest {
    /// Where it came from (`-` for stdin, `git:REV:path` for git).
    pub file: String,
    /// Line of the document in that file (1-based).
    pub line: usize,
    /// The object.
    pub object: Value,
}

/// An input that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{file}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct InputError {
    /// File.
    pub file: String,
    /// Line, when known.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

/// Reads every object of the given paths.
pub fn read_paths(paths: &[String]) -> Result<Vec<Manifest>, InputError> {
    let mut out = Vec::new();
    for p in paths {
        if p == "-" {
            let mut text = String::new();
            std::io::stdin().read_to_string(&mut text).map_err(|e| InputError {
                file: "-".into(),
                line: None,
                message: e.to_string(),
            })?;
            out.extend(parse_text("-", &text)?);
            continue;
        }
        for file in expand(Path::new(p))? {
            let name = file.display().to_string();
            let text = std::fs::read_to_string(&file).map_err(|e| InputError {
                file: name.clone(),
                line: None,
                message: e.to_string(),
            })?;
            out.extend(parse_text(&name, &text)?);
        }
    }
    Ok(out)
}

/// Reads the same paths at a git revision (`--old git:REV`); paths missing at that revision are
/// simply absent (new objects are CREATEs).
pub fn read_git(rev: &str, paths: &[String]) -> Result<Vec<Manifest>, InputError> {
    let err = |message: String| InputError { file: format!("git:{rev}"), line: None, message };
    let mut out = Vec::new();
    for p in paths.iter().filter(|p| *p != "-") {
        let listed = git(&["ls-tree", "-r", "--name-only", "--full-name", rev, "--", p]).map_err(err)?;
        for rel in listed.lines().filter(|f| crate::cluster::files::is_manifest(Path::new(f))) {
            let spec = format!("{rev}:{rel}");
            let text = git(&["show", &spec]).map_err(err)?;
            out.extend(parse_text(&format!("git:{spec}"), &text)?);
        }
    }
    Ok(out)
}

fn git(args: &[&str]) -> Result<String, String> {
    let out = Command::new("git").args(args).output().map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!("git {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()));
    }
    String::from_utf8(out.stdout).map_err(|e| e.to_string())
}

fn expand(path: &Path) -> Result<Vec<PathBuf>, InputError> {
    let meta = std::fs::metadata(path).map_err(|e| InputError {
        file: path.display().to_string(),
        line: None,
        message: e.to_string(),
    })?;
    if !meta.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| InputError {
            file: dir.display().to_string(),
            line: None,
            message: e.to_string(),
        })?;
        for entry in entries.flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
            } else if crate::cluster::files::is_manifest(&p) {
                files.push(p);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Splits one file's text into objects.
pub fn parse_text(file: &str, text: &str) -> Result<Vec<Manifest>, InputError> {
    let starts = document_starts(text);
    let mut out = Vec::new();
    for (i, document) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let line = starts.get(i).copied().unwrap_or(1);
        let value = Value::deserialize(document).map_err(|e| InputError {
            file: file.to_string(),
            line: e.location().map(|l| l.line()).or(Some(line)),
            message: e.to_string(),
        })?;
        let bad = |message: String| InputError { file: file.to_string(), line: Some(line), message };
        match value {
            Value::Null => {}
            Value::Object(ref map) if map.get("kind").and_then(Value::as_str) == Some("List") => {
                for item in map.get("items").and_then(Value::as_array).into_iter().flatten() {
                    check_object(item).map_err(bad)?;
                    out.push(Manifest { file: file.to_string(), line, object: item.clone() });
                }
            }
            Value::Object(_) => {
                check_object(&value).map_err(bad)?;
                out.push(Manifest { file: file.to_string(), line, object: value });
            }
            _ => return Err(bad("a manifest must be an object with apiVersion and kind".into())),
        }
    }
    Ok(out)
}

fn check_object(v: &Value) -> Result<(), String> {
    let has = |k: &str| v.get(k).and_then(Value::as_str).is_some_and(|s| !s.is_empty());
    if !has("apiVersion") || !has("kind") {
        return Err("object has no apiVersion or kind".into());
    }
    Ok(())
}

/// 1-based line where each YAML document starts (after `---` separators).
fn document_starts(text: &str) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut pending = Some(1);
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.starts_with("---") {
            if let Some(s) = pending.take()
                && s < n
            {
                starts.push(s);
            }
            pending = Some(n + 1);
        } else if pending.is_some()
            && (line.trim().is_empty() || line.trim_start().starts_with('#'))
            && let Some(s) = pending.as_mut()
        {
            *s = n + 1;
        }
    }
    if let Some(s) = pending {
        starts.push(s);
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_lists_and_lines() {
        let text = "# c\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: p}}\n";
        let m = parse_text("f.yaml", text).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].line, m[1].line), (2, 7));
        assert_eq!(m[1].object["kind"], "Pod");
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = parse_text("bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [oops\n").unwrap_err();
        assert_eq!(e.file, "bad.yaml");
        assert!(e.line.is_some());
        assert!(e.to_string().starts_with("bad.yaml:"), "{e}");
        let e = parse_text("x.yaml", "just a string\n").unwrap_err();
        assert!(e.to_string().contains("must be an object"));
        let e = parse_text("x.yaml", "kind: Pod\n").unwrap_err();
        assert!(e.to_string().contains("no apiVersion"));
    }
}
