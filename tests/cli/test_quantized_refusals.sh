#!/usr/bin/env bash
# Quantized checkpoints of producers no dialect reads (docs/dialects.md, "Quantized checkpoints
# not read yet"), laid out as each producer writes them (tests/cli/gen_quantized.py): GPTQ
# repacked for marlin, AWQ's gemv_fast, MLX's mxfp4 mode, EXL2 without a declaration, HQQ,
# compressed-tensors 2:4 sparse -- declared or recognised by their tensors alone.  Every path that plans from a
# checkpoint refuses them with the same message (exit 1, the file and key or tensor, the format,
# what to do) and writes nothing: quick mode, --requantize, --dry-run, --plan-out, a recipe,
# ninfer-verify --against, ninfer-diff ART CKPT, ninfer-inspect CKPT (after the views that need
# no dialect: the files and tensors as stored).
# usage: test_quantized_refusals.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

python3 "$top/tests/cli/gen_quantized.py" "$work/q" || { bad "gen_quantized.py failed"; finish quantized_refusals; exit 1; }

# an artifact to hold against the checkpoints (verify --against, diff)
run 0 "$bin/ninfer-gen-checkpoint" "$work/plain" --layers 1 --hidden 64 --intermediate 64 --vocab 32
run 0 "$bin/ninfer-convert" "$work/plain" -o "$work/a.ninfer" --format fp32 --no-resources

ncases=0
while IFS=$'\t' read -r name path needles; do
    ncases=$((ncases + 1))
    ck="$work/q/$path"
    o="$work/o/$name"
    mkdir -p "$o"
    # quick mode: refused, every needle, nothing written
    run 1 "$bin/ninfer-convert" "$ck" -o "$o/x.ninfer" --format q4_g64_fp16
    IFS=$'\t' read -r -a want <<<"$needles"
    for n in "${want[@]}"; do contains "$work/err" "$n"; done
    check test -z "$(ls -A "$o")"
    # the message every other path must give: from the checkpoint's file to the end
    msg=$(grep -o "$name/[^ ]*: .*not read yet.*" "$work/err" | head -1)
    [ -n "$msg" ] && ok || { bad "$name: no refusal in $(head -c 300 "$work/err")"; continue; }
    run 1 "$bin/ninfer-convert" "$ck" -o "$o/x.ninfer" --format q4_g64_fp16 --requantize
    contains "$work/err" "$msg"
    run 1 "$bin/ninfer-convert" "$ck" -o "$o/x.ninfer" --format q4_g64_fp16 --dry-run
    contains "$work/err" "$msg"
    check test ! -s "$work/out" # no plan: no companion (nor codes) listed as an object
    run 1 "$bin/ninfer-convert" "$ck" -o "$o/x.ninfer" --format q8_g32_fp16 --dry-run --json
    contains "$work/err" "$msg"
    run 1 "$bin/ninfer-convert" "$ck" -o "$o/x.ninfer" --format q4_g64_fp16 --plan-out "$work/$name.plan.json" --tasks 2
    contains "$work/err" "$msg"
    check test ! -e "$work/$name.plan.json"
    printf 'recipe: 1\nsources:\n  base: %s\ndefaults: {format: q8_g32_fp16}\nrules:\n  - match: "*"\n    when: {quantized: true}\n    method: grouped_absmax\n' \
        "$ck" >"$work/$name.yaml"
    run 1 "$bin/ninfer-convert" -r "$work/$name.yaml" -o "$o/x.ninfer"
    contains "$work/err" "$msg"
    run 1 "$bin/ninfer-convert" -r "$work/$name.yaml" -o "$o/x.ninfer" --dry-run
    contains "$work/err" "$msg"
    check test -z "$(ls -A "$o")"
    # (verify reports the problems it finds on stdout)
    run 1 "$bin/ninfer-verify" "$work/a.ninfer" --against "$ck"
    contains "$work/out" "$msg"
    lacks "$work/out" "valid ("
    run 1 "$bin/ninfer-diff" "$work/a.ninfer" "$ck"
    contains "$work/err" "$msg"
    run 1 "$bin/ninfer-inspect" "$ck"
    contains "$work/err" "$msg"
    run 1 "$bin/ninfer-inspect" "$ck" --json
    contains "$work/err" "$msg"
