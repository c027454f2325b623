#!/usr/bin/env python3
"""GGUF files of the ggml block types read as values (docs/formats.md 8.5), for test_ggml_values.sh.

The blocks are ggml's own (tests/data/gguf/more: source.f32 quantized by ggml, random blocks),
and so are the expected values (ggml's to_float of the same bytes), written beside each file as
<tensor>.f32 (row-major binary32).  Only the GGUF container is written here.

usage: gen_ggml_values.py DATA_DIR OUT_DIR
"""
import os
import struct
import sys

TYPES = {  # ggml type id, values per block, bytes per block
    'q4_1': (3, 32, 20), 'q5_1': (7, 32, 24), 'q8_1': (9, 32, 36), 'q8_k': (15, 256, 292),
    'tq1_0': (34, 256, 54), 'tq2_0': (35, 256, 66), 'mxfp4': (39, 32, 17), 'nvfp4': (40, 64, 36),
    'q1_0': (41, 128, 18),
}


def gguf_str(s):
    b = s.encode()
    return struct.pack('<Q', len(b)) + b


def write_gguf(path, tensors, alignment=32):
    """tensors: (name, ggml_type, shape row-major, data bytes)."""
    kv = gguf_str('general.architecture') + struct.pack('<I', 8) + gguf_str('llama')
    kv += gguf_str('general.alignment') + struct.pack('<II', 4, alignment)
    info, blob = b'', b''
    for name, ty, shape, data in tensors:
        blob += b'\0' * (-len(blob) % alignment)
        info += gguf_str(name) + struct.pack('<I', len(shape))
        for d in reversed(shape):  # ne: innermost first
            info += struct.pack('<Q', d)
        info += struct.pack('<IQ', ty, len(blob))
        blob += data
    head = b'GGUF' + struct.pack('<IQQ', 3, len(tensors), 2) + kv + info
    head += b'\0' * (-len(head) % alignment)
    with open(path, 'wb') as f:
        f.write(head + blob)


def main():
    data, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)

    def load(stem, kind):
        with open(os.path.join(data, 'gguf', 'more', f'{stem}.{kind}'), 'rb') as f:
            return f.read()

    def emit(path, tensors):
        write_gguf(os.path.join(out, path), [(n, TYPES[t][0], sh, q) for n, t, sh, q, _ in tensors])
        for n, _, _, _, vals in tensors:
            with open(os.path.join(out, n + '.f32'), 'wb') as f:
                f.write(vals)

    # model.gguf: every type as ggml quantized source.f32 (16 x 512), with llama.cpp's names; the
    # fp4 ones stacked 8 times (128 rows, nvfp4's tiles), MXFP4 as a bank of 2 experts.
    m = []
    names = {'q5_1': 'blk.0.ffn_down.weight', 'q4_1': 'blk.0.ffn_up.weight', 'q8_k': 'blk.0.ffn_gate.weight',
             'q8_1': 'blk.0.attn_q.weight', 'tq1_0': 'blk.0.attn_k.weight', 'tq2_0': 'blk.0.attn_v.weight',
             'q1_0': 'blk.0.attn_output.weight'}
    for t, n in names.items():
        m.append((n, t, [16, 512], load(t, 'qbytes'), load(t, 'dequant.f32')))
    m.append(('blk.1.ffn_gate_exps.weight', 'mxfp4', [2, 128, 512], load('mxfp4', 'qbytes') * 16,
              load('mxfp4', 'dequant.f32') * 16))
    m.append(('blk.1.ffn_up.weight', 'nvfp4', [128, 512], load('nvfp4', 'qbytes') * 8, load('nvfp4', 'dequant.f32') * 8))
    emit('model.gguf', m)

    # random.gguf: random blocks (any code, zero and negative and subnormal scales), which only q2
    # holds for the ternary types (TQ2_0's code 3, a -0 or +0 scale over nonzero codes)
    r = []
    for n, t in (('blk.2.attn_k.weight', 'tq1_0'), ('blk.2.attn_v.weight', 'tq2_0'),
                 ('blk.2.attn_output.weight', 'q1_0'), ('blk.2.ffn_down.weight', 'q4_1'),
                 ('blk.2.ffn_up.weight', 'q5_1'), ('blk.2.ffn_gate.weight', 'q8_k')):
        qk = TYPES[t][1]
        r.append((n, t, [4, 16 * qk], load(t, 'rand.qbytes'), load(t, 'rand.dequant.f32')))
    emit('random.gguf', r)

    # small_fp4.gguf: MXFP4 and NVFP4 of 16 rows: no nvfp4 tiles, so no exact target
    emit('small_fp4.gguf', [('blk.3.ffn_down.weight', 'mxfp4', [16, 512], load('mxfp4', 'qbytes'),
                             load('mxfp4', 'dequant.f32')),
                            ('blk.3.ffn_up.weight', 'nvfp4', [16, 512], load('nvfp4', 'qbytes'),
                             load('nvfp4', 'dequant.f32'))])


if __name__ == '__main__':
    main()
