#!/usr/bin/env bash
# Scale-out trust (docs/scale-out.md, "What a receipt binds", "The output's lock"):
#   1. a receipt names the plan's inputs: after a source changed, the plan made again with the
#      same command and artifact id (same fingerprint) redoes every task, and what it assembles is
#      the new weights' (ninfer-verify --against); a receipt without that binding is another plan's;
#   2. a task holds the output's lock (shared with the other tasks): a one-machine --force run
#      cannot publish OUT under a task still running (it exits 3), so no part of a published
#      artifact is ever replaced by a task;
#   3. --assemble publishes the very file it checked and completed: a fresh staged entry put in
#      place meanwhile (as a duplicate task 0 does) is never what appears at OUT, and an OUT with
#      the plan's id but not its complete entry is never taken for published;
#   4. a plan is data, not a command (docs/scale-out.md, "What a plan can make a task do"): a
#      plan naming a path outside its allowed roots, a recorded fingerprint that the file no
#      longer has, an unknown member, a recipe text edited after planning, a plan of version 1:
#      each refused (exit 1) naming the plan file and the member, nothing written; the variables
#      a recipe expanded come from the plan, not from the task's environment.
# The races are made deterministic with the test copy of ninfer-convert, which stops itself
# (SIGSTOP) at its N-th link/rename call (tests/cli/fault_hook.c).
. "$(dirname "$0")/lib.sh" "$@"

conv=$bin/ninfer-convert
verify=$bin/ninfer-verify
faulty=$bin/../tests/bin/ninfer-convert-faults
[ -x "$faulty" ] || { echo "FAIL $faulty is missing (built when NINFER_TESTS=ON)"; exit 1; }
mkdir "$work/w" && cd "$work/w" || exit 1
"$bin/ninfer-gen-checkpoint" ck --hidden 256 --kv-hidden 256 --intermediate 512 --layers 2 --vocab 64 >/dev/null ||
    { echo "FAIL gen-checkpoint"; exit 1; }
id=00112233445566778899aabbccddeeff
base=(ck -o out/m.ninfer --format q8_g32_fp16 --max-file-bytes 40000)
args=("${base[@]}" --artifact-id $id)

# until process $1 has stopped itself (true) or ended (false); no time limit is asserted
stopped() {
    while kill -0 "$1" 2>/dev/null && ! ps -o stat= -p "$1" | grep -q '^T'; do sleep 0.01; done
    ps -o stat= -p "$1" 2>/dev/null | grep -q '^T'
}

# ---------------------------------------------------------------- 1. receipts bind the inputs
mkdir out
run 0 "$conv" "${args[@]}" --plan-out plan.json --tasks 3 -q
run 0 "$conv" --plan plan.json --task all -q
# the weights change: the last 8 KiB of the checkpoint (its last tensor's values) negated
python3 - ck/model.safetensors <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
for i in range(len(b) - 8192 + 1, len(b), 2):  # the high byte of each bf16 (little endian)
    b[i] ^= 0x80
open(p, "wb").write(b)
PY
run 1 "$conv" --plan plan.json --task 0
contains "$work/err" "changed since the plan was made"
# made again, as examples/parallel.sh advises: the same command and artifact id, so the same
# fingerprint -- and other inputs: no receipt of the old plan counts
run 0 "$conv" "${args[@]}" --plan-out plan.json --tasks 3 -q
run 0 "$conv" --plan plan.json --task all
lacks "$work/err" "done already"
# a receipt without the binding (an older version's) is another plan's: refused, its task named
python3 - out/m.ninfer.part-0001.receipt.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); r.pop("inputs", None); json.dump(r, open(sys.argv[1], "w"))
PY
run 1 "$conv" --plan plan.json --assemble
contains "$work/err" "made by another plan"
contains "$work/err" "rerun task 0"
check test ! -e out/m.ninfer
run 0 "$conv" --plan plan.json --task all -q
run 0 "$conv" --plan plan.json --assemble -q
run 0 "$verify" out/m.ninfer --require-checksums
run 0 "$verify" out/m.ninfer --against ck # the new weights, not the old plan's parts

