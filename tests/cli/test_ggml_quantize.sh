#!/usr/bin/env bash
# ggml_quantize (docs/methods.md): a checkpoint holding tests/data/gguf/source.f32 converted to
# gguf_* blocks by a recipe rule and by quick mode; ninfer-verify accepts the artifact, its object
# holds exactly ggml's bytes (tests/data/gguf/<t>.qbytes, written by ggml itself) and decodes to
# ggml's dequantized values (the IQ3 types with and without an importance matrix, re-derived by
# ninfer-verify --against).  Row lengths off the block (the planner, before any work) and NaN
# sources (the method) are refused with exit 1, naming the tensor, and nothing is written; so is
# gguf_iq2_xxs / gguf_iq2_xs / gguf_iq1_s without an importance vector (ggml requires one).
# usage: test_ggml_quantize.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

python3 - "$work" "$data/gguf" <<'PY'
import json, os, struct, sys
work, gg = sys.argv[1], sys.argv[2]
src = open(gg + '/source.f32', 'rb').read()
def st(path, tensors):
    hdr, blob = {}, b''
    for name, shape, raw in tensors:
        hdr[name] = {'dtype': 'F32', 'shape': shape, 'data_offsets': [len(blob), len(blob) + len(raw)]}
        blob += raw
    h = json.dumps(hdr).encode()
    h += b' ' * (-len(h) % 8)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, 'wb').write(struct.pack('<Q', len(h)) + h + blob)
norm = struct.pack('<4f', 1, 1, 1, 1)
st(work + '/ck/model.safetensors', [('w', [16, 512], src), ('norm', [4], norm)])
# 500 columns: not a multiple of any block
st(work + '/odd/model.safetensors', [('w.odd', [2, 500], src[:2 * 500 * 4])])
# a NaN at row 3, col 300
nan = bytearray(src)
nan[(3 * 512 + 300) * 4:(3 * 512 + 300) * 4 + 4] = struct.pack('<I', 0x7FC00000)
st(work + '/nan/model.safetensors', [('w.nan', [16, 512], bytes(nan))])
st(work + '/nanw/model.safetensors', [('w', [16, 512], bytes(nan))])
PY

# object bytes of OBJ in the artifact == ggml's bytes, values == ggml's dequantization
check_ggml() { # ARTIFACT OBJ TYPE
    run 0 "$bin/ninfer-verify" "$1"
    run 0 "$bin/ninfer-dequant" "$1" "$2" -o "$work/deq.f32"
    same "$work/deq.f32" "$data/gguf/$3.dequant.f32"
    python3 - "$1" "$data/gguf/$3.qbytes" <<'PY' && ok || bad "$1: object $2 does not hold ggml's $3 bytes"
import sys
art, want = open(sys.argv[1], 'rb').read(), open(sys.argv[2], 'rb').read()
at = art.find(want)
assert at >= 0 and at % 256 == 0, at
PY
}

mkdir "$work/o"
for t in q8_0 q4_0 q5_0 q2_k q3_k q4_k q5_k q6_k q2_0; do
    printf 'recipe: 1\nsources:\n  base: %s\ndefaults: {format: fp32}\nrules:\n  - match: w\n    format: gguf_%s\n    method: ggml_quantize\n' \
        "$work/ck" "$t" >"$work/r.yaml"
    run 0 "$bin/ninfer-convert" -r "$work/r.yaml" -o "$work/o/$t.ninfer"
    check_ggml "$work/o/$t.ninfer" w "$t"
done
run 0 "$bin/ninfer-verify" "$work/o/q2_0.ninfer" --against "$work/ck"

# quick mode
run 0 "$bin/ninfer-convert" "$work/ck" -o "$work/o/quick.ninfer" --format gguf_q4_k --method ggml_quantize
check_ggml "$work/o/quick.ninfer" w q4_k
python3 - "$work/o/quick.ninfer.conversion.json" <<'PY' && ok || bad "the report does not name ggml_quantize for w"
import json, sys
o = [x for x in json.load(open(sys.argv[1]))['objects'] if x['object'] == 'w'][0]
assert o['method'] == 'ggml_quantize' and o['format'] == 'gguf_q4_k', o
PY

# the artifact re-derives from its checkpoint, bit for bit
run 0 "$bin/ninfer-verify" "$work/o/quick.ninfer" --against "$work/ck"

