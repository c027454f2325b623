#!/usr/bin/env bash
# ninfer-convert --preset (docs/presets.md): every tensor's type, for small llama-, qwen3-moe- and
# gemma3-shaped checkpoints and several presets, against answers written by hand from llama.cpp's
# src/llama-quant.cpp (never computed by the code under test); a conversion whose types this
# build encodes is written and verified; bad input (unknown preset, unknown architecture, a
# missing count, a very-low-bit preset without an imatrix, a type no format holds) is refused
# before anything is written.
# usage: test_preset.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

gen() { "$bin/ninfer-gen-checkpoint" "$@" >/dev/null || bad "ninfer-gen-checkpoint $*"; }
config() { # DIR MODEL_TYPE LAYERS HEADS KV_HEADS [EXPERTS]
    printf '{"model_type": "%s", "num_hidden_layers": %s, "num_attention_heads": %s, "num_key_value_heads": %s%s}\n' \
        "$2" "$3" "$4" "$5" "${6:+, \"num_experts\": $6}" >"$1/config.json"
}

# expect PRESET DIR EXPECTED [ARGS...]: --dry-run --json's type of every tensor equals EXPECTED, a
# python expression of (name) -> type or None (kept, fp32) or "-" (no llama.cpp name)
expect() {
    local preset=$1 dir=$2 want=$3
    shift 3
    run 0 "$bin/ninfer-convert" "$dir" -o "$work/x.ninfer" --preset "$preset" --dry-run --json "$@"
    python3 - "$work/out" "$want" "$preset" <<'PY' && ok || bad "--preset $preset on $dir: types differ (above)"
import json, re, sys
doc = json.load(open(sys.argv[1]))
want = eval('lambda n, L, E: ' + sys.argv[2])
bad = 0
names = [t['tensor'] for t in doc['preset']['tensors']] + doc['preset']['unmapped']
for t in doc['preset']['tensors']:
    m = re.match(r'model\.layers\.(\d+)\.', t['tensor']) or re.match(r'blk\.(\d+)\.', t['tensor'])
    e = re.search(r'\.experts\.(\d+)\.', t['tensor'])
    w = want(t['tensor'], int(m.group(1)) if m else -1, int(e.group(1)) if e else -1)
    got = t.get('type')
    if got != w:
        bad += 1
        print('%s %s: want %s, got %s (%s)' % (sys.argv[3], t['tensor'], w, got, t.get('why')))
    fmt = t.get('format')
    if got and got != 'f16' and fmt != 'gguf_' + got:
        bad += 1
        print('%s: type %s but format %s' % (t['tensor'], got, fmt))
    if not got and fmt != 'fp32':
        bad += 1
        print('%s: kept, format %s' % (t['tensor'], fmt))
for n in doc['preset']['unmapped']:
    if want(n, -1, -1) != '-':
        bad += 1
        print('%s: unmapped' % n)
sys.exit(1 if bad else 0)
PY
}

# ---------------------------------------------------------------- llama, 8 layers
# n/8 = 1, n/16 = 0; use_more_bits(i, 8) for layers 0, 3, 6, 7; 4 heads per kv head
gen "$work/llama" --hidden 256 --kv-hidden 64 --intermediate 512 --layers 8 --vocab 256
config "$work/llama" llama 8 4 1
cat >"$work/llama.py" <<'EOF'
def t(n, L, E, P):
    more = L in (0, 3, 6, 7)
    if n.endswith('norm.weight'): return None
    if n == 'lm_head.weight': return P['output']
    if n == 'model.embed_tokens.weight': return P['embd']
    for k in ('v_proj', 'down_proj', 'o_proj'):
        if k in n and k in P: return P[k](L, more)
    return P['rest']
