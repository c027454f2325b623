#!/usr/bin/env bash
# make bench-peer: ninfer-convert beside llama-quantize, end to end, as users run them
# (bench/README.md, "Beside llama-quantize").  The peer is llama.cpp's own library
# (scripts/peer-llama.sh installs the pinned release, bench/peer/nf-llama-quantize.c drives it
# as `llama-quantize --pure [--imatrix F] IN OUT TYPE NTHREADS`: every tensor one type).
#   For every gguf type ggml_quantize encodes, at 1 and 2 threads (nproc, if fewer), in turn:
#     ninfer-convert IN.gguf -o OUT.ninfer --method ggml_quantize --format gguf_T (the report on)
#     nf-llama-quantize LIBLLAMA --pure IN.gguf OUT.gguf T N
#   the median of BENCH_REPEAT (default 3) runs each, with the range and the peak RSS (ninfer-bench
#   exec), and the CPU time (user + system, /usr/bin/time) of each side, whose ratio is steadier
#   than the wall time's on a shared machine.
#   Input: ninfer-gen-checkpoint --hidden 4096 --kv-hidden 4096 --intermediate 11008 --layers 1
#   --vocab 8 --gguf --dtype f16 (405 MB); the i-quants below iq4 (iq3_xxs, iq3_s, iq2_*, iq1_*)
#   are slow in ggml and use a smaller one (--hidden 1024 --kv-hidden 1024 --intermediate 2816,
#   25.7 MB).  Types llama-quantize refuses without an importance matrix (iq3_xxs, iq2_*, iq1_*)
#   get one on both sides (tests/cli/gen_imatrix.py; ninfer-convert through a recipe with
#   `with: {imatrix: imatrix}`, since quick mode takes none).
# usage: bench/peer.sh [BIN_DIR]   (default build-bench/bin; BENCH_PEER_TYPES: the types to run,
#        default all; PEER_DIR: where the peer is installed, default BIN_DIR/../peer-llama;
#        BENCH_TMPDIR as bench/run.sh).  Exit 4 (and nothing measured) when the peer cannot be
#        installed here (no npm or registry, not x86-64).
set -euo pipefail
bin=$(cd "${1:-build-bench/bin}" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)
repeat=${BENCH_REPEAT:-3}
types=${BENCH_PEER_TYPES:-"q8_0 q4_0 q5_0 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs q2_0 iq3_xxs iq3_s iq2_xxs iq2_xs iq2_s iq1_s iq1_m"}
threads=1
[ "$(nproc)" -ge 2 ] && threads="1 2"
if [ -z "${BENCH_TMPDIR:-}" ]; then
    if [ -d /dev/shm ] && [ -w /dev/shm ]; then BENCH_TMPDIR=/dev/shm; else BENCH_TMPDIR=${TMPDIR:-/tmp}; fi
fi
[ -x /usr/bin/time ] || { echo "bench/peer.sh: /usr/bin/time (package time) is needed for the CPU times" >&2; exit 3; }

st=0
peer_env=$(bash "$here/scripts/peer-llama.sh" "${PEER_DIR:-$(dirname "$bin")/peer-llama}") || st=$?
[ "$st" -eq 0 ] || { echo "bench/peer.sh: no llama-quantize peer (scripts/peer-llama.sh exited $st)" >&2; exit "$st"; }
eval "$peer_env"

