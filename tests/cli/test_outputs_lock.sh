#!/usr/bin/env bash
# One lock per output (docs/security.md 1.3; docs/security.md 7.1, F3): concurrent ninfer-convert runs to the same OUT
# never publish a mixed set.  A run holds ".OUT.lock" beside OUT from its first temp file to its
# last rename (the report included); a second run meanwhile exits 3 naming the lock, and changes
# nothing.  Real processes: pairs of `--force --max-file-bytes N` conversions started together
# (each exits 0 or 3, at least one 0; the entry, every part and the report then belong to one
# artifact), and a lock held by flock(1) around a conversion.
# usage: test_outputs_lock.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

ck=$work/ckpt
"$bin/ninfer-gen-checkpoint" "$ck" --hidden 512 --intermediate 1536 --layers 4 --vocab 4000 >/dev/null ||
    { echo "FAIL generator"; exit 1; }
d=$work/d
mkdir "$d"
conv() { "$bin/ninfer-convert" "$ck" -o "$d/m.ninfer" --format q8_g32_fp16 --max-file-bytes 400000 -j 1 \
    --progress=never -q --force "$@"; }
id_a=aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
id_b=bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb

# whole DIR: the entry verifies (every part carries its artifact id), the report names the same
# artifact id, and nothing of a run is left (temp files, set-aside files, the lock)
whole() {
    if "$bin/ninfer-verify" -q "$d/m.ninfer" >"$work/vout" 2>&1; then ok; else
        bad "$1: the published set does not verify: $(head -c 400 "$work/vout")"
    fi
    python3 - "$d/m.ninfer" "$d/m.ninfer.conversion.json" <<'PY' && ok || bad "$1: the report belongs to another artifact"
import json, sys
entry = open(sys.argv[1], 'rb').read(32)
report = json.load(open(sys.argv[2]))
assert report['artifact_id'] == entry[16:32].hex(), (report['artifact_id'], entry[16:32].hex())
PY
    local left
    left=$(cd "$d" && ls -A | grep -E '\.(tmp|old|lock)$' | tr '\n' ' ')
    if [ -z "$left" ]; then ok; else bad "$1: left behind: $left"; fi
}

conv --artifact-id $id_a || bad "the first conversion failed"
nparts=$(ls "$d" | grep -c '\.part-')
[ "$nparts" -ge 2 ] && ok || bad "the conversion is not split ($nparts parts)"
whole "a single run"

# pairs started together
rounds=6
case "${NINFER_TEST_CFLAGS:-}" in *-fsanitize*) rounds=3 ;; esac
refused=0
for i in $(seq 1 $rounds); do
    conv --artifact-id $id_a 2>"$work/err_a" &
    pa=$!
    conv --artifact-id $id_b 2>"$work/err_b" &
    pb=$!
    wait $pa
    ra=$?
    wait $pb
    rb=$?
    for x in "a $ra" "b $rb"; do
        set -- $x
        case $2 in
        0) ok ;;
        3) ok
           refused=$((refused + 1))
           contains "$work/err_$1" "another process is writing"
           contains "$work/err_$1" ".m.ninfer.lock" ;;
        *) bad "round $i: run $1 exited $2: $(head -c 300 "$work/err_$1")" ;;
        esac
    done
    [ "$ra" -eq 0 ] || [ "$rb" -eq 0 ] && ok || bad "round $i: both runs failed"
    whole "round $i"
done
echo "concurrent pairs: $rounds rounds, $refused runs refused by the lock"

# Deterministically in the middle of a publication: the test copy of ninfer-convert stops itself
# (SIGSTOP) at the middle one of its link/rename calls, between two parts being renamed into
# place; a second conversion runs to its end meanwhile; then the first goes on.  Without the lock
# the second published its whole set and the first then renamed the rest of its parts and its
# entry over it: a mixed set.  With it, the second exits 3 and the first completes.
faulty=$bin/../tests/bin/ninfer-convert-faults
[ -x "$faulty" ] || { echo "FAIL $faulty is missing (built when NINFER_TESTS=ON)"; exit 1; }
fconv() { "$faulty" "$ck" -o "$d/m.ninfer" --format q8_g32_fp16 --max-file-bytes 400000 -j 1 --progress=never -q \
    --force "$@"; }
NINFER_IO_COUNTS=$work/counts fconv --artifact-id $id_a || bad "counting run failed"
links=$(awk '$1 == "link" { print $2 }' "$work/counts")
[ "${links:-0}" -ge 8 ] && ok || bad "a split --force conversion makes only ${links:-0} link calls"
mid=$((links / 2))
# exec: $! is the conversion itself, the process that stops
( export NINFER_IO_FAULT=link:$mid:SIGSTOP; exec "$faulty" "$ck" -o "$d/m.ninfer" --format q8_g32_fp16 \
    --max-file-bytes 400000 -j 1 --progress=never -q --force --artifact-id $id_a 2>"$work/err_a" ) &
pa=$!
# until it has stopped itself (or ended, which is a failure below); no time limit is asserted
while kill -0 $pa 2>/dev/null && ! ps -o stat= -p $pa | grep -q '^T'; do sleep 0.01; done
if ps -o stat= -p $pa | grep -q '^T'; then
    ok
    conv --artifact-id $id_b 2>"$work/err_b"
    rb=$?
    kill -CONT $pa
    wait $pa
    ra=$?
    check test "$ra" -eq 0
    check test "$rb" -eq 3
    contains "$work/err_b" "another process is writing"
    whole "a run stopped at link call $mid of $links while another ran"
    python3 -c "import sys; sys.exit(open('$d/m.ninfer','rb').read(32)[16:].hex() != '$id_a')" && ok ||
        bad "the stopped run's artifact is not the one published"
else
    wait $pa
    bad "the conversion did not stop at link call $mid: exit $?: $(head -c 300 "$work/err_a")"
fi

# a lock held by someone else (flock(1) on the lock file, around the conversion): exit 3, the
# message names the lock file, and the artifact and its report are untouched
cp "$d/m.ninfer" "$work/keep.ninfer"
cp "$d/m.ninfer.conversion.json" "$work/keep.json"
flock "$d/.m.ninfer.lock" "$bin/ninfer-convert" "$ck" -o "$d/m.ninfer" --format q8_g32_fp16 \
    --max-file-bytes 400000 --force -q --artifact-id $id_b 2>"$work/err"
check test $? -eq 3
contains "$work/err" "another process is writing"
contains "$work/err" "$d/.m.ninfer.lock"
same "$d/m.ninfer" "$work/keep.ninfer"
same "$d/m.ninfer.conversion.json" "$work/keep.json"
check test -z "$(cd "$d" && ls -A | grep -E '\.(tmp|old)$')"
# the lock file flock(1) left behind, unlocked, is taken over and removed by the next run
check test -e "$d/.m.ninfer.lock"
conv --artifact-id $id_b || bad "the run after the lock was let go failed"
whole "after a left-over lock file"

finish "outputs lock"
