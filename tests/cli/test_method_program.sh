#!/usr/bin/env bash
# Method programs (docs/method-programs.md): --method-program NAME=COMMAND, the protocol, every
# refusal (a program that lies, dies, hangs, chatters on stdout, floods stderr, returns a NaN
# scale), --threads determinism, --dry-run and the provenance, verify --against, and a scale-out
# plan's tasks and assembly.  tests/cli/mprog_fake.py speaks the protocol with the standard
# library; examples/methods/absmax.py (numpy: Debian's python3-numpy, installed as root when
# missing, else those checks are skipped, saying so) must give the built-in grouped_absmax's words.
# usage: test_method_program.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

py=${NINFER_PYTHON:-$(command -v python3)}
fake="$top/tests/cli/mprog_fake.py"
marker="mprog-test-$$" # an argument that names this run's programs (pgrep)
"$bin/ninfer-gen-checkpoint" "$work/ck" >/dev/null || bad "gen-checkpoint"
"$bin/ninfer-gen-checkpoint" "$work/ck256" --hidden 256 --kv-hidden 128 --intermediate 512 --vocab 256 >/dev/null || bad "gen-checkpoint 256"
cd "$work" || exit 1
id=--artifact-id=0123456789abcdef0123456789abcdef
conv() { "$bin/ninfer-convert" "$@"; }
# FMT MODE [ARGS...]: quick mode with the fake program in MODE
fk() {
    local f=$1 m=$2
    shift 2
    conv ck -o o.ninfer --format "$f" --method fk --method-program "fk=$py $fake $m $marker" "$@"
}
# no process whose arguments hold this run's marker (read from /proc: procps may be missing; by
# the shell itself, not a tr and a grep a process: 2700 forks took a third of this test's time)
no_programs_left() {
    local f left="" args
    for f in /proc/[0-9]*/cmdline; do
        mapfile -d '' args <"$f" 2>/dev/null || continue
        case " ${args[*]} " in *"$marker"*) left="$left ${f#/proc/}" ;; esac
    done
    if [ -z "$left" ]; then ok; else bad "a program of this run is still running:$left"; fi
}

# ---------------------------------------------------------------- words by the protocol
run 0 fk q4_g64_fp16 order -j1 $id
cp o.ninfer order1.ninfer
run 0 fk q4_g64_fp16 order -j2 $id --force
same o.ninfer order1.ninfer
run 0 fk q4_g64_fp16 order -j2 --chunk-values 1000 $id --force # chunks of 5 rows: still in order
same o.ninfer order1.ninfer
# the words the fake computed: code (row + col) % 3 - 1 under scale 1.0
run 0 "$bin/ninfer-inspect" order1.ninfer --words model.layers.0.mlp.up_proj.weight --rows 7:9 --cols 0:5 --json
"$py" - "$work/out" <<'PY' && ok || bad "the words of the fake program: $(head -c 300 "$work/out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d['codes'] == [[(r + c) % 3 - 1 for c in range(5)] for r in (7, 8)], d['codes']
assert d['scales'] == [[0x3C00], [0x3C00]], d['scales']
PY
no_programs_left
for f in q8_g32_fp16 q2_g64_fp16 t2_g128_fp16; do # every grouped format, q2 and t2 included
    run 0 fk $f order --force
done
for f in fp8_e4m3fn_row_bf16 fp8_e4m3fn_row_fp16 nvfp4 gguf_q8_0 gguf_q4_k bf16 fp32; do
    run 0 conv ck256 -o z.ninfer --force --format $f --method fk --method-program "fk=$py $fake zeros $marker"
    run 0 "$bin/ninfer-verify" z.ninfer
done
# a row that is not whole blocks of the format: refused at plan time, by name
run 1 fk gguf_q8_0 zeros
contains err "gguf_q8_0 holds rows of whole 32-value blocks"
# a program whose own child still holds its stdout: its exit ends the run's wait (not the
# timeout), and the child goes with its process group
start=$(date +%s)
run 0 fk q4_g64_fp16 linger --force -j2 --method-timeout 60
[ $(($(date +%s) - start)) -lt 30 ] && ok || bad "the run waited for a lingering child"
no_programs_left
# answers larger than a pipe, begun while the chunk is still coming (rows of 1024, chunks of
# 1024 rows: 1 MiB of codes, 2 MiB of bf16 words), and refusals before the chunk is read: no
# deadlock until the timeout, the refusal's own text
"$bin/ninfer-gen-checkpoint" "$work/ckbig" --hidden 1024 --vocab 4096 --layers 1 --intermediate 1024 >/dev/null
for f in q4_g64_fp16 bf16; do
    start=$(date +%s)
    run 0 conv ckbig -o big.ninfer --force --format $f --method fk --method-program "fk=$py $fake stream $marker" \
        --method-timeout 20
    [ $(($(date +%s) - start)) -lt 15 ] && ok || bad "stream $f: the exchange waited for the timeout"