EOF
q='lambda L, m:'
expect Q4_K_M "$work/llama" "__import__('runpy').run_path('$work/llama.py')['t'](n, L, E, {'output': 'q6_k', 'embd': 'q4_k', 'rest': 'q4_k', 'v_proj': $q 'q6_k' if m else 'q4_k', 'down_proj': $q 'q6_k' if m else 'q4_k'})"
contains "$work/out" '"why": "ffn_down, layer 0 of 8: use_more_bits -> q6_k"'
contains "$work/out" '"llama_cpp": "8784689fee07c6daabf3487d24e1535534ef6e6b"'
expect Q3_K_M "$work/llama" "__import__('runpy').run_path('$work/llama.py')['t'](n, L, E, {'output': 'q6_k', 'embd': 'q3_k', 'rest': 'q3_k', 'v_proj': $q 'q5_k' if L < 2 else 'q4_k', 'down_proj': $q 'q4_k', 'o_proj': $q 'q4_k'})"
expect Q2_K "$work/llama" "__import__('runpy').run_path('$work/llama.py')['t'](n, L, E, {'output': 'q6_k', 'embd': 'q2_k', 'rest': 'q2_k', 'v_proj': $q 'q4_k', 'down_proj': $q 'q3_k', 'o_proj': $q 'q3_k'})"
expect Q5_K_S "$work/llama" "__import__('runpy').run_path('$work/llama.py')['t'](n, L, E, {'output': 'q6_k', 'embd': 'q5_k', 'rest': 'q5_k'})"
expect Q6_K "$work/llama" "__import__('runpy').run_path('$work/llama.py')['t'](n, L, E, {'output': 'q6_k', 'embd': 'q6_k', 'rest': 'q6_k'})"
expect IQ3_M "$work/llama" "__import__('runpy').run_path('$work/llama.py')['t'](n, L, E, {'output': 'q6_k', 'embd': 'iq3_s', 'rest': 'iq3_s', 'v_proj': $q 'q4_k', 'down_proj': $q 'q4_k' if L < 1 else 'iq3_s', 'o_proj': $q 'q4_k'})"
# iq3_s: the plan is given only when this build encodes every type (docs/presets.md, "Dry run")
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit((d["plan"] is None) != (not d["preset"]["convertible"]))' \
    "$work/out" && ok || bad "IQ3_M: plan and convertible disagree"
expect IQ4_XS "$work/llama" "__import__('runpy').run_path('$work/llama.py')['t'](n, L, E, {'output': 'q6_k', 'embd': 'iq4_xs', 'rest': 'iq4_xs', 'v_proj': $q 'q5_k', 'down_proj': $q 'q5_k' if L < 1 else 'iq4_xs'})"
# IQ2_M needs the importance of every iq2_s tensor: without --imatrix llama-quantize stops
python3 "$top/tests/cli/gen_imatrix.py" "$work/imatrix.gguf" 256 512 8 7 4 || bad "gen_imatrix.py"
expect IQ2_M "$work/llama" "__import__('runpy').run_path('$work/llama.py')['t'](n, L, E, {'output': 'q5_k', 'embd': 'iq3_s', 'rest': 'iq2_s', 'v_proj': $q 'q4_k', 'down_proj': $q 'iq3_s' if L < 1 else 'iq2_s', 'o_proj': $q 'iq3_s'})" --imatrix "$work/imatrix.gguf"
run 1 "$bin/ninfer-convert" "$work/llama" -o "$work/x.ninfer" --preset IQ2_M --dry-run
contains "$work/err" "without its importance vector"
contains "$work/err" "give --imatrix FILE"
# the table: one line per tensor with its llama.cpp name, type, format and why
run 0 "$bin/ninfer-convert" "$work/llama" -o "$work/x.ninfer" --preset q4_k_m --dry-run
contains "$work/out" "blk.3.ffn_down.weight"
contains "$work/out" "ffn_down, layer 3 of 8: use_more_bits -> q6_k"
contains "$work/out" "preset Q4_K_M (llama-quantize of llama.cpp 8784689f): llama, 8 layers, 4 heads, 1 kv heads, 0 experts"
contains "$work/out" "total:" # the plan follows: every type is convertible
# --rule overrides a preset's choice, as llama-quantize's --tensor-type does (the plan shows it)
run 0 "$bin/ninfer-convert" "$work/llama" -o "$work/x.ninfer" --preset Q4_K_M --rule 'lm_head.weight=gguf_q8_0:ggml_quantize' \
    --dry-run --json
