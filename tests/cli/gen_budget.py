#!/usr/bin/env python3
"""Write the budget tests' checkpoint (helper of test_budget.sh; not a test itself): DIR/model.safetensors
with four F32 matrices of different scales, shapes and value distributions, and one vector;
DIR/config.json; and DIR/imatrix.gguf, a llama-imatrix file with an importance vector for each
matrix (exact names) whose columns weigh very differently.

usage: gen_budget.py DIR"""
import json
import math
import os
import random
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_imatrix import write_imatrix  # noqa: E402  (the same llama-imatrix writer)

MATRICES = [  # name, rows, cols, scale, distribution
    ('blk.0.attn.weight', 48, 256, 1.0, 'gauss'),
    ('blk.0.ffn.weight', 40, 192, 8.0, 'gauss'),
    ('blk.1.attn.weight', 64, 128, 0.05, 'uniform'),
    ('blk.1.ffn.weight', 24, 320, 1.0, 'heavy'),
]


def values(rng, n, scale, dist):
    if dist == 'gauss':
        return [rng.gauss(0, scale) for _ in range(n)]
    if dist == 'uniform':
        return [rng.uniform(-scale, scale) for _ in range(n)]
    return [scale * rng.gauss(0, 1) ** 3 for _ in range(n)]  # heavy tails


def main(d):
    rng = random.Random(20261201)
    os.makedirs(d, exist_ok=True)
    tensors = [(n, [r, c], values(rng, r * c, s, dist)) for n, r, c, s, dist in MATRICES]
    tensors.append(('norm.weight', [256], [1.0 + 0.01 * i for i in range(256)]))
    header, data = {}, b''
    for name, shape, vals in tensors:
        b = struct.pack('<%df' % len(vals), *vals)
        header[name] = {'dtype': 'F32', 'shape': shape, 'data_offsets': [len(data), len(data) + len(b)]}
        data += b
    h = json.dumps(header).encode()
    h += b' ' * (-len(h) % 8)
    with open(os.path.join(d, 'model.safetensors'), 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + data)
    with open(os.path.join(d, 'config.json'), 'w') as f:
        f.write('{}')
    # importance: a few columns of each matrix weigh a hundred times the rest
    write_imatrix(os.path.join(d, 'imatrix.gguf'),
                  [(n, [100.0 if (k * 7) % c < c // 8 else 1.0 + math.sin(k) ** 2 for k in range(c)])
                   for n, _, c, _, _ in MATRICES])


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
