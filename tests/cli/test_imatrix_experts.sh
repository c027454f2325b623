#!/usr/bin/env bash
# A mixture of experts' imatrix as llama.cpp writes it (ninfer/imatrix.h, docs/methods.md
# "Importance"): one vector per expert (T.in_sum2 [K, E], T.counts [1, E]) weighs expert E's
# matrix the same whether it is a GGUF stack (blk.N.ffn_down_exps.weight [E, R, K]), a Hugging
# Face expert of its own (model.layers.N.mlp.experts.E.down_proj.weight) or a Hugging Face stack;
# the legacy .dat file gives the same words; a count of 0 weighs every column 1; T.in_sum is
# ignored (named with -v); the budget's measuring pass uses the per-expert vectors.
# usage: test_imatrix_experts.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

m="$work/m"
python3 "$top/tests/cli/gen_imatrix_experts.py" "$m" || { bad "gen_imatrix_experts.py failed"; finish imatrix_experts; exit 1; }

# convert SOURCE IMATRIX OUT: every tensor q4 by grouped_search weighed by IMATRIX ("" for none)
convert() {
    if [ -n "$2" ]; then
        printf 'recipe: 1\nsources: {base: %s, imatrix: %s}\ndefaults: {format: fp32}\nrules:\n  - {match: "*", format: q4_g64_fp16, method: grouped_search, with: {imatrix: imatrix}}\n' \
            "$1" "$2" >"$work/r.yaml"
    else
        printf 'recipe: 1\nsources: {base: %s}\ndefaults: {format: fp32}\nrules:\n  - {match: "*", format: q4_g64_fp16, method: grouped_search}\n' \
            "$1" >"$work/r.yaml"
    fi
    run 0 "$bin/ninfer-convert" --recipe "$work/r.yaml" -o "$3" --force --threads 2 --chunk-values 2560 "${@:4}"
}
values() { run 0 "$bin/ninfer-dequant" "$1" "$2" -o "$3"; }

# the GGUF stack, weighed per expert (chunks of 10 rows: some hold rows of both experts)
convert "$m/moe.gguf" "$m/imatrix.gguf" "$work/a.ninfer" -v
contains "$work/err" "imatrix 'imatrix': ignoring tensor 'blk.0.ffn_down_exps.weight.in_sum'"
values "$work/a.ninfer" blk.0.ffn_down_exps.weight "$work/a.f32"
values "$work/a.ninfer" blk.0.attn_q.weight "$work/aq.f32"
# the Hugging Face experts, each finding its slice of the stack's entry
convert "$m/hf" "$m/imatrix.gguf" "$work/b.ninfer"
values "$work/b.ninfer" model.layers.0.mlp.experts.0.down_proj.weight "$work/b0.f32"
values "$work/b.ninfer" model.layers.0.mlp.experts.1.down_proj.weight "$work/b1.f32"
values "$work/b.ninfer" model.layers.0.self_attn.q_proj.weight "$work/bq.f32"
cat "$work/b0.f32" "$work/b1.f32" >"$work/b.f32"
same "$work/b.f32" "$work/a.f32"
same "$work/bq.f32" "$work/aq.f32"
# the Hugging Face stack, found through llama.cpp's name
convert "$m/stack" "$m/imatrix.gguf" "$work/c.ninfer"
values "$work/c.ninfer" model.layers.0.mlp.experts.down_proj "$work/c.f32"
same "$work/c.f32" "$work/a.f32"
# the legacy file
convert "$m/moe.gguf" "$m/imatrix.dat" "$work/d.ninfer"
values "$work/d.ninfer" blk.0.ffn_down_exps.weight "$work/d.f32"
same "$work/d.f32" "$work/a.f32"
# without the imatrix the words differ (the comparisons above can fail)
convert "$m/moe.gguf" "" "$work/e.ninfer"
values "$work/e.ninfer" blk.0.ffn_down_exps.weight "$work/e.f32"
check test "$(cmp -s "$work/e.f32" "$work/a.f32" && echo same)" != same
# a count of 0: expert 1 weighs every column 1, which is no importance at all
convert "$m/hf" "$m/zero.gguf" "$work/z.ninfer"
values "$work/z.ninfer" model.layers.0.mlp.experts.1.down_proj.weight "$work/z1.f32"
convert "$m/hf" "" "$work/n.ninfer"
values "$work/n.ninfer" model.layers.0.mlp.experts.1.down_proj.weight "$work/n1.f32"
same "$work/z1.f32" "$work/n1.f32"
values "$work/z.ninfer" model.layers.0.mlp.experts.0.down_proj.weight "$work/z0.f32"
same "$work/z0.f32" "$work/b0.f32"

