//! Where objects come from when they are not sent by an apiserver: manifest files. The one
//! directory walker and the one manifest reader, used by the file-backed cluster view
//! (`cluster::files`) and by `kruise check`:
//! - [`walk`] lists `.yaml`, `.yml` and `.json` files under a directory (recursively, sorted,
//!   following symbolic links once); a path that is a file is read whatever its name;
//! - [`read_text`] reads a file's text as kubectl does ([`crate::compat::yaml`]) and flattens lists
//!   (an object with an `items` array, as kubectl's builder does) into their objects, each with its
//!   file and line;
//! - problems (an unreadable file or directory, a broken document, an object without apiVersion
//!   or kind) are returned beside the objects, so one bad file never hides the others.

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde_json::Value;

use crate::compat::yaml::{Document, documents};

/// One object of a manifest file.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifest {
    /// The file (`-` for stdin, `git:REV:path` for a file at a git revision).
    pub file: String,
    /// 1-based line of the object's first content.
    pub line: usize,
    /// The object, as kubectl would send it.
    pub object: Value,
}

/// A file, directory or document that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The file or directory.
    pub file: String,
    /// The line, when the problem is in one document.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{line}: {}", self.file, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl Problem {
    fn new(file: &str, line: Option<usize>, message: impl Into<String>) -> Self {
        Problem { file: file.to_string(), line, message: message.into() }
    }
}

/// What was read: the objects, and the problems met on the way.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Read {
    /// Every object, in file and document order.
    pub objects: Vec<Manifest>,
    /// Every problem, in the same order.
    pub problems: Vec<Problem>,
}

impl Read {
    fn extend(&mut self, other: Read) {
        self.objects.extend(other.objects);
        self.problems.extend(other.problems);
    }
}

/// Lists nested inside lists are flattened up to this depth.
const MAX_LIST_DEPTH: usize = 8;

/// Reads one file's text.
pub fn read_text(file: &str, text: &str) -> Read {
    let mut read = Read::default();
    for document in documents(text) {
        match document {
            Ok(Document { line, value, item_lines }) => flatten(file, line, value, &item_lines, 0, &mut read),
            Err(e) => read.problems.push(Problem::new(file, Some(e.line), e.message)),
        }
    }
    read
}

fn flatten(file: &str, line: usize, value: Value, item_lines: &[usize], depth: usize, read: &mut Read) {
    match value {
        Value::Object(mut map) if matches!(map.get("items"), Some(Value::Array(_))) && depth < MAX_LIST_DEPTH => {
            let Some(Value::Array(items)) = map.remove("items") else { return };
            for (i, item) in items.into_iter().enumerate() {
                let item_line = item_lines.get(i).copied().unwrap_or(line);
                if item.is_null() {
                    continue;
                }
                flatten(file, item_line, item, &[], depth + 1, read);
            }
        }
        Value::Object(map) => {
            let has = |k: &str| map.get(k).and_then(Value::as_str).is_some_and(|s| !s.is_empty());
            let missing = match (has("apiVersion"), has("kind")) {
                (true, true) => None,
                (false, true) => Some("apiVersion"),
                (true, false) => Some("kind"),
                (false, false) => Some("apiVersion and kind"),
            };
            match missing {
                Some(what) => read.problems.push(Problem::new(file, Some(line), format!("object has no {what}"))),
                None => read.objects.push(Manifest { file: file.to_string(), line, object: Value::Object(map) }),
            }
        }
        other => read.problems.push(Problem::new(
            file,
            Some(line),
            format!("a manifest must be an object with apiVersion and kind, found {}", type_name(&other)),
        )),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Reads one file from disk.
pub fn read_file(path: &Path) -> Read {
    let name = path.display().to_string();
    match std::fs::read(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => read_text(&name, &text),
            Err(e) => {
                Read { problems: vec![Problem::new(&name, None, format!("not UTF-8 text: {e}"))], ..Read::default() }
            }
        },
        Err(e) => Read { problems: vec![Problem::new(&name, None, e.to_string())], ..Read::default() },
    }
}

/// Reads files and directories (see [`walk`]); `-` is standard input.
pub fn read_paths(paths: &[String]) -> Read {
    let mut read = Read::default();
    for p in paths {
        if p == "-" {
            let mut text = String::new();
            match std::io::Read::read_to_string(&mut std::io::stdin(), &mut text) {
                Ok(_) => read.extend(read_text("-", &text)),
                Err(e) => read.problems.push(Problem::new("-", None, e.to_string())),
            }
            continue;
        }
        let walked = walk(Path::new(p));
        read.problems.extend(walked.problems);
        for f in walked.files {
            read.extend(read_file(&f.path));
        }
    }
    read
}

/// One manifest file found by [`walk`], with what tells a change.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FileEntry {
    /// The file.
    pub path: PathBuf,
    /// Modification time.
    pub modified: Option<SystemTime>,
    /// Size in bytes.
    pub len: u64,
}

