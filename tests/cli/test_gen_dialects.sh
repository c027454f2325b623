#!/usr/bin/env bash
# ninfer-gen-checkpoint --dialect D (docs/dialects.md): for every dialect the checkpoint converts
# with --requantize and verifies against itself, --dry-run --json names the dialect of every
# projection; NVFP4, MXFP4, GPTQ, AWQ and compressed-tensors / ModelOpt FP8 import without
# --requantize, DeepSeek's
# blocks and packed int4 are refused without it; the values are the BF16 checkpoint's of the same
# arguments, within the dialect's rounding, and every other tensor is that checkpoint's exactly;
# the bytes are the same run after run and shard for shard; --gguf and --sparse are refused.
# usage: test_gen_dialects.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

gen="$bin/ninfer-gen-checkpoint"
dialects="deepseek_fp8 compressed_tensors_fp8 compressed_tensors_int compressed_tensors_nvfp4 modelopt_fp8 modelopt_nvfp4
    compressed_tensors_mxfp4 gptq awq"

# the unquantized checkpoints of the same arguments: the default sizes, and the NVFP4 defaults
run 0 "$gen" "$work/plain" --layers 1
run 0 "$gen" "$work/plain512" --layers 1 --hidden 512 --intermediate 1536
for c in plain plain512; do
    run 0 "$bin/ninfer-convert" "$work/$c" -o "$work/$c.f32.ninfer" --format fp32 --no-report
done

for d in $dialects; do
    ck="$work/$d"
    run 0 "$gen" "$ck" --dialect "$d" --layers 1
    contains "$work/out" "the projections as $d"
    # the declaration
    case $d in
    modelopt_*)
        contains "$ck/hf_quant_config.json" '"name": "modelopt"'
        lacks "$ck/config.json" "quantization_config" ;;
    *)
        contains "$ck/config.json" "quantization_config"
        check test ! -e "$ck/hf_quant_config.json" ;;
    esac
    # the same arguments, the same bytes
    run 0 "$gen" "$work/again" --dialect "$d" --layers 1
    for f in "$ck"/*; do same "$f" "$work/again/${f##*/}"; done
    rm -rf "$work/again"

    # requantized: converts, verifies against the checkpoint, the plan names the dialect
    run 0 "$bin/ninfer-convert" "$ck" -o "$work/$d.q8.ninfer" --format q8_g32_fp16 --requantize
    run 0 "$bin/ninfer-verify" "$work/$d.q8.ninfer" --against "$ck"
    contains "$work/out" "valid"
    run 0 "$bin/ninfer-convert" "$ck" -o "$work/x.ninfer" --format q8_g32_fp16 --requantize --dry-run --json
    python3 - "$work/out" "$d" requantized <<'PY' && ok || bad "$d: --dry-run --json --requantize"
import json, sys
objs = json.load(open(sys.argv[1]))['objects']
q = [o for o in objs if o.get('dialect')]
# 1 layer: q, k, v, o, gate, up, down
assert len(q) == 7, [o['id'] for o in q]
for o in q:
    assert o['dialect'].startswith(sys.argv[2] + ':'), o
    assert o['handling'] == sys.argv[3] and o['format'] == 'q8_g32_fp16', o
    assert '_proj.' in o['id'], o
# the embedding, norms and lm_head are plain BF16 tensors
plain = {o['id'] for o in objs if not o.get('dialect')}
assert {'model.embed_tokens.weight', 'lm_head.weight', 'model.norm.weight'} <= plain, plain
PY

    # without --requantize: imported where a format holds the words, else refused
    case $d in
    deepseek_fp8 | compressed_tensors_int)
        run 1 "$bin/ninfer-convert" "$ck" -o "$work/r/$d.ninfer" --format q8_g32_fp16
        contains "$work/err" "stored quantized"
        contains "$work/err" "$d"
        check test ! -e "$work/r" ;;
    *)
        run 0 "$bin/ninfer-convert" "$ck" -o "$work/$d.imp.ninfer" --format q8_g32_fp16
        run 0 "$bin/ninfer-verify" "$work/$d.imp.ninfer" --against "$ck"
        run 0 "$bin/ninfer-convert" "$ck" -o "$work/x.ninfer" --format q8_g32_fp16 --dry-run --json
        case $d in
        *nvfp4 | *mxfp4) want=nvfp4 ;;
        gptq) want=q4_g64_fp16 ;;
        awq) want=q5_g64_fp16 ;;
        *) want=fp8_e4m3fn_row_bf16 ;;
        esac
        python3 - "$work/out" "$d" "$want" <<'PY' && ok || bad "$d: imported"
