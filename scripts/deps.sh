#!/usr/bin/env bash
# Install the Debian packages the build needs, when some are missing.  As root this runs
# apt-get; otherwise it names what is missing and how to install it, and fails.
#
# Another apt/dpkg process (a fresh cloud VM's unattended-upgrades, say) may hold the package
# system's locks: we say so and wait for it, up to NINFER_DEPS_LOCK_WAIT seconds (default 600),
# and fail with a message naming the holder only after the wait.  NINFER_DEPS_LOCKS (the lock
# files) and NINFER_DEPS_APT_GET (the apt-get command) exist for tests/cli/test_make_targets.sh.
set -euo pipefail
missing=()
for p in "$@"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "deps: missing Debian packages: ${missing[*]}" >&2
  echo "deps: run as root, or: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi

locks=${NINFER_DEPS_LOCKS:-/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock /var/cache/apt/archives/lock}
wait_s=${NINFER_DEPS_LOCK_WAIT:-600}
apt_get=${NINFER_DEPS_APT_GET:-apt-get}
case $wait_s in '' | *[!0-9]*) echo "deps: NINFER_DEPS_LOCK_WAIT=$wait_s is not a number of seconds" >&2; exit 2 ;; esac

# "FILE PID" of the first lock file some process holds (dpkg and apt take fcntl locks, which
# /proc/locks lists by inode), or nothing.
lock_holder() {
  local f ino pid
  for f in $locks; do
    [ -e "$f" ] || continue
    ino=$(stat -c %i "$f")
    pid=$(awk -v ino="$ino" '{ for (i = 1; i < NF; i++) if ($i ~ /^[0-9a-f]+:[0-9a-f]+:[0-9]+$/) {
            n = split($i, a, ":"); if (a[n] == ino && $(i - 1) ~ /^-?[0-9]+$/) { print $(i - 1); exit } } }' /proc/locks)
    if [ -n "$pid" ]; then echo "$f $pid"; return; fi
  done
}
describe() { local c; c=$(cat "/proc/$2/comm" 2>/dev/null || echo '?'); echo "$1 is held by pid $2 ($c)"; }

held=$(lock_holder)
if [ -n "$held" ]; then
  echo "deps: $(describe $held): another apt/dpkg process is at work; waiting up to ${wait_s} s for it" >&2
  start=$SECONDS
  while [ -n "$held" ] && [ $((SECONDS - start)) -lt "$wait_s" ]; do
    sleep 1
    held=$(lock_holder)
  done
  if [ -n "$held" ]; then
    echo "deps: after ${wait_s} s $(describe $held); let it finish (or stop it), then run make again" >&2
    echo "deps: missing Debian packages: ${missing[*]}" >&2
    exit 1
  fi
  echo "deps: the lock is free after $((SECONDS - start)) s" >&2
fi

echo "deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# apt waits for the dpkg lock itself too, for the case where another process takes it between
# our check and apt's (apt >= 1.9.11; older apt ignores the option)
"$apt_get" -o DPkg::Lock::Timeout="$wait_s" update -qq
"$apt_get" -o DPkg::Lock::Timeout="$wait_s" install -y -qq --no-install-recommends "${missing[@]}"
