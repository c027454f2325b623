#!/usr/bin/env python3
"""The tensors of a safetensors file written again as torch.save writes a state dict (zip, stored
members; tests/cli/gen_torch.py's layout), or as the legacy stream before PyTorch 1.6 (--legacy),
one storage per tensor: the PyTorch rows of make bench.

usage: st_to_torch.py MODEL.safetensors OUT_DIR [--legacy]
       (writes OUT_DIR/pytorch_model.bin and copies nothing else)
"""
import collections
import json
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'cli'))
import gen_torch as g  # noqa: E402

CLASSES = {'F32': ('FloatStorage', 4), 'F16': ('HalfStorage', 2), 'BF16': ('BFloat16Storage', 2),
           'F64': ('DoubleStorage', 8), 'I64': ('LongStorage', 8), 'I32': ('IntStorage', 4)}


class RawStorage(g.Storage):
    def __init__(self, key, cls, raw, numel):
        super().__init__(key, cls, range(numel))
        self.raw = raw

    def data(self):
        return self.raw


def main(src, out, legacy=False):
    with open(src, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        head = json.loads(f.read(n))
        base = 8 + n
        state = collections.OrderedDict()
        for i, (name, e) in enumerate(sorted((k, v) for k, v in head.items() if k != '__metadata__')):
            cls, size = CLASSES[e['dtype']]
            b, end = e['data_offsets']
            f.seek(base + b)
            raw = f.read(end - b)
            shape = e['shape']
            stride, acc = [], 1
            for d in reversed(shape):
                stride.insert(0, acc)
                acc *= d
            kind = g.LegacyTensor if legacy else g.Tensor
            state[name] = kind(RawStorage(str(i), cls, raw, (end - b) // size), 0, shape, stride)
    os.makedirs(out, exist_ok=True)
    if legacy:
        g.save_legacy(os.path.join(out, 'pytorch_model.bin'), state)
    else:
        g.save(os.path.join(out, 'pytorch_model.bin'), state, stem='pytorch_model')


if __name__ == '__main__':
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] != '--legacy'):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], len(sys.argv) == 4)
