#!/usr/bin/env bash
# ninfer-inspect on source checkpoints: a generated safetensors checkpoint directory, its
# model.safetensors file, an index written here, a sharded checkpoint with unusual dtypes, the GGUF
# fixtures of DATA_DIR/gguf (see its MANIFEST.md) and a GGUF built here (long arrays, odd strings);
# summaries, --json fields, --files, --tensor [--stats] against values decoded independently in
# Python, usage errors for artifact-only views, refusals (truncated file, missing path), and the
# decision by content rather than by file name.
# usage: test_inspect_sources.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
gg=$data/gguf
inspect=$bin/ninfer-inspect

# run STATUS ARGS...: run, keep stdout/stderr in $work/out and $work/err, compare the status.
# contains FILE TEXT
contains() { if grep -qF -- "$2" "$1"; then ok; else bad "$(basename "$1") lacks '$2'"; fi; }
# pycheck LABEL SCRIPT ARGS...: a Python check of the JSON now in $work/out (its sys.argv[1];
# ARGS follow).  Checks are queued and run by one Python process at the end (start-up time).
nchecks=0
mkdir "$work/checks"
pycheck() {
    local label=$1 script=$2 dir=$work/checks/$nchecks; shift 2
    nchecks=$((nchecks + 1))
    mkdir "$dir"
    cp "$work/out" "$dir/out.json"
    printf '%s' "$label" >"$dir/label"
    printf '%s' "$script" >"$dir/check.py"
    printf '%s\n' "$#" "$@" >"$dir/args"   # the count, then one argument a line
}
run_checks() {
    python3 - "$work/checks" "$nchecks" >"$work/checks.out" <<'PY'
import sys, traceback
root, n, passed = sys.argv[1], int(sys.argv[2]), 0
for i in range(n):
    d = '%s/%d' % (root, i)
    label = open(d + '/label').read()
    lines = open(d + '/args').read().split('\n')
    sys.argv = [label, d + '/out.json'] + lines[1:1 + int(lines[0])]  # as for python3 -c
    try:
        exec(compile(open(d + '/check.py').read(), label, 'exec'), {'__name__': '__check__'})
        passed += 1
    except Exception:
        print('FAIL %s: %s' % (label, traceback.format_exc().strip().splitlines()[-1][:400]))
print('CHECKS %d %d' % (passed, n - passed))
PY
    local p f
    grep '^FAIL' "$work/checks.out"
    read -r _ p f < <(grep '^CHECKS' "$work/checks.out") || { bad "the Python checks did not run"; return; }
    pass=$((pass + p))
    fail=$((fail + f))
}

# ---------------------------------------------------------------- a safetensors checkpoint
ck=$work/ck
"$bin/ninfer-gen-checkpoint" "$ck" >/dev/null || { echo "FAIL ninfer-gen-checkpoint"; exit 1; }
# The fixtures, built by one Python process (start-up time):
#  - expected.json: what the generated checkpoint holds, read from its header (name, dtype, shape,
#    absolute offset, bytes) and an index mapping every tensor to model.safetensors;
#  - sharded/: two shards through an index, with F32 (a NaN), U32, F8_E8M0 and a rank-0 I64;
#  - odd.gguf: a 100-string token array (JSON keeps 64 and the count), a 70-value f32 array, a
#    long string with newlines, bytes that are not UTF-8, a u64 above 2^63, an f32 NaN.
sh=$work/sharded
mkdir "$sh"
python3 - "$ck" "$sh" "$work" <<'PY'
import json, struct, sys
ck, sh, work = sys.argv[1:4]

f = open(ck + '/model.safetensors', 'rb')
n = struct.unpack('<Q', f.read(8))[0]
h = json.loads(f.read(n))
meta = h.pop('__metadata__', {})
ts = sorted(h.items(), key=lambda kv: kv[1]['data_offsets'][0])
want = {'metadata': meta, 'tensors': [{'name': k, 'dtype': v['dtype'], 'shape': v['shape'],
        'offset': 8 + n + v['data_offsets'][0], 'bytes': v['data_offsets'][1] - v['data_offsets'][0]} for k, v in ts]}