tmp=$(mktemp -d "$BENCH_TMPDIR/ninfer-bench-peer.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$bin/ninfer-gen-checkpoint" "$tmp/big" --hidden 4096 --kv-hidden 4096 --intermediate 11008 --layers 1 --vocab 8 \
    --gguf --dtype f16 >/dev/null
"$bin/ninfer-gen-checkpoint" "$tmp/small" --hidden 1024 --kv-hidden 1024 --intermediate 2816 --layers 1 --vocab 8 \
    --gguf --dtype f16 >/dev/null
# an importance vector for every matrix (tests/cli/gen_imatrix.py's, plus token_embd and output:
# ggml's iq2_xxs, iq2_xs and iq1_s cannot encode a tensor without one, --pure or not)
imatrix() { # OUT H I
    python3 - "$here/tests/cli" "$@" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
import gen_imatrix
out, h, i = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ts = []
for t, k in (('token_embd', h), ('output', h), ('blk.0.attn_q', h), ('blk.0.attn_k', h), ('blk.0.attn_v', h),
             ('blk.0.attn_output', h), ('blk.0.ffn_gate', h), ('blk.0.ffn_up', h), ('blk.0.ffn_down', i)):
    ts += [(t + '.weight.in_sum2', [float(1 + (c % 7)) for c in range(k)]), (t + '.weight.counts', [4.0])]
gen_imatrix.write_entries(out, ts)
PY
}
imatrix "$tmp/small.imatrix.gguf" 1024 2816
weights_of() { # H I: the generator's weights (q/k/v/o H x H, gate/up/down H x I, embedding and output 8 x H, norms)
    echo $((4 * $1 * $1 + 3 * $1 * $2 + 2 * 8 * $1 + 3 * $1))
}
cat "$tmp"/*/model.gguf >/dev/null # in the page cache before the first timed run

# llama-quantize's file type whose default type is T (its --pure writes every tensor as T)
ftype_of() {
    case $1 in
    q3_k) echo Q3_K_M ;; q4_k) echo Q4_K_M ;; q5_k) echo Q5_K_M ;; iq3_s) echo IQ3_S ;; iq2_s) echo IQ2_M ;;
    *) echo "$1" | tr a-z A-Z ;;
    esac
}

printf 'ninfer-convert --method ggml_quantize --format gguf_T beside llama-quantize --pure (llama.cpp %s, %s)\n' \
    "v0.5.0" "$(basename "$PEER_LIB")"
printf 'input: %s (%s MB, %s weights; iq3_xxs..iq1_m: %s, %s MB); files in %s; median of %d runs in turn\n' \
    "4096/4096/11008 x 1 layer F16 GGUF" "$(awk -v b="$(stat -c %s "$tmp/big/model.gguf")" 'BEGIN { printf "%.1f", b / 1e6 }')" \
    "$(weights_of 4096 11008)" "1024/1024/2816" "$(awk -v b="$(stat -c %s "$tmp/small/model.gguf")" 'BEGIN { printf "%.1f", b / 1e6 }')" \
    "$BENCH_TMPDIR" "$repeat"
printf 'load average at start: %s; commit %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)" "$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?')"

cpu_median() { # FILE: the median of user + system seconds over its lines ("%e %U %S %M")
    awk '{ print $2 + $3 }' "$1" | sort -g | awk '{ v[NR] = $1 } END { printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
summary=$tmp/summary
printf '%-8s %3s | %9s %9s %7s | %9s %9s %7s\n' type "-j" "ninfer s" "peer s" "wall" "ninfer cpu" "peer cpu" "cpu" >"$summary"
for t in $types; do
    case $t in
    iq3_xxs | iq3_s | iq2_* | iq1_*) in=small H=1024 I=2816 ;;
    *) in=big H=4096 I=11008 ;;
    esac
    ours=(--method ggml_quantize --format "gguf_$t")
    peer=()
    case $t in
    iq3_xxs | iq2_* | iq1_*)
        printf 'recipe: 1\nsources:\n  base: %s\n  imatrix: %s\ndefaults: {format: fp32}\nrules:\n  - match: "*"\n    when: {rank: 2}\n    format: gguf_%s\n    method: ggml_quantize\n    with: {imatrix: imatrix}\n' \
            "$tmp/$in/model.gguf" "$tmp/$in.imatrix.gguf" "$t" >"$tmp/$t.yaml"
        ours=(-r "$tmp/$t.yaml")
        peer=(--imatrix "$tmp/$in.imatrix.gguf")
        ;;
    esac
    bytes=$(stat -c %s "$tmp/$in/model.gguf")
    w=$(weights_of $H $I)
    for j in $threads; do
        rm -f "$tmp/cpu.ours" "$tmp/cpu.peer"
        src=("$tmp/$in/model.gguf")
        [ "${ours[0]}" = -r ] && src=()
        "$bin/ninfer-bench" exec --repeat "$repeat" --log "$tmp/log" --ratio \
            --label "ninfer-convert gguf_$t -j $j" --bytes "$bytes" --weights "$w" -- \
            /usr/bin/time -a -o "$tmp/cpu.ours" -f '%e %U %S %M' "$bin/ninfer-convert" "${src[@]}" -o "$tmp/out.ninfer" \
            "${ours[@]}" --threads "$j" --force --progress=never \
            --next --label "llama-quantize --pure $(ftype_of "$t") $j" --bytes "$bytes" --weights "$w" -- \
            /usr/bin/time -a -o "$tmp/cpu.peer" -f '%e %U %S %M' "$PEER_BIN" "$PEER_LIB" --pure "${peer[@]}" \
            "$tmp/$in/model.gguf" "$tmp/out.gguf" "$(ftype_of "$t")" "$j"
        co=$(cpu_median "$tmp/cpu.ours") cp=$(cpu_median "$tmp/cpu.peer")
        wo=$(awk '{ print $1 }' "$tmp/cpu.ours" | sort -g | sed -n "$(((repeat + 1) / 2))p")
        wp=$(awk '{ print $1 }' "$tmp/cpu.peer" | sort -g | sed -n "$(((repeat + 1) / 2))p")
        printf '%-8s %3s | %9s %9s %7s | %9s %9s %7s\n' "$t" "$j" "$wo" "$wp" \
            "$(awk -v a="$wo" -v b="$wp" 'BEGIN { printf "%.2f", a / b }')" "$co" "$cp" \
            "$(awk -v a="$co" -v b="$cp" 'BEGIN { printf "%.2f", a / b }')" >>"$summary"
        rm -f "$tmp/out.ninfer" "$tmp/out.gguf"
    done
done
printf '\nper type (median wall s and CPU s = user + system; the ratios are ninfer / llama-quantize, below 1: ninfer faster)\n'
cat "$summary"
printf 'load average at end: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
