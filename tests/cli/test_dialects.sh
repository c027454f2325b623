#!/usr/bin/env bash
# Quantized checkpoints as sources (docs/dialects.md): every dialect's values, bit for bit those
# an oracle written from the dialect definitions computes (tests/cli/gen_dialects.py); companions
# never objects of their own; importing exactly where a format holds the words, requantizing only
# when asked (--requantize, or a rule naming the method), refused otherwise naming the tensor, its
# dialect and both ways forward; `ninfer-verify --against` re-derives; scales in another shard.
# usage: test_dialects.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

python3 "$top/tests/cli/gen_dialects.py" "$work/d" || { bad "gen_dialects.py failed"; finish dialects; exit 1; }
cases="deepseek ct_fp8 modelopt_fp8 ct_int ct_int_odd modelopt_nvfp4 ct_nvfp4 gptq3 gptq2_sym gptq4_asym gptq8_sym
    gptq8_sym_min gptq4 gptq3_act gptq2_v2 gptq2_z1 gptq8_row gptq4_bare gptq4_tall awq_gemm awq_gemv awq_tall mlx4 mlx3_old mlx_mixed mlx8_bare
    gpt_oss_hf gpt_oss_orig ct_mxfp4 ct_mxfp4_wide fbgemm bnb_nf4 bnb_fp4 bnb_int8"

# ---------------------------------------------------------------- values, bit for bit
for c in $cases; do
    run 0 "$bin/ninfer-convert" "$work/d/$c" -o "$work/$c.ninfer" --format fp32 --requantize --threads 2
    run 0 "$bin/ninfer-verify" "$work/$c.ninfer" --against "$work/d/$c"
    contains "$work/out" "valid"
done
while read -r c w n k dialect; do
    run 0 "$bin/ninfer-dequant" "$work/$c.ninfer" "$w" -o "$work/$c.$w.f32"
    same "$work/$c.$w.f32" "$work/d/$c/expected/$w.f32"
    # the same values on one thread, in chunks of one row
    run 0 "$bin/ninfer-convert" "$work/d/$c" -o "$work/$c.1.ninfer" --format fp32 --requantize --threads 1 \
        --chunk-values 1 --force --no-report
    run 0 "$bin/ninfer-dequant" "$work/$c.1.ninfer" "$w" -o "$work/$c.$w.1.f32"
    same "$work/$c.$w.1.f32" "$work/d/$c/expected/$w.f32"
    # GPTQ and AWQ in jobs of 512 rows, each read as words once and encoded 8 rows at a time
    # (docs/ninfer-convert.md "Long rows"; the tall cases take three jobs): the same values
    case $dialect in gptq | awq)
        run 0 "$bin/ninfer-convert" "$work/d/$c" -o "$work/$c.8.ninfer" --format fp32 --requantize --threads 2 \
            --chunk-values $((8 * k)) --force
        run 0 "$bin/ninfer-dequant" "$work/$c.8.ninfer" "$w" -o "$work/$c.$w.8.f32"
        same "$work/$c.$w.8.f32" "$work/d/$c/expected/$w.f32"
        ;;
    esac
    # the plan names the dialect and says the weight is requantized
    run 0 "$bin/ninfer-convert" "$work/d/$c" -o "$work/x.ninfer" --format q8_g32_fp16 --requantize --dry-run --json
    python3 - "$work/out" "$w" "$dialect" "$n" "$k" <<'PY' && ok || bad "$c $w: --dry-run --json"
import json, sys
plan = json.load(open(sys.argv[1]))
o = [o for o in plan['objects'] if o['id'] == sys.argv[2]][0]
assert o['dialect'].startswith(sys.argv[3] + ':'), o
assert o['handling'] == 'requantized' and o['format'] == 'q8_g32_fp16', o
assert o['shape'] == [int(sys.argv[4]), int(sys.argv[5])], o
PY
done <"$work/d/cases.txt"