json.dump(want, open(work + '/expected.json', 'w'))
json.dump({'metadata': {'total_size': sum(t['bytes'] for t in want['tensors'])},
           'weight_map': {t['name']: 'model.safetensors' for t in want['tensors']}},
          open(ck + '/model.safetensors.index.json', 'w'))

def write_st(path, tensors, meta):
    hdr, off, data = {'__metadata__': meta}, 0, b''
    for name, dt, shape, raw in tensors:
        hdr[name] = {'dtype': dt, 'shape': shape, 'data_offsets': [off, off + len(raw)]}
        off += len(raw); data += raw
    h = json.dumps(hdr).encode(); h += b' ' * (-len(h) % 8)
    open(path, 'wb').write(struct.pack('<Q', len(h)) + h + data)
write_st(sh + '/model-00001-of-00002.safetensors',
         [('a.weight', 'F32', [2, 3], struct.pack('<6f', 1, 2, 3, -4, 0, float('nan'))),
          ('u', 'U32', [4], struct.pack('<4I', 1, 2, 3, 4))], {'format': 'pt'})
write_st(sh + '/model-00002-of-00002.safetensors',
         [('b.weight', 'F8_E8M0', [2, 2], bytes([127, 128, 126, 255])), ('s', 'I64', [], struct.pack('<q', -7))],
         {'format': 'pt', 'note': 'line1\nline2'})
json.dump({'weight_map': {'a.weight': 'model-00001-of-00002.safetensors', 'u': 'model-00001-of-00002.safetensors',
                          'b.weight': 'model-00002-of-00002.safetensors', 's': 'model-00002-of-00002.safetensors'}},
          open(sh + '/model.safetensors.index.json', 'w'))
open(sh + '/config.json', 'w').write('{}\n')

def s(b): b = b if isinstance(b, bytes) else b.encode(); return struct.pack('<Q', len(b)) + b
kvs = [(b'general.architecture', 8, s('odd')),
       (b'tokenizer.ggml.tokens', 9, struct.pack('<IQ', 8, 100) + b''.join(s('tok%d' % i) for i in range(100))),
       (b'tokenizer.ggml.scores', 9, struct.pack('<IQ', 6, 70) + struct.pack('<70f', *range(70))),
       (b'tokenizer.chat_template', 8, s('{% for m in messages %}\n' * 20)),
       (b'odd.bytes', 8, s(b'ab\xff\xfecd')),
       (b'odd.big', 10, struct.pack('<Q', 2**64 - 1)),
       (b'odd.nan', 6, struct.pack('<f', float('nan')))]
out = b'GGUF' + struct.pack('<IQQ', 3, 1, len(kvs))
for k, t, v in kvs: out += s(k) + struct.pack('<I', t) + v
out += s('w') + struct.pack('<I', 2) + struct.pack('<QQ', 8, 2) + struct.pack('<IQ', 0, 0)  # F32, ne [8, 2]
out += b'\0' * (-len(out) % 32)
out += struct.pack('<16f', *[i - 8 for i in range(16)])
open(work + '/odd.gguf', 'wb').write(out)
PY
[ -f "$work/odd.gguf" ] || { echo "FAIL building the fixtures"; exit 1; }


check_st_json='
import json, os, sys
doc = json.load(open(sys.argv[1])); want = json.load(open(sys.argv[2])); shard = sys.argv[3]; index = sys.argv[4]
assert doc["kind"] == "safetensors", doc["kind"]
assert doc["index"] == (index or None), doc["index"]
assert [f["path"] for f in doc["files"]] == [shard], doc["files"]
assert doc["files"][0]["bytes"] == os.path.getsize(shard)
got = [{k: t[k] for k in ("name", "dtype", "shape", "offset", "bytes")} for t in doc["tensors"]]
assert got == want["tensors"], (got[:2], want["tensors"][:2])
assert all(t["file"] == shard for t in doc["tensors"])
assert doc["metadata"] == want["metadata"] == {"format": "pt"}, doc["metadata"]
d = os.path.dirname(shard)
assert doc["companions"] == {"config.json": d + "/config.json", "tokenizer.json": d + "/tokenizer.json"}, doc["companions"]
assert "gguf" not in doc
tot = doc["totals"]
assert tot["tensors"] == len(want["tensors"]) == 21
assert tot["bytes"] == sum(t["bytes"] for t in want["tensors"])
assert list(tot["dtypes"]) == ["BF16"] and tot["dtypes"]["BF16"]["tensors"] == 21
assert tot["elements"] * 2 == tot["bytes"]
'

