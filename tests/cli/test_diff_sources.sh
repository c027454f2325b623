#!/usr/bin/env bash
# ninfer-diff with a checkpoint on either side (docs/ninfer-diff.md, "Any two inputs"): a GGUF
# against the Hugging Face checkpoint it was converted from, paired through llama.cpp's names
# (gen_diff_sources.py writes both, and the figures computed from the definitions): the llama
# family's q/k rows read in llama.cpp's order (exact; the same pair under an architecture that does
# not reorder them is not), a stacked experts tensor against each expert's matrix, either order;
# names the table does not hold (a GGUF tensor of no Hugging Face name, a GGUF of an unknown
# architecture) listed as unmapped, never paired; bits per weight; the importance-weighted error
# with --imatrix; --csv (every pair, RFC 4180 quoting, formula-looking names defused) and --json;
# a GPTQ checkpoint against the source it was quantized from (its .qweight paired with .weight);
# two checkpoints of different shapes; an artifact against a GGUF; usage errors; any --threads.
# usage: test_diff_sources.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

d=$work/d
python3 "$top/tests/cli/gen_diff_sources.py" "$d" || { echo "FAIL gen_diff_sources.py"; exit 1; }
L=$d/llama M=$d/moe

# csv_check CSV EXPECTED_JSON SECTION PYTHON: PYTHON's asserts over rows (dicts by A's name and
# expert) and exp (the section of expected.json)
csv_check() {
    python3 - "$1" "$2" "$3" "$4" <<'EOF' && ok || bad "csv check: $4"
import csv, json, math, sys
rows = {}
with open(sys.argv[1], newline='') as f:
    for r in csv.DictReader(f):
        rows[(r['id'], r['id_b'], r['expert'])] = r
exp = json.load(open(sys.argv[2])).get(sys.argv[3], {})
def figures(r, e, weighted):
    assert int(r['count']) == e['count'], (r, e)
    assert float(r['max_abs']) == float('%.9g' % e['max_abs']), (r, e)
    rmse = math.sqrt(e['sse'] / e['count'])
    assert abs(float(r['rmse']) - rmse) <= 1e-8 * rmse, (r, rmse)
    snr = 10 * math.log10(e['ssx'] / e['sse'])
    assert abs(float(r['snr_db']) - snr) <= 1e-6, (r, snr)
    if weighted:
        assert abs(float(r['weighted_error']) - e['wse']) <= 1e-8 * e['wse'], (r, e)
    else:
        assert r['weighted_error'] == '', r
exec(sys.argv[4])
EOF
}

# --- llama: GGUF (A) against its Hugging Face checkpoint (B, the reference)
run 1 "$bin/ninfer-diff" "$L/model.gguf" "$L/hf" --csv --imatrix "$L/imatrix.gguf"
cp "$work/out" "$work/llama.csv"
check test "$(head -1 "$work/out")" = "id,id_b,expert,changes,format_a,format_b,bits_per_weight_a,bits_per_weight_b,count,skipped,max_abs,rmse,snr_db,weighted_error,no_statistics,unmapped"
csv_check "$work/llama.csv" "$d/expected.json" llama '
q = rows[("blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", "")]
k = rows[("blk.0.attn_k.weight", "model.layers.0.self_attn.k_proj.weight", "")]
for r in (q, k, rows[("token_embd.weight", "model.embed_tokens.weight", "")],
          rows[("blk.0.attn_norm.weight", "model.layers.0.input_layernorm.weight", "")]):
    assert r["changes"] == "" and r["max_abs"] == "0" and r["snr_db"] == "exact", r   # rows in llama.cpp order: exact
