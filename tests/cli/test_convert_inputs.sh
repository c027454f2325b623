#!/usr/bin/env bash
# What ninfer-convert takes from its inputs (docs/security.md 1.3, the input
# side): GGUF blocks are imported in quick mode and re-encoded sources announced (M5); a recipe reads only what the command line allows
# and expands only the variables it allows, never echoing a value (F2); with SOURCE_DATE_EPOCH
# the artifact id binds the weights (F13); a checkpoint of many shards converts under a low limit of
# open files (F8).
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
# quick mode imports a GGUF block tensor as it is (its gguf_* format); the note column says so, and
# no warning: nothing is lossy
mkdir "$work/m5"
run 0 "$bin/ninfer-convert" "$data/gguf/q4_k.gguf" -o "$work/m5/q.ninfer" --format q8_g32_fp16 --dry-run
contains "$work/out" "GGUF Q4_K blocks imported as they are"
contains "$work/out" "gguf_q4_k"
lacks "$work/err" "warning"
run 0 "$bin/ninfer-convert" "$data/gguf/q4_k.gguf" -o "$work/m5/q.ninfer" --format q8_g32_fp16 --dry-run --json
python3 - "$work/out" <<'PY' && ok || bad "the JSON plan's notes"
import json, sys
d = json.load(open(sys.argv[1]))
objs = {o['id']: o for o in d['objects']}
q = objs['blk.0.attn_q.weight']
assert q['note'] == 'GGUF Q4_K blocks imported as they are', q
assert (q['format'], q['method']) == ('gguf_q4_k', 'import_encoded'), q
assert objs['blk.0.ffn_up.weight'].get('note') is None, objs
assert objs['blk.0.ffn_up.weight']['format'] == 'q8_g32_fp16', objs
PY
# the words are the file's blocks, byte for byte (verify re-derives them from the checkpoint)
run 0 "$bin/ninfer-convert" "$data/gguf/q4_k.gguf" -o "$work/m5/q.ninfer" --format q8_g32_fp16
lacks "$work/err" "warning"
run 0 "$bin/ninfer-verify" "$work/m5/q.ninfer" --against "$data/gguf/q4_k.gguf"
# requantizing them takes --requantize (or a rule naming the tensor): lossy, said in the note
# column and in one warning
run 0 "$bin/ninfer-convert" "$data/gguf/q4_k.gguf" -o "$work/m5/r.ninfer" --format q8_g32_fp16 --requantize --dry-run
contains "$work/out" "requantized from Q4_K"
contains "$work/err" "warning: 1 tensor already encoded in the checkpoint"
contains "$work/err" "blk.0.attn_q.weight"
run 0 "$bin/ninfer-convert" "$data/gguf/q4_k.gguf" -o "$work/m5/r.ninfer" --format q8_g32_fp16 \
    --rule 'blk.0.attn_q.weight=bf16' --dry-run
contains "$work/out" "requantized from Q4_K"
contains "$work/err" "warning: 1 tensor already encoded"
run 0 "$bin/ninfer-convert" "$data/gguf/q4_k.gguf" -o "$work/m5/i.ninfer" --format q8_g32_fp16 \
    --rule 'blk.0.attn_q.weight=gguf_q4_k:import_encoded' --dry-run
lacks "$work/err" "warning"
lacks "$work/out" "requantized"

