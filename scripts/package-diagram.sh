#!/usr/bin/env bash
# Writes the package table and the package diagram of docs/architecture.md
# from docs/boundary.txt (which packages are core, edge or program, and the
# allowlist of what the core still imports from outside) and `go list` (the
# imports between skyloop's packages): the blocks between the markers
# <!-- boundary-table:begin/end --> and <!-- package-diagram:begin/end -->.
#
#   scripts/package-diagram.sh          # update docs/architecture.md
#   scripts/package-diagram.sh --check  # exit 1 if it is out of date
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin

list=docs/boundary.txt
declare -A layer why
allows=()
while read -r kind pkg rest; do
  case $kind in
    ''|'#'*) ;;
    core|edge|program) layer[skyloop/$pkg]=$kind; why[skyloop/$pkg]=$rest ;;
    allow) allows+=("$pkg $rest") ;;
    *) echo "$list: unknown layer $kind (core, edge, program or allow)" >&2; exit 1 ;;
  esac
done < "$list"

pkgs=$(go list ./... | sort)
for p in $pkgs; do
  if [[ -z ${layer[$p]:-} ]]; then
    echo "$list: $p is not listed; add it as core, edge or program" >&2
    exit 1
  fi
done

table() {
  echo '| package | layer | what it is (core) or what it touches (edge) |'
  echo '| --- | --- | --- |'
  for l in core edge program; do
    for p in $pkgs; do
      [[ ${layer[$p]} == "$l" ]] && echo "| \`${p#skyloop/}\` | $l | ${why[$p]} |"
    done
  done
  echo
  if (( ${#allows[@]} == 0 )); then
    echo "Not yet at the edge: nothing (the allowlist of \`internal/boundary\`'s"
    echo 'tests is empty): no core package imports anything from outside.'
    return
  fi
  echo 'Not yet at the edge: what core packages still import from outside, the'
  echo "allowlist of \`internal/boundary\`'s tests:"
  echo
  echo '| core package | still imports | why, and where it is to go |'
  echo '| --- | --- | --- |'
  for a in "${allows[@]}"; do
    read -r pkg imp reason <<< "$a"
    echo "| \`$pkg\` | \`$imp\` | $reason |"
  done
}

diagram() {
  echo '```mermaid'
  echo 'graph LR'
  id() { echo "${1#skyloop/}" | tr '/' '_'; }
  echo '  subgraph core [deterministic core]'
  for p in $pkgs; do [[ ${layer[$p]} == core ]] && echo "    $(id "$p")[${p#skyloop/}]"; done
  echo '  end'
  echo '  subgraph edges [edges: files, sockets, processes, devices, wall clock]'
  for p in $pkgs; do [[ ${layer[$p]} == edge ]] && echo "    $(id "$p")[${p#skyloop/}]"; done
  echo '  end'
  go list -f '{{.ImportPath}} {{join .Imports " "}}' ./... | sort | while read -r pkg imports; do
    [[ ${layer[$pkg]} == program ]] && continue
    for imp in $imports; do
      [[ $imp == skyloop/* ]] || continue
      echo "  $(id "$pkg") --> $(id "$imp")"
    done
  done
  echo '```'
}

doc=docs/architecture.md
new=$(mktemp)
trap 'rm -f "$new"' EXIT
awk -v table="$(table)" -v diagram="$(diagram)" '
  /<!-- boundary-table:begin -->/ { print; print table; skip = 1; next }
  /<!-- boundary-table:end -->/ { skip = 0 }
  /<!-- package-diagram:begin -->/ { print; print diagram; skip = 1; next }
  /<!-- package-diagram:end -->/ { skip = 0 }
  !skip { print }
' "$doc" > "$new"
if [[ ${1:-} == --check ]]; then
  if ! cmp -s "$new" "$doc"; then
    echo "docs/architecture.md: the package table or diagram is out of date; run scripts/package-diagram.sh" >&2
    exit 1
  fi
  exit 0
fi
cp "$new" "$doc"
