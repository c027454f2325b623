#!/usr/bin/env bash
# make bench: one table from one run on this machine (see bench/README.md).
#   1. ninfer-bench: memcpy reference and every kernel, 1 thread and all threads; then
#      grouped_absmax q4/q8 with the other SIMD variants (BENCH_SIMD_COMPARE, default
#      "scalar avx2"; empty to skip);
#   2. end to end: generate a bf16 checkpoint shaped like one 7B transformer layer set (about
#      400 MB) in a temp dir, convert it with bench/q4q8.yaml (--threads 1 and all threads, with
#      and without the report), then verify (full) and dequant --all the artifact (1 and all
#      threads): best wall time of 3 runs, MB/s and weights/s of the input, peak RSS.  The temp
#      dir is deleted afterwards.
# usage: bench/run.sh [BIN_DIR]    (BENCH_ARGS: extra ninfer-bench options, e.g. --rows 4096;
#                                   BENCH_REPEAT: end-to-end runs per program, default 3)
set -euo pipefail
bin=${1:-build-bench/bin}
here=$(cd "$(dirname "$0")/.." && pwd)
threads=$(nproc)
repeat=${BENCH_REPEAT:-3}
# Files go to memory (/dev/shm) when it is there, so that the end-to-end rows measure the
# programs, not the disk's writeback of the fdatasync'd outputs; BENCH_TMPDIR picks another place.
if [ -z "${BENCH_TMPDIR:-}" ]; then
    if [ -d /dev/shm ] && [ -w /dev/shm ]; then BENCH_TMPDIR=/dev/shm; else BENCH_TMPDIR=${TMPDIR:-/tmp}; fi
fi
tmp=$(mktemp -d "$BENCH_TMPDIR/ninfer-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# shellcheck disable=SC2086
"$bin/ninfer-bench" ${BENCH_ARGS:-}

# grouped_absmax q4/q8 again with the other kernel variants this CPU has (NINFER_SIMD), for
# comparison with the run-time choice above.
active=$("$bin/ninfer-bench" --print-simd)
seen=" $active "
for v in ${BENCH_SIMD_COMPARE-scalar avx2}; do
    got=$(NINFER_SIMD=$v "$bin/ninfer-bench" --print-simd)
    case "$seen" in *" $got "*) continue ;; esac
    seen="$seen$got "
    [ "$seen" = " $active $got " ] && printf '\nother grouped_absmax variants (NINFER_SIMD=...; /memcpy against a memcpy measured in the same process):\n'
    # shellcheck disable=SC2086
    NINFER_SIMD=$v "$bin/ninfer-bench" ${BENCH_ARGS:-} --rows-only \
        --filter 'grouped_absmax -> q4_g64_fp16,grouped_absmax -> q8_g32_fp16'
done

# Llama-7B dimensions, one layer; vocab 8 keeps embed/lm_head (q8) negligible.
H=4096 KV=4096 I=11008 L=1 V=8
"$bin/ninfer-gen-checkpoint" "$tmp/checkpoint" --hidden $H --kv-hidden $KV --intermediate $I --layers $L \
    --vocab $V >/dev/null
weights=$((2 * V * H + L * (2 * H + 2 * H * H + 2 * KV * H + 3 * I * H) + H))
src_bytes=$((2 * weights))
art="$tmp/bench.ninfer"
row() { "$bin/ninfer-bench" exec --repeat "$repeat" --log "$tmp/log" "$@"; }

printf '\nend to end: checkpoint of %d bf16 weights (%s MB; q/k/v/o [%d,%d], gate/up [%d,%d], down [%d,%d]),\n' \
    "$weights" "$(awk -v b="$src_bytes" 'BEGIN { printf "%.1f", b / 1e6 }')" $H $H $I $H $H $I
printf 'recipe bench/q4q8.yaml, files in %s, best wall time of %d runs; in = checkpoint bytes for\n' "$BENCH_TMPDIR" "$repeat"
printf 'convert, artifact bytes for verify and dequant; peak RSS = max ru_maxrss of the runs (getrusage children)\n'
printf '%-44s %-12s | %9s %9s %11s | %12s\n' "program" "" "wall s" "in MB/s" "Mw/s" "peak RSS MiB"
for t in $(printf '%s\n' 1 "$threads" | sort -nu); do
    row --label "ninfer-convert --threads $t" --bytes "$src_bytes" --weights "$weights" -- \
        "$bin/ninfer-convert" -r "$here/bench/q4q8.yaml" --source base="$tmp/checkpoint" -o "$art" \
        --threads "$t" --force --progress=never
done
for t in $(printf '%s\n' 1 "$threads" | sort -nu); do
    row --label "ninfer-convert --no-report --threads $t" --bytes "$src_bytes" --weights "$weights" -- \
        "$bin/ninfer-convert" -r "$here/bench/q4q8.yaml" --source base="$tmp/checkpoint" -o "$art" \
        --threads "$t" --force --progress=never --no-report
done
# the artifact with its report, for verify and dequant
"$bin/ninfer-convert" -r "$here/bench/q4q8.yaml" --source base="$tmp/checkpoint" -o "$art" --force \
    --progress=never
art_bytes=$(stat -c %s "$art")
for t in $(printf '%s\n' 1 "$threads" | sort -nu); do
    row --label "ninfer-verify --threads $t (full; $((art_bytes / 1000000)) MB)" --bytes "$art_bytes" \
        --weights "$weights" -- "$bin/ninfer-verify" -q --threads "$t" "$art"
done
for t in $(printf '%s\n' 1 "$threads" | sort -nu); do
    row --label "ninfer-dequant --all --threads $t (f32)" --bytes "$art_bytes" --weights "$weights" -- \
        "$bin/ninfer-dequant" "$art" --all --threads "$t" -o "$tmp/dequant.safetensors"
done
printf 'load average at end: %s\n' "$(cat /proc/loadavg)"
