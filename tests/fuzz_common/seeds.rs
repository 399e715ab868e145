//! The seed corpus of every target, defined once: `make fuzz` writes it out before fuzzing
//! (`tests/fuzz_regressions.rs`'s ignored `write_seed_corpus`, called by `fuzz/run.sh`) and
//! `make test` runs every target over it (`seed_corpus_passes`). Seeds come from the files users
//! and tests send — `examples/`, the `kruise check` fixtures, the generated manifests — and, for
//! the parsers, from values the Go code treats specially. The structure-aware targets build an
//! object from any bytes, so their one seed is the empty input (the smallest object).

use std::path::{Path, PathBuf};

/// Quantities at Go's edges: suffixes, exponents, the int64 limit, rounding, junk.
pub const QUANTITIES: &[&str] = &[
    "100m",
    "1",
    "0",
    "1Gi",
    "64Mi",
    "0.5",
    "1e3",
    "1E3",
    "-1",
    "+.5Ki",
    "1.000000001",
    "9223372036854775807",
    "9223372036854775808",
    "8Ei",
    "1e-9",
    "1n",
    "12e",
    "1.5Ti",
    "0.0001m",
    ".5",
    "1.",
    "1Z",
    "",
];

/// Image references as users write them, and ones the parser refuses (also drawn by the
/// structure-aware targets).
pub const IMAGES: &[&str] = &[
    "nginx",
    "nginx:1.25",
    "nginx:latest",
    "busybox:1.36",
    "side:1",
    "empty:1",
    "docker.io/library/nginx:1.25",
    "registry.local:5000/a/b:c",
    "nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
    "localhost/x",
    "UPPER:1",
    ":tag",
    "a//b",
    "",
];

/// `(name, bytes)` of every seed of `target`, read under the repository `root`.
pub fn seeds(target: &str, root: &Path) -> Vec<(String, Vec<u8>)> {
    let reviews = files(root, &["examples/reviews"], "json");
    match target {
        "review_bytes" => reviews,
        // First byte: the path (an index into the routed paths), second: the content type
        // (4: application/json); every review on every path.
        "router_bytes" => {
            let paths = kruise::webhook::paths::routed_paths();
            let mut out = Vec::new();
            for (name, body) in &reviews {
                for i in 0..paths.len() {
                    let mut input = vec![i as u8, 4];
                    input.extend_from_slice(body);
                    out.push((format!("{i:02}-{name}"), input));
                }
            }
            out
        }
        "check_yaml" => files(root, &["examples", "tests/fixtures", "webhook-config", "deploy"], "yaml"),
        "quantity" => literal(QUANTITIES),
        "image" => literal(IMAGES),
        _ => vec![("empty".to_string(), Vec::new())],
    }
}

/// Every file ending in `.ext` under `dirs` (recursively), named by its path.
fn files(root: &Path, dirs: &[&str], ext: &str) -> Vec<(String, Vec<u8>)> {
    let mut paths = Vec::new();
    for d in dirs {
        walk(&root.join(d), &mut paths);
    }
    paths.sort();
    paths
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .map(|p| {
            let name = p.strip_prefix(root).unwrap_or(&p).to_string_lossy().replace('/', "_");
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (name, bytes)
        })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() { walk(&p, out) } else { out.push(p) }
    }
}

fn literal(values: &[&str]) -> Vec<(String, Vec<u8>)> {
    values.iter().enumerate().map(|(i, v)| (format!("seed-{i:02}"), v.as_bytes().to_vec())).collect()
}
