#!/usr/bin/env bash
# Budget-driven recipes (docs/recipes.md, "Budgets"): on a checkpoint whose matrices differ in
# scale, shape and distribution (gen_budget.py), the allocation meets the budget, has the least
# weighted error of every allocation within it (a brute force over the candidates each tensor
# was measured with), is no worse than any uniform choice of the same or smaller size, is the
# same on any thread count, and its report gives the measured figures; the measuring uses the
# real encoders (a uniform conversion's report agrees); refusals write nothing.
. "$(dirname "$0")/lib.sh" "$@"

python3 "$top/tests/cli/gen_budget.py" "$work/ck"
recipe() { # recipe FILE BUDGET-MAPPING [IMATRIX]
    {
        echo "recipe: 1"
        echo "sources: {base: ., imatrix: imatrix.gguf}"
        echo "defaults: {format: fp32}"
        echo "budget: $2"
        echo "rules:"
        echo "  - match: \"*\""
        echo "    when: {rank: 2}"
        echo "    format: budget"
    } >"$work/ck/$1"
}

# least.py: the least objective of any allocation within a capacity -- every combination of the
# options, enumerated item by item with the dominated partial sums dropped (an exact brute force
# that stays small: at most one partial sum per byte count).
cat >"$work/least.py" <<'PY'
def least(alloc, cap, cost):
    front = {0: 0.0}  # bytes so far -> the least objective so far
    for a in alloc:
        nxt = {}
        for b, e in front.items():
            for o in a['options']:
                nb, ne = b + o['bytes'], e + cost(a, o)
                if nb <= cap and ne < nxt.get(nb, float('inf')):
                    nxt[nb] = ne
        front, best = {}, float('inf')
        for b in sorted(nxt):  # a larger partial sum with no less objective can be dropped
            if nxt[b] < best:
                front[b] = best = nxt[b]
    return min(front.values())
PY
# check_allocation PLAN.json: the budget is met; no allocation within the capacity has less
# error (every combination of the options); no uniform candidate within it has less.
check_allocation() {
    PYTHONPATH=$work python3 - "$1" <<'PY'
import json, sys
from least import least
d = json.load(open(sys.argv[1]))['budget']
alloc, cap = d['allocation'], d['capacity_bytes']
used = sum(a['bytes'] for a in alloc)
assert used == d['used_bytes'] and used <= cap, (used, cap)
if 'bits_per_weight' in d['budget']:
    assert 8 * used <= d['budget']['bits_per_weight'] * d['elements'] + 1e-9
err = sum(a['estimated_error'] for a in alloc)
assert abs(err - d['estimated_error']) <= 1e-9 * err
assert err <= least(alloc, cap, lambda a, o: o['estimated_error']) * (1 + 1e-9), ('brute force', err)
assert d['optimal'] is True
pairs = {(o['format'], o['method']) for a in alloc for o in a['options']}
for pair in pairs:  # every candidate that every tensor can take, alone
    u = [o for a in alloc for o in a['options'] if (o['format'], o['method']) == pair]
    if len(u) == len(alloc) and sum(o['bytes'] for o in u) <= cap:
        assert err <= sum(o['estimated_error'] for o in u) * (1 + 1e-12), ('uniform', pair)
for a in alloc:
    r = a['runner_up']
    assert r is None or (r['format'], r['method']) != (a['format'], a['method'])
print('ok', len(alloc), used, cap, err)
PY
}

# The IQ1/IQ2 types build their grids' tables when first used (a noticeable cost on a sanitizer
# build): every check that is not about them has the other candidates only.
few='formats: [q4_g64_fp16, q5_g64_fp16, q6_g64_fp16, q8_g32_fp16, nvfp4, fp8_e4m3fn_row_bf16, fp8_e4m3fn_row_fp16, gguf_q8_0, gguf_q4_0, gguf_q5_0, gguf_q2_0, gguf_q2_k, gguf_q3_k, gguf_q4_k, gguf_q5_k, gguf_q6_k, gguf_iq4_nl, gguf_iq4_xs, gguf_iq3_xxs, gguf_iq3_s]'

# At budgets across the reachable range, with uniform weights and with the imatrix (every
# candidate at the lowest, where the IQ types count).
for b in 4.8 5 5.5 6 7 9.4; do
    f=", $few"
    [ "$b" = 4.8 ] && f=
    recipe r.yaml "{bits_per_weight: $b, sample_rows: 0$f}"
    run 0 "$bin/ninfer-convert" -r "$work/ck/r.yaml" -o "$work/o.ninfer" --dry-run --json
    cp "$work/out" "$work/plan.json"
    check check_allocation "$work/plan.json"
    recipe ri.yaml "{bits_per_weight: $b, sample_rows: 0, imatrix: imatrix$f}"
    run 0 "$bin/ninfer-convert" -r "$work/ck/ri.yaml" -o "$work/o.ninfer" --dry-run --json
    check check_allocation "$work/out"
    check python3 -c "
import json
d = json.load(open('$work/out'))['budget']
assert d['weights'] == {'imatrix': 'imatrix'} and {a['weights'] for a in d['allocation']} == {'imatrix'}"
done
# a bytes budget counts every tensor object (the fp32 vector too)
recipe rb.yaml "{bytes: 26000, sample_rows: 0, $few}"
run 0 "$bin/ninfer-convert" -r "$work/ck/rb.yaml" -o "$work/o.ninfer" --dry-run --json
check check_allocation "$work/out"
check python3 -c "import json,sys; d=json.load(open('$work/out'))['budget']; sys.exit(not d['tensor_bytes'] <= 26000 == d['budget']['bytes'])"
[ ! -e "$work/o.ninfer" ] && ok || bad "--dry-run wrote an artifact"

