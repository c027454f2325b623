#!/usr/bin/env bash
# nvfp4_quantize and nvfp4_search (docs/methods.md): F32 and BF16 checkpoints converted to nvfp4
# by nvfp4_quantize hold, byte for byte, what import_encoded stores from the ModelOpt NVFP4
# checkpoint of the same values, which gen_nvfp4_modelopt.py writes by ModelOpt's arithmetic
# (NVFP4QTensor, written there in Python: weight_scale_2 = amax / 2688, E4M3FN block scales, E2M1
# codes); ninfer-verify accepts the artifact and re-derives it (--against), ninfer-dequant gives
# (e2m1 * e4m3) / d, and neither --chunk-values nor --threads changes a byte (rows longer than a
# chunk included).  Shapes the layout cannot hold, NaN sources, a matrix too small for a divisor
# and parameters are refused with exit 1, naming the tensor, and nothing is written.
# nvfp4_search (with and without an importance matrix) re-derives, has no larger error than
# nvfp4_quantize, and spans change no byte.
# usage: test_nvfp4_quantize.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

python3 "$top/tests/cli/gen_nvfp4_modelopt.py" "$work" || bad "gen_nvfp4_modelopt.py failed"

id=--artifact-id=0123456789abcdef0123456789abcdef
mkdir "$work/o"
run 0 "$bin/ninfer-convert" "$work/plain" -o "$work/o/q.ninfer" --format nvfp4 --method nvfp4_quantize "$id"
run 0 "$bin/ninfer-convert" "$work/modelopt" -o "$work/o/imp.ninfer" --format nvfp4 "$id"
run 0 "$bin/ninfer-verify" "$work/o/q.ninfer"
contains "$work/out" "valid"
run 0 "$bin/ninfer-verify" "$work/o/q.ninfer" --against "$work/plain"
contains "$work/out" "3 tensors re-derived"

# the objects' bytes: the import of ModelOpt's checkpoint and the quantization of its floats
objbytes() { # ARTIFACT ID OUT
    "$bin/ninfer-inspect" "$1" --json >"$work/inspect.json" || return 1
    python3 - "$1" "$2" "$3" "$work/inspect.json" <<'PY'
import json, sys
art, oid, out, js = sys.argv[1:5]
d = json.load(open(js))
o = [x for x in d['objects'] if x['id'] == oid][0]
with open(art, 'rb') as f:
    f.seek(d['payload_offset'] + o['offset'])
    open(out, 'wb').write(f.read(o['bytes']))
PY
}
for t in a.weight b.weight z.weight; do
    check objbytes "$work/o/q.ninfer" "$t" "$work/a.bin"
    check objbytes "$work/o/imp.ninfer" "$t" "$work/b.bin"
    same "$work/a.bin" "$work/b.bin"
    # values: (e2m1 * e4m3) / d, one rounding, as the generator computed them
    run 0 "$bin/ninfer-dequant" "$work/o/q.ninfer" "$t" -o "$work/deq.f32"
    same "$work/deq.f32" "$work/expected/$t.f32"
done
python3 - "$work/o/q.ninfer.conversion.json" <<'PY' && ok || bad "the report does not name nvfp4_quantize"
import json, sys
o = [x for x in json.load(open(sys.argv[1]))['objects'] if x['object'] == 'a.weight'][0]
assert o['method'] == 'nvfp4_quantize' and o['format'] == 'nvfp4' and o['values_compared'] == 256 * 128, o
PY

# neither the chunk size nor the number of threads changes a byte; rows of 8192 too, in spans of
# 128-row bands (a band longer than a chunk) against whole bands (quick mode records the output's
# path: the same name in another directory)
mkdir "$work/o1" "$work/o2" "$work/o3"
run 0 "$bin/ninfer-convert" "$work/plain" -o "$work/o1/q.ninfer" --format nvfp4 --method nvfp4_quantize "$id" \
    --chunk-values 4096 --threads 1
same "$work/o/q.ninfer" "$work/o1/q.ninfer"
run 0 "$bin/ninfer-convert" "$work/long" -o "$work/o/long.ninfer" --format nvfp4 --method nvfp4_quantize "$id"
run 0 "$bin/ninfer-convert" "$work/long" -o "$work/o1/long.ninfer" --format nvfp4 --method nvfp4_quantize "$id" \
    --chunk-values 4096 --threads 3
same "$work/o/long.ninfer" "$work/o1/long.ninfer"
run 0 "$bin/ninfer-convert" "$work/long" -o "$work/o3/long.ninfer" --format nvfp4 --method nvfp4_quantize "$id" \
    --chunk-values 1048576 --threads 1
same "$work/o/long.ninfer" "$work/o3/long.ninfer"
run 0 "$bin/ninfer-verify" "$work/o1/long.ninfer" --against "$work/long"

