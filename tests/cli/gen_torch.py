#!/usr/bin/env python3
"""PyTorch checkpoints laid out as torch.save writes them (zip: <stem>/data.pkl, a protocol-2 pickle
of an OrderedDict of _rebuild_tensor_v2(...) calls whose storages are persistent ids
('storage', torch.<T>Storage, key, 'cpu', numel); <stem>/data/<key> the storages' bytes;
<stem>/version), for test_torch.sh (helper; not a test itself).

Written without torch: stand-in modules named torch and torch._utils give the pickler the
globals' names (it pickles functions and classes by name), and persistent_id gives the storages.

usage: gen_torch.py OUT_DIR
"""
import collections
import io
import json
import os
import pickle
import struct
import sys
import types
import zipfile

torch = types.ModuleType('torch')
utils = types.ModuleType('torch._utils')
torch._utils = utils


def _rebuild_tensor_v2(*args):  # a name for the pickler; never called
    raise RuntimeError


_rebuild_tensor_v2.__module__ = 'torch._utils'
_rebuild_tensor_v2.__qualname__ = '_rebuild_tensor_v2'
utils._rebuild_tensor_v2 = _rebuild_tensor_v2
STORAGE = {}
for cls, fmt, size in (('FloatStorage', 'f', 4), ('HalfStorage', 'e', 2), ('BFloat16Storage', 'H', 2),
                       ('DoubleStorage', 'd', 8), ('LongStorage', 'q', 8), ('IntStorage', 'i', 4),
                       ('ShortStorage', 'h', 2), ('CharStorage', 'b', 1), ('ByteStorage', 'B', 1),
                       ('BoolStorage', '?', 1)):
    c = type(cls, (), {})
    c.__module__ = 'torch'
    setattr(torch, cls, c)
    STORAGE[cls] = (c, fmt, size)


class Storage:
    def __init__(self, key, cls, values):
        self.key, self.cls, self.values = key, cls, values

    def data(self):
        _, fmt, _ = STORAGE[self.cls]
        return struct.pack('<%d%s' % (len(self.values), fmt), *self.values)


class Tensor:
    def __init__(self, storage, offset, size, stride):
        self.storage, self.offset, self.size, self.stride = storage, offset, tuple(size), tuple(stride)

    def __reduce_ex__(self, proto):
        s = self.storage
        pid = ('storage', STORAGE[s.cls][0], s.key, 'cpu', len(s.values))
        return (_rebuild_tensor_v2, (pid, self.offset, self.size, self.stride, False, collections.OrderedDict()))


class Pickler(pickle.Pickler):
    def persistent_id(self, obj):
        return obj if isinstance(obj, tuple) and len(obj) in (5, 6) and obj[0] == 'storage' else None


class LegacyTensor(Tensor):
    """A tensor as the legacy stream pickles it: its persistent id has a sixth field, view_metadata."""
    view = None

    def __reduce_ex__(self, proto):
        s = self.storage
        pid = ('storage', STORAGE[s.cls][0], s.key, 'cpu', len(s.values), self.view)
        return (_rebuild_tensor_v2, (pid, self.offset, self.size, self.stride, False, collections.OrderedDict()))


def save_legacy(path, state, little=True, keys=None, tail=b'', extra=()):
    """torch.save's stream before PyTorch 1.6: the magic number, the protocol version, sys_info, the
    state dict, the storage keys, then each storage as its element count (int64) and its bytes."""
    sys.modules['torch'], sys.modules['torch._utils'] = torch, utils
    storages = {}
    for t in state.values():
        storages[t.storage.key] = t.storage
    for e in extra:
        storages[e.key] = e
    keys = sorted(storages) if keys is None else keys
    out = io.BytesIO()
    for obj in (0x1950a86a20f9469cfc6c, 1001,
                {'protocol_version': 1001, 'little_endian': little, 'type_sizes': {'short': 2, 'int': 4, 'long': 8}}):
        pickle.dump(obj, out, protocol=2)
    Pickler(out, protocol=2).dump(state)
    pickle.dump(keys, out, protocol=2)
    for k in keys:
        s = storages[k]
        out.write(struct.pack('<q', len(s.values)) + s.data())
    with open(path, 'wb') as f:
        f.write(out.getvalue() + tail)


def save(path, state, stem='archive', deflate=False):
    sys.modules['torch'], sys.modules['torch._utils'] = torch, utils
    buf = io.BytesIO()
    Pickler(buf, protocol=2).dump(state)
    storages = {}
    for t in state.values():
        storages[t.storage.key] = t.storage
    method = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED

    def member(name, data, how=method):  # a fixed date: the same tree gives the same bytes
        info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = how
        z.writestr(info, data)

    with zipfile.ZipFile(path, 'w') as z:
        member(stem + '/data.pkl', buf.getvalue())
        member(stem + '/byteorder', b'little')
        for key in sorted(storages):
            member(stem + '/data/' + key, storages[key].data())
        member(stem + '/version', b'3\n')


