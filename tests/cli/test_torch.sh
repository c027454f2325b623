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
for src in one/pytorch_model.bin one sharded sharded/pytorch_model.bin.index.json; do
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
refused "$t/bad/strided.bin" "tensor 'w': a strided view of storage '0'"
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
refused "$work/p/selfish.bin" "dicts nested deeper than 64 (or holding themselves)"
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
PY
refused "$work/z/cut.bin" "cut.bin: zip byte" "no end of central directory record"
refused "$work/z/overlap.bin" "overlap.bin: zip byte" "overlap"
# the legacy stream, and a directory of .bin files without an index
printf '\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19.' >"$work/legacy.bin"
refused "$work/legacy.bin" "legacy.bin: PyTorch's legacy (non-zip) checkpoint format, before 1.6: not read by this version"
mkdir -p "$work/two" && cp "$t/sharded/"*.bin "$work/two/"
refused "$work/two" "2 *.bin files" "no pytorch_model.bin.index.json"

finish torch
