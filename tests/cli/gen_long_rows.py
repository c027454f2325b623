#!/usr/bin/env python3
"""A checkpoint of one long tensor for the bounded-memory tests (test_long_rows.sh,
test_diff.sh): DIR/model.safetensors holding NAME [ROWS, COLS] and DIR/config.json.

usage: gen_long_rows.py DIR NAME ROWS COLS [DIALECT]

Without DIALECT, NAME is a BF16 tensor (an empty config.json).  With one, NAME is the codes
tensor of a quantized weight of that dialect (docs/dialects.md) with its companions, declared in
config.json or hf_quant_config.json:

  deepseek_fp8     NAME = P.weight F8_E4M3, P.weight_scale_inv F32 over 128x128 blocks
  ct_int4          NAME = P.weight_packed I32 (int4, asymmetric, groups of 128), P.weight_scale
                   BF16, P.weight_zero_point I32 packed along the rows, P.weight_shape
  modelopt_nvfp4   NAME = P.weight U8 (two E2M1 codes a byte), P.weight_scale F8_E4M3 per 16,
                   P.weight_scale_2 F32
  ct_mxfp4         NAME = P.weight_packed U8 (two E2M1 codes a byte), P.weight_scale U8 E8M0 per
                   32 (exponents 120..135: within the 17 octaves nvfp4 imports)
  gptq4            NAME = P.qweight I32 [COLS/8, ROWS] (4-bit, groups of 128, v1), P.qzeros,
                   P.scales F16 [COLS/128, ROWS], P.g_idx I32 [COLS] (each group's columns
                   swapped pairwise, so that spans read a permuted g_idx)

The values are a cheap pattern, varied per block of 4096 bytes, so that encoders and statistics
see more than one value without the generator costing seconds.  Codes of nvfp4 weights are
written sparsely (a 4 KiB block of every 64 KiB; the rest is a hole of zero codes), so a large
weight costs little disk."""
import array
import json
import os
import struct
import sys

BLOCK = 4096


class Pattern:
    """A deterministic generator of one small number per block."""

    def __init__(self, seed):
        self.x = seed

    def next(self):
        self.x = (self.x * 1103515245 + 12345) & 0x7FFFFFFF
        return self.x