# The imatrix changes what is measured: its weights are the importance of the columns.
recipe r.yaml "{bits_per_weight: 5.5, sample_rows: 0, $few}"
recipe ri.yaml "{bits_per_weight: 5.5, sample_rows: 0, imatrix: imatrix, $few}"
"$bin/ninfer-convert" -r "$work/ck/r.yaml" -o "$work/o.ninfer" -n --json >"$work/u.json"
"$bin/ninfer-convert" -r "$work/ck/ri.yaml" -o "$work/o.ninfer" -n --json >"$work/i.json"
check python3 -c "
import json
u = json.load(open('$work/u.json'))['budget']['allocation'][0]['options'][0]['estimated_error']
i = json.load(open('$work/i.json'))['budget']['allocation'][0]['options'][0]['estimated_error']
assert i > 5 * u, (u, i)"

# The same plan, and the same artifact bytes, on one thread and on several.
"$bin/ninfer-convert" -r "$work/ck/ri.yaml" -o "$work/o.ninfer" -n --json --threads 1 >"$work/t1.json"
"$bin/ninfer-convert" -r "$work/ck/ri.yaml" -o "$work/o.ninfer" -n --json --threads 3 >"$work/t3.json"
same "$work/t1.json" "$work/t3.json"
export SOURCE_DATE_EPOCH=1700000000
run 0 "$bin/ninfer-convert" -r "$work/ck/ri.yaml" -o "$work/a1.ninfer" --threads 1
run 0 "$bin/ninfer-convert" -r "$work/ck/ri.yaml" -o "$work/a3.ninfer" --threads 3 --chunk-values 100
same "$work/a1.ninfer" "$work/a3.ninfer"
run 0 "$bin/ninfer-verify" "$work/a1.ninfer"

# The report: each chosen object's measured weighted error, here (every row measured) equal to
# the estimate, and the total.
check python3 - "$work/a1.ninfer.conversion.json" "$work/t1.json" <<'PY'
import json, sys
r, plan = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))['budget']
objs = {o['object']: o for o in r['objects']}
total = 0
for a in plan['allocation']:
    o = objs[a['tensor']]
    assert (o['format'], o['method']) == (a['format'], a['method'])
    assert o['budget']['weighted_error'] == a['estimated_error'], (o['budget'], a)
    total += o['budget']['weighted_error']
assert 'budget' not in objs['norm.weight']
assert abs(r['budget']['weighted_error'] - total) <= 1e-12 * total
assert r['budget']['estimated_error'] == plan['estimated_error']
PY

# The measuring pass uses the real encoders: a uniform q4 grouped_absmax conversion's report
# (its sum of squared errors, uniform weights) agrees with the candidate's measured error.
unset SOURCE_DATE_EPOCH
cat >"$work/ck/q4.yaml" <<'Y'
recipe: 1
sources: {base: .}
defaults: {format: fp32}
rules:
  - {match: "*", when: {rank: 2}, format: q4_g64_fp16, method: grouped_absmax}
Y
run 0 "$bin/ninfer-convert" -r "$work/ck/q4.yaml" -o "$work/q4.ninfer"
check python3 - "$work/q4.ninfer.conversion.json" "$work/u.json" <<'PY'
import json, sys
r, plan = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))['budget']
objs = {o['object']: o for o in r['objects']}
for a in plan['allocation']:
    opt = [o for o in a['options'] if (o['format'], o['method']) == ('q4_g64_fp16', 'grouped_absmax')][0]
    o = objs[a['tensor']]
    sse = o['rmse'] ** 2 * o['values_compared']
    assert abs(sse - opt['estimated_error']) <= 1e-6 * sse, (a['tensor'], sse, opt['estimated_error'])
PY

# nvfp4 is a candidate where its tiles fit (N % 128 == 0, K % 64 == 0): each sampled row is encoded
# under the matrix's true global scale, so its measured error is the real conversion's on those
# rows -- every row measured: the report's figure to the bit; 8 rows: the artifact's error on the
# 8 sampled rows times N / 8 -- and the budget picks it where it wins.
python3 - "$work/nv" <<'PY'
import json, os, random, struct, sys
d = sys.argv[1]
os.makedirs(d)
rng = random.Random(7)
shapes = {'a': (128, 256, lambda: rng.gauss(0, 1)), 'b': (256, 128, lambda: 0.01 * rng.gauss(0, 1) ** 3)}
header, data = {}, b''
for name, (r, c, f) in shapes.items():
    b = struct.pack('<%df' % (r * c), *[f() for _ in range(r * c)])
    header[name] = {'dtype': 'F32', 'shape': [r, c], 'data_offsets': [len(data), len(data) + len(b)]}
    data += b
h = json.dumps(header).encode()
h += b' ' * (-len(h) % 8)
open(d + '/model.safetensors', 'wb').write(struct.pack('<Q', len(h)) + h + data)
open(d + '/config.json', 'w').write('{}')
PY
nv_recipe() { # nv_recipe FILE SAMPLE-ROWS
    printf 'recipe: 1\nsources: {base: .}\nbudget: {bits_per_weight: 4.6, sample_rows: %s, formats: [nvfp4, q4_g64_fp16, q8_g32_fp16], methods: [nvfp4_quantize, nvfp4_search, grouped_absmax]}\nrules:\n  - {match: "*", format: budget}\n' "$2" >"$work/nv/$1"
}
nv_recipe all.yaml 0
run 0 "$bin/ninfer-convert" -r "$work/nv/all.yaml" -o "$work/nv.ninfer" -n --json
check check_allocation "$work/out"
check python3 - "$work/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))['budget']
for a in d['allocation']:
    assert not a['not_candidates'] and len(a["options"]) == 4, a
    fit = [o for o in a['options'] if o['bits_per_weight'] < 4.6]  # q8 does not fit beside either
    best = min(fit, key=lambda o: o['estimated_error'])
    assert best['format'] == 'nvfp4' and (a['format'], a['method']) == (best['format'], best['method']), a
