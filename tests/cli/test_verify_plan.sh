#!/usr/bin/env bash
# ninfer-verify ART --against SRC --plan PLAN.json --task I (docs/ninfer-verify.md, "One task of a
# plan"): each task re-derives only the objects with bytes in its files, so a changed source
# tensor is reported by exactly the task(s) holding its object, and the others stay valid.
. "$(dirname "$0")/lib.sh" "$@"

conv=$bin/ninfer-convert
ver=$bin/ninfer-verify
mkdir "$work/w" && cd "$work/w" || exit 1
"$bin/ninfer-gen-checkpoint" ck --hidden 256 --kv-hidden 256 --intermediate 512 --layers 2 --vocab 64 >/dev/null
# (--no-resources: every object a tensor, so a task's objects are the tensors it re-derives)
args=(ck -o out/m.ninfer --format q8_g32_fp16 --no-resources --max-file-bytes 40000 --artifact-id 00112233445566778899aabbccddeeff)
mkdir out
run 0 "$conv" "${args[@]}" --plan-out plan.json --tasks 4 -q
run 0 "$conv" --plan plan.json --task all -q
run 0 "$conv" --plan plan.json --assemble -q
check test -e out/m.ninfer

# every task valid; the counts of re-derived tensors are the task's objects
for t in 0 1 2 3; do
    run 0 "$ver" out/m.ninfer --against ck --plan plan.json --task $t
    n=$(python3 -c 'import json,sys; p=json.load(open("plan.json")); t=p["tasks"][int(sys.argv[1])]
print(len({o for f in t["files"] for o in p["files"][f]["objects"]}))' $t)
    contains "$work/out" "checked structure; $n tensors re-derived from ck, task $t of plan.json)"
done
run 0 "$ver" out/m.ninfer --against ck --plan plan.json --task all
# every task: the source's files are compared too (a single task's verification leaves them out)
contains "$work/out" "checked structure, words, 22 checksums; 3 source files with the recorded SHA-256; 21 tensors re-derived from ck, every task of plan.json)"
run 0 "$ver" out/m.ninfer --against ck --plan plan.json --task 1 --json
check python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); a=d["against"]
assert d["valid"] and a["plan"] == "plan.json" and a["task"] == 1, d' "$work/out"

# change the values of one source tensor in place (its halves swapped: same size, same ends of
# the file, so only a comparison with the source catches it); ID one object within a task, ID2
# one that spans two tasks
tasks_of() { # OBJECT: the tasks whose files hold it
    python3 -c 'import json,sys; p=json.load(open("plan.json"))
print(" ".join(str(t["task"]) for t in p["tasks"] if any(sys.argv[1] in p["files"][f]["objects"] for f in t["files"])))' "$1"
}
spoil() { # OBJECT: swap the halves of its source bytes in ck/model.safetensors
    python3 - "$1" <<'PY'
import json, sys
p = json.load(open("plan.json"))
src = next(o for o in p["objects"] if o["object"] == sys.argv[1])["sources"][0]
with open(src["file"], "r+b") as f:
    f.seek(src["offset"]); b = f.read(src["bytes"]); h = len(b) // 2
    f.seek(src["offset"]); f.write(b[h:] + b[:h])
PY
}
# a plan whose files[].objects lists are empty: a task's objects come from the artifact's own
# directory and the plan's task -> files map, so these lists can hide no object (issue 23, item 4)
python3 -c 'import json; p=json.load(open("plan.json"))
for f in p["files"]: f["objects"] = []
json.dump(p, open("empty.json", "w"))'
run 0 "$ver" out/m.ninfer --against ck --plan empty.json --task all
contains "$work/out" "21 tensors re-derived from ck, every task of empty.json)"
for id in model.layers.0.self_attn.k_proj.weight model.layers.0.mlp.gate_proj.weight; do
    cp ck/model.safetensors saved.safetensors
    spoil $id
    holders=" $(tasks_of $id) "
    run 1 "$ver" out/m.ninfer --against ck --plan empty.json --task all
    contains "$work/out" "object '$id': against: re-derived bytes differ from the artifact's"
    for t in $holders; do
        run 1 "$ver" out/m.ninfer --against ck --plan empty.json --task $t
        contains "$work/out" "object '$id': against: re-derived bytes differ from the artifact's"
    done
    [ "$id" = model.layers.0.mlp.gate_proj.weight ] && { [ $(echo $holders | wc -w) -eq 2 ] && ok || bad "$id spans no two tasks: $holders"; }
    for t in 0 1 2 3; do
        case "$holders" in
        *" $t "*)
            run 1 "$ver" out/m.ninfer --against ck --plan plan.json --task $t
            contains "$work/out" "out/m.ninfer: INVALID: 1 problem"
            contains "$work/out" "object '$id': against: re-derived bytes differ from the artifact's"
            ;;
        *) run 0 "$ver" out/m.ninfer --against ck --plan plan.json --task $t ;;
        esac
    done
    run 1 "$ver" out/m.ninfer --against ck --plan plan.json --task all # reported once, after the file
    contains "$work/out" "out/m.ninfer: INVALID: 2 problems"
    contains "$work/out" "against: source file model.safetensors differs from the one the artifact was made from"
    cp saved.safetensors ck/model.safetensors
done
run 0 "$ver" out/m.ninfer --against ck --plan plan.json --task all

