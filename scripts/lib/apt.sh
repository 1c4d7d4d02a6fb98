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