python3 -c 'import json, sys; o = {x["id"]: x for x in json.load(open(sys.argv[1]))["plan"]["objects"]}; sys.exit(o["lm_head.weight"]["format"] != "gguf_q8_0" or o["model.layers.0.mlp.down_proj.weight"]["format"] != "gguf_q6_k")' \
    "$work/out" && ok || bad "--rule after --preset: lm_head not gguf_q8_0"
# converted for real: ggml_quantize's blocks, verified
run 0 "$bin/ninfer-convert" "$work/llama" -o "$work/q4km.ninfer" --preset Q4_K_M --no-report
run 0 "$bin/ninfer-verify" "$work/q4km.ninfer"
run 0 "$bin/ninfer-verify" "$work/q4km.ninfer" --against "$work/llama" # every tensor re-derived, bit for bit
run 0 "$bin/ninfer-inspect" "$work/q4km.ninfer" --json
python3 - "$work/out" <<'PY' && ok || bad "Q4_K_M artifact: formats differ"
import json, sys
objs = {o['id']: o['format'] for o in json.load(open(sys.argv[1]))['objects'] if o['kind'] == 'tensor'}
assert objs['model.layers.0.mlp.down_proj.weight'] == 'gguf_q6_k', objs
assert objs['model.layers.1.mlp.down_proj.weight'] == 'gguf_q4_k', objs
assert objs['lm_head.weight'] == 'gguf_q6_k', objs
assert objs['model.norm.weight'] == 'fp32', objs
PY
# Q4_0 with an imatrix: q4_1 for the first eighth's ffn_down, which no ninfer format holds
run 0 "$bin/ninfer-convert" "$work/llama" -o "$work/x.ninfer" --preset Q4_0 --imatrix "$work/imatrix.gguf" --dry-run
contains "$work/out" "no ninfer format holds q4_1"
run 1 "$bin/ninfer-convert" "$work/llama" -o "$work/q40.ninfer" --preset Q4_0 --imatrix "$work/imatrix.gguf"
contains "$work/err" "model.layers.0.mlp.down_proj.weight"
contains "$work/err" "q4_1, which no ninfer format holds"
check test ! -e "$work/q40.ninfer"
# a --rule that gives those tensors a format replaces the refused choice (llama-quantize's
# --tensor-type): the dry run says so and shows the plan, and the conversion is written
rule='model.layers.0.mlp.down_proj.weight=gguf_q5_0:ggml_quantize'
run 0 "$bin/ninfer-convert" "$work/llama" -o "$work/x.ninfer" --preset Q4_0 --imatrix "$work/imatrix.gguf" --rule "$rule" --dry-run --json
python3 - "$work/out" <<'PY' && ok || bad "Q4_0 + imatrix + --rule: the dry run"
import json, sys
d = json.load(open(sys.argv[1]))
t = {x['tensor']: x for x in d['preset']['tensors']}['model.layers.0.mlp.down_proj.weight']
assert t['type'] == 'q4_1' and t['format'] is None and t['replaced_by'] == "--rule 'model.layers.0.mlp.down_proj.weight=gguf_q5_0:ggml_quantize'", t
assert d['preset']['convertible'] is True and d['plan'] is not None, d['preset']['convertible']
o = {x['id']: x for x in d['plan']['objects']}['model.layers.0.mlp.down_proj.weight']
assert o['format'] == 'gguf_q5_0' and o['method'] == 'ggml_quantize' and o['with'] == {'imatrix': 'imatrix'}, o
PY
run 0 "$bin/ninfer-convert" "$work/llama" -o "$work/q40.ninfer" --preset Q4_0 --imatrix "$work/imatrix.gguf" --rule "$rule" --no-report
run 0 "$bin/ninfer-verify" "$work/q40.ninfer"
run 0 "$bin/ninfer-inspect" "$work/q40.ninfer" --json
python3 - "$work/out" <<'PY' && ok || bad "Q4_0 + imatrix + --rule: the artifact's formats"
import json, sys
objs = {o['id']: o['format'] for o in json.load(open(sys.argv[1]))['objects'] if o['kind'] == 'tensor'}
assert objs['model.layers.0.mlp.down_proj.weight'] == 'gguf_q5_0', objs
assert objs['model.layers.1.mlp.down_proj.weight'] == 'gguf_q4_0', objs
PY
# a --rule for another tensor leaves the refusal as it was
run 1 "$bin/ninfer-convert" "$work/llama" -o "$work/q40b.ninfer" --preset Q4_0 --imatrix "$work/imatrix.gguf" --rule 'lm_head.weight=gguf_q8_0'
contains "$work/err" "q4_1, which no ninfer format holds"
check test ! -e "$work/q40b.ninfer"