done
for m in early early_exit; do
    start=$(date +%s)
    run 1 conv ckbig -o big2.ninfer --format q4_g64_fp16 --method fk --method-program "fk=$py $fake $m $marker" \
        --method-timeout 20 -j1
    contains err "refused: the answer to rows 0..1023 of tensor 'model.embed_tokens.weight': no tensor for me"
    [ $(($(date +%s) - start)) -lt 15 ] && ok || bad "$m: the refusal waited for the timeout"
done
no_programs_left
# the wait for a program to exit at the end of its input gives way to another worker's failure
# and to a signal (not to the 30 s timeout)
start=$(date +%s)
run 1 fk q4_g64_fp16 late --force -j2 --method-timeout 30
contains err "refused: the answer to rows 0..999 of tensor 'lm_head.weight': late failure"
[ $(($(date +%s) - start)) -lt 15 ] && ok || bad "a failure waited for another worker's program to exit"
no_programs_left
cp o.ninfer before.ninfer
"$bin/ninfer-convert" ck -o o.ninfer --format q4_g64_fp16 --method fk --method-program "fk=$py $fake noexit $marker" \
    --force -j2 --method-timeout 30 >"$work/out" 2>"$work/err" &
pid=$!
sleep 2
start=$(date +%s)
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 3 ] && ok || bad "SIGTERM while programs end: exit $rc, expected 3: $(head -c 300 "$work/err")"
[ $(($(date +%s) - start)) -lt 10 ] && ok || bad "SIGTERM waited for the programs' timeout"
same o.ninfer before.ninfer
no_programs_left
# a program inherits no descriptor of the converter's (its checkpoint, its output, its lock)
run 0 fk q4_g64_fp16 fds --force -j2
# the rule's parameters reach the program; the imatrix's vector comes with each chunk
"$py" "$top/tests/cli/gen_imatrix.py" "$work/imatrix.gguf" 200 520 2 7 3 || bad "gen_imatrix.py"
recipe() { # WITH [METHOD]: r.yaml, the projections in q4 by METHOD (default fk) with WITH
    cat >r.yaml <<Y
recipe: 1
sources: {base: ck, imatrix: imatrix.gguf}
output: {name: t}
components: {text: {config: {from: base}}}
defaults: {format: bf16}
rules:
  - match: "*proj.weight"
    format: q4_g64_fp16
    method: ${2:-fk}
    with: $1
Y
}
recipe '{bits: 3, note: x}'
run 0 conv -r r.yaml -o p.ninfer --method-program "fk=$py $fake params $marker"
recipe '{bits: 4, note: x}'
run 1 conv -r r.yaml -o p2.ninfer --method-program "fk=$py $fake params $marker" -j1
contains err "refused: the answer to rows 0..199 of tensor 'model.layers.0.self_attn.q_proj.weight': params {'bits': 4, 'note': 'x'}"
recipe '{imatrix: imatrix}'
run 0 conv -r r.yaml -o i.ninfer --method-program "fk=$py $fake imp $marker"
recipe '{}'
run 1 conv -r r.yaml -o i2.ninfer --method-program "fk=$py $fake imp $marker"
contains err "no importance vector"

# ---------------------------------------------------------------- refusals
cp order1.ninfer keep.ninfer
cp order1.ninfer o.ninfer
expect_refusal() { # MODE TEXT [ARGS...]: exit 1, TEXT in the message, o.ninfer untouched, no program left
    local m=$1 text=$2
    shift 2
    run 1 fk q4_g64_fp16 "$m" --force -j2 "$@"
    contains err "$text"
    contains err "method program 'fk'"
    same o.ninfer keep.ninfer
    no_programs_left
    lacks err "Traceback"
}
expect_refusal short "bytes; the words it answers take"
expect_refusal code "breaks the format's contract: row 0 col 0: code 8 is not a legal q4_g64_fp16 code"
expect_refusal nan "scale 0x7e00 (NaN) is not a valid q4_g64_fp16 scale"
expect_refusal die "it exited with status 3"
expect_refusal segv "it was killed by signal 11"
expect_refusal hang "did not come within 1 s (--method-timeout)" --method-timeout 1
expect_refusal chatter "begins \"hello\\x0aNFMP"
expect_refusal refuse "refused: the answer to rows"
expect_refusal version "speaks protocol version 2; this converter speaks 1"
expect_refusal trailing "wrote byte 0x78 on its standard output after its last answer"
expect_refusal exit1 "exited with status 1 at the end of its input"
# stderr is passed through, prefixed, and bounded: 3 MB a chunk gives about 1 MiB and one note
run 0 fk q4_g64_fp16 flood --force -j2
contains err "fk["
contains err "the rest is dropped"
size=$(wc -c <"$work/err")
if [ "$size" -lt 2500000 ] && [ "$size" -gt 1000000 ]; then ok; else bad "stderr of flood: $size bytes"; fi
no_programs_left