assert int(q["count"]) == 1024 and int(k["count"]) == 512
v = rows[("blk.0.attn_v.weight", "model.layers.0.self_attn.v_proj.weight", "")]
assert v["changes"] == "values" and v["format_a"] == "F16" and v["format_b"] == "F32", v
assert v["bits_per_weight_a"] == "16" and v["bits_per_weight_b"] == "32", v
figures(v, exp["blk.0.attn_v.weight"], True)
figures(rows[("output.weight", "lm_head.weight", "")], exp["output.weight"], True)
m = rows[("blk.0.mystery.weight", "", "")]
assert m["changes"] == "only_in_a" and m["unmapped"] == "not in docs/names.md\x27s table for llama", m
i = rows[("", "model.layers.0.self_attn.rotary_emb.inv_freq", "")]
assert i["changes"] == "only_in_b" and i["unmapped"] == "", i
assert len(rows) == 8, rows.keys()
'
# the human table: the pair's two names, the summary with the unmapped count
run 1 "$bin/ninfer-diff" "$L/model.gguf" "$L/hf"
contains "$work/out" "blk.0.attn_v.weight = model.layers.0.self_attn.v_proj.weight values"
contains "$work/out" "blk.0.mystery.weight                         only in A, unmapped: not in docs/names.md's table for llama"
contains "$work/out" "different: 2 objects changed, 1 only in A, 1 only in B, 0 directory keys differ (6 objects compared; 1 name unmapped)"
lacks "$work/out" "attn_q"        # exact: not a change
# the same pair under an architecture that keeps the rows (--arch wins over the GGUF's): not exact
run 1 "$bin/ninfer-diff" "$L/model.gguf" "$L/hf" --arch qwen3
contains "$work/out" "blk.0.attn_q.weight = model.layers.0.self_attn.q_proj.weight values"
contains "$work/out" "blk.0.attn_k.weight = model.layers.0.self_attn.k_proj.weight values"
# --json: the reference, the architecture, the figures of the CSV
run 1 "$bin/ninfer-diff" "$L/model.gguf" "$L/hf" --json --imatrix "$L/imatrix.gguf"
python3 - "$work/out" "$work/llama.csv" <<'EOF' && ok || bad "llama --json"
import csv, json, sys
j = json.load(open(sys.argv[1]))
assert (j['a_kind'], j['b_kind'], j['reference'], j['architecture']) == ('checkpoint', 'checkpoint', 'b', 'llama'), j
assert j['summary'] == {'objects_compared': 6, 'objects_changed': 2, 'only_in_a': 1, 'only_in_b': 1,
                        'directory_keys': 0, 'unmapped': 1}, j['summary']
o = {x['id']: x for x in j['objects']}
v = o['blk.0.attn_v.weight']
assert v['id_b'] == 'model.layers.0.self_attn.v_proj.weight' and v['bits_per_weight_a'] == 16.0, v
assert v['statistics']['imatrix_entry'] == 'blk.0.attn_v.weight', v
rows = {r['id']: r for r in csv.DictReader(open(sys.argv[2], newline=''))}
for f in ('max_abs', 'rmse', 'snr_db', 'weighted_error'):
    assert float('%.9g' % v['statistics'][f]) == float(rows['blk.0.attn_v.weight'][f]), f
assert o['blk.0.mystery.weight']['unmapped'].startswith('not in docs/names.md'), o
EOF

# --- a GGUF of an architecture the table does not know: every name unmapped, none paired or guessed
run 1 "$bin/ninfer-diff" "$L/falcon.gguf" "$L/hf" --json
python3 - "$work/out" <<'EOF' && ok || bad "falcon: unmapped"
import json, sys
j = json.load(open(sys.argv[1]))
assert j['architecture'] is None and j['summary']['objects_compared'] == 0, j['summary']
a = [o for o in j['objects'] if o['changes'] == ['only_in_a']]
assert len(a) == 7 and all(o['unmapped'] == "general.architecture 'falcon' is not in docs/names.md" for o in a), a
assert len([o for o in j['objects'] if o['changes'] == ['only_in_b']]) == 7
EOF

# --- experts: the stack against each expert's matrix, with each expert's importance vector
run 1 "$bin/ninfer-diff" "$M/model.gguf" "$M/hf" --csv --imatrix "$M/imatrix.gguf"
cp "$work/out" "$work/moe.csv"
csv_check "$work/moe.csv" "$d/expected.json" moe '
for e in (0, 1):
    r = rows[("blk.0.ffn_down_exps.weight", "model.layers.0.mlp.experts.%d.down_proj.weight" % e, str(e))]
    figures(r, exp[str(e)], True)
q = rows[("blk.0.attn_q.weight", "model.layers.0.self_attn.q_proj.weight", "")]
assert q["max_abs"] == "0" and q["weighted_error"] == "", q    # qwen3 keeps the rows; no entry for it
assert len(rows) == 3
'
# the other order: B (the GGUF) is the reference; the same pairs, max_abs and weighted error
run 1 "$bin/ninfer-diff" "$M/hf" "$M/model.gguf" --csv --imatrix "$M/imatrix.gguf"
python3 - "$work/out" "$work/moe.csv" <<'EOF' && ok || bad "moe: the other order"
import csv, sys
b = {(r['id_b'], r['expert']): r for r in csv.DictReader(open(sys.argv[1], newline=''))}
a = {(r['id'], r['expert']): r for r in csv.DictReader(open(sys.argv[2], newline=''))}
assert a.keys() == b.keys(), (a.keys(), b.keys())
for k in a:
    for f in ('count', 'max_abs', 'rmse', 'weighted_error', 'bits_per_weight_a'):
        g = 'bits_per_weight_b' if f == 'bits_per_weight_a' else f
        assert a[k][f] == b[k][g], (k, f, a[k][f], b[k][g])
