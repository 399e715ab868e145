//! The fuzz targets on the stable toolchain (issue 13). Every input kept under
//! `tests/data/fuzz/<target>/` — the crashes and hangs the fuzzer found, minimised, each named
//! after what it broke — is fed to the same property function its cargo-fuzz target runs
//! (`tests/fuzz_common/targets.rs`), so a fixed bug stays fixed without nightly; so is the seed
//! corpus (`tests/fuzz_common/seeds.rs`: the examples and fixtures). A short,
//! deterministic burst of pseudo-random inputs per target also runs here: it is no substitute
//! for `make fuzz` (coverage-guided, minutes per target) but keeps every target compiling and
//! passing in `make test`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod fuzz_common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use fuzz_common::seeds::seeds;
use fuzz_common::targets::TARGETS;

fn kept_root() -> PathBuf {
    root().join("tests/data/fuzz")
}

/// Runs `f` on `input`; the panic message when it fails.
fn failure(f: fn(&[u8]), input: &[u8]) -> Option<String> {
    catch_unwind(AssertUnwindSafe(|| f(input))).err().map(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    })
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn seed_corpus_passes() {
    let mut failures = Vec::new();
    for (name, f) in TARGETS {
        let seeds = seeds(name, root());
        assert!(!seeds.is_empty(), "{name} has no seeds");
        for (seed, bytes) in seeds {
            if let Some(msg) = failure(*f, &bytes) {
                failures.push(format!("{name}/{seed}: {msg}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} seeds fail:\n{}", failures.len(), failures.join("\n"));
}

/// `make fuzz` (fuzz/run.sh) writes the seed corpus with this: `FUZZ_CORPUS=dir cargo test
/// --test fuzz_regressions write_seed_corpus -- --ignored` gives `dir/<target>/<seed>`.
#[test]
#[ignore = "run by fuzz/run.sh"]
fn write_seed_corpus() {
    let dir = PathBuf::from(std::env::var("FUZZ_CORPUS").expect("FUZZ_CORPUS: where to write the seeds"));
    for (name, _) in TARGETS {
        let target = dir.join(name);
        std::fs::create_dir_all(&target).unwrap();
        for (seed, bytes) in seeds(name, root()) {
            std::fs::write(target.join(seed), bytes).unwrap();
        }
    }
}

#[test]
fn kept_inputs_pass() {
    let mut dirs: Vec<String> = std::fs::read_dir(kept_root())
        .into_iter()
        .flatten()
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
    println!("{played} kept inputs replayed");
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

/// The targets with seed files get them with a few bytes changed; the structure-aware ones
/// get random bytes (every input builds an object).
#[test]
fn random_inputs_pass() {
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut failures = Vec::new();
    for (name, f) in TARGETS {
        let seeds: Vec<Vec<u8>> = seeds(name, root()).into_iter().map(|(_, b)| b).filter(|b| !b.is_empty()).collect();
        for _ in 0..120 {
            let input: Vec<u8> = if seeds.is_empty() {
                let n = (rng.next() % 1024) as usize;
                (0..n).map(|_| rng.next() as u8).collect()
            } else {
                let mut s = seeds[(rng.next() % seeds.len() as u64) as usize].clone();
                for _ in 0..rng.next() % 4 {
                    let i = (rng.next() % s.len() as u64) as usize;
                    s[i] = (rng.next() % 128) as u8;
                }
                s
            };
            if let Some(msg) = failure(*f, &input) {
                failures.push(format!("{name}: {msg}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}:\n{}", failures.len(), failures.join("\n"));
}
