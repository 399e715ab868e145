#!/usr/bin/env bash
# Builds kruise-controlplane into $1 (default: ../../target/testenv/kruise-controlplane).
# The Go module cache and build cache make a warm rebuild a matter of seconds; the first build
# downloads the Kubernetes modules from the Go module proxy and compiles them (minutes).
set -euo pipefail
cd "$(dirname "$0")"
out=${1:-../../target/testenv/kruise-controlplane}
mkdir -p "$(dirname "$out")"
# The Kubernetes release in go.mod, stamped into the binaries as Kubernetes' own build does
# (hack/lib/version.sh), so clients see v1.36.x instead of v0.0.0-master.
version=$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' go.mod)
major=${version#v}; major=${major%%.*}
minor=${version#v*.}; minor=${minor%%.*}
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$version"
export GOTOOLCHAIN=${GOTOOLCHAIN:-local} CGO_ENABLED=0 GOFLAGS=${GOFLAGS:--mod=readonly}
go build -trimpath -ldflags "$ldflags" -o "$out.tmp.$$" .
mv -f "$out.tmp.$$" "$out"
