#!/usr/bin/env python3
"""Small quantized checkpoints of the producers ninfer-tools does not read yet (and of GPTQ, AWQ,
MLX, MXFP4 and bitsandbytes, read now), laid out as each producer writes them: the file names, the declaration files and
keys, the tensor names, dtypes and shapes (docs/dialects.md, "Quantized checkpoints not read
yet").  The codes and scales are filler bytes: only the layout matters, since every refused one
must be refused before anything is read (the values of the ones read are gen_packed.py's tests;
MXFP4's E8M0 filler stays in 2^-7..2^7).

    python3 tests/cli/gen_quantized.py OUT_DIR

writes OUT_DIR/<case>/ (a checkpoint directory; gpt-oss's original layout is <case>/original/)
and OUT_DIR/cases.tsv, one line per case, tab-separated: the case, the checkpoint path relative
to OUT_DIR, then the substrings the refusal must hold (the file, the key or tensor, the format
and how it was recognised); OUT_DIR/read.tsv the cases read now, which convert: the case, the
path, the dialect and the number of quantized weights.  Nothing is random: the same script gives the same bytes.
"""
import json
import os
import struct
import sys

ITEM = {'BOOL': 1, 'U8': 1, 'I8': 1, 'F8_E4M3': 1, 'I16': 2, 'U16': 2, 'F16': 2, 'BF16': 2, 'I32': 4, 'U32': 4,
        'F32': 4, 'I64': 8}

# the model every case quantizes: a one-layer Llama (hidden 256, MLP 512, vocabulary 64)
H, I, V, G = 256, 512, 64, 128
LINEARS = [('self_attn.q_proj', H, H), ('self_attn.k_proj', H, H), ('self_attn.v_proj', H, H),
           ('self_attn.o_proj', H, H), ('mlp.gate_proj', I, H), ('mlp.up_proj', I, H), ('mlp.down_proj', H, I)]
LLAMA = {'architectures': ['LlamaForCausalLM'], 'model_type': 'llama', 'hidden_size': H, 'intermediate_size': I,
         'num_hidden_layers': 1, 'num_attention_heads': 4, 'num_key_value_heads': 4, 'vocab_size': V,
         'rms_norm_eps': 1e-5, 'torch_dtype': 'float16'}


def filler(n, seed):
    """n deterministic bytes."""
    out, x = bytearray(n), seed * 2654435761 % 2**32 or 1
    for i in range(n):
        x = (x * 1103515245 + 12345) % 2**31
        out[i] = (x >> 16) & 0xFF
    return bytes(out)


def half_ones(n):
    return struct.pack('<%dH' % n, *[0x3C00] * n)  # F16 1.0 (norms, scales: finite filler)