# ---------------------------------------------------------------- the command line
run 2 conv ck -o x.ninfer --format q4_g64_fp16 --method-program grouped_absmax=true
contains err "that is a built-in method's name"
run 2 conv ck -o x.ninfer --format q4_g64_fp16 --method-program 'a b=true'
contains err "a method name is made of letters, digits"
run 2 conv ck -o x.ninfer --format q4_g64_fp16 --method fk --method-program fk=no-such-program-xyz
contains err "'no-such-program-xyz' is not an executable file in PATH"
run 2 conv ck -o x.ninfer --format q4_g64_fp16 --method fk --method-program "fk=$py 'unterminated"
contains err "an unterminated ' quote"
run 2 conv ck -o x.ninfer --format q4_g64_fp16 --method-timeout 5
contains err "--method-timeout belongs to --method-program"
run 2 conv ck -o x.ninfer --format q4_g64_fp16 --method-program fk=true --method-program fk=false
contains err "given twice"
# the trust rule: a recipe alone never names a program
recipe '{}'
run 1 conv -r r.yaml -o x.ninfer
contains err "unknown method 'fk'"
contains err "--method-program fk=COMMAND"
check test ! -e x.ninfer
# quoted words reach the program as one argument each, with no shell in between
run 1 conv ck -o x.ninfer --format q4_g64_fp16 --method fk --method-program "fk=$py $fake 'refuse' \"$marker\""
contains err "not today (second line)"

# ---------------------------------------------------------------- dry run, provenance
run 0 fk q4_g64_fp16 order --dry-run
contains out "method program fk: $py $fake order $marker"
contains out "  sha256 $(sha256sum "$fake" | cut -d' ' -f1)  $fake"
run 0 fk q4_g64_fp16 order --dry-run --json
cp out dry.json
"$py" - dry.json order1.ninfer "$fake" <<'PY' && ok || bad "the provenance records the program as --dry-run shows it"
import hashlib, json, struct, sys
dry = json.load(open(sys.argv[1]))
(p,) = dry['method_programs']
assert p['name'] == 'fk' and p['command'][1:3] == [sys.argv[3], 'order'], p
files = {f['path']: f['sha256'] for f in p['files']}
assert files[sys.argv[3]] == hashlib.sha256(open(sys.argv[3], 'rb').read()).hexdigest()
# the digest: each word as its u64 LE length and bytes, then "SHA256  PATH\n" per file
h = hashlib.sha256()
for w in p['command']:
    h.update(struct.pack('<Q', len(w.encode())) + w.encode())
for f in p['files']:
    h.update(('%s  %s\n' % (f['sha256'], f['path'])).encode())
assert h.hexdigest() == p['digest'], (h.hexdigest(), p['digest'])
data = open(sys.argv[2], 'rb').read()
start = data.index(b'{"')
d = json.JSONDecoder().raw_decode(data[start:].decode('utf-8', 'replace'))[0]
rec = d['provenance']['objects']['model.layers.0.mlp.up_proj.weight']
assert rec['method'] == 'fk' and rec['program'] == p, rec
PY

# ---------------------------------------------------------------- verify --against
run 1 "$bin/ninfer-verify" order1.ninfer --against ck
contains out "made by method program 'fk'"
run 0 "$bin/ninfer-verify" order1.ninfer --against ck --method-program "fk=$py $fake order $marker"
run 1 "$bin/ninfer-verify" order1.ninfer --against ck --method-program "fk=$py $fake zeros $marker"
contains out "not the program that made it"
run 2 "$bin/ninfer-verify" order1.ninfer --method-program "fk=$py $fake order"
contains err "go with --against SOURCE"
no_programs_left

