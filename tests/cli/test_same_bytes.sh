#!/usr/bin/env bash
# An artifact's bytes depend on its inputs only (docs/portability.md, "The same bytes on every
# machine"): not on the SIMD level, the thread count, nor the machine.  Four conversions of
# ninfer-gen-checkpoint's Llama-shaped checkpoints (its default, and one whose rows are whole
# k-quant blocks), under SOURCE_DATE_EPOCH (a derived artifact id), with the digest cache off:
#   demo    recipes/demo.yaml (q4, q5, q6, q8, fp8 rows, direct tensors, a stacked group)
#   budget  recipes/budget-imatrix.yaml (every candidate measured, grouped_search with the imatrix)
#   preset  --preset Q4_K_M --imatrix (ggml's k-quant encoders, through llama-quantize's rules)
#   nvfp4   --format nvfp4 (nvfp4_quantize)
# 1. each at NINFER_SIMD=scalar with one thread, then at this CPU's best level with two: the same
#    artifacts (the reports differ in the thread count they record);
# 2. when NINFER_HOST_BIN names another machine's programs (scripts/arm64.sh: the x86-64 build's,
#    while these are the aarch64 ones under qemu), the same conversions by those, also with two
#    threads: the same files, artifacts and reports.
# usage: test_same_bytes.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
top=$(cd "$2/../.." && pwd)

export SOURCE_DATE_EPOCH=1767225600
# every run hashes its sources itself (the digests the artifacts record are compared too), none
# takes them from the digest cache (docs/provenance.md)
export NINFER_DIGEST_CACHE=0
"$bin/ninfer-gen-checkpoint" "$work/ck" >/dev/null || bad "ninfer-gen-checkpoint"
python3 "$top/tests/cli/gen_imatrix.py" "$work/ck/imatrix.gguf" 200 520 2 7 3 || bad "gen_imatrix.py"
# rows of 128, 256 and 512 values (k-quant blocks, nvfp4 bands), 4 heads and 2 kv heads (--preset reads
# them from config.json)
"$bin/ninfer-gen-checkpoint" "$work/k" --hidden 256 --kv-hidden 128 --intermediate 512 --vocab 256 >/dev/null ||
    bad "ninfer-gen-checkpoint --hidden 256"
python3 - "$work/k/config.json" <<'PY' || bad "config.json"
import json, sys
c = json.load(open(sys.argv[1]))
c.update(num_attention_heads=4, num_key_value_heads=2)
json.dump(c, open(sys.argv[1], 'w'))
PY
python3 "$top/tests/cli/gen_imatrix.py" "$work/k/imatrix.gguf" 256 512 2 7 4 || bad "gen_imatrix.py"

# convert BIN OUT_DIR THREADS: the four conversions into OUT_DIR (demo, budget, preset, nvfp4),
# named relative to it as the reports record -o
convert() {
    local b=$1 o=$2 j=$3
    mkdir -p "$o" && cd "$o" || return 1
    "$b/ninfer-convert" -r "$top/recipes/demo.yaml" --source base="$work/ck" -o demo.ninfer -j "$j" 2>>log &&
        MODEL_DIR=$work/ck "$b/ninfer-convert" -r "$top/recipes/budget-imatrix.yaml" -o budget.ninfer \
            --allow-env MODEL_DIR -j "$j" 2>>log &&
        "$b/ninfer-convert" "$work/k" -o preset.ninfer --preset Q4_K_M --imatrix "$work/k/imatrix.gguf" -j "$j" \
            2>>log &&
        "$b/ninfer-convert" "$work/k" -o nvfp4.ninfer --format nvfp4 --method nvfp4_quantize -j "$j" 2>>log
    local st=$?
    cd "$work" || return 1
    return $st
}

# same A B GLOB WHAT: every file GLOB of A's conversions is in B with the same bytes, and B has no other
same() {
    local a=$1 b=$2 glob=$3 what=$4 f n=0
    for f in "$a"/$glob; do
        n=$((n + 1))
        cmp -s "$f" "$b/${f##*/}" || {
            bad "$what: ${f##*/} differs"
            return
        }
    done
    [ "$n" -ge 4 ] && [ "$(find "$b" -name "$glob" | wc -l)" -eq "$n" ] && ok ||
        bad "$what: $n files in $a, $(find "$b" -name "$glob" | wc -l) in $b"
}

NINFER_SIMD=scalar convert "$bin" "$work/scalar" 1 && ok || bad "the conversions at the scalar level: $(tail -n 3 "$work/scalar/log")"
convert "$bin" "$work/best" 2 && ok || bad "the conversions at the best level: $(tail -n 3 "$work/best/log")"
same "$work/scalar" "$work/best" '*.ninfer' "scalar with 1 thread against the best level with 2"

if [ -n "${NINFER_HOST_BIN:-}" ]; then
    convert "$NINFER_HOST_BIN" "$work/host" 2 && ok || bad "the conversions by $NINFER_HOST_BIN: $(tail -n 3 "$work/host/log")"
    same "$work/host" "$work/best" '*.ninfer*' "$NINFER_HOST_BIN's programs against $bin's"
    echo "compared with $NINFER_HOST_BIN: $(find "$work/host" -name '*.ninfer*' | wc -l) files"
fi
finish "same bytes"