# the same model as a GGUF file (llama.cpp's names; its hyperparameters from the file's keys)
gen "$work/gguf" --gguf --hidden 256 --kv-hidden 64 --intermediate 512 --layers 8 --vocab 256
expect Q4_K_M "$work/gguf/model.gguf" "None if n.endswith('norm.weight') else 'q6_k' if n == 'output.weight' else ('q6_k' if L in (0, 3, 6, 7) else 'q4_k') if 'attn_v' in n or 'ffn_down' in n else 'q4_k'"
contains "$work/out" '"architecture": "llama"'
run 0 "$bin/ninfer-convert" "$work/gguf/model.gguf" -o "$work/gguf.ninfer" --preset Q4_K_M --no-report
run 0 "$bin/ninfer-verify" "$work/gguf.ninfer"

# ---------------------------------------------------------------- qwen3-moe, 4 layers, 8 experts
# 8 experts: attn_v and attn_k q8_0, attn_output q5_k; ffn_down_exps by layer number from the
# name: use_more_bits(i, 4) for layers 2 and 3; the router kept
gen "$work/moe" --hidden 256 --kv-hidden 256 --intermediate 256 --layers 4 --vocab 256 --experts 8
config "$work/moe" qwen3_moe 4 4 4 8
expect Q4_K_M "$work/moe" "None if n.endswith('norm.weight') or n.endswith('mlp.gate.weight') else 'q6_k' if n == 'lm_head.weight' else 'q8_0' if 'v_proj' in n or 'k_proj' in n else 'q5_k' if 'o_proj' in n else ('q6_k' if L >= 2 else 'q4_k') if 'down_proj' in n else 'q4_k'"
contains "$work/out" '"gguf": "blk.2.ffn_down_exps.weight"'
contains "$work/out" '"expert": 7'
expect Q3_K_M "$work/moe" "None if n.endswith('norm.weight') or n.endswith('mlp.gate.weight') else 'q6_k' if n == 'lm_head.weight' else 'q8_0' if 'v_proj' in n or 'k_proj' in n else 'q5_k' if 'o_proj' in n else 'q4_k' if 'down_proj' in n else 'q3_k'"
run 0 "$bin/ninfer-convert" "$work/moe" -o "$work/x.ninfer" --preset Q4_K_M --dry-run
contains "$work/out" "blk.3.ffn_up_exps.weight[5]"
# a llama-imatrix file of the MoE: attn_q dense, each ffn_*_exps one row and one count per expert;
# and a second file holding expert 5's slice of layer 2's up_proj under its own name
python3 - "$work" <<'PY'
import struct, sys
def gguf(path, ts):  # (name, ne list, values): F32, 32-byte aligned
    out = b'GGUF' + struct.pack('<IQQ', 3, len(ts), 0)
    off = 0
    for name, ne, vals in ts:
        b = name.encode()
        out += struct.pack('<Q', len(b)) + b + struct.pack('<I', len(ne)) + b''.join(struct.pack('<Q', n) for n in ne)
        out += struct.pack('<IQ', 0, off)
        off += (len(vals) * 4 + 31) // 32 * 32
    out += b'\0' * (-len(out) % 32)
    for _, _, vals in ts:
        d = struct.pack('<%df' % len(vals), *vals)
        out += d + b'\0' * (-len(d) % 32)
    open(path, 'wb').write(out)
ts, E, H = [], 8, 256
def vec(l, k, e): return [float(1 + (i * (l + 3) + k * 5 + e * 11) % 13) for i in range(H)]
for l in range(4):
    ts += [('blk.%d.attn_q.weight.in_sum2' % l, [H], vec(l, 0, 0)), ('blk.%d.attn_q.weight.counts' % l, [1], [2.0])]
    for k, t in enumerate(('gate', 'up', 'down')):
        n = 'blk.%d.ffn_%s_exps.weight' % (l, t)
        ts += [(n + '.in_sum2', [H, E], sum((vec(l, k, e) for e in range(E)), [])),
               (n + '.counts', [1, E], [float(1 + e) for e in range(E)])]