def st_file(path, tensors):
    """tensors: (name, dtype, shape, raw bytes) as safetensors."""
    head, off = {}, 0
    for name, dtype, shape, raw in tensors:
        head[name] = {'dtype': dtype, 'shape': list(shape), 'data_offsets': [off, off + len(raw)]}
        off += len(raw)
    h = json.dumps(head).encode()
    h += b' ' * (-len(h) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + b''.join(t[3] for t in tensors))


def main(out):
    os.makedirs(out, exist_ok=True)
    vals = [((i * 37) % 101 - 50) / 16.0 for i in range(4 * 64 * 64)]
    # one state dict: a fused qkv storage viewed as three slices, a tied embedding (one storage, two
    # names), F16/BF16/F64/int tensors, a scalar
    qkv = Storage('0', 'FloatStorage', vals[:3 * 64 * 64])
    emb = Storage('1', 'FloatStorage', vals[:32 * 64])
    half = Storage('2', 'HalfStorage', [v for v in vals[:64 * 64]])
    bf = Storage('3', 'BFloat16Storage', [0x3F80 + (i % 64) for i in range(64 * 64)])
    dbl = Storage('4', 'DoubleStorage', vals[:64])
    lng = Storage('5', 'LongStorage', list(range(-8, 8)))
    state = collections.OrderedDict([
        ('model.layers.0.self_attn.q_proj.weight', Tensor(qkv, 0, (64, 64), (64, 1))),
        ('model.layers.0.self_attn.k_proj.weight', Tensor(qkv, 64 * 64, (64, 64), (64, 1))),
        ('model.layers.0.self_attn.v_proj.weight', Tensor(qkv, 2 * 64 * 64, (64, 64), (64, 1))),
        ('model.embed_tokens.weight', Tensor(emb, 0, (32, 64), (64, 1))),
        ('lm_head.weight', Tensor(emb, 0, (32, 64), (64, 1))),
        ('model.layers.0.mlp.up_proj.weight', Tensor(half, 0, (64, 64), (64, 1))),
        ('model.layers.0.mlp.down_proj.weight', Tensor(bf, 0, (64, 64), (64, 1))),
        ('model.norm.weight', Tensor(dbl, 0, (64,), (1,))),
        ('model.position_ids', Tensor(lng, 0, (2, 8), (8, 1))),
    ])
    os.makedirs(os.path.join(out, 'one'), exist_ok=True)
    save(os.path.join(out, 'one', 'pytorch_model.bin'), state, stem='pytorch_model')
    # the same weights as safetensors, for the comparison
    def raw(t):
        s = t.storage
        _, fmt, size = STORAGE[s.cls]
        n = 1
        for d in t.size:
            n *= d
        return s.data()[t.offset * size:(t.offset + n) * size]
    dt = {'FloatStorage': 'F32', 'HalfStorage': 'F16', 'BFloat16Storage': 'BF16', 'DoubleStorage': 'F64',
          'LongStorage': 'I64'}
    os.makedirs(os.path.join(out, 'st'), exist_ok=True)
    st_file(os.path.join(out, 'st', 'model.safetensors'),
            [(n, dt[t.storage.cls], t.size, raw(t)) for n, t in state.items()])
    # every member deflated (a checkpoint zipped again by another tool), the pickle too
    os.makedirs(os.path.join(out, 'deflated'), exist_ok=True)
    save(os.path.join(out, 'deflated', 'pytorch_model.bin'), state, stem='pytorch_model', deflate=True)
    # the legacy stream of the same state dict, in a directory of its own
    os.makedirs(os.path.join(out, 'legacy'), exist_ok=True)
    lstate = collections.OrderedDict((n, LegacyTensor(t.storage, t.offset, t.size, t.stride)) for n, t in state.items())
    save_legacy(os.path.join(out, 'legacy', 'pytorch_model.bin'), lstate)
    # sharded: two files and pytorch_model.bin.index.json
    os.makedirs(os.path.join(out, 'sharded'), exist_ok=True)
    names = list(state)
    parts = [collections.OrderedDict((n, state[n]) for n in names[:4]),
             collections.OrderedDict((n, state[n]) for n in names[4:])]
    wm = {}
    for i, part in enumerate(parts):
        fn = 'pytorch_model-%05d-of-00002.bin' % (i + 1)
        save(os.path.join(out, 'sharded', fn), part, stem='pytorch_model-%05d-of-00002' % (i + 1))
        for n in part:
            wm[n] = fn
    with open(os.path.join(out, 'sharded', 'pytorch_model.bin.index.json'), 'w') as f:
        json.dump({'metadata': {'total_size': 0}, 'weight_map': wm}, f)
    # the same two shards, the first one a legacy stream
    os.makedirs(os.path.join(out, 'mixed'), exist_ok=True)
    save_legacy(os.path.join(out, 'mixed', 'pytorch_model-00001-of-00002.bin'),
                collections.OrderedDict((n, LegacyTensor(t.storage, t.offset, t.size, t.stride))
                                        for n, t in parts[0].items()))
    save(os.path.join(out, 'mixed', 'pytorch_model-00002-of-00002.bin'), parts[1], stem='pytorch_model-00002-of-00002')
    with open(os.path.join(out, 'mixed', 'pytorch_model.bin.index.json'), 'w') as f:
        json.dump({'metadata': {'total_size': 0}, 'weight_map': wm}, f)
    # a transposed view (strides (1, 64)) and a column slice (strides (64, 1) at offset 16)
    save(os.path.join(out, 'strided.bin'), collections.OrderedDict([('t', Tensor(qkv, 0, (64, 64), (1, 64))),
                                                                    ('c', Tensor(qkv, 16, (64, 32), (64, 1)))]))
    # refusals: a storage key not in the archive, a view leaving its storage, a
    # storage class its bytes contradict, a disallowed global
    bad = os.path.join(out, 'bad')
    os.makedirs(bad, exist_ok=True)
    save(os.path.join(bad, 'stride_leaves.bin'), collections.OrderedDict([('w', Tensor(emb, 0, (32, 32), (4, 64)))]))
    # the legacy stream: big-endian, a storage longer than the file, bytes after the last storage, a
    # key no tensor uses, a storage that is a view of another
    one = collections.OrderedDict([('w', LegacyTensor(emb, 0, (32, 64), (64, 1)))])
    save_legacy(os.path.join(bad, 'legacy_big.bin'), one, little=False)
    save_legacy(os.path.join(bad, 'legacy_tail.bin'), one, tail=b'\0')
    save_legacy(os.path.join(bad, 'legacy_twice.bin'), one, keys=['1', '1'])
    save_legacy(os.path.join(bad, 'legacy_unused.bin'), one, keys=['1', '7'],
                extra=[Storage('7', 'FloatStorage', [1.0])])
    with open(os.path.join(bad, 'legacy_tail.bin'), 'rb') as f:
        b = f.read()[:-1]
    with open(os.path.join(bad, 'legacy_short.bin'), 'wb') as f:
        f.write(b[:-100])
    v = LegacyTensor(emb, 0, (32, 64), (64, 1))
    v.view = ('1', 0, 2048)
    save_legacy(os.path.join(bad, 'legacy_view.bin'), collections.OrderedDict([('w', v)]))
    missing = Storage('9', 'FloatStorage', vals[:16])
    save(os.path.join(bad, 'leaves.bin'), collections.OrderedDict([('w', Tensor(emb, 32 * 64 - 8, (4, 4), (4, 1)))]))
    save(os.path.join(bad, 'missing.bin'), collections.OrderedDict([('w', Tensor(missing, 0, (4, 4), (4, 1)))]))
    with zipfile.ZipFile(os.path.join(bad, 'missing.bin')) as z:  # drop the storage member
        keep = [(i, z.read(i)) for i in z.infolist() if not i.filename.endswith('/data/9')]
    with zipfile.ZipFile(os.path.join(bad, 'missing.bin'), 'w') as z:
        for i, d in keep:
            z.writestr(i, d)
    contra = Storage('0', 'FloatStorage', vals[:16])
    save(os.path.join(bad, 'contradicts.bin'), collections.OrderedDict([('w', Tensor(contra, 0, (4, 4), (4, 1)))]))
    with zipfile.ZipFile(os.path.join(bad, 'contradicts.bin')) as z:  # say HalfStorage over 4-byte elements
        items = [(i, z.read(i)) for i in z.infolist()]
    with zipfile.ZipFile(os.path.join(bad, 'contradicts.bin'), 'w') as z:
        for i, d in items:
            if i.filename.endswith('data.pkl'):
                d = d.replace(b'torch\nFloatStorage', b'torch\nHalfStorage')
            z.writestr(i, d)
    with open(os.path.join(bad, 'evil.pkl'), 'wb') as f:  # os.system, framed as torch.save would
        f.write(b'\x80\x02cos\nsystem\nq\x00X\x04\x00\x00\x00trueq\x01\x85q\x02Rq\x03.')
    with zipfile.ZipFile(os.path.join(bad, 'evil.bin'), 'w') as z:
        z.writestr('archive/data.pkl', open(os.path.join(bad, 'evil.pkl'), 'rb').read())


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
