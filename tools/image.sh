#!/usr/bin/env bash
# Builds the kruise container image (Containerfile) into an OCI archive.
#
#   tools/image.sh [--binary PATH] [--out ARCHIVE] [--tag NAME:TAG] [--keep-debug]
#
# The binary: --binary, else target/pgo/kruise when `make pgo` built it, else the release build,
# linked statically (glibc with `+crt-static`, target/static/; built once, cargo reuses it). A
# static binary is the whole image; a dynamic one (the PGO build, a debug build) gets its ELF
# interpreter and the shared libraries `ldd` names copied beside it, so the image runs either way.
# Debug sections are stripped (objcopy --strip-debug: the release build's line tables are 3/4 of
# its size; the symbol table stays, so backtraces still name functions), unless --keep-debug.
# Built with buildah (Debian: `apt-get install buildah`) into a throwaway vfs store, so no daemon,
# no privileges beyond those of a chroot, and nothing left behind; FROM scratch pulls nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO=${CARGO:-cargo}
version=$(awk -F'"' '/^version = / { print $2; exit }' Cargo.toml)
binary=
out=target/image/kruise-$version.oci.tar
tag=kruise:$version
keep_debug=
while [[ $# -gt 0 ]]; do
  case $1 in
    --binary) binary=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --keep-debug) keep_debug=1; shift ;;
    *) echo "tools/image.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v buildah >/dev/null 2>&1 || {
  echo "tools/image.sh: buildah is needed (Debian: apt-get install buildah)" >&2
  exit 1
}

if [[ -z $binary ]]; then
  if [[ -x target/pgo/kruise ]]; then
    binary=target/pgo/kruise
  else
    host=$(rustc -vV | sed -n 's/^host: //p')
    # RUSTFLAGS reaches only the target's code (`--target` given), not build scripts or proc macros.
    RUSTFLAGS="-C target-feature=+crt-static" \
      $CARGO build --locked --release --bin kruise --target "$host" --target-dir target/static
    binary=target/static/$host/release/kruise
  fi
fi
echo "image: $tag from $binary"

work=$(mktemp -d "${TMPDIR:-/tmp}/kruise-image.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/context/rootfs"
if [[ -z $keep_debug ]] && command -v objcopy >/dev/null 2>&1; then
  objcopy --strip-debug "$binary" "$work/context/rootfs/kruise"
else
  cp "$binary" "$work/context/rootfs/kruise"
fi
chmod 0755 "$work/context/rootfs/kruise"
# `ldd` fails on a static binary or says "statically linked" (static-pie); otherwise it lists
# `name => /path (addr)` and the interpreter as `/path (addr)`.
if deps=$(ldd "$binary" 2>/dev/null) && ! grep -q "statically linked" <<<"$deps"; then
  awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i }' <<<"$deps" | while read -r lib; do
    cp -L --parents "$lib" "$work/context/rootfs/"
  done
  echo "image: $binary is dynamically linked; its interpreter and libraries are in the image"
else
  echo "image: $binary is statically linked"
fi

revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
created=$(date -u -d "@$(git log -1 --format=%ct 2>/dev/null || echo 0)" +%Y-%m-%dT%H:%M:%SZ)
store=(--storage-driver vfs --root "$work/storage" --runroot "$work/run")
# --isolation chroot: COPY needs no RUN sandbox, and chroot works where user namespaces do not.
buildah "${store[@]}" bud --quiet --isolation chroot --layers=false \
  --build-arg "VERSION=$version" --build-arg "REVISION=$revision" --build-arg "CREATED=$created" \
  --timestamp "$(git log -1 --format=%ct 2>/dev/null || echo 0)" \
  -f "$PWD/Containerfile" -t "$tag" "$work/context" >/dev/null
mkdir -p "$(dirname "$out")"
rm -f "$out"
buildah "${store[@]}" push --quiet "$tag" "oci-archive:$out:$tag"
echo "image: $out ($(du -h "$out" | cut -f1); in the image: kruise $(du -h "$work/context/rootfs/kruise" | cut -f1), all files $(du -sh "$work/context/rootfs" | cut -f1))"
