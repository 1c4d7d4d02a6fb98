#!/usr/bin/env bash
# Writes the package diagram of docs/architecture.md from `go list`: one
# Mermaid graph of the imports between skyloop's packages (cmd and tests
# left out), the core in one box and the edges in another, replacing the
# block between the markers in docs/architecture.md.
#
#   scripts/package-diagram.sh          # update docs/architecture.md
#   scripts/package-diagram.sh --check  # exit 1 if it is out of date
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin

# Packages that reach outside the process (the runner and the edge
# components) are drawn apart from the deterministic core.
edge_re='^skyloop/(runner|record|foxglove|orchestrate|extern|extern/client|relay|mavlink|mavlink/mavnet|firmware|px4sitl|ardupilot|simport|netsim/ns3|netsim/tap|components|report|sweep|internal/.*)$'

diagram() {
  echo '```mermaid'
  echo 'graph LR'
  local core=() edge=()
  while read -r pkg; do
    [[ $pkg == skyloop/cmd/* || $pkg == skyloop/scripts/* || $pkg == skyloop/scenarios || $pkg == skyloop/version ]] && continue
    if [[ $pkg =~ $edge_re ]]; then edge+=("$pkg"); else core+=("$pkg"); fi
  done < <(go list ./... | sort)
  id() { echo "${1#skyloop/}" | tr '/' '_'; }
  echo '  subgraph core [deterministic core]'
  for p in "${core[@]}"; do echo "    $(id "$p")[${p#skyloop/}]"; done
  echo '  end'
  echo '  subgraph edges [edges: files, sockets, processes, devices]'
  for p in "${edge[@]}"; do echo "    $(id "$p")[${p#skyloop/}]"; done
  echo '  end'
  go list -f '{{.ImportPath}} {{join .Imports " "}}' ./... | sort | while read -r pkg imports; do
    [[ $pkg == skyloop/cmd/* || $pkg == skyloop/scripts/* || $pkg == skyloop/scenarios || $pkg == skyloop/version ]] && continue
    for imp in $imports; do
      [[ $imp == skyloop/* && $imp != skyloop/scenarios && $imp != skyloop/version ]] || continue
      echo "  $(id "$pkg") --> $(id "$imp")"
    done
  done
  echo '```'
}

doc=docs/architecture.md
new=$(mktemp)
trap 'rm -f "$new"' EXIT
awk -v block="$(diagram)" '
  /<!-- package-diagram:begin -->/ { print; print block; skip = 1; next }
  /<!-- package-diagram:end -->/ { skip = 0 }
  !skip { print }
' "$doc" > "$new"
if [[ ${1:-} == --check ]]; then
  if ! cmp -s "$new" "$doc"; then
    echo "docs/architecture.md: the package diagram is out of date; run scripts/package-diagram.sh" >&2
    exit 1
  fi
  exit 0
fi
cp "$new" "$doc"