# ---------------------------------------------------------------- scale-out
mkdir so ref
recipe '{bits: 3, note: x}'
sed -i 's|, imatrix: imatrix.gguf||' r.yaml
for d in so ref; do cp r.yaml $d/r.yaml && cp -r ck $d/ck; done
prog="fk=$py $fake params $marker"
(cd so && run 0 conv -r r.yaml -o out.ninfer --plan-out plan.json --tasks 2 --max-file-bytes 300000 --method-program "$prog")
aid=$("$py" -c "import json,sys; print(json.load(open(sys.argv[1]))['artifact_id'])" so/plan.json)
(cd so && run 2 conv --plan plan.json --task 0)
contains err "the plan was made with method program 'fk': give --method-program fk=COMMAND"
(cd so && run 1 conv --plan plan.json --task 0 --method-program "fk=$py $fake order $marker")
contains err "not the program the plan was made with"
(cd so && run 2 conv --plan plan.json --task 0 --method-program "$prog" --method-program "other=$py $fake order")
contains err "the plan's conversion has no such program"
(cd so && run 0 conv --plan plan.json --task all --method-program "$prog")
(cd so && run 0 conv --plan plan.json --assemble --method-program "$prog")
(cd ref && run 0 conv -r r.yaml -o out.ninfer --max-file-bytes 300000 --artifact-id "$aid" --method-program "$prog")
for f in out.ninfer out.ninfer.part-0001 out.ninfer.part-0002 out.ninfer.part-0003; do same "so/$f" "ref/$f"; done
no_programs_left

# ---------------------------------------------------------------- absmax.py: the built-in's words
np=/usr/bin/python3
if ! "$np" -c 'import numpy' >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    { DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-numpy ||
        { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends python3-numpy; }; } \
        >"$work/apt.log" 2>&1
fi
if [ -n "${NINFER_TEST_CFLAGS:-}" ]; then
    # the sanitized suite (tests/CMakeLists.txt): the fake program's cases above drive every path of
    # lib/src/mprog; what remains is Python's numerics, checked by the suite's plain run
    echo "SKIP examples/methods: Python's words are checked by the unsanitized run"
elif ! "$np" -c 'import numpy' >/dev/null 2>&1; then
    echo "SKIP examples/methods/absmax.py needs numpy: Debian's python3-numpy is not installed and $( [ "$(id -u)" -eq 0 ] && echo "apt-get could not install it" || echo "installing it needs root (uid $(id -u))")"
else
    absmax="absmax=$np $top/examples/methods/absmax.py"
    for f in q4_g64_fp16 q5_g64_fp16 q6_g64_fp16 q8_g32_fp16; do
        run 0 conv ck -o b.ninfer --force --format $f $id
        run 0 conv ck -o a.ninfer --force --format $f --method absmax --method-program "$absmax" $id -j2
        run 1 "$bin/ninfer-diff" a.ninfer b.ninfer --json # their provenance differs: the method
        "$py" -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['objects']==[] and d['summary']['objects_changed']==0, d['summary']" \
            "$work/out" && ok || bad "absmax.py $f: words differ from grouped_absmax: $(head -c 600 "$work/out")"
    done
    # the same bytes for any --threads
    run 0 conv ck -o a.ninfer --force --format q4_g64_fp16 --method absmax --method-program "$absmax" $id -j1
    cp a.ninfer a1.ninfer
    run 0 conv ck -o a.ninfer --force --format q4_g64_fp16 --method absmax --method-program "$absmax" $id -j2
    same a.ninfer a1.ninfer
    # the helper itself (tests/cli/test_ninfer_method.py): frames, categories, refusals, print()
    if "$np" "$top/tests/cli/test_ninfer_method.py" "$top" >"$work/py.out" 2>&1; then ok; else bad "$(cat "$work/py.out")"; fi
    # the GPTQ-style example: a least-error scale a group beats grouped_absmax's, object by object
    run 0 conv ck -o g.ninfer --force --format q4_g64_fp16 --method gptq \
        --method-program "gptq=$np $top/examples/methods/gptq_diag.py" -j2
    run 0 conv ck -o b.ninfer --force --format q4_g64_fp16
    "$py" - g.ninfer.conversion.json b.ninfer.conversion.json <<'PY' && ok || bad "gptq_diag.py does not beat grouped_absmax"
import json, sys
g = {o['object']: o for o in json.load(open(sys.argv[1]))['objects']}
b = {o['object']: o for o in json.load(open(sys.argv[2]))['objects']}
mine = [k for k in g if g[k]['method'] == 'gptq']
assert len(mine) == 16, mine
for k in mine:
    assert b[k]['method'] == 'grouped_absmax' and g[k]['rmse'] < 0.95 * b[k]['rmse'], (k, g[k]['rmse'], b[k]['rmse'])
PY
    # with the imatrix as its diagonal (a rule's `with: {imatrix: NAME}`)
    recipe '{imatrix: imatrix, steps: 16}' gptq
    mv r.yaml gq.yaml
    run 0 conv -r gq.yaml -o gq.ninfer --method-program "gptq=$np $top/examples/methods/gptq_diag.py"
    # and what it refuses (a format it does not encode) is named with the tensor
    run 1 conv ck256 -o a3.ninfer --format fp8_e4m3fn_row_bf16 --method absmax --method-program "$absmax"
    contains err "absmax encodes the grouped formats, not fp8_e4m3fn_row_bf16"
fi
finish method_program