# with an importance matrix (llama-imatrix's file holding imatrix.f32 for w, counts 1): ggml's
# importance path, whose bytes ggml wrote into tests/data/gguf/extra (its README)
python3 - "$work/ck/imatrix.gguf" "$data/gguf/imatrix.f32" "$top/tests/cli" <<'PY'
import struct, sys
sys.path.insert(0, sys.argv[3])
from gen_imatrix import write_imatrix
raw = open(sys.argv[2], 'rb').read()
write_imatrix(sys.argv[1], [('w', list(struct.unpack('<512f', raw)))])
PY
printf 'recipe: 1\nsources:\n  base: %s\n  im: %s\ndefaults: {format: fp32}\nrules:\n  - match: w\n    format: gguf_q5_k\n    method: ggml_quantize\n    with: {imatrix: im}\n' \
    "$work/ck" "$work/ck/imatrix.gguf" >"$work/im.yaml"
run 0 "$bin/ninfer-convert" -r "$work/im.yaml" -o "$work/o/im.ninfer"
run 0 "$bin/ninfer-verify" "$work/o/im.ninfer"
python3 - "$work/o/im.ninfer" "$data/gguf/extra/q5_k.imatrix.qbytes" <<'PY' && ok || bad "im.ninfer does not hold ggml's q5_k imatrix bytes"
import sys
art, want = open(sys.argv[1], 'rb').read(), open(sys.argv[2], 'rb').read()
at = art.find(want)
assert at >= 0 and at % 256 == 0, at
PY
# the IQ3 types with the importance matrix (as ggml wrote their fixtures, MANIFEST.md) and
# without it (extra/<t>.plain.qbytes); ninfer-verify --against re-derives each artifact
holds() { # ARTIFACT BYTES
    python3 - "$1" "$2" <<'PY' && ok || bad "$1 does not hold the bytes of $2"
import sys
art, want = open(sys.argv[1], 'rb').read(), open(sys.argv[2], 'rb').read()
at = art.find(want)
assert at >= 0 and at % 256 == 0, at
PY
}
for t in iq3_xxs iq3_s; do
    sed "s/gguf_q5_k/gguf_$t/" "$work/im.yaml" >"$work/$t.yaml"
    run 0 "$bin/ninfer-convert" -r "$work/$t.yaml" -o "$work/o/$t.ninfer"
    check_ggml "$work/o/$t.ninfer" w "$t"
    run 0 "$bin/ninfer-verify" "$work/o/$t.ninfer" --against "$work/ck" --recipe "$work/$t.yaml"
    run 0 "$bin/ninfer-convert" "$work/ck" -o "$work/o/$t-plain.ninfer" --format "gguf_$t" --method ggml_quantize
    holds "$work/o/$t-plain.ninfer" "$data/gguf/extra/$t.plain.qbytes"
    run 0 "$bin/ninfer-verify" "$work/o/$t-plain.ninfer" --against "$work/ck"
done
# rows longer than a chunk are encoded in spans: q4_0 and q5_0 with importance weigh by the
# whole row's mean square, which a first pass over the row's spans sums in column order, so any
# --chunk-values gives the bytes of whole rows (a row of 8192: spans of 4096); so do iq1_s and iq1_m
python3 - "$work/long" "$data/gguf" "$top/tests/cli" <<'PY'
import json, os, struct, sys
out, gg = sys.argv[1], sys.argv[2]
sys.path.insert(0, sys.argv[3])
from gen_imatrix import write_imatrix
src = open(gg + '/source.f32', 'rb').read()  # 16 x 512 -> 1 x 8192
imp = list(struct.unpack('<512f', open(gg + '/imatrix.f32', 'rb').read())) * 16
h = json.dumps({'w': {'dtype': 'F32', 'shape': [1, 8192], 'data_offsets': [0, len(src)]}}).encode()
h += b' ' * (-len(h) % 8)
os.makedirs(out)
open(out + '/model.safetensors', 'wb').write(struct.pack('<Q', len(h)) + h + src)
write_imatrix(out + '/imatrix.gguf', [('w', imp)])
PY
for t in q4_0 q5_0 iq1_s iq1_m; do
    sed "s|$work/ck/imatrix.gguf|$work/long/imatrix.gguf|; s|$work/ck|$work/long|; s/gguf_q5_k/gguf_$t/" "$work/im.yaml" >"$work/long.yaml"
    run 0 "$bin/ninfer-convert" -r "$work/long.yaml" -o "$work/o/long-$t.ninfer" \
        --artifact-id 0123456789abcdef0123456789abcdef
    run 0 "$bin/ninfer-convert" -r "$work/long.yaml" -o "$work/o/long-$t-spans.ninfer" --chunk-values 4096 \
        --artifact-id 0123456789abcdef0123456789abcdef
    same "$work/o/long-$t.ninfer" "$work/o/long-$t-spans.ninfer"
    run 0 "$bin/ninfer-verify" "$work/o/long-$t-spans.ninfer" --against "$work/long" --recipe "$work/long.yaml"
