#!/usr/bin/env python3
"""A mixture-of-experts layer three ways, and its imatrix as llama.cpp writes it, for
test_imatrix_experts.sh (helper; not a test itself):

  moe.gguf       blk.0.ffn_down_exps.weight F32 [2, 64, 256] (GGUF ne {256, 64, 2}) and
                 blk.0.attn_q.weight F32 [64, 256]
  hf/            the same weights as a Hugging Face checkpoint: model.layers.0.mlp.experts.E.down_proj.weight
                 [64, 256] per expert and model.layers.0.self_attn.q_proj.weight
  stack/         the experts stacked the Hugging Face way: model.layers.0.mlp.experts.down_proj [2, 64, 256]
  imatrix.gguf   llama-imatrix's GGUF: blk.0.ffn_down_exps.weight.in_sum2 ne {256, 2} (one row per expert),
                 .counts ne {1, 2}, blk.0.attn_q.weight's vector, and a T.in_sum beside them (a newer
                 llama-imatrix's, which readers ignore)
  imatrix.dat    the same sums in the legacy format (ncall 4, each value in_sum2 / count * ncall)
  zero.gguf      expert 1's count 0 (it saw no input)

usage: gen_imatrix_experts.py OUT_DIR
"""
import json
import os
import struct
import sys

K, R, E = 256, 64, 2


def gstr(s):
    b = s.encode()
    return struct.pack('<Q', len(b)) + b


def gguf(path, tensors):
    """tensors: (name, ne list, F32 values)."""
    out = b'GGUF' + struct.pack('<IQQ', 3, len(tensors), 0)
    off = 0
    for name, ne, vals in tensors:
        out += gstr(name) + struct.pack('<I', len(ne)) + b''.join(struct.pack('<Q', n) for n in ne)
        out += struct.pack('<IQ', 0, off)
        off += (len(vals) * 4 + 31) // 32 * 32
    out += b'\0' * (-len(out) % 32)
    for _, _, vals in tensors:
        d = struct.pack('<%df' % len(vals), *vals)
        out += d + b'\0' * (-len(d) % 32)
    with open(path, 'wb') as f:
        f.write(out)


def safetensors(path, tensors):
    """tensors: (name, shape, F32 values)."""
    head, off, blob = {}, 0, b''
    for name, shape, vals in tensors:
        d = struct.pack('<%df' % len(vals), *vals)
        head[name] = {'dtype': 'F32', 'shape': shape, 'data_offsets': [off, off + len(d)]}
        off += len(d)
        blob += d
    h = json.dumps(head).encode()
    h += b' ' * (-len(h) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + blob)


def main(out):
    os.makedirs(os.path.join(out, 'hf'), exist_ok=True)
    os.makedirs(os.path.join(out, 'stack'), exist_ok=True)
    s = 987654321

    def rnd():
        nonlocal s
        s = (s * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        return ((s >> 40) / 16777216.0 - 0.5) * (4.0 if (s >> 20) % 23 == 0 else 1.0)

    experts = [[rnd() for _ in range(R * K)] for _ in range(E)]
    q = [rnd() for _ in range(R * K)]
    gguf(os.path.join(out, 'moe.gguf'), [('blk.0.ffn_down_exps.weight', [K, R, E], experts[0] + experts[1]),
                                         ('blk.0.attn_q.weight', [K, R], q)])
    hf = [('model.layers.0.mlp.experts.%d.down_proj.weight' % e, [R, K], experts[e]) for e in range(E)]
    safetensors(os.path.join(out, 'hf', 'model.safetensors'), hf + [('model.layers.0.self_attn.q_proj.weight', [R, K], q)])
    safetensors(os.path.join(out, 'stack', 'model.safetensors'),
                [('model.layers.0.mlp.experts.down_proj', [E, R, K], experts[0] + experts[1])])
    for d in ('hf', 'stack'):
        with open(os.path.join(out, d, 'config.json'), 'w') as f:
            json.dump({'architectures': ['Qwen2MoeForCausalLM'], 'model_type': 'qwen2_moe'}, f)

    # sums: very different weights per expert (expert 1 weighs the high columns 100x)
    sums = [[4.0 * (1 + (i * 7) % 13) for i in range(K)], [4.0 * (1 + (i > K // 2) * 99) for i in range(K)]]
    qsum = [4.0 * (1 + i % 5) for i in range(K)]
    gguf(os.path.join(out, 'imatrix.gguf'), [
        ('blk.0.ffn_down_exps.weight.in_sum2', [K, E], sums[0] + sums[1]),
        ('blk.0.ffn_down_exps.weight.in_sum', [K, E], [1.0] * (K * E)),
        ('blk.0.ffn_down_exps.weight.counts', [1, E], [4.0, 4.0]),
        ('blk.0.attn_q.weight.in_sum2', [K], qsum),
        ('blk.0.attn_q.weight.counts', [1], [4.0]),
    ])
    gguf(os.path.join(out, 'zero.gguf'), [
        ('blk.0.ffn_down_exps.weight.in_sum2', [K, E], sums[0] + [0.0] * K),
        ('blk.0.ffn_down_exps.weight.counts', [1, E], [4.0, 0.0]),
    ])
    # legacy: llama.cpp's save_imatrix_legacy writes in_sum2 / count * ncall, one vector per tensor
    # (count and ncall both 4 here, so the values are the sums themselves)
    b = struct.pack('<i', 2)
    for name, vals in (('blk.0.ffn_down_exps.weight', sums[0] + sums[1]), ('blk.0.attn_q.weight', qsum)):
        b += struct.pack('<i', len(name)) + name.encode() + struct.pack('<ii', 4, len(vals))
        b += struct.pack('<%df' % len(vals), *vals)
    b += struct.pack('<ii', 10, 9) + b'calib.txt'
    with open(os.path.join(out, 'imatrix.dat'), 'wb') as f:
        f.write(b)


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
