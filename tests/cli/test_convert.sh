#!/usr/bin/env bash
# ninfer-convert end to end: the demo recipe, verify and verify --against, byte-identical output
# for any thread count and chunk size, reproducible ids, dry run, refusals (existing output,
# inputs, bad recipes, unmatched selectors, shapes a format cannot hold, bad sources), quick
# mode, GGUF import, the report, and nothing left behind on failure or interruption.
# usage: test_convert.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
empty_dir() { [ -z "$(ls -A "$1")" ]; }

ck=$work/ckpt
"$bin/ninfer-gen-checkpoint" "$ck" >/dev/null || { echo "FAIL generator"; exit 1; }
recipe=$top/recipes/demo.yaml
conv() { "$bin/ninfer-convert" -r "$recipe" --source base="$ck" "$@"; }

# the demo recipe
mkdir "$work/a"
run 0 conv -o "$work/a/m.ninfer"
check test -s "$work/a/m.ninfer.conversion.json"
run 0 "$bin/ninfer-verify" "$work/a/m.ninfer"
run 0 "$bin/ninfer-verify" "$work/a/m.ninfer" --against "$ck"
contains "$work/out" "re-derived"
python3 - "$work/a/m.ninfer.conversion.json" <<'PY' && ok || bad "report content"
import json, sys
r = json.load(open(sys.argv[1]))
objs = {o['object']: o for o in r['objects']}
assert objs['model.norm.weight']['snr_db'] is None and objs['model.norm.weight']['max_abs_error'] == 0
q4 = objs['model.layers.0.self_attn.q_proj.weight']
assert q4['method'] == 'grouped_search' and q4['format'] == 'q4_g64_fp16' and 10 < q4['snr_db'] < 40
assert objs['lm_head.weight']['snr_db'] > q4['snr_db']       # q8 beats q4
assert len(r['artifact_id']) == 32
PY

# the group: one stacked object, members bound to its rows
"$bin/ninfer-inspect" "$work/a/m.ninfer" --json >"$work/i.json"
python3 - "$work/i.json" <<'PY' && ok || bad "group bindings"
import json, sys
d = json.load(open(sys.argv[1]))
ids = [o['id'] for o in d['objects']]
assert 'model.layers.0.self_attn.kv_proj.weight' in ids and 'model.layers.0.self_attn.k_proj.weight' not in ids
k = d['bindings']['model.layers.0.self_attn.k_proj.weight']['parts'][0]
v = d['bindings']['model.layers.0.self_attn.v_proj.weight']['parts'][0]
assert k == {'object': 'model.layers.0.self_attn.kv_proj.weight', 'range': [0, 50 * 200]}
assert v == {'object': 'model.layers.0.self_attn.kv_proj.weight', 'range': [50 * 200, 100 * 200]}
assert d['components']['text']['resources'] == {'tokenizer.json': 'tokenizer.json'}
assert d['metadata']['name'] == 'demo-llama-mixed'
PY

# the same bytes for any thread count and chunk size (fixed id)
id=0123456789abcdef0123456789abcdef
mkdir "$work/t1" "$work/t2" "$work/t3"
run 0 conv -o "$work/t1/m.ninfer" --threads 1 --chunk-values 777 --artifact-id $id --no-report
run 0 conv -o "$work/t2/m.ninfer" --threads 2 --artifact-id $id --no-report
run 0 conv -o "$work/t3/m.ninfer" --threads 3 --chunk-values 100000 --artifact-id $id --no-report --max-file-bytes 0
check cmp -s "$work/t1/m.ninfer" "$work/t2/m.ninfer"
check cmp -s "$work/t1/m.ninfer" "$work/t3/m.ninfer"
# SOURCE_DATE_EPOCH: reproducible without naming an id
mkdir "$work/e1" "$work/e2"
SOURCE_DATE_EPOCH=1700000000 conv -o "$work/e1/m.ninfer" --no-report 2>/dev/null
SOURCE_DATE_EPOCH=1700000000 conv -o "$work/e2/m.ninfer" --no-report --threads 1 2>/dev/null
check cmp -s "$work/e1/m.ninfer" "$work/e2/m.ninfer"
# split output: same object bytes, verifies
mkdir "$work/s"
run 0 conv -o "$work/s/m.ninfer" --max-file-bytes 200000 --artifact-id $id --no-report
check test -e "$work/s/m.ninfer.part-0001"
run 0 "$bin/ninfer-verify" "$work/s/m.ninfer" --against "$ck"