# a compressed-tensors NVFP4 weight may carry its weight_shape: when it is the codes' [N, K] the
# values are the same (a contradicting one is a bad input, tests/badinput/gen_bad_inputs.py)
cp -r "$work/d/ct_nvfp4" "$work/ct_nvfp4_ws"
python3 - "$work/ct_nvfp4_ws/model.safetensors" <<'PY' && ok || bad "ct_nvfp4 with weight_shape: generator"
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h, data = json.loads(b[8:8 + n]), b[8 + n:]
h['model.layers.0.mlp.gate_proj.weight_shape'] = {'dtype': 'I64', 'shape': [2], 'data_offsets': [len(data), len(data) + 16]}
data += struct.pack('<2q', 128, 64)
hb = json.dumps(h).encode()
open(sys.argv[1], 'wb').write(struct.pack('<Q', len(hb)) + hb + data)
PY
run 0 "$bin/ninfer-convert" "$work/ct_nvfp4_ws" -o "$work/ws.ninfer" --format fp32 --requantize
run 0 "$bin/ninfer-dequant" "$work/ws.ninfer" model.layers.0.mlp.gate_proj.weight_packed -o "$work/ws.f32"
same "$work/ws.f32" "$work/d/ct_nvfp4/expected/model.layers.0.mlp.gate_proj.weight_packed.f32"
run 0 "$bin/ninfer-convert" "$work/ct_nvfp4_ws" -o "$work/ws2.ninfer" --format q4_g64_fp16
run 0 "$bin/ninfer-verify" "$work/ws2.ninfer" --against "$work/ct_nvfp4_ws"

# ---------------------------------------------------------------- companions are never objects
for c in $cases; do
    "$bin/ninfer-inspect" "$work/$c.ninfer" --json >"$work/$c.json"
    python3 - "$work/$c.json" <<'PY' && ok || bad "$c: a companion became an object"
import json, sys
ids = [o['id'] for o in json.load(open(sys.argv[1]))['objects']]
comp = ('weight_scale', 'weight_scale_inv', 'weight_scale_2', 'weight_global_scale', 'weight_zero_point',
        'weight_shape', 'input_scale', 'input_global_scale', 'scales', 'qzeros', 'g_idx', 'biases')
assert not [i for i in ids if i.rsplit('.', 1)[-1] in comp or i.endswith('_scales') or '.weight.' in i
            or i.endswith(('.SCB', '.weight_format'))], ids
PY
done

# ---------------------------------------------------------------- imported exactly by default
# NVFP4 into nvfp4 and compressed-tensors / ModelOpt FP8 per row or per tensor into
# fp8_e4m3fn_row_bf16: quick mode imports them as they are
run 0 "$bin/ninfer-convert" "$work/d/modelopt_nvfp4" -o "$work/i1.ninfer" --format q4_g64_fp16 --dry-run --json
python3 - "$work/out" <<'PY' && ok || bad "modelopt_nvfp4 imported"
import json, sys
o = json.load(open(sys.argv[1]))['objects'][0]
assert o['format'] == 'nvfp4' and o['method'] == 'import_encoded' and o['handling'] == 'imported', o
PY
run 0 "$bin/ninfer-convert" "$work/d/ct_nvfp4" -o "$work/i2.ninfer" --format q4_g64_fp16
run 0 "$bin/ninfer-dequant" "$work/i2.ninfer" model.layers.0.mlp.gate_proj.weight_packed -o "$work/i2.f32"
same "$work/i2.f32" "$work/d/ct_nvfp4/expected/model.layers.0.mlp.gate_proj.weight_packed.f32"
run 0 "$bin/ninfer-verify" "$work/i2.ninfer" --against "$work/d/ct_nvfp4"
run 0 "$bin/ninfer-convert" "$work/d/modelopt_fp8" -o "$work/i3.ninfer" --format q8_g32_fp16 --dry-run
contains "$work/out" "fp8_e4m3fn_row_bf16"
contains "$work/out" "imported as it is"