gguf(sys.argv[1] + '/moe.imatrix.gguf', ts)
gguf(sys.argv[1] + '/one.imatrix.gguf', [('model.layers.2.mlp.experts.5.up_proj.weight.in_sum2', [H], vec(2, 1, 5)),
                                         ('model.layers.2.mlp.experts.5.up_proj.weight.counts', [1], [6.0])])
PY
# IQ2_M on 8 experts: attn_v and attn_k q4_k (>= 4 experts; 8), attn_output q5_k, the rest iq2_s
# (ffn_down: n/8 = 0 layers first); every iq2_s tensor finds its vector, an expert its slice
expect IQ2_M "$work/moe" "None if n.endswith('norm.weight') or n.endswith('mlp.gate.weight') else 'q5_k' if n == 'lm_head.weight' else 'iq3_s' if 'embed' in n else 'q4_k' if 'v_proj' in n or 'k_proj' in n else 'q5_k' if 'o_proj' in n else 'iq2_s'" --imatrix "$work/moe.imatrix.gguf"
# Q4_K_M with the stacked imatrix: expert 5 of layer 2's up_proj encoded with its slice, the same
# bytes as with a file holding that slice under the expert's own name
run 0 "$bin/ninfer-convert" "$work/moe" -o "$work/moe-im.ninfer" --preset Q4_K_M --imatrix "$work/moe.imatrix.gguf" --no-report
printf 'recipe: 1\nsources: {base: %s, im: %s}\ndefaults: {format: fp32}\nrules:\n  - match: model.layers.2.mlp.experts.5.up_proj.weight\n    format: gguf_q4_k\n    method: ggml_quantize\n    with: {imatrix: im}\n' \
    "$work/moe" "$work/one.imatrix.gguf" >"$work/one.yaml"
run 0 "$bin/ninfer-convert" -r "$work/one.yaml" -o "$work/one.ninfer" --no-report
run 0 "$bin/ninfer-dequant" "$work/moe-im.ninfer" model.layers.2.mlp.experts.5.up_proj.weight -o "$work/a.f32"
run 0 "$bin/ninfer-dequant" "$work/one.ninfer" model.layers.2.mlp.experts.5.up_proj.weight -o "$work/b.f32"
same "$work/a.f32" "$work/b.f32"
run 0 "$bin/ninfer-convert" "$work/moe" -o "$work/moe-plain.ninfer" --preset Q4_K_M --no-report
run 0 "$bin/ninfer-dequant" "$work/moe-plain.ninfer" model.layers.2.mlp.experts.5.up_proj.weight -o "$work/c.f32"
if cmp -s "$work/a.f32" "$work/c.f32"; then bad "the imatrix changed nothing"; else ok; fi

# ---------------------------------------------------------------- gemma3, 2 layers, hidden 288
# tied embeddings: token_embd takes the output's rule (288 not whole 256 blocks: q8_0); rows of
# 288 fall back q4_k -> q5_0 and q6_k -> q8_0; down_proj rows of 512 keep q4_k / q6_k
# (use_more_bits(i, 2): layer 1); gemma3's own norms are kept; a vision tensor has no llama.cpp name
python3 - "$work/gemma" <<'PY'
import json, os, struct, sys
d = sys.argv[1]
os.makedirs(d)
H, I, KV = 288, 512, 144
ts = [('model.embed_tokens.weight', [256, H]), ('model.norm.weight', [H]), ('vision_tower.proj.weight', [H, H])]
for l in range(2):
    p = 'model.layers.%d.' % l
    ts += [(p + 'input_layernorm.weight', [H]), (p + 'self_attn.q_proj.weight', [H, H]),
           (p + 'self_attn.k_proj.weight', [KV, H]), (p + 'self_attn.v_proj.weight', [KV, H]),
           (p + 'self_attn.o_proj.weight', [H, H]), (p + 'self_attn.q_norm.weight', [72]),
           (p + 'self_attn.k_norm.weight', [72]), (p + 'post_attention_layernorm.weight', [H]),
           (p + 'pre_feedforward_layernorm.weight', [H]), (p + 'post_feedforward_layernorm.weight', [H]),
           (p + 'mlp.gate_proj.weight', [I, H]), (p + 'mlp.up_proj.weight', [I, H]), (p + 'mlp.down_proj.weight', [H, I])]