EOF
# the same for any --threads
run 1 "$bin/ninfer-diff" "$M/model.gguf" "$M/hf" --csv --imatrix "$M/imatrix.gguf" -j1
same "$work/out" "$work/moe.csv"
run 1 "$bin/ninfer-diff" "$L/model.gguf" "$L/hf" --csv --imatrix "$L/imatrix.gguf" -j 3
same "$work/out" "$work/llama.csv"

# --- a GPTQ checkpoint against the source it was made from: .qweight pairs with .weight
python3 "$top/tests/cli/gen_dialects.py" "$work/dia" >/dev/null || bad "gen_dialects.py"
python3 - "$work/dia/gptq4" "$work/src" <<'EOF' || bad "gptq source"
import json, os, struct, sys
g, out = sys.argv[1], sys.argv[2]
raw = open(os.path.join(g, 'expected', 'model.layers.0.mlp.down_proj.qweight.f32'), 'rb').read()
b = open(os.path.join(g, 'model.safetensors'), 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n])
N = h['model.layers.0.mlp.down_proj.qweight']['shape'][1]
bias = h['model.layers.0.mlp.down_proj.bias']
bb = b[8 + n + bias['data_offsets'][0]:8 + n + bias['data_offsets'][1]]
bias_f32 = struct.pack('<%df' % (len(bb) // 2), *struct.unpack('<%de' % (len(bb) // 2), bb))
for name, data in (('same', raw), ('moved', struct.pack('<f', struct.unpack('<f', raw[:4])[0] + 0.5) + raw[4:])):
    os.makedirs(os.path.join(out, name))
    head = {'model.layers.0.mlp.down_proj.weight': {'dtype': 'F32', 'shape': [N, len(raw) // 4 // N],
                                                    'data_offsets': [0, len(data)]},
            'model.layers.0.mlp.down_proj.bias': {'dtype': 'F32', 'shape': [len(bias_f32) // 4],
                                                  'data_offsets': [len(data), len(data) + len(bias_f32)]}}
    hj = json.dumps(head).encode()
    hj += b' ' * (-len(hj) % 8)
    open(os.path.join(out, name, 'model.safetensors'), 'wb').write(struct.pack('<Q', len(hj)) + hj + data + bias_f32)
EOF
run 0 "$bin/ninfer-diff" "$work/dia/gptq4" "$work/src/same"
contains "$work/out" ": same (2 objects compared)"
run 1 "$bin/ninfer-diff" "$work/dia/gptq4" "$work/src/moved" --csv
python3 - "$work/out" <<'EOF' && ok || bad "gptq: values and bits per weight"
import csv, sys
r = {x['id']: x for x in csv.DictReader(open(sys.argv[1], newline=''))}
w = r['model.layers.0.mlp.down_proj.qweight']
assert w['id_b'] == 'model.layers.0.mlp.down_proj.weight' and w['changes'] == 'values', w
assert float(w['max_abs']) == 0.5 and w['format_a'] == 'gptq' and w['format_b'] == 'F32', w
# 4-bit codes, F16 scales and int32 zero points of 2 groups, int32 g_idx: 4 + (2*64*16 + 2*8*32 + 256*32) / (64*256)
assert abs(float(w['bits_per_weight_a']) - (4 + (2048 + 512 + 8192) / 16384)) < 1e-6, w
assert r['model.layers.0.mlp.down_proj.bias']['changes'] == '', r
EOF

# --- two checkpoints of different shapes; an artifact against a GGUF (Hugging Face names in A)
mkdir -p "$work/shape"
python3 - "$L/hf/model.safetensors" "$work/shape/model.safetensors" <<'EOF' || bad "shape checkpoint"
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n])
h['lm_head.weight']['shape'] = [16, 16]          # 256 values either way
hj = json.dumps(h).encode()
hj += b' ' * (-len(hj) % 8)
open(sys.argv[2], 'wb').write(struct.pack('<Q', len(hj)) + hj + b[8 + n:])
EOF
run 1 "$bin/ninfer-diff" "$L/hf" "$work/shape"
contains "$work/out" "lm_head.weight                               shape [8,32] -> [16,16], no statistics: the shapes differ"
contains "$work/out" "different: 1 object changed, 0 only in A, 0 only in B"
"$bin/ninfer-convert" "$L/hf" -o "$work/hf.ninfer" --format fp32 --no-report >/dev/null 2>&1 || bad "convert hf"
run 1 "$bin/ninfer-diff" "$work/hf.ninfer" "$L/model.gguf" --json
python3 - "$work/out" <<'EOF' && ok || bad "artifact against a GGUF"
import json, sys
j = json.load(open(sys.argv[1]))
assert (j['a_kind'], j['b_kind'], j['reference'], j['architecture']) == ('artifact', 'checkpoint', 'b', 'llama'), j
o = {x['id']: x for x in j['objects']}
assert set(o) == {'model.layers.0.self_attn.v_proj.weight', 'lm_head.weight', 'blk.0.mystery.weight',
                  'model.layers.0.self_attn.rotary_emb.inv_freq'}, set(o)   # q and k: exact, in llama.cpp order
assert o['lm_head.weight']['id_b'] == 'output.weight' and o['lm_head.weight']['format_a'] == 'fp32', o
assert o['blk.0.mystery.weight']['changes'] == ['only_in_b'] and 'unmapped' in o['blk.0.mystery.weight'], o
EOF

# --- an expert the other side lacks is listed (as only in the stack's side), in either order
mkdir -p "$work/moe1"
cp "$M/hf/config.json" "$work/moe1/"
python3 - "$M/hf/model.safetensors" "$work/moe1/model.safetensors" <<'EOF' || bad "one expert"
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n])
h['model.unrelated.weight'] = h.pop('model.layers.0.mlp.experts.1.down_proj.weight')   # no holes in a file
hj = json.dumps(h).encode()
hj += b' ' * (-len(hj) % 8)
open(sys.argv[2], 'wb').write(struct.pack('<Q', len(hj)) + hj + b[8 + n:])
EOF
run 1 "$bin/ninfer-diff" "$M/model.gguf" "$work/moe1" --csv
check grep -qx 'blk.0.ffn_down_exps.weight,,1,only_in_a,F16,,16,,,,,,,,,' "$work/out"
run 1 "$bin/ninfer-diff" "$work/moe1" "$M/model.gguf" --csv
check grep -qx ',blk.0.ffn_down_exps.weight,1,only_in_b,,F16,,16,,,,,,,,' "$work/out"
run 1 "$bin/ninfer-diff" "$work/moe1" "$M/model.gguf"
contains "$work/out" "blk.0.ffn_down_exps.weight (expert 1)"