import json, sys
q = [o for o in json.load(open(sys.argv[1]))['objects'] if o.get('dialect')]
assert len(q) == 7, q
for o in q:
    assert o['dialect'].startswith(sys.argv[2] + ':'), o
    assert o['handling'] == 'imported' and o['method'] == 'import_encoded' and o['format'] == sys.argv[3], o
PY
        ;;
    esac

    # the values: the BF16 checkpoint's within the dialect's rounding (FP8 E4M3: 3 mantissa bits;
    # int4 groups of 128: half a step of amax / 7; NVFP4: E2M1 under E4M3 block scales), and the
    # other tensors exactly that checkpoint's
    run 0 "$bin/ninfer-convert" "$ck" -o "$work/$d.f32.ninfer" --format fp32 --requantize --no-report
    case $d in *nvfp4 | *mxfp4 | gptq | awq) base=plain512 ;; *) base=plain ;; esac
    case $d in
    compressed_tensors_int | compressed_tensors_nvfp4 | compressed_tensors_mxfp4) codes=weight_packed ;;
    gptq | awq) codes=qweight ;;
    *) codes=weight ;;
    esac
    for p in self_attn.q_proj self_attn.k_proj mlp.down_proj; do
        run 0 "$bin/ninfer-dequant" "$work/$d.f32.ninfer" "model.layers.0.$p.$codes" -o "$work/q.f32"
        run 0 "$bin/ninfer-dequant" "$work/$base.f32.ninfer" "model.layers.0.$p.weight" -o "$work/b.f32"
        python3 - "$work/q.f32" "$work/b.f32" "$d" <<'PY' && ok || bad "$d $p: values"
