#!/usr/bin/env bash
# Check the README's apt line on a clean Debian 12 (docs/ns3.md, "Checking
# the install line"): make a minimal bookworm root file system with
# debootstrap, install into it the packages of the README's
# `apt-get install -y ... libns3-dev ...` line and nothing else, then, in it,
#   1. link and run a tiny C++ program against the ns-3 modules skyloop's
#      ns-3 backend uses (the list in netsim/ns3/build.go), with pkg-config;
#   2. run skyloop (built here, static) on a built-in ns-3 scenario, which
#      compiles skyloop's own ns-3 program exactly as on a user's machine.
# A package the line forgets (as libsqlite3-dev was: Debian's ns3-stats.pc
# links /usr/lib/x86_64-linux-gnu/libsqlite3.so by absolute path, and
# libns3-dev does not depend on libsqlite3-dev) fails step 1 or 2.
#
#   sudo scripts/check-apt-line.sh                    # the README of this checkout
#   sudo scripts/check-apt-line.sh --cache /var/tmp/apt-check   # keep the base system and .debs for the next run
#   sudo scripts/check-apt-line.sh --readme OTHER.md --literal
#
# Options:
#   --readme FILE  the README to take the line from (default README.md)
#   --cache DIR    keep the debootstrapped base (a tarball) and the
#                  downloaded packages in DIR, so a second run takes a minute
#   --literal      run the line as written (apt's default: recommended
#                  packages too); by default the packages are installed with
#                  --no-install-recommends, the stricter check (only what the
#                  line names and their dependencies, as .ci/run and
#                  deploy/Dockerfile install them)
#   --keep         leave the root file system in place (its path is printed)
# Environment: MIRROR, a Debian mirror for debootstrap (default: debootstrap's).
#
# Needs root, debootstrap (apt-get install debootstrap), chroot, Go and the
# network (the Debian mirror). Takes 5-15 minutes (most of it downloading and
# unpacking g++ and ns-3); it is not part of `go test`.
# Exit 0: the line is enough; 1: it is not (the failing step is named).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin:/usr/sbin:/sbin

readme=README.md cache= literal=0 keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --readme) readme=${2:?--readme needs a file}; shift 2 ;;
    --cache) cache=${2:?--cache needs a directory}; shift 2 ;;
    --literal) literal=1; shift ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "check-apt-line: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