# ---------------------------------------------------------------- quick mode's resources
# the tokenizer and generation files beside a checkpoint are kept as resources of the text
# component (also from a Hugging Face hub cache, whose snapshot files link to the model's
# blobs); a link out of the directory anywhere else is refused, never embedded (F2)
qr=$work/qr
mkdir -p "$qr/o"
"$bin/ninfer-gen-checkpoint" "$qr/ck" >/dev/null || bad "generator"
printf '{"bos_token_id": 1}\n' >"$qr/ck/generation_config.json"
run 0 "$bin/ninfer-convert" "$qr/ck" -o "$qr/o/a.ninfer" --format q8_g32_fp16 --dry-run
contains "$work/out" "tokenizer.json"
contains "$work/out" "generation_config.json"
run 0 "$bin/ninfer-convert" "$qr/ck/model.safetensors" -o "$qr/o/a.ninfer" --format q8_g32_fp16 --dry-run
contains "$work/out" "tokenizer.json"
run 0 "$bin/ninfer-convert" "$qr/ck" -o "$qr/o/a.ninfer" --format q8_g32_fp16 --no-resources --dry-run
lacks "$work/out" "tokenizer.json"
hub=$qr/hub/models--org--m
mkdir -p "$hub/blobs" "$hub/snapshots/0123abc"
for f in config.json model.safetensors tokenizer.json generation_config.json; do
    h=$(sha1sum "$qr/ck/$f" | cut -c1-40)
    cp "$qr/ck/$f" "$hub/blobs/$h"
    ln -s "../../blobs/$h" "$hub/snapshots/0123abc/$f"
done
run 0 "$bin/ninfer-convert" "$hub/snapshots/0123abc" -o "$qr/o/h.ninfer" --format q8_g32_fp16 -q --no-report
python3 - "$qr/o/h.ninfer" "$qr/ck/tokenizer.json" <<'PY' && ok || bad "the hub cache's tokenizer.json is not the resource"
import json, struct, sys
a = open(sys.argv[1], 'rb').read(); jb = struct.unpack_from('<Q', a, 8)[0]; d = json.loads(a[32:32 + jb])
o = [x for x in d['objects'] if x['id'] == 'tokenizer.json'][0]
assert a[32 + jb + o['offset']:32 + jb + o['offset'] + o['bytes']] == open(sys.argv[2], 'rb').read()
assert d['components']['text']['resources']['tokenizer.json'] == 'tokenizer.json', d['components']
PY
echo "secret" >"$qr/secret"
ln -sf "$qr/secret" "$hub/snapshots/0123abc/tokenizer.json"
run 1 "$bin/ninfer-convert" "$hub/snapshots/0123abc" -o "$qr/o/s.ninfer" --format q8_g32_fp16
contains "$work/err" "outside what the recipe may read"
check test ! -e "$qr/o/s.ninfer"
run 0 "$bin/ninfer-convert" "$hub/snapshots/0123abc" -o "$qr/o/s.ninfer" --format q8_g32_fp16 --no-resources -q
truncate -s $((256 * 1024 * 1024 + 1)) "$qr/ck/tokenizer.model"
run 1 "$bin/ninfer-convert" "$qr/ck" -o "$qr/o/b.ninfer" --format q8_g32_fp16
contains "$work/err" "more than the 256 MiB quick mode keeps as a resource"
rm -f "$qr/ck/tokenizer.model"

# ---------------------------------------------------------------- a GGUF's metadata
# every key/value pair, with its type, as the resource gguf_metadata.json of the text component
# (checked against a reader of the GGUF header written here from the format), the hyperparameters
# with a config.json name as the text config; --no-resources leaves both out
mkdir "$work/meta"
for g in all_types q4_k; do
    run 0 "$bin/ninfer-convert" "$data/gguf/$g.gguf" -o "$work/meta/$g.ninfer" --format q8_g32_fp16 -q --no-report
    python3 - "$data/gguf/$g.gguf" "$work/meta/$g.ninfer" <<'PY' && ok || bad "$g: gguf_metadata.json is not the file's key/value pairs"
import json, math, struct, sys
g = open(sys.argv[1], 'rb').read()
pos = 24
def take(fmt):
    global pos
    v = struct.unpack_from('<' + fmt, g, pos); pos += struct.calcsize('<' + fmt); return v[0]
def string():
    global pos
    n = take('Q'); s = g[pos:pos + n]; pos += n; return s
