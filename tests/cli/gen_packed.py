#!/usr/bin/env python3
"""GPTQ and AWQ checkpoints, packed as their producers pack them, with their values computed here
from the integer codes, zero points and scales before packing (docs/dialects.md, "GPTQ and AWQ").
gen_dialects.py calls cases(); the conventions are its own: OUT_DIR/<case>/ a checkpoint and
<case>/expected/<weight>.f32 the weight's values [N, K] in binary32.

The packers follow the producers' own loops, not a bit stream:
- AutoGPTQ's QuantLinear.pack: codes q[k][n] of the transposed weight [K, N]; for 2, 4 and 8 bits
  word row r of qweight holds k = r * (32 / b) + j at bits b * j; for 3 bits, 32 codes fill three
  words: ten codes, the eleventh split 2 + 1 bits across the first two words, ten more, the
  twenty-second split 1 + 2 bits, ten more.  qzeros [G, N * b / 32] likewise along N, storing
  z - 1 (the checkpoint format "gptq"; "gptq_v2" stores z).  g_idx[k] is column k's group.
- AutoAWQ's WQLinear_GEMM.from_linear: qweight [K, N / 8], word j of row k holding columns
  8j + order[i] at bits 4i, order = 0, 2, 4, 6, 1, 3, 5, 7; qzeros [G, N / 8] alike; scales
  [G, N].  WQLinear_GEMV: qweight [N, K / 8] in natural order; scales [N, 8W] and qzeros [N, W]
  with W = ceil(ceil(G / 8) / m) * m (m = 1, 2, 4 for groups >= 128, 64, 32), the rest zeros.
Every value is (q - z) * s, exact in binary64 and rounded once to binary32 (exact here too: the
scales are F16).

MXFP4 (docs/dialects.md "MXFP4") as its producers write it:
- gpt-oss, Hugging Face layout (transformers' Mxfp4 integration): <x>_blocks U8 [E, R, B, 16] and
  <x>_scales U8 [E, R, B]; byte j of a block holds elements 2j (low nibble) and 2j + 1 (high); the
  value is FP4_VALUES[nibble] * 2^(scale - 127) (transformers' convert_moe_packed_tensors: a lookup
  and ldexp by scale - 127).  OpenAI's original/ layout: <p>.blocks and <p>.scales alike.
- compressed-tensors mxfp4-pack-quantized: weight_packed U8 [N, K/2] low nibble first, weight_scale
  U8 E8M0 [N, K/32].

fbgemm FP8 (docs/dialects.md "fbgemm FP8"), as transformers' FbgemmFp8 integration stores Meta's
releases: a Linear's weight F8_E4M3 [N, K] with weight_scale F32 [N, 1]; Llama 4's stacked experts
feed_forward.experts.gate_up_proj F8_E4M3 [E, H, 2I] with gate_up_proj_scale F32 [E, 1, 2I] (and
down_proj alike), the value code * scale of its expert and column.

bitsandbytes (docs/dialects.md "bitsandbytes"), as transformers saves Linear4bit / Linear8bitLt
(Params4bit's quant_state.as_dict(packed=True)): 4-bit weight U8 [ceil(N*K/2), 1] of the row-major
flattened weight, element 2i in the HIGH nibble of byte i; weight.absmax per blocksize elements (F32,
or U8 indices into nested_quant_map times nested_absmax per nested_blocksize, plus nested_offset);
weight.quant_map the 16-entry table; weight.quant_state.bitsandbytes__nf4 (or __fp4) the JSON
bytes.  The value is the table entry times the block's absmax in binary32, rounded to the state's
dtype (dequantize_4bit's output).  LLM.int8: weight I8 [N, K], SCB F32 [N], weight_format U8 0;
the value (q * SCB) * (1/127), each product rounded to binary32 (int8_vectorwise_dequant).
"""
import json
import os
import struct

AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]


def f32(x):
    return struct.unpack('<f', struct.pack('<f', x))[0]


def f16(x):
    return struct.unpack('<e', struct.pack('<e', x))[0]


def words_bytes(words):
    return struct.pack('<%dI' % len(words), *[w & 0xFFFFFFFF for w in words])


def gptq_pack_dim0(ints, rows, cols, bits):
    """AutoGPTQ's packing of ints [rows, cols] along dim 0 (qweight: rows = K) into
    [rows * bits / 32, cols] words, column by column as its loop does."""
    out_rows = rows * bits // 32
    out = [0] * (out_rows * cols)
    for c in range(cols):
        col = [ints[r * cols + c] for r in range(rows)]
        for r, w in enumerate(pack_list(col, bits)):
            out[r * cols + c] = w
    return out, out_rows