# --- a head count that does not divide the q/k rows: those pairs say why, the rest is compared
python3 - "$L/model.gguf" "$work/heads3.gguf" <<'EOF' || bad "heads3"
import sys
b = open(sys.argv[1], 'rb').read()
key = b'llama.attention.head_count'
i = b.index(key + b'\x04\x00\x00\x00')      # the key, then its type u32 (4), then 4 heads
j = i + len(key) + 4
open(sys.argv[2], 'wb').write(b[:j] + (3).to_bytes(4, 'little') + b[j + 4:])
EOF
run 1 "$bin/ninfer-diff" "$work/heads3.gguf" "$L/hf"
contains "$work/out" "no statistics: llama.cpp reorders its rows by head: the head count does not divide them"
lacks "$work/out" "attn_k"          # 2 key/value heads: still exact

# --- a GPTQ checkpoint against a GGUF of its values, either order (.qweight is <p>.weight)
python3 - "$work/dia/gptq4" "$work/gptq.gguf" <<'EOF' || bad "gptq gguf"
import os, struct, sys
raw = open(os.path.join(sys.argv[1], 'expected', 'model.layers.0.mlp.down_proj.qweight.f32'), 'rb').read()
def gstr(s):
    return struct.pack('<Q', len(s)) + s.encode()
kv = gstr('general.architecture') + struct.pack('<I', 8) + gstr('llama')
out = b'GGUF' + struct.pack('<IQQ', 3, 1, 1) + kv
out += gstr('blk.0.ffn_down.weight') + struct.pack('<I', 2) + struct.pack('<QQ', 256, 64) + struct.pack('<IQ', 0, 0)
out += b'\0' * (-len(out) % 32)
open(sys.argv[2], 'wb').write(out + raw)
EOF
run 1 "$bin/ninfer-diff" "$work/dia/gptq4" "$work/gptq.gguf" --csv       # the bias: no GGUF tensor here
check grep -q '^model.layers.0.mlp.down_proj.qweight,blk.0.ffn_down.weight,,,gptq,F32,' "$work/out"
run 1 "$bin/ninfer-diff" "$work/gptq.gguf" "$work/dia/gptq4" --csv
check grep -q '^blk.0.ffn_down.weight,model.layers.0.mlp.down_proj.qweight,,,F32,gptq,' "$work/out"