# nvfp4_search: each group's scale the least-error one near nvfp4_quantize's, so no object's
# error is larger; with an importance matrix too, and spans of bands give the bytes of whole bands
cat >"$work/search.yaml" <<EOF
recipe: 1
sources:
  base: $work/plain
defaults: {format: fp32}
rules:
  - match: "*.weight"
    format: nvfp4
    method: nvfp4_search
EOF
run 0 "$bin/ninfer-convert" -r "$work/search.yaml" -o "$work/o/s.ninfer"
run 0 "$bin/ninfer-verify" "$work/o/s.ninfer" --against "$work/plain" --recipe "$work/search.yaml"
contains "$work/out" "3 objects re-derived"
python3 - "$work/o/q.ninfer.conversion.json" "$work/o/s.ninfer.conversion.json" <<'PY' && ok || bad "nvfp4_search has a larger error than nvfp4_quantize"
import json, sys
q, s = ({o['object']: o for o in json.load(open(p))['objects']} for p in sys.argv[1:3])
for k in ('a.weight', 'b.weight'):
    assert s[k]['method'] == 'nvfp4_search' and s[k]['rmse'] < q[k]['rmse'], (k, s[k], q[k])
assert s['z.weight']['rmse'] == 0.0
PY
python3 - "$work/long/imatrix.gguf" "$top/tests/cli" <<'PY'
import random, sys
sys.path.insert(0, sys.argv[2])
from gen_imatrix import write_imatrix
rnd = random.Random(7)
write_imatrix(sys.argv[1], [('l.weight', [0.0 if c % 100 == 0 else rnd.uniform(0.1, 4.0) for c in range(8192)])])
PY
cat >"$work/search-im.yaml" <<EOF
recipe: 1
sources:
  base: $work/long
  im: $work/long/imatrix.gguf
defaults: {format: fp32}
rules:
  - match: l.weight
    format: nvfp4
    method: nvfp4_search
    with: {imatrix: im}
EOF
run 0 "$bin/ninfer-convert" -r "$work/search-im.yaml" -o "$work/o1/si.ninfer" "$id" --chunk-values 4096 --threads 2
run 0 "$bin/ninfer-convert" -r "$work/search-im.yaml" -o "$work/o3/si.ninfer" "$id" --chunk-values 1048576 --threads 1
same "$work/o1/si.ninfer" "$work/o3/si.ninfer"
run 0 "$bin/ninfer-verify" "$work/o1/si.ninfer" --against "$work/long" --recipe "$work/search-im.yaml"
sed 's/with: {imatrix: im}/with: {imatrix: im, negative_scales: true}/' "$work/search-im.yaml" >"$work/neg.yaml"
run 1 "$bin/ninfer-convert" -r "$work/neg.yaml" -o "$work/o2/neg.ninfer"
contains "$work/err" "unknown parameter 'negative_scales' of nvfp4_search (expected imatrix)"

# refusals: exit 1, the tensor named, nothing written
run 1 "$bin/ninfer-convert" "$work/bad_shape" -o "$work/o2/s.ninfer" --format nvfp4 --method nvfp4_quantize
contains "$work/err" "tensor 'short.weight' (F32): nvfp4 needs N % 128 == 0 and K % 64 == 0, got [64,128]"
run 1 "$bin/ninfer-convert" "$work/nan" -o "$work/o2/n.ninfer" --format nvfp4 --method nvfp4_quantize
contains "$work/err" "tensor 'nan.weight': row 3 col 40: source value NaN is not finite"
run 1 "$bin/ninfer-convert" "$work/tiny" -o "$work/o2/t.ninfer" --format nvfp4 --method nvfp4_quantize
contains "$work/err" "tensor 'tiny.weight': largest magnitude 9.99999991e-38 is too small for nvfp4"
cat >"$work/p.yaml" <<EOF
recipe: 1
sources:
  base: $work/plain
defaults: {format: fp32}
rules:
  - match: a.weight
    format: nvfp4
    method: nvfp4_quantize
    with: {imatrix: base}
EOF
run 1 "$bin/ninfer-convert" -r "$work/p.yaml" -o "$work/o2/p.ninfer"
contains "$work/err" "method nvfp4_quantize takes no parameters, got 'imatrix'"
run 1 "$bin/ninfer-convert" "$work/plain" -o "$work/o2/q8.ninfer" --format q8_g32_fp16 --method nvfp4_quantize
contains "$work/err" "nvfp4_quantize cannot target q8_g32_fp16: it targets nvfp4"
if [ -z "$(ls -A "$work/o2")" ]; then ok; else bad "a refused conversion left files: $(ls -A "$work/o2")"; fi

finish "nvfp4_quantize"
