#!/usr/bin/env bash
# Build ArduCopter SITL (waf board "sitl", target "copter") from an ArduPilot
# checkout with Debian packages only, for skyloop's ArduPilot bridge (package
# ardupilot, controller ardupilot-sitl). ArduPilot itself stays outside this
# repository.
#
#   scripts/build-ardupilot-sitl.sh [options] SRC_DIR
#
#   SRC_DIR              an ArduPilot tree (waf, ArduCopter/, libraries/) with its
#                        submodules populated
#   --snapshot-fixes     SRC_DIR is an extracted archive without .git: make it a git
#                        repository with one empty commit (waf runs
#                        `git rev-parse HEAD` for the version string)
#   -j N, -jN            waf jobs (default: nproc); on a machine busy with other
#                        work, `nice -n 19 scripts/build-ardupilot-sitl.sh -j1 ...`
#
# Installs missing apt packages (needs root), checks the submodules the build
# needs, then runs, with Debian's /usr/bin/python3 (a pyenv python3 lacks empy):
#   ./waf configure --board sitl --no-submodule-update   (only if not configured)
#   ./waf copter -jN
# At the end it prints the binary and the SKYLOOP_ARDUPILOT_DIR line to use.
set -euo pipefail

usage() {
  local text
  text=$(awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0")
  if [ "${1:-2}" = 0 ]; then echo "$text"; else echo "$text" >&2; fi
  exit "${1:-2}"
}
. "$(dirname "$0")/lib/apt.sh" # say, die, apt_get

fixes=0 jobs="" src=""
while [ $# -gt 0 ]; do
  case "$1" in
    --snapshot-fixes) fixes=1 ;;
    -j) [ $# -ge 2 ] || usage; jobs=$2; shift ;;
    -j[0-9]*) jobs=${1#-j} ;;
    -h|--help) usage 0 ;;
    -*) printf 'unknown option: %s\n' "$1" >&2; usage ;;
    *) [ -z "$src" ] || usage; src=$1 ;;
  esac
  shift
done
[ -n "$src" ] || usage
jobs=$(check_jobs "$jobs")

# --- 1. the source tree ------------------------------------------------------
[ -d "$src" ] || die "$src: no such directory"
src=$(cd "$src" && pwd -P)
if [ ! -f "$src/waf" ] || [ ! -d "$src/ArduCopter" ] || [ ! -d "$src/libraries" ]; then
  die "$src does not look like an ArduPilot tree (need waf, ArduCopter/ and libraries/)"
fi
version=""
[ -f "$src/ArduCopter/version.h" ] &&
  version=$(awk -F'"' '/^#define THISFIRMWARE /{ print $2; exit }' "$src/ArduCopter/version.h")
say "ArduPilot tree $src (${version:-version unknown})"

# --- 2. Debian packages ------------------------------------------------------
# python3-future is not needed: pymavlink's `from builtins import ...` is the
# Python 3 standard library. python3-pkg-resources is imported by the build.
pkgs=(g++ git python3 python3-empy python3-pexpect python3-pkg-resources)
install_missing "${pkgs[@]}"
py=/usr/bin/python3
[ -x "$py" ] || die "$py not found (Debian package python3)"
empy=$("$py" -c 'import em; print(getattr(em, "__version__", "?"))' 2>/dev/null) ||
  die "$py cannot import em (python3-empy)"
case "$empy" in
  3.*) ;;
  *) say "warning: empy $empy; ArduPilot's DroneCAN generator is known to work with empy 3.x" ;;
esac

