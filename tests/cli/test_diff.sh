#!/usr/bin/env bash
# ninfer-diff (docs/ninfer-diff.md): one generated checkpoint converted with several recipes, and
# what the program says of each pair: identical artifacts are the same (exit 0); a recipe that
# changes the format of two tensors names exactly those two, with statistics equal to an
# independent computation (Python over ninfer-dequant's values); objects added and removed by a
# group; metadata and provenance keys; an artifact against its own checkpoint (the figures of the
# conversion report, bit for bit), rows longer than a chunk (spans); --json; -q; usage errors
# (2), missing and invalid inputs (3, 1); and the same output for any --threads.  The bad-input
# corpus against ninfer-diff is test_diff_bad_inputs.sh.
# usage: test_diff.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

ck=$work/ck
"$bin/ninfer-gen-checkpoint" "$ck" --layers 1 --vocab 300 >/dev/null || { echo "FAIL generator"; exit 1; }
id=00112233445566778899aabbccddeeff

# recipe NAME OUTPUT_NAME EXTRA: lib.sh's diff_recipe as $work/NAME.yaml
recipe() { diff_recipe "$work/$1.yaml" "$2" "$3"; }
convert() { # RECIPE OUT
    "$bin/ninfer-convert" -r "$work/$1.yaml" -o "$2" --artifact-id $id --force >/dev/null 2>"$work/conv.err" \
        || bad "convert $1: $(cat "$work/conv.err")"
}
recipe base diff-test ""
recipe fmt diff-test '  - match: [model.layers.0.self_attn.o_proj.weight, model.layers.0.mlp.down_proj.weight]
    format: q4_g64_fp16'
recipe group diff-test 'groups:
  - id: model.layers.0.self_attn.kv_proj.weight
    members: [model.layers.0.self_attn.k_proj.weight, model.layers.0.self_attn.v_proj.weight]'
recipe named other-name ""
mkdir -p "$work/1" "$work/2"
convert base "$work/1/m.ninfer"
convert base "$work/2/m.ninfer"
convert fmt "$work/fmt.ninfer"
convert group "$work/group.ninfer"
convert named "$work/named.ninfer"
a=$work/1/m.ninfer

# --- identical artifacts: exit 0, "same", nothing else
run 0 "$bin/ninfer-diff" "$a" "$work/2/m.ninfer"
contains "$work/out" ": same (13 objects compared)"
check test "$(wc -l <"$work/out")" -eq 1
run 0 "$bin/ninfer" diff "$a" "$a"                        # through the dispatcher
contains "$work/out" "same"
run 0 "$bin/ninfer-diff" -q "$a" "$work/2/m.ninfer"
check test ! -s "$work/out"

# --- two formats changed: exactly those objects, then the recipe's and checksums' keys
run 1 "$bin/ninfer-diff" "$a" "$work/fmt.ninfer"
grep -v '^directory ' "$work/out" | sed 1d | sed '$d' | awk '{print $1, $2, $3, $4, $5, $6}' >"$work/rows"
cat >"$work/rows.want" <<'EOF'
model.layers.0.self_attn.o_proj.weight format q8_g32_fp16 -> q4_g64_fp16, words
model.layers.0.mlp.down_proj.weight format q8_g32_fp16 -> q4_g64_fp16, words
EOF
same "$work/rows" "$work/rows.want"
contains "$work/out" "directory provenance.recipe[rules]: changed"
lacks "$work/out" "provenance.objects"     # the method (grouped_absmax) is the same: only the format changed
contains "$work/out" "directory metadata.checksums[objects]: changed"
lacks "$work/out" "bindings"
contains "$work/out" "different: 2 objects changed, 0 only in A, 0 only in B"
run 1 "$bin/ninfer-diff" --json "$a" "$work/fmt.ninfer"
cp "$work/out" "$work/fmt.json"
# the statistics against Python's own over ninfer-dequant's values: max |a - b| of the binary32
# differences exactly, RMSE and SNR (A the reference) to the last digits a sum's order changes
for o in model.layers.0.self_attn.o_proj.weight model.layers.0.mlp.down_proj.weight; do
    "$bin/ninfer-dequant" "$a" $o -o "$work/$o.a.f32" || bad "dequant A $o"
    "$bin/ninfer-dequant" "$work/fmt.ninfer" $o -o "$work/$o.b.f32" || bad "dequant B $o"
