#!/usr/bin/env bash
# PyTorch checkpoints (docs/security.md 2.6): torch.save's zip archive read without executing
# anything -- a file, a directory holding pytorch_model.bin, a sharded pytorch_model.bin.index.json
# -- gives the values the same weights give as safetensors (views at offsets of one storage, a
# storage shared by two tensors, every float and int class), zip64 included; what is not read yet
# (strided views, deflated members, the legacy stream) and what is hostile (a global not allowed,
# a pickle bomb, a storage missing, contradicted or left by its view, a broken archive) is refused
# naming file, tensor and position, with no output.
# usage: test_torch.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

t="$work/t"
python3 "$top/tests/cli/gen_torch.py" "$t" || { bad "gen_torch.py failed"; finish torch; exit 1; }
names="model.layers.0.self_attn.q_proj.weight model.layers.0.self_attn.k_proj.weight model.layers.0.self_attn.v_proj.weight
model.embed_tokens.weight lm_head.weight model.layers.0.mlp.up_proj.weight model.layers.0.mlp.down_proj.weight
model.norm.weight model.position_ids"

run 0 "$bin/ninfer-convert" "$t/st/model.safetensors" -o "$work/st.ninfer" --format q4_g64_fp16
# a file, its directory, a sharded index: the safetensors' values, object by object
for src in one/pytorch_model.bin one sharded sharded/pytorch_model.bin.index.json legacy legacy/pytorch_model.bin deflated; do
    run 0 "$bin/ninfer-convert" "$t/$src" -o "$work/pt.ninfer" --format q4_g64_fp16 --force --threads 2
    for w in $names; do
        run 0 "$bin/ninfer-dequant" "$work/pt.ninfer" "$w" -o "$work/a.f32"
        run 0 "$bin/ninfer-dequant" "$work/st.ninfer" "$w" -o "$work/b.f32"
        same "$work/a.f32" "$work/b.f32"
    done
    run 0 "$bin/ninfer-verify" "$work/pt.ninfer" --against "$t/$src"
    contains "$work/out" "valid"
done
run 0 "$bin/ninfer-inspect" "$t/one/pytorch_model.bin" --json
python3 - "$work/out" <<'PY' && ok || bad "inspect: kind, dtypes, shapes, a shared storage"
import json, sys
d = json.load(open(sys.argv[1]))
assert d['kind'] == 'pytorch', d['kind']
ts = {t['name']: t for t in d['tensors']}
assert ts['model.layers.0.mlp.up_proj.weight']['dtype'] == 'F16' and ts['model.norm.weight']['dtype'] == 'F64', ts
assert ts['lm_head.weight']['offset'] == ts['model.embed_tokens.weight']['offset'], ts
assert ts['model.layers.0.self_attn.k_proj.weight']['offset'] == ts['model.layers.0.self_attn.q_proj.weight']['offset'] + 64 * 64 * 4
PY
# every tensor kept exactly (fp32, bf16, int32): the artifact and the checkpoint are the same
run 0 "$bin/ninfer-convert" "$t/one/pytorch_model.bin" -o "$work/f32.ninfer" --format fp32
run 0 "$bin/ninfer-diff" "$work/f32.ninfer" "$t/one/pytorch_model.bin"
contains "$work/out" "same"

# strided views, gathered: a transposed 64x64 and a slice of 32 columns at offset 16
run 0 "$bin/ninfer-convert" "$t/strided.bin" -o "$work/strided.ninfer" --format fp32
run 0 "$bin/ninfer-dequant" "$work/strided.ninfer" t -o "$work/t.f32"
run 0 "$bin/ninfer-dequant" "$work/strided.ninfer" c -o "$work/c.f32"
python3 - "$work/t.f32" "$work/c.f32" <<'PY' && ok || bad "strided views' values"
import struct, sys
vals = [((i * 37) % 101 - 50) / 16.0 for i in range(3 * 64 * 64)]
t = struct.unpack('<4096f', open(sys.argv[1], 'rb').read())
c = struct.unpack('<2048f', open(sys.argv[2], 'rb').read())
assert t == tuple(vals[i + 64 * j] for i in range(64) for j in range(64))
assert c == tuple(vals[16 + 64 * i + j] for i in range(64) for j in range(32))
PY

