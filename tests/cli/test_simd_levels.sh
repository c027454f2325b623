#!/usr/bin/env bash
# The suite's verdict never depends on the CPU (tests/README.md "Machines"): the kernel-level
# dispatcher's tests pass at every ceiling NINFER_SIMD can set (lib/src/common/cpu.h), so on an
# AVX-512 machine they run as on an AVX2-only or a scalar one, a missing level reported as a
# skipped test; .ci/run runs the programs' tests at the avx2 ceiling (sanitized) and on aarch64.
# Criterion 2.4 makes a run exit 1 after any log at Criterion's warning level, so no test may warn.
. "$(dirname "$0")/lib.sh" "$@"
units="$bin/../tests"

# no test logs a warning (it fails the run whatever the checks say)
warn=cr_log_; warn=${warn}warn   # (spelled in two pieces: this file is no test that warns)
if grep -rn "$warn" "$top/tests/unit" >"$work/warns"; then bad "tests warn: $(cat "$work/warns")"; else ok; fi

if [ ! -d "$units" ]; then
    echo "SKIP: the dispatcher checks need the unit test binaries beside $bin (a build with tests on)"
    finish simd_levels; exit $?
fi
for level in avx2 scalar; do
    for t in test_method_simd:simd_dispatch test_layout_pack_simd:pack_dispatch; do
        name=${t%%:*}
        [ -x "$units/$name" ] || { bad "$name is not built"; continue; }
        if NINFER_SIMD=$level "$units/$name" --jobs 1 --filter "${t#*:}/*" >"$work/out" 2>&1; then ok
        else bad "NINFER_SIMD=$level $name exited $?: $(tail -c 600 "$work/out")"; fi
    done
    # the ceiling really holds: a level above it is reported as a skipped test, not run
    NINFER_SIMD=$level "$units/test_layout_pack_simd" --jobs 1 --verbose --filter 'pack_dispatch/*' >"$work/out" 2>&1
    contains "$work/out" "the CPU lacks avx512: not checked"
done
finish simd_levels