# the directory, the file, an index mapping every tensor to model.safetensors
for target in "$ck" "$ck/model.safetensors" "$ck/model.safetensors.index.json"; do
    index=
    case $target in *.json) index=$target ;; esac
    # a directory holding an index opens through it
    [ "$target" = "$ck" ] && index=$ck/model.safetensors.index.json
    run 0 "$inspect" "$target"
    contains "$work/out" "kind          safetensors"
    contains "$work/out" "companions (2)"
    contains "$work/out" "tokenizer.json"
    contains "$work/out" "model.layers.1.mlp.down_proj.weight"
    contains "$work/out" "totals        21 tensors, 1225000 elements, 2450000 bytes"
    run 0 "$inspect" "$target" --json
    pycheck "--json of $target" "$check_st_json" "$work/expected.json" "$ck/model.safetensors" "$index"
done
rm "$ck/model.safetensors.index.json"
run 0 "$inspect" "$ck" --json
pycheck "--json of the directory without index" "$check_st_json" "$work/expected.json" "$ck/model.safetensors" ""

# --files: the files alone
run 0 "$inspect" "$ck" --files
contains "$work/out" "files (1)"
if grep -q "^tensors (" "$work/out"; then bad "--files printed the tensors"; else ok; fi
run 0 "$inspect" "$ck" --files --json
pycheck "--files --json" '
import json, sys
doc = json.load(open(sys.argv[1]))
assert sorted(doc) == ["files", "index", "kind", "path"], sorted(doc)
assert doc["files"][0]["path"].endswith("/model.safetensors")
'

# --tensor on a BF16 tensor, with --stats against a decode in Python
tname=model.layers.0.self_attn.q_proj.weight
run 0 "$inspect" "$ck" --tensor $tname
contains "$work/out" "dtype         BF16"
contains "$work/out" "shape         [200,200]  (200 rows x 200 cols, 40000 elements)"
if grep -q "^stats" "$work/out"; then bad "--tensor without --stats printed stats"; else ok; fi
run 0 "$inspect" "$ck" --tensor $tname --stats
contains "$work/out" "finite 40000"
run 0 "$inspect" "$ck/model.safetensors" --tensor $tname --stats --json

