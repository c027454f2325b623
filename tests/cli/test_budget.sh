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

# check_allocation PLAN.json: the budget is met; no allocation within the capacity has less
# error (every combination of the options); no uniform candidate within it has less.
check_allocation() {
    python3 - "$1" <<'PY'
import itertools, json, sys
d = json.load(open(sys.argv[1]))['budget']
alloc, cap = d['allocation'], d['capacity_bytes']
used = sum(a['bytes'] for a in alloc)
assert used == d['used_bytes'] and used <= cap, (used, cap)
if 'bits_per_weight' in d['budget']:
    assert 8 * used <= d['budget']['bits_per_weight'] * d['elements'] + 1e-9
err = sum(a['estimated_error'] for a in alloc)
assert abs(err - d['estimated_error']) <= 1e-9 * err
best = min((sum(o['estimated_error'] for o in c) for c in itertools.product(*[a['options'] for a in alloc])
            if sum(o['bytes'] for o in c) <= cap))
assert err <= best * (1 + 1e-9), ('brute force', err, best)
assert d['optimal'] is True
for k in range(len(alloc[0]['options'])):
    u = [a['options'][k] for a in alloc]
    if sum(o['bytes'] for o in u) <= cap:
        assert err <= sum(o['estimated_error'] for o in u) * (1 + 1e-12), ('uniform', k)
for a in alloc:
    r = a['runner_up']
    assert r is None or (r['format'], r['method']) != (a['format'], a['method'])
print('ok', len(alloc), used, cap, err)
PY
}

# At budgets across the reachable range, with uniform weights and with the imatrix.
for b in 4.8 5 5.5 6 7 9.4; do
    recipe r.yaml "{bits_per_weight: $b, sample_rows: 0}"
    run 0 "$bin/ninfer-convert" -r "$work/ck/r.yaml" -o "$work/o.ninfer" --dry-run --json
    cp "$work/out" "$work/plan.json"
    check check_allocation "$work/plan.json"
    recipe ri.yaml "{bits_per_weight: $b, sample_rows: 0, imatrix: imatrix}"
    run 0 "$bin/ninfer-convert" -r "$work/ck/ri.yaml" -o "$work/o.ninfer" --dry-run --json
    check check_allocation "$work/out"
    check python3 -c "
import json
d = json.load(open('$work/out'))['budget']
assert d['weights'] == {'imatrix': 'imatrix'} and {a['weights'] for a in d['allocation']} == {'imatrix'}"
done
# a bytes budget counts every tensor object (the fp32 vector too)
recipe rb.yaml "{bytes: 26000, sample_rows: 0}"
run 0 "$bin/ninfer-convert" -r "$work/ck/rb.yaml" -o "$work/o.ninfer" --dry-run --json
check check_allocation "$work/out"
check python3 -c "import json,sys; d=json.load(open('$work/out'))['budget']; sys.exit(not d['tensor_bytes'] <= 26000 == d['budget']['bytes'])"
[ ! -e "$work/o.ninfer" ] && ok || bad "--dry-run wrote an artifact"

# The imatrix changes what is measured: its weights are the importance of the columns.
recipe r.yaml "{bits_per_weight: 5.5, sample_rows: 0}"
recipe ri.yaml "{bits_per_weight: 5.5, sample_rows: 0, imatrix: imatrix}"
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

# Sampling: at most sample_rows rows a tensor, said per tensor; the report has the exact figure.
recipe rs.yaml "{bits_per_weight: 5.5, sample_rows: 8}"
run 0 "$bin/ninfer-convert" -r "$work/ck/rs.yaml" -o "$work/s.ninfer"
run 0 "$bin/ninfer-convert" -r "$work/ck/rs.yaml" -o "$work/s.ninfer" -n
contains "$work/out" "8/48"
contains "$work/out" "measured on at most 8 rows a tensor, evenly spaced"
check python3 -c "
import json
r = json.load(open('$work/s.ninfer.conversion.json'))
b = [o['budget'] for o in r['objects'] if 'budget' in o]
assert all(x['rows_measured'] == 8 for x in b) and any(x['weighted_error'] != x['estimated_error'] for x in b)"

# Quick mode: --target-bpw in place of --format; the vector keeps its own format.
run 0 "$bin/ninfer-convert" "$work/ck" -o "$work/quick.ninfer" --target-bpw 6 --dry-run
contains "$work/out" "budget: 6 bits per weight"
contains "$work/out" "fp32         contiguous_le_v1"
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
cat >"$work/ck/sp.yaml" <<'Y'
recipe: 1
sources: {base: ., imatrix: imatrix.gguf}
defaults: {format: fp32}
budget: {bits_per_weight: 5.5, imatrix: imatrix, sample_rows: 16}
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
printf 'recipe: 1\nsources: {base: ., imatrix: imatrix.gguf}\ndefaults: {format: fp32}\nbudget: {bits_per_weight: 6, sample_rows: 0}\nrules:\n  - {match: "*", when: {rank: 2}, format: budget, with: {imatrix: imatrix}}\n' >"$work/ck/w.yaml"
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

# Refusals: a clear error naming the reachable range, nothing written.
refused() { # refused BUDGET-MAPPING TEXT...: the recipe with that budget fails (exit 1) saying each TEXT
    recipe r.yaml "$1"
    shift
    run 1 "$bin/ninfer-convert" -r "$work/ck/r.yaml" -o "$work/no.ninfer"
    for text in "$@"; do contains "$work/err" "$text"; done
}
refused "{bits_per_weight: 3}" "r.yaml:4:27: budget: 3 bits per weight is below what the candidates reach with the 4 tensors left to the budget: 4.7358 to 9.4714 bits per weight"
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
