#!/usr/bin/env bash
# Names from files in human output (docs/security.md 1.3; ninfer/escape.h):
# object ids, tensor names, part paths, GGUF keys and values and file names holding a newline
# (forging a "valid" line), a carriage return, ESC and OSC sequences, a C1 CSI, a bidi override
# and bytes that are not UTF-8 are shown escaped by ninfer-inspect, ninfer-verify,
# ninfer-dequant and ninfer-diff: no output line starts with the forged verdict, and no control byte other
# than the line feed (nor invalid UTF-8, nor a C1 or bidi control) reaches stdout or stderr.
# --json output keeps the exact strings.
# usage: test_hostile_names.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

# clean WHAT FILE...: every byte a terminal would act on is escaped, and nothing forges a line.
clean() {
    local what=$1; shift
    if python3 - "$@" <<'PY'; then ok; else bad "$what: raw bytes reach the output"; fi
import re, sys
bad = False
for path in sys.argv[1:]:
    b = open(path, 'rb').read()
    for i, c in enumerate(b):
        if (c < 0x20 and c != 0x0a) or c == 0x7f:
            print('%s: control byte 0x%02x at %d: %r' % (path, c, i, b[max(0, i - 30):i + 10])); bad = True; break
    try:
        t = b.decode('utf-8')
    except UnicodeDecodeError as e:
        print('%s: invalid UTF-8: %s' % (path, e)); bad = True; continue
    m = re.search('[\u0080-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]', t)
    if m:
        print('%s: format control U+%04X' % (path, ord(m.group()))); bad = True
    for line in t.split('\n'):
        if re.match(r'\s*x\.ninfer: valid', line) or line.startswith('valid'):
            print('%s: forged line %r' % (path, line)); bad = True
sys.exit(1 if bad else 0)
PY
}

# A safetensors checkpoint whose tensor names are hostile.
python3 - "$work" <<'PY'
import json, struct, sys
names = ["w\nx.ninfer: valid (1 objects; checked structure)", "esc\x1b[31mred\x1b]0;title\x07",
         "cr\rx.ninfer: valid", "c1\u009b31m", "bidi\u202eabc", "back\\slash"]
hdr, data = {}, b''
for n in names:
    raw = struct.pack('<64f', *[0.5 + i for i in range(64)])
    hdr[n] = {'dtype': 'F32', 'shape': [2, 32], 'data_offsets': [len(data), len(data) + len(raw)]}
    data += raw
h = json.dumps(hdr).encode()
h += b' ' * (-len(h) % 8)
open(sys.argv[1] + '/model.safetensors', 'wb').write(struct.pack('<Q', len(h)) + h + data)
json.dump(names, open(sys.argv[1] + '/names.json', 'w'))
PY
mkdir "$work/a"
"$bin/ninfer-convert" "$work/model.safetensors" -o "$work/a/h.ninfer" --format q8_g32_fp16 >/dev/null 2>&1 ||
    bad "convert of the hostile checkpoint failed"
h=$work/a/h.ninfer
W=$'w\nx.ninfer: valid (1 objects; checked structure)'
E=$'esc\x1b[31mred\x1b]0;title\x07'

# ninfer-inspect: summary, views, one tensor, its words, errors that name the object
run 0 "$bin/ninfer-inspect" "$h";                          clean "inspect summary" "$work/out" "$work/err"
run 0 "$bin/ninfer-inspect" "$h" --objects --bindings --uses --files; clean "inspect views" "$work/out" "$work/err"
run 0 "$bin/ninfer-inspect" "$h" --tensor "$W" --stats;    clean "inspect --tensor" "$work/out" "$work/err"
run 0 "$bin/ninfer-inspect" "$h" --words "$E" --rows 0:1;  clean "inspect --words" "$work/out" "$work/err"
run 1 "$bin/ninfer-inspect" "$h" --tensor "$W.nope";       clean "inspect unknown id" "$work/out" "$work/err"
if grep -qF 'w\nx.ninfer: valid' "$work/err"; then ok; else bad "the escaped id is missing: $(cat "$work/err")"; fi
# the checkpoint itself
run 0 "$bin/ninfer-inspect" "$work/model.safetensors";     clean "inspect checkpoint" "$work/out" "$work/err"
run 0 "$bin/ninfer-inspect" "$work/model.safetensors" --tensor "$E"; clean "inspect checkpoint --tensor" "$work/out" "$work/err"
# JSON keeps the exact names
"$bin/ninfer-inspect" "$h" --json >"$work/i.json" 2>/dev/null
python3 - "$work/i.json" "$work/names.json" <<'PY' && ok || bad "inspect --json ids are not exact"
import json, sys
d = json.load(open(sys.argv[1])); names = json.load(open(sys.argv[2]))
assert sorted(o['id'] for o in d['objects']) == sorted(names), [o['id'] for o in d['objects']]
PY