names = {0: 'u8', 1: 'i8', 2: 'u16', 3: 'i16', 4: 'u32', 5: 'i32', 6: 'f32', 7: 'bool', 8: 'string', 10: 'u64', 11: 'i64', 12: 'f64'}
fmts = {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: 'B', 10: 'Q', 11: 'q', 12: 'd'}
def value(t):
    if t == 8:
        s = string()
        try: return s.decode('utf-8')
        except UnicodeDecodeError: return {'hex': s.hex()}
    v = take(fmts[t])
    if t == 7: return bool(v)
    if t in (6, 12):
        if math.isnan(v): return 'NaN'
        if math.isinf(v): return 'Infinity' if v > 0 else '-Infinity'
    if t == 10 and v > 2**63 - 1: return str(v)
    return v
want = {}
n_kv = struct.unpack_from('<Q', g, 16)[0]
for _ in range(n_kv):
    key = string().decode(); t = take('I')
    if t == 9:
        et = take('I'); n = take('Q')
        want[key] = {'type': 'array', 'element_type': names[et], 'value': [value(et) for _ in range(n)]}
    else:
        want[key] = {'type': names[t], 'value': value(t)}
a = open(sys.argv[2], 'rb').read()
jb = struct.unpack_from('<Q', a, 8)[0]
d = json.loads(a[32:32 + jb])
o = [x for x in d['objects'] if x['id'] == 'gguf_metadata.json'][0]
got = json.loads(a[32 + jb + o['offset']:32 + jb + o['offset'] + o['bytes']])
assert list(got) == list(want), (list(got), list(want))
for k in want:
    w, h = want[k], got[k]
    assert w['type'] == h['type'] and w.get('element_type') == h.get('element_type'), k
    if w['type'] == 'f32':  # stored binary32, written as the binary64 of the same value
        assert struct.pack('<f', h['value']) == struct.pack('<f', w['value']), k
    else:
        assert h['value'] == w['value'], (k, h, w)
text = d['components']['text']
assert text['resources'] == {'gguf_metadata.json': 'gguf_metadata.json'}, text
arch = want['general.architecture']['value']
assert text['config']['model_type'] == arch, text
for suffix, key in (('embedding_length', 'hidden_size'), ('block_count', 'num_hidden_layers'), ('context_length', 'max_position_embeddings')):
    if arch + '.' + suffix in want:
        assert text['config'][key] == want[arch + '.' + suffix]['value'], (key, text)
PY
done
run 0 "$bin/ninfer-convert" "$data/gguf/q4_k.gguf" -o "$work/meta/n.ninfer" --format q8_g32_fp16 --no-resources --dry-run
lacks "$work/out" "gguf_metadata.json"
# a recipe with its own components decides its resources; defaults.gguf_metadata: drop says none
printf 'recipe: 1\nsources:\n  base: %s\ndefaults: {format: fp32, gguf_metadata: drop}\n' "$data/gguf/q4_k.gguf" >"$work/meta/r.yaml"
run 0 "$bin/ninfer-convert" -r "$work/meta/r.yaml" -o "$work/meta/r.ninfer" --dry-run --allow-path "$data"
lacks "$work/out" "gguf_metadata.json"

# ---------------------------------------------------------------- a GGUF tensor name not UTF-8
# (issue 23 item 12: the tensor vanished from --dry-run's table and --json, the budget's table
# printed "(null)", the conversion failed in the writer naming no tensor) refused at planning,
# naming the file, the tensor's index and its escaped name; nothing written
u8=$work/u8
mkdir -p "$u8/o"
python3 - "$u8/g.gguf" <<'PY'
import struct, sys
def s(x): return struct.pack('<Q', len(x)) + x
names = [b'a.weight', b'blk.\xff\x1b[2J\nname.weight']
out = b'GGUF' + struct.pack('<IQQ', 3, len(names), 1) + s(b'general.architecture') + struct.pack('<I', 8) + s(b'llama')
for i, n in enumerate(names):
    out += s(n) + struct.pack('<IQQIQ', 2, 64, 4, 0, i * 64 * 4 * 4)