# GPTQ and AWQ into the grouped formats (docs/dialects.md "GPTQ and AWQ"): quick mode imports
# them without --requantize into the format gen_packed.py names; the values are the oracle's bit
# for bit, the report compares every one (max_abs_error 0, snr_db null: exact), and verify
# --against re-derives them
while read -r c fmt; do
    run 0 "$bin/ninfer-convert" "$work/d/$c" -o "$work/$c.i.ninfer" --format bf16 --dry-run --json
    cp "$work/out" "$work/$c.i.plan.json"
    run 0 "$bin/ninfer-convert" "$work/d/$c" -o "$work/$c.i.ninfer" --format bf16 --threads 2 --chunk-values 1000
    for w in $(awk -v c="$c" '$1 == c {print $2}' "$work/d/cases.txt"); do
        python3 - "$work/$c.i.plan.json" "$w" "$fmt" <<'PY' && ok || bad "$c $w: imported into $fmt in the plan"
import json, sys
o = [o for o in json.load(open(sys.argv[1]))['objects'] if o['id'] == sys.argv[2]][0]
assert o['format'] == sys.argv[3] and o['method'] == 'import_encoded' and o['handling'] == 'imported', o
PY
        run 0 "$bin/ninfer-dequant" "$work/$c.i.ninfer" "$w" -o "$work/$c.i.f32"
        same "$work/$c.i.f32" "$work/d/$c/expected/$w.f32"
        python3 - "$work/$c.i.ninfer.conversion.json" "$w" <<'PY' && ok || bad "$c $w: the report says exact"
import json, sys
o = [o for o in json.load(open(sys.argv[1]))['objects'] if o['object'] == sys.argv[2]][0]
n, k = o['shape']
assert o['values_compared'] == n * k and o['max_abs_error'] == 0 and o['snr_db'] is None, o
PY
    done
    run 0 "$bin/ninfer-verify" "$work/$c.i.ninfer" --against "$work/d/$c"
done <"$work/d/imports.txt"
check test "$(wc -l <"$work/d/imports.txt")" -eq 12
# MXFP4 into nvfp4 (docs/dialects.md "MXFP4"): E8M0 exponents more than 17 octaves apart fit no one
# divisor; a block that far below the largest is kept only when its codes are all zero
run 1 "$bin/ninfer-convert" "$work/d/ct_mxfp4_wide" -o "$work/wide.ninfer" --format bf16 --dry-run
contains "$work/err" "model.layers.0.mlp.gate_proj.weight_packed"
contains "$work/err" "more than 17 octaves below the matrix's largest"
contains "$work/err" "--requantize"
for codes in zero nonzero; do
    rm -rf "$work/oss_$codes" && cp -r "$work/d/gpt_oss_hf" "$work/oss_$codes"
    python3 - "$work/oss_$codes/model.safetensors" "$codes" <<'PY' && ok || bad "gpt_oss_hf $codes block: generator"