done
python3 - "$work" <<'PY' && ok || bad "ninfer-diff --json: statistics differ from the independent computation"
import array, json, math, sys
w = sys.argv[1]
d = json.load(open(w + '/fmt.json'))
assert d['same'] is False and d['b_kind'] == 'artifact', d
objs = {o['id']: o for o in d['objects']}
assert sorted(objs) == sorted(['model.layers.0.self_attn.o_proj.weight', 'model.layers.0.mlp.down_proj.weight']), objs
s = d['summary']
assert (s['objects_compared'], s['objects_changed'], s['only_in_a'], s['only_in_b']) == (13, 2, 0, 0), s
paths = [k['path'] for k in d['directory']]
assert 'provenance.recipe[rules]' in paths, paths
assert ['provenance', 'recipe', 'rules'] in [k['keys'] for k in d['directory']], d
for oid, o in objs.items():
    assert o['changes'] == ['format', 'words'], o
    assert (o['format_a'], o['format_b']) == ('q8_g32_fp16', 'q4_g64_fp16'), o
    a = array.array('f', open(f'{w}/{oid}.a.f32', 'rb').read())
    b = array.array('f', open(f'{w}/{oid}.b.f32', 'rb').read())
    assert len(a) == len(b) > 0
    diff = array.array('f', (x - y for x, y in zip(a, b)))   # one binary32 subtraction each
    mx = max(abs(v) for v in diff)
    sse = math.fsum(v * v for v in diff)
    ssx = math.fsum(x * x for x in a)
    st = o['statistics']
    assert st['count'] == len(a) and st['skipped'] == 0, st
    assert st['max_abs'] == mx, (st, mx)
    assert math.isfinite(st['rmse']) and abs(st['rmse'] - math.sqrt(sse / len(a))) <= 1e-6 * st['rmse'], (st, sse)
    assert abs(st['snr_db'] - 10 * math.log10(ssx / sse)) < 1e-4, (st, ssx, sse)
PY

# --- objects added and removed (K and V stacked into one object), and the bindings that moved
run 1 "$bin/ninfer-diff" "$a" "$work/group.ninfer"
contains "$work/out" "model.layers.0.self_attn.k_proj.weight       only in A"
contains "$work/out" "model.layers.0.self_attn.v_proj.weight       only in A"
contains "$work/out" "model.layers.0.self_attn.kv_proj.weight      only in B"
contains "$work/out" "directory bindings[model.layers.0.self_attn.k_proj.weight]: changed"
contains "$work/out" "directory provenance.objects[model.layers.0.self_attn.kv_proj.weight]: added"
contains "$work/out" "directory provenance.recipe[groups]: added"
contains "$work/out" "0 objects changed, 2 only in A, 1 only in B"
run 1 "$bin/ninfer-diff" "$work/group.ninfer" "$a"           # the other way round
contains "$work/out" "model.layers.0.self_attn.kv_proj.weight      only in A"
contains "$work/out" "directory provenance.recipe[groups]: removed"

# --- metadata only: the same objects under another output name, and another artifact id
run 1 "$bin/ninfer-diff" "$a" "$work/named.ninfer"
contains "$work/out" "directory metadata.name: changed"
contains "$work/out" "directory provenance.recipe[output]: changed"
contains "$work/out" "different: 0 objects changed, 0 only in A, 0 only in B"
lacks "$work/out" "object  "
mkdir -p "$work/3"   # the same recipe without --artifact-id: a random id
"$bin/ninfer-convert" -r "$work/base.yaml" -o "$work/3/m.ninfer" --force >/dev/null 2>&1 || bad "convert without an id"
run 1 "$bin/ninfer-diff" "$a" "$work/3/m.ninfer"
contains "$work/out" "directory artifact_id: changed"

