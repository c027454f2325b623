#!/usr/bin/env bash
# The ggml block types read as values (docs/formats.md 8.5: Q4_1, Q5_1, Q8_1, Q8_K, TQ1_0, TQ2_0,
# MXFP4, NVFP4, Q1_0) through every program: quick mode imports those a format holds exactly
# (TQ1_0/TQ2_0/Q1_0 -> t2_g128_fp16, else q2_g64_fp16; Q8_1 -> q8_g32_fp16; MXFP4/NVFP4 ->
# nvfp4) and gives --format to the others; every object's values are ggml's to_float bit for bit
# (tests/data/gguf/more), the report compares every one, verify --against re-derives, diff against
# the GGUF says same, inspect --stats reads them; refusals name the tensor, row and block.
# usage: test_ggml_values.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

g="$work/g"
python3 "$top/tests/cli/gen_ggml_values.py" "$data" "$g" || { bad "gen_ggml_values.py failed"; finish ggml_values; exit 1; }

# name  ggml-type  quick-mode-format  method
model="blk.0.ffn_down.weight Q5_1 fp32 cast_direct
blk.0.ffn_up.weight Q4_1 fp32 cast_direct
blk.0.ffn_gate.weight Q8_K fp32 cast_direct
blk.0.attn_q.weight Q8_1 q8_g32_fp16 import_encoded
blk.0.attn_k.weight TQ1_0 t2_g128_fp16 import_encoded
blk.0.attn_v.weight TQ2_0 t2_g128_fp16 import_encoded
blk.0.attn_output.weight Q1_0 t2_g128_fp16 import_encoded
blk.1.ffn_gate_exps.weight MXFP4 nvfp4 import_encoded
blk.1.ffn_up.weight NVFP4 nvfp4 import_encoded"
random="blk.2.attn_k.weight TQ1_0 q2_g64_fp16 import_encoded
blk.2.attn_v.weight TQ2_0 q2_g64_fp16 import_encoded
blk.2.attn_output.weight Q1_0 q2_g64_fp16 import_encoded
blk.2.ffn_down.weight Q4_1 fp32 cast_direct
blk.2.ffn_up.weight Q5_1 fp32 cast_direct
blk.2.ffn_gate.weight Q8_K fp32 cast_direct"

# plan_check PLAN.json LINES: each object's dtype, format and method as listed
plan_check() {
    python3 - "$1" "$2" <<'PY'
import json, sys
objs = {o['id']: o for o in json.load(open(sys.argv[1]))['objects']}
for line in sys.argv[2].splitlines():
    name, dtype, fmt, method = line.split()
    o = objs[name]
    assert (o['source_dtype'], o['format'], o['method']) == (dtype, fmt, method), (name, o)
    if method == 'import_encoded':
        assert o['note'] == 'GGUF %s blocks imported value for value' % dtype, o
    else:
        assert 'ggml' in o['note'], o
PY
}

# exact ARTIFACT LINES: every object's values are ggml's, bit for bit, and the report says so
exact() {
    while read -r name _ _ _; do
        run 0 "$bin/ninfer-dequant" "$1" "$name" -o "$work/x.f32"
        same "$work/x.f32" "$g/$name.f32"
    done <<<"$2"
    python3 - "$1.conversion.json" "$2" <<'PY' && ok || bad "$1: the report compares every value, exact"
import json, sys
objs = {o['object']: o for o in json.load(open(sys.argv[1]))['objects']}
for line in sys.argv[2].splitlines():
    o = objs[line.split()[0]]
    n = 1
    for d in o['shape']:
        n *= d
    assert o['values_compared'] == n and o['max_abs_error'] == 0 and o['snr_db'] is None, o
PY
}