import json, struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n])
p = 'model.layers.0.mlp.experts.down_proj'
s = 8 + n + h[p + '_scales']['data_offsets'][0] + 4 * 2 + 1  # row 4, block 1: E8M0 0, 2^-127
c = 8 + n + h[p + '_blocks']['data_offsets'][0] + (4 * 2 + 1) * 16
b[s] = 0
b[c:c + 16] = bytes([0x80] * 16) if sys.argv[2] == 'zero' else bytes([0x80] * 15 + [0x20])  # -0s, then a 1.0
open(sys.argv[1], 'wb').write(b)
PY
done
run 0 "$bin/ninfer-convert" "$work/oss_zero" -o "$work/oss_zero.ninfer" --format bf16
run 0 "$bin/ninfer-verify" "$work/oss_zero.ninfer" --against "$work/oss_zero"
python3 - "$work/oss_zero.ninfer.conversion.json" <<'PY' && ok || bad "oss_zero: the report says exact"
import json, sys
o = [o for o in json.load(open(sys.argv[1]))['objects'] if o['object'].endswith('down_proj_blocks')][0]
assert o['format'] == 'nvfp4' and o['max_abs_error'] == 0 and o['values_compared'] == 256 * 64, o
PY
run 1 "$bin/ninfer-convert" "$work/oss_nonzero" -o "$work/oss_nonzero.ninfer" --format bf16
contains "$work/err" "'model.layers.0.mlp.experts.down_proj_blocks'"
contains "$work/err" "row 4 block 1: scale 2^-127 lies more than 17 octaves below"
check test ! -e "$work/oss_nonzero.ninfer"
run 0 "$bin/ninfer-convert" "$work/oss_nonzero" -o "$work/oss_nonzero.ninfer" --format bf16 --requantize
# fbgemm FP8 (docs/dialects.md "fbgemm FP8"): Llama 4's stacked experts carry a scale per expert
# and column, which no format holds (--requantize); a Linear's row scales import exactly into
# fp8_e4m3fn_row_bf16 (its F32 scales are BF16 values here)
run 1 "$bin/ninfer-convert" "$work/d/fbgemm" -o "$work/fb.ninfer" --format bf16 --dry-run
contains "$work/err" "'language_model.model.layers.0.feed_forward.experts.gate_up_proj' (F8_E4M3): stored quantized (fbgemm_fp8: E4M3 codes, F32 block 64x1 scales)"
contains "$work/err" "--requantize"
cat >"$work/fb.yaml" <<EOF
recipe: 1
sources:
  base: $work/d/fbgemm
defaults: {format: bf16}
rules:
  - match: "*.experts.*"
    format: q8_g32_fp16
    method: grouped_absmax
  - match: "*shared_expert.down_proj.weight"
    method: import_encoded
EOF
run 0 "$bin/ninfer-convert" -r "$work/fb.yaml" -o "$work/fb.ninfer"
fw=language_model.model.layers.0.feed_forward.shared_expert.down_proj.weight
run 0 "$bin/ninfer-dequant" "$work/fb.ninfer" "$fw" -o "$work/fb.f32"
same "$work/fb.f32" "$work/d/fbgemm/expected/$fw.f32"
"$bin/ninfer-inspect" "$work/fb.ninfer" --json >"$work/fb.json"
python3 - "$work/fb.json" "$fw" <<'PY' && ok || bad "fbgemm: the Linear imported"
import json, sys
o = [o for o in json.load(open(sys.argv[1]))['objects'] if o['id'] == sys.argv[2]][0]
assert o['format'] == 'fp8_e4m3fn_row_bf16', o
PY
run 0 "$bin/ninfer-verify" "$work/fb.ninfer" --against "$work/d/fbgemm"
# act-order, groups of 32, 8-bit asymmetric, and 8-bit symmetric reaching q - z = -128 (q8
# excludes it) need --requantize
for c in gptq3_act gptq4_bare gptq8_row gptq8_sym_min; do
    run 1 "$bin/ninfer-convert" "$work/d/$c" -o "$work/$c.i.ninfer" --format bf16 --dry-run
    contains "$work/err" "no format holds its words exactly"
done
# a declaration that says symmetric while a zero point is not 2^(b-1): the import is planned
# (q4), and the row that breaks it is named when read
cp -r "$work/d/gptq4" "$work/gptq4_lie"
python3 - "$work/gptq4_lie/model.safetensors" <<'PY' && ok || bad "gptq4_lie: generator"
import json, struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n])
off = 8 + n + h['model.layers.0.mlp.down_proj.qzeros']['data_offsets'][0]
b[off:off + 4] = struct.pack('<I', 0)  # columns 0..7 of group 0: stored 0, z = 1
open(sys.argv[1], 'wb').write(b)
PY
run 1 "$bin/ninfer-convert" "$work/gptq4_lie" -o "$work/lie.ninfer" --format bf16
contains "$work/err" "gptq4_lie: model.layers.0.mlp.down_proj.qweight: row 0 col 0: the integer q - z = "
contains "$work/err" "outside q4_g64_fp16's codes [-8, 7]"
contains "$work/err" "requantize it"
check test ! -e "$work/lie.ninfer"