done <"$work/q/cases.tsv"
check test "$ncases" -eq 8

# ---------------------------------------------------------------- GPTQ, AWQ, MLX, MXFP4, bitsandbytes are read now
# the same layouts, declared in either file or by their tensors alone, convert: every quantized
# weight (a qweight, MLX's U32 weight, gpt-oss's expert blocks: as many as read.tsv's last
# column says) is one object of its dialect, requantized, and no companion is an object of its own
while IFS=$'\t' read -r name path dialect weights; do
    ck="$work/q/$path"
    run 0 "$bin/ninfer-convert" "$ck" -o "$work/$name.ninfer" --format q8_g32_fp16 --requantize --dry-run --json
    python3 - "$work/out" "$dialect" "$weights" <<'PY' && ok || bad "$name: the plan"
import json, sys
objs = json.load(open(sys.argv[1]))['objects']
q = [o for o in objs if 'dialect' in o]
assert len(q) == int(sys.argv[3]), q
assert all(o['dialect'].startswith(sys.argv[2] + ':') and o['handling'] == 'requantized' for o in q), q
assert not [o for o in objs if o['id'].rsplit('.', 1)[-1] in ('qzeros', 'scales', 'g_idx', 'biases', 'weight_scale', 'SCB',
                                                 'weight_format', 'absmax', 'quant_map')
            or o['id'].endswith('_scales') or '.weight.' in o['id']], objs
PY
    run 0 "$bin/ninfer-convert" "$ck" -o "$work/$name.ninfer" --format q8_g32_fp16 --requantize --no-resources
    run 0 "$bin/ninfer-verify" "$work/$name.ninfer" --against "$ck"
done <"$work/q/read.tsv"
check test "$(wc -l <"$work/q/read.tsv")" -eq 15

# ---------------------------------------------------------------- look-alikes are not refused
# a tensor named like one companion of a layout, without the layout's codes, is an ordinary tensor
run 0 "$bin/ninfer-convert" "$work/q/lookalikes" -o "$work/look.ninfer" --format q8_g32_fp16 --no-resources
run 0 "$bin/ninfer-convert" "$work/q/lookalikes" -o "$work/look2.ninfer" --format q8_g32_fp16 --dry-run
run 0 "$bin/ninfer-inspect" "$work/q/lookalikes"
run 0 "$bin/ninfer-verify" "$work/look.ninfer" --against "$work/q/lookalikes"

# ---------------------------------------------------------------- the dialects read still are
# current compressed-tensors and DeepSeek FP8 (ninfer-gen-checkpoint) convert as before; a
# dense sparsity_config stores the weights as they are
run 0 "$bin/ninfer-gen-checkpoint" "$work/ct" --dialect compressed_tensors_fp8 --layers 1 --hidden 64 \
    --intermediate 64 --vocab 32
run 0 "$bin/ninfer-convert" "$work/ct" -o "$work/ct.ninfer" --format q8_g32_fp16 --no-resources
python3 - "$work/ct/config.json" <<'PY' && ok || bad "dense sparsity_config: generator"
import json, sys
c = json.load(open(sys.argv[1]))
c['quantization_config']['sparsity_config'] = {'format': 'dense', 'global_sparsity': 0.1,
                                               'sparsity_structure': 'unstructured', 'targets': ['Linear']}
json.dump(c, open(sys.argv[1], 'w'))
PY
run 0 "$bin/ninfer-convert" "$work/ct" -o "$work/ct2.ninfer" --format q8_g32_fp16 --no-resources
run 0 "$bin/ninfer-verify" "$work/ct2.ninfer" --against "$work/ct"
run 0 "$bin/ninfer-gen-checkpoint" "$work/ds" --dialect deepseek_fp8 --layers 1 --hidden 64 --intermediate 64 \
    --vocab 32
run 0 "$bin/ninfer-convert" "$work/ds" -o "$work/ds.ninfer" --format q8_g32_fp16 --requantize --no-resources
run 0 "$bin/ninfer-verify" "$work/ds.ninfer" --against "$work/ds"

finish quantized_refusals