done
# IQ1 weighs by each super-block's own mean square: the row of 8192 holds the blocks of ggml's
# 16 x 512 fixture (made with imatrix.f32), spans or not
for t in iq1_s iq1_m; do
    python3 - "$work/o/long-$t-spans.ninfer" "$data/gguf/$t.qbytes" <<'PY' && ok || bad "long-$t: not ggml's $t bytes"
import sys
art, want = open(sys.argv[1], 'rb').read(), open(sys.argv[2], 'rb').read()
at = art.find(want)
assert at >= 0 and at % 256 == 0, at
PY
done

# IQ1: gguf_iq1_s with the importance matrix holds ggml's bytes (the fixture iq1_s.qbytes, made
# with imatrix.f32) and re-derives from its checkpoint; gguf_iq1_m also without one (quick mode)
sed 's/gguf_q5_k/gguf_iq1_s/' "$work/im.yaml" >"$work/iq1s.yaml"
run 0 "$bin/ninfer-convert" -r "$work/iq1s.yaml" -o "$work/o/iq1s.ninfer"
check_ggml "$work/o/iq1s.ninfer" w iq1_s
run 0 "$bin/ninfer-verify" "$work/o/iq1s.ninfer" --against "$work/ck" --recipe "$work/iq1s.yaml"
run 0 "$bin/ninfer-convert" "$work/ck" -o "$work/o/iq1m.ninfer" --format gguf_iq1_m --method ggml_quantize
run 0 "$bin/ninfer-verify" "$work/o/iq1m.ninfer"
python3 - "$work/o/iq1m.ninfer" "$data/gguf/extra/iq1_m.plain.qbytes" <<'PY' && ok || bad "iq1m.ninfer does not hold ggml's iq1_m bytes"
import sys
art, want = open(sys.argv[1], 'rb').read(), open(sys.argv[2], 'rb').read()
at = art.find(want)
assert at >= 0 and at % 256 == 0, at
PY
run 0 "$bin/ninfer-verify" "$work/o/iq1m.ninfer" --against "$work/ck"
# ggml quantizes IQ1_S only with an importance vector: refused before any work, naming the
# tensor and the type (exit 1, as every problem of the plan), also when the imatrix lacks it
mkdir "$work/o3"
run 1 "$bin/ninfer-convert" "$work/ck" -o "$work/o3/iq1s.ninfer" --format gguf_iq1_s --method ggml_quantize
contains "$work/err" "tensor 'w' (F32): ggml_quantize into gguf_iq1_s needs an importance vector, as ggml does, and none is given"
python3 - "$work/ck/other.imatrix.gguf" "$top/tests/cli" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
from gen_imatrix import write_imatrix
write_imatrix(sys.argv[1], [('v', [1.0] * 512)])
PY
sed "s|$work/ck/imatrix.gguf|$work/ck/other.imatrix.gguf|" "$work/iq1s.yaml" >"$work/iq1s-other.yaml"
run 1 "$bin/ninfer-convert" -r "$work/iq1s-other.yaml" -o "$work/o3/iq1s.ninfer"
contains "$work/err" "tensor 'w' (F32): ggml_quantize into gguf_iq1_s needs an importance vector, as ggml does, and the rule's imatrix has none for this tensor"
run 1 "$bin/ninfer-convert" "$work/odd" -o "$work/o3/odd.ninfer" --format gguf_iq1_m --method ggml_quantize
contains "$work/err" "format 'gguf_iq1_m' needs K % 256 == 0 (whole ggml blocks per row), got K=500"
if [ -z "$(ls -A "$work/o3")" ]; then ok; else bad "a refused conversion left files: $(ls -A "$work/o3")"; fi