die() { echo "check-apt-line: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "needs root (debootstrap and chroot): sudo $0"
command -v debootstrap >/dev/null || die "debootstrap is not installed: apt-get install -y debootstrap"
command -v go >/dev/null || die "go is not on PATH (it builds skyloop for the chroot)"
[ -f "$readme" ] || die "$readme: no such file"

# The line: the first `apt-get install -y ...` in code quotes that names
# libns3-dev, possibly broken over several lines of the README.
line=$(tr '\n' ' ' < "$readme" | grep -o 'apt-get install -y [^`]*' | grep -m1 -w libns3-dev || true)
[ -n "$line" ] || die "$readme: no \`apt-get install -y ... libns3-dev ...\` line"
read -r -a pkgs <<< "${line#apt-get install -y }"
for p in "${pkgs[@]}"; do
  [[ $p =~ ^[a-z0-9][a-z0-9.+-]+$ ]] || die "$readme: '$p' in the apt line is not a Debian package name"
done
# The ns-3 modules skyloop links (netsim/ns3/build.go: var modules = [...]).
read -r -a modules <<< "$(sed -n 's/^var modules = \[\]string{\(.*\)}$/\1/p' netsim/ns3/build.go | tr -d '",')"
[ ${#modules[@]} -gt 0 ] || die "netsim/ns3/build.go: no 'var modules = []string{...}' line"
echo "apt line ($readme): apt-get install -y ${pkgs[*]}"
echo "ns-3 modules: ${modules[*]}"

work=$(mktemp -d /var/tmp/skyloop-apt-check.XXXXXX)
root=$work/root
cleanup() {
  for m in "$root/var/cache/apt/archives" "$root/proc" "$root/dev/pts" "$root/dev"; do
    if mountpoint -q "$m" 2>/dev/null; then umount -l "$m" || true; fi
  done
  if [ "$keep" = 1 ]; then
    echo "root file system kept: $root"
  else
    rm -rf --one-file-system "$work"
  fi
}
trap cleanup EXIT
step() { echo; echo "== $*"; }

step "a clean Debian 12 (minbase) in $root"
mkdir -p "$root"
if [ -n "$cache" ] && [ -f "$cache/bookworm-minbase.tar" ]; then
  tar -C "$root" -xf "$cache/bookworm-minbase.tar"
  echo "(from $cache/bookworm-minbase.tar)"
else
  debootstrap --variant=minbase bookworm "$root" ${MIRROR:+"$MIRROR"} > "$work/debootstrap.log" 2>&1 ||
    { tail -20 "$work/debootstrap.log"; die "debootstrap failed (log above)"; }
  if [ -n "$cache" ]; then
    mkdir -p "$cache"
    tar -C "$root" -cf "$cache/bookworm-minbase.tar.tmp" . && mv "$cache/bookworm-minbase.tar.tmp" "$cache/bookworm-minbase.tar"
  fi
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount --bind /dev "$root/dev"
mount --bind /dev/pts "$root/dev/pts"
if [ -n "$cache" ]; then
  mkdir -p "$cache/archives/partial"
  mount --bind "$cache/archives" "$root/var/cache/apt/archives"
fi
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/root \
  DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"; }
# Nothing of the build chain may be there before the line installs it.
for p in g++ pkg-config; do
  if in_root sh -c "command -v $p" >/dev/null; then die "the base system already has $p: not clean"; fi
done

step "apt-get install -y ${pkgs[*]}"
in_root apt-get update -q > "$work/apt.log" 2>&1 || { tail -20 "$work/apt.log"; die "apt-get update failed in the chroot"; }
opts=(-y -q)
[ "$literal" = 1 ] || opts+=(--no-install-recommends)
if ! in_root apt-get install "${opts[@]}" "${pkgs[@]}" >> "$work/apt.log" 2>&1; then
  tail -30 "$work/apt.log"
  echo "FAIL: the README's apt line does not install on Debian 12" >&2
  exit 1
fi
in_root dpkg-query -W -f '${Package} ${Version}\n' libns3-dev g++ pkg-config libsqlite3-dev 2>/dev/null | sed 's/^/  /' || true

step "1. a tiny program linked against ${modules[*]}"
cat > "$root/tmp/hello-ns3.cc" <<'EOF'
#include "ns3/core-module.h"
#include "ns3/network-module.h"
#include "ns3/internet-module.h"
#include <iostream>
using namespace ns3;
static void Tick() { std::cout << "ns-3 " << Simulator::Now().GetSeconds() << " s" << std::endl; }
int main() {
  NodeContainer nodes;
  nodes.Create(2);
  InternetStackHelper().Install(nodes);
  Simulator::Schedule(Seconds(1.5), &Tick);
  Simulator::Run();
  Simulator::Destroy();
  std::cout << "hello from ns-3 with " << nodes.GetN() << " nodes" << std::endl;
  return 0;
}
EOF
echo "pkg-config --libs: $(in_root pkg-config --libs "${modules[@]}" 2>&1)"
if ! in_root sh -c "g++ -std=c++17 -o /tmp/hello-ns3 /tmp/hello-ns3.cc \$(pkg-config --cflags --libs ${modules[*]})" > "$work/hello.log" 2>&1; then
  tail -20 "$work/hello.log"
  echo "FAIL: with the README's apt line, a program cannot be linked against ns-3 on Debian 12 (above)" >&2
  exit 1
fi
in_root /tmp/hello-ns3 || { echo "FAIL: the program linked against ns-3 does not run" >&2; exit 1; }

step "2. skyloop runs a built-in ns-3 scenario (builds its ns-3 program)"
CGO_ENABLED=0 go build -trimpath -o "$root/usr/local/bin/skyloop" ./cmd/skyloop
if ! in_root env SKYLOOP_CACHE=/tmp/skyloop-cache skyloop run bench-ns3-20 --duration 1s --no-files 2>&1 | tee "$work/skyloop.log"; then
  echo "FAIL: skyloop's ns-3 backend does not build or run with the README's apt line on Debian 12 (above)" >&2
  exit 1
fi
echo
echo "OK: the README's apt line (${pkgs[*]}) is enough for the ns-3 backend on a clean Debian 12 (${SECONDS} s)"
