#!/usr/bin/env bash
# Sharded sweeps on one machine (docs/cluster.md): the wall time of an
# experiment swept whole, then as N shard processes at once (N = 1, 2, 4)
# into one shared directory with the machine's cores split among them
# (--workers = cores / N, at least 1), and of the merge. Every merged
# summary.csv must equal the whole sweep's, byte for byte.
#
#   scripts/shard-bench.sh                       # netbots --seeds 15
#   SHARDS="2 8" scripts/shard-bench.sh coverage --seeds 20
#
# Prints CSV: mode, shards, workers per shard, sweep seconds, merge seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
exp=${1:-netbots}
[ $# -gt 0 ] && shift
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--seeds 15)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/skyloop" ./cmd/skyloop
sk=$tmp/skyloop
cores=$(nproc)
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

echo "mode,shards,workers_per_shard,sweep_s,merge_s"
t0=$(now)
"$sk" sweep "$exp" "${args[@]}" --out "$tmp/whole" -q
echo "whole,1,$cores,$(secs "$t0" "$(now)"),"
for n in ${SHARDS:-1 2 4}; do
  w=$((cores / n))
  [ "$w" -ge 1 ] || w=1
  out=$tmp/shared$n
  pids=()
  t0=$(now)
  for ((k = 0; k < n; k++)); do
    "$sk" sweep "$exp" "${args[@]}" --shard "$k/$n" --out "$out" --workers "$w" -q &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  t1=$(now)
  "$sk" sweep merge "$out" -q
  t2=$(now)
  for f in "$tmp"/whole/*/summary.csv; do
    cmp -s "$f" "$out/${f#"$tmp"/whole/}" || { echo "$n shards: ${f#"$tmp"/whole/} differs from the whole sweep's" >&2; exit 1; }
  done
  echo "shards,$n,$w,$(secs "$t0" "$t1"),$(secs "$t1" "$t2")"
done
