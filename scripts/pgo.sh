#!/usr/bin/env bash
# Regenerates cmd/skyloop/default.pgo, the CPU profile the Go toolchain
# uses to optimise the skyloop binary (profile-guided optimisation: `go
# build`, `go run` and `go install` of ./cmd/skyloop pick it up by
# themselves; see https://go.dev/doc/pgo). It merges CPU profiles of the
# speed benchmarks, which between them cover the hot code of a run: the
# point-mass swarm over impair, the PX4-like multirotors alone and over
# native 802.11 at 100, 1000 and 10,000 vehicles.
#
# Run it after a change that moves where a run spends its time (the
# profile only guides inlining and devirtualisation: a stale profile
# costs speed, never correctness, and outputs do not depend on it).
# It takes a minute or two on a 2-core machine.
#
# Usage: scripts/pgo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Profiles come from a build without the old profile, so that the new one
# describes the code as written, not as the last profile shaped it.
go build -pgo=off -o "$work/skyloop" ./cmd/skyloop

profile() { # name, then skyloop bench arguments
  local name=$1
  shift
  echo "pgo: profiling $name" >&2
  "$work/skyloop" bench "$@" --cpuprofile "$work/$name.prof" >/dev/null
}
profile swarm100 bench-swarm100
profile multirotor100 bench-multirotor100
profile full100 bench-full100
profile full1000 bench-full1000 --duration 10s --warmup 2s
profile full10000 bench-full10000 --duration 3s --warmup 1s

go tool pprof -proto "$work"/*.prof >cmd/skyloop/default.pgo
echo "pgo: wrote cmd/skyloop/default.pgo ($(wc -c <cmd/skyloop/default.pgo) bytes)" >&2
