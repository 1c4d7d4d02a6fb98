#!/usr/bin/env bash
# Build a minimal ROS 2 Humble (rclpy, ros2 topic, the message packages
# skyloop's ROS 2 bridge uses, Cyclone DDS as the middleware) from GitHub
# repository snapshots, with Debian 12 packages only: no network, no Fast DDS,
# no spdlog, no tests. ROS 2 itself stays outside this repository.
#
#   scripts/build-ros2.sh [options] WORKSPACE
#
#   WORKSPACE            where to build: sources in WORKSPACE/src, install tree in
#                        WORKSPACE/install (also WORKSPACE/build and WORKSPACE/log)
#   --snapshots DIR      check out each of the 30 repositories below from its
#                        snapshot, DIR/<owner>/<name>.git (or DIR/<owner>+<name>/repo),
#                        at its commit into WORKSPACE/src/<owner>/<name>; without it
#                        WORKSPACE/src must already hold them (e.g. `vcs import`)
#   --commit OWNER/NAME=SHA  use SHA instead of the listed commit (repeatable)
#   --checkout-only      stop after the checkout and the local adaptations
#   -j N, -jN            colcon workers and make jobs, at most N at a time (default:
#                        nproc); on a busy machine: nice -n 10 scripts/build-ros2.sh -j2 ...
#
# Installs missing apt packages (needs root), applies the local adaptations
# (libyaml_vendor uses Debian's libyaml; COLCON_IGNORE in ament_lint,
# rosidl_typesupport_fastrtps, example_interfaces, rcl_logging_spdlog,
# test_msgs, std_srvs), then runs, with PATH=/usr/sbin:/usr/bin:/sbin:/bin
# (a pyenv python3 cannot see Debian's python3-* modules),
#   colcon build --merge-install --packages-up-to rclpy std_msgs geometry_msgs
#     sensor_msgs nav_msgs rosgraph_msgs rmw_cyclonedds_cpp ros2topic ros2cli
#     --cmake-args -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release ...
# with RMW_IMPLEMENTATION=rmw_cyclonedds_cpp RCL_LOGGING_IMPLEMENTATION=rcl_logging_noop.
# At the end it prints the `source .../setup.bash` and SKYLOOP_ROS2_DIR lines.
# docs/ros2-build.md has the details.
set -euo pipefail

usage() {
  local text
  text=$(awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0")
  if [ "${1:-2}" = 0 ]; then echo "$text"; else echo "$text" >&2; fi
  exit "${1:-2}"
}
. "$(dirname "$0")/lib/apt.sh" # say, die, apt_get

# The repositories and commits, each the tip of branch humble when measured
# (docs/ros2-build.md).
repos=(
  ament/ament_cmake=6c41a42f5fc345e0cf292410e5b30ef6fd11bcc8
  ament/ament_index=f019d6c40991799a13b18c9c3dcc583e3fde0381
  ament/ament_package=f8ea958fd02cff6f4192425e28566369c92b5e34
  ament/ament_lint=0a73a2690863fc5ab8c31714f8e512bdcbb3616e
  ros2/ament_cmake_ros=60572fa1bec50b9e6fbe64e1b23640d21c15e9d0
  ros2/rcutils=21a77b8cf9f67709bb455daae2bf6d766b656cf4
  ros2/rcpputils=a0286fa98c4ac303040787c9366b5cce600bd904
  ros2/rmw=e5901447f14762975c7a8ea658f0ac731f4fb1c2
  ros2/rmw_implementation=906f57ce6118a8b8e78046fcda9949a8604dc7f3
  ros2/rmw_cyclonedds=7cb3b38a21e14fbcc84aadcc460e4d812d0c7a7f
  ros2/rmw_dds_common=e26ba1079886c5598614172db0b27526aa6af07d
  ros2/rosidl=41be8d6ed987e589493ffaf24d5e2a74e2554a42
  ros2/rosidl_typesupport=aa522c4bf1a1b6c10766b84ca6625a8c494c0928
  ros2/rosidl_python=2507d5dbc1aebe2254d9eac088f007dcaea2ff03
  ros2/rosidl_runtime_py=02b91d6f9acbfe3dbfa4feb34bd7c30e219aa178
  ros2/rosidl_defaults=1f1ee2a6169837b10302ffb2a52fb2f2a57239b2
  ros2/rcl_interfaces=5e01a28f9866a564491480e12d8659a134678741
  ros2/common_interfaces=53761cba9a000902602e7e695cb40de78eadee7f
  ros2/unique_identifier_msgs=27767cefcf8a80da44641dc208c57722c28aa11c
  ros2/rcl=6d0fd90e8f2704aa2576b3b84dd9a08dd8409da1
  ros2/rcl_logging=1b7a4e34884005f28eeb04065b5d94565c67b11d
  ros2/libyaml_vendor=239f695ceaa0820255f3d0fe02ec8c2bd41b8e78
  ros2/ros2_tracing=548634dd2837d65c043436c8186614e924be5c6c
  ros2/rpyutils=4cb9e1b5c1c4c585694196377ab918e7e70639f0
  ros2/rclpy=b488272b1ba88c703080bfd605417f013697ee40
  ros2/ros2cli=28d73d257f232f81c8b2cd05c64cf29f10f272e8
  ros2/pybind11_vendor=06dff083cdef3381c1d1d16159ac19227f646ad9
  ros2/rosidl_typesupport_fastrtps=db3130c64a65c06e1104e80eadccf196bfe080a3
  ros2/example_interfaces=f8deb566a1facf91bd38b9f00c4cf684c5007d85
  ros2/python_cmake_module=859115408416e77d37711912d5c36cd3147fe136
)
# Repositories of the measured recipe that are only there to be ignored
# (COLCON_IGNORE below): checked out when their snapshot is there, skipped
# with a note when it is not; the build is the same either way.
optional=" ament/ament_lint ros2/rosidl_typesupport_fastrtps ros2/example_interfaces "
targets=(rclpy std_msgs geometry_msgs sensor_msgs nav_msgs rosgraph_msgs
         rmw_cyclonedds_cpp ros2topic ros2cli)

snapshots="" checkout_only=0 jobs="" ws="" overrides=()
while [ $# -gt 0 ]; do
  case "$1" in
    --snapshots) [ $# -ge 2 ] || usage; snapshots=$2; shift ;;
    --commit) [ $# -ge 2 ] || usage; overrides+=("$2"); shift ;;
    --checkout-only) checkout_only=1 ;;
    -j) [ $# -ge 2 ] || usage; jobs=$2; shift ;;
    -j[0-9]*) jobs=${1#-j} ;;
    -h|--help) usage 0 ;;
    -*) printf 'unknown option: %s\n' "$1" >&2; usage ;;
    *) [ -z "$ws" ] || usage; ws=$1 ;;
  esac
  shift