# deflated members: a strided view of one, read with 2 threads (the cursors of the pool), and
# broken ones: data that is not deflate, a CRC the bytes do not have
python3 - "$top/tests/cli" "$work/dfl" <<'PY'
import collections, os, struct, sys, zipfile, zlib
sys.path.insert(0, sys.argv[1])
import gen_torch as g
d = sys.argv[2]
os.makedirs(d)
v = [float(i % 251) - 125.0 for i in range(256 * 256)]
s = g.Storage('0', 'FloatStorage', v)
st = collections.OrderedDict([('t', g.Tensor(s, 0, (256, 256), (1, 256))), ('w', g.Tensor(s, 0, (256, 256), (256, 1)))])
g.save(os.path.join(d, 'good.bin'), st, deflate=True)
# zeros in a member: zlib's last output comes after its last input byte (a read there must go on)
z = g.Storage('0', 'FloatStorage', [0.0] * 262176)
g.save(os.path.join(d, 'zeros.bin'), collections.OrderedDict([('w', g.Tensor(z, 0, (262176,), (1,)))]), deflate=True)
# a step slice and a permuted stack of a deflated member (inflated whole for them), a step slice stored
s3 = g.Storage('1', 'FloatStorage', v[:4 * 8 * 16])
views = collections.OrderedDict([('step', g.Tensor(s, 0, (256, 128), (256, 2))),
                                 ('perm', g.Tensor(s3, 0, (16, 4, 8), (1, 128, 16)))])
g.save(os.path.join(d, 'views.bin'), views, deflate=True)
g.save(os.path.join(d, 'views_stored.bin'), views)
# a member inflating to more than its directory entry says (the CRC being that of what it says)
class Longer(g.Storage):
    def data(self):
        return struct.pack('<2000f', *(v[:1000] + [-1.0] * 1000))
g.save(os.path.join(d, 'over.bin'), collections.OrderedDict([('w', g.Tensor(Longer('0', 'FloatStorage', v[:1000]), 0, (10, 100), (100, 1)))]), deflate=True)
b = bytearray(open(os.path.join(d, 'over.bin'), 'rb').read())
crc = zlib.crc32(struct.pack('<1000f', *v[:1000]))
lo = zipfile.ZipFile(os.path.join(d, 'over.bin')).getinfo('archive/data/0').header_offset
struct.pack_into('<I', b, lo + 14, crc)
struct.pack_into('<I', b, lo + 22, 4000)
p = b.find(b'PK\x01\x02')
while b[p + 46:p + 60] != b'archive/data/0':
    p = b.find(b'PK\x01\x02', p + 4)
struct.pack_into('<I', b, p + 16, crc)
struct.pack_into('<I', b, p + 24, 4000)
open(os.path.join(d, 'over.bin'), 'wb').write(bytes(b))
# a transposed view of a deflated member larger than what such a view is read from (64 MiB)
big = g.Storage('0', 'FloatStorage', [0.0] * (4097 * 4096))
g.save(os.path.join(d, 'bigt.bin'), collections.OrderedDict([('w', g.Tensor(big, 0, (4096, 4097), (1, 4096)))]), deflate=True)
b = open(os.path.join(d, 'good.bin'), 'rb').read()
with zipfile.ZipFile(os.path.join(d, 'good.bin')) as z:
    i = z.getinfo('archive/data/0')
lo = i.header_offset
data = lo + 30 + struct.unpack_from('<H', b, lo + 26)[0] + struct.unpack_from('<H', b, lo + 28)[0]
bb = bytearray(b)
bb[data:data + 16] = b'\xff' * 16  # not deflate data
open(os.path.join(d, 'corrupt.bin'), 'wb').write(bytes(bb))
bb = bytearray(b)
cd = struct.unpack_from('<I', b, len(b) - 22 + 16)[0]
p = cd
while b[p:p + 4] == b'PK\x01\x02':
    nlen, xlen, clen = struct.unpack_from('<HHH', b, p + 28)
    if b[p + 46:p + 46 + nlen] == b'archive/data/0':
        struct.pack_into('<I', bb, p + 16, i.CRC ^ 1)
    p += 46 + nlen + xlen + clen