# a task out of range, a plan of another artifact: invalid (1); a plan that cannot be read: 3
run 1 "$ver" out/m.ninfer --against ck --plan plan.json --task 4
contains "$work/err" "plan.json: no task 4 (the plan has tasks 0 to 3)"
# every index out of range is invalid (1), in ninfer-convert too: the largest size_t (task + 1 wrapped
# to 0 and ran nothing, exit 0) and a number past it (issue 23, item 5)
for t in 4 18446744073709551615 18446744073709551616 99999999999999999999999; do
    run 1 "$ver" out/m.ninfer --against ck --plan plan.json --task $t
    contains "$work/err" "plan.json: no task $t (the plan has tasks 0 to 3)"
    run 1 "$conv" --plan plan.json --task $t
    contains "$work/err" "plan.json: no task $t (the plan has tasks 0 to 3)"
done
run 2 "$conv" --plan plan.json --task +1
run 2 "$conv" --plan plan.json --task ''
run 0 "$conv" "${args[@]}" -o other/m.ninfer --artifact-id ffeeddccbbaa99887766554433221100 --plan-out other.json --tasks 4 -q
run 1 "$ver" out/m.ninfer --against ck --plan other.json --task 0
contains "$work/out" "against: the artifact's id 00112233445566778899aabbccddeeff is not the plan's ffeeddccbbaa99887766554433221100"
run 3 "$ver" out/m.ninfer --against ck --plan missing.json --task 0
printf 'not json' >bad.json
run 1 "$ver" out/m.ninfer --against ck --plan bad.json --task 0
# usage errors (2)
run 2 "$ver" out/m.ninfer --against ck --plan plan.json
run 2 "$ver" out/m.ninfer --against ck --task 0
run 2 "$ver" out/m.ninfer --plan plan.json --task 0
run 2 "$ver" out/m.ninfer --against ck --plan plan.json --task x
run 2 "$ver" out/m.ninfer --against ck --plan plan.json --task -1
run 2 "$ver" out/m.ninfer --against ck --plan plan.json --task 0 --require-checksums
run 2 "$ver" out/m.ninfer out/m.ninfer --against ck --plan plan.json --task 0

# ninfer-convert --plan: a task may add only what docs/scale-out.md lists; the plan gives everything
# else, and every other option of --help is a usage error (2), never ignored (issue 23, item 7:
# --requantize, --no-resources and --target-bpw were).  The refusal comes from the option table's
# tags, so a new option is refused until it is marked as allowed with --plan, and the message
# says whether the plan records it (it decides bytes) and what a task may add.
declare -A value=([recipe]=r.yaml [output]=x.ninfer [source]=base=ck [allow-path]=. [allow-env]=HOME
    [threads]=1 [max-file-bytes]=8192 [artifact-id]=ffeeddccbbaa99887766554433221100 [format]=q8_g32_fp16
    [target-bpw]=4.5 [method]=grouped_absmax [rule]='*=q8_g32_fp16' [chunk-values]=1000 [plan-out]=p2.json
    [tasks]=2 [plan]=plan.json [task]=all [progress]=never [sensitivity]=s.json [preset]=Q4_K_M
    [imatrix]=im.dat [method-program]=fk=true [method-timeout]=5 [attest]=s.json)
allowed=" threads remove-stale chunk-values quiet verbose json progress plan task help version list-formats list-methods list-presets "
"$conv" --help >help.txt
# "  -o, --output OUT.ninfer   help" / "      --requantize   help": the name, and whether it takes a
# value (an ARG in capitals, or a|b|c; the help text starts in lower case)
python3 -c 'import re,sys
for line in open(sys.argv[1]):
    m = re.match(r"^\s+(?:-\w, )?--([a-z][a-z-]*)(\S*)( [A-Z]\S*| [a-z]+[|]\S*)?", line)
    if m: print(m.group(1), "arg" if (m.group(3) or m.group(2)) else "flag")' help.txt >options.txt
check test "$(wc -l <options.txt)" -ge 30
while read -r name kind; do
    a=(--"$name")
    if [ "$kind" = arg ]; then
        [ -n "${value[$name]+x}" ] || { bad "no test value for --$name: add one to value[] above"; continue; }
        a=(--"$name" "${value[$name]}")
    fi
    case "$name" in
    method-program) # taken with --plan, and refused: this plan was made with no program
        run 2 "$conv" --plan plan.json --task all -q "${a[@]}"
        contains "$work/err" "--method-program fk: the plan's conversion has no such program"
        continue
        ;;
    method-timeout)
        run 2 "$conv" --plan plan.json --task all -q "${a[@]}"
        contains "$work/err" "--method-timeout belongs to --method-program"
        continue
        ;;
    esac
    case "$allowed" in
    *" $name "*) run 0 "$conv" --plan plan.json --task all -q "${a[@]}" ;;
    *)
        run 2 "$conv" --plan plan.json --task all -q "${a[@]}"
        case $name in
        assemble | verify) ;;
        *)
            contains "$work/err" "--$name: "
            contains "$work/err" "with --plan a task may add only --threads, --remove-stale, --chunk-values,"
            ;;
        esac
        ;;
    esac
done <options.txt
grep -qx 'requantize flag' options.txt && ok || bad "--requantize is not among the options of --help"

finish test_verify_plan
