#!/usr/bin/env bash
# Runs the validation matrix (package validation) at full length and
# regenerates docs/validation.md: every built-in scenario with a radio
# network on the native network and on ns-3 3.37, compared row by row
# against the tolerances of validation/matrix.go, with each run's CPU time
# (ns-3's process included) side by side. One run at a time; on a 2-core
# machine the whole matrix takes about an hour, most of it ns-3.
#
#   scripts/validation.sh                 # writes docs/validation.md
#   scripts/validation.sh -only relay     # the cases named *relay*, Markdown to stdout
#   scripts/validation.sh -short          # the CI test's shortened variants
#   scripts/validation.sh -keep /tmp/vm   # keep the run directories
#
# Needs ns-3 (apt-get install -y libns3-dev libsqlite3-dev libgsl-dev
# pkg-config g++). The document names the commit it ran on.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
commit=$(git describe --always --dirty 2>/dev/null || echo unknown)
exec go run ./scripts/validation -commit "$commit" "$@"
