#!/usr/bin/env bash
# make bench: one table from one run on this machine (see bench/README.md).
#   1. ninfer-bench: memcpy reference and every kernel, 1 thread and all threads; then
#      grouped_absmax q4/q8 with the other SIMD variants (BENCH_SIMD_COMPARE, default
#      "scalar avx2"; empty to skip);
#   2. end to end, on a generated checkpoint shaped like one 7B transformer layer set (about
#      400 MB of BF16 safetensors, and the same values as an F16 GGUF, llama.cpp's usual input),
#      files in a temp dir in /dev/shm: ninfer-convert with bench/q4q8.yaml and in quick mode
#      (--format q4/q5/q6/q8, q4 with grouped_search, gguf_q4_k and gguf_q6_k with ggml_quantize),
#      each with the report and with
#      --no-report, run in turn; the same shape and values as DeepSeek FP8 and compressed-tensors
#      int4 checkpoints requantized to q8/q4, each in turn with the BF16 checkpoint (the ratio
#      quantized/BF16); ninfer-verify (full); ninfer-dequant --all beside `dd bs=1M`
#      writing as many bytes to the same filesystem.  Every row is the median of BENCH_REPEAT
#      (default 3) interleaved runs, with the range; 1 thread and all threads.  The temp dir is
#      deleted afterwards.
# usage: bench/run.sh [BIN_DIR]    (BENCH_ARGS: extra ninfer-bench options, e.g. --rows 4096;
#                                   BENCH_REPEAT: runs per end-to-end row, default 3;
#                                   BENCH_E2E_ONLY=1: skip the kernel table)
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
export XDG_CACHE_HOME="$tmp/.cache" # the conversions' digest cache (docs/provenance.md), not the user's

if [ -z "${BENCH_E2E_ONLY:-}" ]; then
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
fi

# Llama-7B dimensions, one layer; vocab 8 keeps embed/lm_head (q8) negligible.
H=4096 KV=4096 I=11008 L=1 V=8
shape="--hidden $H --kv-hidden $KV --intermediate $I --layers $L --vocab $V"
# shellcheck disable=SC2086
"$bin/ninfer-gen-checkpoint" "$tmp/checkpoint" $shape >/dev/null
# shellcheck disable=SC2086
"$bin/ninfer-gen-checkpoint" "$tmp/gguf" $shape --gguf --dtype f16 >/dev/null
# the same values with the projections quantized: DeepSeek FP8, compressed-tensors int4, GPTQ,
# AWQ and compressed-tensors MXFP4 (issue 26)
qdialects="deepseek_fp8 compressed_tensors_int gptq awq compressed_tensors_mxfp4"
for d in $qdialects; do
    # shellcheck disable=SC2086
    "$bin/ninfer-gen-checkpoint" "$tmp/$d" $shape --dialect "$d" >/dev/null
