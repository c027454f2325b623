#!/usr/bin/env bash
# Scale-out (docs/scale-out.md): plan -> tasks (any order, any grouping, killed, duplicated) ->
# assemble gives byte for byte the files of one run of the same command, and every refusal says
# what to rerun, exits 1 and publishes nothing.
. "$(dirname "$0")/lib.sh" "$@"

conv=$bin/ninfer-convert
mkdir "$work/w" && cd "$work/w" || exit 1 # ($work/out and $work/err are run's)
"$bin/ninfer-gen-checkpoint" ck --hidden 256 --kv-hidden 256 --intermediate 512 --layers 2 --vocab 64 >/dev/null
id=00112233445566778899aabbccddeeff
args=(ck -o out/m.ninfer --format q8_g32_fp16 --max-file-bytes 40000 --artifact-id $id)

# the reference: one run, set aside
mkdir out
"$conv" "${args[@]}" -q || bad "the one-machine run failed"
mv out ref
nfiles=$(ls ref | grep -c '^m.ninfer')
same_as_ref() { # LABEL: out/ holds exactly ref/'s files, byte for byte
    local d=0
    for f in ref/*; do cmp -s "$f" "out/${f#ref/}" || { d=1; bad "$1: out/${f#ref/} differs from the one-machine run"; }; done
    [ "$(ls out | sort)" = "$(ls ref | sort)" ] || { d=1; bad "$1: out/ holds $(ls out | tr '\n' ' '), not $(ls ref | tr '\n' ' ')"; }
    [ $d -eq 0 ] && ok
}

# a plan checks what a run checks: an existing output is refused (its tasks could not write it)
run 3 "$conv" "${args[@]}" -o ref/m.ninfer --plan-out refplan.json
contains "$work/err" "exists"
check test ! -e refplan.json

# 7 tasks in a scrambled order, one thread each; then assemble
mkdir out
run 0 "$conv" "${args[@]}" --plan-out plan.json --tasks 7
check test "$(cat "$work/out")" = 7
# each file lists exactly the objects whose bytes overlap its payload range (computed here from
# the plan's offsets, independently of the library's search)
check python3 -c '
import json
d = json.load(open("plan.json"))
for f in d["files"]:
    a, b = f["payload"]
    want = [o["object"] for o in d["objects"] if o["offset"] < b and o["offset"] + o["bytes"] > a]
    assert f["objects"] == want, (f["file"], f["objects"], want)
assert max(sum(o["object"] in f["objects"] for f in d["files"]) for o in d["objects"]) > 2  # some span 3+ files
'
for t in 6 3 0 5 1 4 2; do run 0 "$conv" --plan plan.json --task $t -j 1 -q; done
ls out | grep -q '^m.ninfer$' && bad "the entry exists before --assemble" || ok
# an assembly that fails at each of its syncs in turn (the report's, the entry's, the directory's
# after the commit point) exits 3, and the next run finishes it; one more has nothing to do
faulty=$bin/../tests/bin/ninfer-convert-faults
if [ -x "$faulty" ]; then
    for n in 1 2 3; do run 3 env NINFER_IO_FAULT=sync:$n:EIO "$faulty" --plan plan.json --assemble -q; done
else
    echo "SKIP the failing assemblies: no $faulty"
fi
run 0 "$conv" --plan plan.json --assemble --verify -q
same_as_ref "7 tasks"
run 0 "$conv" --plan plan.json --assemble -q
same_as_ref "assembled twice"

# one task per part (the default), all on this machine; --json gives the count
rm -rf out && mkdir out
run 0 "$conv" "${args[@]}" --plan-out plan.json --json
check python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["tasks"] == int(sys.argv[2]), d' "$work/out" $((nfiles - 1))
run 0 "$conv" --plan plan.json --task all -q
run 0 "$conv" --plan plan.json --task all
contains "$work/err" "task 0 of $((nfiles - 1)) was done already"
run 0 "$conv" --plan plan.json --assemble -q
same_as_ref "--task all"
# more tasks than parts: one per part
run 0 "$conv" "${args[@]}" -o out2/m.ninfer --plan-out plan2.json --tasks 1000000
check test "$(cat "$work/out")" = $((nfiles - 1))

# a plan path that is not a regular file is refused, never replaced (docs/scale-out.md): the
# link and its target stay as they were
echo kept >plan-target
ln -s plan-target plan-link.json
run 2 "$conv" "${args[@]}" -o out3/m.ninfer --plan-out plan-link.json --tasks 2
contains "$work/err" "plan-link.json: not a regular file: never replaced"
check test -L plan-link.json
check test "$(cat plan-target)" = kept

# refusals: exit 1, a message naming the task to rerun, nothing published
rm -rf out && mkdir out
run 0 "$conv" "${args[@]}" --plan-out plan.json --tasks 3 -q
run 0 "$conv" "${args[@]}" --artifact-id ffeeddccbbaa99887766554433221100 --plan-out plan3.json -q # (below)
run 1 "$conv" --plan plan.json --task 3
contains "$work/err" "no task 3 (the plan has tasks 0 to 2)"
run 2 "$conv" --plan plan.json --task x
run 2 "$conv" --plan plan.json --task 0 -o elsewhere.ninfer
# what a task may add, and what the plan records, both from the option table's tags
for extra in --force --no-report "--artifact-id $id" "--max-file-bytes 0" "--rule x=bf16" "-r r.yaml"; do
    run 2 "$conv" --plan plan.json --task 0 $extra
    contains "$work/err" "the plan records it (it decides the artifact's bytes)"
    contains "$work/err" "a task may add only --threads, --remove-stale, --chunk-values, --method-program, --method-timeout, --task, --assemble, --verify, -q"
done
run 2 "$conv" --plan plan.json --task 0 --dry-run
contains "$work/err" "--dry-run: it does not go with --plan"
run 0 "$conv" --plan plan.json --task 0 --json --chunk-values 7 # a host's tuning: the bytes never depend on it
check python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["task_count"] == 3 and d["tasks"] == [{"task": 0, "status": "done"}], d' "$work/out"
run 0 "$conv" --plan plan.json --task 2 -q
run 1 "$conv" --plan plan.json --assemble
contains "$work/err" "rerun task 1"
check test ! -e out/m.ninfer
# a task killed at any point leaves nothing a rerun takes for done
( "$conv" --plan plan.json --task 1 -j 1 -q & p=$!; sleep 0.05; kill -KILL $p; wait $p ) 2>/dev/null
run 0 "$conv" --plan plan.json --task 1 --remove-stale -q
check test -z "$(ls -A out | grep '\.tmp$')"
# a receipt that lies about its part: refused; --verify reads the bytes
cp out/m.ninfer.part-0001.receipt.json lie.json
python3 - out/m.ninfer.part-0001.receipt.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); r["bytes"] += 1; json.dump(r, open(sys.argv[1], "w"))
PY
run 1 "$conv" --plan plan.json --assemble
contains "$work/err" "not the receipt of file 1"
# one that leaves out an object of its file
python3 - lie.json out/m.ninfer.part-0001.receipt.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); r["objects"] = r["objects"][:-1]; json.dump(r, open(sys.argv[2], "w"))
PY
run 1 "$conv" --plan plan.json --assemble
contains "$work/err" "the file holds"
cp lie.json out/m.ninfer.part-0001.receipt.json
printf 'X' | dd of=out/m.ninfer.part-0001 bs=1 seek=5000 conv=notrunc 2>/dev/null
run 1 "$conv" --plan plan.json --assemble --verify
contains "$work/err" "its bytes are not those its receipt records; rerun task"
check test ! -e out/m.ninfer
rm out/m.ninfer.part-0001.receipt.json
run 0 "$conv" --plan plan.json --task all # redoes the task of the part without a receipt
lacks "$work/err" "without its entry" # the parts of a plan in progress are no interrupted publication
# a part of another artifact (another id): refused by its header
run 0 "$conv" "${args[@]}" -o other/m.ninfer --artifact-id ffeeddccbbaa99887766554433221100 --plan-out other.json --tasks 3 -q
mkdir -p other
run 0 "$conv" --plan other.json --task all -q
cp out/m.ninfer.part-0002 keep.part
cp other/m.ninfer.part-0002 out/m.ninfer.part-0002
run 1 "$conv" --plan plan.json --assemble
contains "$work/err" "is not part 2 of this artifact"
cp keep.part out/m.ninfer.part-0002
# two runs of one task at once: both finish, the bytes are the same
for i in $(python3 -c 'import json; print(*json.load(open("plan.json"))["tasks"][1]["files"])'); do
    rm out/m.ninfer.part-$(printf %04d $i).receipt.json
done
"$conv" --plan plan.json --task 1 -q & p1=$!
"$conv" --plan plan.json --task 1 -q & p2=$!
wait $p1 && wait $p2 && ok || bad "two concurrent runs of task 2 did not both succeed"
run 0 "$conv" --plan plan.json --assemble -q
same_as_ref "killed, lied to, duplicated"
# once assembled, a task run again (a requeued array task) has nothing to do; another artifact
# in the output's place is refused
run 0 "$conv" --plan plan.json --task 0
contains "$work/err" "task 0 of 3 was done already"
run 1 "$conv" --plan plan3.json --task 0
contains "$work/err" "another artifact (or another file) is there"

# sources changed after the plan: a task refuses to run
rm -rf out && mkdir out
run 0 "$conv" "${args[@]}" --plan-out plan.json -q
# (first: the report's place is checked as a run checks it -- a FIFO there is never replaced)
run 0 "$conv" --plan plan.json --task all -q
mkfifo out/m.ninfer.conversion.json
run 2 "$conv" --plan plan.json --assemble
contains "$work/err" "not a regular file"
check test ! -e out/m.ninfer
rm out/m.ninfer.conversion.json
rm -rf out && mkdir out
run 0 "$conv" "${args[@]}" --plan-out plan.json -q
cp ck/model.safetensors ck.orig
printf '\001' | dd of=ck/model.safetensors bs=1 seek=$(( $(stat -c %s ck/model.safetensors) - 10 )) conv=notrunc 2>/dev/null
run 1 "$conv" --plan plan.json --task 0
contains "$work/err" "changed since the plan was made"
cp ck.orig ck/model.safetensors
# no --artifact-id: the plan draws one, and every task and the entry carry it
rm -rf out && mkdir out
run 0 "$conv" ck -o out/m.ninfer --format q8_g32_fp16 --max-file-bytes 40000 --plan-out plan.json --tasks 2 -q
pid_=$(python3 -c 'import json; print(json.load(open("plan.json"))["artifact_id"])')
run 0 "$conv" --plan plan.json --task all -q
run 0 "$conv" --plan plan.json --assemble -q
run 0 "$bin/ninfer-inspect" out/m.ninfer --json
check python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["artifact_id"] == sys.argv[2]' "$work/out" "$pid_"
# the plan is untrusted input too
printf '{"ninfer_plan": 1, "output": "x"}' >bad.json
run 1 "$conv" --plan bad.json --task 0
python3 -c 'print("{\"ninfer_plan\": 1, \"x\": " + "[" * 9 + "]" * 9 + "}")' >bad.json
run 1 "$conv" --plan bad.json --task 0
contains "$work/err" "nested deeper than 8 levels"
printf 'not json' >bad.json
run 1 "$conv" --plan bad.json --assemble
contains "$work/err" "bad.json: byte 3 (line 1, column 3)"
lacks "$work/err" "near" # the file's bytes are not quoted (docs/security.md 1.3)
finish test_scaleout
