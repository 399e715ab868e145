#!/bin/sh
# Builds target/pgo/kruise: the release `kruise` binary optimised with a profile of its own
# admission path (profile-guided optimisation, issue 16). The admission path runs through serde
# code of many crates and misses the instruction cache thinly everywhere; the profile tells LLVM
# which code is hot, so it inlines and lays out that code together and moves the rest away.
#
# 1. an instrumented release build (target/pgo-gen), with `-Cprofile-generate`;
# 2. training: that binary serves (`serve --standalone`, examples/ as the cluster view) every
#    review of examples/reviews/ on the paths that take it, through h2load over TLS, as the
#    apiserver sends them (pods weigh most, as in a cluster), then stops on SIGTERM, which writes
#    the profile;
# 3. the profiles merged with the toolchain's llvm-profdata (rustup component `llvm-tools`);
# 4. the release build again with `-Cprofile-use` (target/pgo-use), copied to target/pgo/kruise.
#
# RUSTFLAGS reaches only the target's code (`--target` given), not build scripts or proc macros.
# Needs h2load (Debian: nghttp2-client) and curl. PGO_REQUESTS scales the training (default 20000
# pod reviews; the other reviews 2000 each).
set -eu
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
requests=${PGO_REQUESTS:-20000}
host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  rustup component add llvm-tools
fi
for tool in h2load curl; do
  command -v "$tool" >/dev/null 2>&1 || { echo "tools/pgo.sh: $tool is needed (h2load: apt-get install nghttp2-client)" >&2; exit 1; }
done

out="$PWD/target/pgo"
mkdir -p "$out"

echo "pgo: instrumented build"
RUSTFLAGS="-Cprofile-generate=$out/raw" \
  $CARGO build --locked --release --bin kruise --target "$host" --target-dir target/pgo-gen
bin="target/pgo-gen/$host/release/kruise"

train_profile() {
  rm -rf "$out/raw"
  mkdir -p "$out/raw"

  scratch=$(mktemp -d)
  pid=
  cleanup() {
    if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; fi
    rm -rf "$scratch"
  }
  trap cleanup EXIT
  trap 'exit 130' INT TERM

  "$bin" certs --out "$scratch/certs" >/dev/null 2>&1
  port=$((20000 + $$ % 20000))
  admin=$((port + 1))
  LLVM_PROFILE_FILE="$out/raw/kruise-%p-%m.profraw" "$bin" serve --standalone --objects-dir examples \
    --cert-dir "$scratch/certs" --addr "127.0.0.1:$port" --admin-addr "127.0.0.1:$admin" \
    --shutdown-delay 0s >"$scratch/serve.log" 2>&1 &
  pid=$!
  tries=0
  until curl -sf "http://127.0.0.1:$admin/readyz" >/dev/null 2>&1; do
    tries=$((tries + 1))
    if [ "$tries" -gt 300 ] || ! kill -0 "$pid" 2>/dev/null; then
      echo "tools/pgo.sh: the instrumented kruise did not become ready:" >&2
      cat "$scratch/serve.log" >&2
      exit 1
    fi
    sleep 0.1
  done

  train() { # review path requests
    echo "pgo: training on $1 -> $2 ($3 requests)"
    h2load --h1 -n "$3" -c 4 -d "examples/reviews/$1" -H 'Content-Type: application/json' \
      "https://127.0.0.1:$port$2" >"$scratch/h2load.log" 2>&1 || { cat "$scratch/h2load.log" >&2; exit 1; }
    grep -q "succeeded, 0 failed" "$scratch/h2load.log" || { cat "$scratch/h2load.log" >&2; exit 1; }
  }
  small=$((requests / 10))
  train pod-create.json /mutate-pod "$requests"
  train cloneset-create.json /mutate-apps-kruise-io-cloneset "$small"
  train cloneset-create.json /validate-apps-kruise-io-cloneset "$small"
  train cloneset-update-inplaceonly-env.json /validate-apps-kruise-io-cloneset "$small"
  train statefulset-create.json /mutate-apps-kruise-io-statefulset "$small"
  train statefulset-create.json /validate-apps-kruise-io-statefulset "$small"
  train sidecarset-create.json /mutate-apps-kruise-io-sidecarset "$small"
  train sidecarset-create.json /validate-apps-kruise-io-sidecarset "$small"

  kill -TERM "$pid"
  wait "$pid" || { echo "tools/pgo.sh: the instrumented kruise did not stop cleanly" >&2; exit 1; }
  pid=
  ls "$out"/raw/kruise-*.profraw >/dev/null 2>&1 || { echo "tools/pgo.sh: no profile was written" >&2; exit 1; }
  "$profdata" merge -o "$out/kruise.profdata" "$out"/raw/kruise-*.profraw
}

# A profile newer than the instrumented binary was taken from it: training again would only
# change the counts a little, and the optimised build (which depends on the profile) would redo
# its whole fat-LTO build for nothing.
if [ "$out/kruise.profdata" -nt "$bin" ] && [ -x "$out/kruise" ]; then
  echo "pgo: the profile of this instrumented build is kept ($out/kruise.profdata)"
else
  train_profile
fi

echo "pgo: optimised build"
RUSTFLAGS="-Cprofile-use=$out/kruise.profdata" \
  $CARGO build --locked --release --bin kruise --target "$host" --target-dir target/pgo-use
cp "target/pgo-use/$host/release/kruise" "$out/kruise"
echo "pgo: built target/pgo/kruise"