for f in model random; do
    lines=${!f}
    run 0 "$bin/ninfer-convert" "$g/$f.gguf" -o "$work/$f.ninfer" --format fp32 --dry-run --json
    cp "$work/out" "$work/$f.plan.json"
    plan_check "$work/$f.plan.json" "$lines" && ok || bad "$f: the plan"
    # two threads in small chunks, and one thread in chunks of one row: the same words
    run 0 "$bin/ninfer-convert" "$g/$f.gguf" -o "$work/$f.ninfer" --format fp32 --threads 2 --chunk-values 1000
    contains "$work/err" "encoded again instead of imported: lossy"
    exact "$work/$f.ninfer" "$lines"
    run 0 "$bin/ninfer-convert" "$g/$f.gguf" -o "$work/$f.1.ninfer" --format fp32 --threads 1 --chunk-values 1 --no-report
    run 1 "$bin/ninfer-diff" "$work/$f.ninfer" "$work/$f.1.ninfer"
    contains "$work/out" "different: 0 objects changed" # (only the output's name and its digests)
    run 0 "$bin/ninfer-verify" "$work/$f.ninfer" --against "$g/$f.gguf"
    contains "$work/out" "valid"
    run 0 "$bin/ninfer-diff" "$work/$f.ninfer" "$g/$f.gguf"
    contains "$work/out" "same"
    # --requantize: every tensor from ggml's values into fp32, exactly
    run 0 "$bin/ninfer-convert" "$g/$f.gguf" -o "$work/$f.r.ninfer" --format fp32 --requantize
    exact "$work/$f.r.ninfer" "$(sed 's/ [a-z0-9_]* [a-z_]*$/ fp32 cast_direct/' <<<"$lines")"
done

# quick mode's --format goes to the types no format holds, as to the floats
run 0 "$bin/ninfer-convert" "$g/model.gguf" -o "$work/q4.ninfer" --format q4_g64_fp16 --dry-run --json
plan_check "$work/out" "$(sed 's/ fp32 cast_direct$/ q4_g64_fp16 grouped_absmax/' <<<"$model")" && ok || bad "q4 plan"
# a rule naming a method takes the values of any type (here nvfp4_quantize of NVFP4, grouped_absmax of TQ1_0)
printf 'recipe: 1\nsources: {base: %s}\ndefaults: {format: bf16}\nrules:\n  - {match: "blk.1.ffn_up.weight", format: nvfp4, method: nvfp4_quantize}\n  - {match: "blk.0.attn_k.weight", format: q8_g32_fp16, method: grouped_absmax}\n' \
    "$g/model.gguf" >"$work/r.yaml"
run 0 "$bin/ninfer-convert" --recipe "$work/r.yaml" -o "$work/rq.ninfer"
run 0 "$bin/ninfer-verify" "$work/rq.ninfer" --against "$g/model.gguf"

# inspect --stats reads ggml's values
for w in blk.0.attn_k.weight blk.0.ffn_up.weight blk.1.ffn_gate_exps.weight blk.1.ffn_up.weight; do
    run 0 "$bin/ninfer-inspect" "$g/model.gguf" --tensor "$w" --stats --json
    python3 - "$work/out" "$g/$w.f32" <<'PY' && ok || bad "$w: --stats"
