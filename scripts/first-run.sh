#!/bin/bash
# first-run.sh: how long a new user's first command takes from empty Go
# caches (module downloads from the proxy and compilation included):
#   go run ./cmd/skyloop run quickstart
# and the quick test tier, go test -short ./..., after it (warm caches).
# skyloop does not link the Parquet library (skyloop-parquet does, see
# docs/guide.md "Large runs as Parquet"), so the first run compiles
# without it.
# Run from the repository root. Uses throwaway caches; yours are untouched.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
export GOCACHE=$tmp/cache GOMODCACHE=$tmp/mod GOFLAGS=-modcacherw
# Wall time depends on what else the machine runs; the CPU time (user +
# system, all processes) much less: both are printed.
TIMEFORMAT='%0R s (CPU %0U s user + %0S s system)'
echo -n "first run from empty caches: "
{ time go run ./cmd/skyloop run quickstart --out "$tmp/run" > /dev/null 2> "$tmp/err" || { cat "$tmp/err"; exit 1; }; } 2>&1
echo -n "go test -short ./... after it: "
{ time go test -short ./... > /dev/null; } 2>&1
