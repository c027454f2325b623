#!/usr/bin/env python3
"""Write a llama-imatrix GGUF for a checkpoint of ninfer-gen-checkpoint's Llama shape (helper of
the CLI tests; not a test itself): for each layer and each of its seven matrices, T.in_sum2 (one
value per input column: 1 + (i mod PERIOD)) and T.counts (one value, COUNT).

usage: gen_imatrix.py OUT.gguf HIDDEN INTERMEDIATE LAYERS PERIOD COUNT"""
import struct
import sys


def gguf_string(x):
    b = x.encode()
    return struct.pack('<Q', len(b)) + b


def write_imatrix(out_path, vectors):
    """vectors: (tensor name, importance list) pairs; each gets T.in_sum2 and T.counts (1)."""
    write_entries(out_path, [e for name, vec in vectors for e in ((name + '.in_sum2', vec), (name + '.counts', [1.0]))])


def write_entries(out_path, ts):
    out = b'GGUF' + struct.pack('<IQQ', 3, len(ts), 0)
    off = 0
    for name, vals in ts:   # one F32 vector each (type 0), 32-byte aligned
        out += gguf_string(name) + struct.pack('<I', 1) + struct.pack('<Q', len(vals)) + struct.pack('<IQ', 0, off)
        off += (len(vals) * 4 + 31) // 32 * 32
    out += b'\0' * (-len(out) % 32)
    for name, vals in ts:
        d = struct.pack('<%df' % len(vals), *vals)
        out += d + b'\0' * (-len(d) % 32)
    with open(out_path, 'wb') as f:
        f.write(out)


def main(out_path, hidden, inter, layers, period, count):
    ts = []
    for layer in range(layers):
        for t, k in (('attn_q', hidden), ('attn_k', hidden), ('attn_v', hidden), ('attn_output', hidden),
                     ('ffn_gate', hidden), ('ffn_up', hidden), ('ffn_down', inter)):
            ts.append(('blk.%d.%s.weight.in_sum2' % (layer, t), [float(1 + (i % period)) for i in range(k)]))
            ts.append(('blk.%d.%s.weight.counts' % (layer, t), [count]))
    write_entries(out_path, ts)


if __name__ == '__main__':
    a = sys.argv[1:]
    if len(a) != 6:
        sys.exit(__doc__)
    main(a[0], int(a[1]), int(a[2]), int(a[3]), int(a[4]), float(a[5]))