import json, struct, sys
st = json.load(open(sys.argv[1]))['stats']
v = struct.unpack('<%df' % (len(open(sys.argv[2], 'rb').read()) // 4), open(sys.argv[2], 'rb').read())
assert st['finite'] == len(v) and st['zeros'] == sum(1 for x in v if x == 0), st
assert st['min'] == min(v) and st['max'] == max(v) and st['abs_max'] == max(abs(x) for x in v), st
PY
done

# ---------------------------------------------------------------- refusals
# no nvfp4 tiles (16 rows): named, with the ways forward; --requantize reads them
run 1 "$bin/ninfer-convert" "$g/small_fp4.gguf" -o "$work/s.ninfer" --format q4_g64_fp16
contains "$work/err" "tensor 'blk.3.ffn_down.weight' (MXFP4): stored as GGUF MXFP4 blocks in $g/small_fp4.gguf: no format holds"
contains "$work/err" "this tensor has 16 rows of 512"
contains "$work/err" "--requantize"
check test ! -e "$work/s.ninfer"
run 0 "$bin/ninfer-convert" "$g/small_fp4.gguf" -o "$work/s.ninfer" --format fp32 --requantize
run 0 "$bin/ninfer-dequant" "$work/s.ninfer" blk.3.ffn_up.weight -o "$work/x.f32"
same "$work/x.f32" "$g/blk.3.ffn_up.weight.f32"

# patch FILE TENSOR OFFSET BYTES: a copy of model.gguf with bytes written into a tensor's data
patch() {
    python3 - "$g/model.gguf" "$work/$1" "$2" "$3" "$4" <<'PY'
import struct, sys
src, dst, name, off, hexbytes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
b = bytearray(open(src, 'rb').read())
p = 24
def s():
    global p
    n, = struct.unpack_from('<Q', b, p); p += 8 + n; return b[p - n:p].decode()
_, n_t, n_kv = struct.unpack_from('<IQQ', b, 4)
for _ in range(n_kv):
    s(); t, = struct.unpack_from('<I', b, p); p += 4
    if t == 8: s()
    else: p += 4
info = {}
for _ in range(n_t):
    nm = s(); nd, = struct.unpack_from('<I', b, p); p += 4 + 8 * nd
    t, o = struct.unpack_from('<IQ', b, p); p += 12; info[nm] = o
base = p + (-p % 32)
at = base + info[name] + off
b[at:at + len(bytes.fromhex(hexbytes))] = bytes.fromhex(hexbytes)
open(dst, 'wb').write(b)
PY
}
# Q8_1 block 0 code 0 = 0x80 (-128): q8 does not hold it
patch q81.gguf blk.0.attn_q.weight 4 80
run 1 "$bin/ninfer-convert" "$work/q81.gguf" -o "$work/b.ninfer" --format fp32
contains "$work/err" "tensor 'blk.0.attn_q.weight' (Q8_1): stored as GGUF Q8_1 blocks in $work/q81.gguf"
contains "$work/err" "(q8_g32_fp16 would, but row 0 col 0 (block 0): Q8_1 code 0x80 is -128"
# TQ2_0 row 0 block 0: code 3 (+2) in element 0: q2 holds it, t2 does not
patch tq2.gguf blk.0.attn_v.weight 0 03
run 0 "$bin/ninfer-convert" "$work/tq2.gguf" -o "$work/b.ninfer" --format fp32 --dry-run --json
python3 - "$work/out" <<'PY' && ok || bad "TQ2_0 with a code 3 goes to q2"
import json, sys
o = [o for o in json.load(open(sys.argv[1]))['objects'] if o['id'] == 'blk.0.attn_v.weight'][0]
assert o['format'] == 'q2_g64_fp16', o
PY
printf 'recipe: 1\nsources: {base: %s}\ndefaults: {format: bf16}\nrules:\n  - {match: "blk.0.attn_v.weight", format: t2_g128_fp16, method: import_encoded}\n' \
    "$work/tq2.gguf" >"$work/t2.yaml"
run 1 "$bin/ninfer-convert" --recipe "$work/t2.yaml" -o "$work/b.ninfer"
contains "$work/err" "blk.0.attn_v.weight"
contains "$work/err" "row 0 col 0 (block 0): TQ2_0 code 2 under scale"
check test ! -e "$work/b.ninfer"
# MXFP4: one block's exponent 0 with nonzero codes, 18 octaves and more below the largest
patch mx.gguf blk.1.ffn_gate_exps.weight $((17 * 35)) 00
run 1 "$bin/ninfer-convert" "$work/mx.gguf" -o "$work/b.ninfer" --format fp32
contains "$work/err" "tensor 'blk.1.ffn_gate_exps.weight' (MXFP4): $work/mx.gguf: row 2 block 3: scale 2^-127 lies more than 17 octaves"
# NVFP4: a scale byte 0xFF (ggml reads 240): refused naming row, block and sub-block, no output
patch nv.gguf blk.1.ffn_up.weight $((36 * 9 + 2)) ff
run 1 "$bin/ninfer-convert" "$work/nv.gguf" -o "$work/b.ninfer" --format fp32
contains "$work/err" "blk.1.ffn_up.weight"
contains "$work/err" "row 1 block 1 sub-block 2 (cols 96..111): UE4M3 scale 0xFF"
check test ! -e "$work/b.ninfer"

finish ggml_values