def dense(nbytes, word, seed, block=BLOCK):
    """nbytes of blocks of `block` bytes, each one repeated word(x) (bytes) of a new x."""
    out, p = bytearray(nbytes), Pattern(seed)
    for i in range(0, nbytes, block):
        w = word(p.next())
        out[i:i + block] = (w * (block // len(w)))[:min(block, nbytes - i)]
    return bytes(out)


def write(d, tensors, config=None, hf_quant=None):
    """tensors: (name, dtype, shape, nbytes, data) with data bytes, or a list of (offset, bytes)
    runs over zeros (a sparse file)."""
    os.makedirs(d)
    hdr, off = {}, 0
    for name, dtype, shape, nbytes, _ in tensors:
        hdr[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [off, off + nbytes]}
        off += nbytes
    h = json.dumps(hdr).encode()
    h += b' ' * (-len(h) % 8)
    with open(os.path.join(d, 'model.safetensors'), 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h)
        base = f.tell()
        for name, _, _, nbytes, data in tensors:
            start = base + hdr[name]['data_offsets'][0]
            if isinstance(data, (bytes, bytearray)):
                f.seek(start)
                f.write(data)
            else:
                for o, run in data:
                    f.seek(start + o)
                    f.write(run)
        f.truncate(base + off)
    with open(os.path.join(d, 'config.json'), 'w') as f:
        json.dump(config or {}, f)
    if hf_quant:
        with open(os.path.join(d, 'hf_quant_config.json'), 'w') as f:
            json.dump(hf_quant, f)


def prefix(name, suffix):
    if not name.endswith(suffix):
        sys.exit('gen_long_rows.py: NAME must end with %s for this dialect' % suffix)
    return name[:-len(suffix)]


def main():
    d, name, rows, cols = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    dialect = sys.argv[5] if len(sys.argv) > 5 else None
    cdiv = lambda a, b: -(-a // b)
    if dialect is None:
        # normal bf16 numbers near 1, either sign, per block of 4096 values
        data = dense(rows * cols * 2, lambda x: struct.pack('<H', 0x3C00 + (x & 0x3FF) | ((x >> 10) & 1) << 15), 12345,
                     2 * BLOCK)
        write(d, [(name, 'BF16', [rows, cols], len(data), data)])
    elif dialect == 'deepseek_fp8':
        p = prefix(name, '.weight')
        codes = dense(rows * cols, lambda x: bytes([0x28 + (x & 0x3F) | ((x >> 6) & 1) << 7, 0x30 + (x >> 8 & 7)]), 7)
        sr, sc = cdiv(rows, 128), cdiv(cols, 128)
        scales = dense(sr * sc * 4, lambda x: struct.pack('<f', (1 + (x & 0xFF) / 256.0) * 2.0 ** -6), 8)
        write(d, [(name, 'F8_E4M3', [rows, cols], len(codes), codes),
                  (p + '.weight_scale_inv', 'F32', [sr, sc], len(scales), scales)],
              config={'quantization_config': {'quant_method': 'fp8', 'fmt': 'e4m3', 'activation_scheme': 'dynamic',
                                              'weight_block_size': [128, 128]}})
    elif dialect == 'ct_int4':
        p = prefix(name, '.weight_packed')
        if cols % 8:
            sys.exit('gen_long_rows.py: ct_int4 needs COLS a multiple of 8')
        g = cdiv(cols, 128)
        packed = dense(rows * cols // 2, lambda x: struct.pack('<I', x * 2654435761 & 0xFFFFFFFF), 9)
        scales = dense(rows * g * 2, lambda x: struct.pack('<H', 0x3C00 + (x & 0x7F)), 10)
        zp = dense(cdiv(rows, 8) * g * 4, lambda x: struct.pack('<I', x * 40503 & 0xFFFFFFFF), 11)
        write(d, [(name, 'I32', [rows, cols // 8], len(packed), packed),
                  (p + '.weight_scale', 'BF16', [rows, g], len(scales), scales),
                  (p + '.weight_zero_point', 'I32', [cdiv(rows, 8), g], len(zp), zp),
                  (p + '.weight_shape', 'I64', [2], 16, struct.pack('<2q', rows, cols))],
              config={'quantization_config': {
                  'quant_method': 'compressed-tensors', 'format': 'pack-quantized', 'config_groups': {
                      'group_0': {'targets': ['Linear'],
                                  'weights': {'num_bits': 4, 'type': 'int', 'symmetric': False, 'strategy': 'group',
                                              'group_size': 128}}}}})
    elif dialect == 'modelopt_nvfp4':
        p = prefix(name, '.weight')
        if cols % 64:
            sys.exit('gen_long_rows.py: modelopt_nvfp4 needs COLS a multiple of 64')
        nbytes, pat = rows * cols // 2, Pattern(12)
        runs = [(o, bytes([pat.next() & 0xFF]) * BLOCK) for o in range(0, nbytes, 16 * BLOCK)]
        scales = dense(rows * cols // 16, lambda x: bytes([0x30 + (x & 0x1F)]), 13)
        write(d, [(name, 'U8', [rows, cols // 2], nbytes, runs),
                  (p + '.weight_scale', 'F8_E4M3', [rows, cols // 16], len(scales), scales),
                  (p + '.weight_scale_2', 'F32', [], 4, struct.pack('<f', 0.0078125))],
              hf_quant={'producer': {'name': 'modelopt'},
                        'quantization': {'quant_algo': 'NVFP4', 'group_size': 16}})
    elif dialect == 'ct_mxfp4':
        p = prefix(name, '.weight_packed')
        if cols % 64:
            sys.exit('gen_long_rows.py: ct_mxfp4 needs COLS a multiple of 64')
        nbytes, pat = rows * cols // 2, Pattern(17)
        runs = [(o, bytes([pat.next() & 0xFF]) * BLOCK) for o in range(0, nbytes, 16 * BLOCK)]
        scales = dense(rows * cols // 32, lambda x: bytes([120 + (x & 0xF)]), 18)
        write(d, [(name, 'U8', [rows, cols // 2], nbytes, runs),
                  (p + '.weight_scale', 'U8', [rows, cols // 32], len(scales), scales)],
              config={'quantization_config': {
                  'quant_method': 'compressed-tensors', 'format': 'mxfp4-pack-quantized', 'config_groups': {
                      'group_0': {'targets': ['Linear'],
                                  'weights': {'num_bits': 4, 'type': 'float', 'symmetric': True, 'strategy': 'group',
                                              'group_size': 32}}}}})
    elif dialect == 'gptq4':
        p = prefix(name, '.qweight')
        if cols % 256:
            sys.exit('gen_long_rows.py: gptq4 needs COLS a multiple of 256')
        g, zw = cols // 128, cdiv(rows, 8)
        packed = dense(cols // 8 * rows * 4, lambda x: struct.pack('<I', x * 2654435761 & 0xFFFFFFFF), 14)
        scales = dense(g * rows * 2, lambda x: struct.pack('<H', 0x2000 + (x & 0x3FF)), 15)
        zeros = dense(g * zw * 4, lambda x: struct.pack('<I', x * 40503 & 0xFFFFFFFF), 16)
        # group of column k: k / 128, but columns 2j and 2j + 1 trade groups across each pair of
        # groups (a permutation of k / 128, as act-order writes)
        gi = array.array('i', ((k >> 7) ^ (k & 1) for k in range(cols)))
        if sys.byteorder != 'little':
            gi.byteswap()
        write(d, [(name, 'I32', [cols // 8, rows], len(packed), packed),
                  (p + '.qzeros', 'I32', [g, zw], len(zeros), zeros),
                  (p + '.scales', 'F16', [g, rows], len(scales), scales),
                  (p + '.g_idx', 'I32', [cols], 4 * cols, gi.tobytes())],
              config={'quantization_config': {'quant_method': 'gptq', 'bits': 4, 'group_size': 128,
                                              'desc_act': True, 'sym': False}})
    else:
        sys.exit('gen_long_rows.py: unknown dialect ' + dialect)


main()