# ---------------------------------------------------------------- refused without permission
# DeepSeek's 128x128 blocks, compressed-tensors groups and blocks, packed integers: no format
# holds their words, so quick mode needs --requantize; nothing is written
for c in deepseek ct_int; do
    run 1 "$bin/ninfer-convert" "$work/d/$c" -o "$work/r/$c.ninfer" --format q8_g32_fp16
    contains "$work/err" "stored quantized"
    contains "$work/err" "--requantize"
    contains "$work/err" "names the method"
    check test ! -e "$work/r"
done
contains "$work/err" "compressed_tensors_int"
run 1 "$bin/ninfer-convert" "$work/d/deepseek" -o "$work/r/x.ninfer" --format q8_g32_fp16
contains "$work/err" "'model.layers.0.mlp.down_proj.weight'"
contains "$work/err" "deepseek_fp8"
contains "$work/err" "model.layers.1.self_attn.o_proj.weight" # every such tensor is listed
# quick mode's problems name the command line's part, not a line of the recipe it stands for
contains "$work/err" "quick mode (quantized weights imported as they are; --requantize gives them --format): tensor"
lacks "$work/err" "(quick mode):1"
run 1 "$bin/ninfer-convert" "$work/d/ct_fp8" -o "$work/r/x.ninfer" --format q8_g32_fp16 --rule 'nothere.*=fp32'
contains "$work/err" "--rule 'nothere.*=fp32': selector 'nothere.*' matches no tensor"
# a recipe: the natural method of a format is no permission; a rule naming it is
printf 'recipe: 1\nsources:\n  base: %s\ndefaults: {format: q8_g32_fp16}\n' "$work/d/deepseek" >"$work/r1.yaml"
run 1 "$bin/ninfer-convert" -r "$work/r1.yaml" -o "$work/r1.ninfer"
contains "$work/err" "no format holds its words exactly"
printf 'recipe: 1\nsources:\n  base: %s\ndefaults: {format: q8_g32_fp16}\nrules:\n  - match: "*"\n    when: {quantized: true}\n    method: grouped_absmax\n' \
    "$work/d/deepseek" >"$work/r2.yaml"
run 0 "$bin/ninfer-convert" -r "$work/r2.yaml" -o "$work/r2.ninfer"
run 0 "$bin/ninfer-verify" "$work/r2.ninfer" --against "$work/d/deepseek"
# import_encoded into a format that does not hold the words names the one that does
printf 'recipe: 1\nsources:\n  base: %s\nrules:\n  - match: "*"\n    when: {quantized: true}\n    format: q8_g32_fp16\n    method: import_encoded\n' \
    "$work/d/ct_nvfp4" >"$work/r3.yaml"
run 1 "$bin/ninfer-convert" -r "$work/r3.yaml" -o "$work/r3.ninfer"
contains "$work/err" "keeps its words in nvfp4"
# a rule naming a companion matches nothing: it is not a tensor of its own
printf 'recipe: 1\nsources:\n  base: %s\nrules:\n  - match: model.layers.0.mlp.gate_proj.weight_scale\n    format: fp32\n' \
    "$work/d/ct_fp8" >"$work/r4.yaml"
run 1 "$bin/ninfer-convert" -r "$work/r4.yaml" -o "$work/r4.ninfer"
contains "$work/err" "model.layers.0.mlp.gate_proj.weight_scale"

# every method takes the values: searched q4 scales, fp8 rows, absmax q5; re-derived by verify
printf 'recipe: 1\nsources:\n  base: %s\nrules:\n  - match: "*mlp*"\n    when: {quantized: true}\n    format: q4_g64_fp16\n    method: grouped_search\n  - match: "*self_attn*"\n    format: fp8_e4m3fn_row_bf16\n    method: fp8_row_maxabs\n  - match: lm_head.weight\n    format: q5_g64_fp16\n    method: grouped_absmax\n' \
    "$work/d/ct_fp8" >"$work/m.yaml"