# --- a resource's bytes: another tokenizer.json
cp -r "$ck" "$work/ck2"
printf '{"other": true}\n' >"$work/ck2/tokenizer.json"
sed 's#base: ck#base: ck2#' "$work/base.yaml" >"$work/tok.yaml"
convert tok "$work/tok.ninfer"
run 1 "$bin/ninfer-diff" "$a" "$work/tok.ninfer"
contains "$work/out" "tokenizer.json"
contains "$work/out" "1 object changed"

# --- an artifact against its checkpoint: the figures of the conversion report, bit for bit
run 1 "$bin/ninfer-diff" --json "$a" "$ck"
python3 - "$work/out" "$a.conversion.json" <<'PY' && ok || bad "ninfer-diff A CHECKPOINT: not the conversion report's figures"
import json, sys
d = json.load(open(sys.argv[1]))
rep = {o['object']: o for o in json.load(open(sys.argv[2]))['objects']}
assert d['b_kind'] == 'checkpoint' and d['same'] is False, d
assert d['resources_not_compared'] == ['tokenizer.json'], d
ids = [o['id'] for o in d['objects']]
# the q8 tensors differ from their source; the fp32 norms are exact and so not listed
assert sorted(ids) == sorted(k for k, v in rep.items() if v['format'] == 'q8_g32_fp16'), ids
for o in d['objects']:
    s, c = o['statistics'], rep[o['id']]
    assert o['changes'] == ['values'], o
    assert (s['max_abs'], s['rmse'], s['snr_db']) == (c['max_abs_error'], c['rmse'], c['snr_db']), (s, c)
PY
run 1 "$bin/ninfer-diff" "$work/group.ninfer" "$ck"          # names on one side only
contains "$work/out" "model.layers.0.self_attn.kv_proj.weight      only in A"
contains "$work/out" "model.layers.0.self_attn.k_proj.weight       only in B"
contains "$work/out" "1 only in A, 2 only in B"
contains "$work/out" "1 resource not compared"
"$bin/ninfer-convert" "$ck" -o "$work/bf16.ninfer" --format bf16 --force >/dev/null 2>&1 || bad "convert bf16"
run 0 "$bin/ninfer-diff" "$work/bf16.ninfer" "$ck"            # a bf16 checkpoint cast to bf16: exact
contains "$work/out" "same"
"$bin/ninfer-gen-checkpoint" "$work/ckg" --layers 1 --vocab 300 --gguf >/dev/null || bad "generator --gguf"
run 1 "$bin/ninfer-diff" "$a" "$work/ckg/model.gguf"          # GGUF names: nothing in common
contains "$work/out" "only in B"

# --- quantized checkpoints (docs/dialects.md): a weight is its dialect's values, under its codes
# tensor's name; its scales are part of it, never tensors only in B
"$bin/ninfer-gen-checkpoint" "$work/ckn" --layers 1 --vocab 300 --dialect compressed_tensors_nvfp4 >/dev/null \
    || bad "generator nvfp4"
"$bin/ninfer-convert" "$work/ckn" -o "$work/n.ninfer" --format bf16 --force >/dev/null 2>&1 || bad "convert nvfp4"
run 0 "$bin/ninfer-diff" "$work/n.ninfer" "$work/ckn"       # imported exactly: the same values
contains "$work/out" "same (12 objects compared; 1 resource not compared)"  # (quick mode kept tokenizer.json)
"$bin/ninfer-gen-checkpoint" "$work/ckd" --layers 1 --vocab 300 --dialect deepseek_fp8 >/dev/null || bad "generator fp8"
"$bin/ninfer-convert" "$work/ckd" -o "$work/d.ninfer" --format q8_g32_fp16 --requantize --force >/dev/null 2>&1 \
    || bad "convert fp8"