# dry run: nothing written, JSON plan
mkdir "$work/d"
run 0 conv -o "$work/d/m.ninfer" --dry-run
contains "$work/out" "model.layers.0.self_attn.kv_proj.weight"
run 0 conv -o "$work/d/m.ninfer" --dry-run --json
check python3 -c "import json,sys; d=json.load(open('$work/out')); assert d['totals']['objects'] == 21"
check empty_dir "$work/d"

# existing output refused and untouched; --force replaces; inputs are never outputs
echo precious >"$work/d/m.ninfer"
run 3 conv -o "$work/d/m.ninfer"
check test "$(cat "$work/d/m.ninfer")" = precious
check test "$(ls -A "$work/d")" = m.ninfer
run 0 conv -o "$work/d/m.ninfer" --force
run 0 "$bin/ninfer-verify" "$work/d/m.ninfer"
run 2 conv -o "$ck/model.safetensors" --force
run 2 conv -o "$recipe" --force
check cmp -s "$recipe" "$top/recipes/demo.yaml"

# bad recipes: exit 1, FILE:LINE:COL, nothing written
mkdir "$work/r"
printf 'recipe: 1\nsources:\n  base: %s\nrules:\n  - match: "*"\n    fromat: q8_g32_fp16\n' "$ck" >"$work/bad1.yaml"
run 1 "$bin/ninfer-convert" -r "$work/bad1.yaml" -o "$work/r/m.ninfer"
contains "$work/err" "bad1.yaml:6:5"
printf 'recipe: 1\nsources:\n  base: %s\nrules:\n  - match: "model.layers.9.*"\n    format: q8_g32_fp16\n  - match: nothing_here\n    format: fp32\n' "$ck" >"$work/bad2.yaml"
run 1 "$bin/ninfer-convert" -r "$work/bad2.yaml" -o "$work/r/m.ninfer"
contains "$work/err" "model.layers.9.*"
contains "$work/err" "nothing_here"
printf 'recipe: 1\nsources:\n  base: %s\nrules:\n  - match: ["model.layers.0.self_attn.k_proj.weight", "model.layers.1.mlp.up_proj.weight"]\n    format: nvfp4\n' "$ck" >"$work/bad3.yaml"
run 1 "$bin/ninfer-convert" -r "$work/bad3.yaml" -o "$work/r/m.ninfer"
contains "$work/err" "model.layers.0.self_attn.k_proj.weight"
contains "$work/err" "model.layers.1.mlp.up_proj.weight"
printf 'recipe: 1\nsources:\n  base: %s\nrules:\n  - match: "*norm*"\n    format: q4_g64_fp16\n' "$ck" >"$work/bad4.yaml"
run 1 "$bin/ninfer-convert" -r "$work/bad4.yaml" -o "$work/r/m.ninfer"
contains "$work/err" "model.norm.weight"
printf 'recipe: 1\nsources:\n  base: %s\nrules:\n  - match: lm_head.weight\n    format: q2_g64_fp16\n    method: grouped_absmax\n' "$ck" >"$work/bad5.yaml"
run 1 "$bin/ninfer-convert" -r "$work/bad5.yaml" -o "$work/r/m.ninfer"
contains "$work/err" "import_encoded"
check empty_dir "$work/r"
run 3 "$bin/ninfer-convert" -r "$work/missing.yaml" -o "$work/r/m.ninfer"

