#!/usr/bin/env bash
# Build the libFuzzer targets with clang and run each for a while: the engine of `make fuzz`.
#
#   tests/fuzz/run_fuzzers.sh BUILD_DIR SECONDS JOBS [TARGET...]
#
# BUILD_DIR (build-fuzz) is configured with CC=clang -DNINFER_FUZZ=ON.  Each target runs for
# SECONDS (-max_total_time) on a working corpus BUILD_DIR/corpus/<name>, seeded from
# tests/fuzz/corpus/<name> and tests/fuzz/regressions/<name> and kept between runs (the tree is
# never written).  Crashes, leaks, timeouts and OOMs land in BUILD_DIR/crashes/<name>/, the log
# in BUILD_DIR/logs/<name>.log.  JOBS (1 or 2) targets run at once.  The exit status is 1 when
# any target left a crash file.  Extra libFuzzer flags for every target: FUZZ_FLAGS="..."; for one
# target: FUZZ_FLAGS_<target>="..." (e.g. FUZZ_FLAGS_recipe="-fork=1 -ignore_ooms=1" keeps fuzzing
# past a known out-of-memory finding).  FUZZ_OPT (below): the compiler's optimization level.
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${1:-build-fuzz}
SECONDS_EACH=${2:-60}
JOBS=${3:-1}
shift $(( $# < 3 ? $# : 3 ))
ALL="container_directory container_artifact safetensors safetensors_index gguf recipe imatrix config_json recipe_resolve scaleout_plan dialects torch"
TARGETS=${*:-$ALL}
CC_FUZZ=${CC_FUZZ:-clang}

if ! command -v "$CC_FUZZ" >/dev/null 2>&1; then
    echo "make fuzz: $CC_FUZZ not found (libFuzzer needs clang: apt-get install clang)" >&2
    exit 2
fi
case "$JOBS" in 1|2) ;; *) echo "make fuzz: FUZZ_JOBS must be 1 or 2" >&2; exit 2 ;; esac

# Per-target input size cap: a little above the largest seed.
max_len() {
    case "$1" in
        container_directory) echo 32768 ;;
        container_artifact) echo 65536 ;;
        gguf) echo 32768 ;;
        safetensors) echo 16384 ;;
        recipe|imatrix|safetensors_index|recipe_resolve) echo 8192 ;;
        config_json) echo 16384 ;;
        scaleout_plan) echo 65536 ;;
        dialects) echo 16384 ;;
        torch) echo 16384 ;;
        *) echo 4096 ;;
    esac
}

# FUZZ_OPT: the optimization level of a new BUILD_DIR, -O2 by default (the most executions a
# second); the smoke run (make fuzz-smoke) takes -O1, whose build is 19 s shorter on CI's 2 cores
# for 5 s more of its fixed 20000 runs a target.
FUZZ_OPT=${FUZZ_OPT:--O2}
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    # -g1: the line tables a finding's stack needs (file:line), a shorter build than -g's
    CC="$CC_FUZZ" cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_FLAGS_RELWITHDEBINFO=$FUZZ_OPT -g1 -DNDEBUG" \
        -DNINFER_FUZZ=ON \
        -DNINFER_TESTS=OFF -DNINFER_WERROR=OFF >/dev/null
fi
cmake --build "$BUILD" -j 2 --target fuzz_targets

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

run_one() {
    local t=$1
    local corpus="$BUILD/corpus/$t" crashes="$BUILD/crashes/$t" log="$BUILD/logs/$t.log"
    mkdir -p "$corpus" "$crashes" "$BUILD/logs"
    # Seed the working corpus (existing entries, the fuzzer's finds, are kept).
    find tests/fuzz/corpus/$t tests/fuzz/regressions/$t -maxdepth 1 -type f ! -name '.*' \
        -exec cp -n -t "$corpus" {} + 2>/dev/null || true
    local dict=()
    [ -f tests/fuzz/dict/$t.dict ] && dict=(-dict=tests/fuzz/dict/$t.dict)
    local extra_var="FUZZ_FLAGS_$t"
    local start end
    start=$(date +%s)
    # shellcheck disable=SC2086
    "$BUILD/fuzz/fuzz_$t" "$corpus" "${dict[@]}" -max_total_time="$SECONDS_EACH" -max_len="$(max_len "$t")" \
        -timeout=20 -rss_limit_mb=2048 -artifact_prefix="$crashes/" -print_final_stats=1 \
        ${FUZZ_FLAGS:-} ${!extra_var:-} >"$log" 2>&1 || true
    end=$(date +%s)
    local execs
    execs=$(grep -E '^stat::number_of_executed_units' "$log" | awk '{print $2}' | tail -1 || true)
    # fork mode prints no final stats: take the last status line's counter
    [ -n "$execs" ] || execs=$(grep -aoE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
    local found
    found=$(find "$crashes" -maxdepth 1 -type f | wc -l)
    printf '%-20s %11s execs in %5ss, corpus %5s files, %s finding files in %s\n' "$t" "${execs:-?}" \
        "$((end - start))" "$(find "$corpus" -maxdepth 1 -type f | wc -l)" "$found" "$crashes"
}

pids=()
for t in $TARGETS; do
    if [ ! -x "$BUILD/fuzz/fuzz_$t" ]; then echo "make fuzz: unknown target $t" >&2; exit 2; fi
    if [ "$JOBS" = 2 ]; then
        run_one "$t" &
        pids+=($!)
        if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}" || true; pids=("${pids[@]:1}"); fi
    else
        run_one "$t"
    fi
done
for p in "${pids[@]}"; do wait "$p" || true; done

status=0
for t in $TARGETS; do
    if [ -n "$(find "$BUILD/crashes/$t" -maxdepth 1 -type f 2>/dev/null)" ]; then
        echo "make fuzz: $t found problems: see $BUILD/crashes/$t and $BUILD/logs/$t.log" >&2
        status=1
    fi
done
exit $status