PY
run 0 "$bin/ninfer-convert" -r "$work/nv/all.yaml" -o "$work/nv.ninfer"
check python3 - "$work/nv.ninfer.conversion.json" <<'PY'
import json, sys
b = [o for o in json.load(open(sys.argv[1]))['objects'] if 'budget' in o]
assert len(b) == 2 and all(o['format'] == 'nvfp4' for o in b), b
for o in b:
    assert o['budget']['weighted_error'] == o['budget']['estimated_error'] > 0, o['budget']
PY
nv_recipe s8.yaml 8
run 0 "$bin/ninfer-convert" -r "$work/nv/s8.yaml" -o "$work/nv8.ninfer"
for t in a b; do "$bin/ninfer-dequant" "$work/nv8.ninfer" $t -o "$work/nv8.$t.f32"; done
check python3 - "$work/nv/model.safetensors" "$work/nv8.ninfer.conversion.json" "$work/nv8" <<'PY'
import json, math, struct, sys
raw = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', raw[:8])[0]
hdr = json.loads(raw[8:8 + n])
for o in json.load(open(sys.argv[2]))['objects']:
    t = o['object']
    rows, cols = hdr[t]['shape']
    a, b = hdr[t]['data_offsets']
    x = struct.unpack('<%df' % (rows * cols), raw[8 + n + a:8 + n + b])
    y = struct.unpack('<%df' % (rows * cols), open('%s.%s.f32' % (sys.argv[3], t), 'rb').read())
    s = o['budget']['rows_measured']
    assert o['format'] == 'nvfp4' and s == 8, o
    sums = []
    for i in range(s):
        r = (2 * i + 1) * rows // (2 * s)
        acc = 0.0
        for c in range(r * cols, r * cols + cols):
            acc += (x[c] - y[c]) * (x[c] - y[c])
        sums.append(acc)
    want = math.fsum(sums) * (rows / s)
    assert abs(o['budget']['estimated_error'] - want) <= 1e-12 * want, (t, o['budget'], want)
PY

# Sampling: at most sample_rows rows a tensor, said per tensor; the report has the exact figure.
recipe rs.yaml "{bits_per_weight: 5.5, sample_rows: 8, $few}"
run 0 "$bin/ninfer-convert" -r "$work/ck/rs.yaml" -o "$work/s.ninfer"
run 0 "$bin/ninfer-convert" -r "$work/ck/rs.yaml" -o "$work/s.ninfer" -n
contains "$work/out" "8/48"
contains "$work/out" "measured on at most 8 rows a tensor, evenly spaced"
check python3 -c "
import json
r = json.load(open('$work/s.ninfer.conversion.json'))
b = [o['budget'] for o in r['objects'] if 'budget' in o]
assert all(x['rows_measured'] == 8 for x in b) and any(x['weighted_error'] != x['estimated_error'] for x in b)"

# A costly candidate measures fewer of the sampled rows when all of them would cost more than the
# tensor's allowance (docs/recipes.md, *Measuring*: 1 unit a row of the tensor): on these small
# tensors even 16 rows by every candidate cost more, so every candidate is left the low floor,
# 8 rows of its tensor's sample (or all of a smaller sample), evenly spread; the allocation's rows
# are its pick's.
recipe rs.yaml "{bits_per_weight: 5.5, sample_rows: 40}"
run 0 "$bin/ninfer-convert" -r "$work/ck/rs.yaml" -o "$work/s.ninfer" -n --json
check python3 - "$work/out" <<'PY'
import json, sys
for a in json.load(open(sys.argv[1]))['budget']['allocation']:
    s = a['rows_sampled']
    assert s == min(a['rows'], 40) and {o['rows_measured'] for o in a['options']} == {min(s, 8)}, a
    assert a['rows_measured'] == min(s, 8), a
PY
# Between the two floors: with four candidates of 1 unit a row (grouped_absmax, the unit), 16
# rows each fit a tensor of 64 rows; one of 48 or 40 rows gets floor(rows / 4) each (12, 10),
# one of 24 rows the low floor, 8.
recipe rs.yaml "{bits_per_weight: 5.5, sample_rows: 40, formats: [q4_g64_fp16, q5_g64_fp16, q6_g64_fp16, q8_g32_fp16], methods: [grouped_absmax]}"
run 0 "$bin/ninfer-convert" -r "$work/ck/rs.yaml" -o "$work/s.ninfer" -n --json
check python3 - "$work/out" <<'PY'
import json, sys
want = {'blk.0.attn.weight': 12, 'blk.0.ffn.weight': 10, 'blk.1.attn.weight': 16, 'blk.1.ffn.weight': 8}
got = {a['tensor']: {o['rows_measured'] for o in a['options']} for a in json.load(open(sys.argv[1]))['budget']['allocation']}
assert got == {t: {r} for t, r in want.items()}, got
PY

# Quick mode: --target-bpw in place of --format; the vector keeps its own format.
run 0 "$bin/ninfer-convert" "$work/ck" -o "$work/quick.ninfer" --target-bpw 6 --dry-run
contains "$work/out" "budget: 6 bits per weight"
check grep -Eq '^norm\.weight +\[256\] +F32 +fp32 +contiguous_le_v1 ' "$work/out"
run 0 "$bin/ninfer-convert" "$work/ck" -o "$work/quick.ninfer" --target-bpw 6 --method grouped_absmax --dry-run --json
check python3 -c "
import json
d = json.load(open('$work/out'))['budget']
assert {a['method'] for a in d['allocation']} == {'grouped_absmax'} and d['bits_per_weight'] <= 6"
run 0 "$bin/ninfer-convert" "$work/ck" -o "$work/quick.ninfer" --target-bpw 6 --rule 'blk.0.*=q8_g32_fp16' -n --json
check python3 -c "
import json
d = json.load(open('$work/out'))
assert [a['tensor'] for a in d['budget']['allocation']] == ['blk.1.attn.weight', 'blk.1.ffn.weight']"

