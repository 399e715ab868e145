#!/usr/bin/env bash
# `make fuzz`: builds every cargo-fuzz target once (nightly, libFuzzer), seeds each corpus from
# examples/, the test fixtures (tests/fuzz_common/seeds.rs) and the inputs kept under
# tests/data/fuzz/<target>/, then runs each
# target for FUZZ_SECONDS (default 60) and prints executions, coverage and corpus size per target.
# A crash or a hang (a run over 10 s) stops that target, leaves the input in
# fuzz/artifacts/<target>/ and makes the script exit 1: minimise it (`cargo +nightly fuzz tmin`),
# keep it under tests/data/fuzz/<target>/ with a name that says what broke, and fix the bug;
# tests/fuzz_regressions.rs then replays it in `make test` on stable.
#
# Settings (environment): FUZZ_SECONDS per target; FUZZ_TARGETS (space-separated, default all);
# FUZZ_SANITIZER (default none: our crate forbids unsafe code, and without ASan a run does
# several times more executions; `address` for the C and unsafe code of dependencies);
# FUZZ_ARGS (extra libFuzzer flags); FUZZ_NO_BUILD=1 runs the binaries already built. Debug
# assertions and overflow checks are on. The targets are built once (`cargo fuzz build`) and
# their binaries run directly: `cargo fuzz run` would check the build again before each one.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-60}
sanitizer=${FUZZ_SANITIZER:-none}
targets=${FUZZ_TARGETS:-$(sed -n 's/^name = "\([a-z_]*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^kruise-fuzz$')}
fuzz=(cargo +nightly fuzz)
# One target dir for the fuzz builds, under the repository's own target/.
build_flags=(--fuzz-dir fuzz --target-dir target/fuzz --sanitizer "$sanitizer" --debug-assertions)

if [ -z "${FUZZ_NO_BUILD:-}" ]; then "${fuzz[@]}" build "${build_flags[@]}"; fi
bin=target/fuzz/$(rustc +nightly -vV | sed -n 's/^host: //p')/release

# The seed corpus is defined once, in tests/fuzz_common/seeds.rs (make test runs every target
# over it too); the inputs kept under tests/data/fuzz/<target>/ join it.
seeds=target/fuzz/seeds
rm -rf "$seeds"
FUZZ_CORPUS="$PWD/$seeds" cargo test --quiet --test fuzz_regressions write_seed_corpus -- --ignored >/dev/null
seed() {
  local target=$1 dir=fuzz/corpus/$1
  mkdir -p "$dir"
  cp "$seeds/$target"/* "$dir"/
  if [ -d "tests/data/fuzz/$target" ]; then cp tests/data/fuzz/"$target"/* "$dir"/; fi
}

dict_for() {
  case $1 in
    review_bytes | router_bytes) echo fuzz/dicts/admission.dict ;;
    check_yaml) echo fuzz/dicts/yaml.dict ;;
    quantity) echo fuzz/dicts/quantity.dict ;;
    image) echo fuzz/dicts/image.dict ;;
  esac
}

mkdir -p target/fuzz/logs
summary=target/fuzz/summary.txt
printf '%-20s %12s %10s %8s %8s %7s  %s\n' target executions exec/s cov features corpus result | tee "$summary"
failed=0
for t in $targets; do
  seed "$t"
  mkdir -p "fuzz/artifacts/$t"
  log=target/fuzz/logs/$t.log
  args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1
        -artifact_prefix="fuzz/artifacts/$t/")
  d=$(dict_for "$t")
  if [ -n "$d" ]; then args+=(-dict="$d"); fi
  # shellcheck disable=SC2086
  if "$bin/$t" "fuzz/corpus/$t" "${args[@]}" ${FUZZ_ARGS:-} > "$log" 2>&1; then
    result=ok
  else
    result="FAILED (see $log)"
    failed=1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1 || true)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1 || true)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2 || true)
  corpus=$(find "fuzz/corpus/$t" -type f | wc -l)
  printf '%-20s %12s %10s %8s %8s %7s  %s\n' "$t" "${execs:-?}" "${speed:-?}" "${cov:-?}" "${ft:-?}" "$corpus" "$result" | tee -a "$summary"
done
exit $failed