# ninfer-verify: valid, and invalid with problems that name the objects
run 0 "$bin/ninfer-verify" "$h";                           clean "verify valid" "$work/out" "$work/err"
cp "$h" "$work/a/bad.ninfer"
python3 - "$work/a/bad.ninfer" <<'PY'
import json, struct, sys
p = sys.argv[1]; b = bytearray(open(p, 'rb').read())
jb = struct.unpack('<Q', b[8:16])[0]; d = json.loads(b[32:32 + jb]); start = (32 + jb + 4095) // 4096 * 4096
for o in d['objects']:
    b[start + o['offset'] + 7] ^= 0x01          # a code byte of every object: its checksum no longer matches
open(p, 'wb').write(b)
PY
run 1 "$bin/ninfer-verify" "$work/a/bad.ninfer";            clean "verify invalid" "$work/out" "$work/err"
if grep -c "^  object '" "$work/out" | grep -qx 6; then ok; else bad "one problem line per object: $(cat "$work/out")"; fi
"$bin/ninfer-verify" --json "$work/a/bad.ninfer" >"$work/v.json" 2>/dev/null
python3 - "$work/v.json" "$work/names.json" <<'PY' && ok || bad "verify --json objects are not exact"
import json, sys
d = json.load(open(sys.argv[1])); names = json.load(open(sys.argv[2]))
assert sorted(p['object'] for p in d['problems']) == sorted(names), d['problems']
PY
# a file name that forges a verdict (a glob over a directory someone else wrote)
cp "$h" "$work/a/$W"
run 0 "$bin/ninfer-verify" "$work/a/$W" "$h";              clean "verify hostile file name" "$work/out" "$work/err"
run 3 "$bin/ninfer-verify" "$work/a/$E.missing";           clean "verify missing hostile path" "$work/out" "$work/err"

# a split artifact whose part is named with control bytes, and missing
python3 - "$data/upstream/split.ninfer" "$work/a/split.ninfer" <<'PY'
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
jb = struct.unpack('<Q', b[8:16])[0]; d = json.loads(b[32:32 + jb]); start = (32 + jb + 4095) // 4096 * 4096
d['files'][1]['path'] = "p\x1b[2J\nx.ninfer: valid (1 objects)\u009b"
text = json.dumps(d, separators=(',', ':')).replace('"matrix"', json.dumps("o\x1b]8;;http://x\x07link")).encode()
head = b[:8] + struct.pack('<Q', len(text)) + b[16:32] + text
new_start = (len(head) + 4095) // 4096 * 4096
open(sys.argv[2], 'wb').write(head + bytes(new_start - len(head)) + b[start:])
PY
run 1 "$bin/ninfer-verify" "$work/a/split.ninfer";         clean "verify hostile part name" "$work/out" "$work/err"
# the library's messages name the part escaped (what a program prints is escaped once more)
"$bin/ninfer-verify" --json "$work/a/split.ninfer" >"$work/v.json" 2>/dev/null
python3 - "$work/v.json" <<'PY' && ok || bad "the library message does not escape the part name"
import json, sys
m = json.load(open(sys.argv[1]))['problems'][0]['message']
assert '/p\\x1b[2J\\nx.ninfer: valid (1 objects)\\u009b (files[1])' in m, m
PY
run 1 "$bin/ninfer-inspect" "$work/a/split.ninfer" --words "o"$'\x1b'"]8;;http://x"$'\x07'"link"
clean "inspect hostile part name" "$work/out" "$work/err"
run 0 "$bin/ninfer-inspect" "$work/a/split.ninfer" --files; clean "inspect --files hostile part" "$work/out" "$work/err"

# ninfer-convert: the plan (--dry-run), a conversion, and errors naming the tensors
run 0 "$bin/ninfer-convert" "$work/model.safetensors" -o "$work/a/d.ninfer" --format q8_g32_fp16 --dry-run
clean "convert --dry-run" "$work/out" "$work/err"
if grep -qF 'w\nx.ninfer: valid' "$work/out"; then ok; else bad "the escaped id is missing: $(cat "$work/out")"; fi
run 0 "$bin/ninfer-convert" "$work/model.safetensors" -o "$work/a/d.ninfer" --format q8_g32_fp16 -v
clean "convert -v" "$work/out" "$work/err"
run 1 "$bin/ninfer-convert" "$work/model.safetensors" -o "$work/a/e.ninfer" --format q8_g32_fp16 --rule "$E=nope"
clean "convert bad rule" "$work/out" "$work/err"
# an output path with control bytes: the closing "wrote OUT" line shows it escaped (issue 23, item 15)
run 0 "$bin/ninfer-convert" "$work/model.safetensors" -o "$work/a/$E.ninfer" --format q8_g32_fp16 --no-report
clean "convert hostile -o" "$work/out" "$work/err"
contains "$work/err" 'wrote '"$work"'/a/esc\x1b[31mred\x1b]0;title\x07.ninfer ('