# --- the same NaN and infinity on both sides are no difference; another NaN is
mkdir -p "$work/n1" "$work/n2" "$work/n3"
python3 - "$work" <<'EOF' || bad "nan checkpoints"
import json, struct, sys
same = [0x3f800000, 0x7fc00001, 0x7f800000, 0x40000000]
for d, words in (('n1', same), ('n2', same), ('n3', [0x3f800000, 0x7fc00002, 0x7f800000, 0x40000000])):
    hj = json.dumps({'t': {'dtype': 'F32', 'shape': [4], 'data_offsets': [0, 16]}}).encode()
    hj += b' ' * (-len(hj) % 8)
    open('%s/%s/model.safetensors' % (sys.argv[1], d), 'wb').write(struct.pack('<Q', len(hj)) + hj + struct.pack('<4I', *words))
EOF
run 0 "$bin/ninfer-diff" "$work/n1" "$work/n2"
contains "$work/out" ": same (1 object compared)"
run 1 "$bin/ninfer-diff" "$work/n1" "$work/n3"
contains "$work/out" "different: 1 object changed"

# --- --imatrix with two artifacts: their pairs' weighted error too
"$bin/ninfer-convert" "$L/hf" -o "$work/q8.ninfer" --format q8_g32_fp16 --no-report >/dev/null 2>&1 || bad "convert q8"
run 1 "$bin/ninfer-diff" "$work/hf.ninfer" "$work/q8.ninfer" --json --imatrix "$L/imatrix.gguf"
python3 - "$work/out" <<'EOF' && ok || bad "artifacts' weighted error"
import json, sys
o = {x['id']: x for x in json.load(open(sys.argv[1]))['objects']}
s = o['model.layers.0.self_attn.v_proj.weight']['statistics']
assert s['weighted_error'] > 0 and s['imatrix_entry'] == 'blk.0.attn_v.weight', s
assert 'weighted_error' not in o['model.layers.0.self_attn.q_proj.weight']['statistics']   # no entry
EOF

# --- the page of a comparison takes layers and roles from the reference's names, whichever is A
run 1 "$bin/ninfer-diff" "$L/hf" "$L/model.gguf" -q --html "$work/hf_first.html"
check test "$(grep -c ' = ' "$work/hf_first.html" | head -1)" -gt 0
check test -z "$(grep -o 'rotate(-40)">[^<]* = ' "$work/hf_first.html")"

# --- names from files in the CSV: quoted, a formula-looking one defused
mkdir -p "$work/h1" "$work/h2"
python3 - "$work/h1/model.safetensors" "$work/h2/model.safetensors" <<'EOF' || bad "hostile names"
import json, struct, sys
for path, v in zip(sys.argv[1:], (1.0, 2.0)):
    head = {'=HYPERLINK("x"),1': {'dtype': 'F32', 'shape': [1], 'data_offsets': [0, 4]}}
    hj = json.dumps(head).encode()
    hj += b' ' * (-len(hj) % 8)
    open(path, 'wb').write(struct.pack('<Q', len(hj)) + hj + struct.pack('<f', v))
EOF
run 1 "$bin/ninfer-diff" "$work/h1" "$work/h2" --csv
check test "$(sed -n 2p "$work/out" | cut -c1-58)" = "\"'=HYPERLINK(\"\"x\"\"),1\",\"'=HYPERLINK(\"\"x\"\"),1\",,values,F32,"

# --- usage
run 2 "$bin/ninfer-diff" "$L/model.gguf" "$L/hf" --csv --json
contains "$work/err" "--csv and --json are two outputs; give one"
run 2 "$bin/ninfer-diff" "$L/model.gguf" "$L/hf" --arch falcon
contains "$work/err" "--arch: 'falcon' is not an architecture of docs/names.md"
run 2 "$bin/ninfer-diff" "$L/model.gguf" "$L/hf" --html -
contains "$work/err" "--html - writes the page on standard output: give -q"
run 3 "$bin/ninfer-diff" "$L/model.gguf" "$L/hf" --imatrix "$work/none.gguf"
contains "$work/err" "none.gguf"

finish diff_sources