hdr, blob = {}, b''
for i, (name, shape) in enumerate(ts):
    n = 1
    for s in shape: n *= s
    raw = struct.pack('<%df' % n, *[((k * 7919 + i * 104729) % 2001 - 1000) / 4000.0 for k in range(n)])
    hdr[name] = {'dtype': 'F32', 'shape': shape, 'data_offsets': [len(blob), len(blob) + len(raw)]}
    blob += raw
h = json.dumps(hdr).encode()
h += b' ' * (-len(h) % 8)
open(d + '/model.safetensors', 'wb').write(struct.pack('<Q', len(h)) + h + blob)
json.dump({'model_type': 'gemma3', 'text_config': {'model_type': 'gemma3_text', 'num_hidden_layers': 2,
           'num_attention_heads': 4, 'num_key_value_heads': 2}}, open(d + '/config.json', 'w'))
PY
expect Q4_K_M "$work/gemma" "'-' if n.startswith('vision') else None if n.endswith('norm.weight') else 'q8_0' if n == 'model.embed_tokens.weight' else ('q6_k' if L == 1 else 'q4_k') if 'down_proj' in n else ('q8_0' if L == 1 else 'q5_0') if 'v_proj' in n else 'q5_0'"
python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["preset"]["unmapped"] != ["vision_tower.proj.weight"])' \
    "$work/out" && ok || bad "gemma3: the unmapped list is not the vision tensor"
contains "$work/out" 'row of 288 not a multiple of 256: fallback q5_0'
run 0 "$bin/ninfer-convert" "$work/gemma" -o "$work/x.ninfer" --preset Q4_K_M --dry-run
contains "$work/out" "1 floating-point tensor without a llama.cpp name: kept as quick mode keeps them"
run 0 "$bin/ninfer-convert" "$work/gemma" -o "$work/gemma.ninfer" --preset Q4_K_M --no-report
run 0 "$bin/ninfer-verify" "$work/gemma.ninfer"

# ---------------------------------------------------------------- bad input
run 2 "$bin/ninfer-convert" "$work/llama" -o "$work/x.ninfer" --preset Q4_K
contains "$work/err" "unknown preset 'Q4_K' (one of Q2_K, Q3_K_S, Q3_K_M"
contains "$work/err" "IQ1_M)"
run 2 "$bin/ninfer-convert" "$work/llama" -o "$work/x.ninfer" --preset Q4_K_M --method grouped_search
run 2 "$bin/ninfer-convert" "$work/llama" -o "$work/x.ninfer" --preset Q4_K_M --format q8_g32_fp16
run 2 "$bin/ninfer-convert" "$work/llama" -o "$work/x.ninfer" --format q8_g32_fp16 --imatrix "$work/imatrix.gguf"
contains "$work/err" "--imatrix belongs to --preset"
cp -r "$work/llama" "$work/falcon"
config "$work/falcon" falcon 8 4 1
run 1 "$bin/ninfer-convert" "$work/falcon" -o "$work/x.ninfer" --preset Q4_K_M --dry-run
contains "$work/err" "model_type 'falcon' is not an architecture --preset knows"
contains "$work/err" "falcon/config.json"
printf '{"model_type": "llama", "num_hidden_layers": 8}\n' >"$work/falcon/config.json"
run 1 "$bin/ninfer-convert" "$work/falcon" -o "$work/x.ninfer" --preset Q4_K_M
contains "$work/err" "no 'num_attention_heads'"
check test ! -e "$work/x.ninfer"
run 0 "$bin/ninfer-convert" --list-presets
contains "$work/out" "IQ2_XXS"
check test "$(wc -l <"$work/out")" -eq 24

finish "preset"