# ---------------------------------------------------------------- 2. a task holds the lock
rm -rf out && mkdir out
run 0 "$conv" "${args[@]}" --plan-out plan.json --tasks 2 -q
# task 1 stops at its first rename (its first part into place); a one-machine --force run of
# another artifact to the same output meanwhile; then the task goes on
( export NINFER_IO_FAULT=link:1:SIGSTOP; exec "$faulty" --plan plan.json --task 1 -j 1 -q 2>"$work/err_t" ) &
pt=$!
if stopped $pt; then
    ok
    "$conv" "${base[@]}" --artifact-id ffeeddccbbaa99887766554433221100 --force -q 2>"$work/err_f"
    rf=$?
    kill -CONT $pt
    wait $pt
    rt=$?
    check test "$rt" -eq 0
    check test "$rf" -eq 3
    contains "$work/err_f" "another process is writing"
    # whatever is at OUT now is a whole artifact
    if [ -e out/m.ninfer ]; then run 0 "$verify" out/m.ninfer --require-checksums; fi
else
    wait $pt
    bad "task 1 did not stop at its first rename: exit $?: $(head -c 300 "$work/err_t")"
fi
# a task is refused (exit 3: retry) while a one-machine run holds the lock (flock(1) stands in)
flock out/.m.ninfer.lock "$conv" --plan plan.json --task 0 -q 2>"$work/err"
check test $? -eq 3
contains "$work/err" "another process is writing"

# ---------------------------------------------------------------- 3. --force assemble
rm -rf out && mkdir out
run 0 "$conv" "${args[@]}" --force --plan-out plan.json --tasks 3 -q
run 0 "$conv" --plan plan.json --task all -q
cp out/m.ninfer.entry-staged fresh.entry # what a duplicate task 0 puts in place: no checksums
cp -a out done
# an OUT with the plan's id that is not its complete entry is not taken for published: not by
# a task (done already) nor by the assembler (assembled)
cp fresh.entry out/m.ninfer
run 1 "$conv" --plan plan.json --task 0
contains "$work/err" "not this plan's complete artifact"
run 1 "$conv" --plan plan.json --assemble
contains "$work/err" "not this plan's complete artifact"
check test -e out/m.ninfer.part-0001.receipt.json
# the assembler stopped at each of its link/rename calls in turn while a fresh staged entry is
# renamed over the staged name (as a duplicate task 0 does, past the lock: another host whose
# file system ignores it); then it goes on, and a rerun if it failed: OUT is complete
for n in 1 2 3 4 5; do
    rm -rf out && cp -a done out
    ( export NINFER_IO_FAULT=link:$n:SIGSTOP; exec "$faulty" --plan plan.json --assemble -q 2>"$work/err_a" ) &
    pa=$!
    if ! stopped $pa; then
        wait $pa
        break
    fi
    cp fresh.entry out/dup.tmp && mv out/dup.tmp out/m.ninfer.entry-staged
    kill -CONT $pa
    wait $pa || "$conv" --plan plan.json --assemble -q 2>"$work/err" ||
        bad "link call $n: the rerun of --assemble failed: $(head -c 300 "$work/err")"
    run 0 "$conv" --plan plan.json --assemble -q
    run 0 "$verify" out/m.ninfer --require-checksums
    check test ! -e out/m.ninfer.part-0001.receipt.json
done
check test "$n" -ge 2 # (it stopped at least once)

# ---------------------------------------------------------------- 4. a plan is data
rm -rf out && mkdir out
run 0 "$conv" "${args[@]}" --plan-out plan.json --tasks 2 -q
# edit.py PLAN EXPR: the plan's JSON as p, EXPR run on it, written to hostile.json
cat >edit.py <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
exec(sys.argv[2])
json.dump(p, open("hostile.json", "w"))
PY
hostile() { # EXPR MESSAGE...: the edited plan is refused by a task and by the assembler
    local expr=$1
    shift
    python3 edit.py plan.json "$expr" || bad "edit.py failed: $expr"
    for step in "--task 0" --assemble; do
        # shellcheck disable=SC2086 # (word splitting wanted)
        run 1 "$conv" --plan hostile.json $step
        contains "$work/err" "hostile.json: "
        for m in "$@"; do contains "$work/err" "$m"; done
    done
    check test -z "$(ls -A out)"
}
mkdir -p ../elsewhere && cp ck/model.safetensors ../elsewhere/
# a source outside the allowed roots (the recipe's directory, the sources and paths given to it)
hostile 'r = p["conversion"]["recipe"]; r["text"] = r["text"].replace("sources:\n", "sources:\n  other: \"../elsewhere\"\n", 1)' \
    "conversion.recipe: source 'other' (../elsewhere): outside the plan's allowed roots"
