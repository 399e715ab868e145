//! Reading `kruise check` inputs: files, directories and `-` for stdin through the one manifest
//! reader ([`crate::source`]), and `git:REV` for the same paths at a git revision. A file or
//! document that cannot be read is a [`Problem`] reported with the results (exit 2), while every
//! other object is still checked.

use std::path::Path;
use std::process::Command;

pub use crate::source::{Manifest, Problem, Read};
use crate::source::{is_manifest, read_text};

/// Reads every object of the given paths.
pub fn read_paths(paths: &[String]) -> Read {
    crate::source::read_paths(paths)
}

/// Reads the same paths at a git revision (`--old git:REV`); paths missing at that revision are
/// simply absent (new objects are CREATEs).
pub fn read_git(rev: &str, paths: &[String]) -> Read {
    let mut read = Read::default();
    let problem = |message: String| Problem { file: format!("git:{rev}"), line: None, message };
    for p in paths.iter().filter(|p| *p != "-") {
        let listed = match git(&["ls-tree", "-r", "--name-only", "--full-name", rev, "--", p]) {
            Ok(l) => l,
            Err(e) => {
                read.problems.push(problem(e));
                continue;
            }
        };
        for rel in listed.lines().filter(|f| is_manifest(Path::new(f))) {
            let spec = format!("{rev}:{rel}");
            match git(&["show", &spec]) {
                Ok(text) => {
                    let r = read_text(&format!("git:{spec}"), &text);
                    read.objects.extend(r.objects);
                    read.problems.extend(r.problems);
                }
                Err(e) => read.problems.push(problem(e)),
            }
        }
    }
    read
}

fn git(args: &[&str]) -> Result<String, String> {
    let out = Command::new("git").args(args).output().map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!("git {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()));
    }
    String::from_utf8(out.stdout).map_err(|e| e.to_string())
}
