#!/usr/bin/env bash
# make quality: bits per weight against error on the bench checkpoint (docs/methods.md, *Quality
# per bit*; not part of make test).  On bench/run.sh's generated checkpoint (one Llama-7B layer:
# q/k/v/o [4096,4096], gate/up [11008,4096], down [4096,11008], vocab 8; BF16), each row converts
# every rank-2 tensor and prints its bits per weight (the matrices' bytes x 8 / their values) and
# its SNR in dB over all matrices, 10 log10(sum x^2 / sum (x - y)^2), from the conversion report:
#   uniform  every candidate the budget has (budget.candidates of a --dry-run: every format the
#            methods quantize into, so a format or method added to the registry gets its row);
#   preset   llama-quantize's Q2_K, Q3_K_M, Q4_K_M, Q5_K_M and Q6_K mixes for this shape, by
#            ggml_quantize (llama-quant.cpp's rules for one layer, n_gqa 1: see mix_rules);
#   budget   --target-bpw at each size (default: the presets' bits per weight, then QUALITY_LOW's
#            sizes below Q2_K, default "2.5 1.8"), and the check that its SNR is at least that of
#            every uniform or preset row of at most its size.
# Then the same with an importance matrix (tests/cli/gen_imatrix.py: column i of every matrix weighs
# 1 + (i mod 7), counts 3) for the rows whose encoders take one (grouped_search, ggml_quantize,
# the presets and the budget): the encoders and the budget's error use it; the SNR stays unweighted.
# usage: bench/quality.sh [BIN_DIR [BPW...]]
#   QUALITY_IMATRIX=0: without the imatrix half, =only: only it; QUALITY_ROWS: the kinds of row
#   (default "uniform preset budget"); QUALITY_THREADS: --threads (default: all cores);
#   QUALITY_SHAPE: ninfer-gen-checkpoint's shape options (default the bench's); QUALITY_LOW: the
#   budget's sizes below the presets (default "2.5 1.8"; "" for none).
set -euo pipefail
bin=${1:-build/bin}
[ $# -gt 0 ] && shift
here=$(cd "$(dirname "$0")/.." && pwd)
threads=(${QUALITY_THREADS:+--threads "$QUALITY_THREADS"}) # none: the program's default (every core)
if [ -d /dev/shm ] && [ -w /dev/shm ]; then tmpd=/dev/shm; else tmpd=${TMPDIR:-/tmp}; fi
tmp=$(mktemp -d "$tmpd/ninfer-quality.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

H=4096 I=11008 L=1
shape=${QUALITY_SHAPE:-"--hidden $H --kv-hidden $H --intermediate $I --layers $L --vocab 8"}
# shellcheck disable=SC2086
"$bin/ninfer-gen-checkpoint" "$tmp/ck" $shape >/dev/null
hid=$(python3 -c "import json; print(json.load(open('$tmp/ck/config.json'))['hidden_size'])")
inter=$(python3 -c "import json; print(json.load(open('$tmp/ck/config.json'))['intermediate_size'])")
layers=$(python3 -c "import json; print(json.load(open('$tmp/ck/config.json'))['num_hidden_layers'])")
python3 "$here/tests/cli/gen_imatrix.py" "$tmp/imatrix.gguf" "$hid" "$inter" "$layers" 7 3

# One conversion: its report's bits per weight and SNR over the rank-2 objects, as "BPW SNR".
figures() {
    python3 - "$1" <<'PY'
import json, math, sys
r = json.load(open(sys.argv[1]))
b = n = e2 = x2 = 0
for o in r['objects']:
    if len(o.get('shape', [])) != 2:
        continue
    b += o['bytes']; n += o['values_compared']
    e = o['rmse'] ** 2 * o['values_compared']
    e2 += e
    x2 += e * 10 ** (o['snr_db'] / 10) if o['snr_db'] is not None else 0
print('%.4f %.2f' % (8 * b / n, 10 * math.log10(x2 / e2)))
PY
}
convert() { # convert RECIPE -> prints "BPW SNR"
    "$bin/ninfer-convert" -r "$1" -o "$tmp/out.ninfer" --force -q "${threads[@]}"
    figures "$tmp/out.ninfer.conversion.json"
}
plan_bpw() { # plan_bpw RECIPE: the matrices' bits per weight of its plan, without converting
    "$bin/ninfer-convert" -r "$1" -o "$tmp/out.ninfer" -n --json | python3 -c "
import json, sys
o = [o for o in json.load(sys.stdin)['objects'] if len(o.get('shape', [])) == 2]
print('%.4f' % (8 * sum(x['bytes'] for x in o) / sum(x['shape'][0] * x['shape'][1] for x in o)))"
}
header() { # header IMATRIX(0/1)
    printf 'recipe: 1\nsources: {base: %s' "$tmp/ck"
    [ "$1" = 1 ] && printf ', imatrix: %s' "$tmp/imatrix.gguf"
    printf '}\ndefaults: {format: bf16}\n'
}
with() { [ "$1" = 1 ] && case $2 in grouped_search | ggml_quantize | nvfp4_search) printf ', with: {imatrix: imatrix}' ;; esac; true; }

# llama-quantize's type of each tensor for a mix (llama-quant.cpp, llama_tensor_get_type, one
# layer, n_gqa 1, n_expert 0): output Q6_K; attn_v Q3_K (Q2_K), Q5_K (Q3_K_M), Q6_K (Q4_K_M,
# Q5_K_M: use_more_bits(0, 1)); attn_output Q3_K (Q2_K), Q4_K (Q3_K_M); ffn_down Q3_K (Q2_K),
# Q4_K (Q3_K_M), Q6_K (Q4_K_M, Q5_K_M); the rest the mix's base type.
mix_rules() { # mix_rules MIX IMATRIX
    local base v o d
    case $1 in
    Q2_K) base=q2_k v=q3_k o=q3_k d=q3_k ;;
    Q3_K_M) base=q3_k v=q5_k o=q4_k d=q4_k ;;
    Q4_K_M) base=q4_k v=q6_k o=q4_k d=q6_k ;;
    Q5_K_M) base=q5_k v=q6_k o=q5_k d=q6_k ;;
    Q6_K) base=q6_k v=q6_k o=q6_k d=q6_k ;;
    esac
    printf 'rules:\n'
    local m=ggml_quantize w
    w=$(with "$2" $m)
    printf '  - {match: "*", when: {rank: 2}, format: gguf_%s, method: %s%s}\n' $base $m "$w"
    printf '  - {match: "*v_proj.weight", format: gguf_%s, method: %s%s}\n' $v $m "$w"
    printf '  - {match: "*o_proj.weight", format: gguf_%s, method: %s%s}\n' $o $m "$w"
    printf '  - {match: "*down_proj.weight", format: gguf_%s, method: %s%s}\n' $d $m "$w"
    printf '  - {match: "lm_head.weight", format: gguf_q6_k, method: %s%s}\n' $m "$w"
}

