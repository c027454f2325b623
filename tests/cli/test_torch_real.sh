#!/usr/bin/env bash
# PyTorch checkpoints written by torch.save itself (docs/security.md 2.6): Debian's python3-torch
# writes them (tests/cli/gen_torch_real.py; installed with apt-get when missing and run as root,
# else the test is skipped) as the zip archive, the legacy stream before PyTorch 1.6 and a sharded
# index.  Each is read without executing anything, and every tensor gives the values and the dtype
# and shape torch gives it: every float and int dtype, a tied embedding, a fused qkv's slices, a
# column slice, a transposed weight and a permuted 3-D tensor (strided views), an nn.Parameter.
# usage: test_torch_real.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

py=/usr/bin/python3 # Debian's python3-torch installs for the system's interpreter
if ! "$py" -c 'import torch' >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "SKIP torch.save's files need Debian's python3-torch, and installing it needs root (uid $(id -u))"
        exit 0
    fi
    if ! command -v apt-get >/dev/null; then
        echo "SKIP torch.save's files need Debian's python3-torch, and there is no apt-get to install it"
        exit 0
    fi
    { DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-torch ||
        { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-torch; }; } \
        >"$work/apt.log" 2>&1
    if ! "$py" -c 'import torch' >/dev/null 2>&1; then
        echo "SKIP apt-get install python3-torch did not provide torch: $(tail -c 300 "$work/apt.log")"
        exit 0
    fi
fi
t="$work/t"
"$py" "$top/tests/cli/gen_torch_real.py" "$t" 2>"$work/gen.err" || {
    bad "gen_torch_real.py failed: $(tail -c 400 "$work/gen.err")"
    finish torch_real
    exit 1
}
names=$(python3 -c 'import json, sys; print("\n".join(json.load(open(sys.argv[1]))))' "$t/tensors.json")
for layout in zip legacy sharded sharded/pytorch_model.bin.index.json zip/pytorch_model.bin legacy/pytorch_model.bin; do
    run 0 "$bin/ninfer-convert" "$t/$layout" -o "$work/a.ninfer" --format fp32 --force
    # the values torch gives, tensor by tensor (floats converted to binary32 by torch itself)
    for n in $names; do
        [ -f "$t/expect/$n.f32" ] || continue
        run 0 "$bin/ninfer-dequant" "$work/a.ninfer" "$n" -o "$work/v.f32"
        same "$work/v.f32" "$t/expect/$n.f32"
    done
    run 0 "$bin/ninfer-diff" "$work/a.ninfer" "$t/$layout"
    contains "$work/out" "same (18 objects compared)"
    run 0 "$bin/ninfer-verify" "$work/a.ninfer" --against "$t/$layout"
    contains "$work/out" "valid"
    # dtypes and shapes as torch reports them; the legacy stream and the zip name one kind
    run 0 "$bin/ninfer-inspect" "$t/$layout" --json
    python3 - "$work/out" "$t/tensors.json" <<'PY' && ok || bad "inspect $layout: kind, dtypes, shapes"
import json, sys
d, want = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert d['kind'] == 'pytorch', d['kind']
got = {t['name']: {'dtype': t['dtype'], 'shape': t['shape']} for t in d['tensors']}
assert got == want, (got, want)
PY
done
# a quantized conversion of the legacy stream and of the archive: the same bytes
run 0 "$bin/ninfer-convert" "$t/zip" -o "$work/z.ninfer" --format q4_g64_fp16
run 0 "$bin/ninfer-convert" "$t/legacy" -o "$work/l.ninfer" --format q4_g64_fp16
for n in model.layers.0.mlp.down_proj.weight model.layers.0.self_attn.o_proj.weight; do
    run 0 "$bin/ninfer-dequant" "$work/z.ninfer" "$n" -o "$work/z.f32"
    run 0 "$bin/ninfer-dequant" "$work/l.ninfer" "$n" -o "$work/l.f32"
    same "$work/z.f32" "$work/l.f32"
done
# the fuzz target's seeds are such files (written by gen_torch_real.py, copied by hand): they read
# as what torch writes today reads (storage keys aside: the legacy stream's are addresses)
tensors() { python3 -c 'import json, sys
print(json.dumps([(t["name"], t["dtype"], t["shape"]) for t in json.load(open(sys.argv[1]))["tensors"]]))' "$1"; }
for f in real_zip.bin real_legacy.bin; do
    run 0 "$bin/ninfer-inspect" "$t/seeds/$f" --json
    tensors "$work/out" >"$work/b.txt"
    run 0 "$bin/ninfer-inspect" "$top/tests/fuzz/corpus/torch/$f" --json
    tensors "$work/out" >"$work/a.txt"
    same "$work/a.txt" "$work/b.txt"
done
finish torch_real
