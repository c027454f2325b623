#!/usr/bin/env bash
# cast_direct to bf16 (docs/security.md 7.1, F4, docs/methods.md): a finite F32 source value that rounds to
# infinity (FLT_MAX) is refused like a scale overflow, naming the tensor, row and column, with
# exit 1 and nothing written; infinities and NaN of the source are stored as such and the
# conversion report counts them under values_not_compared, never as a finite error.
# usage: test_cast_overflow.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

python3 - "$work" <<'PY'
import json, struct, sys
def st(path, tensors):
    hdr, data = {}, b''
    for name, vals in tensors:
        raw = struct.pack('<%dI' % len(vals), *vals)
        hdr[name] = {'dtype': 'F32', 'shape': [2, len(vals) // 2], 'data_offsets': [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(hdr).encode()
    h += b' ' * (-len(h) % 8)
    open(path, 'wb').write(struct.pack('<Q', len(h)) + h + data)
one, two = 0x3F800000, 0x40000000
import os
os.makedirs(sys.argv[1] + '/big'); os.makedirs(sys.argv[1] + '/nan')
# FLT_MAX at row 1, col 2
st(sys.argv[1] + '/big/model.safetensors', [('w.ok', [one] * 8), ('w.big', [one, two, one, two, one, two, 0x7F7FFFFF, one])])
# +inf, -inf and a NaN among finite values
st(sys.argv[1] + '/nan/model.safetensors', [('w.nan', [one, 0x7F800000, two, 0xFF800000, 0x7FC00001, one, two, one])])
PY
printf 'recipe: 1\nsources:\n  base: %s\ndefaults: {format: bf16}\n' "$work/big" >"$work/big.yaml"
printf 'recipe: 1\nsources:\n  base: %s\ndefaults: {format: bf16}\n' "$work/nan" >"$work/nan.yaml"
mkdir "$work/o"

run 1 "$bin/ninfer-convert" -r "$work/big.yaml" -o "$work/o/big.ninfer"
contains "$work/err" "w.big"
contains "$work/err" "row 1 col 2"
contains "$work/err" "overflows bfloat16"
if [ -z "$(ls -A "$work/o")" ]; then ok; else bad "a refused conversion left files: $(ls -A "$work/o")"; fi
# quick mode takes the same path
run 1 "$bin/ninfer-convert" "$work/big" -o "$work/o/q.ninfer" --format bf16
contains "$work/err" "overflows bfloat16"
# fp32 holds FLT_MAX as it is
run 0 "$bin/ninfer-convert" "$work/big" -o "$work/o/f.ninfer" --format fp32
rm -f "$work"/o/*

run 0 "$bin/ninfer-convert" -r "$work/nan.yaml" -o "$work/o/nan.ninfer"
run 0 "$bin/ninfer-verify" "$work/o/nan.ninfer"
python3 - "$work/o/nan.ninfer.conversion.json" <<'PY' && ok || bad "the report counts non-finite pairs as values_not_compared"
import json, math, sys
r = json.load(open(sys.argv[1]))
o = [x for x in r['objects'] if x['object'] == 'w.nan'][0]
assert o['method'] == 'cast_direct' and o['format'] == 'bf16', o
assert o['values_not_compared'] == 3, o
assert o['values_compared'] == 5, o
assert o['max_abs_error'] == 0 and o['rmse'] == 0 and o['snr_db'] is None, o
PY
run 0 "$bin/ninfer-dequant" "$work/o/nan.ninfer" w.nan --format text
contains "$work/out" "inf"
contains "$work/out" "nan"

finish "cast overflow"