# bad sources: a truncated checkpoint is invalid (1), a missing one a system error (3)
mkdir "$work/trunc"
cp "$ck/config.json" "$work/trunc/"
head -c 100000 "$ck/model.safetensors" >"$work/trunc/model.safetensors"
run 1 "$bin/ninfer-convert" -r "$recipe" --source base="$work/trunc" -o "$work/r/m.ninfer"
run 3 "$bin/ninfer-convert" -r "$recipe" --source base="$work/nowhere" -o "$work/r/m.ninfer"
check empty_dir "$work/r"

# quick mode: rank-2 floats get the format, others keep their dtype
mkdir "$work/q"
run 0 "$bin/ninfer-convert" "$ck" -o "$work/q/q.ninfer" --format q8_g32_fp16 --rule 'lm_head.*=q4_g64_fp16:grouped_search'
"$bin/ninfer-inspect" "$work/q/q.ninfer" --json >"$work/q.json"
python3 - "$work/q.json" <<'PY' && ok || bad "quick mode formats"
import json, sys
d = json.load(open(sys.argv[1]))
f = {o['id']: o.get('format') for o in d['objects']}
assert f['model.layers.0.mlp.up_proj.weight'] == 'q8_g32_fp16'
assert f['lm_head.weight'] == 'q4_g64_fp16'
assert f['model.norm.weight'] == 'bf16'
assert d['provenance']['objects']['lm_head.weight']['method'] == 'grouped_search'
PY
run 0 "$bin/ninfer-verify" "$work/q/q.ninfer" --against "$ck"
run 2 "$bin/ninfer-convert" "$ck" -o "$work/q/x.ninfer"
run 2 "$bin/ninfer-convert" "$ck" -o "$work/q/x.ninfer" --format q9_nonsense

# GGUF import: blocks byte for byte, values as ggml computes them
mkdir "$work/g"
printf 'recipe: 1\nsources:\n  base: %s\ndefaults: {format: fp32}\nrules:\n  - match: blk.0.attn_q.weight\n    format: gguf_q4_k\n    method: import_encoded\n' "$data/gguf/q4_k.gguf" >"$work/g.yaml"
# (the checkpoint is outside the recipe's directory, named by an absolute path: read wherever it is)
run 0 "$bin/ninfer-convert" -r "$work/g.yaml" -o "$work/g/g.ninfer"
run 0 "$bin/ninfer-dequant" "$work/g/g.ninfer" blk.0.attn_q.weight -o "$work/g/q.f32"
check cmp -s "$work/g/q.f32" "$data/gguf/q4_k.dequant.f32"
run 0 "$bin/ninfer-verify" "$work/g/g.ninfer" --against "$data/gguf/q4_k.gguf"