open(os.path.join(d, 'crc.bin'), 'wb').write(bytes(bb))
PY
run 0 "$bin/ninfer-convert" "$work/dfl/good.bin" -o "$work/dfl.ninfer" --format fp32 --threads 2
run 0 "$bin/ninfer-dequant" "$work/dfl.ninfer" t -o "$work/t.f32"
run 0 "$bin/ninfer-dequant" "$work/dfl.ninfer" w -o "$work/w.f32"
python3 - "$work/t.f32" "$work/w.f32" <<'PY' && ok || bad "a deflated member's values, transposed and in place"
import struct, sys
v = [float(i % 251) - 125.0 for i in range(256 * 256)]
t = struct.unpack('<65536f', open(sys.argv[1], 'rb').read())
w = struct.unpack('<65536f', open(sys.argv[2], 'rb').read())
assert w == tuple(v)
assert t == tuple(v[i + 256 * j] for i in range(256) for j in range(256))
PY
refused "$work/dfl/corrupt.bin" "corrupt.bin: member archive/data/0: corrupt deflate data"
refused "$work/dfl/over.bin" "over.bin: member archive/data/0: the deflate stream inflates to more than the directory's size"
refused "$work/dfl/bigt.bin" "tensor 'w': a strided view of deflated member archive/data/0 of 67125248 bytes, more than the 67108864"
run 0 "$bin/ninfer-convert" "$work/dfl/zeros.bin" -o "$work/zeros.ninfer" --format fp32
run 0 "$bin/ninfer-diff" "$work/zeros.ninfer" "$work/dfl/zeros.bin"
contains "$work/out" "same"
for f in views views_stored; do
    run 0 "$bin/ninfer-convert" "$work/dfl/$f.bin" -o "$work/$f.ninfer" --format fp32 --threads 2
    run 0 "$bin/ninfer-dequant" "$work/$f.ninfer" step -o "$work/step.f32"
    run 0 "$bin/ninfer-dequant" "$work/$f.ninfer" perm -o "$work/perm.f32"
    python3 - "$work/step.f32" "$work/perm.f32" <<'PY' && ok || bad "$f: a step slice's and a permuted stack's values"
import struct, sys
v = [float(i % 251) - 125.0 for i in range(256 * 256)]
step = struct.unpack('<32768f', open(sys.argv[1], 'rb').read())
perm = struct.unpack('<512f', open(sys.argv[2], 'rb').read())
assert step == tuple(v[256 * i + 2 * j] for i in range(256) for j in range(128))
assert perm == tuple(v[i + 128 * j + 16 * k] for i in range(16) for j in range(4) for k in range(8))
PY
done
refused "$work/dfl/crc.bin" "crc.bin: member archive/data/0: CRC-32 differs from the directory's"

# zip64: every size and offset saturated, the zip64 end record and extra fields used
python3 - "$top/tests/cli" "$t" "$work/z64" <<'PY'
import collections, os, sys, zipfile
sys.path.insert(0, sys.argv[1])
import gen_torch as g
zipfile.ZIP64_LIMIT = 0
v = [float(i) for i in range(64)]
s = g.Storage('0', 'FloatStorage', v)
os.makedirs(sys.argv[3])
g.save(os.path.join(sys.argv[3], 'pytorch_model.bin'), collections.OrderedDict([('w', g.Tensor(s, 0, (8, 8), (8, 1)))]))
PY
run 0 "$bin/ninfer-convert" "$work/z64" -o "$work/z64.ninfer" --format fp32
run 0 "$bin/ninfer-dequant" "$work/z64.ninfer" w -o "$work/z.f32"
python3 -c "import struct,sys; assert struct.pack('<64f', *range(64)) == open(sys.argv[1], 'rb').read()" "$work/z.f32" && ok ||
    bad "zip64 values"

