#!/usr/bin/env python3
"""Small checkpoints laid out like the published quantized ones, with their values computed here
from the dialect definitions (docs/dialects.md), independently of the library.

    python3 tests/cli/gen_dialects.py OUT_DIR

writes OUT_DIR/<case>/ (a checkpoint: safetensors shards, an index when sharded, config.json or
hf_quant_config.json) and OUT_DIR/<case>/expected/<weight>.f32: the weight's values, binary32
little-endian, row-major [N, K].  OUT_DIR/cases.txt lists "case weight N K dialect" lines.

The oracle: every value is the exact real value (code times scale, over the global scale,
minus the zero point first) rounded once to binary32 -- computed with Python's binary64, where
each product of a code (at most 9 significant bits) and a scale (at most 24) is exact, then
rounded to binary32 by struct.pack (round to nearest, ties to even).  A quotient is rounded
twice (to binary64, then binary32), which is innocuous since 53 >= 2 * 24 + 2.
Nothing is random: the same script gives the same bytes.
"""
import json
import math
import os
import random
import struct
import sys

import gen_packed


# ---------------------------------------------------------------- number formats
def e4m3_value(c):
    s = -1.0 if c & 0x80 else 1.0
    e, m = (c >> 3) & 15, c & 7
    if e == 15 and m == 7:
        return math.nan
    if e == 0:
        return s * m * 2.0 ** -9
    return s * (1 + m / 8) * 2.0 ** (e - 7)


def e5m2_value(c):
    return struct.unpack('<e', struct.pack('<H', c << 8))[0]


E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def e2m1_value(n):
    v = E2M1[n & 7]
    return -v if n & 8 else v


def f32(x):
    return struct.unpack('<f', struct.pack('<f', x))[0]


def bf16_bits(x):
    """x (a binary32 value) to bfloat16, round to nearest even."""
    b = struct.unpack('<I', struct.pack('<f', x))[0]
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def bf16_value(h):
    return struct.unpack('<f', struct.pack('<I', h << 16))[0]


def e4m3_nearest_code(x):
    """a positive E4M3FN code near x (for scales)."""
    best = min(range(1, 0x7F), key=lambda c: abs(e4m3_value(c) - x))
    return best