# --- 3. submodules -----------------------------------------------------------
# path:file that must exist in it. ChibiOS, gtest, gbenchmark, gsoap,
# CrashDebug and the DDS modules are not needed for SITL.
needed=(
  modules/waf:waf-light
  modules/mavlink:message_definitions/v1.0/common.xml
  modules/mavlink/pymavlink:generator/mavgen.py
  modules/littlefs:lfs.c
  modules/lwip:src/include/lwip/ip4_addr.h
  modules/DroneCAN/libcanard:canard.c
  modules/DroneCAN/pydronecan:dronecan/__init__.py
  modules/DroneCAN/DSDL:uavcan
  modules/DroneCAN/dronecan_dsdlc:dronecan_dsdlc.py
)
missing=()
for n in "${needed[@]}"; do
  p=${n%%:*} f=${n#*:}
  [ -e "$src/$p/$f" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  {
    echo "error: submodules not populated:"
    for p in "${missing[@]}"; do
      # the pinned commit, when this checkout records it
      pin=$(git -C "$src" rev-parse -q --verify "HEAD:$p" 2>/dev/null || true)
      [ -z "$pin" ] && [ "$p" = modules/mavlink/pymavlink ] &&
        pin=$(git -C "$src/modules/mavlink" rev-parse -q --verify HEAD:pymavlink 2>/dev/null || true)
      printf '  %s%s\n' "$p" "${pin:+ (pinned at ${pin:0:12})}"
    done
    # pymavlink is a submodule of mavlink: --recursive on mavlink brings it
    init=$(printf '%s\n' "${missing[@]}" | sed 's#/pymavlink$##' | awk '!seen[$0]++' | tr '\n' ' ')
    echo "On a full clone of ArduPilot run:"
    echo "  git -C $src submodule update --init --recursive ${init% }"
    echo "(or just: git -C $src submodule update --init --recursive)."
    echo "For an archive, extract each repository at its pinned commit into that path."
  } >&2
  exit 1
fi
say "submodules present: ${needed[*]%%:*}"

# --- 4. git: waf asks git for the version ------------------------------------
top=$(git -C "$src" rev-parse --show-toplevel 2>/dev/null || true)
if [ "$top" != "$src" ]; then
  if [ "$fixes" = 1 ]; then
    say "no .git in $src: git init + one empty commit (--snapshot-fixes)"
    git -C "$src" init -q
    git -C "$src" -c user.name=snapshot -c user.email=snapshot@localhost \
      commit -q --allow-empty -m "snapshot of an ArduPilot archive"
  else
    {
      echo "error: $src is not the top of a git checkout${top:+ (it is inside $top)}."
      echo "waf runs \`git rev-parse --short=8 HEAD\` there for the firmware version."
      echo "Use a git clone (git clone --recurse-submodules https://github.com/ArduPilot/ardupilot.git),"
      echo "or, for an extracted archive/snapshot, rerun with --snapshot-fixes: it runs"
      echo "  git init && git commit --allow-empty   in $src"
    } >&2
    exit 1
  fi
fi
say "git HEAD $(git -C "$src" rev-parse --short=8 HEAD)"

# --- 5. configure + build ----------------------------------------------------
export PATH=/usr/bin:$PATH  # Debian's python3 and its modules, not a pyenv one
cd "$src"
if [ -f build/c4che/sitl_cache.py ] && grep -q "^BOARD = 'sitl'" build/c4che/_cache.py 2>/dev/null; then
  say "already configured for board sitl (build/c4che); skipping configure"
else
  say "configuring: $py ./waf configure --board sitl --no-submodule-update"
  "$py" ./waf configure --board sitl --no-submodule-update
fi
say "building: $py ./waf copter -j$jobs (a first build takes 10-20 min on 2 cores, about 30 min with -j1 beside other work)"
start=$SECONDS
"$py" ./waf copter -j"$jobs"
say "build finished in $((SECONDS - start)) s"

bin=$src/build/sitl/bin/arducopter
parm=$src/Tools/autotest/default_params/copter.parm
[ -x "$bin" ] || die "build ended but $bin is missing"
[ -f "$parm" ] || say "warning: $parm is missing; skyloop loads it by default"
echo
echo "ArduCopter SITL binary: $bin (${version:-?})"
echo "Default parameters:     $parm"
echo "Use it with skyloop:"
echo "  export SKYLOOP_ARDUPILOT_DIR=$src"
