#!/usr/bin/env bash
# make demo: generate a small Llama-shaped bf16 checkpoint (deterministic, odd shapes), convert
# it with recipes/demo.yaml (q4, q5, q6, q8, fp8 rows, direct tensors, one stacked group), then
# inspect and verify the artifact and print the per-tensor error table of the conversion report.
set -euo pipefail
bin=${1:-build/bin}
here=$(cd "$(dirname "$0")/.." && pwd)
out=${DEMO_OUT:-$here/demo-out}
mkdir -p "$out"
rm -rf "$out/checkpoint" "$out"/demo.ninfer*
step() { printf '\n$ %s\n' "$*"; "$@"; }
step "$bin/ninfer-gen-checkpoint" "$out/checkpoint"
step "$bin/ninfer-convert" -r "$here/recipes/demo.yaml" --source base="$out/checkpoint" -o "$out/demo.ninfer"
step "$bin/ninfer-inspect" "$out/demo.ninfer"
step "$bin/ninfer-verify" "$out/demo.ninfer"
step "$bin/ninfer-inspect" "$out/demo.ninfer" --words model.layers.0.self_attn.q_proj.weight --rows 0:1 --cols 0:16

printf '\nper-tensor error of the conversion (%s):\n' "$out/demo.ninfer.conversion.json"
python3 - "$out/demo.ninfer.conversion.json" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
# every column as wide as its widest cell, header included (as ninfer-inspect's tables)
head = ('object', 'format', 'method', 'max_abs_err', 'rmse', 'snr_db')
rows = [(o['object'], o['format'], o['method'], '%.3g' % o.get('max_abs_error', 0.0),
         '%.3g' % o.get('rmse', 0.0), 'exact' if o.get('snr_db') is None else '%.1f' % o['snr_db'])
        for o in rep['objects']]
w = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
for r in [head] + rows:
    print('  '.join(c.ljust(w[i]) if i < 3 else c.rjust(w[i]) for i, c in enumerate(r)))
PY
