#!/usr/bin/env bash
# --preset against llama-quantize itself (docs/presets.md, "Checked against llama-quantize"): the
# peer (llama.cpp's prebuilt libllama driven by bench/peer/nf-llama-quantize.c, installed by
# scripts/peer-llama.sh into BIN_DIR/../peer-llama and kept there for reruns) quantizes an F16 GGUF
# of ninfer-gen-checkpoint (8 layers, rows of 256) for every preset, all in one process, and
# `ninfer-convert GGUF --preset P [--imatrix F]` converts the same file: every tensor must get the
# type llama-quantize gave it and hold the same bytes (F32 tensors kept as they are, the others
# ggml's blocks; iq1_m: the type only, docs/presets.md).  Every preset with an importance matrix
# on a model of 4 heads per kv head, and without one on a model of 1.  Where the peer stops (a type
# that needs an importance matrix) ninfer-convert must stop too (exit 1, nothing written); where
# llama-quantize picks q4_1 / q5_1 (no ninfer format) ninfer-convert must refuse, and its
# --dry-run must show llama-quantize's type for every tensor.  No npm, no registry or not
# x86-64: SKIP.
# usage: test_preset_peer.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

command -v python3 >/dev/null || { echo "SKIP python3 (to read the GGUF and the artifact) is not installed"; exit 0; }
peer_dir=${NINFER_PEER_DIR:-$(dirname "$bin")/peer-llama}
bash "$top/scripts/peer-llama.sh" "$peer_dir" >"$work/peer.env" 2>"$work/peer.err"
st=$?
if [ "$st" -eq 4 ]; then
    echo "SKIP the llama-quantize peer cannot be installed here: $(tail -c 400 "$work/peer.err")"
    exit 0
elif [ "$st" -ne 0 ]; then
    bad "scripts/peer-llama.sh exited $st: $(tail -c 600 "$work/peer.err")"
    finish test_preset_peer
    exit
fi
eval "$(cat "$work/peer.env")"

presets="Q2_K Q3_K_S Q3_K_M Q3_K_L Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K Q8_0 Q4_0 Q5_0 IQ4_XS IQ4_NL
IQ3_M IQ3_S IQ3_XS IQ3_XXS IQ2_M IQ2_S IQ2_XS IQ2_XXS IQ1_S IQ1_M"

# compare.py PEER.gguf ARTIFACT INSPECT.json: per tensor, the type and the bytes;
# compare.py PEER.gguf --dry-run JSON: per tensor, the type `--preset P --dry-run --json` chose
cat >"$work/compare.py" <<'PY'
import json, struct, sys
TYPES = {0: 'f32', 1: 'f16', 2: 'q4_0', 3: 'q4_1', 6: 'q5_0', 7: 'q5_1', 8: 'q8_0', 10: 'q2_k', 11: 'q3_k',
         12: 'q4_k', 13: 'q5_k', 14: 'q6_k', 16: 'iq2_xxs', 17: 'iq2_xs', 18: 'iq3_xxs', 19: 'iq1_s',
         20: 'iq4_nl', 21: 'iq3_s', 22: 'iq2_s', 23: 'iq4_xs', 29: 'iq1_m', 30: 'bf16', 42: 'q2_0'}
g = open(sys.argv[1], 'rb').read()
at = 24
def take(fmt):
    global at
    v = struct.unpack_from(fmt, g, at)
    at += struct.calcsize(fmt)
    return v[0] if len(v) == 1 else v
def string():
    n = take('<Q')
    global at
    s = g[at:at + n].decode()
    at += n
    return s
def skip_value(t):
    global at
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    if t == 8:
        string()
    elif t == 9:
        inner, n = take('<I'), take('<Q')
        for _ in range(n):
            skip_value(inner)
    else:
        at += sizes[t]
assert g[:4] == b'GGUF'
nt, nkv = struct.unpack_from('<QQ', g, 8)
align = 32
for _ in range(nkv):
    k, t = string(), take('<I')
    if k == 'general.alignment':
        align = take('<I')
    else:
        skip_value(t)
