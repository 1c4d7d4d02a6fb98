#!/bin/bash
# first-run.sh: how long a new user's first command takes from empty Go
# caches (module downloads from the proxy and compilation included):
#   go run ./cmd/skyloop run quickstart
# and the quick test tier, go test -short ./..., after it (warm caches).
# Run from the repository root. Uses throwaway caches; yours are untouched.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
export GOCACHE=$tmp/cache GOMODCACHE=$tmp/mod GOFLAGS=-modcacherw
start=$SECONDS
go run ./cmd/skyloop run quickstart --out "$tmp/run" > /dev/null
echo "first run from empty caches: $((SECONDS - start)) s"
start=$SECONDS
go test -short ./... > /dev/null
echo "go test -short ./... after it: $((SECONDS - start)) s"