run 0 "$bin/ninfer-convert" -r "$work/m.yaml" -o "$work/m.ninfer"
run 0 "$bin/ninfer-verify" "$work/m.ninfer" --against "$work/d/ct_fp8"
run 0 "$bin/ninfer-verify" "$work/m.ninfer" --against "$work/d/ct_fp8" --recipe "$work/m.yaml"

# ---------------------------------------------------------------- activation scales
# dropped by default, kept as tensors of their own when the recipe asks
printf 'recipe: 1\nsources:\n  base: %s\ndefaults: {format: fp32, activation_scales: keep}\nrules:\n  - match: "*"\n    when: {quantized: true}\n    method: import_encoded\n' \
    "$work/d/ct_fp8" >"$work/a.yaml"
run 1 "$bin/ninfer-convert" -r "$work/a.yaml" -o "$work/a.ninfer" --dry-run
contains "$work/err" "model.layers.0.mlp.down_proj.weight" # group scales: no import
printf 'recipe: 1\nsources:\n  base: %s\ndefaults: {format: fp32, activation_scales: keep}\nrules:\n  - match: "*"\n    when: {quantized: true}\n    method: cast_direct\n' \
    "$work/d/ct_fp8" >"$work/a.yaml"
run 0 "$bin/ninfer-convert" -r "$work/a.yaml" -o "$work/a.ninfer" --dry-run
contains "$work/out" "model.layers.0.mlp.gate_proj.input_scale"
sed -i 's/activation_scales: keep/activation_scales: drop/' "$work/a.yaml"
run 0 "$bin/ninfer-convert" -r "$work/a.yaml" -o "$work/a.ninfer" --dry-run
lacks "$work/out" "input_scale"