run 1 "$bin/ninfer-diff" --json "$work/d.ninfer" "$work/ckd"
python3 - "$work/out" "$work/d.ninfer.conversion.json" <<'PY' && ok || bad "dialect weights: not the report's figures"
import json, sys
d = json.load(open(sys.argv[1]))
rep = {o['object']: o for o in json.load(open(sys.argv[2]))['objects']}
assert d['summary']['only_in_b'] == 0 and d['summary']['only_in_a'] == 0, d['summary']
assert sum(1 for o in d['objects'] if o['id'].endswith('proj.weight')) == 7, d['objects']
for o in d['objects']:
    s, c = o['statistics'], rep[o['id']]
    assert (s['max_abs'], s['rmse'], s['snr_db']) == (c['max_abs_error'], c['rmse'], c['snr_db']), (o, c)
PY

# --- rows longer than a chunk (2^18 values): compared in spans, the same figures as the report's
python3 - "$work/lr" <<'PY'
import json, os, random, struct, sys
d = sys.argv[1]
os.makedirs(d)
rows, n = 3, 300000
rnd = random.Random(7)
data = struct.pack('<%df' % (rows * n), *(rnd.gauss(0, 0.02) for _ in range(rows * n)))
hdr = json.dumps({"long.weight": {"dtype": "F32", "shape": [rows, n], "data_offsets": [0, len(data)]}}).encode()
hdr += b' ' * (-len(hdr) % 8)
open(os.path.join(d, 'model.safetensors'), 'wb').write(struct.pack('<Q', len(hdr)) + hdr + data)
open(os.path.join(d, 'config.json'), 'w').write('{}')
PY
"$bin/ninfer-convert" "$work/lr" -o "$work/l8.ninfer" --format q8_g32_fp16 --force >/dev/null 2>&1 || bad "convert l8"
"$bin/ninfer-convert" "$work/lr" -o "$work/l4.ninfer" --format q4_g64_fp16 --force >/dev/null 2>&1 || bad "convert l4"
run 1 "$bin/ninfer-diff" --json "$work/l8.ninfer" "$work/lr"
python3 - "$work/out" "$work/l8.ninfer.conversion.json" <<'PY' && ok || bad "long rows: not the report's figures"
import json, sys
d = json.load(open(sys.argv[1]))
c = json.load(open(sys.argv[2]))['objects'][0]
s = d['objects'][0]['statistics']
assert s['count'] == 900000 and (s['max_abs'], s['rmse'], s['snr_db']) == (c['max_abs_error'], c['rmse'], c['snr_db']), (s, c)
PY

# --- bounded memory: a [4, 2^22] tensor (16 Mi values: 64 MiB as binary32, 32 MiB as bf16) is
# compared in chunks and spans, never whole: the peak RSS stays far below one object
python3 "$(dirname "$0")/gen_long_rows.py" "$work/big" big.weight 4 "$((1 << 22))" || bad "the checkpoint generator"
"$bin/ninfer-convert" "$work/big" -o "$work/b8.ninfer" --format q8_g32_fp16 --force >/dev/null 2>&1 || bad "convert b8"
"$bin/ninfer-convert" "$work/big" -o "$work/bb.ninfer" --format bf16 --force >/dev/null 2>&1 || bad "convert bb"
cp "$work/bb.ninfer" "$work/bb2.ninfer"
# peak RSS (KiB) and exit status of a command, from wait4
rss() {
    python3 - "$@" <<'PY'
import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_, status, ru = os.wait4(p.pid, 0)
print(ru.ru_maxrss, os.waitstatus_to_exitcode(status))
PY
}
case "${NINFER_TEST_CFLAGS:-}" in
*-fsanitize*) ;; # ASan's shadow memory and quarantine make RSS meaningless
*)
    for args in "1 $work/b8.ninfer $work/bb.ninfer" "0 $work/bb.ninfer $work/bb2.ninfer" "1 $work/b8.ninfer $work/big"; do
        set -- $args
        read -r kb st < <(rss "$bin/ninfer-diff" -j 2 "$2" "$3")
        if [ "$st" -eq "$1" ] && [ "$kb" -lt 40000 ]; then ok; else bad "ninfer-diff $2 $3: exit $st (want $1), peak RSS $kb KiB"; fi
    done
    ;;
esac

