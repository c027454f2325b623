#!/usr/bin/env bash
# make coverage: line coverage of the suite (tests/README.md, "Coverage").
#   scripts/coverage.sh BUILD_DIR JOBS SKIP_REGEX [CMAKE_ARGS...]
# Configures BUILD_DIR as a Debug build at -O0 with gcov (NINFER_COVERAGE), hardening off (its
# _FORTIFY_SOURCE wants optimization), builds it, clears the counters, runs the suite minus
# SKIP_REGEX (the tests that run no library code, as the sanitized run skips them), and writes
# BUILD_DIR/coverage/summary.txt (lines and functions of lib/, cmd/ and both, then the least
# covered files of lib/ of 50 lines or more) and an HTML report, BUILD_DIR/coverage/html/.
# A test that fails is named, but the figures are still written: they measure what ran.
set -euo pipefail
mkdir -p "$1"
build=$(cd "$1" && pwd) jobs=$2 skip=$3
shift 3
root=$(cd "$(dirname "$0")/.." && pwd)
command -v lcov >/dev/null || { echo "coverage: lcov is not installed (apt-get install lcov)" >&2; exit 1; }
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Debug -DNINFER_COVERAGE=ON -DNINFER_HARDEN=OFF \
    "-DCMAKE_C_FLAGS_DEBUG=-g -O0" "$@"
fi
cmake --build "$build" -j "$jobs"
out=$build/coverage
rm -rf "$out"
mkdir -p "$out"
lcov --quiet --zerocounters --directory "$build"
# gcov merges each process's counts into the .gcda files under a lock, so parallel tests add up.
status=0
(cd "$build" && ctest -j "$jobs" -E "$skip|^cli_test_(hardening|build_flags)$" >"$out/ctest.log" 2>&1) || status=$?
grep -E 'tests passed|Failed|\*\*\*' "$out/ctest.log" || true
lcov --quiet --capture --directory "$build" --base-directory "$root" --output-file "$out/all.info" \
  --rc lcov_branch_coverage=0 2>"$out/lcov.log"
lcov --quiet --extract "$out/all.info" "$root/lib/*" --output-file "$out/lib.info"
lcov --quiet --extract "$out/all.info" "$root/cmd/*" --output-file "$out/cmd.info"
lcov --quiet --add-tracefile "$out/lib.info" --add-tracefile "$out/cmd.info" --output-file "$out/ours.info"
{
  for part in lib cmd ours; do
    echo "== $part"
    lcov --summary "$out/$part.info" 2>&1 | grep -E 'lines|functions'
  done
  echo "== the least covered files of lib/ (50 lines or more): lines hit / lines, percent"
  lcov --list "$out/lib.info" --list-full-path 2>/dev/null |
    awk -F'|' '/\.(c|h|inc) *\|/ { split($2, a, " "); pct = a[1]; n = a[2]; sub(/%/, "", pct);
                 if (n + 0 >= 50) { f = $1; sub(/ +$/, "", f); printf "%6.1f%% %6d  %s\n", pct, n, f } }' |
    sed "s|  $root/|  |" | sort -n | head -15
} | tee "$out/summary.txt"
genhtml --quiet "$out/ours.info" --output-directory "$out/html" --prefix "$root" >/dev/null 2>&1 || true
echo "coverage: $out/summary.txt, $out/html/index.html"
exit "$status"