def t(name, dtype, shape, data=None):
    n = ITEM[dtype]
    for d in shape:
        n *= d
    if data is None:
        data = half_ones(n // 2) if dtype in ('F16', 'BF16') else filler(n, len(name))
    assert len(data) == n, (name, len(data), n)
    return (name, dtype, list(shape), data)


def st_bytes(tensors, metadata=None):
    """a safetensors file as the safetensors library writes it: data sorted by alignment
    (largest item first) then name, the header in the same order, padded to 8 bytes."""
    tensors = sorted(tensors, key=lambda x: (-ITEM[x[1]], x[0]))
    hdr, data = {'__metadata__': metadata or {'format': 'pt'}}, b''
    for name, dtype, shape, raw in tensors:
        hdr[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(hdr, separators=(',', ':')).encode()
    h += b' ' * (-len(h) % 8)
    return struct.pack('<Q', len(h)) + h + data


def write(d, files):
    os.makedirs(d, exist_ok=True)
    for name, content in files.items():
        with open(os.path.join(d, name), 'wb') as f:
            f.write(content if isinstance(content, bytes) else json.dumps(content, indent=2).encode())


def plain(dtype='F16'):
    """the tensors no producer quantizes: embeddings, norms, lm_head."""
    return [t('model.embed_tokens.weight', dtype, [V, H]), t('model.norm.weight', dtype, [H]),
            t('model.layers.0.input_layernorm.weight', dtype, [H]),
            t('model.layers.0.post_attention_layernorm.weight', dtype, [H]), t('lm_head.weight', dtype, [V, H])]


def gptq(p, n, k):
    # AutoGPTQ QuantLinear (4-bit, group 128): qweight packs 8 codes of K per int32 [K/8, N]
    return [t(p + '.qweight', 'I32', [k // 8, n]), t(p + '.qzeros', 'I32', [k // G, n // 8]),
            t(p + '.scales', 'F16', [k // G, n]), t(p + '.g_idx', 'I32', [k], struct.pack('<%di' % k, *[
                c // G for c in range(k)]))]


def awq(p, n, k):
    # AutoAWQ WQLinear_GEMM: qweight packs 8 codes of N per int32 [K, N/8]; no g_idx
    return [t(p + '.qweight', 'I32', [k, n // 8]), t(p + '.qzeros', 'I32', [k // G, n // 8]),
            t(p + '.scales', 'F16', [k // G, n])]


def exl2(p, n, k):
    # exllamav2 (4.0 bits, groups of 128): q_weight [K*4/32, N], q_scale 4-bit packed [K/G, N/8]
    gs = k // G
    return [t(p + '.q_weight', 'I32', [k * 4 // 32, n]), t(p + '.q_invperm', 'I16', [k]),
            t(p + '.q_scale', 'I32', [gs, n // 8]), t(p + '.q_scale_max', 'F16', [gs]),
            t(p + '.q_groups', 'I16', [2 * gs])]


def mlx(p, n, k, bits=4, g=64):
    # mlx-lm affine: codes packed in U32 [N, K*bits/32], scales and biases [N, K/g]
    return [t(p + '.weight', 'U32', [n, k * bits // 32]), t(p + '.scales', 'BF16', [n, k // g]),
            t(p + '.biases', 'BF16', [n, k // g])]


def bnb4(p, n, k):
    # bitsandbytes Params4bit as transformers serializes it: the packed U8 weight [N*K/2, 1],
    # its blockwise absmax (blocks of 64), the NF4 code book and the quant state as JSON bytes
    state = json.dumps({'quant_type': 'nf4', 'blocksize': 64, 'dtype': 'bfloat16', 'shape': [n, k]}).encode()
    nf4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
           -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
           0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0]
    return [t(p + '.weight', 'U8', [n * k // 2, 1]),
            t(p + '.weight.absmax', 'F32', [n * k // 64], struct.pack('<%df' % (n * k // 64), *[0.01] * (n * k // 64))),
            t(p + '.weight.quant_map', 'F32', [16], struct.pack('<16f', *nf4)),
            t(p + '.weight.quant_state.bitsandbytes__nf4', 'U8', [len(state)], state)]


def bnb8(p, n, k):
    # bitsandbytes Int8Params (LLM.int8): I8 weight [N, K], per-row absmax SCB F32 [N]
    return [t(p + '.weight', 'I8', [n, k]), t(p + '.SCB', 'F32', [n], struct.pack('<%df' % n, *[127.0] * n)),
            t(p + '.weight_format', 'U8', [], b'\0')]


def hqq(p, n, k):
    # HQQ (4-bit, group 64, axis 1) as transformers saves HQQLinear: W_q U8 packed two per byte
    return [t(p + '.W_q', 'U8', [n * k // 2 // 64, 64]), t(p + '.scale', 'F16', [n * k // 64, 1]),
            t(p + '.zero', 'F16', [n * k // 64, 1])]


def layer(fn):
    return [x for name, n, k in LINEARS for x in fn('model.layers.0.' + name, n, k)]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    cases = []

    def case(name, files, needles, sub=''):
        write(os.path.join(out, name, sub), files)
        cases.append([name, os.path.join(name, sub) if sub else name] + needles)

    not_read = 'not read yet'
    # ---- GPTQ and AWQ are read now (docs/dialects.md, "GPTQ and AWQ"): these layouts, which
    # were refused, convert (OUT_DIR/read.tsv: case, path, dialect)
    read = []

    def readable(name, files, dialect, weights=7, sub=''):
        write(os.path.join(out, name, sub), files)
        read.append([name, os.path.join(name, sub) if sub else name, dialect, str(weights)])

    def e8m0(shape):  # E8M0 filler: exponents 120..134, never 255 (NaN)
        n = 1
        for d in shape:
            n *= d
        return bytes(120 + b % 15 for b in filler(n, n))

    # GPTQ: AutoGPTQ <= 0.4 (the 2023 uploads): declared only in quantize_config.json
    gq = {'bits': 4, 'group_size': 128, 'damp_percent': 0.01, 'desc_act': False, 'static_groups': False,
          'sym': True, 'true_sequential': True, 'model_name_or_path': None,
          'model_file_base_name': 'gptq_model-4bit-128g'}
    readable('gptq_autogptq', {'config.json': LLAMA, 'quantize_config.json': gq,
                               'gptq_model-4bit-128g.safetensors': st_bytes(plain() + layer(gptq))}, 'gptq')
    # later uploads: config.json quantization_config (transformers / optimum)
    readable('gptq_config', {'config.json': dict(LLAMA, quantization_config=dict(
        gq, quant_method='gptq', model_file_base_name='model', checkpoint_format='gptq')),
        'model.safetensors': st_bytes(plain() + layer(gptq))}, 'gptq')
    readable('gptq_tensors', {'config.json': LLAMA, 'model.safetensors': st_bytes(plain() + layer(gptq))}, 'gptq')
    # AWQ: AutoAWQ before 2023-10-31: declared only in quant_config.json
    readable('awq_autoawq', {'config.json': LLAMA, 'model.safetensors': st_bytes(plain() + layer(awq)),
                             'quant_config.json': {'zero_point': True, 'q_group_size': 128, 'w_bit': 4,
                                                   'version': 'GEMM'}}, 'awq')
    readable('awq_tensors', {'config.json': LLAMA, 'model.safetensors': st_bytes(plain() + layer(awq))}, 'awq')
    # ---- but not the kernels' repackings of them
    case('gptq_marlin', {'config.json': dict(LLAMA, quantization_config=dict(
        gq, quant_method='gptq', checkpoint_format='marlin')), 'model.safetensors': st_bytes(plain() + layer(gptq))},
        ['gptq_marlin/config.json: quantization_config.checkpoint_format: GPTQ (GPTQ repacked for the marlin kernels, '
         'declared in config.json quantization_config)', not_read])
    case('awq_gemv_fast', {'config.json': dict(LLAMA, quantization_config={
        'quant_method': 'awq', 'bits': 4, 'group_size': 128, 'zero_point': True, 'version': 'gemv_fast'}),
        'model.safetensors': st_bytes(plain() + layer(awq))},
        ['awq_gemv_fast/config.json: quantization_config.version: AWQ (AutoAWQ version gemv_fast (a kernel\'s '
         'repacking, not GEMM or GEMV), declared in config.json quantization_config)', not_read])
    # ---- EXL2: exllamav2 writes quantization_config into config.json only with -cf
    case('exl2', {'config.json': LLAMA, 'output.safetensors': st_bytes(plain() + layer(exl2))},
         ["exl2/output.safetensors: tensor 'model.layers.0.", 'EXL2 (exllamav2: q_weight', not_read])
    case('exl2_cf', {'config.json': dict(LLAMA, quantization_config={
        'quant_method': 'exl2', 'version': '0.2.3', 'bits': 4.0, 'head_bits': 6,
        'calibration': {'rows': 115, 'length': 2048, 'dataset': '(default)'}}),
        'output.safetensors': st_bytes(plain() + layer(exl2))},
        ["exl2_cf/config.json: quantization_config.quant_method: EXL2 (quant_method 'exl2', 4-bit", not_read])
    # ---- gpt-oss (MXFP4 experts): OpenAI's original/ layout, no declaration
    E, GH, GI = 4, 64, 64  # experts, hidden, intermediate (blocks of 32 FP4 codes = 16 bytes)
    ot = [t('embedding.weight', 'BF16', [V, GH]), t('norm.scale', 'BF16', [GH]), t('unembedding.weight', 'BF16', [V, GH]),
          t('block.0.attn.norm.scale', 'BF16', [GH]), t('block.0.attn.qkv.weight', 'BF16', [3 * GH, GH]),
          t('block.0.attn.qkv.bias', 'BF16', [3 * GH]), t('block.0.attn.sinks', 'BF16', [4]),
          t('block.0.attn.out.weight', 'BF16', [GH, GH]), t('block.0.attn.out.bias', 'BF16', [GH]),
          t('block.0.mlp.norm.scale', 'BF16', [GH]), t('block.0.mlp.gate.weight', 'BF16', [E, GH]),
          t('block.0.mlp.gate.bias', 'BF16', [E]),
          t('block.0.mlp.mlp1_weight.blocks', 'U8', [E, 2 * GI, GH // 32, 16]),
          t('block.0.mlp.mlp1_weight.scales', 'U8', [E, 2 * GI, GH // 32], e8m0([E, 2 * GI, GH // 32])),
          t('block.0.mlp.mlp1_bias', 'BF16', [E, 2 * GI]),
          t('block.0.mlp.mlp2_weight.blocks', 'U8', [E, GH, GI // 32, 16]),
          t('block.0.mlp.mlp2_weight.scales', 'U8', [E, GH, GI // 32], e8m0([E, GH, GI // 32])),
          t('block.0.mlp.mlp2_bias', 'BF16', [E, GH])]
    dtypes = {x[0]: {'U8': 'FP4' if x[0].endswith('blocks') else 'UE8'}.get(x[1], x[1]) for x in ot}
    # (read now: docs/dialects.md "MXFP4")
    readable('gptoss_original', {'config.json': {'num_hidden_layers': 1, 'num_experts': E, 'experts_per_token': 2,
                                             'vocab_size': V, 'hidden_size': GH, 'intermediate_size': GI,
                                             'swiglu_limit': 7.0, 'head_dim': 16, 'num_attention_heads': 4,
                                             'num_key_value_heads': 1, 'sliding_window': 128,
                                             'initial_context_length': 4096, 'rope_theta': 150000,
                                             'rope_scaling_factor': 32.0, 'rope_ntk_alpha': 1, 'rope_ntk_beta': 32},
                             'dtypes.json': dtypes, 'model.safetensors': st_bytes(ot)},
             'gpt_oss_mxfp4', 2, sub='original')
    # gpt-oss as transformers writes it: quantization_config mxfp4, experts' *_blocks / *_scales
    p = 'model.layers.0.'
    ht = [t('model.embed_tokens.weight', 'BF16', [V, GH]), t('model.norm.weight', 'BF16', [GH]),
          t('lm_head.weight', 'BF16', [V, GH]), t(p + 'input_layernorm.weight', 'BF16', [GH]),
          t(p + 'post_attention_layernorm.weight', 'BF16', [GH]), t(p + 'self_attn.sinks', 'BF16', [4])]
    for proj, n in (('q_proj', GH), ('k_proj', 16), ('v_proj', 16), ('o_proj', GH)):
        ht += [t(p + 'self_attn.%s.weight' % proj, 'BF16', [n, GH]), t(p + 'self_attn.%s.bias' % proj, 'BF16', [n])]
    ht += [t(p + 'mlp.router.weight', 'BF16', [E, GH]), t(p + 'mlp.router.bias', 'BF16', [E]),
           t(p + 'mlp.experts.gate_up_proj_blocks', 'U8', [E, 2 * GI, GH // 32, 16]),
           t(p + 'mlp.experts.gate_up_proj_scales', 'U8', [E, 2 * GI, GH // 32], e8m0([E, 2 * GI, GH // 32])),
           t(p + 'mlp.experts.gate_up_proj_bias', 'BF16', [E, 2 * GI]),
           t(p + 'mlp.experts.down_proj_blocks', 'U8', [E, GH, GI // 32, 16]),
           t(p + 'mlp.experts.down_proj_scales', 'U8', [E, GH, GI // 32], e8m0([E, GH, GI // 32])),
           t(p + 'mlp.experts.down_proj_bias', 'BF16', [E, GH])]
    oss = {'architectures': ['GptOssForCausalLM'], 'model_type': 'gpt_oss', 'hidden_size': GH,
           'intermediate_size': GI, 'num_hidden_layers': 1, 'num_local_experts': E, 'vocab_size': V}
    readable('gptoss_hf', {'config.json': dict(oss, quantization_config={
        'quant_method': 'mxfp4', 'modules_to_not_convert': ['model.layers.*.self_attn', 'model.layers.*.mlp.router',
                                                            'model.embed_tokens', 'lm_head']}),
        'model.safetensors': st_bytes(ht)}, 'gpt_oss_mxfp4', 2)
    readable('gptoss_hf_tensors', {'config.json': oss, 'model.safetensors': st_bytes(ht)}, 'gpt_oss_mxfp4', 2)
    # ---- MLX: mlx-lm writes `quantization` and (since 2024) the same `quantization_config`,
    # neither with a quant_method; older versions `quantization` only
    mq = {'group_size': 64, 'bits': 4}
    mlx_t = [t('model.embed_tokens.weight', 'U32', [V, H * 4 // 32]), t('model.embed_tokens.scales', 'BF16', [V, H // 64]),
             t('model.embed_tokens.biases', 'BF16', [V, H // 64]), t('model.norm.weight', 'BF16', [H]),
             t('model.layers.0.input_layernorm.weight', 'BF16', [H]),
             t('model.layers.0.post_attention_layernorm.weight', 'BF16', [H])] + layer(mlx)
    # (read now: docs/dialects.md "MLX")
    readable('mlx', {'config.json': dict(LLAMA, quantization=mq, quantization_config=mq),
                     'model.safetensors': st_bytes(mlx_t)}, 'mlx', 8)
    readable('mlx_old', {'config.json': dict(LLAMA, quantization=mq), 'model.safetensors': st_bytes(mlx_t)}, 'mlx', 8)
    # but not its other modes
    case('mlx_mxfp4', {'config.json': dict(LLAMA, quantization=dict(mq, group_size=32, mode='mxfp4'),
                                           quantization_config=dict(mq, group_size=32, mode='mxfp4')),
                       'model.safetensors': st_bytes(mlx_t)},
         ['mlx_mxfp4/config.json: quantization_config.mode: MLX mxfp4 (mlx-lm, 4-bit, group 32, declared in '
          'config.json quantization_config)', not_read])
    # ---- bitsandbytes, as transformers saves a model loaded in 4 or 8 bits
    bq4 = {'quant_method': 'bitsandbytes', '_load_in_4bit': True, '_load_in_8bit': False, 'load_in_4bit': True,
           'load_in_8bit': False, 'bnb_4bit_quant_type': 'nf4', 'bnb_4bit_compute_dtype': 'bfloat16',
           'bnb_4bit_quant_storage': 'uint8', 'bnb_4bit_use_double_quant': False, 'llm_int8_threshold': 6.0,
           'llm_int8_skip_modules': None, 'llm_int8_has_fp16_weight': False, 'llm_int8_enable_fp32_cpu_offload': False}
    # (read now: docs/dialects.md "bitsandbytes")
    readable('bnb4', {'config.json': dict(LLAMA, quantization_config=bq4),
                      'model.safetensors': st_bytes(plain('BF16') + layer(bnb4))}, 'bitsandbytes_4bit')
    readable('bnb4_tensors', {'config.json': LLAMA, 'model.safetensors': st_bytes(plain('BF16') + layer(bnb4))},
             'bitsandbytes_4bit')
    bq8 = dict(bq4, _load_in_4bit=False, load_in_4bit=False, _load_in_8bit=True, load_in_8bit=True)
    readable('bnb8', {'config.json': dict(LLAMA, quantization_config=bq8),
                      'model.safetensors': st_bytes(plain() + layer(bnb8))}, 'bitsandbytes_int8')
    readable('bnb8_tensors', {'config.json': LLAMA, 'model.safetensors': st_bytes(plain() + layer(bnb8))},
             'bitsandbytes_int8')
    # ---- HQQ
    case('hqq', {'config.json': dict(LLAMA, quantization_config={
        'quant_method': 'hqq', 'skip_modules': ['lm_head'], 'quant_config': {
            'quant_config': {'weight_quant_params': {'nbits': 4, 'group_size': 64, 'axis': 1}}}}),
        'model.safetensors': st_bytes(plain() + layer(hqq))},
        ["hqq/config.json: quantization_config.quant_method: HQQ (quant_method 'hqq'", not_read])
    case('hqq_tensors', {'config.json': LLAMA, 'model.safetensors': st_bytes(plain() + layer(hqq))},
         ["hqq_tensors/model.safetensors: tensor 'model.layers.0.", 'HQQ (W_q codes with zero and scale', not_read])
    # ---- compressed-tensors MXFP4 (read now) and 2:4 sparse (not read)
    ct_mx = [x for name, n, k in LINEARS for x in (
        t('model.layers.0.%s.weight_packed' % name, 'U8', [n, k // 2]),
        t('model.layers.0.%s.weight_scale' % name, 'U8', [n, k // 32], e8m0([n, k // 32])))]
    readable('ct_mxfp4', {'config.json': dict(LLAMA, quantization_config={
        'quant_method': 'compressed-tensors', 'format': 'mxfp4-pack-quantized', 'quantization_status': 'compressed',
        'config_groups': {'group_0': {'targets': ['Linear'], 'weights': {
            'num_bits': 4, 'type': 'float', 'symmetric': True, 'strategy': 'group', 'group_size': 32}}},
        'ignore': ['lm_head']}), 'model.safetensors': st_bytes(plain('BF16') + ct_mx)}, 'compressed_tensors_mxfp4')
    ct_sp = [x for name, n, k in LINEARS for x in (
        t('model.layers.0.%s.compressed' % name, 'BF16', [n, k // 2]),
        t('model.layers.0.%s.bitmask' % name, 'U8', [n, k // 8]),
        t('model.layers.0.%s.shape' % name, 'I32', [2], struct.pack('<2i', n, k)))]
    case('ct_sparse24', {'config.json': dict(LLAMA, quantization_config={
        'quant_method': 'compressed-tensors', 'format': 'dense', 'quantization_status': 'compressed',
        'sparsity_config': {'format': 'sparse-24-bitmask', 'global_sparsity': 0.45, 'sparsity_structure': '2:4',
                            'targets': ['Linear'], 'ignore': ['lm_head'], 'registry_requires_subclass': False}}),
        'model.safetensors': st_bytes(plain('BF16') + ct_sp)},
        ['ct_sparse24/config.json: quantization_config.sparsity_config: 2:4 sparse (compressed-tensors '
         'sparse-24-bitmask, declared in config.json quantization_config.sparsity_config)',
         not_read])

    # ---- not quantized: an ordinary checkpoint whose tensors are named like one companion of a
    # layout (an attention q_scale beside FP8 k/v scales, a lone g_idx, SCB or absmax beside a
    # BF16 weight, F32 .blocks/.scales) is no such layout: it converts (OUT_DIR/lookalikes)
    a = 'model.layers.0.self_attn.'
    write(os.path.join(out, 'lookalikes'), {'config.json': LLAMA, 'model.safetensors': st_bytes(plain('BF16') + [
        t(a + 'q_proj.weight', 'BF16', [H, H]), t(a + 'q_scale', 'F32', []), t(a + 'k_scale', 'F32', []),
        t(a + 'q_invperm', 'F32', [H]), t(a + 'o_proj.g_idx', 'I32', [H], struct.pack('<%di' % H, *range(H))),
        t(a + 'o_proj.qzeros', 'F32', [H]), t(a + 'o_proj.weight', 'BF16', [H, H]), t(a + 'o_proj.SCB', 'F32', [H]),
        t(a + 'k_proj.weight', 'BF16', [H, H]), t(a + 'k_proj.weight.absmax', 'F32', [H]),
        t('model.layers.0.mlp.blocks', 'F32', [H]), t('model.layers.0.mlp.scales', 'F32', [H])])})

    with open(os.path.join(out, 'cases.tsv'), 'w') as f:
        for c in cases:
            f.write('\t'.join(c) + '\n')
    with open(os.path.join(out, 'read.tsv'), 'w') as f:
        for c in read:
            f.write('\t'.join(c) + '\n')


if __name__ == '__main__':
    main()
