#!/usr/bin/env bash
# ninfer-verify --against (docs/security.md 7.1, F10; docs/security.md 1.3: "an artifact never makes a program
# open, stat or expand anything it names; verify --against opens only what the command line
# names"; docs/ninfer-verify.md).  The recipe recorded in provenance.recipe is data written by
# whoever made the artifact: it is never executed.  --against SOURCE alone re-derives every
# tensor object from SOURCE with the format and layout of its object record and the method and
# parameters of its provenance.objects record; --recipe R.yaml re-derives with the recipe the
# command line names instead.  Checked here: a recorded recipe naming /nonexistent/${TOKEN}, an
# imatrix and resource paths changes nothing in the verdict or the output (and, where strace
# works, nothing it names is opened or stat'ed), the environment is never echoed, what cannot be
# re-derived from SOURCE alone is a problem that says why, tampered records are found, and the
# usage rules of the two options.
# usage: test_verify_against.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

ck=$work/ckpt
"$bin/ninfer-gen-checkpoint" "$ck" >/dev/null || { echo "FAIL generator"; exit 1; }
recipe=$top/recipes/demo.yaml
mkdir "$work/a"
"$bin/ninfer-convert" -r "$recipe" --source base="$ck" -o "$work/a/m.ninfer" --no-report >/dev/null 2>&1 ||
    bad "convert the demo recipe"

# edit NAME EXPR: a copy of m.ninfer whose directory is changed by the Python statement EXPR on d
# (checksums dropped: the edit is the point, and verify then has nothing to say about them).
edit() {
    python3 - "$work/a/m.ninfer" "$work/a/$1" "$2" <<'PY'
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
jb = struct.unpack('<Q', b[8:16])[0]; d = json.loads(b[32:32 + jb]); start = (32 + jb + 4095) // 4096 * 4096
d['metadata'].pop('checksums', None)
exec(sys.argv[3])
text = json.dumps(d, separators=(',', ':'), ensure_ascii=False).encode()
head = b[:8] + struct.pack('<Q', len(text)) + b[16:32] + text
ns = (len(head) + 4095) // 4096 * 4096
open(sys.argv[2], 'wb').write(head + bytes(ns - len(head)) + b[start:])
PY
}

# 1. the recorded recipe is never executed
echo "a file whose size the artifact's author wants to learn" >"$work/canary"
hostile='r = d["provenance"]["recipe"]
r["sources"]["evil"] = "/nonexistent/${NINFER_TEST_TOKEN}"
r["sources"]["im"] = "CANARY"
r["components"]["text"]["resources"]["secret"] = "CANARY"
r["rules"].insert(0, {"match": "re:(((a+)+)+)+", "format": "q4_g64_fp16", "with": {"imatrix": "im"}})'
edit h1.ninfer "${hostile//CANARY/$work/canary}"
edit h2.ninfer "${hostile//CANARY/$work/no-such-file}"
edit plain.ninfer 'pass'
export NINFER_TEST_TOKEN=token-3b1f9e
for f in h1 h2 plain; do
    run 0 "$bin/ninfer-verify" "$work/a/$f.ninfer" --against "$ck"
    sed "s|$work/a/$f.ninfer|ARTIFACT|" "$work/out" >"$work/$f.out"
    cat "$work/err" >>"$work/$f.out"
    lacks "$work/$f.out" "token-3b1f9e"
    lacks "$work/$f.out" "nonexistent"
    lacks "$work/$f.out" "canary"
    lacks "$work/$f.out" "no-such-file"
done
same "$work/h1.out" "$work/plain.out"
same "$work/h2.out" "$work/plain.out"
contains "$work/plain.out" "tensors re-derived from $ck"
contains "$work/plain.out" "1 resource not compared"
if strace -f -o /dev/null true 2>/dev/null; then
    strace -f -e trace=%file -o "$work/trace" "$bin/ninfer-verify" "$work/a/h1.ninfer" --against "$ck" >/dev/null 2>&1
    lacks "$work/trace" "$work/canary"
    lacks "$work/trace" "/nonexistent"
else
    echo "note: strace does not work here; the system-call check is skipped"
fi
run 0 "$bin/ninfer-verify" --json "$work/a/h1.ninfer" --against "$ck"
python3 - "$work/out" "$ck" <<'PY' && ok || bad "verify --json against member"
import json, sys
d = json.load(open(sys.argv[1]))
a = d['against']
assert d['valid'] and a['source'] == sys.argv[2] and a['recipe'] is None, d
assert a['objects_rederived'] == 20 and a['resources_not_compared'] == ['tokenizer.json'], a
PY

