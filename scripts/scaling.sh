#!/usr/bin/env bash
# Measures how skyloop's speed scales with the swarm size and renders the
# scaling part of docs/performance.md: `skyloop bench` on
#
#   pointmass/impair      bench-swarm100   10, 100, 300, 1000, 3000 vehicles
#   multirotor/wifi       bench-full100    10, 100, 300, 1000 vehicles
#   pointmass/impair-30m  bench-swarm100   1000, 3000, 10000 vehicles
#   multirotor/wifi-20m   bench-full10000  1000, 3000, 10000 vehicles
#
# The first two are the swarms of the 100-vehicle benchmarks grown:
# everyone within range of everyone (impair's 1000 m range on a 5 m grid)
# or on a 6 m grid, with the beacons' fixed timetable (vehicle i at i ms).
# At 10,000 vehicles the first would deliver a billion packets per
# simulated second, so the last two carry the swarm to 10,000 as it
# would fly: pointmass/impair-30m is bench-swarm100 with a 30 m range
# (about 110 receivers per packet) and a 100 us stagger; multirotor/wifi-20m
# is bench-full10000, Iris on a 20 m grid with beacons at random phases
# and jitter (contending for the channel), resized.
#
# with 1 and 2 workers each (--vehicles resizes the scenario's swarm,
# keeping the grid square and its spacing). Simulated durations are short
# so that the whole matrix takes about 10-15 minutes on a 2-core machine:
#
#   up to 300 vehicles   10 s simulated, 1 s warm-up, 3 runs
#   1000 vehicles         6 s simulated, 1 s warm-up, 3 runs
#   3000 vehicles         4 s simulated, 3 s warm-up, 1 run (90 million
#                         deliveries per simulated second: minutes, GBs)
#   the last two models:  2 s simulated (3 s from 3000 vehicles), 1 s
#                         warm-up, 1 run
#
# The warm-up (whole seconds, at least N ms) is left out of the speed and
# the time per vehicle-tick: the beacons start vehicle i at i ms (their
# stagger), so N vehicles reach their full load only after N ms; the
# first second also pays for the run's start (buffers growing).
#
# It writes docs/performance-scaling.csv (one row per cell; comment lines
# name the date, commit, machine and Go version), then renders
# docs/performance-scaling.png and the table between the markers in
# docs/performance.md with scripts/scalingplot. Needs jq.
#
#   scripts/scaling.sh                   # the full matrix
#   SCALING_QUICK=1 scripts/scaling.sh   # a smoke test: up to 300 vehicles,
#                                        # 2 s simulated (1 s warm-up), 1 run
#   SCALING_OUT=/tmp/scaling scripts/scaling.sh  # write elsewhere (a copy of
#                                        # docs/performance.md is made there)
#
# Run it on an otherwise idle machine: the figures are wall-clock times.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin

command -v jq >/dev/null || { echo "scaling.sh: needs jq" >&2; exit 1; }

quick=${SCALING_QUICK:-0}
out=${SCALING_OUT:-docs}
mkdir -p "$out"
if [[ ! -f $out/performance.md ]]; then
  cp docs/performance.md "$out/performance.md"
fi
csv=$out/performance-scaling.csv

bin=$(mktemp -d)/skyloop
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/skyloop

# plan MODEL N: prints "duration warmup runs" for a cell of N vehicles.
plan() {
  local model=$1 n=$2
  if [[ $quick == 1 ]]; then
    echo "2s 1s 1"
  elif [[ $model == *-*m ]] && ((n > 1000)); then
    echo "3s 1s 1"
  elif [[ $model == *-*m ]]; then
    echo "2s 1s 1"
  elif ((n <= 300)); then
    echo "10s 1s 3"
  elif ((n <= 1000)); then
    echo "6s 1s 3"
  else
    echo "4s 3s 1"
  fi
}

models=("pointmass/impair bench-swarm100" "multirotor/wifi bench-full100" "pointmass/impair-30m bench-swarm100" "multirotor/wifi-20m bench-full10000")
counts() {
  case $1 in
    pointmass/impair) echo 10 100 300 1000 3000 ;;
    *-*m) echo 1000 3000 10000 ;;
    *) echo 10 100 300 1000 ;;
  esac
}

# sets MODEL: prints the --set flags that make the model's scenario.
sets() {
  case $1 in
    pointmass/impair-30m) echo "--set network.range=30 --set vehicles[0].behaviors[beacon].stagger=100us" ;;
  esac
}

commit=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- . ':!docs/performance*' || commit+="-dirty"
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
tmp=$csv.tmp
{
  echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "# commit: $commit"
  echo "# machine: $(nproc) CPUs, ${cpu:-unknown CPU}"
  echo "# go: $(go env GOVERSION)"
  if [[ $quick == 1 ]]; then echo "# quick: smoke test (SCALING_QUICK=1), not a measurement"; fi
  echo "model,scenario,vehicles,workers,sim_seconds,warmup_s,runs,wall_median_s,wall_min_s,wall_max_s,x_realtime,ns_per_vehicle_tick,ns_per_delivery,allocs_per_tick,deliveries,heap_bytes_per_vehicle,heap_end_bytes_per_vehicle"
} >"$tmp"

start=$SECONDS
for m in "${models[@]}"; do
  read -r model scenario <<<"$m"
  for n in $(counts "$model"); do
    if [[ $quick == 1 ]] && ((n > 300)); then continue; fi
    read -r dur warm runs <<<"$(plan "$model" "$n")"
    read -ra set <<<"$(sets "$model")"
    for w in 1 2; do
      printf '%-17s %5d vehicles, %d worker(s), %s simulated (%s warm-up), %d run(s) ... ' "$model" "$n" "$w" "$dur" "$warm" "$runs" >&2
      json=$("$bin" bench "$scenario" --vehicles "$n" --workers "$w" --duration "$dur" --warmup "$warm" --runs "$runs" "${set[@]}" --json)
      jq -r --arg model "$model" '[$model, .scenario, .vehicles, .workers, .sim_seconds, .warmup_s, .runs,
        .wall_median_s, .wall_min_s, .wall_max_s, .x_realtime, .ns_per_vehicle_tick, .ns_per_delivery,
        .allocs_per_tick, .deliveries, .heap_bytes_per_vehicle, .heap_end_bytes_per_vehicle] | @csv' <<<"$json" >>"$tmp"
      jq -r '"\(.x_realtime * 10 | round / 10)x real time, \(.ns_per_vehicle_tick | round) ns/vehicle-tick"' <<<"$json" >&2
    done
  done
done
mv "$tmp" "$csv"
echo "measured in $((SECONDS - start)) s: $csv" >&2

go run ./scripts/scalingplot "$csv" "$out"
echo "wrote $out/performance-scaling.png and the table in $out/performance.md" >&2
