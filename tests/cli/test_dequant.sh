#!/usr/bin/env bash
# ninfer-dequant: values of every kind of tensor against the upstream sidecars and ggml's own
# output, native words, .npy and text formats, --rows windows, zstd, --all safetensors, refusals.
# usage: test_dequant.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
up=$data/upstream

# Compare f32 raw output with the sidecar's values (NaN matches NaN; signed zeros exact).
sidecar_values() { # ARTIFACT ID RAWFILE
    python3 - "$up/$1.expected.json" "$2" "$3" <<'PY'
import json, math, struct, sys
doc = json.load(open(sys.argv[1]))
objs = doc['objects']
o = next(x for x in (objs if isinstance(objs, list) else objs.values()) if x['id'] == sys.argv[2])
raw = open(sys.argv[3], 'rb').read()
got = struct.unpack('<%df' % (len(raw) // 4), raw)
want = o['values']
assert len(got) == len(want), (len(got), len(want))
for i, (g, w) in enumerate(zip(got, want)):
    if w == 'nan':
        assert math.isnan(g), (i, g)
    else:
        w = struct.unpack('<f', struct.pack('<f', float(w)))[0]
        assert g == w and math.copysign(1, g) == math.copysign(1, w), (i, g, w)
PY
}

for spec in "row_split.ninfer q4" "row_split.ninfer q5" "row_split.ninfer q6" "row_split.ninfer q8" \
            "row_split.ninfer t2" "row_split.ninfer q2" "fp8_row.ninfer fp8/bf16_3x300" \
            "fp8_row.ninfer fp8/fp16_3x160" "direct.ninfer bf16/matrix" "direct.ninfer int32/matrix" \
            "split.ninfer q8" "split.ninfer matrix" "model.ninfer weight/000001"; do
    set -- $spec
    run 0 "$bin/ninfer-dequant" "$up/$1" "$2" -o "$work/v.f32"
    check sidecar_values "$1" "$2" "$work/v.f32"
done

# gguf_* values are ggml's own dequantization
for t in q4_k q8_0 q2_0; do
    run 0 "$bin/ninfer-dequant" "$up/gguf.ninfer" "gguf/$t" --to f32 --format raw -o "$work/g.f32"
    check cmp -s "$work/g.f32" "$data/gguf/$t.dequant.f32"
done

# stdout when no -o (not a terminal here), and the same bytes as -o
run 0 "$bin/ninfer-dequant" "$up/row_split.ninfer" q4 -o "$work/a.f32"
"$bin/ninfer-dequant" "$up/row_split.ninfer" q4 >"$work/b.f32" && check cmp -s "$work/a.f32" "$work/b.f32"

# native words of direct tensors; refused for quantized formats
run 0 "$bin/ninfer-dequant" "$up/direct.ninfer" bf16/matrix --to native -o "$work/n.bin"
check cmp -s "$work/n.bin" <(printf '\x00\x00\x00\x80\x80\x3f\xc1\x7f\x01\x00\xa0\xc0')
run 2 "$bin/ninfer-dequant" "$up/row_split.ninfer" q4 --to native -o "$work/n.bin"
grep -q "direct tensors" "$work/err" && ok || bad "native refusal message"

# --rows is a window of the full output
run 0 "$bin/ninfer-dequant" "$up/split.ninfer" matrix -o "$work/full.f32"
run 0 "$bin/ninfer-dequant" "$up/split.ninfer" matrix --rows 10:13 -o "$work/win.f32"
check cmp -s "$work/win.f32" <(dd if="$work/full.f32" bs=256 skip=10 count=3 status=none)
run 2 "$bin/ninfer-dequant" "$up/split.ninfer" matrix --rows 10:65 -o "$work/win.f32"

# f16 / bf16 are the f32 values rounded to nearest even
run 0 "$bin/ninfer-dequant" "$up/direct.ninfer" bf16/rank3 --to bf16 -o "$work/b16"
check cmp -s "$work/b16" <(printf '\x80\x3f\x81\x3f\x82\x3f\x83\x3f\x84\x3f\x85\x3f\x86\x3f\x87\x3f')
run 0 "$bin/ninfer-dequant" "$up/direct.ninfer" bf16/rank3 --to f16 -o "$work/h16"
check cmp -s "$work/h16" <(printf '\x00\x3c\x08\x3c\x10\x3c\x18\x3c\x20\x3c\x28\x3c\x30\x3c\x38\x3c')

# text: one line per row
run 0 "$bin/ninfer-dequant" "$up/direct.ninfer" bf16/matrix --format text
check diff -u <(printf '0 -0 1\nnan 9.18354962e-41 -5\n') "$work/out"
run 0 "$bin/ninfer-dequant" "$up/direct.ninfer" int32/matrix --format text --to native
check diff -u <(printf '0 -1\n-2147483648 2147483647\n') "$work/out"

# .npy: header and data
run 0 "$bin/ninfer-dequant" "$up/direct.ninfer" bf16/rank3 --format npy -o "$work/x.npy"
check python3 - "$work/x.npy" <<'PY'
import struct, sys
b = open(sys.argv[1], 'rb').read()
assert b[:8] == b'\x93NUMPY\x01\x00'
n = struct.unpack('<H', b[8:10])[0]
assert (10 + n) % 64 == 0
head = b[10:10 + n].decode()
assert head.rstrip().endswith('}') and head.endswith('\n')
d = eval(head)
assert d == {'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 2)}, d
vals = struct.unpack('<8f', b[10 + n:])
assert vals == (1.0, 1.0078125, 1.015625, 1.0234375, 1.03125, 1.0390625, 1.046875, 1.0546875)
PY
run 0 "$bin/ninfer-dequant" "$up/container_small.ninfer" scale --format npy -o "$work/s.npy"
check python3 -c "import sys; b=open('$work/s.npy','rb').read(); assert b\"'shape': ()\" in b and b.endswith(b'\\x00\\x00\\x00@')"

# zstd
run 0 "$bin/ninfer-dequant" "$up/split.ninfer" matrix --zstd=5 -o "$work/m.zst"
check cmp -s <(zstd -dc "$work/m.zst") "$work/full.f32"

# --all: a safetensors checkpoint of every tensor, equal to per-tensor output
run 0 "$bin/ninfer-dequant" "$up/model.ninfer" --all -o "$work/all.safetensors"
for id in weight/000000 weight/000001 auxiliary/000000 auxiliary/000001; do
    "$bin/ninfer-dequant" "$up/model.ninfer" "$id" -o "$work/one.f32" || bad "dequant $id"
    check python3 - "$work/all.safetensors" "$id" "$work/one.f32" <<'PY'
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', b[:8])[0]
h = json.loads(b[8:8 + n])
t = h[sys.argv[2]]
assert t['dtype'] == 'F32'
s, e = t['data_offsets']
assert b[8 + n + s:8 + n + e] == open(sys.argv[3], 'rb').read()
assert max(v['data_offsets'][1] for k, v in h.items() if k != '__metadata__') == len(b) - 8 - n
PY
done
run 2 "$bin/ninfer-dequant" "$up/model.ninfer" --all
run 2 "$bin/ninfer-dequant" "$up/model.ninfer" weight/000000 --all -o "$work/x.safetensors"

# usage and input errors
run 1 "$bin/ninfer-dequant" "$up/model.ninfer" no/such -o "$work/x"
run 1 "$bin/ninfer-dequant" "$up/model.ninfer" tokenizer.json -o "$work/x"
run 3 "$bin/ninfer-dequant" "$work/missing.ninfer" w -o "$work/x"
run 2 "$bin/ninfer-dequant" "$up/model.ninfer" weight/000000 --to f64
run 2 "$bin/ninfer-dequant" "$up/model.ninfer" weight/000000 --zstd=99
check test ! -e "$work/x"
# never replaces the artifact it reads
cp "$up/direct.ninfer" "$work/self.ninfer"
run 2 "$bin/ninfer-dequant" "$work/self.ninfer" bf16/matrix -o "$work/self.ninfer"
check cmp -s "$work/self.ninfer" "$up/direct.ninfer"
# a failed run leaves no output behind and no temp file (q8 starts at payload 35840: part 4)
cp "$up"/split.ninfer* "$work/" && rm "$work/split.ninfer.part-0004"
run 1 "$bin/ninfer-dequant" "$work/split.ninfer" q8 -o "$work/q8.f32"
check test -z "$(ls -A "$work" | grep -e '\.tmp$' -e '^q8.f32$')"

finish "dequant"