# 2. with the recipe given on the command line: resources too, and the recorded recipe compared
run 0 "$bin/ninfer-verify" "$work/a/plain.ninfer" --against "$ck" --recipe "$recipe"
contains "$work/out" "21 objects re-derived from $ck with $recipe"
lacks "$work/out" "differs"
run 0 "$bin/ninfer-verify" "$work/a/h1.ninfer" --against "$ck" --recipe "$recipe"
contains "$work/out" "the recipe differs from provenance.recipe"
run 0 "$bin/ninfer-verify" --json "$work/a/h1.ninfer" --against "$ck" --recipe "$recipe"
python3 - "$work/out" <<'PY' && ok || bad "verify --json --recipe"
import json, sys
a = json.load(open(sys.argv[1]))['against']
assert a['objects_rederived'] == 21 and a['resources_not_compared'] == [] and a['recipe_matches_provenance'] is False, a
PY
# a recipe that does not produce the artifact's objects
printf 'recipe: 1\nsources:\n  base: %s\ndefaults: {format: bf16}\n' "$ck" >"$work/other.yaml"
run 1 "$bin/ninfer-verify" "$work/a/plain.ninfer" --against "$ck" --recipe "$work/other.yaml"
contains "$work/out" "model.layers.0.self_attn.kv_proj.weight"
contains "$work/out" "against:"

# 3. what cannot be re-derived from SOURCE alone says why
python3 "$top/tests/cli/gen_imatrix.py" "$ck/imatrix.gguf" 200 520 2 5 2
mkdir "$work/im"
MODEL_DIR=$ck "$bin/ninfer-convert" -r "$top/recipes/q4-imatrix.yaml" -o "$work/im/im.ninfer" --no-report \
    --allow-env MODEL_DIR >/dev/null 2>&1 ||
    bad "convert with an imatrix"
run 1 "$bin/ninfer-verify" "$work/im/im.ninfer" --against "$ck"
contains "$work/out" "cannot be re-derived from $ck alone"
contains "$work/out" "imatrix"
contains "$work/out" "--recipe"
run 0 "$bin/ninfer-verify" "$work/im/im.ninfer" --against "$ck" --recipe "$top/recipes/q4-imatrix.yaml" \
    --source imatrix="$ck/imatrix.gguf"

# 4. tampered or missing records are found, and names from them are escaped
edit meth.ninfer 'd["provenance"]["objects"]["lm_head.weight"]["method"] = "grouped_search"'
run 1 "$bin/ninfer-verify" "$work/a/meth.ninfer" --against "$ck"
contains "$work/out" "object 'lm_head.weight': against: re-derived bytes differ"
edit nosrc.ninfer 'd["provenance"]["objects"]["model.norm.weight"]["sources"] = ["nope\x1b[2J\nx.ninfer: valid"]'
run 1 "$bin/ninfer-verify" "$work/a/nosrc.ninfer" --against "$ck"
contains "$work/out" "source tensor 'nope\\x1b[2J\\nx.ninfer: valid' is not a tensor of $ck"
if grep -q '^x.ninfer' "$work/out"; then bad "a forged line"; else ok; fi
edit norec.ninfer 'del d["provenance"]["objects"]["model.norm.weight"]'
run 1 "$bin/ninfer-verify" "$work/a/norec.ninfer" --against "$ck"
contains "$work/out" "object 'model.norm.weight': against: not recorded in provenance.objects"
edit badwith.ninfer 'd["provenance"]["objects"]["lm_head.weight"]["with"] = {"imatrix": "/etc/shadow"}'
run 1 "$bin/ninfer-verify" "$work/a/badwith.ninfer" --against "$ck"
contains "$work/out" "object 'lm_head.weight': against: cannot be re-derived"
lacks "$work/out" "/etc/shadow"
edit noprov.ninfer 'd["provenance"] = {}'
run 1 "$bin/ninfer-verify" "$work/a/noprov.ninfer" --against "$ck"
contains "$work/out" "not recorded in provenance.objects"

# 5. usage and system errors
run 2 "$bin/ninfer-verify" "$work/a/plain.ninfer" --recipe "$recipe"
contains "$work/err" "--recipe goes with --against"
for opt in "--source imatrix=$ck/imatrix.gguf" "--allow-path $ck" "--allow-env MODEL_DIR"; do
    # shellcheck disable=SC2086 # the option and its argument are two words
    run 2 "$bin/ninfer-verify" "$work/a/plain.ninfer" --against "$ck" $opt
    contains "$work/err" "go with --recipe"
done
run 2 "$bin/ninfer-verify" "$work/a/plain.ninfer" --against "$ck" --recipe "$recipe" --source imatrix
contains "$work/err" "--source takes NAME=PATH"
run 3 "$bin/ninfer-verify" "$work/a/plain.ninfer" --against "$work/no-such-checkpoint"
run 3 "$bin/ninfer-verify" "$work/a/plain.ninfer" --against "$ck" --recipe "$work/no-such.yaml"
# a GGUF source re-derives its imported blocks
mkdir "$work/g"
printf 'recipe: 1\nsources:\n  base: %s\ndefaults: {format: fp32}\nrules:\n  - match: blk.0.attn_q.weight\n    format: gguf_q4_k\n    method: import_encoded\n' "$data/gguf/q4_k.gguf" >"$work/g.yaml"
"$bin/ninfer-convert" -r "$work/g.yaml" -o "$work/g/g.ninfer" --no-report >/dev/null 2>&1 ||
    bad "convert gguf"
run 0 "$bin/ninfer-verify" "$work/g/g.ninfer" --against "$data/gguf/q4_k.gguf"

finish "verify against"