# an input outside them, however faithfully fingerprinted
hostile 'i = dict(p["inputs"][0]); i["path"] = "../elsewhere/model.safetensors"; p["inputs"].append(i)' \
    "inputs[3] (../elsewhere/model.safetensors): outside the plan's allowed roots"
# a fingerprint the file does not have
hostile 'p["inputs"][0]["head"] = "0" * 32' "inputs[0] (ck/model.safetensors): changed since the plan was made"
# an unknown member, anywhere, and an option that is not the plan's to record
hostile 'p["conversion"]["options"]["threads"] = 4' "conversion.options.'threads': unknown member"
hostile 'p["command"] = {"program": "sh", "argv": ["-c", "true"]}' "'command': unknown member"
hostile 'p["conversion"]["recipe"]["shell"] = "true"' "conversion.recipe.'shell': unknown member"
hostile 'p["conversion"]["recipe"]["sources"][0]["path"] = 5' "conversion.recipe.sources[0]: not an object"
hostile 'p["conversion"]["recipe"]["variables"]["HOME"] = ["/"]' "conversion.recipe.variables.'HOME': not a string"
hostile 'p["conversion"]["options"]["force"] = "yes"' "conversion.options: force and report must be true or false"
# the recipe's text edited after planning: another artifact than the plan's fingerprint
hostile 'r = p["conversion"]["recipe"]; r["text"] = r["text"].replace("q8_g32_fp16", "q4_g64_fp16")' \
    "now give another artifact than the plan's"
hostile 'r = p["conversion"]["recipe"]; r["text"] += "\nbogus: 1\n"' "conversion.recipe.text: (quick mode):" "bogus"
# a plan of version 1 recorded a command line: refused, to be made again
hostile 'p["ninfer_plan"] = 1' "a plan of version 1, which recorded a command line" "make the plan again"
rm -rf ../elsewhere
# a plan that would read outside its roots is never made: a recipe naming a checkpoint outside its
# own directory (a one-machine run reads it) needs the directory given, with --allow-path
mkdir rd && printf 'recipe: 1\nsources:\n  base: ../ck\nrules:\n  - match: "*"\n    when: {rank: 2}\n    format: q8_g32_fp16\n' >rd/r.yaml
rm -rf out plan.json && mkdir out
run 1 "$conv" -r rd/r.yaml -o out/m.ninfer --plan-out plan.json -q
contains "$work/err" "the plan would read it, and it is outside its allowed roots"
contains "$work/err" "give it with --source or --allow-path"
check test ! -e plan.json
run 0 "$conv" -r rd/r.yaml -o out/m.ninfer --allow-path ck --plan-out plan.json -q
check python3 -c 'import json; assert json.load(open("plan.json"))["conversion"]["recipe"]["allow_paths"] == ["ck"]'
run 0 "$conv" --plan plan.json --task all -q
rm -f plan.json
# a recipe read from standard input: its text is in the plan (a task reads no standard input)
rm -rf out && mkdir out
run 0 "$conv" -r - -o out/m.ninfer --source base=ck --plan-out plan.json -q <rd/r.yaml
run 0 "$conv" --plan plan.json --task all -q </dev/null
run 0 "$conv" --plan plan.json --assemble -q
run 0 "$verify" out/m.ninfer --require-checksums
rm -f plan.json
# the variables a recipe expanded are the plan's: a task's environment is not read
mkdir rc && cp -r ck rc/ck
printf 'recipe: 1\nsources:\n  base: ${CKDIR}/ck\nrules:\n  - match: "*"\n    when: {rank: 2}\n    format: q8_g32_fp16\n' >rc/r.yaml
rm -rf out ref && mkdir out
CKDIR=. run 0 "$conv" -r rc/r.yaml --allow-env CKDIR -o out/m.ninfer --max-file-bytes 40000 --artifact-id $id -q
mv out ref && mkdir out
CKDIR=. run 0 "$conv" -r rc/r.yaml --allow-env CKDIR -o out/m.ninfer --max-file-bytes 40000 --artifact-id $id \
    --plan-out plan.json --tasks 2 -q
check python3 -c 'import json; assert json.load(open("plan.json"))["conversion"]["recipe"]["variables"] == {"CKDIR": "."}'
CKDIR=/nonexistent run 0 "$conv" --plan plan.json --task all -q
run 0 "$conv" --plan plan.json --assemble -q
check test "$(ls out)" = "$(ls ref)"
for f in ref/*; do check cmp "$f" "out/${f#ref/}"; done

finish test_scaleout_trust
