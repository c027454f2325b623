#!/usr/bin/env bash
# Instructions per value of the kernels, counted from the compiled code (bench/README.md,
# "Instructions per value"; make bench-insns): each row of ninfer-bench runs under qemu-user with
# bench/insns_plugin.c, which counts every guest instruction executed, once with 1 pass over a
# [128, 4096] matrix and once with 2 (ninfer-bench --passes, one thread); the difference is one
# warm pass's instructions (the setup, and the work done once on first use, are the same in both
# runs), divided by its weights.
# Counted for the x86-64 build at NINFER_SIMD=scalar and avx2 (qemu-x86_64 -cpu max, which has
# AVX2 and F16C but no AVX-512) and the aarch64 build at scalar and neon; each level is checked
# to be the one that runs (ninfer-bench --print-simd under the same emulator).  The x86 CPU is
# shown without ERMS (-erms, -fsrm): qemu counts every iteration of a REP string instruction as
# one instruction, and with ERMS glibc's memcpy and memset use REP MOVSB / STOSB from a few KiB
# up, so the copies would count one instruction a byte; without it they are vector loops, as on
# aarch64.  Emulation gives no time: these are counts of instructions, which a reader on real
# hardware weighs by the CPU's throughput for each kind.
#
# usage: bench/insns.sh X86_BENCH AARCH64_BENCH [ROWS_FILE]
#   X86_BENCH, AARCH64_BENCH  the two ninfer-bench programs (make bench-insns builds them)
#   ROWS_FILE  lines "FILTER<TAB>INPUT" (INPUT - for rows without an input column), default the
#              rows below
# Prints one Markdown table.  Needs qemu-user and a host C compiler (for the plugin).
set -euo pipefail
x86=${1:?usage: bench/insns.sh X86_BENCH AARCH64_BENCH [ROWS_FILE]}
arm=${2:?usage: bench/insns.sh X86_BENCH AARCH64_BENCH [ROWS_FILE]}
rows_file=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
for p in qemu-x86_64 qemu-aarch64; do
  command -v "$p" >/dev/null || { echo "bench/insns.sh: $p is missing (Debian's qemu-user)" >&2; exit 2; }
done
for b in "$x86" "$arm"; do [ -x "$b" ] || { echo "bench/insns.sh: $b is not a program" >&2; exit 2; }; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc=${CC:-cc}
"$cc" -std=c17 -O2 -Wall -Wextra -Werror -shared -fPIC -o "$tmp/insns.so" "$here/insns_plugin.c"

default_rows() {
  # (=LABEL: exactly that label; a label with a [level] suffix is matched by its prefix)
  printf '%s\t%s\n' \
    'grouped_absmax -> q4_g64_fp16' BF16 \
    'grouped_absmax -> q4_g64_fp16' F16 \
    'grouped_absmax -> q4_g64_fp16' F32 \
    'grouped_absmax -> q8_g32_fp16' BF16 \
    'grouped_absmax+stats -> q4_g64_fp16' BF16 \
    '=grouped_search -> q4_g64_fp16' BF16 \
    'grouped_search -> q4_g64_fp16 +importance' BF16 \
    'fp8_row_maxabs -> fp8_e4m3fn_row_bf16' BF16 \
    'nvfp4_quantize -> nvfp4' BF16 \
    'nvfp4_search -> nvfp4' BF16 \
    'ggml_quantize -> q4_k [' F32 \
    'ggml_quantize -> q6_k [' F32 \
    'ggml_quantize -> q8_0 [' F32 \
    'ggml_quantize -> iq4_xs [' F32 \
    '=dequant q4_g64_fp16' - \
    '=dequant q8_g32_fp16' - \
    '=dequant fp8_e4m3fn_row_bf16' - \
    '=dequant nvfp4' - \
    '=dequant gguf_q4_k' - \
    '=dequant gguf_q6_k' - \
    '=verify words q4_g64_fp16' - \
    '=check q4_g64_fp16' - \
    '=encode q4_g64_fp16' - \
    '=encode q8_g32_fp16' -
}

# the emulator's options: x86-64 with AVX2 and F16C, without ERMS (above)
cpu_opts() { if [ "$1" = qemu-x86_64 ]; then echo "-cpu max,-erms,-fsrm"; fi; }

# each level runs as asked (an emulated CPU that lacked it would fill its column with another's)
for run in "qemu-x86_64 $x86 scalar" "qemu-x86_64 $x86 avx2" "qemu-aarch64 $arm scalar" "qemu-aarch64 $arm neon"; do
  read -r emu prog level <<<"$run"
  # shellcheck disable=SC2046
  got=$(NINFER_SIMD=$level "$emu" $(cpu_opts "$emu") "$prog" --print-simd </dev/null) ||
    { echo "bench/insns.sh: $prog --print-simd failed under $emu" >&2; exit 1; }
  [ "$got" = "$level" ] || { echo "bench/insns.sh: NINFER_SIMD=$level runs '$got' under $emu" >&2; exit 1; }
done

# count EMULATOR BENCH LEVEL FILTER INPUT PASSES: the instructions of one run
count() {
  local emu=$1 prog=$2 level=$3 filter=$4 input=$5 passes=$6 args
  args=(--passes "$passes" --rows 128 --cols 4096 --filter "$filter")
  [ "$input" = - ] || args+=(--input "$input")
  # shellcheck disable=SC2046
  NINFER_SIMD=$level NINFER_INSNS_OUT=$tmp/count "$emu" $(cpu_opts "$emu") -plugin "$tmp/insns.so" "$prog" \
    "${args[@]}" </dev/null >"$tmp/out" 2>"$tmp/err" ||
    { echo "bench/insns.sh: $prog ${args[*]} at $level failed: $(head -c 300 "$tmp/err")" >&2; exit 1; }
  [ "$(wc -l <"$tmp/out")" -eq 1 ] ||
    { echo "bench/insns.sh: '$filter' ($input) selects $(wc -l <"$tmp/out") rows, not one: $(cut -f1 "$tmp/out" | tr '\n' ';')" >&2; exit 1; }
  sed -n 's/^insns: //p' "$tmp/count"
}

printf '| kernel | input | x86-64 scalar | avx2 | aarch64 scalar | neon |\n|---|---|---:|---:|---:|---:|\n'
while IFS=$'\t' read -r filter input; do
  [ -n "$filter" ] || continue
  cells=()
  label=
  for run in "qemu-x86_64 $x86 scalar" "qemu-x86_64 $x86 avx2" "qemu-aarch64 $arm scalar" "qemu-aarch64 $arm neon"; do
    read -r emu prog level <<<"$run"
    one=$(count "$emu" "$prog" "$level" "$filter" "$input" 1)
    two=$(count "$emu" "$prog" "$level" "$filter" "$input" 2)
    weights=$(cut -f3 "$tmp/out")
    [ -n "$label" ] || label=$(cut -f1 "$tmp/out" | sed 's/ \[[a-z0-9]*\]$//')
    cells+=("$(awk -v a="$one" -v b="$two" -v w="$weights" 'BEGIN { printf "%.2f", (b - a) / w }')")
  done
  printf '| %s | %s | %s | %s | %s | %s |\n' "$label" "$input" "${cells[@]}"
done < <(if [ -n "$rows_file" ]; then cat "$rows_file"; else default_rows; fi)