import math, struct, sys
q, b = (open(f, 'rb').read() for f in sys.argv[1:3])
assert len(q) == len(b), (len(q), len(b))
q = struct.unpack('<%df' % (len(q) // 4), q)
b = struct.unpack('<%df' % (len(b) // 4), b)
amax = max(abs(x) for x in b)
err = max(abs(x - y) for x, y in zip(q, b))
snr = 10 * math.log10(sum(y * y for y in b) / sum((x - y) ** 2 for x, y in zip(q, b)))
# (MXFP4: a power-of-two scale 2^e under a block amax of at least 2^(e+2) errs by at most 2^(e+1))
bound, floor = {'compressed_tensors_int': (1 / 14 + 1e-3, 15), 'compressed_tensors_nvfp4': (0.06, 18),
                'modelopt_nvfp4': (0.06, 18), 'gptq': (1 / 14 + 1e-3, 15), 'awq': (1 / 14 + 1e-3, 15),
                'compressed_tensors_mxfp4': (0.5, 15)}.get(sys.argv[3], (1 / 16 + 1e-3, 28))
assert err <= bound * amax and snr >= floor, (err / amax, snr)
PY
    done
    for t in model.embed_tokens.weight model.layers.0.input_layernorm.weight model.norm.weight lm_head.weight; do
        run 0 "$bin/ninfer-dequant" "$work/$d.f32.ninfer" "$t" -o "$work/q.f32"
        run 0 "$bin/ninfer-dequant" "$work/$base.f32.ninfer" "$t" -o "$work/b.f32"
        same "$work/q.f32" "$work/b.f32"
    done
done

# experts and shards: the experts quantized, the router not; the values the same in any number of
# shards (companions may sit in another shard than their weight)
for d in deepseek_fp8 compressed_tensors_int modelopt_nvfp4; do
    run 0 "$gen" "$work/e1" --dialect "$d" --layers 1 --experts 2 --seed 7
    run 0 "$gen" "$work/e3" --dialect "$d" --layers 1 --experts 2 --seed 7 --shards 3
    check test -f "$work/e3/model-00003-of-00003.safetensors"
    check test -f "$work/e3/model.safetensors.index.json"
    run 0 "$bin/ninfer-convert" "$work/e1" -o "$work/e1.ninfer" --format fp32 --requantize --no-report --force
    run 0 "$bin/ninfer-convert" "$work/e3" -o "$work/e3.ninfer" --format fp32 --requantize --no-report --force
    run 0 "$bin/ninfer-verify" "$work/e3.ninfer" --against "$work/e3"
    run 0 "$bin/ninfer-convert" "$work/e3" -o "$work/x.ninfer" --format q4_g64_fp16 --requantize --dry-run --json
    python3 - "$work/out" "$d" <<'PY' && ok || bad "$d: experts"
import json, sys
objs = {o['id']: o for o in json.load(open(sys.argv[1]))['objects']}
q = [i for i, o in objs.items() if o.get('dialect')]
assert len(q) == 4 + 2 * 3, q  # attention and two experts' gate/up/down
assert all('.mlp.experts.' in i or '.self_attn.' in i for i in q), q
assert not objs['model.layers.0.mlp.gate.weight'].get('dialect'), objs['model.layers.0.mlp.gate.weight']
PY
    case $d in compressed_tensors_int) codes=weight_packed ;; *) codes=weight ;; esac
    for t in "model.layers.0.mlp.experts.1.down_proj.$codes" model.layers.0.mlp.gate.weight lm_head.weight; do
        run 0 "$bin/ninfer-dequant" "$work/e1.ninfer" "$t" -o "$work/1.f32"
        run 0 "$bin/ninfer-dequant" "$work/e3.ninfer" "$t" -o "$work/3.f32"
        same "$work/1.f32" "$work/3.f32"
    done
    rm -rf "$work/e1" "$work/e3"
done

# the NVFP4 defaults fit nvfp4; sizes that do not fit are said so, K not a multiple of 16 is refused
run 0 "$gen" "$work/n256" --dialect compressed_tensors_nvfp4 --layers 1 --hidden 256
contains "$work/err" "--requantize"
run 1 "$bin/ninfer-convert" "$work/n256" -o "$work/r/n.ninfer" --format q4_g64_fp16
contains "$work/err" "k_proj"
run 0 "$bin/ninfer-convert" "$work/n256" -o "$work/n256.ninfer" --format q4_g64_fp16 --requantize
run 2 "$gen" "$work/bad" --dialect modelopt_nvfp4 --hidden 200
contains "$work/err" "multiples of 16"

# usage errors (exit 2), nothing written
run 2 "$gen" "$work/bad" --dialect deepseek_fp8 --gguf
contains "$work/err" "--gguf"
run 2 "$gen" "$work/bad" --dialect deepseek_fp8 --sparse
contains "$work/err" "--sparse"
run 2 "$gen" "$work/bad" --dialect exl2
contains "$work/err" "'exl2'"
run 2 "$gen" "$work/bad" --dialect gptq --hidden 200
contains "$work/err" "multiples of 128"
run 2 "$gen" "$work/bad" --dialect
check test ! -e "$work/bad"
run 0 "$gen" --help
contains "$work/out" "--dialect D"
for d in $dialects; do contains "$work/out" "$d"; done

# without --dialect the output is what it always was: the documented default checkpoint
run 0 "$gen" "$work/d1"
contains "$work/out" "bytes of bf16 weights"
lacks "$work/d1/config.json" "quantization_config"

finish gen_dialects