tensors = []
for _ in range(nt):
    name = string()
    dims = take('<I')
    ne = [take('<Q') for _ in range(dims)]
    t, off = take('<I'), take('<Q')
    tensors.append((name, ne, t, off))
data = (at + align - 1) // align * align
if sys.argv[2] == '--dry-run':   # the types of `--preset P --dry-run --json` (kept: f32)
    got = {t['gguf']: t['type'] if t['type'] else 'f32' for t in json.load(open(sys.argv[3]))['preset']['tensors']}
    bad = 0
    for name, ne, t, off in tensors:
        if got.get(name) != TYPES.get(t, 'type%d' % t):
            print('%s: llama-quantize %s, --dry-run %s' % (name, TYPES.get(t), got.get(name))); bad += 1
    sys.exit(1 if bad or len(got) != len(tensors) else 0)
art, insp = sys.argv[2], sys.argv[3]
j = json.load(open(insp))
a = open(art, 'rb').read()
objs = {o['id']: o for o in j['objects'] if o.get('kind') == 'tensor'}
base = j['payload_offset']
bad = 0
for name, ne, t, off in tensors:
    o = objs.get(name)
    want = TYPES.get(t, 'type%d' % t)
    if o is None:
        print('%s: llama-quantize wrote it (%s), the artifact has no such object' % (name, want)); bad += 1
        continue
    got = o['format'][5:] if o['format'].startswith('gguf_') else o['format'].replace('fp32', 'f32')
    if got != want:
        print('%s: llama-quantize %s, ninfer %s' % (name, want, o['format'])); bad += 1
        continue
    mine = a[base + o['offset']:base + o['offset'] + o['bytes']]
    theirs = g[data + off:data + off + o['bytes']]
    if mine != theirs:
        k = next(i for i in range(len(mine)) if i >= len(theirs) or mine[i] != theirs[i])
        if want == 'iq1_m':
            # ggml's iq1_m search sums in another order since d99724f2 (docs/presets.md): a
            # rare block differs; the type is checked, the bytes are not
            print('note: %s (iq1_m): bytes differ from byte %d (ggml after d99724f2)' % (name, k), file=sys.stderr)
            continue
        print('%s (%s): bytes differ from byte %d of %d' % (name, want, k, o['bytes'])); bad += 1
names = {n for n, _, _, _ in tensors}
for n in objs:
    if n not in names:
        print('%s: in the artifact, not in llama-quantize\'s output' % n); bad += 1
sys.exit(1 if bad else 0)
PY

# a model of 8 layers (the layer rules count eighths), rows of 256 (whole k-quant blocks);
# --head-dim sets heads per kv head: 4 (n_gqa >= 4) or 1
model() { # NAME KV_HIDDEN
    "$bin/ninfer-gen-checkpoint" "$work/$1" --hidden 256 --kv-hidden "$2" --head-dim 32 --intermediate 256 \
        --layers 8 --vocab 32 --gguf --dtype f16 >/dev/null || bad "ninfer-gen-checkpoint $1"
}
model gqa4 64
model gqa1 256
python3 "$top/tests/cli/gen_imatrix.py" "$work/imatrix.gguf" 256 256 8 7 4 || bad "gen_imatrix.py"

# One preset on one model, with or without the imatrix: the peer's GGUF, then ninfer-convert's
# artifact, compared tensor by tensor.
# llama-quantize's runs, all in one process (nf-llama-quantize --jobs): ggml builds each IQ type's
# search tables once a process, 10 s of one core for IQ1_S/IQ1_M's alone; its status per run
declare -A peer_status
tags=()
for p in $presets; do
    tags+=("gqa4.$p.im")
    echo "--imatrix $work/imatrix.gguf $work/gqa4/model.gguf $work/gqa4.$p.im.gguf $p"
done >"$work/peer.jobs"
for p in $presets; do
    tags+=("gqa1.$p")
    echo "$work/gqa1/model.gguf $work/gqa1.$p.gguf $p"