out += b'\0' * (-len(out) % 32)
out += struct.pack('<%df' % (2 * 64 * 4), *[((i * 7) % 23 - 11) / 16 for i in range(2 * 64 * 4)])
open(sys.argv[1], 'wb').write(out)
PY
for args in "--format q8_g32_fp16 --dry-run" "--format q8_g32_fp16 --dry-run --json" "--target-bpw 9 --dry-run" \
    "--target-bpw 9 --dry-run --json" "--format q8_g32_fp16" "--target-bpw 9"; do
    # shellcheck disable=SC2086
    run 1 "$bin/ninfer-convert" "$u8/g.gguf" -o "$u8/o/m.ninfer" $args
    contains "$work/err" 'g.gguf: tensor 1 ('"'"'blk.\xff\x1b[2J\nname.weight'"'"'): its name is not UTF-8 (byte 4 of it)'
    lacks "$work/err" $'\x1b'
    [ -s "$work/out" ] && bad "$args: printed $(head -c 300 "$work/out")" || ok
    [ -z "$(ls -A "$u8/o")" ] && ok || bad "$args: files left: $(ls -A "$u8/o")"
done
# the other tools still read it (its name shown escaped: tests/cli/test_hostile_names.sh)
run 0 "$bin/ninfer-inspect" "$u8/g.gguf"

# ---------------------------------------------------------------- F2: what a recipe may read
f2=$work/f2
mkdir -p "$f2/r" "$f2/o"
"$bin/ninfer-gen-checkpoint" "$f2/r/ck" >/dev/null || bad "generator"
echo "the secret" >"$f2/secret.txt"
nothing_written() { if [ -z "$(ls -A "$f2/o")" ]; then ok; else bad "files left: $(ls -A "$f2/o")"; fi; }
recipe() { printf 'recipe: 1\nsources:\n  base: %s\ncomponents:\n  text:\n    resources: {s: "%s"}\n' "$1" "$2" >"$f2/r/r.yaml"; }
# the reported case: as many '..' as it takes, then an absolute path, then a link
recipe ./ck 'base/../../../../../../../../etc/passwd'
run 1 "$bin/ninfer-convert" -r "$f2/r/r.yaml" -o "$f2/o/m.ninfer" --dry-run
contains "$work/err" "r.yaml:6:17: components.text.resources.s: 'base/../../../../../../../../etc/passwd' resolves to /etc/passwd, outside what the recipe may read"
contains "$work/err" "--allow-path DIR"
recipe ./ck "$f2/secret.txt"
run 1 "$bin/ninfer-convert" -r "$f2/r/r.yaml" -o "$f2/o/m.ninfer"
contains "$work/err" "components.text.resources.s: '$f2/secret.txt' is outside what the recipe may read"
nothing_written
ln -s "$f2/secret.txt" "$f2/r/innocent.txt"
recipe ./ck ./innocent.txt
run 1 "$bin/ninfer-convert" -r "$f2/r/r.yaml" -o "$f2/o/m.ninfer"
contains "$work/err" "'./innocent.txt' resolves to $f2/secret.txt"
nothing_written
# --allow-path lets it in: the resource is published
run 0 "$bin/ninfer-convert" -r "$f2/r/r.yaml" -o "$f2/o/m.ninfer" --allow-path "$f2"
run 0 "$bin/ninfer-inspect" "$f2/o/m.ninfer" --json
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['components']['text']['resources'] == {'s': 's'}" \
    "$work/out" && ok || bad "the allowed resource is not in the artifact"