# Scale-out: the plan records the measured figures; its tasks and assembler solve the same
# allocation without measuring, and the artifact is the one of a single run.
cat >"$work/ck/sp.yaml" <<Y
recipe: 1
sources: {base: ., imatrix: imatrix.gguf}
defaults: {format: fp32}
budget: {bits_per_weight: 5.5, imatrix: imatrix, sample_rows: 16, $few}
output: {max_file_bytes: 16384}
rules:
  - {match: "*", when: {rank: 2}, format: budget}
Y
id=0123456789abcdef0123456789abcdef
mkdir "$work/one" "$work/many"
run 0 "$bin/ninfer-convert" -r "$work/ck/sp.yaml" -o "$work/one/m.ninfer" --artifact-id $id
run 0 "$bin/ninfer-convert" -r "$work/ck/sp.yaml" -o "$work/many/m.ninfer" --artifact-id $id --plan-out "$work/plan.json"
contains "$work/plan.json" '"budget":{"rows_measured":[16,16,16,16],"errors":[['
run 0 "$bin/ninfer-convert" --plan "$work/plan.json" --task all
run 0 "$bin/ninfer-convert" --plan "$work/plan.json" --assemble --verify
for f in m.ninfer m.ninfer.part-0001 m.ninfer.part-0002 m.ninfer.conversion.json; do
    [ "$f" = m.ninfer.conversion.json ] || same "$work/one/$f" "$work/many/$f"