done
qbytes() { stat -c %s "$tmp/$1/model.safetensors"; }
weights=$((2 * V * H + L * (2 * H + 2 * H * H + 2 * KV * H + 3 * I * H) + H))
src_bytes=$((2 * weights))
gguf_bytes=$(stat -c %s "$tmp/gguf/model.gguf")
art="$tmp/bench.ninfer"
# the inputs in the page cache before the first timed run
cat "$tmp/checkpoint/model.safetensors" "$tmp/gguf/model.gguf" "$tmp"/*/model.safetensors >/dev/null
ex() { "$bin/ninfer-bench" exec --repeat "$repeat" --log "$tmp/log" "$@"; }
tcounts=$(printf '%s\n' 1 "$threads" | sort -nu)

printf '\nend to end: checkpoint of %d weights (q/k/v/o [%d,%d], gate/up [%d,%d], down [%d,%d]) as BF16\n' \
    "$weights" $H $H $I $H $H $I
printf 'safetensors (%s MB), as F16 GGUF (%s MB, F32 norms), and with the projections as' \
    "$(awk -v b="$src_bytes" 'BEGIN { printf "%.1f", b / 1e6 }')" "$(awk -v b="$gguf_bytes" 'BEGIN { printf "%.1f", b / 1e6 }')"
for d in $qdialects; do printf ' %s (%s MB)' "$d" "$(awk -v b="$(qbytes "$d")" 'BEGIN { printf "%.1f", b / 1e6 }')"; done
printf ';\nfiles in %s; median of %d interleaved runs\n' "$BENCH_TMPDIR" "$repeat"
printf 'and their range; in = checkpoint bytes for convert, artifact bytes for verify and dequant, output bytes for\n'
printf 'dd; peak RSS = the largest ru_maxrss of the runs; the ratio rows divide the two rows above, run by run\n'
printf 'load average at start: %s\n' "$(cat /proc/loadavg)"
printf '%-56s | %7s %11s %9s %9s | %12s\n' "program" "wall s" "range" "in MB/s" "Mw/s" "peak RSS MiB"

# with and without the report, in turn
pair() { # LABEL BYTES ARGS... : ninfer-convert ARGS with the report, then with --no-report
    local label=$1 bytes=$2
    shift 2
    ex --ratio --label "$label" --bytes "$bytes" --weights "$weights" -- "$bin/ninfer-convert" "$@" --force \
        --progress=never --next --label "$label --no-report" --bytes "$bytes" --weights "$weights" -- \
        "$bin/ninfer-convert" "$@" --force --progress=never --no-report
}
for t in $tcounts; do
    pair "convert -r q4q8.yaml -j $t" "$src_bytes" -r "$here/bench/q4q8.yaml" --source base="$tmp/checkpoint" \
        -o "$art" --threads "$t"
done
quick() { # LABEL FORMAT [METHOD]
    local f=$1 m=${2:-}
    for t in $tcounts; do
        pair "convert ST --format $f${m:+ -m ${m#grouped_}} -j $t" "$src_bytes" "$tmp/checkpoint" -o "$tmp/q.ninfer" \
            --format "$f" ${m:+--method "$m"} --threads "$t"
    done
}
quick q4_g64_fp16
# the sources' SHA-256 (docs/provenance.md): taken while the conversion runs (the digest cache
# off: every run is a first conversion), in turn without; the ratio row is with over without
# (the inputs in the page cache: the hash is all the cost)
for t in $tcounts; do
    ex --ratio --label "convert ST --format q4_g64_fp16 -j $t (digests)" --bytes "$src_bytes" --weights "$weights" -- \
        env NINFER_DIGEST_CACHE=0 "$bin/ninfer-convert" "$tmp/checkpoint" -o "$tmp/h.ninfer" --format q4_g64_fp16 --threads "$t" --force \
        --progress=never --next --label "convert ST --format q4_g64_fp16 -j $t --no-source-digests" --bytes \
        "$src_bytes" --weights "$weights" -- "$bin/ninfer-convert" "$tmp/checkpoint" -o "$tmp/h.ninfer" \
        --format q4_g64_fp16 --threads "$t" --force --progress=never --no-source-digests
done
quick q5_g64_fp16
quick q6_g64_fp16
quick q8_g32_fp16
quick q4_g64_fp16 grouped_search
# ggml_quantize to the k-quants llama-quantize's mixes use most (Q4_K_M: q4_k and q6_k)
quick gguf_q4_k ggml_quantize
quick gguf_q6_k ggml_quantize
printf '%s\n' "the same values from the F16 GGUF (quick mode, the report on):"
for f in q4_g64_fp16 q5_g64_fp16 q6_g64_fp16 q8_g32_fp16 "q4_g64_fp16 grouped_search"; do
    set -- $f
    for t in $tcounts; do
        ex --label "convert GGUF --format $1${2:+ -m ${2#grouped_}} -j $t" --bytes "$gguf_bytes" --weights "$weights" -- \
            "$bin/ninfer-convert" "$tmp/gguf/model.gguf" -o "$tmp/g.ninfer" --format "$1" ${2:+--method "$2"} \
            --threads "$t" --force --progress=never
    done
done

# a budget (docs/recipes.md, "Budgets"): the measuring pass alone (--dry-run: the plan and every
# candidate measured on the sampled rows) in turn with the whole conversion it plans (which
# measures too); the ratio row is measuring over the whole, so 0.5 means as long as the rest
printf '%s\n' "a budget's measuring pass (--dry-run) in turn with its whole conversion (the report on):"
for t in $tcounts; do
    ex --ratio --label "measure --target-bpw 5 -j $t (--dry-run)" --bytes "$src_bytes" --weights "$weights" -- \
        "$bin/ninfer-convert" "$tmp/checkpoint" -o "$tmp/b.ninfer" --target-bpw 5 --threads "$t" --dry-run \
        --progress=never --next --label "convert --target-bpw 5 -j $t" --bytes "$src_bytes" --weights "$weights" -- \
        "$bin/ninfer-convert" "$tmp/checkpoint" -o "$tmp/b.ninfer" --target-bpw 5 --threads "$t" --force \
        --progress=never
done

# quantized sources of the same shape and values (issues 16 and 26): DeepSeek FP8 (128x128 block
# scales), compressed-tensors int4 (groups of 128), GPTQ and AWQ (4-bit, groups of 128) and MXFP4,
# each requantized, in turn with the BF16 checkpoint
printf '%s\n' "quantized checkpoints of the same shape and values, --requantize, each in turn with the BF16 one (the report on):"
for d in $qdialects; do
    for f in q8_g32_fp16 q4_g64_fp16; do
        for t in $tcounts; do
            ex --ratio --label "convert $d --format $f -j $t" --bytes "$(qbytes "$d")" --weights "$weights" -- \
                "$bin/ninfer-convert" "$tmp/$d" -o "$tmp/d.ninfer" --format "$f" --requantize --threads "$t" --force \
                --progress=never --next --label "convert BF16 --format $f -j $t" --bytes "$src_bytes" \
                --weights "$weights" -- "$bin/ninfer-convert" "$tmp/checkpoint" -o "$tmp/d.ninfer" --format "$f" \
                --threads "$t" --force --progress=never
        done
    done
done

# the same weights as a PyTorch checkpoint (torch.save's zip, stored members; and the legacy stream
# before PyTorch 1.6; issue 27), to q4, in turn with the safetensors one: the ratio is what reading
# PyTorch costs
st_file=$(ls "$tmp/checkpoint/"*.safetensors | head -1)
python3 "$here/bench/st_to_torch.py" "$st_file" "$tmp/pytorch"
python3 "$here/bench/st_to_torch.py" "$st_file" "$tmp/pytorch_legacy" --legacy
cp "$tmp/checkpoint/"*.json "$tmp/pytorch/"
cp "$tmp/checkpoint/"*.json "$tmp/pytorch_legacy/"
for kind in pytorch pytorch_legacy; do
    pt_bytes=$(stat -c %s "$tmp/$kind/pytorch_model.bin")
    label=PyTorch
    [ "$kind" = pytorch ] || label="PyTorch legacy"
    for t in $tcounts; do
        ex --ratio --label "convert $label --format q4_g64_fp16 -j $t" \
            --bytes "$pt_bytes" --weights "$weights" -- \
            "$bin/ninfer-convert" "$tmp/$kind" -o "$tmp/d.ninfer" --format q4_g64_fp16 --threads "$t" --force \
            --progress=never --next --label "convert BF16 --format q4_g64_fp16 -j $t" --bytes "$src_bytes" \
            --weights "$weights" -- "$bin/ninfer-convert" "$tmp/checkpoint" -o "$tmp/d.ninfer" --format q4_g64_fp16 \
            --threads "$t" --force --progress=never
    done
done

# method programs (issue 28; docs/method-programs.md): examples/methods/absmax.py (numpy) and the
# C echo of precomputed words (bench/mprog_echo.c: the protocol and the pipes alone), each in turn
# with the built-in grouped_absmax, to q4: the ratio is what the protocol (and Python) costs
np=/usr/bin/python3
if ! "$np" -c 'import numpy' >/dev/null 2>&1; then
    printf '%s\n' "(method programs: skipped, $np has no numpy: apt-get install python3-numpy)"
fi
# the reference: a bare pipe between two dd's moving as many bytes as the values (4 a weight)
mib=$(((4 * weights + (1 << 20) - 1) >> 20))
ex --label "pipe: dd bs=1M count=$mib | dd (the values' bytes)" --bytes $((mib << 20)) --weights "$weights" -- \
    sh -c "dd if=/dev/zero bs=1M count=$mib status=none | dd of=/dev/null bs=1M status=none"
for t in $tcounts; do
    for prog in "echo=$bin/ninfer-mprog-echo" "absmax=$np $here/examples/methods/absmax.py"; do
        name=${prog%%=*}
        [ "$name" = absmax ] && ! "$np" -c 'import numpy' >/dev/null 2>&1 && continue
        ex --ratio --label "convert --method-program $name q4 -j $t" --bytes "$src_bytes" --weights "$weights" -- \
            "$bin/ninfer-convert" "$tmp/checkpoint" -o "$tmp/m.ninfer" --format q4_g64_fp16 --method "$name" \
            --method-program "$prog" --threads "$t" --force --progress=never \
            --next --label "convert --format q4_g64_fp16 -j $t" --bytes "$src_bytes" --weights "$weights" -- \
            "$bin/ninfer-convert" "$tmp/checkpoint" -o "$tmp/m.ninfer" --format q4_g64_fp16 --threads "$t" --force \
            --progress=never
    done
done

# the artifact with its report, for verify and dequant
"$bin/ninfer-convert" -r "$here/bench/q4q8.yaml" --source base="$tmp/checkpoint" -o "$art" --force \
    --progress=never >/dev/null
art_bytes=$(stat -c %s "$art")
for t in $tcounts; do
    ex --label "verify -j $t (full; $((art_bytes / 1000000)) MB)" --bytes "$art_bytes" --weights "$weights" -- \
        "$bin/ninfer-verify" -q --threads "$t" "$art"
done
# dequant --all beside dd writing as many bytes, both synced (dequant fsyncs before its rename)
"$bin/ninfer-dequant" "$art" --all -o "$tmp/dequant.safetensors"
out_bytes=$(stat -c %s "$tmp/dequant.safetensors")
mib=$(((out_bytes + 1048575) / 1048576))
for t in $tcounts; do
    ex --ratio --label "dequant --all -j $t (f32, $((out_bytes / 1000000)) MB)" --bytes "$art_bytes" \
        --weights "$weights" -- "$bin/ninfer-dequant" "$art" --all --threads "$t" -o "$tmp/dequant.safetensors" \
        --next --label "dd bs=1M count=$mib conv=fsync (as many bytes)" --bytes "$out_bytes" --weights 0 -- \
        dd if=/dev/zero of="$tmp/dd.out" bs=1M count="$mib" conv=fsync status=none
done
printf 'load average at end: %s\n' "$(cat /proc/loadavg)"
