#!/usr/bin/env bash
# The README's front door (Makefile, scripts/deps.sh), driven with stand-ins for cmake and
# apt-get so that nothing is built or installed:
#   1. `make demo` builds only the programs the demo runs, never the test suite;
#   2. a build directory whose first configure failed (a cache, no stamp) is configured again;
#   3. deps.sh waits for another apt/dpkg process that holds the package locks, says so, and
#      fails with a message naming the holder only after the wait (as root; skipped otherwise).
# usage: test_make_targets.sh BIN_DIR DATA_DIR
. "$(dirname "$0")/lib.sh" "$@"

# a cmake that records its arguments and succeeds
mkdir -p "$work/fake"
cat >"$work/fake/cmake" <<'SH'
#!/bin/sh
echo "cmake $*" >>"$NINFER_FAKE_LOG"
SH
chmod +x "$work/fake/cmake"
export NINFER_FAKE_LOG="$work/cmake.log"

# 1. the demo's build step names its targets (the real demo script then finds no programs: its
#    exit status is not the point here)
: >"$NINFER_FAKE_LOG"
mkdir -p "$work/b1"
PATH="$work/fake:$PATH" DEMO_OUT="$work/demo" make -s -C "$top" demo BUILD="$work/b1" JOBS=1 >"$work/demo.out" 2>&1
if grep -q -- '--build' "$NINFER_FAKE_LOG"; then ok; else bad "make demo ran no cmake --build: $(cat "$NINFER_FAKE_LOG")"; fi
if grep -- '--build' "$NINFER_FAKE_LOG" | grep -qv -- '--target'; then
    bad "make demo builds everything: $(grep -- '--build' "$NINFER_FAKE_LOG")"
else ok; fi
for t in ninfer-gen-checkpoint ninfer-convert ninfer-inspect ninfer-verify; do
    contains "$NINFER_FAKE_LOG" "$t"
done
lacks "$NINFER_FAKE_LOG" "test_"

# 2. a cache without the stamp (the first configure failed) is configured again
: >"$NINFER_FAKE_LOG"
mkdir -p "$work/b2" && : >"$work/b2/CMakeCache.txt"
PATH="$work/fake:$PATH" make -s -C "$top" build BUILD="$work/b2" JOBS=1 >/dev/null 2>&1
contains "$NINFER_FAKE_LOG" "-B $work/b2"

# 3. deps.sh and a held lock (a POSIX lock, as dpkg takes, on a file of our own)
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: the lock checks of deps.sh need root (deps.sh installs only as root)"
else
    cat >"$work/fake/apt-get" <<'SH'
#!/bin/sh
echo "apt-get $*" >>"$NINFER_FAKE_LOG"
SH
    chmod +x "$work/fake/apt-get"
    : >"$work/lock"
    hold() { # hold SECONDS: lock $work/lock in the background until then; returns once it is held
        rm -f "$work/held"
        # exec: the holder is the background job itself ($!), not a child of it (python3 may be
        # lib.sh's function around NINFER_PYTHON)
        (exec "${NINFER_PYTHON:-python3}" -c 'import fcntl, os, sys, time
f = open(sys.argv[1], "w"); fcntl.lockf(f, fcntl.LOCK_EX); open(sys.argv[2], "w").close(); time.sleep(float(sys.argv[3]))' \
            "$work/lock" "$work/held" "$1") &
        holder=$!
        for _ in $(seq 100); do [ -e "$work/held" ] && break; sleep 0.1; done
    }
    deps() { NINFER_DEPS_LOCKS="$work/lock" NINFER_DEPS_APT_GET="$work/fake/apt-get" bash "$top/scripts/deps.sh" ninfer-no-such-package; }

    # released within the wait: waits, says so, then installs with apt's own lock timeout
    : >"$NINFER_FAKE_LOG"
    hold 2
    NINFER_DEPS_LOCK_WAIT=60 run 0 deps
    wait "$holder"
    contains "$work/err" "is held by pid $holder (python3)"
    contains "$work/err" "waiting up to 60 s"
    contains "$work/err" "the lock is free after"
    contains "$NINFER_FAKE_LOG" "apt-get -o DPkg::Lock::Timeout=60 install -y -qq --no-install-recommends ninfer-no-such-package"

    # still held after the wait: a clear failure naming the holder, nothing installed
    : >"$NINFER_FAKE_LOG"
    hold 30
    NINFER_DEPS_LOCK_WAIT=1 run 1 deps
    kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
    contains "$work/err" "after 1 s $work/lock is held by pid $holder (python3)"
    contains "$work/err" "missing Debian packages: ninfer-no-such-package"
    if [ -s "$NINFER_FAKE_LOG" ]; then bad "apt-get ran while the lock was held: $(cat "$NINFER_FAKE_LOG")"; else ok; fi

    # no lock: no wait, no message about one
    : >"$NINFER_FAKE_LOG"
    NINFER_DEPS_LOCK_WAIT=1 run 0 deps
    lacks "$work/err" "waiting"
    contains "$NINFER_FAKE_LOG" "apt-get -o DPkg::Lock::Timeout=1 update -qq"
fi
finish make_targets