done
[ -n "$ws" ] || usage
jobs=$(check_jobs "$jobs")
for o in "${overrides[@]}"; do
  r=${o%%=*} c=${o#*=}
  case "$c" in *[!0-9a-fA-F]*|'') die "--commit $o: expected OWNER/NAME=SHA" ;; esac
  found=0
  for i in "${!repos[@]}"; do
    if [ "${repos[$i]%%=*}" = "$r" ]; then repos[i]=$r=$c; found=1; fi
  done
  [ "$found" = 1 ] || die "--commit $o: $r is not one of the repositories (see the list in $0)"
done

# Debian's tools and Python only: a pyenv python3 cannot import Debian's
# python3-* modules (colcon, empy, catkin_pkg, lark, numpy), and CMake's
# FindPythonInterp (python_cmake_module) takes the first `python3.6` on PATH,
# a pyenv shim if there is one, even after /usr/bin.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin

# --- 1. Debian packages ------------------------------------------------------
# python3-pkg-resources: ros2cli imports it. libiceoryx-binding-c-dev: Debian's
# Cyclone DDS is built with shared memory support, so its CMake config (and
# rmw_cyclonedds_cpp) asks for iceoryx_binding_c; cyclonedds-dev depends on it.
pkgs=(cmake g++ make pkg-config git colcon python3-colcon-core python3-colcon-cmake
      python3-colcon-ros python3-colcon-package-selection python3-colcon-parallel-executor
      python3-colcon-output python3-colcon-bash python3-colcon-library-path
      python3-colcon-python-setup-py python3-colcon-recursive-crawl python3-colcon-metadata
      python3-colcon-defaults python3-colcon-package-information python3-colcon-test-result
      python3-colcon-pkg-config python3-empy python3-catkin-pkg python3-lark python3-numpy
      python3-yaml python3-dev python3-setuptools python3-pkg-resources pybind11-dev
      libyaml-dev cyclonedds-dev cyclonedds-tools libiceoryx-binding-c-dev
      python3-netifaces python3-argcomplete python3-psutil python3-packaging
      python3-importlib-metadata)
install_missing "${pkgs[@]}"
py=/usr/bin/python3
empy=$("$py" -c 'import em; print(getattr(em, "__version__", "?"))' 2>/dev/null) ||
  die "$py cannot import em (python3-empy)"
case "$empy" in
  3.*) ;;
  *) die "empy $empy: ROS 2 Humble's code generators need empy 3.x (Debian 12's python3-empy is 3.3.4)" ;;
esac

# --- 2. the source tree ------------------------------------------------------
if [ -z "$snapshots" ] && [ ! -d "$ws/src" ]; then
  die "$ws/src: no such directory; pass --snapshots DIR to check the repositories out there, or put them there yourself (see docs/ros2-build.md)"
