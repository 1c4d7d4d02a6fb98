#!/usr/bin/env bash
# Build PX4 SITL (px4_sitl_default) from a PX4-Autopilot checkout with Debian
# packages only, for skyloop's PX4 bridge (package px4sitl). PX4 itself stays
# outside this repository.
#
#   scripts/build-px4-sitl.sh [options] SRC_DIR
#
#   SRC_DIR              a PX4-Autopilot git checkout (Makefile, boards/px4/sitl)
#   --snapshot-fixes     apply the local edits a repository snapshot with missing
#                        blobs or submodule pins needs, each only if needed:
#                        CONFIG_MODULES_GYRO_FFT=n if the CMSIS table file is missing,
#                        CONFIG_DRIVERS_GPS=n if src/drivers/gps/devices is not at its pin,
#                        drop `available_modes.seq = ...` if the mavlink XML has no seq field
#   --micro-cdr URL      serve https://github.com/eProsima/Micro-CDR.git (cloned at build
#                        time by Micro-XRCE-DDS-Client) from URL, e.g. a local bare clone
#   -j N, -jN            ninja jobs (default: nproc)
#
# Installs missing apt packages (needs root), checks the submodules the build
# needs, then runs cmake -G Ninja -DCONFIG=px4_sitl_default and ninja in
# SRC_DIR/build/px4_sitl_default with Debian's python3 (PATH=/usr/bin:$PATH).
# At the end it prints the binary and the SKYLOOP_PX4_DIR line to use.
set -euo pipefail

usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }
. "$(dirname "$0")/lib/apt.sh" # say, die, apt_get