# the iq2 types with the importance matrix, by a rule: ggml's bytes (the fixtures were made with
# imatrix.f32), and the artifact re-derives from its checkpoint and recipe bit for bit
for t in iq2_xxs iq2_xs iq2_s; do
    sed "s/gguf_q5_k/gguf_$t/" "$work/im.yaml" >"$work/$t.yaml"
    run 0 "$bin/ninfer-convert" -r "$work/$t.yaml" -o "$work/o/$t.ninfer"
    check_ggml "$work/o/$t.ninfer" w "$t"
    run 0 "$bin/ninfer-verify" "$work/o/$t.ninfer" --against "$work/ck" --recipe "$work/$t.yaml"
done
# iq2_s also without one (quick mode): ggml's bytes of that path (tests/data/gguf/extra)
run 0 "$bin/ninfer-convert" "$work/ck" -o "$work/o/iq2_s-plain.ninfer" --format gguf_iq2_s --method ggml_quantize
python3 - "$work/o/iq2_s-plain.ninfer" "$data/gguf/extra/iq2_s.plain.qbytes" <<'PY' && ok || bad "iq2_s-plain.ninfer does not hold ggml's iq2_s bytes"
import sys
art, want = open(sys.argv[1], 'rb').read(), open(sys.argv[2], 'rb').read()
at = art.find(want)
assert at >= 0 and at % 256 == 0, at
PY
run 0 "$bin/ninfer-verify" "$work/o/iq2_s-plain.ninfer" --against "$work/ck"

# ggml_quantize takes imatrix only
sed 's/with: {imatrix: im}/with: {imatrix: im, negative_scales: true}/' "$work/im.yaml" >"$work/neg.yaml"
run 1 "$bin/ninfer-convert" -r "$work/neg.yaml" -o "$work/o/neg.ninfer"
contains "$work/err" "unknown parameter 'negative_scales' of ggml_quantize (expected imatrix)"

# refusals: exit 1, the tensor named, nothing written
mkdir "$work/o2"
run 1 "$bin/ninfer-convert" "$work/odd" -o "$work/o2/odd.ninfer" --format gguf_q4_0 --method ggml_quantize
contains "$work/err" "w.odd"
contains "$work/err" "format 'gguf_q4_0' needs K % 32 == 0 (whole ggml blocks per row), got K=500"
run 1 "$bin/ninfer-convert" "$work/nan" -o "$work/o2/nan.ninfer" --format gguf_q6_k --method ggml_quantize
contains "$work/err" "w.nan"
contains "$work/err" "row 3 col 300: source value NaN is not finite"
run 1 "$bin/ninfer-convert" "$work/odd" -o "$work/o2/odd.ninfer" --format gguf_iq2_s --method ggml_quantize
contains "$work/err" "format 'gguf_iq2_s' needs K % 256 == 0 (whole ggml blocks per row), got K=500"
run 1 "$bin/ninfer-convert" -r "$work/iq2_xs.yaml" -o "$work/o2/nan.ninfer" --source base="$work/nanw"
contains "$work/err" "'w'"
contains "$work/err" "row 3 col 300: source value NaN is not finite"
# ggml_quantize_requires_imatrix: iq2_xxs and iq2_xs without an importance vector are refused at
# planning (exit 1, as every recipe problem), naming the tensor and the type, before anything is
# written
for t in iq2_xxs iq2_xs; do
    run 1 "$bin/ninfer-convert" "$work/ck" -o "$work/o2/$t.ninfer" --format gguf_$t --method ggml_quantize
    contains "$work/err" "'w'"
    contains "$work/err" "ggml_quantize into gguf_$t needs an importance vector"
done
if [ -z "$(ls -A "$work/o2")" ]; then ok; else bad "a refused conversion left files: $(ls -A "$work/o2")"; fi
# a format ggml_quantize does not produce (it produces every gguf_* format)
run 1 "$bin/ninfer-convert" "$work/ck" -o "$work/o2/q2.ninfer" --format q2_g64_fp16 --method ggml_quantize
contains "$work/err" "ggml_quantize cannot target q2_g64_fp16"

finish "ggml_quantize"