rm -f "$f2"/o/*
run 2 "$bin/ninfer-convert" -r "$f2/r/r.yaml" -o "$f2/o/m.ninfer" --allow-path "$f2/nope"
contains "$work/err" "--allow-path $f2/nope"
# a checkpoint outside is read wherever it is (the strict readers take only a checkpoint), but
# naming it does not let the recipe publish its other files: a resource in it needs --source
mv "$f2/r/ck" "$f2/ck"
printf 'recipe: 1\nsources:\n  base: ../ck\n' >"$f2/r/r.yaml"
run 0 "$bin/ninfer-convert" -r "$f2/r/r.yaml" -o "$f2/o/m.ninfer" --dry-run
printf 'recipe: 1\nsources:\n  base: %s\n' "$f2/ck" >"$f2/r/r.yaml"
run 0 "$bin/ninfer-convert" -r "$f2/r/r.yaml" -o "$f2/o/m.ninfer" --dry-run
recipe ../ck base/tokenizer.json
run 1 "$bin/ninfer-convert" -r "$f2/r/r.yaml" -o "$f2/o/m.ninfer" --dry-run
contains "$work/err" "r.yaml:6:17: components.text.resources.s: 'base/tokenizer.json' is outside what the recipe may read"
run 0 "$bin/ninfer-convert" -r "$f2/r/r.yaml" -o "$f2/o/m.ninfer" --dry-run --source base="$f2/ck"
# ... and a recipe read from stdin has no directory of its own
recipe "$f2/ck" base/tokenizer.json
run 1 "$bin/ninfer-convert" -r - -o "$f2/o/m.ninfer" --dry-run <"$f2/r/r.yaml"
contains "$work/err" "no directory of its own"
# ${VAR}: only what --allow-env names, and never its value in a message
mv "$f2/ck" "$f2/r/ck"
recipe './${NINFER_T_SECRET}' base/tokenizer.json
NINFER_T_SECRET=hunter2 run 1 "$bin/ninfer-convert" -r "$f2/r/r.yaml" -o "$f2/o/m.ninfer" --dry-run
contains "$work/err" "sources.base: environment variable 'NINFER_T_SECRET' is not allowed"
contains "$work/err" "--allow-env NINFER_T_SECRET"
lacks "$work/err" "hunter2"
NINFER_T_SECRET=ck run 0 "$bin/ninfer-convert" -r "$f2/r/r.yaml" -o "$f2/o/m.ninfer" --dry-run --allow-env NINFER_T_SECRET
# an allowed variable that is unset: the message quotes the path as written
recipe './${NINFER_T_SECRET}/${NINFER_T_UNSET}' base/tokenizer.json
NINFER_T_SECRET=hunter2 run 1 env -u NINFER_T_UNSET "$bin/ninfer-convert" -r "$f2/r/r.yaml" -o "$f2/o/m.ninfer" \
    --dry-run --allow-env NINFER_T_SECRET --allow-env NINFER_T_UNSET
contains "$work/err" "'NINFER_T_UNSET' is not set (in './\${NINFER_T_SECRET}/\${NINFER_T_UNSET}')"
lacks "$work/err" "hunter2"
nothing_written

# ---------------------------------------------------------------- F13: derived ids bind the content
# Two checkpoints with the same names, shapes and dtypes and other weights: the ids differ, so an
# entry of one can never pass with the parts of the other (each part header holds the id).
f13=$work/f13
mkdir -p "$f13/o"
"$bin/ninfer-gen-checkpoint" "$f13/a" --layers 1 --seed 1 >/dev/null || bad "generator"
"$bin/ninfer-gen-checkpoint" "$f13/b" --layers 1 --seed 2 >/dev/null || bad "generator"
id_of() { python3 -c "import sys; print(open(sys.argv[1], 'rb').read()[16:32].hex())" "$1"; }
for x in a b; do
    SOURCE_DATE_EPOCH=1700000000 run 0 "$bin/ninfer-convert" "$f13/$x" -o "$f13/o/$x.ninfer" --format q8_g32_fp16 \
        --max-file-bytes 400000 --no-report -q
done
if [ "$(id_of "$f13/o/a.ninfer")" != "$(id_of "$f13/o/b.ninfer")" ]; then ok; else bad "the same id for other weights"; fi
# swapping the parts of b under a's entry is caught without reading a payload byte
for part in "$f13"/o/b.ninfer.part-*; do cp "$part" "$f13/o/a.ninfer.${part##*.ninfer.}"; done
run 1 "$bin/ninfer-verify" --quick "$f13/o/a.ninfer"
contains "$work/out" "does not belong to this entry"
# the same inputs still give the same bytes
mkdir "$f13/o2"
SOURCE_DATE_EPOCH=1700000000 run 0 "$bin/ninfer-convert" "$f13/b" -o "$f13/o2/b.ninfer" --format q8_g32_fp16 \
    --max-file-bytes 400000 --no-report -q
same "$f13/o/b.ninfer" "$f13/o2/b.ninfer"
same "$f13/o/b.ninfer.part-0001" "$f13/o2/b.ninfer.part-0001"
# and another epoch, another id
mkdir "$f13/o3"
SOURCE_DATE_EPOCH=1700000001 run 0 "$bin/ninfer-convert" "$f13/b" -o "$f13/o3/b.ninfer" --format q8_g32_fp16 \
    --max-file-bytes 400000 --no-report -q
if [ "$(id_of "$f13/o/b.ninfer")" != "$(id_of "$f13/o3/b.ninfer")" ]; then ok; else bad "the epoch is not in the id"; fi

# ---------------------------------------------------------------- F8: many shards, few descriptors
# 600 shards (one small tensor each) converted, verified against and dequantized with at most 64
# open files: the source keeps a bounded cache of open shards and reopens on demand.
f8=$work/f8
mkdir -p "$f8/ck" "$f8/o64" "$f8/o1024"
python3 - "$f8/ck" <<'PY' || bad "the shard writer"
import json, struct, sys
d, n = sys.argv[1], 600
wm = {}
for i in range(n):
    name = "model.layers.%d.mlp.w.weight" % i
    shard = "model-%05d-of-%05d.safetensors" % (i + 1, n)
    vals = [((i * 31 + j * 7) % 23 - 11) / 8.0 for j in range(2 * 64)]
    data = b"".join(struct.pack("<f", v)[2:] for v in vals)  # bf16: the high half of exact binary32
    hdr = json.dumps({name: {"dtype": "BF16", "shape": [2, 64], "data_offsets": [0, len(data)]}}).encode()
    hdr += b" " * (-len(hdr) % 8)
    open("%s/%s" % (d, shard), "wb").write(struct.pack("<Q", len(hdr)) + hdr + data)
    wm[name] = shard
json.dump({"metadata": {}, "weight_map": wm}, open(d + "/model.safetensors.index.json", "w"))
PY
for lim in 64 1024; do
    (ulimit -n "$lim" && "$bin/ninfer-convert" "$f8/ck" -o "$f8/o$lim/m.ninfer" --format q8_g32_fp16 -j 2 -q \
        --artifact-id 0123456789abcdef0123456789abcdef) \
        >"$work/out" 2>"$work/err" && ok || bad "600 shards under ulimit -n $lim: $(head -c 300 "$work/err")"
done
(ulimit -n 64 && "$bin/ninfer-verify" "$f8/o64/m.ninfer" --against "$f8/ck") >"$work/out" 2>"$work/err" && ok ||
    bad "verify --against 600 shards under ulimit -n 64: $(head -c 300 "$work/out" "$work/err")"
same "$f8/o64/m.ninfer" "$f8/o1024/m.ninfer"
(ulimit -n 64 && "$bin/ninfer-inspect" "$f8/ck" --tensor model.layers.599.mlp.w.weight --stats) >"$work/out" 2>"$work/err" &&
    ok || bad "inspect a shard under ulimit -n 64: $(head -c 300 "$work/err")"

echo "convert inputs: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