# ---------------------------------------------------------------- ninfer-inspect of a checkpoint
run 0 "$bin/ninfer-inspect" "$work/d/ct_int"
contains "$work/out" "quantized weights (2), declared by config.json quantization_config (compressed-tensors"
contains "$work/out" "compressed_tensors_int: int4 codes, BF16 group 32 scales, zero points"
run 0 "$bin/ninfer-inspect" "$work/d/deepseek" --json
python3 - "$work/out" <<'PY' && ok || bad "inspect --json quantized"
import json, sys
q = json.load(open(sys.argv[1]))['quantized']
w = {x['name']: x for x in q['weights']}
d = w['model.layers.0.mlp.down_proj.weight']
assert d['dialect'] == 'deepseek_fp8' and d['shape'] == [200, 300], d
assert d['companions'] == ['model.layers.0.mlp.down_proj.weight_scale_inv'], d
PY
# --stats of a quantized weight: its values' statistics (abs max of the oracle's values)
run 0 "$bin/ninfer-inspect" "$work/d/modelopt_nvfp4" --tensor model.layers.0.mlp.gate_proj.weight --stats --json
python3 - "$work/out" "$work/d/modelopt_nvfp4/expected/model.layers.0.mlp.gate_proj.weight.f32" <<'PY' && ok || bad "inspect --stats of a quantized weight"
import json, struct, sys
doc = json.load(open(sys.argv[1]))
raw = open(sys.argv[2], 'rb').read()
vals = struct.unpack('<%df' % (len(raw) // 4), raw)
assert doc['quantized']['dialect'] == 'modelopt_nvfp4', doc
assert doc['stats']['abs_max'] == max(abs(v) for v in vals), (doc['stats'], max(abs(v) for v in vals))
PY
run 0 "$bin/ninfer-inspect" "$work/d/modelopt_nvfp4" --tensor model.layers.0.mlp.gate_proj.weight_scale_2
contains "$work/out" "companion of  model.layers.0.mlp.gate_proj.weight"

# ---------------------------------------------------------------- scale-out
# plan -> tasks (in reverse order) -> assemble gives the bytes of one run (scales read from the
# other shard by the task that needs them)
id=0123456789abcdef0123456789abcdef
run 0 "$bin/ninfer-convert" "$work/d/deepseek" -o "$work/so1.ninfer" --format q8_g32_fp16 --requantize \
    --artifact-id $id --max-file-bytes 65536
mkdir "$work/so"
run 0 "$bin/ninfer-convert" "$work/d/deepseek" -o "$work/so/so1.ninfer" --format q8_g32_fp16 --requantize \
    --artifact-id $id --max-file-bytes 65536 --plan-out "$work/so.json" --tasks 2
run 0 "$bin/ninfer-convert" --plan "$work/so.json" --task 1
run 0 "$bin/ninfer-convert" --plan "$work/so.json" --task 0
run 0 "$bin/ninfer-convert" --plan "$work/so.json" --assemble
same "$work/so1.ninfer" "$work/so/so1.ninfer"
same "$work/so1.ninfer.part-0001" "$work/so/so1.ninfer.part-0001"
run 0 "$bin/ninfer-verify" "$work/so/so1.ninfer" --against "$work/d/deepseek" --plan "$work/so.json" --task all

# ---------------------------------------------------------------- values that overflow binary32
# E4M3 448 x an F32 channel scale of 3e38 (both finite): refused, naming the row, column, code
# and scale, when the values are read (--requantize, verify --against) and when the rows are
# imported as they are -- never +inf (issue 23 item 9)
mkdir -p "$work/ov"
python3 - "$work/ov/model.safetensors" <<'PY' && ok || bad "overflow checkpoint: generator"
import json, struct, sys
codes = bytearray([0x38] * 32)  # [2, 16] of 1.0
codes[16 + 3] = 0x7E            # 448 at row 1, col 3
hdr = {'m.weight': {'dtype': 'F8_E4M3', 'shape': [2, 16], 'data_offsets': [0, 32]},
       'm.weight_scale': {'dtype': 'F32', 'shape': [2, 1], 'data_offsets': [32, 40]}}
h = json.dumps(hdr).encode()
h += b' ' * (-len(h) % 8)
open(sys.argv[1], 'wb').write(struct.pack('<Q', len(h)) + h + bytes(codes) + struct.pack('<2f', 3e38, 3e38))
PY
mkdir -p "$work/ovo"
run 1 "$bin/ninfer-convert" "$work/ov" -o "$work/ovo/a.ninfer" --format fp32 --requantize
contains "$work/err" "model.safetensors: tensor 'm.weight': row 1 col 3: E4M3 code 0x7E x scale 3.00000001e+38 (0x7F61B1E6) overflows binary32"
run 1 "$bin/ninfer-convert" "$work/ov" -o "$work/ovo/b.ninfer" --format fp8_e4m3fn_row_bf16
contains "$work/err" "row 1 col 3: E4M3 code 0x7E x row scale BF16 0x7F62"
contains "$work/err" "overflows binary32"
check test -z "$(ls -A "$work/ovo")"
# an artifact whose words are the same (row 1's 448 lowered to 1.0) is not re-derived from it
python3 - "$work/ov/model.safetensors" "$work/ov2/model.safetensors" <<'PY' && ok || bad "overflow: the finite twin"
import os, sys
b = bytearray(open(sys.argv[1], 'rb').read())
i = b.rindex(bytes([0x7E]), 0, len(b) - 8)
b[i] = 0x38
os.makedirs(os.path.dirname(sys.argv[2]))
open(sys.argv[2], 'wb').write(bytes(b))
PY
run 0 "$bin/ninfer-convert" "$work/ov2" -o "$work/ov2.ninfer" --format fp32 --requantize
run 1 "$bin/ninfer-verify" "$work/ov2.ninfer" --against "$work/ov"
contains "$work/out" "row 1 col 3: E4M3 code 0x7E x scale"
lacks "$work/out" "valid ("

finish dialects