done >>"$work/peer.jobs"
"$PEER_BIN" "$PEER_LIB" --jobs "$work/peer.jobs" 2 >"$work/peer.status" 2>"$work/peer.log" ||
    bad "nf-llama-quantize --jobs exited $?: $(tail -c 600 "$work/peer.log")"
while read -r _ n _ st; do
    n=${n%:}
    [ "$n" -ge 1 ] && [ "$n" -le ${#tags[@]} ] && peer_status[${tags[$((n - 1))]}]=$st
done <"$work/peer.status"

compare() { # MODEL PRESET [--imatrix FILE]
    local m=$1 p=$2 tag=$1.$2${3:+.im} peer ours
    shift 2
    peer=${peer_status[$tag]:-none}
    if [ "$peer" = none ]; then
        bad "$tag: nf-llama-quantize --jobs gave no status for it"
        return
    fi
    "$bin/ninfer-convert" "$work/$m/model.gguf" -o "$work/$tag.ninfer" --preset "$p" "$@" -q 2>"$work/$tag.err"
    ours=$?
    if [ "$peer" -ne 0 ]; then
        # llama-quantize stops (a type that needs an importance matrix): so must --preset
        if [ "$ours" -eq 1 ] && [ ! -e "$work/$tag.ninfer" ]; then ok; else
            bad "$tag: llama-quantize failed (exit $peer; its log: $work/peer.log), ninfer-convert exited $ours"
        fi
        return
    fi
    if [ "$ours" -eq 1 ] && grep -qE 'gives it (q4_1|q5_1), which no ninfer format holds' "$work/$tag.err"; then
        # q4_1 / q5_1 (Q4_0 / Q5_0 with an imatrix: no ninfer format, docs/presets.md): refused,
        # nothing written; the choice of every tensor is still llama-quantize's (--dry-run)
        check test ! -e "$work/$tag.ninfer"
        "$bin/ninfer-convert" "$work/$m/model.gguf" -o "$work/$tag.ninfer" --preset "$p" "$@" --dry-run --json \
            >"$work/$tag.dry.json" 2>"$work/$tag.err" || { bad "$tag: --dry-run: $(head -c 300 "$work/$tag.err")"; return; }
        if python3 "$work/compare.py" "$work/$tag.gguf" --dry-run "$work/$tag.dry.json" >"$work/$tag.diff"; then ok; else
            bad "$tag: --dry-run's types differ from llama-quantize's: $(head -c 1500 "$work/$tag.diff")"
        fi
        return
    fi
    if [ "$ours" -ne 0 ]; then
        bad "$tag: llama-quantize succeeded, ninfer-convert exited $ours: $(head -c 400 "$work/$tag.err")"
        return
    fi
    "$bin/ninfer-inspect" "$work/$tag.ninfer" --json >"$work/$tag.json" 2>/dev/null || { bad "$tag: ninfer-inspect"; return; }
    if python3 "$work/compare.py" "$work/$tag.gguf" "$work/$tag.ninfer" "$work/$tag.json" >"$work/$tag.diff" \
        2>"$work/$tag.note"; then
        [ -s "$work/$tag.note" ] && cat "$work/$tag.note"
        ok
    else
        bad "$tag: differs from llama-quantize: $(head -c 1500 "$work/$tag.diff")"
    fi
    rm -f "$work/$tag.gguf" "$work/$tag.ninfer"
}

# every preset with the imatrix on the n_gqa = 4 model; without one on the n_gqa = 1 model (the
# very-low-bit presets: both must stop), which takes the other branches of the rules that read
# n_gqa or whether there is an imatrix (Q2_K, IQ3_*, IQ4_*, IQ2_*, attn_v and ffn_down)
for p in $presets; do compare gqa4 "$p" --imatrix "$work/imatrix.gguf"; done
for p in $presets; do compare gqa1 "$p"; done
finish test_preset_peer