fixes=0 micro_cdr="" jobs="" src=""
while [ $# -gt 0 ]; do
  case "$1" in
    --snapshot-fixes) fixes=1 ;;
    --micro-cdr) [ $# -ge 2 ] || usage; micro_cdr=$2; shift ;;
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
src=$(cd "$src" && pwd)
board=$src/boards/px4/sitl/default.px4board
if [ ! -f "$src/Makefile" ] || [ ! -d "$src/boards/px4/sitl" ] || [ ! -f "$board" ]; then
  die "$src does not look like a PX4-Autopilot tree (need Makefile and boards/px4/sitl/default.px4board)"
fi
git -C "$src" rev-parse --git-dir >/dev/null 2>&1 ||
  die "$src is not a git checkout; PX4 needs one (its version comes from git describe)"
say "PX4 tree $src ($(git -C "$src" describe --always --tags 2>/dev/null || echo '?'))"

# --- 2. snapshot workarounds (optional, idempotent) --------------------------
# set_board_n KEY WHY: make "CONFIG_KEY=n" in the board file.
set_board_n() {
  if grep -q "^CONFIG_$1=n\$" "$board"; then
    say "  CONFIG_$1=n already set"
  elif grep -q "^CONFIG_$1=" "$board"; then
    sed -i "s/^CONFIG_$1=.*/CONFIG_$1=n/" "$board"; say "  set CONFIG_$1=n ($2)"
  else
    echo "CONFIG_$1=n" >> "$board"; say "  added CONFIG_$1=n ($2)"
  fi
}
gps_pinned() {  # true if src/drivers/gps/devices is a clone at the pinned commit
  local d=$src/src/drivers/gps/devices pin
  [ -e "$d/.git" ] || return 1
  pin=$(git -C "$src" rev-parse "HEAD:src/drivers/gps/devices" 2>/dev/null) || return 1
  [ "$(git -C "$d" rev-parse HEAD 2>/dev/null)" = "$pin" ]
}
if [ "$fixes" = 1 ]; then
  say "applying snapshot fixes where needed"
  if [ -f "$src/src/modules/gyro_fft/CMSIS_5/CMSIS/DSP/Source/CommonTables/arm_common_tables.c" ]; then
    say "  gyro_fft CMSIS sources present, CONFIG_MODULES_GYRO_FFT left alone"
  else
    set_board_n MODULES_GYRO_FFT "CMSIS arm_common_tables.c missing"
  fi
  if gps_pinned; then
    say "  src/drivers/gps/devices at its pinned commit, CONFIG_DRIVERS_GPS left alone"
  else
    set_board_n DRIVERS_GPS "src/drivers/gps/devices empty or not at its pin; SITL gets GPS via HIL_GPS"
  fi
  modes=$src/src/modules/mavlink/streams/AVAILABLE_MODES.hpp
  xmls=$src/src/modules/mavlink/mavlink/message_definitions/v1.0
  if [ ! -f "$modes" ] || ! grep -q 'available_modes\.seq = ' "$modes"; then
    say "  no available_modes.seq line in AVAILABLE_MODES.hpp"
  elif ! ls "$xmls"/*.xml >/dev/null 2>&1; then
    say "  mavlink submodule empty, AVAILABLE_MODES.hpp left alone for now"
  elif awk '/name="AVAILABLE_MODES"/{m=1} m&&/name="seq"/{f=1} m&&/<\/message>/{m=0} END{exit !f}' "$xmls"/*.xml; then
    say "  mavlink AVAILABLE_MODES has a seq field, AVAILABLE_MODES.hpp left alone"
  else
    sed -i '/^[[:space:]]*available_modes\.seq = .*;[[:space:]]*$/d' "$modes"
    say "  removed available_modes.seq line (mavlink checkout predates the field)"
  fi
fi

# --- 3. submodules -----------------------------------------------------------
# path:file that must exist in it
needed=(
  src/modules/mavlink/mavlink:message_definitions/v1.0/common.xml
  src/modules/mavlink/mavlink/pymavlink:generator/mavgen.py
  src/lib/events/libevents:scripts/combine.py
  src/lib/heatshrink/heatshrink:heatshrink_decoder.c
  src/modules/uxrce_dds_client/Micro-XRCE-DDS-Client:CMakeLists.txt
)
grep -q '^CONFIG_DRIVERS_GPS=y' "$board" && needed+=(src/drivers/gps/devices:src/gps_helper.h)
missing=()
for n in "${needed[@]}"; do
  p=${n%%:*} f=${n#*:}
  if [ ! -e "$src/$p/.git" ] || [ ! -f "$src/$p/$f" ]; then missing+=("$p"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
  {
    echo "error: submodules not populated (each needs its files and a .git):"
    printf '  %s\n' "${missing[@]}"
    # pymavlink is a submodule of mavlink: --recursive on mavlink brings it
    init=$(printf '%s\n' "${missing[@]}" | sed 's#/pymavlink$##' | awk '!seen[$0]++' | tr '\n' ' ')
    echo "On a full clone of PX4-Autopilot run:"
    echo "  git -C $src submodule update --init --recursive ${init% }"
    if grep -q '^CONFIG_DRIVERS_GPS=y' "$board" && printf '%s\n' "${missing[@]}" | grep -q gps; then
      echo "Without the GPS drivers, --snapshot-fixes disables CONFIG_DRIVERS_GPS (SITL does not use it)."
    fi
  } >&2
  exit 1
fi
if grep -q '^CONFIG_MODULES_GYRO_FFT=y' "$board" &&
   [ ! -f "$src/src/modules/gyro_fft/CMSIS_5/CMSIS/DSP/Source/CommonTables/arm_common_tables.c" ]; then
  die "src/modules/gyro_fft/CMSIS_5/.../arm_common_tables.c is missing (snapshot?); use --snapshot-fixes"
fi
say "submodules present: ${needed[*]%%:*}"

# --- 4. Debian packages ------------------------------------------------------
pkgs=(cmake ninja-build g++ make git python3 python3-yaml python3-jinja2 python3-empy
      python3-kconfiglib python3-jsonschema python3-future python3-packaging python3-genmsg)
install_missing "${pkgs[@]}"

# --- 5. build ----------------------------------------------------------------
export PATH=/usr/bin:$PATH  # Debian's python3 has the modules above; a pyenv one does not
if [ -n "$micro_cdr" ]; then
  i=${GIT_CONFIG_COUNT:-0}
  export "GIT_CONFIG_KEY_$i=url.$micro_cdr.insteadOf" "GIT_CONFIG_VALUE_$i=https://github.com/eProsima/Micro-CDR.git"
  export GIT_CONFIG_COUNT=$((i + 1))
  say "Micro-CDR served from $micro_cdr"
fi
bdir=$src/build/px4_sitl_default
mkdir -p "$bdir"
cd "$bdir"
cached_py=$(sed -n 's/^PYTHON_EXECUTABLE:FILEPATH=//p' CMakeCache.txt 2>/dev/null || true)
if [ ! -f build.ninja ] || [ "$cached_py" != /usr/bin/python3 ]; then
  say "configuring: cmake ../.. -G Ninja -DCONFIG=px4_sitl_default (in $bdir)"
  cmake ../.. -G Ninja -DCONFIG=px4_sitl_default \
    -DPython3_EXECUTABLE=/usr/bin/python3 -DPYTHON_EXECUTABLE=/usr/bin/python3
fi
say "building: ninja -j$jobs"
start=$SECONDS
ninja -j"$jobs"
say "build finished in $((SECONDS - start)) s"

[ -x "$bdir/bin/px4" ] || die "build ended but $bdir/bin/px4 is missing"
echo
echo "PX4 SITL binary: $bdir/bin/px4"
echo "Use it with skyloop:"
echo "  export SKYLOOP_PX4_DIR=$bdir"
