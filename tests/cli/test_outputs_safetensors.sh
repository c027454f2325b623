#!/usr/bin/env bash
# `ninfer-dequant --all` writes only safetensors files that safetensors readers (ours included)
# accept (docs/security.md 1.3: every cap a reader enforces is checked by the writer; docs/security.md 7.1, F6): an
# object ID `__metadata__` (the name safetensors reserves for its metadata) is refused, exit 1,
# naming it, as are IDs longer than a reader takes (1024 bytes); nothing is written.  The
# artifacts are upstream's direct.ninfer with an object renamed (re-framed by the helper below).
# usage: test_outputs_safetensors.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
nothing() { check test -z "$(ls -A "$work/o")"; }

rename() { # rename IN OUT OLD-ID NEW-ID: a single-file artifact with one object renamed
    python3 - "$@" <<'PY'
import json, struct, sys
src, dst, old, new = sys.argv[1:5]
b = open(src, 'rb').read()
jb = struct.unpack('<Q', b[8:16])[0]
d = json.loads(b[32:32 + jb])
start = (32 + jb + 4095) // 4096 * 4096
payload = b[start:]
for o in d['objects']:
    if o['id'] == old:
        o['id'] = new
for k, v in d['bindings'].items():
    if v.get('object') == old:
        v['object'] = new
d.get('metadata', {}).pop('checksums', None)
text = json.dumps(d, separators=(',', ':'), ensure_ascii=False).encode()
jb = (32 + len(text) + 4095) // 4096 * 4096 - 32
with open(dst, 'wb') as f:
    f.write(b[:8] + struct.pack('<Q', jb) + b[16:32] + text + b' ' * (jb - len(text)) + payload)
PY
}
mkdir "$work/o"
up=$data/upstream

# the reserved name
rename "$up/direct.ninfer" "$work/meta.ninfer" fp32/vector __metadata__
run 0 "$bin/ninfer-verify" "$work/meta.ninfer"          # a valid artifact
run 0 "$bin/ninfer-dequant" "$work/meta.ninfer" __metadata__ -o "$work/one.f32"
run 1 "$bin/ninfer-dequant" "$work/meta.ninfer" --all -o "$work/o/all.safetensors"
contains "$work/err" "__metadata__"
contains "$work/err" "reserve"
contains "$work/err" "$work/meta.ninfer"
nothing
# an ID longer than a safetensors reader takes
long=$(printf 'n%.0s' $(seq 1 1100))
rename "$up/direct.ninfer" "$work/long.ninfer" fp32/vector "$long"
run 0 "$bin/ninfer-verify" "$work/long.ninfer"
run 1 "$bin/ninfer-dequant" "$work/long.ninfer" --all -o "$work/o/all.safetensors"
contains "$work/err" "1100 bytes"
contains "$work/err" "1024"
nothing
# what --all writes otherwise is a checkpoint our own safetensors reader opens
run 0 "$bin/ninfer-dequant" "$up/direct.ninfer" --all -o "$work/o/all.safetensors"
run 0 "$bin/ninfer-inspect" "$work/o/all.safetensors"
contains "$work/out" "fp32/vector"

finish "outputs safetensors"