fi
mkdir -p "$ws"
ws=$(cd "$ws" && pwd -P)
src=$ws/src

# snapshot_of OWNER/NAME: the snapshot's git directory, or nothing.
snapshot_of() {
  local d
  for d in "$snapshots/$1.git" "$snapshots/${1%%/*}+${1#*/}/repo"; do
    if git --git-dir="$d" rev-parse -q --git-dir >/dev/null 2>&1; then echo "$d"; return; fi
  done
}

if [ -n "$snapshots" ]; then
  [ -d "$snapshots" ] || die "--snapshots $snapshots: no such directory"
  snapshots=$(cd "$snapshots" && pwd)
  # Check everything first, so that one run lists every missing snapshot or commit.
  problems=() use=()
  for e in "${repos[@]}"; do
    r=${e%%=*} c=${e#*=}
    g=$(snapshot_of "$r")
    if [ -z "$g" ] && [[ $optional == *" $r "* ]] && [ ! -e "$src/$r" ]; then
      say "  no snapshot of $r: skipped (only there to be ignored; not needed)"
      continue
    fi
    use+=("$e")
    if [ -z "$g" ]; then
      problems+=("$r: no snapshot ($snapshots/$r.git or $snapshots/${r%%/*}+${r#*/}/repo)")
    elif [ "$(git --git-dir="$g" cat-file -t "$c" 2>/dev/null)" != commit ]; then
      tip=$(git --git-dir="$g" log -1 --format='%h %cs' refs/heads/humble 2>/dev/null || true)
      problems+=("$r: commit ${c:0:12} is not in $g${tip:+ (its branch humble is at $tip: --commit $r=${tip%% *} to use it)}")
    fi
  done
  if [ ${#problems[@]} -gt 0 ]; then
    { echo "error: snapshots missing:"; printf '  %s\n' "${problems[@]}"; } >&2
    exit 1
  fi
  mkdir -p "$src"
  for e in "${use[@]}"; do
    r=${e%%=*} c=${e#*=}
    g=$(snapshot_of "$r")
    d=$src/$r
    if [ -e "$d/.git" ]; then
      head=$(git -C "$d" rev-parse HEAD 2>/dev/null || true)
      [ "$head" = "$(git --git-dir="$g" rev-parse "$c^{commit}")" ] ||
        die "$d is checked out at ${head:0:12}, not ${c:0:12}; remove it (or check out $c there) and rerun"
      continue
    fi
    [ ! -e "$d" ] || die "$d exists but is not a git checkout; remove it and rerun"
    git clone -q --no-checkout "$g" "$d"
    # Files whose blobs the snapshot lacks: leave them out (sparse checkout).
    missing=$(git -C "$d" ls-tree -r "$c" | awk '$2 == "blob" {print $3}' |
      git -C "$d" cat-file --batch-check | awk '$2 == "missing" {print $1}')
    if [ -n "$missing" ]; then
      files=$(git -C "$d" ls-tree -r "$c" | grep -F "$missing" | cut -f2)
      say "  $r: the snapshot lacks $(echo "$files" | wc -l) file(s), left out: $(echo "$files" | tr '\n' ' ')"
      git -C "$d" config core.sparseCheckout true
      { echo '/*'; echo "$files" | sed 's|^|!/|'; } > "$d/.git/info/sparse-checkout"
    fi
    git -C "$d" -c advice.detachedHead=false checkout -q -f "$c"
  done
  say "${#use[@]} repositories at their commits in $src"
else
  [ -d "$src" ] ||
    die "$src: no such directory; pass --snapshots DIR to check the repositories out there, or put them there yourself (see docs/ros2-build.md)"
  say "using the sources in $src"
fi

# --- 3. local adaptations (idempotent) ---------------------------------------
# pkgdir NAME: the directory of the package NAME under src (its package.xml).
pkgdir() {
  local f
  f=$(grep -rl --include=package.xml "<name>$1</name>" "$src" 2>/dev/null | head -1)
  [ -n "$f" ] && dirname "$f"
}
say "local adaptations"
# COLCON_IGNORE: these are test dependencies, Fast DDS typesupport or spdlog,
# none available as Debian packages; colcon would otherwise order or build them.
# repository:a package in it (the whole repository is ignored) or package:
ignores=(
  repo:ament_lint_auto                # ament/ament_lint
  repo:rosidl_typesupport_fastrtps_c  # ros2/rosidl_typesupport_fastrtps
  pkg:example_interfaces
  pkg:rcl_logging_spdlog
  pkg:test_msgs
  pkg:std_srvs
)
for i in "${ignores[@]}"; do
  kind=${i%%:*} name=${i#*:}
  d=$(pkgdir "$name" || true)
  if [ -z "$d" ]; then
    say "  $name: not found under $src, nothing to ignore"
    continue
  fi
  [ "$kind" = repo ] && d=$(dirname "$d")
  if [ -e "$d/COLCON_IGNORE" ]; then
    say "  COLCON_IGNORE already in ${d#"$src"/}"
  else
    : > "$d/COLCON_IGNORE"; say "  COLCON_IGNORE in ${d#"$src"/}"
  fi
done
# libyaml_vendor downloads and builds libyaml at configure time; use Debian's.
d=$(pkgdir libyaml_vendor || true)
[ -n "$d" ] || die "package libyaml_vendor not found under $src (repository ros2/libyaml_vendor)"
if grep -q 'skyloop: Debian' "$d/CMakeLists.txt"; then
  say "  libyaml_vendor already uses Debian's libyaml"
else
  cat > "$d/CMakeLists.txt" <<'EOF'
# skyloop: Debian's libyaml (libyaml-dev) instead of downloading and building it.
cmake_minimum_required(VERSION 3.18)
project(libyaml_vendor)
find_package(ament_cmake REQUIRED)
find_library(YAML_LIBRARY yaml REQUIRED)
find_path(YAML_INCLUDE_DIR yaml.h REQUIRED)
message(STATUS "libyaml_vendor: using ${YAML_LIBRARY} and ${YAML_INCLUDE_DIR}/yaml.h")
ament_export_libraries(${YAML_LIBRARY})
ament_export_include_directories(${YAML_INCLUDE_DIR})
ament_package()
EOF
  say "  libyaml_vendor/CMakeLists.txt replaced: Debian's libyaml"
fi

# Every package the build needs must be under src (colcon would take a missing
# one for a system dependency and CMake would fail later).
colcon_list=$(cd "$ws" && colcon list --names-only --base-paths "$src" 2>/dev/null) ||
  die "colcon list failed in $ws (is python3-colcon-core installed?)"
missing=()
for t in "${targets[@]}"; do
  grep -qx "$t" <<<"$colcon_list" || missing+=("$t")
done
[ ${#missing[@]} -eq 0 ] ||
  die "packages not found under $src: ${missing[*]} (check out the repositories listed in $0)"
closure=$(cd "$ws" && colcon list --names-only --base-paths "$src" --packages-up-to "${targets[@]}")
say "$(echo "$closure" | wc -l) packages to build"
if [ "$checkout_only" = 1 ]; then
  say "--checkout-only: stopping before the build"
  exit 0
fi

# --- 4. build ----------------------------------------------------------------
export RMW_IMPLEMENTATION=rmw_cyclonedds_cpp RCL_LOGGING_IMPLEMENTATION=rcl_logging_noop
# N colcon workers, and make's jobs capped by load, so that about N compilers run.
export MAKEFLAGS="-j$jobs -l$jobs"
cd "$ws"
# A build configured with another Python (a pyenv one, found before the PATH
# above was set) keeps it in its CMake cache: configure those packages afresh.
for f in build/*/CMakeCache.txt; do
  [ -f "$f" ] || continue
  p=$(sed -n 's/^PYTHON_EXECUTABLE:FILEPATH=//p' "$f")
  if [ -n "$p" ] && [ "$p" != /usr/bin/python3 ]; then
    say "  $(basename "$(dirname "$f")"): cached Python $p; removing $f"
    rm -f "$f"
  fi
done
say "building in $ws: colcon build --parallel-workers $jobs (MAKEFLAGS=$MAKEFLAGS); about 20 CPU-minutes, 10-60 min of wall time"
start=$SECONDS
colcon build --merge-install --base-paths "$src" --parallel-workers "$jobs" \
  --packages-up-to "${targets[@]}" \
  --cmake-args -DBUILD_TESTING=OFF -DCMAKE_BUILD_TYPE=Release \
    -DRCL_LOGGING_IMPLEMENTATION=rcl_logging_noop -DRMW_IMPLEMENTATION=rmw_cyclonedds_cpp \
    -DPython3_EXECUTABLE=/usr/bin/python3 ||
  die "colcon build failed; the failing package's output is in $ws/log/latest_build/<package>/stdout_stderr.log"
say "build finished in $((SECONDS - start)) s"

install=$ws/install
[ -f "$install/setup.bash" ] || die "build ended but $install/setup.bash is missing"
echo
echo "ROS 2 Humble (minimal, Cyclone DDS) installed in $install"
echo "Use it:"
echo "  source $install/setup.bash"
echo "  export RMW_IMPLEMENTATION=rmw_cyclonedds_cpp"
echo "For skyloop's ROS 2 tests:"
echo "  export SKYLOOP_ROS2_DIR=$install"