# ggml_quantize into a k-quant, as llama-quantize uses a MoE imatrix: the stack's words are the
# experts' own (the stack is one object [E*R, K], cut at the expert boundary inside a chunk)
for src in moe.gguf hf; do
    printf 'recipe: 1\nsources: {base: %s, imatrix: %s}\ndefaults: {format: fp32}\nrules:\n  - {match: "*", format: gguf_q4_k, method: ggml_quantize, with: {imatrix: imatrix}}\n' \
        "$m/$src" "$m/imatrix.gguf" >"$work/k.yaml"
    run 0 "$bin/ninfer-convert" --recipe "$work/k.yaml" -o "$work/k.$src.ninfer" --threads 2 --chunk-values 2560
done
values "$work/k.moe.gguf.ninfer" blk.0.ffn_down_exps.weight "$work/k.f32"
values "$work/k.hf.ninfer" model.layers.0.mlp.experts.0.down_proj.weight "$work/k0.f32"
values "$work/k.hf.ninfer" model.layers.0.mlp.experts.1.down_proj.weight "$work/k1.f32"
cat "$work/k0.f32" "$work/k1.f32" >"$work/kh.f32"
same "$work/kh.f32" "$work/k.f32"

# the budget weighs the stack's rows by their experts' vectors: the weighted error of the stack is
# the experts' errors summed (both get grouped_search into q4, whose words are the same, above)
for src in moe.gguf hf; do
    printf 'recipe: 1\nsources: {base: %s, imatrix: %s}\ndefaults: {format: fp32}\nbudget: {bits_per_weight: 4.25, imatrix: imatrix, formats: [q4_g64_fp16], methods: [grouped_search]}\nrules:\n  - {match: "*", format: budget}\n' \
        "$m/$src" "$m/imatrix.gguf" >"$work/b.yaml"
    run 0 "$bin/ninfer-convert" --recipe "$work/b.yaml" -o "$work/bud.$src.ninfer" --threads 2
done
python3 - "$work/bud.moe.gguf.ninfer.conversion.json" "$work/bud.hf.ninfer.conversion.json" <<'PY' && ok || bad "budget: the stack weighed per expert"
import json, sys
a = {o['object']: o for o in json.load(open(sys.argv[1]))['objects']}
b = {o['object']: o for o in json.load(open(sys.argv[2]))['objects']}
s = a['blk.0.ffn_down_exps.weight']
assert s['format'] == 'q4_g64_fp16' and s['budget']['weights'] == 'imatrix', s
e = [b['model.layers.0.mlp.experts.%d.down_proj.weight' % i]['budget']['weighted_error'] for i in (0, 1)]
assert abs(s['budget']['weighted_error'] - sum(e)) <= 1e-9 * sum(e), (s['budget'], e)
PY

# ---------------------------------------------------------------- refusals
# counts that disagree with the sums: three counts for two rows of sums
python3 -c "
import sys; sys.path.insert(0, '$top/tests/cli'); import gen_imatrix_experts as g
g.gguf('$work/bad.gguf', [('blk.0.ffn_down_exps.weight.in_sum2', [256, 2], [1.0] * 512),
                          ('blk.0.ffn_down_exps.weight.counts', [3], [1.0, 1.0, 1.0])])
g.gguf('$work/wrong.gguf', [('blk.0.ffn_down_exps.weight.in_sum2', [256, 3], [1.0] * 768),
                            ('blk.0.ffn_down_exps.weight.counts', [1, 3], [1.0, 1.0, 1.0])])"
printf 'recipe: 1\nsources: {base: %s, imatrix: %s}\ndefaults: {format: fp32}\nrules:\n  - {match: "*", format: q4_g64_fp16, method: grouped_search, with: {imatrix: imatrix}}\n' \
    "$m/moe.gguf" "$work/bad.gguf" >"$work/x.yaml"
run 1 "$bin/ninfer-convert" --recipe "$work/x.yaml" -o "$work/x2.ninfer"
contains "$work/err" "bad.gguf: 'blk.0.ffn_down_exps.weight.counts' holds 3 values; expected 2"
check test ! -e "$work/x2.ninfer"
# an entry of three experts for a stack of two
printf 'recipe: 1\nsources: {base: %s, imatrix: %s}\ndefaults: {format: fp32}\nrules:\n  - {match: "*", format: q4_g64_fp16, method: grouped_search, with: {imatrix: imatrix}}\n' \
    "$m/moe.gguf" "$work/wrong.gguf" >"$work/w.yaml"
run 1 "$bin/ninfer-convert" --recipe "$work/w.yaml" -o "$work/x3.ninfer"
contains "$work/err" "imatrix entry 'blk.0.ffn_down_exps.weight' holds 768 values (3 experts); tensor 'blk.0.ffn_down_exps.weight' stacks 2 matrices"

finish imatrix_experts