def pack_list(vals, bits):
    """AutoGPTQ's word loop over one column of codes."""
    words, i = [], 0
    if bits in (2, 4, 8):
        per = 32 // bits
        while i < len(vals):
            w = 0
            for j in range(i, i + per):
                w |= vals[j] << (bits * (j - i))
            words.append(w)
            i += per
        return words
    assert bits == 3
    while i < len(vals):
        w0 = 0
        for j in range(i, i + 10):
            w0 |= vals[j] << (3 * (j - i))
        i += 10
        w0 |= (vals[i] << 30) & 0xFFFFFFFF
        w1 = (vals[i] >> 2) & 1
        i += 1
        for j in range(i, i + 10):
            w1 |= vals[j] << (3 * (j - i) + 1)
        i += 10
        w1 |= (vals[i] << 31) & 0xFFFFFFFF
        w2 = (vals[i] >> 1) & 0x3
        i += 1
        for j in range(i, i + 10):
            w2 |= vals[j] << (3 * (j - i) + 2)
        i += 10
        words += [w0, w1, w2]
    return words


def gptq_pack_zeros(z, groups, n, bits):
    """qzeros [G, N * bits / 32]: each group's row of zero points packed along N."""
    out = []
    for g in range(groups):
        out += pack_list(z[g * n:(g + 1) * n], bits)
    return out, n * bits // 32


