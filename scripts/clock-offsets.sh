#!/usr/bin/env bash
# Clock offsets of real-time runs with network namespaces at several swarm
# sizes (SPEC.md A's figure): N Iris-class multirotors commanded by a ground
# station over the simulated network, every vehicle's namespace pinging the
# next one twice a second through it, paced to the wall clock.
#
#   sudo scripts/clock-offsets.sh            # 10, 50 and 100 UAVs, 120 s each
#   sudo DURATION=30s scripts/clock-offsets.sh 10 20
#
# Prints each run's clock lines (mean |offset|, p99, max, drift per module);
# the runs stay in runs/clock-offsets/<N>/ (clock.csv, clock.png).
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10 50 100)
duration=${DURATION:-120s}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/skyloop" ./cmd/skyloop
for n in "${sizes[@]}"; do
  cat > "$tmp/clock-$n.yaml" <<YAML
name: clock-$n
description: clock offsets with $n UAVs in network namespaces
seed: 1
duration: $duration
tick: 1ms
realtime: 1
isolation: netns
vehicles:
  - name: uav
    kind: multirotor
    count: $n
    spawn: {layout: grid, origin: [0, 0, 0], spacing: 4, columns: 10}
    params: {preset: iris}
    behaviors:
      - {type: remote, gcs: gcs, telemetry: 200ms, stagger: 2ms}
nodes:
  - name: gcs
    position: [0, -20, 1]
    behaviors:
      - type: gcs
        group: uav
        accept: 0.5
        legs:
          - {layout: grid, origin: [0, 0, 8], spacing: 4, columns: 10}
          - {layout: grid, origin: [0, 0, 12], spacing: 6, columns: 10}
processes:
  - name: ping
    command: "ping -n -q -i 0.5 10.0.0.\$(( ({i} + 1) % $n + 1 ))"
network:
  backend: impair
  latency: 5ms
  range: 1000
YAML
  echo "== $n UAVs, $duration"
  "$tmp/skyloop" run "$tmp/clock-$n.yaml" --out "runs/clock-offsets/$n" | grep -E '^(clock|processes|.*simulated in)'
  "$tmp/skyloop" report clock "runs/clock-offsets/$n" >/dev/null
done
