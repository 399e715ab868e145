//! The fuzz targets' properties, compiled from `tests/fuzz_common/` (where the stable
//! regression test `tests/fuzz_regressions.rs` compiles them too): one source for both.

#[path = "../../tests/fuzz_common/mod.rs"]
mod fuzz_common;

pub use fuzz_common::targets;
