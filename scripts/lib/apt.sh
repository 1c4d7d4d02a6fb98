# Shared by scripts/build-*.sh (sourced): messages, and apt-get that waits
# for the package lock.

say() { printf '==> %s\n' "$*"; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
# apt_get ARGS: apt-get that waits, up to 10 minutes, while another apt or
# dpkg (an unattended upgrade, a second build) holds the lock, instead of
# failing at once. DPkg::Lock::Timeout covers dpkg's lock; the lists lock of
# `apt-get update` is waited for by retrying.
apt_get() {
  local start=$SECONDS log
  log=$(mktemp)
  while ! DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 "$@" 2>"$log"; do
    cat "$log" >&2
    if ! grep -qi 'could not get lock\|unable to lock\|unable to acquire' "$log" || [ $((SECONDS - start)) -ge 600 ]; then
      rm -f "$log"
      return 1
    fi
    say "another apt or dpkg holds the package lock; waiting (up to 10 min)"
    sleep 10
  done
  cat "$log" >&2
  rm -f "$log"
}

# install_missing PKG...: apt-get installs the Debian packages of the list
# that are not installed (as root; otherwise it stops with the command to
# run), or says they are all present.
install_missing() {
  local need=() p
  for p in "$@"; do
    dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' || need+=("$p")
  done
  if [ ${#need[@]} -eq 0 ]; then
    say "Debian packages present ($#)"
    return
  fi
  [ "$(id -u)" = 0 ] ||
    die "missing Debian packages: ${need[*]}; installing them needs root: sudo apt-get install -y --no-install-recommends ${need[*]} (or rerun this script as root)"
  say "installing ${need[*]}"
  apt_get update -q
  apt_get install -y --no-install-recommends "${need[@]}"
}

# check_jobs N: N, or nproc when N is empty; dies unless a positive number.
check_jobs() {
  local j=${1:-$(nproc)}
  case "$j" in ''|*[!0-9]*|0) die "-j needs a positive number, got '$j'" ;; esac
  echo "$j"
}
