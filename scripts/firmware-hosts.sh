#!/bin/bash
# firmware-hosts.sh: real ArduCopters on "other hosts" (one network
# namespace per vehicle, joined to this one by a veth pair), one skyloop run
# stepping them all: the recipe of docs/firmware-hosts.md on one machine,
# and its figures (real-time factor, mission done) against the link delay.
#
# usage: sudo -E scripts/firmware-hosts.sh [-f ardupilot|px4] [-n VEHICLES] [-d "DELAYS_MS"] [-o DIR]
#   -f  the firmware (default ardupilot: examples/firmware-hosts/swarm.yaml;
#       px4: swarm-px4.yaml)
#   -n  vehicles, each in a namespace of its own (default 2)
#   -d  one-way delays to add on each veth, in ms, space-separated
#       (default "0"; needs the kernel's netem qdisc, sch_netem)
#   -o  work directory (default ./firmware-hosts-runs)
# Needs root (namespaces), ip, tc for delays, $SKYLOOP_ARDUPILOT_DIR or
# $SKYLOOP_PX4_DIR (a SITL build, docs/firmware-build.md) and skyloop on PATH (or
# $SKYLOOP). It prints one line per delay: vehicles, delay, RTT measured by
# ping, wall seconds, real-time factor, whether every vehicle completed the
# mission.
set -euo pipefail
source "$(dirname "$0")/lib/apt.sh"

fw=ardupilot n=2 delays=0 work=firmware-hosts-runs
while getopts f:n:d:o:h opt; do
  case $opt in
    f) fw=$OPTARG ;;
    n) n=$OPTARG ;;
    d) delays=$OPTARG ;;
    o) work=$OPTARG ;;
    *) sed -n '2,19p' "$0"; exit 2 ;;
  esac
done
[[ $n =~ ^[1-9][0-9]?$ ]] || die "-n must be 1-99 vehicles, got $n"
[ "$(id -u)" = 0 ] || die "namespaces need root (sudo -E $0 ...)"
case $fw in
  ardupilot) example=swarm.yaml
    [ -n "${SKYLOOP_ARDUPILOT_DIR:-}" ] || die "set SKYLOOP_ARDUPILOT_DIR to an ArduCopter SITL build (scripts/build-ardupilot-sitl.sh)" ;;
  px4) example=swarm-px4.yaml
    [ -n "${SKYLOOP_PX4_DIR:-}" ] || die "set SKYLOOP_PX4_DIR to a PX4 SITL build (scripts/build-px4-sitl.sh)" ;;
  *) die "-f must be ardupilot or px4, got $fw" ;;
esac
skyloop=${SKYLOOP:-$(command -v skyloop || true)}
[ -x "$skyloop" ] || die "no skyloop on PATH: go build -o skyloop ./cmd/skyloop and set SKYLOOP=\$PWD/skyloop"
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work" && work=$(cd "$work" && pwd)
scn=$work/swarm.yaml
sed "s/count: 2/count: $n/" "$here/examples/firmware-hosts/$example" > "$scn"

tag=$$
ns() { echo "sfh$tag-$1"; }
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  for ((k = 0; k < n; k++)); do
    ip link del "sfa$tag-$k" 2>/dev/null || true
    ip netns del "$(ns $k)" 2>/dev/null || true
  done
}
trap cleanup EXIT

for ((k = 0; k < n; k++)); do
  ip netns add "$(ns $k)"
  ip link add "sfa$tag-$k" type veth peer name "sfb$tag-$k" netns "$(ns $k)"
  ip addr add "10.84.$k.1/24" dev "sfa$tag-$k" && ip link set "sfa$tag-$k" up
  ip -n "$(ns $k)" addr add "10.84.$k.2/24" dev "sfb$tag-$k"
  ip -n "$(ns $k)" link set "sfb$tag-$k" up
  ip -n "$(ns $k)" link set lo up
done

# delay MS DEV [-n NS]: MS ms of one-way delay on DEV's egress (0: none).
delay() {
  local d=$1 dev=$2; shift 2
  tc "$@" qdisc del dev "$dev" root 2>/dev/null || true
  [ "$d" = 0 ] && return
  tc "$@" qdisc add dev "$dev" root netem delay "${d}ms" 2>/dev/null ||
    die "tc netem is not available in this kernel (sch_netem): no delay can be added; run with -d 0"
}

printf '%-9s %-9s %-12s %-8s %-6s %s\n' vehicles delay_ms rtt_ms wall_s rtf mission
for d in $delays; do
  for ((k = 0; k < n; k++)); do
    delay "$d" "sfa$tag-$k"
    delay "$d" "sfb$tag-$k" -n "$(ns $k)"
  done
  rtt=$(ping -c 5 -i 0.2 -q 10.84.0.2 | awk -F/ '/^rtt|^round-trip/ {print $5}')
  run=$work/run-$d
  rm -rf "$run" "$work"/fw-*
  pids=()
  for ((k = 0; k < n; k++)); do
    ip netns exec "$(ns $k)" "$skyloop" firmware "$scn" --sim-host "10.84.$k.1" --vehicles "$k" \
      --out "$work/fw-$k" 2>"$work/fw-$k.log" &
    pids+=($!)
  done
  if "$skyloop" run "$scn" --out "$run" > "$work/run-$d.txt" 2>&1; then
    wall=$(awk -F': ' '/"wall_seconds"/ {sub(",", "", $2); print $2}' "$run/meta.json")
    dur=$(awk -F': ' '/"duration_ns"/ {sub(",", "", $2); print $2}' "$run/meta.json")
    rtf=$(awk -v w="$wall" -v d="$dur" 'BEGIN {printf "%.2f", d / 1e9 / w}')
    done=$(grep -c 'script complete true' "$work/run-$d.txt" || true)
    printf '%-9s %-9s %-12s %-8.1f %-6s %s\n' "$n" "$d" "$rtt" "$wall" "$rtf" "$done of $n completed"
  else
    printf '%-9s %-9s %-12s run failed: see %s\n' "$n" "$d" "$rtt" "$work/run-$d.txt"
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
done
