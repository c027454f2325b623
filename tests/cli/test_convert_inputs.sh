#!/usr/bin/env bash
# What ninfer-convert takes from its inputs (design.md section 7, "Trust boundaries", the input
# side): re-encoded sources are announced (M5).
# usage: test_convert_inputs.sh BIN_DIR DATA_DIR
set -u
bin=$(cd "$1" && pwd)
data=$(cd "$2" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0
fail=0
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh"
contains() { if grep -qF -- "$2" "$1"; then ok; else bad "$1 lacks '$2': $(head -c 400 "$1")"; fi; }
lacks() { if grep -qF -- "$2" "$1"; then bad "$1 has '$2': $(head -c 400 "$1")"; else ok; fi; }

# ---------------------------------------------------------------- M5: re-encoded sources
# quick mode keeps a GGUF block tensor as bf16 (lossy): the plan's note column and one warning say so
mkdir "$work/m5"
run 0 "$bin/ninfer-convert" "$data/gguf/q4_k.gguf" -o "$work/m5/q.ninfer" --format q8_g32_fp16 --dry-run
contains "$work/out" "requantized from Q4_K"
contains "$work/err" "warning: 1 tensor already encoded in the checkpoint"
contains "$work/err" "blk.0.attn_q.weight"
run 0 "$bin/ninfer-convert" "$data/gguf/q4_k.gguf" -o "$work/m5/q.ninfer" --format q8_g32_fp16 --dry-run --json
python3 - "$work/out" <<'PY' && ok || bad "the JSON plan's notes"
import json, sys
d = json.load(open(sys.argv[1]))
notes = {o['id']: o.get('note') for o in d['objects']}
assert notes['blk.0.attn_q.weight'].startswith('requantized from Q4_K'), notes
assert notes['blk.0.ffn_up.weight'] is None, notes
PY
# the conversion itself warns too; importing the blocks says nothing
run 0 "$bin/ninfer-convert" "$data/gguf/q4_k.gguf" -o "$work/m5/q.ninfer" --format q8_g32_fp16
contains "$work/err" "warning: 1 tensor already encoded"
run 0 "$bin/ninfer-convert" "$data/gguf/q4_k.gguf" -o "$work/m5/i.ninfer" --format q8_g32_fp16 \
    --rule 'blk.0.attn_q.weight=gguf_q4_k:import_encoded' --dry-run
lacks "$work/err" "warning"
lacks "$work/out" "requantized"

echo "convert inputs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