# ---------------------------------------------------------------- refusals, with no output
refused() { # FILE NEEDLE...
    local f=$1
    shift
    run 1 "$bin/ninfer-convert" "$f" -o "$work/no.ninfer" --format q4_g64_fp16
    for n in "$@"; do contains "$work/err" "$n"; done
    check test ! -e "$work/no.ninfer"
}
refused "$t/bad/evil.bin" "bad/evil.bin: archive/data.pkl: byte 2: global not allowed" "os.system"
refused "$t/bad/stride_leaves.bin" "tensor 'w': its strided view (offset 0, last element +2108) leaves its storage '1' of 2048 elements"
refused "$t/bad/legacy_big.bin" "legacy_big.bin: sys_info pickle at byte 21: sys_info does not say little_endian: True"
refused "$t/bad/legacy_tail.bin" "legacy_tail.bin: byte" ": 1 bytes after the last storage"
refused "$t/bad/legacy_short.bin" "legacy_short.bin: byte" "storage '1' says 2048 F32 elements, more than the file holds"
refused "$t/bad/legacy_twice.bin" "legacy_twice.bin: storage '1' is listed twice"
refused "$t/bad/legacy_unused.bin" "legacy_unused.bin: storage '7' is used by no tensor"
refused "$t/bad/legacy_view.bin" "legacy_view.bin: state dict pickle at byte" "a storage that is a view of another storage"
refused "$t/bad/leaves.bin" "tensor 'w': its view (offset 2040, 16 elements) leaves its storage '1' of 2048 elements"
refused "$t/bad/missing.bin" "tensor 'w': its storage '9' is not in the archive (no member archive/data/9)"
refused "$t/bad/contradicts.bin" "storage '0' holds 16 F16 elements" "the storage class contradicts its bytes"
# pickle bombs and opcodes torch.save does not write, framed in an archive
python3 - "$work/p" <<'PY'
import os, struct, sys, zipfile
d = sys.argv[1]
os.makedirs(d)
cases = {
    'deep': b'\x80\x02' + b']' * 100 + b'a' * 99 + b'.',
    'memo': b'\x80\x02}r' + struct.pack('<I', 1 << 31) + b'.',
    'string': b'\x80\x02\x8d' + struct.pack('<Q', 1 << 60) + b'.',
    'inst': b'\x80\x02(ios\nsystem\n.',
    'nostop': b'\x80\x02}',
    'selfish': b'\x80\x02}q\x00X\x01\x00\x00\x00ah\x00s.',
    # {a: {x: d, y: d}} with d one dict: each level of such sharing doubles a walk that follows it
    'shared': b'\x80\x02}(X\x01\x00\x00\x00a}(X\x01\x00\x00\x00x}q\x00X\x01\x00\x00\x00yh\x00uu.',
    # OrderedDict([('a', None)]): its entries come as REDUCE's arguments, which torch.save never writes
    'ordered': b'\x80\x02ccollections\nOrderedDict\n]X\x01\x00\x00\x00aN\x86a\x85R.',
    'longkey': b'\x80\x02}X\x01\x00\x00\x00w(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x00\x04\x00\x00'
               + b'k' * 1024 + b'X\x03\x00\x00\x00cpuK\x01tQs.',
    'nulglobal': b'\x80\x02ccollections\x00x\nOrderedDict\n)R.',
    'persid6': b'\x80\x02}X\x01\x00\x00\x00w(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000'
               + b'X\x03\x00\x00\x00cpuK\x01K\x00tQs.',
    'rebuild4': b'\x80\x02}X\x01\x00\x00\x00wctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storagectorch\n'
                + b'FloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x01tQK\x00K\x01\x85K\x01\x85tRs.',
    'emptykey': b'\x80\x02}X\x01\x00\x00\x00a}X\x00\x00\x00\x00Nss.',
    'nonutf8': b'\x80\x02}X\x02\x00\x00\x00a\xffNs.',
    'bigstr': b'\x80\x02X' + struct.pack('<I', 65 << 20) + b'a' * (65 << 20) + b'.',
}
for name, pkl in cases.items():
    with zipfile.ZipFile(os.path.join(d, name + '.bin'), 'w') as z:
        z.writestr(zipfile.ZipInfo('archive/data.pkl', (1980, 1, 1, 0, 0, 0)), pkl)
