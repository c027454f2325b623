#!/usr/bin/python3
"""PyTorch checkpoints written by torch.save itself (Debian's python3-torch), for test_torch_real.sh
(helper; not a test itself).  One state dict holding what real checkpoints hold -- every float and
int dtype, a tied embedding (one tensor under two names), a fused qkv and its three row slices (one
storage, three offsets), a column slice and a transposed weight (strided views), a permuted 3-D
tensor, an nn.Parameter, a 0-d scalar -- saved as the zip archive (torch.save's default), as the
legacy stream (_use_new_zipfile_serialization=False) and sharded with pytorch_model.bin.index.json.
Beside them, expect/<name>.f32: each float tensor's values as torch converts them to binary32
(row-major), and tensors.json: each tensor's dtype and shape as torch reports them; seeds/: two
small files, the zip and the legacy stream, which are the fuzz target's real_*.bin seeds.

usage: gen_torch_real.py OUT_DIR
"""
import collections
import json
import os
import sys

import torch

DTYPES = {torch.float32: 'F32', torch.float16: 'F16', torch.bfloat16: 'BF16', torch.float64: 'F64',
          torch.int64: 'I64', torch.int32: 'I32', torch.int16: 'I16', torch.int8: 'I8', torch.uint8: 'U8',
          torch.bool: 'BOOL'}


def state():
    g = torch.Generator().manual_seed(27)
    emb = torch.randn(32, 64, generator=g)
    qkv = torch.randn(192, 64, generator=g)
    w = torch.randn(48, 64, generator=g)
    cube = torch.randn(4, 8, 16, generator=g)
    sd = collections.OrderedDict()
    sd['model.embed_tokens.weight'] = emb
    sd['lm_head.weight'] = emb  # tied: the same tensor twice
    sd['model.layers.0.self_attn.q_proj.weight'] = qkv[0:64]
    sd['model.layers.0.self_attn.k_proj.weight'] = qkv[64:128]
    sd['model.layers.0.self_attn.v_proj.weight'] = qkv[128:192]
    sd['model.layers.0.self_attn.o_proj.weight'] = qkv[:, 16:48]  # columns: rows of 32 apart by 64
    sd['model.layers.0.mlp.down_proj.weight'] = w.t()  # transposed: strides (1, 64)
    sd['model.layers.0.mlp.experts'] = cube.permute(2, 0, 1)  # rank 3, strides (1, 128, 16)
    sd['model.layers.0.mlp.up_proj.weight'] = torch.nn.Parameter(torch.randn(64, 64, generator=g).half(),
                                                                   requires_grad=False)
    sd['model.layers.0.mlp.gate_proj.weight'] = torch.randn(64, 64, generator=g).bfloat16()
    sd['model.norm.weight'] = torch.randn(64, generator=g).double()
    sd['model.position_ids'] = torch.arange(-8, 8, dtype=torch.int64).reshape(2, 8)
    sd['model.i32'] = torch.arange(-6, 6, dtype=torch.int32)
    sd['model.i16'] = torch.arange(-6, 6, dtype=torch.int16)
    sd['model.i8'] = torch.arange(-6, 6, dtype=torch.int8)
    sd['model.u8'] = torch.arange(0, 12, dtype=torch.uint8)
    sd['model.mask'] = torch.arange(12) % 3 == 0
    sd['model.scale'] = torch.tensor(0.125)
    return sd


def main(out):
    os.makedirs(os.path.join(out, 'expect'), exist_ok=True)
    sd = state()
    for d in ('zip', 'legacy', 'sharded'):
        os.makedirs(os.path.join(out, d), exist_ok=True)
    torch.save(sd, os.path.join(out, 'zip', 'pytorch_model.bin'))
    torch.save(sd, os.path.join(out, 'legacy', 'pytorch_model.bin'), _use_new_zipfile_serialization=False)
    names = list(sd)
    wm = {}
    for i, part in enumerate((names[:9], names[9:])):
        fn = 'pytorch_model-%05d-of-00002.bin' % (i + 1)
        torch.save(collections.OrderedDict((n, sd[n]) for n in part), os.path.join(out, 'sharded', fn))
        wm.update({n: fn for n in part})
    with open(os.path.join(out, 'sharded', 'pytorch_model.bin.index.json'), 'w') as f:
        json.dump({'metadata': {'total_size': 0}, 'weight_map': wm}, f)
    meta = {}
    for n, t in sd.items():
        meta[n] = {'dtype': DTYPES[t.dtype], 'shape': list(t.shape)}
        if t.is_floating_point():
            with open(os.path.join(out, 'expect', n + '.f32'), 'wb') as f:
                f.write(t.detach().to(torch.float32).contiguous().numpy().tobytes())
    with open(os.path.join(out, 'tensors.json'), 'w') as f:
        json.dump(meta, f, indent=1)
    # small ones, the fuzz target's seeds (tests/fuzz/corpus/torch/real_*.bin)
    os.makedirs(os.path.join(out, 'seeds'), exist_ok=True)
    a = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    small = collections.OrderedDict([('a', a), ('tied', a), ('t', a.t()), ('h', torch.ones(3).half()),
                                     ('b', torch.ones(2, 2).bfloat16()), ('i', torch.arange(4))])
    torch.save(small, os.path.join(out, 'seeds', 'real_zip.bin'))
    torch.save(small, os.path.join(out, 'seeds', 'real_legacy.bin'), _use_new_zipfile_serialization=False)


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