# --- the same output for any thread count (human and JSON, artifact and checkpoint B)
for args in "$a $work/fmt.ninfer" "$a $ck" "$work/l8.ninfer $work/l4.ninfer" "$work/l8.ninfer $work/lr"; do
    for j in "" --json; do
        # shellcheck disable=SC2086
        "$bin/ninfer-diff" $j --threads 1 $args >"$work/t1" 2>&1
        # shellcheck disable=SC2086
        "$bin/ninfer-diff" $j --threads 2 $args >"$work/t2" 2>&1
        # shellcheck disable=SC2086
        "$bin/ninfer-diff" $j -j 5 $args >"$work/t5" 2>&1
        same "$work/t1" "$work/t2"
        same "$work/t1" "$work/t5"
    done
done

# --- the human table and --json name the same objects
run 1 "$bin/ninfer-diff" "$a" "$work/group.ninfer"
grep -v '^directory ' "$work/out" | sed 1d | sed '$d' | awk '{print $1}' >"$work/human.ids"
"$bin/ninfer-diff" --json "$a" "$work/group.ninfer" >"$work/j" 2>/dev/null
python3 -c 'import json,sys; [print(o["id"]) for o in json.load(open(sys.argv[1]))["objects"]]' "$work/j" >"$work/json.ids"
same "$work/human.ids" "$work/json.ids"
run 1 "$bin/ninfer-diff" -q --json "$a" "$work/fmt.ninfer"     # -q prints nothing, the status stays
check test ! -s "$work/out"

# --- usage errors (2), missing files (3), invalid inputs (1, naming the file)
run 2 "$bin/ninfer-diff"
run 2 "$bin/ninfer-diff" "$a";                  contains "$work/err" "1 given"
run 2 "$bin/ninfer-diff" "$a" "$a" "$a";        contains "$work/err" "3 given"
run 2 "$bin/ninfer-diff" --threads 0 "$a" "$a"; contains "$work/err" "--threads"
run 2 "$bin/ninfer-diff" --no-such "$a" "$a";   contains "$work/err" "unknown option '--no-such'"
run 3 "$bin/ninfer-diff" "$a" "$work/missing.ninfer"; contains "$work/err" "missing.ninfer"
run 3 "$bin/ninfer-diff" "$work/missing.ninfer" "$a"; contains "$work/err" "missing.ninfer"
run 3 "$bin/ninfer-diff" "$a" "$work/no-such-dir/"
run 3 "$bin/ninfer-diff" "$a" /dev/null;        contains "$work/err" "not a regular file"
: >"$work/empty.ninfer"
run 1 "$bin/ninfer-diff" "$a" "$work/empty.ninfer"; contains "$work/err" "empty.ninfer"
head -c 5000 "$a" >"$work/trunc.ninfer"
run 1 "$bin/ninfer-diff" "$work/trunc.ninfer" "$a"; contains "$work/err" "trunc.ninfer"
check test ! -s "$work/out"
printf 'not a checkpoint at all' >"$work/junk.safetensors"
run 1 "$bin/ninfer-diff" "$a" "$work/junk.safetensors"; contains "$work/err" "junk.safetensors"
# an object whose bytes cannot be read (its part is gone): invalid input naming the object
"$bin/ninfer-convert" -r "$work/fmt.yaml" -o "$work/split.ninfer" --artifact-id $id --max-file-bytes 65536 --force \
    >/dev/null 2>&1 || bad "convert split"
last=$(ls "$work"/split.ninfer.* 2>/dev/null | grep -v conversion | tail -1)
if [ -n "$last" ]; then
    rm -f "$last"
    run 1 "$bin/ninfer-diff" "$work/fmt.ninfer" "$work/split.ninfer"
    contains "$work/err" "split.ninfer"
    contains "$work/err" "object '"
    cp "$work/err" "$work/err1"
    run 1 "$bin/ninfer-diff" -j 4 "$work/fmt.ninfer" "$work/split.ninfer"   # the same first failure
    same "$work/err1" "$work/err"
else
    bad "convert --max-file-bytes wrote no part"
fi

finish test_diff
