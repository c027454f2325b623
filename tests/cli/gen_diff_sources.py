#!/usr/bin/env python3
"""Checkpoints for test_diff_sources.sh (helper; not a test itself): the same small models as
llama.cpp's converter writes them (GGUF, llama.cpp's names) and as Hugging Face checkpoints, and
the figures ninfer-diff must print, computed here from the definitions of docs/ninfer-diff.md.

  llama/model.gguf   general.architecture llama, 4 heads, 2 key/value heads: token_embd (F32),
                     blk.0.attn_q / attn_k (F32, rows in llama.cpp's rotary order: GGUF row
                     h * P + 2i + j holds Hugging Face row h * P + j * P/2 + i), attn_v (F16,
                     rounded), attn_norm (F32), output (F16), blk.0.mystery.weight (no
                     Hugging Face name)
  llama/falcon.gguf  the same tensors under general.architecture falcon
  llama/hf/          F32 safetensors + config.json (llama), with a rotary inv_freq GGUF lacks
  llama/imatrix.gguf llama-imatrix entries for blk.0.attn_v.weight and output.weight
  moe/model.gguf     qwen3moe, 2 experts: blk.0.ffn_down_exps.weight F16 [2, 16, 64] (ne {64, 16, 2})
                     and blk.0.attn_q.weight F32 [16, 64] (qwen3: rows not reordered)
  moe/hf/            per-expert matrices F32 + config.json (qwen3_moe)
  moe/imatrix.gguf   the stack's entry, one vector per expert (in_sum2 ne {64, 2}, counts ne {1, 2})
  expected.json      per pair (A's name, expert, B's name): count, max_abs, sse, ssx (B's values
                     the reference), wse (importance-weighted, with the imatrix)

usage: gen_diff_sources.py OUT_DIR
"""
import json
import math
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_imatrix_experts import safetensors  # noqa: E402  (the same F32 safetensors writer)


def f32(x):
    return struct.unpack('<f', struct.pack('<f', x))[0]


def f16(x):
    return struct.unpack('<e', struct.pack('<e', x))[0]


def gstr(s):
    b = s.encode()
    return struct.pack('<Q', len(b)) + b


def gguf(path, arch, kv_counts, tensors):
    """tensors: (name, ne list, ggml type 0 F32 / 1 F16, values)."""
    kv = b''
    nkv = 0
    if arch is not None:
        kv += gstr('general.architecture') + struct.pack('<I', 8) + gstr(arch)
        nkv += 1
    for key, v in kv_counts:
        kv += gstr(key) + struct.pack('<II', 4, v)
        nkv += 1
    out = b'GGUF' + struct.pack('<IQQ', 3, len(tensors), nkv) + kv
    off, blobs = 0, []
    for name, ne, typ, vals in tensors:
        d = struct.pack('<%d%s' % (len(vals), 'f' if typ == 0 else 'e'), *vals)
        out += gstr(name) + struct.pack('<I', len(ne)) + b''.join(struct.pack('<Q', n) for n in ne)
        out += struct.pack('<IQ', typ, off)
        blobs.append(d + b'\0' * (-len(d) % 32))
        off += len(blobs[-1])
    out += b'\0' * (-len(out) % 32)
    with open(path, 'wb') as f:
        f.write(out + b''.join(blobs))


def imatrix(path, entries):
    """entries: (name, vectors (one per matrix), counts)."""
    t = []
    for name, vecs, counts in entries:
        t.append((name + '.in_sum2', [len(vecs[0]), len(vecs)], 0, [v for vec in vecs for v in vec]))
        t.append((name + '.counts', [1, len(counts)], 0, counts))
    gguf(path, None, [], t)