def gptq_case(root, rnd, name, n, k, bits, group, sym, act_order, v2, decl, lines, with_g_idx=True, qlo=0,
              zfix=None):
    """A GPTQ linear of [N, K]; decl: 'config', 'file' (quantize_config.json beside
    gptq_model-*.safetensors) or None (no declaration); codes from qlo up (8-bit symmetric
    codes from 1 never reach q - z = -128); zfix: every group's zero point (else random)."""
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, 'expected'), exist_ok=True)
    gs = group if group > 0 else k
    groups = -(-k // gs)
    maxq = (1 << bits) - 1
    q = [rnd.randrange(qlo, maxq + 1) for _ in range(k * n)]                  # [K, N]
    if sym:
        z = [1 << (bits - 1)] * (groups * n)
    elif v2:
        z = [rnd.randrange(maxq + 1) for _ in range(groups * n)]
    else:  # v1 stores z - 1: z from 1 to 2^b (a stored 2^b - 1 is z = 2^b)
        z = [rnd.randrange(1, maxq + 2) for _ in range(groups * n)]
    if zfix is not None:
        z = [zfix] * (groups * n)
    elif not sym:
        z[0] = maxq + 1 if not v2 else maxq                                 # the largest zero point
    s = [f16(rnd.uniform(0.002, 0.05)) for _ in range(groups * n)]          # [G, N]
    if act_order:
        perm = list(range(k))
        rnd.shuffle(perm)
        g_idx = [0] * k
        for i, col in enumerate(perm):
            g_idx[col] = i // gs
    else:
        g_idx = [c // gs for c in range(k)]
    qw, qrows = gptq_pack_dim0(q, k, n, bits)
    stored = [v if v2 else v - 1 for v in z]
    qz, zcols = gptq_pack_zeros(stored, groups, n, bits)
    p = 'model.layers.0.mlp.down_proj'
    tensors = [(p + '.qweight', 'I32', [qrows, n], words_bytes(qw)),
               (p + '.qzeros', 'I32', [groups, zcols], words_bytes(qz)),
               (p + '.scales', 'F16', [groups, n], struct.pack('<%de' % len(s), *s)),
               (p + '.bias', 'F16', [n], struct.pack('<%de' % n, *[0.5] * n))]
    if with_g_idx:
        tensors.append((p + '.g_idx', 'I32', [k], struct.pack('<%di' % k, *g_idx)))
    vals = [f32((q[c * n + r] - z[g_idx[c] * n + r]) * s[g_idx[c] * n + r]) for r in range(n) for c in range(k)]
    qc = {'bits': bits, 'group_size': group, 'desc_act': act_order, 'sym': sym, 'true_sequential': True}
    if v2:
        qc['checkpoint_format'] = 'gptq_v2'
    cfg = {'model_type': 'llama', 'torch_dtype': 'float16'}
    fname = 'model.safetensors'
    if decl == 'config':
        cfg['quantization_config'] = dict(qc, quant_method='gptq')
    elif decl == 'file':
        fname = 'gptq_model-%dbit-%dg.safetensors' % (bits, group)
        json.dump(qc, open(os.path.join(d, 'quantize_config.json'), 'w'))
    write(d, fname, tensors, cfg)
    put_expected(d, p + '.qweight', vals)
    lines.append('%s %s.qweight %d %d gptq' % (name, p, n, k))
    return name


def awq_case(root, rnd, name, n, k, group, gemv, decl, lines):
    """An AWQ linear of [N, K] (4-bit), GEMM or GEMV; decl 'config' or 'file' (quant_config.json)."""
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, 'expected'), exist_ok=True)
    groups = k // group
    q = [[rnd.randrange(16) for _ in range(k)] for _ in range(n)]           # [N, K]
    z = [[rnd.randrange(16) for _ in range(groups)] for _ in range(n)]      # [N, G]
    s = [[f16(rnd.uniform(0.002, 0.05)) for _ in range(groups)] for _ in range(n)]
    p = 'model.layers.0.self_attn.o_proj'
    if not gemv:
        qw = []
        for c in range(k):                      # row k of qweight: column k of the weight
            for j in range(n // 8):
                w = 0
                for i in range(8):
                    w |= q[j * 8 + AWQ_ORDER[i]][c] << (4 * i)
                qw.append(w)
        qz = []
        for g in range(groups):
            for j in range(n // 8):
                w = 0
                for i in range(8):
                    w |= z[j * 8 + AWQ_ORDER[i]][g] << (4 * i)
                qz.append(w)
        sc = [s[r][g] for g in range(groups) for r in range(n)]
        tensors = [(p + '.qweight', 'I32', [k, n // 8], words_bytes(qw)),
                   (p + '.qzeros', 'I32', [groups, n // 8], words_bytes(qz)),
                   (p + '.scales', 'F16', [groups, n], struct.pack('<%de' % len(sc), *sc))]
    else:
        mult = 1 if group >= 128 else 2 if group == 64 else 4
        width = -(-(-(-groups // 8)) // mult) * mult
        qw = []
        for r in range(n):
            for col in range(k // 8):
                w = 0
                for i in range(8):
                    w |= q[r][col * 8 + i] << (4 * i)
                qw.append(w)
        qz, sc = [], []
        for r in range(n):
            for col in range(width):
                w = 0
                for i in range(8):
                    if col * 8 + i < groups:
                        w |= z[r][col * 8 + i] << (4 * i)
                qz.append(w)
            sc += s[r] + [0.0] * (8 * width - groups)
        tensors = [(p + '.qweight', 'I32', [n, k // 8], words_bytes(qw)),
                   (p + '.qzeros', 'I32', [n, width], words_bytes(qz)),
                   (p + '.scales', 'F16', [n, 8 * width], struct.pack('<%de' % len(sc), *sc))]
    vals = [f32((q[r][c] - z[r][c // group]) * s[r][c // group]) for r in range(n) for c in range(k)]
    version = 'GEMV' if gemv else 'GEMM'
    cfg = {'model_type': 'llama', 'torch_dtype': 'float16'}
    if decl == 'config':
        cfg['quantization_config'] = {'quant_method': 'awq', 'bits': 4, 'group_size': group, 'zero_point': True,
                                      'version': version.lower()}
    else:
        json.dump({'zero_point': True, 'q_group_size': group, 'w_bit': 4, 'version': version},
                  open(os.path.join(d, 'quant_config.json'), 'w'))
    write(d, 'model.safetensors', tensors, cfg)
    put_expected(d, p + '.qweight', vals)
    lines.append('%s %s.qweight %d %d awq' % (name, p, n, k))
    return name


def mlx_pack_row(vals, bits):
    """one row of MLX codes: 32 / bits per uint32 for 2, 4 and 8 bits; for 3 and 5 bits eight codes
    in 3 or 5 bytes, for 6 bits four codes in 3 bytes, each group of bytes little-endian with code i
    at bit bits * i (MLX's pack_factor / bytes_per_pack), the bytes then read as uint32 words."""
    if bits in (2, 4, 8):
        per, out = 32 // bits, b''
        for i in range(0, len(vals), per):
            w = 0
            for j, v in enumerate(vals[i:i + per]):
                w |= v << (bits * j)
            out += struct.pack('<I', w)
        return out
    per = 4 if bits == 6 else 8
    nbytes = per * bits // 8
    out = b''
    for i in range(0, len(vals), per):
        acc = 0
        for j, v in enumerate(vals[i:i + per]):
            acc |= v << (bits * j)
        out += acc.to_bytes(nbytes, 'little')
    return out


def mlx_case(root, rnd, name, modules, decl, lines, extra=None):
    """An mlx-lm checkpoint: modules (prefix, n, k, bits, group, scale dtype) as weight U32
    [N, K*b/32], scales and biases [N, K/g]; decl: a dict of config.json members (None: none)."""
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, 'expected'), exist_ok=True)
    tensors = list(extra or [])
    for p, n, k, bits, group, sdt in modules:
        G = k // group
        q = [[rnd.randrange(1 << bits) for _ in range(k)] for _ in range(n)]
        if sdt == 'BF16':
            conv = lambda x: struct.unpack('<f', struct.pack('<I', struct.unpack('<I', struct.pack('<f', x))[0]
                                                            & 0xFFFF0000))[0]
        else:
            conv = f16
        # MLX writes a negative scale where a group's edge is its minimum
        sc = [[conv(rnd.choice((-1, 1)) * rnd.uniform(0.002, 0.05)) for _ in range(G)] for _ in range(n)]
        bi = [[conv(rnd.uniform(-0.5, 0.5)) for _ in range(G)] for _ in range(n)]
        packed = b''.join(mlx_pack_row(q[r], bits) for r in range(n))
        assert len(packed) == n * k * bits // 8
        if sdt == 'BF16':
            enc = lambda vs: b''.join(struct.pack('<I', struct.unpack('<I', struct.pack('<f', v))[0])[2:] for v in vs)
        else:
            enc = lambda vs: struct.pack('<%de' % len(vs), *vs)
        tensors += [(p + '.weight', 'U32', [n, k * bits // 32], packed),
                    (p + '.scales', sdt, [n, G], enc([v for r in sc for v in r])),
                    (p + '.biases', sdt, [n, G], enc([v for r in bi for v in r]))]
        vals = [f32(sc[r][c // group] * q[r][c] + bi[r][c // group]) for r in range(n) for c in range(k)]
        put_expected(d, p + '.weight', vals)
        lines.append('%s %s.weight %d %d mlx' % (name, p, n, k))
    cfg = dict({'model_type': 'llama'}, **(decl or {}))
    write(d, 'model.safetensors', tensors, cfg)


FP4_VALUES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def bf16_bytes(vals):
    return b''.join(struct.pack('<f', v)[2:] for v in vals)


def mxfp4_matrix(rnd, n, k, elo, ehi):
    """n x k random E2M1 codes packed two per byte (low nibble first), E8M0 exponents in [elo, ehi],
    and the values [n * k] as transformers computes them (a lookup, then ldexp)."""
    codes = [[rnd.randrange(16) for _ in range(k)] for _ in range(n)]
    exps = [[rnd.randint(elo, ehi) for _ in range(k // 32)] for _ in range(n)]
    packed = bytes(codes[r][c] | codes[r][c + 1] << 4 for r in range(n) for c in range(0, k, 2))
    scales = bytes(e for row in exps for e in row)
    vals = [f32(FP4_VALUES[codes[r][c]] * 2.0 ** (exps[r][c // 32] - 127)) for r in range(n) for c in range(k)]
    return packed, scales, vals


def gpt_oss_case(root, rnd, name, original, lines, elo=118, ehi=130):
    """gpt-oss with two experts, H = 128 and I = 64: gate_up [E, 2I, H/32, 16] and down [E, H,
    I/32, 16] in MXFP4 with BF16 biases, the rest BF16; the Hugging Face layout declared in
    config.json, or OpenAI's original/ names with no declaration."""
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, 'expected'), exist_ok=True)
    E, H, I = 2, 128, 64
    tensors = []
    for proj, rows, k in (('gate_up', 2 * I, H), ('down', H, I)):
        packed, scales, vals = mxfp4_matrix(rnd, E * rows, k, elo, ehi)
        if original:
            w = 'block.0.mlp.%s_weight' % ('mlp1' if proj == 'gate_up' else 'mlp2')
            cn, sn, bn = w + '.blocks', w + '.scales', 'block.0.mlp.%s_bias' % ('mlp1' if proj == 'gate_up' else 'mlp2')
        else:
            p = 'model.layers.0.mlp.experts.%s_proj' % proj
            cn, sn, bn = p + '_blocks', p + '_scales', p + '_bias'
        tensors += [(cn, 'U8', [E, rows, k // 32, 16], packed), (sn, 'U8', [E, rows, k // 32], scales),
                    (bn, 'BF16', [E, rows], bf16_bytes([0.125] * (E * rows)))]
        put_expected(d, cn, vals)
        lines.append('%s %s %d %d gpt_oss_mxfp4' % (name, cn, E * rows, k))
    if original:
        tensors += [('block.0.attn.qkv.weight', 'BF16', [64, H], bf16_bytes([0.5] * (64 * H))),
                    ('block.0.attn.sinks', 'BF16', [4], bf16_bytes([1.0] * 4)),
                    ('embedding.weight', 'BF16', [32, H], bf16_bytes([0.25] * (32 * H))),
                    ('unembedding.weight', 'BF16', [32, H], bf16_bytes([0.25] * (32 * H)))]
        cfg = {'num_hidden_layers': 1, 'num_experts': E, 'hidden_size': H, 'intermediate_size': I}
    else:
        tensors += [('model.layers.0.self_attn.q_proj.weight', 'BF16', [64, H], bf16_bytes([0.5] * (64 * H))),
                    ('model.layers.0.mlp.router.weight', 'BF16', [E, H], bf16_bytes([0.25] * (E * H)))]
        cfg = {'model_type': 'gpt_oss', 'quantization_config': {
            'quant_method': 'mxfp4',
            'modules_to_not_convert': ['model.layers.*.self_attn', 'model.layers.*.mlp.router', 'model.embed_tokens',
                                       'lm_head']}}
    write(d, 'model.safetensors', tensors, cfg)
    return name


def ct_mxfp4_case(root, rnd, name, n, k, lines, elo=120, ehi=132):
    """compressed-tensors mxfp4-pack-quantized: one Linear, lm_head left in BF16."""
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, 'expected'), exist_ok=True)
    p = 'model.layers.0.mlp.gate_proj'
    packed, scales, vals = mxfp4_matrix(rnd, n, k, elo, ehi)
    tensors = [(p + '.weight_packed', 'U8', [n, k // 2], packed), (p + '.weight_scale', 'U8', [n, k // 32], scales),
               ('lm_head.weight', 'BF16', [16, k], bf16_bytes([0.5] * (16 * k)))]
    put_expected(d, p + '.weight_packed', vals)
    lines.append('%s %s.weight_packed %d %d compressed_tensors_mxfp4' % (name, p, n, k))
    scheme = {'targets': ['Linear'], 'format': 'mxfp4-pack-quantized',
              'weights': {'num_bits': 4, 'type': 'float', 'strategy': 'group', 'group_size': 32, 'symmetric': True},
              'input_activations': None}
    cfg = {'model_type': 'llama', 'quantization_config': {
        'quant_method': 'compressed-tensors', 'format': 'mxfp4-pack-quantized', 'ignore': ['lm_head'],
        'config_groups': {'group_0': scheme}}}
    write(d, 'model.safetensors', tensors, cfg)
    return name


def e4m3(code):
    """the E4M3FN value of a byte (never 0x7F / 0xFF here)"""
    e, m = code >> 3 & 15, code & 7
    v = m / 8 * 2.0 ** -6 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
    return -v if code & 0x80 else v


def bf16_round(x):
    """x (a binary32 value) rounded to BF16, nearest even, as a float"""
    u = struct.unpack('<I', struct.pack('<f', x))[0]
    u = (u + 0x7FFF + (u >> 16 & 1)) & 0xFFFF0000
    return struct.unpack('<f', struct.pack('<I', u))[0]


def fp8_codes(rnd, n):
    return bytes(rnd.choice([c for c in range(256) if c & 0x7F != 0x7F]) for _ in range(n))


def fbgemm_case(root, rnd, name, lines):
    """Llama 4 as Meta's FP8 release stores it: two stacked experts (H = 64, I = 48) and a shared
    expert's Linear in FP8, the router in BF16; the scales BF16-representable F32 values."""
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, 'expected'), exist_ok=True)
    E, H, I = 2, 64, 48
    p = 'language_model.model.layers.0.feed_forward.'
    tensors = []
    for x, rows, cols in (('experts.gate_up_proj', H, 2 * I), ('experts.down_proj', I, H)):
        codes = fp8_codes(rnd, E * rows * cols)
        sc = [bf16_round(f32(rnd.uniform(0.0005, 0.01))) for _ in range(E * cols)]
        tensors += [(p + x, 'F8_E4M3', [E, rows, cols], codes),
                    (p + x + '_scale', 'F32', [E, 1, cols], struct.pack('<%df' % len(sc), *sc))]
        vals = [f32(e4m3(codes[(e * rows + r) * cols + c]) * sc[e * cols + c])
                for e in range(E) for r in range(rows) for c in range(cols)]
        put_expected(d, p + x, vals)
        lines.append('%s %s %d %d fbgemm_fp8' % (name, p + x, E * rows, cols))
    n, k = 32, 64
    codes = fp8_codes(rnd, n * k)
    sc = [bf16_round(f32(rnd.uniform(0.0005, 0.01))) for _ in range(n)]
    w = p + 'shared_expert.down_proj.weight'
    tensors += [(w, 'F8_E4M3', [n, k], codes), (p + 'shared_expert.down_proj.weight_scale', 'F32', [n, 1],
                                                 struct.pack('<%df' % n, *sc)),
                (p + 'router.weight', 'BF16', [E, H], bf16_bytes([0.25] * (E * H)))]
    put_expected(d, w, [f32(e4m3(codes[r * k + c]) * sc[r]) for r in range(n) for c in range(k)])
    lines.append('%s %s %d %d fbgemm_fp8' % (name, w, n, k))
    cfg = {'model_type': 'llama4', 'quantization_config': {
        'quant_method': 'fbgemm_fp8', 'activation_scale_ub': 1200.0,
        'modules_to_not_convert': ['language_model.model.layers.0.feed_forward.router', 'lm_head']}}
    write(d, 'model.safetensors', tensors, cfg)
    return name


NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
       -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
       0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0]
FP4_BNB = [f32(v / 12.0) for v in (0.0, 0.0625, 8.0, 12.0, 4.0, 6.0, 2.0, 3.0,
                                   -0.0, -0.0625, -8.0, -12.0, -4.0, -6.0, -2.0, -3.0)]


def f32s(vals):
    return struct.pack('<%df' % len(vals), *vals)


def bnb4_module(rnd, p, n, k, qtype, dtype, nested, tensors):
    """one Linear4bit [n, k] in blocks of 64 (nested: blocks of 256 absmax values); its values."""
    count, block = n * k, 64
    nblocks = -(-count // block)
    table = [f32(v) for v in (NF4 if qtype == 'nf4' else FP4_BNB)]
    codes = [rnd.randrange(16) for _ in range(count)]
    packed = bytes((codes[2 * i] << 4) | (codes[2 * i + 1] if 2 * i + 1 < count else 0) for i in range(-(-count // 2)))
    state = {'quant_type': qtype, 'blocksize': block, 'dtype': dtype, 'shape': [n, k]}
    if nested:
        nmap = [f32(-1.0 + 2.0 * i / 255.0) for i in range(256)]
        u = [rnd.randrange(256) for _ in range(nblocks)]
        nab = [f32(rnd.uniform(0.001, 0.02)) for _ in range(-(-nblocks // 256))]
        offset = 0.012345678901234
        absmax = [f32(f32(nmap[u[b]] * nab[b // 256]) + f32(offset)) for b in range(nblocks)]
        state.update(nested_blocksize=256, nested_dtype='float32', nested_offset=offset)
        tensors += [(p + '.weight.absmax', 'U8', [nblocks], bytes(u)),
                    (p + '.weight.nested_absmax', 'F32', [len(nab)], f32s(nab)),
                    (p + '.weight.nested_quant_map', 'F32', [256], f32s(nmap))]
    else:
        absmax = [f32(rnd.uniform(0.001, 0.05)) for _ in range(nblocks)]
        tensors.append((p + '.weight.absmax', 'F32', [nblocks], f32s(absmax)))
    js = json.dumps(state).encode()
    tensors += [(p + '.weight', 'U8', [len(packed), 1], packed), (p + '.weight.quant_map', 'F32', [16], f32s(table)),
                (p + '.weight.quant_state.bitsandbytes__' + qtype, 'U8', [len(js)], js)]
    rnd_to = {'bfloat16': bf16_round, 'float16': f16, 'float32': lambda v: v}[dtype]
    return [rnd_to(f32(table[codes[i]] * absmax[i // block])) for i in range(count)]


def bnb_case(root, rnd, name, modules, cfg_q, lines):
    """modules: (prefix, n, k, kind) with kind nf4 / fp4 (+ '_dq': double-quantized; + ':dtype') or int8."""
    d = os.path.join(root, name)
    os.makedirs(os.path.join(d, 'expected'), exist_ok=True)
    tensors = [('model.norm.weight', 'BF16', [8], bf16_bytes([1.0] * 8))]
    for p, n, k, kind in modules:
        if kind == 'int8':
            q = [rnd.randrange(-127, 128) for _ in range(n * k)]
            scb = [f32(rnd.uniform(0.5, 4.0)) for _ in range(n)]
            tensors += [(p + '.weight', 'I8', [n, k], struct.pack('<%db' % len(q), *q)),
                        (p + '.SCB', 'F32', [n], f32s(scb)), (p + '.weight_format', 'U8', [], bytes([0]))]
            inv = f32(1.0 / 127.0)
            vals = [f32(f32(q[i] * scb[i // k]) * inv) for i in range(n * k)]
        else:
            qtype, _, dtype = kind.partition(':')
            vals = bnb4_module(rnd, p, n, k, qtype.split('_')[0], dtype or 'bfloat16', qtype.endswith('_dq'),
                               tensors)
        put_expected(d, p + '.weight', vals)
        lines.append('%s %s.weight %d %d %s' % (name, p, n, k,
                                                'bitsandbytes_int8' if kind == 'int8' else 'bitsandbytes_4bit'))
    cfg = {'model_type': 'llama'}
    if cfg_q is not None:
        cfg['quantization_config'] = dict({'quant_method': 'bitsandbytes', 'llm_int8_skip_modules': None}, **cfg_q)
    write(d, 'model.safetensors', tensors, cfg)


def write(d, fname, tensors, cfg):
    hdr, data = {}, b''
    for name, dtype, shape, raw in tensors:
        hdr[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(hdr).encode()
    h += b' ' * (-len(h) % 8)
    open(os.path.join(d, fname), 'wb').write(struct.pack('<Q', len(h)) + h + data)
    json.dump(cfg, open(os.path.join(d, 'config.json'), 'w'))


def put_expected(d, name, values):
    open(os.path.join(d, 'expected', name + '.f32'), 'wb').write(struct.pack('<%df' % len(values), *values))


def cases(root, rnd):
    """Write every GPTQ and AWQ case under root; their cases.txt lines.  root/imports.txt lists
    "case format" for the cases import_encoded keeps exactly (docs/dialects.md "GPTQ and AWQ")."""
    lines, imports = [], []
    imports.append(gptq_case(root, rnd, 'gptq3', 32, 128, 3, 64, False, False, False, 'config', lines) + ' q4_g64_fp16')
    imports.append(gptq_case(root, rnd, 'gptq2_sym', 32, 128, 2, 64, True, False, False, 'config', lines) +
                   ' q4_g64_fp16')
    imports.append(gptq_case(root, rnd, 'gptq4_asym', 32, 192, 4, 64, False, False, False, 'file', lines) +
                   ' q5_g64_fp16')
    imports.append(gptq_case(root, rnd, 'gptq8_sym', 16, 256, 8, 128, True, False, False, 'config', lines, qlo=1) +
                   ' q8_g32_fp16')
    # a code 0 with z = 128 is q - z = -128, which q8_g32_fp16 excludes: requantized only
    gptq_case(root, rnd, 'gptq8_sym_min', 16, 256, 8, 128, True, False, False, 'config', lines)
    gptq_case(root, rnd, 'gptq4', 64, 256, 4, 128, True, False, False, 'config', lines)
    gptq_case(root, rnd, 'gptq3_act', 64, 96, 3, 32, False, True, False, 'file', lines)
    gptq_case(root, rnd, 'gptq2_v2', 32, 128, 2, 64, False, False, True, 'config', lines)
    # asymmetric 2-bit whose zero points are all 1 (v1 stores 0): q - z in q2's [-1, 2]
    imports.append(gptq_case(root, rnd, 'gptq2_z1', 32, 256, 2, 128, False, False, False, 'file', lines, zfix=1) +
                   ' q2_g64_fp16')
    gptq_case(root, rnd, 'gptq8_row', 32, 64, 8, -1, False, False, False, 'config', lines)
    gptq_case(root, rnd, 'gptq4_bare', 64, 128, 4, 32, False, False, False, None, lines, with_g_idx=False)
    awq_case(root, rnd, 'awq_gemm', 64, 128, 64, False, 'file', lines)
    awq_case(root, rnd, 'awq_gemv', 16, 256, 64, True, 'config', lines)
    # tall weights: the converter's jobs of such weights hold 64 chunks' rows, read a chunk at a
    # time (docs/ninfer-convert.md "Long rows"); with small chunks a weight takes several jobs
    gptq_case(root, rnd, 'gptq4_tall', 1040, 128, 4, 64, False, False, False, 'config', lines, with_g_idx=False)
    awq_case(root, rnd, 'awq_tall', 1040, 128, 64, False, 'config', lines)
    imports += ['gptq4 q4_g64_fp16', 'gptq2_v2 q4_g64_fp16', 'awq_gemm q5_g64_fp16', 'awq_gemv q5_g64_fp16']
    # MLX: current mlx-lm (quantization and quantization_config alike), the embedding quantized
    # too; older mlx-lm (quantization alone) with BF16 scales; mixed bits per module with a
    # module left unquantized; no declaration at all
    mq = {'group_size': 64, 'bits': 4}
    mlx_case(root, rnd, 'mlx4', [('model.layers.0.self_attn.q_proj', 64, 128, 4, 64, 'F16'),
                                 ('model.embed_tokens', 32, 128, 4, 64, 'F16')],
             {'quantization': mq, 'quantization_config': mq}, lines)
    mlx_case(root, rnd, 'mlx3_old', [('model.layers.0.mlp.up_proj', 24, 96, 3, 32, 'BF16')],
             {'quantization': {'group_size': 32, 'bits': 3}}, lines)
    mixed = {'group_size': 64, 'bits': 4, 'model.layers.0.mlp.down_proj': {'group_size': 32, 'bits': 6},
             'model.layers.0.mlp.gate_proj': {'group_size': 128, 'bits': 5},
             'model.layers.0.self_attn.k_proj': {'group_size': 64, 'bits': 2}, 'model.layers.0.mlp.gate': False}
    mlx_case(root, rnd, 'mlx_mixed', [('model.layers.0.mlp.down_proj', 16, 128, 6, 32, 'F16'),
                                      ('model.layers.0.mlp.gate_proj', 8, 256, 5, 128, 'F16'),
                                      ('model.layers.0.self_attn.k_proj', 16, 128, 2, 64, 'F16'),
                                      ('model.layers.0.self_attn.v_proj', 16, 128, 4, 64, 'F16')],
             {'quantization': mixed, 'quantization_config': mixed}, lines,
             extra=[('model.layers.0.mlp.gate.weight', 'F16', [4, 128], struct.pack('<512e', *[0.25] * 512))])
    mlx_case(root, rnd, 'mlx8_bare', [('lm_head', 8, 256, 8, 128, 'F16')], None, lines)
    # MXFP4: gpt-oss in both layouts and compressed-tensors import into nvfp4 (their exponents
    # within 17 octaves); a wide one (E8M0 0 to 254: the extremes of binary32) is read, not imported
    imports.append(gpt_oss_case(root, rnd, 'gpt_oss_hf', False, lines) + ' nvfp4')
    imports.append(gpt_oss_case(root, rnd, 'gpt_oss_orig', True, lines) + ' nvfp4')
    imports.append(ct_mxfp4_case(root, rnd, 'ct_mxfp4', 128, 128, lines) + ' nvfp4')
    ct_mxfp4_case(root, rnd, 'ct_mxfp4_wide', 128, 64, lines, elo=0, ehi=127 + 125)
    # fbgemm FP8: the experts' column scales need --requantize, the Linear's row scales import
    fbgemm_case(root, rnd, 'fbgemm', lines)
    # bitsandbytes: NF4 with BF16 output, double-quantized NF4 with F16 output spanning two nested
    # blocks, FP4 with an odd element count (a block across rows, a padding nibble), no declaration;
    # LLM.int8
    b4 = {'load_in_4bit': True, '_load_in_4bit': True, 'bnb_4bit_quant_type': 'nf4', 'bnb_4bit_use_double_quant': True}
    bnb_case(root, rnd, 'bnb_nf4', [('model.layers.0.self_attn.q_proj', 32, 64, 'nf4'),
                                    ('model.layers.0.mlp.down_proj', 64, 512, 'nf4_dq:float16')], b4, lines)
    bnb_case(root, rnd, 'bnb_fp4', [('model.layers.0.mlp.up_proj', 7, 9, 'fp4:float32')], None, lines)
    bnb_case(root, rnd, 'bnb_int8', [('model.layers.0.mlp.gate_proj', 16, 64, 'int8')],
             {'load_in_8bit': True, '_load_in_8bit': True, 'llm_int8_threshold': 6.0}, lines)
    open(os.path.join(root, 'imports.txt'), 'w').write('\n'.join(imports) + '\n')
    return lines