# check_stats: the JSON's stats against float32 values (NaN/inf counted apart).
check_stats='
import json, math, struct, sys
doc = json.load(open(sys.argv[1])); kind = sys.argv[2]; path = sys.argv[3]
if kind == "bf16":   # the bytes of the tensor, where --json says they are
    raw = open(path, "rb").read()[doc["offset"]:doc["offset"] + doc["bytes"]]
    vals = [struct.unpack("<f", struct.pack("<I", w << 16))[0] for w in struct.unpack("<%dH" % (len(raw) // 2), raw)]
else:                # a float32 reference file, optionally its first N values
    raw = open(path, "rb").read()
    vals = list(struct.unpack("<%df" % (len(raw) // 4), raw))
    if len(sys.argv) > 4: vals = vals[:int(sys.argv[4])]
assert len(vals) == doc["elements"], (len(vals), doc["elements"])
fin = [v for v in vals if math.isfinite(v)]
s = doc["stats"]
assert s["finite"] == len(fin) and s["nan"] == sum(map(math.isnan, vals)), s
assert s["inf"] == sum(map(math.isinf, vals)) and s["zeros"] == sum(v == 0 for v in fin), s
assert s["min"] == min(fin) and s["max"] == max(fin) and s["abs_max"] == max(map(abs, fin)), s
mean = sum(fin) / len(fin); rms = math.sqrt(sum(v * v for v in fin) / len(fin))
assert math.isclose(s["mean"], mean, rel_tol=1e-9, abs_tol=1e-12), (s["mean"], mean)
assert math.isclose(s["rms"], rms, rel_tol=1e-9), (s["rms"], rms)
'
pycheck "BF16 safetensors stats" "$check_stats" bf16 "$ck/model.safetensors"
pycheck "BF16 safetensors --tensor fields" '
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["name"] == "model.layers.0.self_attn.q_proj.weight" and doc["dtype"] == "BF16", doc
assert doc["shape"] == [200, 200] and doc["rows"] == 200 and doc["cols"] == 200 and doc["bytes"] == 80000, doc
assert doc["file"].endswith("/model.safetensors") and doc["bits_per_weight"] == 16.0, doc
'
run 1 "$inspect" "$ck" --tensor no.such.tensor
contains "$work/err" "no tensor 'no.such.tensor'"

# views that exist only for artifacts: usage errors naming why
for opt in "--words lm_head.weight" --objects --bindings --uses "--words x --rows 0:1"; do
    # shellcheck disable=SC2086
    run 2 "$inspect" "$ck" $opt
    contains "$work/err" "is a checkpoint"
done
run 2 "$inspect" "$gg/q4_k.gguf" --words blk.0.attn_q.weight
contains "$work/err" "--words"

# ---------------------------------------------------------------- refusals
head -c 100000 "$ck/model.safetensors" >"$work/truncated.safetensors"
run 1 "$inspect" "$work/truncated.safetensors"
contains "$work/err" "truncated.safetensors"
contains "$work/err" "ninfer-inspect: error:"
run 3 "$inspect" "$work/no-such-checkpoint"
contains "$work/err" "no-such-checkpoint"
run 3 "$inspect" "$work/no-such-checkpoint" --words x  # missing beats the view's usage check
run 3 "$inspect" "$work/no-such.gguf" --json

# ---------------------------------------------------------------- a sharded checkpoint, odd dtypes
run 0 "$inspect" "$sh"
contains "$work/out" "files (2)"
contains "$work/out" 'line1\nline2'
contains "$work/out" "F8_E8M0"
run 0 "$inspect" "$sh" --json
pycheck "sharded --json" '
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["index"].endswith("/model.safetensors.index.json"), doc["index"]
assert [f["path"].rsplit("/", 1)[1] for f in doc["files"]] == ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
t = {x["name"]: x for x in doc["tensors"]}
assert [x["name"] for x in doc["tensors"]] == ["a.weight", "u", "b.weight", "s"]
assert t["s"]["shape"] == [] and t["s"]["dtype"] == "I64" and t["b.weight"]["dtype"] == "F8_E8M0"
assert t["b.weight"]["file"].endswith("model-00002-of-00002.safetensors")
assert doc["metadata"] == {"format": "pt", "note": "line1\nline2"}, doc["metadata"]
assert list(doc["companions"]) == ["config.json"]
assert doc["totals"]["dtypes"]["U32"] == {"tensors": 1, "elements": 4, "bytes": 16}
'
run 0 "$inspect" "$sh" --tensor a.weight --stats --json
pycheck "F32 stats with a NaN" '
import json, math, sys
s = json.load(open(sys.argv[1]))["stats"]
assert s == {"finite": 5, "zeros": 1, "nan": 1, "inf": 0, "min": -4.0, "max": 3.0, "mean": 0.4,
             "rms": math.sqrt(6.0), "abs_max": 4.0}, s
'
run 0 "$inspect" "$sh" --tensor s --stats
contains "$work/out" "min -7  max -7"
run 0 "$inspect" "$sh" --tensor u          # no --stats: any dtype is shown
contains "$work/out" "dtype         U32"
run 1 "$inspect" "$sh" --tensor u --stats
contains "$work/err" "U32"
contains "$work/err" "--stats"
run 1 "$inspect" "$sh" --tensor b.weight --stats
contains "$work/err" "F8_E8M0"

# ---------------------------------------------------------------- GGUF fixtures
run 0 "$inspect" "$gg/q4_k.gguf"
contains "$work/out" "kind          gguf"
contains "$work/out" "version       3"
contains "$work/out" "alignment     32"
contains "$work/out" "data offset   960"
contains "$work/out" "metadata (17 keys)"
contains "$work/out" "[5 x i32] 1, -2, 3, -4, 2147483647"
contains "$work/out" "[3 x string] \"alpha\", \"\", \"gamma γ\""
contains "$work/out" "fixture.source_std"
contains "$work/out" "blk.0.attn_q.weight"
contains "$work/out" "totals        4 tensors, 12800 elements, 14848 bytes"
if grep -q "^companions" "$work/out"; then bad "GGUF summary lists companions"; else ok; fi
run 0 "$inspect" "$gg/q4_k.gguf" --json
pycheck "q4_k.gguf --json" '
import json, os, sys
doc = json.load(open(sys.argv[1])); path = sys.argv[2]
assert doc["kind"] == "gguf" and doc["path"] == path and "index" not in doc
assert doc["files"] == [{"path": path, "bytes": os.path.getsize(path)}], doc["files"]
assert doc["gguf"]["version"] == 3 and doc["gguf"]["alignment"] == 32 and doc["gguf"]["data_offset"] == 960
got = [(t["name"], t["dtype"], t["shape"], t["offset"], t["bytes"]) for t in doc["tensors"]]
assert got == [("blk.0.attn_q.weight", "Q4_K", [16, 512], 960, 4608),
               ("blk.0.attn_norm.weight", "F32", [512], 960 + 4608, 2048),
               ("blk.0.ffn_gate.weight", "F16", [4, 512], 960 + 6656, 4096),
               ("blk.0.ffn_up.weight", "BF16", [4, 512], 960 + 10752, 4096)], got
m = doc["metadata"]
assert list(m)[:3] == ["general.architecture", "general.name", "general.quantization_version"]
assert len(m) == 17 and m["general.name"] == "fixture-q4_k" and m["fixture.ggml_type_name"] == "q4_K"
assert m["fixture.rows"] == 16 and m["fixture.cols"] == 512 and m["fixture.u8"] == 200
assert m["fixture.source_std"] == 0.02 and m["fixture.pi"] == 3.141592653589793
assert m["fixture.has_imatrix_types"] is True and m["fixture.i32"] == -123456 and m["fixture.i16"] == -300
assert m["fixture.i64"] == -5000000000 and m["fixture.ggml_type"] == 12
assert m["fixture.i32_array"] == [1, -2, 3, -4, 2147483647]
assert m["fixture.f32_array"] == [0.5, -1.25, 0.001]
assert m["fixture.str_array"] == ["alpha", "", "gamma \u03b3"]
k = doc["gguf"]["kv_types"]
assert k["fixture.cols"] == "u64" and k["fixture.source_std"] == "f32" and k["fixture.str_array"] == "array[string]", k
assert doc["companions"] == {}
assert doc["totals"]["dtypes"]["Q4_K"] == {"tensors": 1, "elements": 8192, "bytes": 4608}
' "$gg/q4_k.gguf"

run 0 "$inspect" "$gg/all_types.gguf" --json
pycheck "all_types.gguf --json" '
import json, re, sys
doc = json.load(open(sys.argv[1]))
# the manifest table: | name | type | offset in data | bytes | reference |
rows = [l.split("|")[1:5] for l in open(sys.argv[2]).read().split("## `all_types.gguf`")[1].split("## Notes")[0].splitlines()
        if re.match(r"\| (src|norm|q)\.", l)]
want = [(r[0].strip(), r[1].strip().split()[0].rstrip(","), int(r[2]), int(r[3])) for r in rows]
assert len(want) == 22, len(want)
assert doc["gguf"]["data_offset"] == 1696 and doc["metadata"]["fixture.n_quant_types"] == 18
got = [(t["name"], t["dtype"], t["offset"] - 1696, t["bytes"]) for t in doc["tensors"]]
assert got == want, [(g, w) for g, w in zip(got, want) if g != w]
assert all(t["shape"] == ([512] if t["name"] == "norm.f32" else [16, 512]) for t in doc["tensors"])
' "$gg/MANIFEST.md"

# --tensor on GGUF F32 and BF16 tensors, statistics against the fixtures' reference values
run 0 "$inspect" "$gg/q4_k.gguf" --tensor blk.0.attn_norm.weight
contains "$work/out" "dtype         F32"
contains "$work/out" "ne [512], blocks of 1 value in 4 bytes"
run 0 "$inspect" "$gg/q4_k.gguf" --tensor blk.0.attn_norm.weight --stats --json
pycheck "GGUF F32 stats" "$check_stats" f32 "$gg/norm.f32"
pycheck "GGUF F32 --tensor fields" '
import json, sys
d = json.load(open(sys.argv[1]))
assert (d["dtype"], d["ggml_type"], d["shape"], d["ne"], d["offset"], d["bytes"]) == ("F32", 0, [512], [512], 5568, 2048), d
'
run 0 "$inspect" "$gg/q4_k.gguf" --tensor blk.0.ffn_up.weight --stats --json
pycheck "GGUF BF16 stats" "$check_stats" f32 "$gg/bf16.dequant.f32"
run 0 "$inspect" "$gg/all_types.gguf" --tensor src.f32 --stats --json
pycheck "GGUF F32 matrix stats" "$check_stats" f32 "$gg/source.f32"
run 0 "$inspect" "$gg/all_types.gguf" --tensor q.q4_k --stats --json
pycheck "GGUF Q4_K stats (ggml dequantization)" "$check_stats" f32 "$gg/q4_k.dequant.f32"
run 0 "$inspect" "$gg/q4_k.gguf" --tensor blk.0.attn_q.weight --stats
contains "$work/out" "ne [512,16], blocks of 256 values in 144 bytes"
contains "$work/out" "finite 8192"

# ---------------------------------------------------------------- the GGUF built above
run 0 "$inspect" "$work/odd.gguf"
contains "$work/out" "[100 x string] \"tok0\", \"tok1\""
contains "$work/out" ", ..."
contains "$work/out" '"{% for m in messages %}\n'
contains "$work/out" '\xff\xfe'
contains "$work/out" "18446744073709551615"
contains "$work/out" "  w     F32    [2,8]"  # columns sized from their cells (cmd/cli/table.h)
contains "$work/out" "totals        1 tensor, 16 elements, 64 bytes"
if awk 'length($0) > 200 { exit 1 }' "$work/out"; then ok; else bad "a summary line of odd.gguf is longer than 200 bytes"; fi
run 0 "$inspect" "$work/odd.gguf" --json
pycheck "odd.gguf --json" '
import json, sys
m = json.load(open(sys.argv[1]))["metadata"]
t = m["tokenizer.ggml.tokens"]
assert t["type"] == "array" and t["element_type"] == "string" and t["count"] == 100, t
assert t["values"] == ["tok%d" % i for i in range(64)]
assert m["tokenizer.ggml.scores"]["count"] == 70 and m["tokenizer.ggml.scores"]["values"][63] == 63.0
assert m["tokenizer.chat_template"] == "{% for m in messages %}\n" * 20
assert m["odd.bytes"] == "ab\ufffd\ufffdcd", m["odd.bytes"]
assert m["odd.big"] == "18446744073709551615" and m["odd.nan"] == "nan", m
'
run 0 "$inspect" "$work/odd.gguf" --tensor w --stats
contains "$work/out" "finite 16  zeros 1"
contains "$work/out" "min -8  max 7"

# ---------------------------------------------------------------- decided by content
cp "$gg/q8_0.gguf" "$work/renamed.bin"
run 0 "$inspect" "$work/renamed.bin"
contains "$work/out" "kind          gguf"
cp "$data/upstream/direct.ninfer" "$work/artifact.bin"
run 0 "$inspect" "$work/artifact.bin"
contains "$work/out" "artifact      "
run 0 "$inspect" "$work/artifact.bin" --files --json
contains "$work/out" '"artifact_id"'
cp "$data/upstream/direct.ninfer" "$work/old.ninfer"
printf '\2' | dd of="$work/old.ninfer" bs=1 seek=7 conv=notrunc status=none
run 1 "$inspect" "$work/old.ninfer"
contains "$work/err" "upgrade"
cp "$ck/model.safetensors" "$work/weights.ninfer"   # a checkpoint whatever its name
run 0 "$inspect" "$work/weights.ninfer" --tensor lm_head.weight
contains "$work/out" "dtype         BF16"

# the dispatcher
run 0 "$bin/ninfer" inspect "$ck" --files
contains "$work/out" "model.safetensors"

run_checks
finish "inspect sources"