/// The files under a path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Walk {
    /// Manifest files, sorted by path.
    pub files: Vec<FileEntry>,
    /// Paths that could not be read (the path itself when it does not exist).
    pub problems: Vec<Problem>,
}

/// `.yaml`, `.yml` or `.json`.
pub fn is_manifest(path: &Path) -> bool {
    matches!(path.extension().and_then(|e| e.to_str()), Some("yaml" | "yml" | "json"))
}

/// Every manifest file under `root`: `root` itself when it is a file, else the `.yaml`, `.yml` and
/// `.json` files below it, recursively, each directory visited once even through symbolic links.
pub fn walk(root: &Path) -> Walk {
    let mut walk = Walk::default();
    let problem = |p: &Path, e: std::io::Error| Problem::new(&p.display().to_string(), None, e.to_string());
    let meta = match std::fs::metadata(root) {
        Ok(m) => m,
        Err(e) => {
            walk.problems.push(problem(root, e));
            return walk;
        }
    };
    if !meta.is_dir() {
        walk.files.push(FileEntry { path: root.to_path_buf(), modified: meta.modified().ok(), len: meta.len() });
        return walk;
    }
    let mut seen: HashSet<PathBuf> = HashSet::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if let Ok(real) = std::fs::canonicalize(&dir)
            && !seen.insert(real)
        {
            continue;
        }
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) => {
                walk.problems.push(problem(&dir, e));
                continue;
            }
        };
        for entry in entries {
            let path = match entry {
                Ok(entry) => entry.path(),
                Err(e) => {
                    walk.problems.push(problem(&dir, e));
                    continue;
                }
            };
            match std::fs::metadata(&path) {
                Ok(m) if m.is_dir() => stack.push(path),
                Ok(m) if is_manifest(&path) => {
                    walk.files.push(FileEntry { path, modified: m.modified().ok(), len: m.len() })
                }
                Ok(_) => {}
                // A dangling symbolic link that looks like a manifest is worth a word.
                Err(e) if is_manifest(&path) => walk.problems.push(problem(&path, e)),
                Err(_) => {}
            }
        }
    }
    walk.files.sort();
    walk.problems.sort_by(|a, b| a.file.cmp(&b.file));
    walk
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_are_flattened_with_item_lines() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: a}\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: b}\n---\napiVersion: apps.kruise.io/v1alpha1\nkind: CloneSetList\nitems: []\n";
        let read = read_text("f.yaml", text);
        assert!(read.problems.is_empty(), "{:?}", read.problems);
        let names: Vec<(usize, &str)> =
            read.objects.iter().map(|m| (m.line, m.object["metadata"]["name"].as_str().unwrap())).collect();
        assert_eq!(names, vec![(4, "a"), (7, "b")]);
    }

    #[test]
    fn problems_name_file_and_line_and_the_rest_is_read() {
        let text = "kind: Pod\n---\n- a\n---\nfoo: [\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: ok}\n";
        let read = read_text("x.yaml", text);
        assert_eq!(read.objects.len(), 1);
        assert_eq!(read.objects[0].line, 7);
        let shown: Vec<String> = read.problems.iter().map(ToString::to_string).collect();
        assert_eq!(shown[0], "x.yaml:1: object has no apiVersion");
        assert_eq!(shown[1], "x.yaml:3: a manifest must be an object with apiVersion and kind, found a list");
        assert!(shown[2].starts_with("x.yaml:5: ") || shown[2].starts_with("x.yaml:6: "), "{}", shown[2]);
        assert_eq!(
            read.objects[0].object,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ok"}})
        );
    }

    #[test]
    fn walk_lists_manifests_and_reports_what_it_cannot_read() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("b/c")).unwrap();
        for f in ["a.yaml", "b/x.yml", "b/c/y.json", "notes.txt"] {
            std::fs::write(d.join(f), "").unwrap();
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(d, d.join("b/loop")).unwrap();
            std::os::unix::fs::symlink(d.join("missing.yaml"), d.join("dangling.yaml")).unwrap();
        }
        let w = walk(d);
        let rel: Vec<String> = w.files.iter().map(|f| f.path.strip_prefix(d).unwrap().display().to_string()).collect();
        assert_eq!(rel, vec!["a.yaml", "b/c/y.json", "b/x.yml"]);
        #[cfg(unix)]
        assert_eq!(w.problems.len(), 1, "{:?}", w.problems);
        let missing = walk(&d.join("nope"));
        assert!(missing.files.is_empty());
        assert_eq!(missing.problems.len(), 1);
        // A file given by name is read whatever its extension.
        assert_eq!(walk(&d.join("notes.txt")).files.len(), 1);
    }
}