echo "quality per bit: $(python3 -c "import json; c=json.load(open('$tmp/ck/config.json')); print('hidden %d, intermediate %d, %d layer(s), vocab %d' % (c['hidden_size'], c['intermediate_size'], c['num_hidden_layers'], c['vocab_size']))"), BF16; SNR over all matrices"
echo "machine: $(nproc) cores, $(awk -F: '/model name/ {print $2; exit}' /proc/cpuinfo | sed 's/^ *//'); load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
# the candidates: the budget's, from the registry
"$bin/ninfer-convert" "$tmp/ck" -o "$tmp/x.ninfer" --target-bpw 8 -n --json >"$tmp/cands.json"
cands=$(python3 -c "import json; [print(c['format'], c['method']) for c in json.load(open('$tmp/cands.json'))['budget']['candidates']]")
mixes="Q2_K Q3_K_M Q4_K_M Q5_K_M Q6_K"
rows=" ${QUALITY_ROWS:-uniform preset budget} "
for im in 0 1; do
    [ "$im" = 0 ] && [ "${QUALITY_IMATRIX:-1}" = only ] && continue
    [ "$im" = 1 ] && [ "${QUALITY_IMATRIX:-1}" = 0 ] && break
    [ "$im" = 1 ] && echo && echo "with the imatrix (encoders and the budget's error weighted by it):"
    printf '%-8s %-36s %8s %8s  %s\n' row allocation bpw snr_db check
    : >"$tmp/rows"
    while read -r f m; do
        case $rows in *" uniform "*) ;; *) continue ;; esac
        [ "$im" = 1 ] && case $m in grouped_search | ggml_quantize | nvfp4_search) ;; *) continue ;; esac
        # ggml quantizes these only with an importance matrix (ggml_quantize_requires_imatrix)
        [ "$im" = 0 ] && case $f in gguf_iq2_xxs | gguf_iq2_xs | gguf_iq1_s) continue ;; esac
        { header "$im"; printf 'rules:\n  - {match: "*", when: {rank: 2}, format: %s, method: %s%s}\n' "$f" "$m" "$(with "$im" "$m")"
          # nvfp4's tiles need 128 rows, and ggml quantizes IQ2_XXS, IQ2_XS and IQ1_S only with an
          # importance vector, which the imatrix has for the layers' matrices only: the [8, hidden]
          # embedding and output stay q8 there (0.03 %% of the weights)
          if case $f in nvfp4 | gguf_iq2_xxs | gguf_iq2_xs | gguf_iq1_s) true ;; *) false ;; esac then printf '  - {match: [model.embed_tokens.weight, lm_head.weight], format: q8_g32_fp16, method: grouped_absmax, with: {}}\n'; fi
        } >"$tmp/r.yaml"
        read -r bpw snr < <(convert "$tmp/r.yaml")
        printf '%-8s %-36s %8s %8s\n' uniform "$f $m" "$bpw" "$snr"
        echo "$bpw $snr" >>"$tmp/rows"
    done <<<"$cands"
    sizes=("$@")
    for mix in $mixes; do
        { header "$im"; mix_rules "$mix" "$im"; } >"$tmp/r.yaml"
        if [[ $rows != *" preset "* ]]; then # only the mix's size, from the plan
            [ $# -eq 0 ] && sizes+=("$(plan_bpw "$tmp/r.yaml")")
            continue
        fi
        read -r bpw snr < <(convert "$tmp/r.yaml")
        [ $# -eq 0 ] && sizes+=("$bpw")
        printf '%-8s %-36s %8s %8s\n' preset "llama-quantize $mix" "$bpw" "$snr"
        echo "$bpw $snr" >>"$tmp/rows"
    done
    # below Q2_K: the low end (IQ2_XS / IQ2_M mixes' ~2.3-2.7 bits, and ~1.8)
    [ $# -eq 0 ] && read -r -a low <<<"${QUALITY_LOW:-2.5 1.8}" && sizes+=("${low[@]}")
    for x in "${sizes[@]}"; do
        case $rows in *" budget "*) ;; *) continue ;; esac
        { header "$im"; printf 'budget: {bits_per_weight: %s' "$x"; [ "$im" = 1 ] && printf ', imatrix: imatrix'
          printf '}\nrules:\n  - {match: "*", when: {rank: 2}, format: budget}\n'; } >"$tmp/r.yaml"
        read -r bpw snr < <(convert "$tmp/r.yaml")
        alloc=$(python3 -c "
import collections, json
r = json.load(open('$tmp/out.ninfer.conversion.json'))
c = collections.Counter(o['format'].replace('gguf_', '') + ('s' if o['method'] == 'grouped_search' else '') for o in r['objects'] if o.get('budget'))
print(' '.join('%s:%d' % kv for kv in sorted(c.items())))")
        # the best row of at most the size asked: the budget must be at least as good
        check=$(awk -v b="$x" -v s="$snr" '$1 <= b && $2 > best { best = $2 } END { if (best == "") print "ok (no row as small)"; else if (s >= best) printf "ok (best row <= size: %.2f)\n", best; else printf "WORSE than %.2f\n", best }' "$tmp/rows")
        printf '%-8s %-36s %8s %8s  %s\n' budget "$x: $alloc" "$bpw" "$snr" "$check"
    done
done
