//! The fuzz targets on the stable toolchain (issue 13). Every input kept under
//! `tests/data/fuzz/<target>/` — the crashes and hangs the fuzzer found, minimised, each named
//! after what it broke — is fed to the same property function its cargo-fuzz target runs
//! (`tests/fuzz_common/targets.rs`), so a fixed bug stays fixed without nightly. A short,
//! deterministic burst of pseudo-random inputs per target also runs here: it is no substitute
//! for `make fuzz` (coverage-guided, minutes per target) but keeps every target compiling and
//! passing in `make test`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fuzz_common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use fuzz_common::targets::TARGETS;

fn kept_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/fuzz")
}

/// Runs `f` on `input`; the panic message when it fails.
fn failure(f: fn(&[u8]), input: &[u8]) -> Option<String> {
    catch_unwind(AssertUnwindSafe(|| f(input))).err().map(|p| {
        p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
    })
}

#[test]
fn kept_inputs_pass() {
    let mut dirs: Vec<String> = std::fs::read_dir(kept_root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    for d in &dirs {
        assert!(TARGETS.iter().any(|(name, _)| name == d), "tests/data/fuzz/{d} names no target");
    }
    let mut failures = Vec::new();
    let mut played = 0;
    for (name, f) in TARGETS {
        let dir = kept_root().join(name);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
        files.sort();
        for file in files {
            played += 1;
            if let Some(msg) = failure(*f, &std::fs::read(&file).unwrap()) {
                failures.push(format!("{}: {msg}", file.strip_prefix(kept_root()).unwrap().display()));
            }
        }
    }
    assert!(played > 0, "no kept inputs under tests/data/fuzz");
    assert!(failures.is_empty(), "{} of {played} kept inputs fail:\n{}", failures.len(), failures.join("\n"));
}

/// xorshift64*: the same inputs on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

/// Byte-level targets get the example files with a few bytes changed; the structure-aware ones
/// get random bytes (every input builds an object).
#[test]
fn random_inputs_pass() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut seeds: Vec<Vec<u8>> = Vec::new();
    for dir in ["examples/reviews", "examples", "tests/fixtures/check/sidecar"] {
        let mut files: Vec<PathBuf> =
            std::fs::read_dir(root.join(dir)).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_file()).collect();
        files.sort();
        seeds.extend(files.iter().filter(|p| p.extension().is_some_and(|e| e == "json" || e == "yaml")).map(|p| std::fs::read(p).unwrap()));
    }
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut failures = Vec::new();
    for (name, f) in TARGETS {
        for _ in 0..120 {
            let input: Vec<u8> = if name.ends_with("_bytes") || *name == "check_yaml" {
                let mut s = seeds[(rng.next() % seeds.len() as u64) as usize].clone();
                for _ in 0..rng.next() % 4 {
                    let i = (rng.next() % s.len() as u64) as usize;
                    s[i] = (rng.next() % 128) as u8;
                }
                s
            } else {
                let n = (rng.next() % 1024) as usize;
                (0..n).map(|_| rng.next() as u8).collect()
            };
            if let Some(msg) = failure(*f, &input) {
                failures.push(format!("{name}: {msg}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}:\n{}", failures.len(), failures.join("\n"));
}