class Rng:
    def __init__(self, seed):
        self.s = seed

    def __call__(self):
        self.s = (self.s * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        return f32(((self.s >> 40) / 16777216.0 - 0.5) * (4.0 if (self.s >> 20) % 23 == 0 else 1.0))


def permute(vals, rows, cols, heads):
    """llama.cpp's q/k order: GGUF row h*P + 2i + j is Hugging Face row h*P + j*P/2 + i."""
    p = rows // heads
    out = []
    for g in range(rows):
        h, r = divmod(g, p)
        hf = h * p + (r % 2) * (p // 2) + r // 2
        out += vals[hf * cols:(hf + 1) * cols]
    return out


def figures(ref, other, rows, cols, weights=None):
    """B's values ref, A's other: ninfer-diff's statistics of one pair (docs/ninfer-diff.md)."""
    mx, sse, ssx, wse = 0.0, [], [], []
    for i in range(rows * cols):
        d = f32(ref[i] - other[i])
        mx = max(mx, abs(d))
        sse.append(d * d)
        ssx.append(ref[i] * ref[i])
        if weights is not None:
            wse.append(weights[i % cols] * d * d)
    return {'count': rows * cols, 'max_abs': mx, 'sse': math.fsum(sse), 'ssx': math.fsum(ssx),
            'wse': math.fsum(wse) if weights is not None else None}


def llama(out, rng, expected):
    H, V, HEADS, KV = 32, 8, 4, 2
    os.makedirs(os.path.join(out, 'hf'), exist_ok=True)
    t = {'embed': [rng() for _ in range(V * H)], 'q': [rng() for _ in range(H * H)],
         'k': [rng() for _ in range(16 * H)], 'v': [rng() for _ in range(16 * H)], 'norm': [rng() for _ in range(H)],
         'head': [rng() for _ in range(V * H)], 'mystery': [rng() for _ in range(4 * H)]}
    v16 = [f16(x) for x in t['v']]
    head16 = [f16(x) for x in t['head']]
    tensors = [('token_embd.weight', [H, V], 0, t['embed']),
               ('blk.0.attn_q.weight', [H, H], 0, permute(t['q'], H, H, HEADS)),
               ('blk.0.attn_k.weight', [H, 16], 0, permute(t['k'], 16, H, KV)),
               ('blk.0.attn_v.weight', [H, 16], 1, v16), ('blk.0.attn_norm.weight', [H], 0, t['norm']),
               ('output.weight', [H, V], 1, head16), ('blk.0.mystery.weight', [H, 4], 0, t['mystery'])]
    kv = [('llama.block_count', 1), ('llama.attention.head_count', HEADS), ('llama.attention.head_count_kv', KV)]
    gguf(os.path.join(out, 'model.gguf'), 'llama', kv, tensors)
    gguf(os.path.join(out, 'falcon.gguf'), 'falcon', [], tensors)
    safetensors(os.path.join(out, 'hf', 'model.safetensors'),
                [('model.embed_tokens.weight', [V, H], t['embed']),
                 ('model.layers.0.self_attn.q_proj.weight', [H, H], t['q']),
                 ('model.layers.0.self_attn.k_proj.weight', [16, H], t['k']),
                 ('model.layers.0.self_attn.v_proj.weight', [16, H], t['v']),
                 ('model.layers.0.input_layernorm.weight', [H], t['norm']),
                 ('lm_head.weight', [V, H], t['head']),
                 ('model.layers.0.self_attn.rotary_emb.inv_freq', [H // HEADS // 2], [1.0] * (H // HEADS // 2))])
    with open(os.path.join(out, 'hf', 'config.json'), 'w') as f:
        json.dump({'model_type': 'llama', 'num_hidden_layers': 1, 'num_attention_heads': HEADS,
                   'num_key_value_heads': KV, 'hidden_size': H}, f)
    wv = [f32(1.0 + (i % 5)) for i in range(H)]  # in_sum2 / counts = wv (counts 1)
    wh = [f32(0.25 * (1 + i % 3)) for i in range(H)]
    imatrix(os.path.join(out, 'imatrix.gguf'), [('blk.0.attn_v.weight', [wv], [1.0]),
                                                ('output.weight', [[x * 4 for x in wh]], [4.0])])
    expected['llama'] = {
        'blk.0.attn_v.weight': figures(t['v'], v16, 16, H, wv),
        'output.weight': figures(t['head'], head16, V, H, wh),
    }


def moe(out, rng, expected):
    K, R, E = 64, 16, 2
    os.makedirs(os.path.join(out, 'hf'), exist_ok=True)
    experts = [[rng() for _ in range(R * K)] for _ in range(E)]
    e16 = [[f16(x) for x in m] for m in experts]
    q = [rng() for _ in range(R * K)]
    gguf(os.path.join(out, 'model.gguf'), 'qwen3moe',
         [('qwen3moe.block_count', 1), ('qwen3moe.attention.head_count', 2), ('qwen3moe.expert_count', E)],
         [('blk.0.ffn_down_exps.weight', [K, R, E], 1, e16[0] + e16[1]), ('blk.0.attn_q.weight', [K, R], 0, q)])
    safetensors(os.path.join(out, 'hf', 'model.safetensors'),
                [('model.layers.0.mlp.experts.%d.down_proj.weight' % e, [R, K], experts[e]) for e in range(E)] +
                [('model.layers.0.self_attn.q_proj.weight', [R, K], q)])
    with open(os.path.join(out, 'hf', 'config.json'), 'w') as f:
        json.dump({'model_type': 'qwen3_moe', 'num_hidden_layers': 1, 'num_attention_heads': 2, 'num_experts': E}, f)
    w = [[f32(0.5 + ((i * (e + 3)) % 7)) for i in range(K)] for e in range(E)]
    imatrix(os.path.join(out, 'imatrix.gguf'), [('blk.0.ffn_down_exps.weight', [[x * 2 for x in w[0]], w[1]],
                                                 [2.0, 1.0])])
    expected['moe'] = {str(e): figures(experts[e], e16[e], R, K, w[e]) for e in range(E)}


def main(out):
    expected = {}
    rng = Rng(20261204)
    llama(os.path.join(out, 'llama'), rng, expected)
    moe(os.path.join(out, 'moe'), rng, expected)
    with open(os.path.join(out, 'expected.json'), 'w') as f:
        json.dump(expected, f, indent=1)


if __name__ == '__main__':
    main(sys.argv[1])
