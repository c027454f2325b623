#!/usr/bin/env bash
# Program-level fault loop (design.md 7, issue 6 "Faults"): a split conversion (entry, parts and
# the report) is run once to count its calls of each I/O operation, then once per call with that
# call failing: the N-th open, read, write, fsync, link/rename and unlink, with EIO, and the
# writes also with ENOSPC and as a short write.  Every run must exit 3 with a message naming a
# path, publish nothing (no entry, no part, no report) and leave no temp file.  The same with
# --force over an empty directory (publication by rename).
#
# The faults are injected by build/tests/bin/ninfer-convert-faults, the test copy of
# ninfer-convert linked with tests/cli/fault_hook.c (NINFER_IO_FAULT=OP:N:ERR); the real
# ninfer-convert ignores that variable, which is checked too.
# usage: test_faults.sh BIN_DIR DATA_DIR
set -u
bin=$(cd "$1" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
faulty=$bin/../tests/bin/ninfer-convert-faults
# fsync is what takes time here: use a memory file system when there is one
work=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
trap 'rm -rf "$work"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); printf 'FAIL %s\n' "$*"; }
[ -x "$faulty" ] || { echo "FAIL $faulty is missing (built when NINFER_TESTS=ON)"; exit 1; }
# Under ASan+UBSan (NINFER_TEST_CFLAGS has -fsanitize) a process start costs ~10x: there the
# many reads and writes are swept at every 4th call (the opens, syncs, links and unlinks at all).
thin=1
case "${NINFER_TEST_CFLAGS:-}" in *-fsanitize*) thin=4 ;; esac

# A checkpoint of a few dozen kilobytes; the demo recipe (copied so every path is under $work)
# split into an entry and three parts.
ck=$work/ckpt
"$bin/ninfer-gen-checkpoint" "$ck" --hidden 64 --intermediate 128 --layers 2 --vocab 64 >/dev/null ||
    { echo "FAIL generator"; exit 1; }
cp "$top/recipes/demo.yaml" "$work/recipe.yaml"
out=$work/out
mkdir "$out"
args=(-r "$work/recipe.yaml" --source "base=$ck" -o "$out/m.ninfer" --max-file-bytes 40000 -j 1)

# the clean run: counts, and the shape of what it publishes
NINFER_IO_COUNTS=$work/counts "$faulty" "${args[@]}" -q 2>"$work/err"
if [ $? -eq 0 ]; then ok; else bad "clean run: $(cat "$work/err")"; fi
published=$(ls -A "$out" | tr '\n' ' ')
if [ "$published" = "m.ninfer m.ninfer.conversion.json m.ninfer.part-0001 m.ninfer.part-0002 m.ninfer.part-0003 " ]; then
    ok
else
    bad "the clean run published '$published', expected an entry, three parts and the report"