# ---------------------------------------------------------------- safetensors
def st_bytes(tensors):
    hdr, data = {}, b''
    for name, dtype, shape, raw in tensors:
        hdr[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(hdr).encode()
    h += b' ' * (-len(h) % 8)
    return struct.pack('<Q', len(h)) + h + data


def write_ckpt(d, shards, config=None, hf_quant=None):
    os.makedirs(os.path.join(d, 'expected'), exist_ok=True)
    if len(shards) == 1:
        open(os.path.join(d, 'model.safetensors'), 'wb').write(st_bytes(shards[0]))
    else:
        wm = {}
        for i, ts in enumerate(shards):
            fn = 'model-%05d-of-%05d.safetensors' % (i + 1, len(shards))
            open(os.path.join(d, fn), 'wb').write(st_bytes(ts))
            for t in ts:
                wm[t[0]] = fn
        json.dump({'metadata': {}, 'weight_map': wm}, open(os.path.join(d, 'model.safetensors.index.json'), 'w'))
    json.dump(config or {'model_type': 'dialect-test'}, open(os.path.join(d, 'config.json'), 'w'))
    if hf_quant:
        json.dump(hf_quant, open(os.path.join(d, 'hf_quant_config.json'), 'w'))


def put_expected(d, name, values):
    os.makedirs(os.path.join(d, 'expected'), exist_ok=True)
    open(os.path.join(d, 'expected', name + '.f32'), 'wb').write(struct.pack('<%df' % len(values), *values))


def bf16_tensor(name, n, k, rnd):
    vals = [bf16_bits(rnd.uniform(-1, 1)) for _ in range(n * k)]
    return (name, 'BF16', [n, k], struct.pack('<%dH' % len(vals), *vals))


# ---------------------------------------------------------------- FP8 with a scale grid
FINITE_E4M3 = [c for c in range(256) if (c & 0x7F) != 0x7F]


def fp8_case(rnd, n, k, br, bc, scale_dtype='F32', e5m2=False):
    """codes [n, k], scales over blocks br x bc; returns (codes bytes, scale bytes, scale shape
    rows x cols, values)."""
    sr, sc = -(-n // br), -(-k // bc)
    if e5m2:
        finite = [c for c in range(256) if (c & 0x7C) != 0x7C]
        dec = e5m2_value
    else:
        finite, dec = FINITE_E4M3, e4m3_value
    codes = [rnd.choice(finite) for _ in range(n * k)]
    scales = []
    for _ in range(sr * sc):
        v = f32(rnd.uniform(1e-3, 3e-2) * 2.0 ** rnd.randrange(-3, 4))
        if scale_dtype == 'BF16':
            v = bf16_value(bf16_bits(v))
        elif scale_dtype == 'F16':
            v = struct.unpack('<e', struct.pack('<e', v))[0]
        scales.append(v)
    values = [f32(dec(codes[r * k + c]) * scales[(r // br) * sc + c // bc]) for r in range(n) for c in range(k)]
    if scale_dtype == 'F32':
        raw = struct.pack('<%df' % len(scales), *scales)
    elif scale_dtype == 'BF16':
        raw = struct.pack('<%dH' % len(scales), *[bf16_bits(v) for v in scales])
    else:
        raw = struct.pack('<%de' % len(scales), *scales)
    return bytes(codes), raw, (sr, sc), values


# ---------------------------------------------------------------- integer packing
def pack_rows(ints, rows, cols, bits):
    """offset-binary codes packed LSB-first, 32 // bits per little-endian int32, padded."""
    per, off = 32 // bits, 1 << (bits - 1)
    words = []
    wpr = -(-cols // per)
    for r in range(rows):
        for w in range(wpr):
            acc = 0
            for j in range(per):
                c = w * per + j
                if c < cols:
                    acc |= ((ints[r * cols + c] + off) & ((1 << bits) - 1)) << (j * bits)
            words.append(acc)
    return struct.pack('<%dI' % len(words), *words), wpr


def pack_cols_dim0(ints, rows, cols, bits):
    """zero points [rows, cols] packed along dim 0: [ceil(rows/per), cols]."""
    t = [ints[r * cols + c] for c in range(cols) for r in range(rows)]  # transpose
    packed, wpr = pack_rows(t, cols, rows, bits)
    words = struct.unpack('<%dI' % (cols * wpr), packed)
    out = [words[c * wpr + w] for w in range(wpr) for c in range(cols)]
    return struct.pack('<%dI' % len(out), *out), wpr


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rnd = random.Random(16)
    lines = []

    # DeepSeek-V3: 128x128 blocks, N and K not multiples of 128, scales in the other shard,
    # an MTP layer (layer id = num_hidden_layers), a BF16 tensor left as it is
    d = os.path.join(out, 'deepseek')
    n, k = 200, 300
    codes, scales, (sr, sc), vals = fp8_case(rnd, n, k, 128, 128)
    w = 'model.layers.0.mlp.down_proj.weight'
    c2, s2, (sr2, sc2), v2 = fp8_case(rnd, 130, 64, 128, 128)
    w2 = 'model.layers.1.self_attn.o_proj.weight'  # the MTP layer of a 1-layer model
    write_ckpt(d, [[(w, 'F8_E4M3', [n, k], codes), (w2 + '_scale_inv', 'F32', [sr2, sc2], s2),
                    bf16_tensor('model.norm.weight', 1, 64, rnd)],
                   [(w + '_scale_inv', 'F32', [sr, sc], scales), (w2, 'F8_E4M3', [130, 64], c2)]],
               config={'model_type': 'deepseek_v3', 'num_hidden_layers': 1,
                       'quantization_config': {'activation_scheme': 'dynamic', 'fmt': 'e4m3',
                                               'quant_method': 'fp8', 'weight_block_size': [128, 128]}})
    put_expected(d, w, vals)
    put_expected(d, w2, v2)
    lines += ['deepseek %s %d %d deepseek_fp8' % (w, n, k), 'deepseek %s 130 64 deepseek_fp8' % w2]

    # compressed-tensors FP8: channel (F32 [N,1], with a static input_scale), tensor (BF16
    # scalar), group 32 (F16), block 64x32 with edges; one declaration with four groups
    d = os.path.join(out, 'ct_fp8')
    groups, tensors = {}, []
    specs = [('model.layers.0.mlp.gate_proj', 48, 96, 'channel', 1, 96, 'F32'),
             ('model.layers.0.mlp.up_proj', 40, 64, 'tensor', 40, 64, 'BF16'),
             ('model.layers.0.mlp.down_proj', 33, 96, 'group', 1, 32, 'F16'),
             ('model.layers.0.self_attn.q_proj', 70, 80, 'block', 64, 32, 'F32')]
    for i, (p, n, k, strat, br, bc, sdt) in enumerate(specs):
        codes, scales, (sr, sc), vals = fp8_case(rnd, n, k, br, bc, sdt)
        shape = [] if strat == 'tensor' else [sr, sc]
        tensors += [(p + '.weight', 'F8_E4M3', [n, k], codes), (p + '.weight_scale', sdt, shape, scales)]
        if strat == 'channel':
            tensors.append((p + '.input_scale', 'F32', [1], struct.pack('<f', 0.25)))
        wdef = {'num_bits': 8, 'type': 'float', 'symmetric': True, 'strategy': strat}
        if strat == 'group':
            wdef['group_size'] = 32
        if strat == 'block':
            wdef['block_structure'] = [64, 32]
        groups['group_%d' % i] = {'targets': ['re:.*' + p.split('.')[-1] + '$'], 'weights': wdef}
        put_expected(d, p + '.weight', vals)
        lines.append('ct_fp8 %s.weight %d %d compressed_tensors_fp8' % (p, n, k))
    tensors += [bf16_tensor('lm_head.weight', 16, 64, rnd)]
    write_ckpt(d, [tensors], config={'quantization_config': {
        'quant_method': 'compressed-tensors', 'format': 'float-quantized', 'config_groups': groups,
        'ignore': ['lm_head'], 'quantization_status': 'compressed'}})

    # ModelOpt FP8 per tensor (hf_quant_config.json), with input_scale
    d = os.path.join(out, 'modelopt_fp8')
    n, k = 24, 48
    codes, scales, _, vals = fp8_case(rnd, n, k, n, k)
    p = 'model.layers.0.self_attn.k_proj'
    write_ckpt(d, [[(p + '.weight', 'F8_E4M3', [n, k], codes), (p + '.weight_scale', 'F32', [], scales),
                    (p + '.input_scale', 'F32', [], struct.pack('<f', 0.5))]],
               hf_quant={'producer': {'name': 'modelopt', 'version': '0.19'},
                         'quantization': {'quant_algo': 'FP8', 'kv_cache_quant_algo': None,
                                          'exclude_modules': ['lm_head']}})
    put_expected(d, p + '.weight', vals)
    lines.append('modelopt_fp8 %s.weight %d %d modelopt_fp8' % (p, n, k))

    # compressed-tensors pack-quantized: int4 asymmetric group 32 with K = 100 (padded words,
    # edge group, zero points packed along the rows), int8 symmetric channel
    d = os.path.join(out, 'ct_int')
    tensors = []
    n, k, g, bits = 20, 100, 32, 4
    G = -(-k // g)
    q = [rnd.randrange(-8, 8) for _ in range(n * k)]
    z = [rnd.randrange(-8, 8) for _ in range(n * G)]
    s = [bf16_value(bf16_bits(rnd.uniform(0.01, 0.1))) for _ in range(n * G)]
    packed, wpr = pack_rows(q, n, k, bits)
    zp, zrows = pack_cols_dim0(z, n, G, bits)
    p4 = 'model.layers.0.mlp.down_proj'
    tensors += [(p4 + '.weight_packed', 'I32', [n, wpr], packed),
                (p4 + '.weight_scale', 'BF16', [n, G], struct.pack('<%dH' % len(s), *[bf16_bits(v) for v in s])),
                (p4 + '.weight_zero_point', 'I32', [zrows, G], zp),
                (p4 + '.weight_shape', 'I64', [2], struct.pack('<2q', n, k))]
    vals4 = [f32((q[r * k + c] - z[r * G + c // g]) * s[r * G + c // g]) for r in range(n) for c in range(k)]
    n8, k8 = 12, 40
    q8 = [rnd.randrange(-128, 128) for _ in range(n8 * k8)]
    s8 = [f32(rnd.uniform(1e-3, 1e-2)) for _ in range(n8)]
    packed8, wpr8 = pack_rows(q8, n8, k8, 8)
    p8 = 'model.layers.0.mlp.up_proj'
    tensors += [(p8 + '.weight_packed', 'I32', [n8, wpr8], packed8),
                (p8 + '.weight_scale', 'F32', [n8, 1], struct.pack('<%df' % n8, *s8)),
                (p8 + '.weight_shape', 'I64', [2], struct.pack('<2q', n8, k8))]
    vals8 = [f32(q8[r * k8 + c] * s8[r]) for r in range(n8) for c in range(k8)]
    write_ckpt(d, [tensors], config={'quantization_config': {
        'quant_method': 'compressed-tensors', 'format': 'pack-quantized', 'config_groups': {
            'group_0': {'targets': ['re:.*down_proj$'],
                        'weights': {'num_bits': 4, 'type': 'int', 'symmetric': False, 'strategy': 'group',
                                    'group_size': g}},
            'group_1': {'targets': ['re:.*up_proj$'],
                        'weights': {'num_bits': 8, 'type': 'int', 'symmetric': True, 'strategy': 'channel'}}},
        'ignore': ['lm_head']}})
    put_expected(d, p4 + '.weight_packed', vals4)
    put_expected(d, p8 + '.weight_packed', vals8)
    lines += ['ct_int %s.weight_packed %d %d compressed_tensors_int' % (p4, n, k),
              'ct_int %s.weight_packed %d %d compressed_tensors_int' % (p8, n8, k8)]

    # pack-quantized widths and groups that do not fall on word or byte boundaries: int4
    # asymmetric in groups of 7 over K = 45 (groups starting mid-byte, an odd last column), int3
    # per row (ten codes per word, two bits unused), int2 symmetric groups of 24 over K = 50
    d = os.path.join(out, 'ct_int_odd')
    tensors, groups = [], {}
    for i, (p, n, k, bits, g, sym) in enumerate([('model.layers.0.mlp.down_proj', 9, 45, 4, 7, False),
                                                 ('model.layers.0.mlp.up_proj', 5, 37, 3, 0, True),
                                                 ('model.layers.0.mlp.gate_proj', 6, 50, 2, 24, True)]):
        G = -(-k // g) if g else 1
        lo, hi = -(1 << (bits - 1)), 1 << (bits - 1)
        q = [rnd.randrange(lo, hi) for _ in range(n * k)]
        z = [rnd.randrange(lo, hi) if not sym else 0 for _ in range(n * G)]
        s = [bf16_value(bf16_bits(rnd.uniform(0.01, 0.1))) for _ in range(n * G)]
        packed, wpr = pack_rows(q, n, k, bits)
        gs = g or k
        tensors += [(p + '.weight_packed', 'I32', [n, wpr], packed),
                    (p + '.weight_scale', 'BF16', [n, G], struct.pack('<%dH' % len(s), *[bf16_bits(v) for v in s])),
                    (p + '.weight_shape', 'I64', [2], struct.pack('<2q', n, k))]
        if not sym:
            zp, zrows = pack_cols_dim0(z, n, G, bits)
            tensors.append((p + '.weight_zero_point', 'I32', [zrows, G], zp))
        wdef = {'num_bits': bits, 'type': 'int', 'symmetric': sym, 'strategy': 'group' if g else 'channel'}
        if g:
            wdef['group_size'] = g
        groups['group_%d' % i] = {'targets': ['re:.*' + p.split('.')[-1] + '$'], 'weights': wdef}
        put_expected(d, p + '.weight_packed',
                     [f32((q[r * k + c] - z[r * G + c // gs]) * s[r * G + c // gs]) for r in range(n) for c in range(k)])
        lines.append('ct_int_odd %s.weight_packed %d %d compressed_tensors_int' % (p, n, k))
    write_ckpt(d, [tensors], config={'quantization_config': {
        'quant_method': 'compressed-tensors', 'format': 'pack-quantized', 'config_groups': groups}})

    # NVFP4, both conventions for the global scale: ModelOpt multiplies by weight_scale_2,
    # compressed-tensors divides by weight_global_scale
    for case, modelopt in (('modelopt_nvfp4', True), ('ct_nvfp4', False)):
        d = os.path.join(out, case)
        n, k = 128, 64
        nib = [rnd.randrange(16) for _ in range(n * k)]
        codes = bytes(nib[2 * i] | nib[2 * i + 1] << 4 for i in range(n * k // 2))
        sc = [e4m3_nearest_code(rnd.uniform(0.05, 2.0)) for _ in range(n * k // 16)]
        gs = f32(rnd.uniform(1e-4, 1e-2)) if modelopt else f32(rnd.uniform(100, 3000))
        p = 'model.layers.0.mlp.gate_proj'
        if modelopt:
            vals = [f32(e2m1_value(nib[r * k + c]) * e4m3_value(sc[r * (k // 16) + c // 16]) * gs)
                    for r in range(n) for c in range(k)]
            ts = [(p + '.weight', 'U8', [n, k // 2], codes), (p + '.weight_scale', 'F8_E4M3', [n, k // 16], bytes(sc)),
                  (p + '.weight_scale_2', 'F32', [], struct.pack('<f', gs)),
                  (p + '.input_scale', 'F32', [], struct.pack('<f', 0.125))]
            write_ckpt(d, [ts], hf_quant={'producer': {'name': 'modelopt'},
                                          'quantization': {'quant_algo': 'NVFP4', 'group_size': 16,
                                                           'exclude_modules': ['lm_head']}})
            name = p + '.weight'
        else:
            vals = [f32(e2m1_value(nib[r * k + c]) * e4m3_value(sc[r * (k // 16) + c // 16]) / gs)
                    for r in range(n) for c in range(k)]
            ts = [(p + '.weight_packed', 'U8', [n, k // 2], codes),
                  (p + '.weight_scale', 'F8_E4M3', [n, k // 16], bytes(sc)),
                  (p + '.weight_global_scale', 'F32', [1], struct.pack('<f', gs)),
                  (p + '.input_global_scale', 'F32', [1], struct.pack('<f', 448.0))]
            write_ckpt(d, [ts], config={'quantization_config': {
                'quant_method': 'compressed-tensors', 'format': 'nvfp4-pack-quantized', 'config_groups': {
                    'group_0': {'targets': ['Linear'],
                                'weights': {'num_bits': 4, 'type': 'float', 'symmetric': True,
                                            'strategy': 'tensor_group', 'group_size': 16}}}}})
            name = p + '.weight_packed'
        put_expected(d, name, vals)
        lines.append('%s %s %d %d %s' % (case, name, n, k,
                                          'modelopt_nvfp4' if modelopt else 'compressed_tensors_nvfp4'))

    # GPTQ and AWQ, packed as their producers pack them (gen_packed.py)
    lines += gen_packed.cases(out, rnd)

    open(os.path.join(out, 'cases.txt'), 'w').write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    main()