# NVFP4 (ModelOpt and compressed-tensors dialects) and FP8 (compressed-tensors) checkpoints
# import without requantizing: values are e2m1 * e4m3 / divisor and e4m3 * scale
mkdir "$work/nv" "$work/nvout"
python3 - "$work/nv" <<'PY'
import json, struct, sys, random
rnd = random.Random(5)
def st(path, tensors):
    hdr, data = {}, b''
    for name, dtype, shape, raw in tensors:
        hdr[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(hdr).encode()
    h += b' ' * (-len(h) % 8)
    open(path, 'wb').write(struct.pack('<Q', len(h)) + h + data)
N, K = 128, 64
codes = bytes(rnd.randrange(256) for _ in range(N * K // 2))
scales = bytes(rnd.choice([0x30, 0x38, 0x40, 0x00, 0x28]) for _ in range(N * K // 16))
fp8 = bytes(rnd.choice([0x00, 0x80, 0x38, 0xB8, 0x40, 0x7E]) for _ in range(8 * 16))
st(sys.argv[1] + '/model.safetensors', [
    ('a.weight', 'U8', [N, K // 2], codes), ('a.weight_scale', 'F8_E4M3', [N, K // 16], scales),
    ('a.weight_scale_2', 'F32', [], struct.pack('<f', 0.5)), ('a.input_scale', 'F32', [], struct.pack('<f', 2.0)),
    ('b.weight_packed', 'U8', [N, K // 2], codes), ('b.weight_scale', 'F8_E4M3', [N, K // 16], scales),
    ('b.weight_global_scale', 'F32', [], struct.pack('<f', 4.0)),
    ('c.weight', 'F8_E4M3', [8, 16], fp8), ('c.weight_scale', 'BF16', [8, 1], struct.pack('<8H', *[0x3F00] * 8)),
    ('norm', 'F32', [3], struct.pack('<3f', 1, 2, 3))])
# mixed dialects, told apart by their companions' names: no declaration
open(sys.argv[1] + '/config.json', 'w').write('{"model_type": "mixed"}')
PY
printf 'recipe: 1
sources:
  base: %s
defaults: {format: fp32}
rules:
  - match: [a.weight, b.weight_packed]
    format: nvfp4
    method: import_encoded
  - match: c.weight
    format: fp8_e4m3fn_row_bf16
    method: import_encoded
' "$work/nv" >"$work/nv.yaml"
run 0 "$bin/ninfer-convert" -r "$work/nv.yaml" -o "$work/nvout/nv.ninfer"
run 0 "$bin/ninfer-verify" "$work/nvout/nv.ninfer" --against "$work/nv"
"$bin/ninfer-inspect" "$work/nvout/nv.ninfer" --json >"$work/nv.json"
run 0 "$bin/ninfer-dequant" "$work/nvout/nv.ninfer" a.weight -o "$work/nvout/a.f32"
run 0 "$bin/ninfer-dequant" "$work/nvout/nv.ninfer" b.weight_packed -o "$work/nvout/b.f32"
run 0 "$bin/ninfer-dequant" "$work/nvout/nv.ninfer" c.weight -o "$work/nvout/c.f32"
python3 - "$work/nv.json" "$work/nvout" <<'PY' && ok || bad "nvfp4/fp8 import"
import json, struct, sys
d = json.load(open(sys.argv[1]))
ids = sorted(o['id'] for o in d['objects'])
assert ids == ['a.weight', 'b.weight_packed', 'c.weight', 'norm'], ids        # companions consumed
a = struct.unpack('<%df' % (128 * 64), open(sys.argv[2] + '/a.f32', 'rb').read())
b = struct.unpack('<%df' % (128 * 64), open(sys.argv[2] + '/b.f32', 'rb').read())
# same codes and scales: ModelOpt divides by 1/0.5 = 2, compressed-tensors by 4
assert all(x == 2 * y for x, y in zip(a, b)), 'divisors'
c = struct.unpack('<128f', open(sys.argv[2] + '/c.f32', 'rb').read())
assert set(c) <= {0.0, 0.5, -0.5, 1.0, 224.0}, sorted(set(c))
PY
printf 'recipe: 1
sources:
  base: %s
rules:
  - match: norm
    format: nvfp4
    method: import_encoded
' "$work/nv" >"$work/nv2.yaml"
run 1 "$bin/ninfer-convert" -r "$work/nv2.yaml" -o "$work/nvout/bad.ninfer"

# the example recipes of recipes/ plan (and convert) on matching checkpoints
# (their ${MODEL_DIR} expands when the command line allows it)
MODEL_DIR=$ck run 0 "$bin/ninfer-convert" -r "$top/recipes/q8-all.yaml" -o "$work/r/x.ninfer" --dry-run \
    --allow-env MODEL_DIR
MODEL_DIR=$ck run 0 "$bin/ninfer-convert" -r "$top/recipes/fp8-rows.yaml" -o "$work/r/x.ninfer" --dry-run \
    --source base="$ck"
cp -r "$ck" "$work/ckim"
# a llama-imatrix file for the generated checkpoint (its default shape: hidden 200, intermediate 520, 2 layers)
python3 "$top/tests/cli/gen_imatrix.py" "$work/ckim/imatrix.gguf" 200 520 2 7 3
MODEL_DIR=$work/ckim run 0 "$bin/ninfer-convert" -r "$top/recipes/q4-imatrix.yaml" -o "$work/r/im.ninfer" \
    --allow-env MODEL_DIR
# an importance matrix is a source of its own: re-derived with the recipe that names it, given
# with --source (or its ${MODEL_DIR}, when --allow-env allows it)
run 0 "$bin/ninfer-verify" "$work/r/im.ninfer" --against "$work/ckim" --recipe "$top/recipes/q4-imatrix.yaml" \
    --source imatrix="$work/ckim/imatrix.gguf"
MODEL_DIR=$work/ckim run 0 "$bin/ninfer-verify" "$work/r/im.ninfer" --against "$work/ckim" \
    --recipe "$top/recipes/q4-imatrix.yaml" --allow-env MODEL_DIR
# verify opens only what its command line names (docs/security.md 1.3): without --allow-env the
# recipe's ${MODEL_DIR} does not expand, and the message says so
MODEL_DIR=$work/ckim run 1 "$bin/ninfer-verify" "$work/r/im.ninfer" --against "$work/ckim" \
    --recipe "$top/recipes/q4-imatrix.yaml"
contains "$work/out" "sources.imatrix: environment variable 'MODEL_DIR' is not allowed"
# without --recipe the imatrix of the record is not looked for: the objects it weighted are
# reported as needing the recipe
MODEL_DIR=$work/ckim run 1 "$bin/ninfer-verify" "$work/r/im.ninfer" --against "$work/ckim"
contains "$work/out" "give the recipe and its sources with --recipe"
MODEL_GGUF=$data/gguf/q4_k.gguf run 0 "$bin/ninfer-convert" -r "$top/recipes/import-gguf.yaml" -o "$work/r/gg.ninfer" \
    --source base="$data/gguf/q4_k.gguf"
rm -f "$work"/r/*

# the generator's GGUF form (llama.cpp names, F16 weights, F32 norms): the same values as its
# safetensors form, so quick mode gives the same codes from either container
"$bin/ninfer-gen-checkpoint" "$work/gg" --gguf --dtype f16 >/dev/null || bad "gen-checkpoint --gguf failed"
"$bin/ninfer-gen-checkpoint" "$work/gs" --dtype f16 >/dev/null || bad "gen-checkpoint --dtype f16 failed"
mkdir "$work/gx"
run 0 "$bin/ninfer-convert" "$work/gg/model.gguf" -o "$work/gx/gg.ninfer" --format q8_g32_fp16
run 0 "$bin/ninfer-convert" "$work/gs" -o "$work/gx/gs.ninfer" --format q8_g32_fp16
run 0 "$bin/ninfer-verify" --json "$work/gx/gg.ninfer"
"$bin/ninfer-dequant" "$work/gx/gg.ninfer" blk.0.ffn_down.weight -o "$work/gx/a.f32" && ok || bad "dequant gguf-converted"
"$bin/ninfer-dequant" "$work/gx/gs.ninfer" model.layers.0.mlp.down_proj.weight -o "$work/gx/b.f32" && ok || bad "dequant"
same "$work/gx/a.f32" "$work/gx/b.f32"

# interrupted: either a complete valid artifact or nothing at all, never a temp file
"$bin/ninfer-gen-checkpoint" "$work/big" --hidden 1024 --intermediate 2816 --layers 4 --vocab 8000 >/dev/null
mkdir "$work/k"
"$bin/ninfer-convert" -r "$recipe" --source base="$work/big" -o "$work/k/m.ninfer" --threads 1 2>/dev/null &
pid=$!
sleep 0.3
kill -INT $pid 2>/dev/null
wait $pid
status=$?
if [ $status -eq 0 ]; then
    run 0 "$bin/ninfer-verify" "$work/k/m.ninfer"
else
    check empty_dir "$work/k"
fi
check test -z "$(find "$work/k" -name '*.tmp' -o -name '.*')"

finish "convert"
