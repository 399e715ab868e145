//! Fuzzing properties (issue 13), shared by the cargo-fuzz targets under `fuzz/` (nightly,
//! libFuzzer) and by `tests/fuzz_regressions.rs` (stable, `make test`), which replays every
//! input kept under `tests/data/fuzz/<target>/` and the seed corpus through the same functions.
//! `admission` holds the admission property, `generate` the structure-aware objects, `seeds` the
//! seed corpus, `targets` one function per target.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod admission;
pub mod generate;
pub mod seeds;
pub mod targets;