PY
refused "$work/p/deep.bin" "deep.bin: archive/data.pkl: byte" "containers nested deeper than the reader's cap"
refused "$work/p/memo.bin" "byte 3: a memo slot past the reader's cap"
refused "$work/p/string.bin" "a string runs past the end"
refused "$work/p/inst.bin" "an opcode torch.save does not write: 0x69"
refused "$work/p/nostop.bin" "the pickle ends without STOP"
refused "$work/p/selfish.bin" "dict 'a' is reached a second time"
refused "$work/p/shared.bin" "dict 'a.y' is reached a second time"
refused "$work/p/ordered.bin" "byte 38: OrderedDict built from arguments"
refused "$work/p/longkey.bin" "a storage key longer than the reader's cap"
refused "$work/p/nulglobal.bin" "byte 2: GLOBAL without two short lines free of NUL bytes"
refused "$work/p/persid6.bin" "a persistent id that is not ('storage', <storage class>, key, location, numel)"
refused "$work/p/rebuild4.bin" "_rebuild_tensor_v2 takes (storage, offset, size, stride, requires_grad, hooks[, metadata])"
refused "$work/p/emptykey.bin" "an empty key in dict 'a'"
refused "$work/p/nonutf8.bin" "a key of dict '' is not UTF-8 (byte 1 of the key)"
refused "$work/p/bigstr.bin" "byte 2: more string bytes than the reader's cap"
# broken archives: cut short, two members over the same bytes
python3 - "$t/one/pytorch_model.bin" "$work/z" <<'PY'
import os, struct, sys
src, d = sys.argv[1], sys.argv[2]
os.makedirs(d)
b = open(src, 'rb').read()
open(os.path.join(d, 'cut.bin'), 'wb').write(b[:len(b) // 2])
# central directory entries: point the second data member's local header at the first's
cd = struct.unpack_from('<I', b, len(b) - 22 + 16)[0]
offs, p = [], cd
while b[p:p + 4] == b'PK\x01\x02':
    nlen, xlen, clen = struct.unpack_from('<HHH', b, p + 28)
    offs.append(p)
    p += 46 + nlen + xlen + clen
bb = bytearray(b)
struct.pack_into('<I', bb, offs[3] + 42, struct.unpack_from('<I', b, offs[2] + 42)[0])
open(os.path.join(d, 'overlap.bin'), 'wb').write(bytes(bb))
# a local header whose name is not the directory's
names = [b[p + 46:p + 46 + struct.unpack_from('<H', b, p + 28)[0]] for p in offs]
lo = struct.unpack_from('<I', b, offs[3] + 42)[0]
bb = bytearray(b)
bb[lo + 30 + len(names[3]) - 1:lo + 30 + len(names[3])] = b'X'
open(os.path.join(d, 'renamed.bin'), 'wb').write(bytes(bb))


def zipfile_of(members, cd_at=None):
    """members: (name, local offset or None to append, data); a zip written by hand."""
    out, cd = bytearray(), bytearray()
    for name, at, data in members:
        n = name.encode()
        lh = struct.pack('<IHHHHHIIIHH', 0x04034b50, 20, 0, 0, 0, 0x21, 0, len(data), len(data), len(n), 0) + n
        if at is None:
            at = len(out)
            out += lh + data
        cd += struct.pack('<IHHHHHHIIIHHHHHII', 0x02014b50, 20, 20, 0, 0, 0, 0x21, 0, len(data), len(data), len(n), 0,
                          0, 0, 0, 0, at) + n
    start = len(out) if cd_at is None else cd_at
    out = out[:start] + cd
    out += struct.pack('<IHHHHIIH', 0x06054b50, 0, 0, len(members), len(members), len(cd), start, 0)
    return bytes(out)


def lh(name, data):
    n = name.encode()
    return struct.pack('<IHHHHHIIIHH', 0x04034b50, 20, 0, 0, 0, 0x21, 0, len(data), len(data), len(n), 0) + n
pkl = b'\x80\x02}.'
# member 1's local header lies inside member 0's data, its data just after
inner = lh('archive/data/1', b'')
m0 = b'\0' * 8 + inner
first = 30 + len('archive/data.pkl') + len(pkl)
at0 = first
at1 = at0 + 30 + len('archive/data/0') + 8
open(os.path.join(d, 'nested.bin'), 'wb').write(zipfile_of([('archive/data.pkl', None, pkl), ('archive/data/0', None, m0),
                                                            ('archive/data/1', at1, b'')]))
# a member's data that runs into the central directory
z = zipfile_of([('archive/data.pkl', None, pkl), ('archive/data/0', None, b'\0' * 64)])
cd = struct.unpack_from('<I', z, len(z) - 6)[0]
open(os.path.join(d, 'intoend.bin'), 'wb').write(zipfile_of([('archive/data.pkl', None, pkl),
                                                             ('archive/data/0', None, b'\0' * 64)], cd_at=cd - 16))
PY
refused "$work/z/cut.bin" "cut.bin: zip byte" "no end of central directory record"
refused "$work/z/overlap.bin" "overlap.bin: zip byte" "overlap"
refused "$work/z/renamed.bin" "renamed.bin: zip byte" "the local header names another member than the directory does"
refused "$work/z/nested.bin" "nested.bin: zip byte" "members 'archive/data/0' and 'archive/data/1' overlap"
refused "$work/z/intoend.bin" "intoend.bin: zip byte" "reaches into the central directory"
# what one storage is, every tensor on it must agree on; the bytes' order; an empty view's offset
python3 - "$top/tests/cli" "$work/s" <<'PY'
import collections, os, sys, zipfile
sys.path.insert(0, sys.argv[1])
import gen_torch as g
d = sys.argv[2]
os.makedirs(d)
v = [float(i) for i in range(16)]
f32, f16 = g.Storage('0', 'FloatStorage', v), g.Storage('0', 'HalfStorage', v + v)  # 64 bytes either way
g.save(os.path.join(d, 'classes.bin'), collections.OrderedDict([('a', g.Tensor(f32, 0, (4, 4), (4, 1))),
                                                                 ('b', g.Tensor(f16, 0, (4, 8), (8, 1)))]))
g.save(os.path.join(d, 'empty.bin'), collections.OrderedDict([('e', g.Tensor(f32, 1000, (0, 4), (4, 1)))]))
g.save(os.path.join(d, 'big.bin'), collections.OrderedDict([('w', g.Tensor(f32, 0, (4, 4), (4, 1)))]))
with zipfile.ZipFile(os.path.join(d, 'big.bin')) as z:
    items = [(i, z.read(i)) for i in z.infolist()]
with zipfile.ZipFile(os.path.join(d, 'big.bin'), 'w') as z:
    for i, b in items:
        z.writestr(i, b'big' if i.filename.endswith('/byteorder') else b)
# a Trainer's output directory: the weights beside the pickled arguments
os.makedirs(os.path.join(d, 'trainer'))
g.save(os.path.join(d, 'trainer', 'pytorch_model.bin'), collections.OrderedDict([('w', g.Tensor(f32, 0, (4, 4), (4, 1)))]))
open(os.path.join(d, 'trainer', 'training_args.bin'), 'wb').write(b'\x80\x04\x95')
PY
refused "$work/s/classes.bin" "tensor 'b': storage '0' is 16 F32 elements for tensor 'a' but 32 F16 elements for this one"
refused "$work/s/empty.bin" "tensor 'e': its view (offset 1000, 0 elements) leaves its storage '0' of 16 elements"
refused "$work/s/big.bin" "big.bin: member archive/byteorder says the storages are not little-endian ('big')"
run 0 "$bin/ninfer-convert" "$work/s/trainer" -o "$work/trainer.ninfer" --format fp32
run 0 "$bin/ninfer-inspect" "$work/trainer.ninfer" --json
contains "$work/out" '"w"'
# a legacy stream cut after its magic number, and a directory of .bin files without an index
printf '\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.' >"$work/legacy.bin"
refused "$work/legacy.bin" "legacy.bin: a pickle stream that does not start with torch.save's magic number and protocol version 1001"
mkdir -p "$work/two" && cp "$t/sharded/"*.bin "$work/two/"
refused "$work/two" "2 *.bin files" "no pytorch_model.bin.index.json"
# the legacy stream met through a directory and through an index: read as the stream it is
mkdir -p "$work/legacydir" "$work/legacyidx"
cp "$work/legacy.bin" "$work/legacydir/pytorch_model.bin"
cp "$work/legacy.bin" "$work/legacyidx/pytorch_model-00001-of-00001.bin"
printf '{"weight_map": {"w": "pytorch_model-00001-of-00001.bin"}}' >"$work/legacyidx/pytorch_model.bin.index.json"
refused "$work/legacydir" "legacydir/pytorch_model.bin: a pickle stream that does not start with torch.save's magic"
refused "$work/legacyidx" "pytorch_model-00001-of-00001.bin: a pickle stream that does not start with torch.save's magic"
# an index whose shards are one legacy stream and one archive
run 0 "$bin/ninfer-convert" "$t/mixed" -o "$work/lsh.ninfer" --format q4_g64_fp16
for w in $names; do
    run 0 "$bin/ninfer-dequant" "$work/lsh.ninfer" "$w" -o "$work/a.f32"
    run 0 "$bin/ninfer-dequant" "$work/st.ninfer" "$w" -o "$work/b.f32"
    same "$work/a.f32" "$work/b.f32"
done

finish torch