done
check python3 -c "
import json
a, b = (json.load(open('$work/%s/m.ninfer.conversion.json' % d)) for d in ('one', 'many'))
assert a['budget'] == b['budget'] and a['budget']['weighted_error'] > 0
assert [o.get('budget') for o in a['objects']] == [o.get('budget') for o in b['objects']]"
python3 - "$work/plan.json" "$work/bad.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p['budget']['errors'][1] = p['budget']['errors'][1][:3]
json.dump(p, open(sys.argv[2], 'w'))
PY
run 1 "$bin/ninfer-convert" --plan "$work/bad.json" --task 0
contains "$work/err" "the plan's budget figures of tensor 'blk.0.ffn.weight' are not this plan's"
# a receipt's weighted error: finite, >= 0, on the budget's objects only (else the task is rerun)
mkdir "$work/again"
run 0 "$bin/ninfer-convert" -r "$work/ck/sp.yaml" -o "$work/again/m.ninfer" --plan-out "$work/plan2.json"
run 0 "$bin/ninfer-convert" --plan "$work/plan2.json" --task all
receipt=$(grep -l '"object":"norm.weight"' "$work"/again/*receipt* | head -1) # with an object the budget did not choose
cp "$receipt" "$work/receipt.keep"
for wse in nan inf -0x1p+0 missing other; do
    python3 - "$work/receipt.keep" "$receipt" "$wse" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
objs = r['objects']
budget = [o for o in objs if o['stats']['wse'] != '0x0p+0']
other = [o for o in objs if o['stats']['wse'] == '0x0p+0']
if sys.argv[3] == 'missing':
    del budget[0]['stats']['wse']
elif sys.argv[3] == 'other':
    other[0]['stats']['wse'] = '0x1p+0'
else:
    budget[0]['stats']['wse'] = sys.argv[3]
json.dump(r, open(sys.argv[2], 'w'))
PY
    run 1 "$bin/ninfer-convert" --plan "$work/plan2.json" --assemble
    contains "$work/err" "is not an object of the plan in that file with a checksum and statistics; rerun task"
done
cp "$work/receipt.keep" "$receipt"
run 0 "$bin/ninfer-convert" --plan "$work/plan2.json" --assemble

# A rule's with applies to the grouped_search candidates of the tensors it leaves to the budget.
printf 'recipe: 1\nsources: {base: ., imatrix: imatrix.gguf}\ndefaults: {format: fp32}\nbudget: {bits_per_weight: 6, sample_rows: 0, %s}\nrules:\n  - {match: "*", when: {rank: 2}, format: budget, with: {imatrix: imatrix}}\n' "$few" >"$work/ck/w.yaml"
run 0 "$bin/ninfer-convert" -r "$work/ck/w.yaml" -o "$work/w.ninfer" -n --json
check python3 -c "
import json
d = json.load(open('$work/out'))
srch = [o for o in d['objects'] if o.get('method') == 'grouped_search']
absm = [o for o in d['objects'] if o.get('method') == 'grouped_absmax']
assert all(o['with'] == {'imatrix': 'imatrix'} for o in srch) and all(o['with'] == {} for o in absm)"

# recipes/budget-imatrix.yaml on a Llama-shaped checkpoint with an imatrix; verify --against
# re-derives the artifact from the recipe (measuring again gives the same allocation).
"$bin/ninfer-gen-checkpoint" "$work/llama" >/dev/null
python3 "$top/tests/cli/gen_imatrix.py" "$work/llama/imatrix.gguf" 200 520 2 7 3
MODEL_DIR=$work/llama run 0 "$bin/ninfer-convert" -r "$top/recipes/budget-imatrix.yaml" -o "$work/bi.ninfer" \
    --allow-env MODEL_DIR
contains "$work/err" "wrote"
MODEL_DIR=$work/llama run 0 "$bin/ninfer-verify" "$work/bi.ninfer" --against "$work/llama" \
    --recipe "$top/recipes/budget-imatrix.yaml" --allow-env MODEL_DIR
check python3 -c "
import json
r = json.load(open('$work/bi.ninfer.conversion.json'))
b = r['budget']
assert b['weights'] == {'imatrix': 'imatrix'} and b['tensors'] == 14 and b['bits_per_weight'] <= 5.5
assert {o['format'] for o in r['objects'] if o['object'] == 'lm_head.weight'} == {'q8_g32_fp16'}"

# Every format the methods quantize into is a candidate by default (the method registry's
# targets: q4..q8 by grouped_absmax and grouped_search, the fp8 rows, every gguf_* type
# ggml_quantize writes), each where its layout holds the tensor; the others are named with why.
recipe r.yaml "{bits_per_weight: 5, sample_rows: 0}"
run 0 "$bin/ninfer-convert" -r "$work/ck/r.yaml" -o "$work/o.ninfer" -n --json
check python3 - "$work/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))['budget']
c = {(x['format'], x['method']) for x in d['candidates']}
kq = {'gguf_' + t for t in 'q2_k q3_k q4_k q5_k q6_k iq4_xs iq2_s iq3_xxs iq3_s iq1_m'.split()}  # rows of whole 256-value blocks
imp = {'gguf_iq2_xxs', 'gguf_iq2_xs', 'gguf_iq1_s'}  # 256-value blocks, and ggml needs an imatrix for them
gguf = kq | {'gguf_q8_0', 'gguf_q4_0', 'gguf_q5_0', 'gguf_iq4_nl', 'gguf_q2_0'}
grouped = {'q4_g64_fp16', 'q5_g64_fp16', 'q6_g64_fp16', 'q8_g32_fp16'}
assert {(f, 'ggml_quantize') for f in gguf | imp} <= c, c
assert {(f, m) for f in grouped for m in ('grouped_absmax', 'grouped_search')} <= c, c
assert ('fp8_e4m3fn_row_bf16', 'fp8_row_maxabs') in c, c
assert not {m for f, m in c} & {'cast_direct', 'import_encoded'}, c
a = {x['tensor']: x for x in d['allocation']}
nv = {('nvfp4', 'nvfp4_quantize'), ('nvfp4', 'nvfp4_search')}  # rows of whole 128-row tiles: none here
assert nv <= c, c
no = a['blk.0.attn.weight']['not_candidates']  # K = 256: nvfp4 and the types that need an imatrix
assert {(o['format'], o['method']) for o in no} == {(f, 'ggml_quantize') for f in imp} | nv, no
assert all('only with an importance matrix' in o['why'] for o in no if o['format'] in imp), no
assert all(o['why'].startswith('nvfp4 needs N % 128 == 0') for o in no if o['format'] == 'nvfp4'), no
assert {(o['format'], o['method']) for o in a['blk.0.attn.weight']['options']} == c - {(f, 'ggml_quantize') for f in imp} - nv
for t in ('blk.0.ffn.weight', 'blk.1.attn.weight', 'blk.1.ffn.weight'):  # K = 192, 128, 320
    out = {(f, 'ggml_quantize') for f in kq | imp} | nv
    assert {(o['format'], o['method']) for o in a[t]['options']} == c - out
    no = a[t]['not_candidates']
    assert {(o['format'], o['method']) for o in no} == out, no
    assert all(o['why'].startswith('needs K % 256 == 0 (whole ggml blocks per row), got K=') for o in no
               if o['format'] != 'nvfp4'), no
PY
run 0 "$bin/ninfer-convert" -r "$work/ck/r.yaml" -o "$work/o.ninfer" -n
contains "$work/out" "not candidates:"
contains "$work/out" "  blk.1.attn.weight: gguf_q2_k (ggml_quantize), gguf_q3_k (ggml_quantize), gguf_q4_k (ggml_quantize), gguf_q5_k (ggml_quantize), gguf_q6_k (ggml_quantize), gguf_iq2_xxs (ggml_quantize), gguf_iq2_xs (ggml_quantize), gguf_iq3_xxs (ggml_quantize), gguf_iq1_s (ggml_quantize), gguf_iq3_s (ggml_quantize), gguf_iq2_s (ggml_quantize), gguf_iq4_xs (ggml_quantize), gguf_iq1_m (ggml_quantize): needs K % 256 == 0 (whole ggml blocks per row), got K=128"
contains "$work/out" "  blk.1.attn.weight: nvfp4 (nvfp4_quantize), nvfp4 (nvfp4_search): nvfp4 needs N % 128 == 0 and K % 64 == 0, got [64,128]"
contains "$work/out" "  blk.0.attn.weight: gguf_iq2_xxs (ggml_quantize), gguf_iq2_xs (ggml_quantize), gguf_iq1_s (ggml_quantize): ggml quantizes it only with an importance matrix"
lacks "$work/out" "  blk.0.attn.weight: gguf_q2_k"
# the reach spans every candidate: iq1_m's 1.75 bits per weight (without an imatrix; iq1_s needs
# one) to q8's 8.5 (K = 256 alone)
run 1 "$bin/ninfer-convert" "$work/ck" -o "$work/no.ninfer" --target-bpw 1 --rule 'blk.0.ffn.*=fp32' --rule 'blk.1.*=fp32'
contains "$work/err" "1 bits per weight is below what the candidates reach with the 1 tensor left to the budget: 1.7500 to 8.5000 bits per weight"
# with an imatrix, every method that takes one gets it (grouped_search, ggml_quantize), and the
# report's measured error of each pick is the estimate: the measuring encoded as the conversion does
recipe ri.yaml "{bits_per_weight: 4.6, sample_rows: 0, imatrix: imatrix, $few}"
run 0 "$bin/ninfer-convert" -r "$work/ck/ri.yaml" -o "$work/g.ninfer" --json -n
check python3 -c "
import json
d = json.load(open('$work/out'))
o = [x for x in d['objects'] if x.get('budget')]
assert {x['method'] for x in o} >= {'ggml_quantize'}, o
assert all(x['with'] == {'imatrix': 'imatrix'} for x in o if x['method'] in ('ggml_quantize', 'grouped_search')), o"
run 0 "$bin/ninfer-convert" -r "$work/ck/ri.yaml" -o "$work/g.ninfer"
check python3 - "$work/g.ninfer.conversion.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
b = [o for o in r['objects'] if 'budget' in o]
assert any(o['method'] == 'ggml_quantize' for o in b)
for o in b:
    assert o['budget']['weighted_error'] == o['budget']['estimated_error'], o
PY
# A row longer than a measuring span (2^18 values) is measured span by span as the conversion
# encodes it: gguf_q4_0 with an importance vector takes the whole row's sum of squares.
python3 - "$work/long" "$top/tests/cli" <<'PY'
import json, math, os, struct, sys
sys.path.insert(0, sys.argv[2])
from gen_imatrix import write_imatrix
d = sys.argv[1]
os.makedirs(d)
k = (1 << 18) + 512
vals = [math.sin(0.001 * i) * (1 + (i % 97)) for i in range(2 * k)]
b = struct.pack('<%df' % len(vals), *vals)
h = json.dumps({'w': {'dtype': 'F32', 'shape': [2, k], 'data_offsets': [0, len(b)]}}).encode()
h += b' ' * (-len(h) % 8)
open(d + '/model.safetensors', 'wb').write(struct.pack('<Q', len(h)) + h + b)
open(d + '/config.json', 'w').write('{}')
write_imatrix(d + '/imatrix.gguf', [('w', [1.0 + (i % 5) for i in range(k)])])
PY
printf 'recipe: 1\nsources: {base: ., imatrix: imatrix.gguf}\ndefaults: {format: fp32}\nbudget: {bits_per_weight: 4.5, sample_rows: 0, imatrix: imatrix, formats: [gguf_q4_0]}\nrules:\n  - {match: "*", when: {rank: 2}, format: budget}\n' >"$work/long/r.yaml"
run 0 "$bin/ninfer-convert" -r "$work/long/r.yaml" -o "$work/long1.ninfer" --chunk-values 4096
run 0 "$bin/ninfer-convert" -r "$work/long/r.yaml" -o "$work/long2.ninfer" --threads 1
check python3 - "$work/long1.ninfer.conversion.json" "$work/long2.ninfer.conversion.json" <<'PY'
import json, sys
for f in sys.argv[1:]:
    o = [o for o in json.load(open(f))['objects'] if 'budget' in o][0]
    assert o['budget']['weighted_error'] == o['budget']['estimated_error'] > 0, o['budget']
PY

# Sensitivity (docs/recipes.md, "Budgets", *Sensitivity*): a factor per tensor multiplies its error
# in the objective; tensors the file leaves out weigh 1.  The allocation is the least objective
# (brute force), JSON and CSV spellings and the recipe's key give the same plan.
printf '{"blk.0.attn.weight": 0, "blk.0.ffn.weight": 1e6,\n "norm.weight": 3}\n' >"$work/ck/sens.json"
printf '# name,factor\nname,factor\nblk.0.attn.weight,0\n"blk.0.ffn.weight" , 1e6\r\n\nnorm.weight,3\n' >"$work/ck/sens.csv"
recipe r.yaml "{bits_per_weight: 6, sample_rows: 0, $few}"
run 0 "$bin/ninfer-convert" -r "$work/ck/r.yaml" -o "$work/o.ninfer" -n --json --sensitivity "$work/ck/sens.json"
cp "$work/out" "$work/sj.json"
PYTHONPATH=$work check python3 - "$work/sj.json" <<'PY'
import json, sys
from least import least
d = json.load(open(sys.argv[1]))['budget']
alloc, cap = d['allocation'], d['capacity_bytes']
f = {a['tensor']: a['sensitivity'] for a in alloc}
assert f == {'blk.0.attn.weight': 0, 'blk.0.ffn.weight': 1e6, 'blk.1.attn.weight': 1, 'blk.1.ffn.weight': 1}, f
obj = lambda c: sum(f[a['tensor']] * o['estimated_error'] for a, o in zip(alloc, c))
picks = [[o for o in a['options'] if (o['format'], o['method']) == (a['format'], a['method'])][0] for a in alloc]
best = least(alloc, cap, lambda a, o: f[a['tensor']] * o['estimated_error'])
assert abs(obj(picks) - d['objective']) <= 1e-9 * d['objective'] and d['objective'] <= best * (1 + 1e-9)
assert d['estimated_error'] == sum(o['estimated_error'] for o in picks) and d['sensitivity'] == 'sensitivity'
a = {x['tensor']: x for x in alloc}
assert a['blk.0.attn.weight']['bytes'] == min(o['bytes'] for o in a['blk.0.attn.weight']['options'])
assert a['blk.0.ffn.weight']['estimated_error'] == min(o['estimated_error'] for o in a['blk.0.ffn.weight']['options'])
PY
run 0 "$bin/ninfer-convert" -r "$work/ck/r.yaml" -o "$work/o.ninfer" -n --json --sensitivity "$work/ck/sens.csv"
same "$work/sj.json" "$work/out"
recipe rk.yaml "{bits_per_weight: 6, sample_rows: 0, sensitivity: sens, $few}"
sed -i 's/^sources: {/sources: {sens: sens.json, /' "$work/ck/rk.yaml"
run 0 "$bin/ninfer-convert" -r "$work/ck/rk.yaml" -o "$work/o.ninfer" -n --json
check python3 -c "
import json
a, b = (json.load(open(f))['budget'] for f in ('$work/sj.json', '$work/out'))
assert b['sensitivity'] == 'sens' and a['allocation'] == b['allocation'] and a['objective'] == b['objective']"
run 0 "$bin/ninfer-convert" -r "$work/ck/rk.yaml" -o "$work/o.ninfer" -n
contains "$work/out" "sensitivity factors from source 'sens'"
contains "$work/out" "objective (each tensor's estimated error times its sensitivity)"
# --sensitivity replaces the recipe's file (as --source sens=FILE would)
printf '{}' >"$work/ck/none.json"
run 0 "$bin/ninfer-convert" -r "$work/ck/rk.yaml" -o "$work/o.ninfer" -n --json --sensitivity "$work/ck/none.json"
check python3 -c "
import json
d = json.load(open('$work/out'))['budget']
assert {a['sensitivity'] for a in d['allocation']} == {1} and d['objective'] == d['estimated_error']"
# the same artifact on any thread count, and its report
export SOURCE_DATE_EPOCH=1700000000
run 0 "$bin/ninfer-convert" -r "$work/ck/rk.yaml" -o "$work/k1.ninfer" --threads 1
run 0 "$bin/ninfer-convert" -r "$work/ck/rk.yaml" -o "$work/k3.ninfer" --threads 3 --chunk-values 100
same "$work/k1.ninfer" "$work/k3.ninfer"
unset SOURCE_DATE_EPOCH
# scale-out: the plan's tasks and assembler weigh by the same file (its command line replayed)
mkdir "$work/so" "$work/so1"
run 0 "$bin/ninfer-convert" "$work/ck" -o "$work/so/m.ninfer" --target-bpw 6 --sensitivity "$work/ck/sens.json" \
    --artifact-id 0123456789abcdef0123456789abcdef --plan-out "$work/so/plan.json"
run 0 "$bin/ninfer-convert" --plan "$work/so/plan.json" --task all
run 0 "$bin/ninfer-convert" --plan "$work/so/plan.json" --assemble --verify
run 0 "$bin/ninfer-convert" "$work/ck" -o "$work/so1/m.ninfer" --target-bpw 6 --sensitivity "$work/ck/sens.json" \
    --artifact-id 0123456789abcdef0123456789abcdef
same "$work/so/m.ninfer" "$work/so1/m.ninfer"
# refusals: exit 1 naming the file, the position and the tensor; nothing written
bad_sens() { # bad_sens FILE-TEXT MESSAGE
    printf "$1" >"$work/ck/bad.sens"
    run 1 "$bin/ninfer-convert" -r "$work/ck/r.yaml" -o "$work/no.ninfer" --sensitivity "$work/ck/bad.sens"
    contains "$work/err" "$work/ck/bad.sens:$2"
}
bad_sens '{"blk.0.attn.weight": 1,\n  "blk.9.nope": 2}' "2:3 (byte 27): tensor 'blk.9.nope': not a tensor of the checkpoint"
bad_sens 'blk.0.attn.weight,1\nblk.9.nope,2\n' "2:1 (byte 20): tensor 'blk.9.nope': not a tensor of the checkpoint"
bad_sens '{"blk.0.attn.weight": -1}' "1:23 (byte 22): tensor 'blk.0.attn.weight': factor -1 is negative: a factor is a number >= 0"
bad_sens 'blk.0.attn.weight, -0.5' "1:20 (byte 19): tensor 'blk.0.attn.weight': factor -0.5 is negative"
bad_sens '{"blk.0.attn.weight": NaN}' "1:23 (byte 22): tensor 'blk.0.attn.weight': factor NaN is not a finite number"
bad_sens 'blk.0.attn.weight,nan\n' "1:19 (byte 18): tensor 'blk.0.attn.weight': factor nan is not a finite number"
bad_sens 'blk.0.attn.weight,inf\n' "1:19 (byte 18): tensor 'blk.0.attn.weight': factor inf is not a finite number"
bad_sens '{"blk.0.attn.weight": 1e999}' "1:23 (byte 22): tensor 'blk.0.attn.weight': factor 1e999 is not a finite number"
bad_sens '{"blk.0.attn.weight": 1,\n"blk.0.attn.weight": 2}' "2:1 (byte 25): tensor 'blk.0.attn.weight': given twice (first at line 1): a tensor has one factor"
bad_sens 'blk.0.ffn.weight,1\nblk.0.ffn.weight,1\n' "2:1 (byte 19): tensor 'blk.0.ffn.weight': given twice (first at line 1)"
bad_sens '{"blk.0.attn.weight" 1}' "1:22 (byte 21): tensor 'blk.0.attn.weight': expected ':' after the name"
bad_sens '{"blk.0.attn.weight": 1,}' "1:25 (byte 24): expected a tensor name (a string)"
bad_sens '{"blk.0.attn.weight": "1"}' "1:23 (byte 22): tensor 'blk.0.attn.weight': expected a factor (a JSON number >= 0)"
bad_sens '{"blk.0.attn.weight": 1} x' "1:26 (byte 25): text after the JSON object"
bad_sens '{"blk.0.attn.weight": 1' "1:24 (byte 23): expected ',' or '}' after a factor"
bad_sens '[1, 2]' "1:1 (byte 0): expected a JSON object of tensor names and factors, not an array"
bad_sens 'blk.0.attn.weight 1\n' "1:1 (byte 0): expected NAME,FACTOR"
bad_sens 'blk.0.attn.weight,one\n' "1:19 (byte 18): tensor 'blk.0.attn.weight': expected a factor (a number >= 0), got 'one'"
bad_sens '"blk.0.attn.weight,1\n' "1:1 (byte 0): a quoted name is not closed on its line"
bad_sens '{"a\\x": 1}' "1:4 (byte 3): a bad escape in a string"
bad_sens '{"a\\ud800": 1}' "1:4 (byte 3): a lone surrogate escape in a string"
bad_sens '{"a\tb": 1}' "1:4 (byte 3): a control character in a string (escape it)"
# a text ending in a backslash inside a name (the reader once went round that byte for ever)
bad_sens '{"a\\' "1:2 (byte 1): a string is not closed"
[ ! -e "$work/no.ninfer" ] && ok || bad "a refused sensitivity file wrote an artifact"
run 3 "$bin/ninfer-convert" -r "$work/ck/r.yaml" -o "$work/no.ninfer" --sensitivity "$work/ck/no-such.json"
contains "$work/err" "$work/ck/no-such.json: cannot open: No such file or directory"
run 2 "$bin/ninfer-convert" "$work/ck" -o "$work/no.ninfer" --format q8_g32_fp16 --sensitivity "$work/ck/sens.json"
contains "$work/err" "--sensitivity weighs the tensors of a budget"
recipe r.yaml "{bits_per_weight: 6, sensitivity: nosuch}"
run 1 "$bin/ninfer-convert" -r "$work/ck/r.yaml" -o "$work/no.ninfer"
contains "$work/err" "r.yaml:4:43: budget.sensitivity: 'nosuch' is not a source of the recipe"
run 0 "$bin/ninfer-convert" "$work/ck" -o "$work/q.ninfer" --target-bpw 6 --sensitivity "$work/ck/sens.csv" -n --json
check python3 -c "
import json
d = json.load(open('$work/out'))['budget']
assert d['sensitivity'] == 'sensitivity' and {a['sensitivity'] for a in d['allocation']} == {0, 1e6, 1}"

# Refusals: a clear error naming the reachable range, nothing written.
refused() { # refused BUDGET-MAPPING TEXT...: the recipe with that budget fails (exit 1) saying each TEXT
    recipe r.yaml "$1"
    shift
    run 1 "$bin/ninfer-convert" -r "$work/ck/r.yaml" -o "$work/no.ninfer"
    for text in "$@"; do contains "$work/err" "$text"; done
}
refused "{bits_per_weight: 1}" "r.yaml:4:27: budget: 1 bits per weight is below what the candidates reach with the 4 tensors left to the budget: 2.0786 to 9.4714 bits per weight"
refused "{bits_per_weight: 12}" "budget: 12 bits per weight is above what the candidates reach"
refused "{bytes: 1000}" "budget: 1000 bytes is below what the candidates reach" "(the other tensor objects take 1024)"
[ ! -e "$work/no.ninfer" ] && [ ! -e "$work/no.ninfer.conversion.json" ] && ok || bad "a refused budget wrote something"
refused "{bits_per_weight: 5, bytes: 30000}" "both bits_per_weight and bytes are given"
refused "{sample_rows: 3}" "budget: missing the budget: bits_per_weight"
refused "{bits_per_weight: 5, imatrix: nosuch}" "budget.imatrix: 'nosuch' is not a source of the recipe"
recipe r.yaml "{bits_per_weight: 4.7358, formats: [q4_g64_fp16, nvfp4], methods: [grouped_absmax]}"
run 0 "$bin/ninfer-convert" -r "$work/ck/r.yaml" -o "$work/no.ninfer" -n --json
check python3 -c "
import json
d = json.load(open('$work/out'))['budget']
assert d['candidates'] == [{'format': 'q4_g64_fp16', 'method': 'grouped_absmax'}]"
printf 'recipe: 1\nsources: {base: .}\nrules:\n  - {match: "*", format: budget}\n' >"$work/ck/nb.yaml"
run 1 "$bin/ninfer-convert" -r "$work/ck/nb.yaml" -o "$work/no.ninfer"
contains "$work/err" "format 'budget' needs a \`budget:\` section"
printf 'recipe: 1\nsources: {base: .}\nbudget: {bits_per_weight: 5}\nrules:\n  - {match: "*", format: budget}\n' >"$work/ck/nv.yaml"
run 1 "$bin/ninfer-convert" -r "$work/ck/nv.yaml" -o "$work/no.ninfer"
contains "$work/err" "tensor 'norm.weight' (F32): is not a matrix"
printf 'recipe: 1\nsources: {base: .}\nbudget: {bits_per_weight: 5}\n' >"$work/ck/none.yaml"
run 1 "$bin/ninfer-convert" -r "$work/ck/none.yaml" -o "$work/no.ninfer"
contains "$work/err" "budget: no tensor is left to it"
# quick mode's refusals name the command line, not the recipe it writes
run 1 "$bin/ninfer-convert" "$work/ck" -o "$work/no.ninfer" --target-bpw 100
contains "$work/err" "quick mode (--target-bpw 100): 100 bits per weight is above what the candidates reach"
run 1 "$bin/ninfer-convert" "$work/ck" -o "$work/no.ninfer" --target-bpw 6 --rule '*=fp32'
contains "$work/err" "quick mode (--target-bpw 6): no tensor is left to it (no rank-2 floating-point tensor that a --rule does not pin)"
run 2 "$bin/ninfer-convert" "$work/ck" -o "$work/no.ninfer" --target-bpw 5 --format q4_g64_fp16
run 2 "$bin/ninfer-convert" "$work/ck" -o "$work/no.ninfer" --target-bpw -1
run 2 "$bin/ninfer-convert" "$work/ck" -o "$work/no.ninfer" --target-bpw 5 --requantize
[ ! -e "$work/no.ninfer" ] && ok || bad "a refusal wrote an artifact"

finish test_budget