# ninfer-dequant
run 0 "$bin/ninfer-dequant" "$h" "$E" --format text;       clean "dequant text" "$work/err"
run 1 "$bin/ninfer-dequant" "$h" "$E.nope";                clean "dequant unknown id" "$work/out" "$work/err"
run 1 "$bin/ninfer-dequant" "$work/a/split.ninfer" --all -o "$work/a/all.safetensors"
clean "dequant --all hostile part" "$work/out" "$work/err"

# ninfer-diff: hostile ids as objects that changed, and in messages naming an object or a part;
# --json keeps them exact
"$bin/ninfer-convert" "$work/model.safetensors" -o "$work/a/h4.ninfer" --format q4_g64_fp16 >/dev/null 2>&1 ||
    bad "convert of the hostile checkpoint to q4 failed"
run 1 "$bin/ninfer-diff" "$h" "$work/a/h4.ninfer";          clean "diff" "$work/out" "$work/err"
run 1 "$bin/ninfer-diff" "$h" "$work/model.safetensors";    clean "diff against the checkpoint" "$work/out" "$work/err"
run 1 "$bin/ninfer-diff" "$work/a/bad.ninfer" "$h";         clean "diff hostile objects" "$work/out" "$work/err"
run 1 "$bin/ninfer-diff" "$work/a/split.ninfer" "$h";       clean "diff hostile part" "$work/out" "$work/err"
# half the names: objects only in A, and bindings[ID] / provenance.objects[ID] keys removed
python3 - "$work/model.safetensors" "$work/half.safetensors" <<'PY'
import json, struct, sys
b = open(sys.argv[1], 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; hdr = json.loads(b[8:8 + n]); data = b[8 + n:]
out, blob = {}, b''
for k in list(hdr)[::2]:
    lo, hi = hdr[k]['data_offsets']
    out[k] = dict(hdr[k], data_offsets=[len(blob), len(blob) + hi - lo]); blob += data[lo:hi]
h = json.dumps(out).encode(); h += b' ' * (-len(h) % 8)
open(sys.argv[2], 'wb').write(struct.pack('<Q', len(h)) + h + blob)
PY
"$bin/ninfer-convert" "$work/half.safetensors" -o "$work/a/half.ninfer" --format q8_g32_fp16 >/dev/null 2>&1 ||
    bad "convert of half the hostile checkpoint failed"
run 1 "$bin/ninfer-diff" "$h" "$work/a/half.ninfer";        clean "diff removed ids" "$work/out" "$work/err"
contains "$work/out" 'directory bindings[esc\x1b[31mred\x1b]0;title\x07]: removed'
"$bin/ninfer-diff" --json "$h" "$work/a/h4.ninfer" >"$work/d.json" 2>/dev/null
python3 - "$work/d.json" "$work/names.json" <<'PY' && ok || bad "diff --json ids are not exact"
import json, sys
d = json.load(open(sys.argv[1])); names = json.load(open(sys.argv[2]))
assert sorted(o['id'] for o in d['objects']) == sorted(names), d['objects']
PY

# A GGUF checkpoint whose tensor name, key and string value are not UTF-8 and hold controls.
python3 - "$work/g.gguf" <<'PY'
import struct, sys
def s(x): return struct.pack('<Q', len(x)) + x
name = b'blk.\xff\x1b[2J\n' + b'x.ninfer: valid'
kv = s(b'key.\xfe\x1b]0;t\x07') + struct.pack('<I', 8) + s(b'value\n\xc2\x9b1m\xff')
ti = s(name) + struct.pack('<I', 1) + struct.pack('<Q', 32) + struct.pack('<IQ', 0, 0)
out = b'GGUF' + struct.pack('<IQQ', 3, 1, 1) + kv + ti
out += b'\0' * (-len(out) % 32)
out += struct.pack('<32f', *range(32))
open(sys.argv[1], 'wb').write(out)
PY
run 0 "$bin/ninfer-inspect" "$work/g.gguf";                clean "inspect gguf" "$work/out" "$work/err"
run 0 "$bin/ninfer-inspect" "$work/g.gguf" --tensor $'blk.\xff\x1b[2J\nx.ninfer: valid' --stats
clean "inspect gguf --tensor" "$work/out" "$work/err"
run 1 "$bin/ninfer-inspect" "$work/g.gguf" --tensor $'\x1b[2Jnope'
clean "inspect gguf unknown tensor" "$work/out" "$work/err"

finish "hostile names"
