#!/usr/bin/env python3
"""Checkpoints for tests/cli/test_nvfp4_quantize.sh (usage: gen_nvfp4_modelopt.py OUT).

OUT/plain     a.weight F32 [256, 128], b.weight BF16 [128, 192], z.weight F32 [128, 64] (zeros)
OUT/modelopt  the same weights as NVIDIA TensorRT-Model-Optimizer exports them in NVFP4
              (NVFP4QTensor.quantize, its dynamic path), computed here in binary32 exactly as
              torch does: weight_scale_2 = amax / (6 * 448); per 16 values
              s = bmax / (6 * weight_scale_2), 0 -> 1, clamped to >= 2^-9, cast to float8_e4m3fn
              (nearest even); codes = the E2M1 code of x / (e4m3(s) * weight_scale_2) by ModelOpt's
              searchsorted over the bounds 0.25 .. 5 (ties at 0.75, 1.75, 3.5 rounded up), sign from
              x / ... < 0.  An all-zero matrix, where ModelOpt divides 0 by 0, gets
              weight_scale_2 = 1 (docs/methods.md, nvfp4_quantize).
OUT/expected  the values nvfp4 represents, (e2m1 * e4m3) / d with d = f32(1 / weight_scale_2)
OUT/long      l.weight F32 [128, 8192]: rows longer than a chunk
OUT/bad_shape, nan, tiny   refusals
"""
import json
import math
import os
import random
import struct
import sys


def f32(x):
    return struct.unpack('<f', struct.pack('<f', x))[0]


def bf16(x):
    b = struct.unpack('<I', struct.pack('<f', x))[0]
    b = ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF
    return struct.unpack('<f', struct.pack('<I', b << 16))[0], b


def e4m3_value(c):
    e, m = (c >> 3) & 15, c & 7
    return m * 2.0 ** -9 if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)


E4M3 = [e4m3_value(c) for c in range(0x7F)]


def e4m3_rne(s):
    """torch's float -> float8_e4m3fn for 0 < s < 464: nearest, ties to the even code."""
    best = 0
    for c in range(1, 0x7F):
        d, db = abs(s - E4M3[c]), abs(s - E4M3[best])
        if d < db or (d == db and c % 2 == 0):
            best = c
    return best


BOUNDS = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]


def cast_fp4(y):
    a = abs(y)
    ordv = sum(1 for b in BOUNDS if b < a)  # torch.searchsorted(bounds, a), right=False
    ordv += 1 if a in (0.75, 1.75, 3.5) else 0
    return (8 if y < 0 else 0) | ordv


def modelopt(vals, n, k):
    """(codes per value, scale words per 16, weight_scale_2, expected values)."""
    amax = max(abs(v) for v in vals)
    gs = f32(amax / 2688.0) if amax > 0 else 1.0
    six = f32(6.0 * gs)
    d = f32(1.0 / gs)
    codes, scales, expect = [], [], []
    for g in range(n * k // 16):
        blk = vals[16 * g:16 * g + 16]
        s = f32(max(abs(v) for v in blk) / six)
        if s == 0.0:
            s = 1.0
        s = max(s, 2.0 ** -9)
        e = e4m3_rne(s)
        scales.append(e)
        sv = f32(E4M3[e] * gs)
        for v in blk:
            c = cast_fp4(f32(v / sv))
            codes.append(c)
            mag = E2M1[c & 7] * E4M3[e]
            expect.append(f32((-mag if c & 8 else mag) / d))
    return codes, scales, gs, expect


def st_bytes(tensors):
    hdr, data = {}, b''
    for name, dtype, shape, raw in tensors:
        hdr[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(hdr).encode()
    h += b' ' * (-len(h) % 8)
    return struct.pack('<Q', len(h)) + h + data


def write(d, tensors, hf_quant=None):
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, 'model.safetensors'), 'wb').write(st_bytes(tensors))
    json.dump({'model_type': 'nvfp4-test'}, open(os.path.join(d, 'config.json'), 'w'))
    if hf_quant:
        json.dump(hf_quant, open(os.path.join(d, 'hf_quant_config.json'), 'w'))


def values(rnd, n, k):
    """Gaussian-ish values with some all-zero, tiny and huge groups, E2M1 ties and -0."""
    out = []
    for g in range(n * k // 16):
        kind = rnd.randrange(10)
        for _ in range(16):
            v = rnd.gauss(0.0, 0.02)
            if kind == 0:
                v = 0.0
            elif kind == 1:
                v *= 1e-6
            elif kind == 2:
                v *= 30.0
            elif kind == 3:
                v = rnd.choice([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.0]) * 0.01
            out.append(f32(v))
    return out


def main():
    out = sys.argv[1]
    rnd = random.Random(20261202)
    plain, mo = [], []
    hfq = {'producer': {'name': 'modelopt'},
           'quantization': {'quant_algo': 'NVFP4', 'group_size': 16, 'exclude_modules': ['lm_head']}}
    os.makedirs(os.path.join(out, 'expected'), exist_ok=True)
    for name, dtype, n, k in (('a.weight', 'F32', 256, 128), ('b.weight', 'BF16', 128, 192),
                              ('z.weight', 'F32', 128, 64)):
        vals = values(rnd, n, k) if name != 'z.weight' else [0.0, -0.0] * (n * k // 2)
        if dtype == 'BF16':
            pairs = [bf16(v) for v in vals]
            vals = [p[0] for p in pairs]
            raw = struct.pack('<%dH' % len(vals), *[p[1] for p in pairs])
        else:
            raw = struct.pack('<%df' % len(vals), *vals)
        plain.append((name, dtype, [n, k], raw))
        codes, scales, gs, expect = modelopt(vals, n, k)
        packed = bytes(codes[2 * i] | codes[2 * i + 1] << 4 for i in range(n * k // 2))
        p = name[:-len('.weight')]
        mo += [(name, 'U8', [n, k // 2], packed), (p + '.weight_scale', 'F8_E4M3', [n, k // 16], bytes(scales)),
               (p + '.weight_scale_2', 'F32', [], struct.pack('<f', gs)),
               (p + '.input_scale', 'F32', [], struct.pack('<f', 0.125))]
        open(os.path.join(out, 'expected', name + '.f32'), 'wb').write(struct.pack('<%df' % len(expect), *expect))
    write(os.path.join(out, 'plain'), plain)
    write(os.path.join(out, 'modelopt'), mo, hfq)

    n, k = 128, 8192
    raw = struct.pack('<%df' % (n * k), *[f32(rnd.gauss(0.0, 0.02)) for _ in range(n * k)])
    write(os.path.join(out, 'long'), [('l.weight', 'F32', [n, k], raw)])

    write(os.path.join(out, 'bad_shape'), [('short.weight', 'F32', [64, 128], struct.pack('<%df' % (64 * 128),
                                                                                       *([0.5] * 64 * 128)))])
    nan = [0.5] * (128 * 64)
    nan[3 * 64 + 40] = math.nan
    write(os.path.join(out, 'nan'), [('nan.weight', 'F32', [128, 64], struct.pack('<%df' % len(nan), *nan))])
    write(os.path.join(out, 'tiny'), [('tiny.weight', 'F32', [128, 64], struct.pack('<%df' % (128 * 64),
                                                                                  *([1e-37] * 128 * 64)))])


if __name__ == '__main__':
    main()