fi
"$bin/ninfer-verify" -q "$out/m.ninfer" && ok || bad "the clean run's artifact does not verify"
rm -f "$out"/* "$out"/.[!.]*
count() { awk -v op="$1" '$1 == op { print $2 }' "$work/counts"; }

# the real program has no hook: the variable changes nothing
NINFER_IO_FAULT=open:1:EIO "$bin/ninfer-convert" "${args[@]}" -q 2>"$work/err" && ok ||
    bad "ninfer-convert honours NINFER_IO_FAULT: $(cat "$work/err")"
rm -f "$out"/* "$out"/.[!.]*
# and the hook refuses what it cannot parse, rather than injecting nothing
NINFER_IO_FAULT=write:1:EBOGUS "$faulty" "${args[@]}" 2>/dev/null
[ $? -eq 125 ] && ok || bad "a malformed NINFER_IO_FAULT was accepted"
rm -f "$out"/* "$out"/.[!.]*

runs=0
sweep() { # sweep OP ERR [EXTRA ARGS...]
    local op=$1 err=$2
    shift 2
    local total
    total=$(count "$op")
    if [ -z "$total" ] || [ "$total" -eq 0 ]; then
        bad "a split conversion makes no $op call"
        return
    fi
    local n rc left step=1
    case $op in read | write) step=$thin ;; esac
    for n in $(seq 1 "$step" "$total"); do
        runs=$((runs + 1))
        NINFER_IO_FAULT=$op:$n:$err "$faulty" "${args[@]}" "$@" >/dev/null 2>"$work/err"
        rc=$?
        left=$(ls -A "$out" | tr '\n' ' ')
        if [ "$rc" -ne 3 ]; then
            bad "$op $n/$total ($err $*): exit $rc, expected 3: $(head -c 300 "$work/err")"
        elif ! grep -qF -- "$work/" "$work/err"; then
            bad "$op $n/$total ($err $*): the message names no path: $(head -c 300 "$work/err")"
        elif [ -n "$left" ]; then
            bad "$op $n/$total ($err $*): left behind: $left ($(head -c 300 "$work/err"))"
        else
            ok
        fi
        [ -z "$left" ] || rm -f "$out"/* "$out"/.[!.]*
    done
}
sweep open EIO
sweep read EIO
sweep write EIO
sweep write ENOSPC
sweep write short
sweep sync EIO
sweep link EIO
sweep unlink EIO
# publication by rename (--force) into an empty directory
sweep link EIO --force
sweep sync ENOSPC --force

# --force over an existing split artifact (without the report, whose replacement belongs to the
# converter, not the writer): a failure anywhere puts the previous artifact back byte for byte
# and leaves no temp file and no set-aside ".old" file.  The one failure that cannot undo
# anything is the removal of a set-aside file after the new artifact is published and synced:
# that run succeeds with the new artifact, and the set-aside file stays (reported by the next
# run, test_sigkill.sh).
old=$work/old
mkdir "$old"
"$faulty" "${args[@]}" -o "$old/m.ninfer" --no-report --artifact-id 0123456789abcdef0123456789abcdef -q ||
    bad "writing the artifact to replace failed"
fargs=("${args[@]}" --no-report --force --artifact-id fedcba9876543210fedcba9876543210)
reset_out() { rm -f "$out"/* "$out"/.[!.]*; cp "$old"/* "$out"/; }
reset_out
NINFER_IO_COUNTS=$work/fcounts "$faulty" "${fargs[@]}" -q || bad "a clean replacement failed"
"$bin/ninfer-verify" -q "$out/m.ninfer" && ok || bad "the replacing artifact does not verify"
[ -z "$(ls -A "$out" | grep -v '^m\.ninfer')" ] && ok || bad "a clean replacement left: $(ls -A "$out")"
frun=0
kept=0
for spec in open:EIO write:ENOSPC sync:EIO link:EIO unlink:EIO; do # reads and write kinds are swept above
    op=${spec%%:*}
    err=${spec#*:}
    total=$(awk -v op="$op" '$1 == op { print $2 }' "$work/fcounts")
    step=1
    [ "$op" = write ] && step=$thin
    for n in $(seq 1 "$step" "$total"); do
        frun=$((frun + 1))
        reset_out
        NINFER_IO_FAULT=$op:$n:$err "$faulty" "${fargs[@]}" >/dev/null 2>"$work/err"
        rc=$?
        extra=$(ls -A "$out" | grep -v -e '^m\.ninfer$' -e '^m\.ninfer\.part-[0-9]*$' | tr '\n' ' ')
        if [ "$rc" -eq 3 ]; then
            same=yes
            for f in "$old"/*; do cmp -s "$f" "$out/${f##*/}" || same=no; done
            [ "$(ls "$out" | wc -l)" -eq "$(ls "$old" | wc -l)" ] || same=no
            if [ "$same" = yes ] && [ -z "$extra" ]; then ok; else
                bad "--force $op $n/$total ($err): the previous artifact is not back as it was ($same) or left: $extra ($(head -c 300 "$work/err"))"
            fi
        elif [ "$rc" -eq 0 ] && [ "$op" = unlink ] && "$bin/ninfer-verify" -q "$out/m.ninfer" &&
            [ -z "$(ls -A "$out" | grep -v -e '^m\.ninfer' -e '^\.m\.ninfer.*\.old$')" ]; then
            kept=$((kept + 1))
            ok
        else
            bad "--force $op $n/$total ($err): exit $rc: $(head -c 300 "$work/err"); left: $extra"
        fi
    done
done
echo "--force over an existing artifact: $frun faulty runs ($kept succeeded keeping a set-aside file)"

echo "fault points: open $(count open), read $(count read), write $(count write), sync $(count sync)," \
    "link $(count link), unlink $(count unlink); $runs faulty runs"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
