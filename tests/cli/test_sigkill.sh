#!/usr/bin/env bash
# Crash safety of ninfer-convert (issue 6 "Faults"): a split conversion that takes about a second
# is killed with SIGKILL after random delays; each time the destination is either absent or a
# complete artifact that ninfer-verify accepts (never partial), and a report only ever sits
# beside a published artifact.  SIGKILL cannot clean up, so the temp files left behind must be
# discoverable: the next ninfer-convert for the same output names them in a warning, and
# --remove-stale removes exactly those (the temp-file pattern of this output, process gone),
# never the temp files of a running conversion, files of other outputs, or orphan parts.
# NINFER_SIGKILL_SEED=N replays the delays of a failing run.
# usage: test_sigkill.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
now_ms() { echo $(($(date +%s%N) / 1000000)); }
temps() { (cd "$1" && ls -A | grep -E '\.tmp$' | sort | tr '\n' ' '); }

ck=$work/ckpt
"$bin/ninfer-gen-checkpoint" "$ck" --hidden 512 --intermediate 1536 --layers 4 --vocab 4000 >/dev/null ||
    { echo "FAIL generator"; exit 1; }
convert() { # convert DIR [ARGS...]: the split conversion into DIR/m.ninfer
    local d=$1
    shift
    "$bin/ninfer-convert" "$ck" -o "$d/m.ninfer" --format q8_g32_fp16 --max-file-bytes 4000000 -j 2 --progress=never "$@"
}
# in the background, as the process $! names (so that the signals reach ninfer-convert itself)
convert_bg() { ( d=$1; shift; exec "$bin/ninfer-convert" "$ck" -o "$d/m.ninfer" --format q8_g32_fp16 \
    --max-file-bytes 4000000 -j 2 --progress=never -q "$@" 2>/dev/null ) & }

# a clean run: its duration sets the range of the random delays
mkdir "$work/clean"
t0=$(now_ms)
convert "$work/clean" -q || bad "the clean conversion failed"
t1=$(now_ms)
span=$((t1 - t0)) # ms
[ "$span" -gt 50 ] || span=50
nparts=$(ls "$work/clean" | grep -c '\.part-')
[ "$nparts" -ge 2 ] && ok || bad "the conversion is not split ($nparts parts)"
"$bin/ninfer-verify" -q "$work/clean/m.ninfer" && ok || bad "the clean artifact does not verify"
rm -rf "$work/clean"

# Under ASan+UBSan (NINFER_TEST_CFLAGS has -fsanitize) every process is ~10x slower: fewer kills.
slow=no
case "${NINFER_TEST_CFLAGS:-}" in *-fsanitize*) slow=yes ;; esac
seed=${NINFER_SIGKILL_SEED:-$$}
RANDOM=$seed
echo "clean conversion: ${span} ms, $nparts parts; delays from seed $seed"

# an outcome check shared by every kill
judge() { # judge DIR WHAT
    local d=$1 what=$2
    if [ -e "$d/m.ninfer" ]; then
        if "$bin/ninfer-verify" -q "$d/m.ninfer" >"$work/vout" 2>&1; then
            complete=$((complete + 1))
            ok
        else
            bad "$what: a partial artifact was published: $(head -c 300 "$work/vout")"
        fi
    else
        absent=$((absent + 1))
        ok
        if [ -e "$d/m.ninfer.conversion.json" ]; then bad "$what: a report without its artifact"; else ok; fi
    fi
}

# The random kills and the --force kills below land wherever their delays fall: what they add to
# the deterministic crash points is timing, which ASan changes, and the kill leaves nothing for
# a sanitizer to check.  The sanitized run keeps the kill at the first temp file and every crash
# point (each state then checked by sanitized --remove-stale and ninfer-verify runs).
kills=12
if [ $slow = yes ]; then
    kills=0
    echo "note: sanitized build: no kills at random delays (timing only; the crash points below cover each state)"
fi
absent=0
complete=0
left_temps=0
for i in $(seq 1 $kills); do
    d=$work/k$i
    mkdir "$d"
    delay=$((RANDOM % (span + span / 2 + 1)))
    convert_bg "$d"
    pid=$!
    sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    judge "$d" "kill $i after $delay ms"
    [ -z "$(temps "$d")" ] || left_temps=$((left_temps + 1))
done

[ $((absent + complete)) -eq "$kills" ] && ok || bad "$kills kills, $absent absent + $complete complete"

# one kill that surely lands mid-write: as soon as the first temp file appears.  The temp files
# exist for about 90 of the clean run's 120 ms, and bash's own glob sees them (no process runs
# between seeing one and the signal); on a loaded machine the conversion can still publish before
# the signal lands, so up to 5 runs, each judged, until one leaves its temp files.
has_temp() { local f; for f in "$1"/.*.tmp; do [ -e "$f" ] && return 0; done; return 1; }
signal_mid_write() { # signal_mid_write SIGNAL DIR: a conversion into DIR, signalled at its first temp file; sets pid
    convert_bg "$2"
    pid=$!
    for _ in $(seq 1 5000); do
        has_temp "$2" && break
        sleep 0.002
    done
    kill "-$1" "$pid" 2>/dev/null
}
stale=""
for attempt in 1 2 3 4 5; do
    d=$work/mid$attempt
    mkdir "$d"
    signal_mid_write KILL "$d"
    wait "$pid" 2>/dev/null
    judge "$d" "kill $attempt at the first temp file"
    stale=$(temps "$d")
    [ -n "$stale" ] && break
done
if [ -n "$stale" ]; then ok; else bad "no temp file was left by 5 runs killed mid-write"; fi
echo "random kills: $kills ($absent absent, $complete complete, $left_temps left temp files); mid-write kill $attempt left: $stale"
for t in $stale; do
    case "$t" in
    .m.ninfer.$pid@$nf_host.??????.tmp | .m.ninfer.part-[0-9][0-9][0-9][0-9].$pid@$nf_host.??????.tmp | \
        .m.ninfer.conversion.json.$pid@$nf_host.??????.tmp) ok ;;
    *) bad "temp file $t does not carry the pattern .<name>.<pid>@<host>.XXXXXX.tmp with the killed pid $pid" ;;
    esac
done

# Files --remove-stale must never touch: a temp of another output, a temp-like name without a
# pid, an unrelated file, and a temp of this output made by a process of another host sharing the
# filesystem (its pid means nothing here).
foreign=.m.ninfer.part-0001.$pid@$nf_host-elsewhere.AbCd12.tmp
touch "$d/.other.ninfer.$pid.AbCd12.tmp" "$d/.m.ninfer.Xy12Zw.tmp" "$d/notes.txt" "$d/$foreign"

# the next conversion names each stale temp file in a warning (here a dry run: nothing changes)
convert "$d" --dry-run >/dev/null 2>"$work/err"
check test $? -eq 0
for t in $stale; do
    if grep -qF -- "$d/$t: temp file of an interrupted run (process $pid is gone)" "$work/err"; then ok; else
        bad "the warning does not name $t: $(head -c 400 "$work/err")"
    fi
done
for t in $stale .other.ninfer.$pid.AbCd12.tmp .m.ninfer.Xy12Zw.tmp $foreign; do check test -e "$d/$t"; done
grep -qF -- ".other.ninfer" "$work/err" && bad "a temp file of another output was reported" || ok
grep -qF -- "$foreign" "$work/err" && bad "a temp file of another host was reported" || ok

# --remove-stale alone: removes exactly the stale temp files of this output and says so
"$bin/ninfer-convert" -o "$d/m.ninfer" --remove-stale 2>"$work/err"
check test $? -eq 0
for t in $stale; do
    if grep -qF -- "removed stale temp file $d/$t (process $pid is gone)" "$work/err"; then ok; else
        bad "--remove-stale did not report removing $t: $(head -c 400 "$work/err")"
    fi
    check test ! -e "$d/$t"
done
check test -e "$d/.other.ninfer.$pid.AbCd12.tmp"
check test -e "$d/.m.ninfer.Xy12Zw.tmp"
check test -e "$d/notes.txt"
check test -e "$d/$foreign"
rm -f "$d/.other.ninfer.$pid.AbCd12.tmp" "$d/.m.ninfer.Xy12Zw.tmp" "$d/notes.txt" "$d/$foreign"
# and then the conversion runs (a run killed mid-write published nothing, or all of it)
if [ -e "$d/m.ninfer" ]; then force=--force; else force=; fi
convert "$d" $force -q 2>"$work/err" && ok || bad "convert after --remove-stale: $(head -c 300 "$work/err")"
"$bin/ninfer-verify" -q "$d/m.ninfer" && ok || bad "the artifact after --remove-stale does not verify"
check test -z "$(temps "$d")"

# --remove-stale before a conversion: the dead process's temp of a part goes, then it converts
d=$work/fake
mkdir "$d"
dead=$(sh -c 'echo $$')
touch "$d/.m.ninfer.part-0002.$dead@$nf_host.Q1w2E3.tmp"
convert "$d" --remove-stale 2>"$work/err"
check test $? -eq 0
contains_line() { grep -qF -- "$2" "$1" && ok || bad "$1 lacks '$2': $(head -c 300 "$1")"; }
contains_line "$work/err" "removed stale temp file $d/.m.ninfer.part-0002.$dead@$nf_host.Q1w2E3.tmp (process $dead is gone)"
check test -z "$(temps "$d")"
"$bin/ninfer-verify" -q "$d/m.ninfer" && ok || bad "the artifact converted with --remove-stale does not verify"

# a running conversion's temp files are neither reported nor removed
# (stopped at its first temp file; up to 5 runs, as above, until one is stopped with temp files)
for attempt in 1 2 3 4 5; do
    d=$work/live$attempt
    mkdir "$d"
    signal_mid_write STOP "$d"
    live=$(temps "$d")
    [ -n "$live" ] && break
    kill -CONT "$pid"
    wait "$pid" 2>/dev/null
done
live_dir=$d
check test -n "$live"
"$bin/ninfer-convert" -o "$d/m.ninfer" --remove-stale 2>"$work/err"
check test $? -eq 0
check test ! -s "$work/err"
check test "$(temps "$d")" = "$live"
kill -CONT "$pid"
wait "$pid" && ok || bad "the stopped conversion did not complete"
"$bin/ninfer-verify" -q "$d/m.ninfer" && ok || bad "the stopped conversion's artifact does not verify"
check test -z "$(temps "$d")"

# a part file without its entry (a kill between publishing the parts and the entry) is reported
# but never removed: a renamed entry may still use it
d=$work/orphan
mkdir "$d"
cp "$live_dir/m.ninfer.part-0001" "$d/"
"$bin/ninfer-convert" -o "$d/m.ninfer" --remove-stale 2>"$work/err"
check test $? -eq 0
contains_line "$work/err" "$d/m.ninfer.part-0001: a part file without its entry $d/m.ninfer"
check test -e "$d/m.ninfer.part-0001"

# --force over an existing artifact, killed at random points: the entry path holds the complete
# old artifact, the complete new one, or nothing; when nothing, the files the run set aside are
# reported, and renaming them back (as the warning says) restores the old artifact.
artifact_id() { od -An -tx1 -j16 -N16 "$1" | tr -d ' \n'; }
old_id=0123456789abcdef0123456789abcdef
new_id=fedcba9876543210fedcba9876543210
mkdir "$work/old"
convert "$work/old" --no-report --artifact-id $old_id -q || bad "writing the artifact to replace failed"
fkills=8
[ $slow = yes ] && fkills=0 # (timing only, as above)
fold=0
fnew=0
fabsent=0
for i in $(seq 1 $fkills); do
    d=$work/f$i
    mkdir "$d"
    cp "$work/old"/* "$d"/
    delay=$((RANDOM % (span + span / 2 + 1)))
    convert_bg "$d" --no-report --force --artifact-id $new_id
    pid=$!
    sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    if [ -e "$d/m.ninfer" ]; then
        if "$bin/ninfer-verify" -q "$d/m.ninfer" >"$work/vout" 2>&1; then ok; else
            bad "--force kill $i after $delay ms: a broken artifact: $(head -c 300 "$work/vout")"
        fi
        case $(artifact_id "$d/m.ninfer") in
        $old_id) fold=$((fold + 1)); ok ;;
        $new_id) fnew=$((fnew + 1)); ok ;;
        *) bad "--force kill $i: an artifact id that is neither the old nor the new one" ;;
        esac
    else
        fabsent=$((fabsent + 1))
        "$bin/ninfer-convert" -o "$d/m.ninfer" --remove-stale 2>"$work/err"
        check test $? -eq 0
        # "<set-aside file>: a file of the artifact ... set aside: rename it back to <name> to restore ..."
        sed -n 's/^ninfer-convert: warning: \(.*\): a file of the artifact .* rename it back to \(.*\) to restore.*$/\1 \2/p' \
            "$work/err" >"$work/restore"
        [ -s "$work/restore" ] && ok || bad "--force kill $i: nothing set aside is reported: $(head -c 400 "$work/err")"
        while read -r from to; do mv "$from" "$to"; done <"$work/restore"
        if "$bin/ninfer-verify" -q "$d/m.ninfer" >"$work/vout" 2>&1 && [ "$(artifact_id "$d/m.ninfer")" = $old_id ]; then
            ok
        else
            bad "--force kill $i after $delay ms: restoring the set-aside files does not give the old artifact back: $(head -c 300 "$work/vout")"
        fi
    fi
done
echo "--force kills: $fkills ($fold old, $fabsent absent and restored, $fnew new)"

# Crash points: the test copy of ninfer-convert (tests/cli/fault_hook.c, NINFER_IO_FAULT=OP:N:SIGKILL)
# kills itself at the N-th open, write (every 7th: the writes before publication all leave the
# same state), sync, link/rename or unlink of a small split conversion, plain and --force over
# an existing artifact with its report: each step of the write sequence is a crash point.  Same
# verdicts as above; with --force the old set comes back whole (report included) by renaming the
# set-aside files back whenever they are reported as restorable; after each, --remove-stale
# leaves no temp file.
faulty=$bin/../tests/bin/ninfer-convert-faults
small=$work/small
"$bin/ninfer-gen-checkpoint" "$small" --hidden 64 --intermediate 128 --layers 2 --vocab 64 >/dev/null
sargs=("$small" --format q8_g32_fp16 --max-file-bytes 24576 -j 1 -q)
mkdir "$work/cold" "$work/cclean"
"$faulty" "${sargs[@]}" -o "$work/cold/m.ninfer" --artifact-id $old_id || bad "small conversion failed"
NINFER_IO_COUNTS=$work/ccounts "$faulty" "${sargs[@]}" -o "$work/cclean/m.ninfer" || bad "small conversion failed"
cp "$work/cold"/* "$work/cclean"/
NINFER_IO_COUNTS=$work/fccounts "$faulty" "${sargs[@]}" -o "$work/cclean/m.ninfer" --force \
    --artifact-id $new_id || bad "small replacement failed"
[ "$(ls "$work/cold" | grep -c part)" -ge 2 ] && ok || bad "the small conversion is not split"
crashes=0
crash_outcomes=""
for mode in plain force; do
    counts=$work/ccounts
    [ $mode = force ] && counts=$work/fccounts
    for op in open write sync link unlink; do
        total=$(awk -v op="$op" '$1 == op { print $2 }' "$counts")
        step=1
        [ $op = write ] && step=7
        [ $op = write ] && [ $slow = yes ] && step=21
        for n in $(seq 1 $step "$total"); do
            crashes=$((crashes + 1))
            d=$work/crash
            rm -rf "$d"
            mkdir "$d"
            if [ $mode = force ]; then
                cp "$work/cold"/* "$d"/
                NINFER_IO_FAULT=$op:$n:SIGKILL "$faulty" "${sargs[@]}" -o "$d/m.ninfer" --force \
                    --artifact-id $new_id 2>/dev/null
            else
                NINFER_IO_FAULT=$op:$n:SIGKILL "$faulty" "${sargs[@]}" -o "$d/m.ninfer" 2>/dev/null
            fi
            rc=$?
            what="crash at $op $n/$total ($mode)"
            [ $rc -eq 137 ] || { bad "$what: exit $rc, not killed"; continue; }
            "$bin/ninfer-convert" -o "$d/m.ninfer" --remove-stale 2>"$work/err" || bad "$what: --remove-stale failed"
            sed -n 's/^ninfer-convert: warning: \(.*\): a file of the artifact .* rename it back to \(.*\) to restore.*$/\1 \2/p' \
                "$work/err" >"$work/restore"
            if [ $mode = force ] && [ -e "$d/m.ninfer" ] && [ -s "$work/restore" ]; then
                # killed after publishing, before committing: the new set is complete, and
                # renaming the set-aside files back (as the warnings say) gives the old set back
                "$bin/ninfer-verify" -q "$d/m.ninfer" >/dev/null 2>&1 && [ "$(artifact_id "$d/m.ninfer")" = $new_id ] ||
                    bad "$what: set-aside files reported beside an artifact that is not the complete new one"
                while read -r from to; do mv "$from" "$to"; done <"$work/restore"
                if [ "$(ls "$d" | tr '\n' ' ')" = "$(ls "$work/cold" | tr '\n' ' ')" ] &&
                    for f in "$work/cold"/*; do cmp -s "$f" "$d/${f##*/}" || exit 1; done; then
                    ok
                    state=restored-old
                else
                    bad "$what: renaming the set-aside files back does not give the old set back: $(ls "$d" | tr '\n' ' ')"
                fi
                left=$(temps "$d")
                [ -z "$left" ] && ok || bad "$what: --remove-stale left $left"
                case " $crash_outcomes " in *" $mode:$state "*) ;; *) crash_outcomes="$crash_outcomes $mode:$state" ;; esac
                continue
            fi
            if [ -e "$d/m.ninfer" ]; then
                "$bin/ninfer-verify" -q "$d/m.ninfer" >"$work/vout" 2>&1 && ok ||
                    bad "$what: a broken artifact: $(head -c 300 "$work/vout")"
                state=$(artifact_id "$d/m.ninfer")
                case $state in $old_id) state=old ;; $new_id) state=new ;; *) state=complete ;; esac
                [ $mode = plain ] && [ $state != complete ] && bad "$what: an artifact id from nowhere"
                # --force: the old set whole (report included), or the new artifact with no report
                # yet or the new one (a run killed after its commit point)
                if [ $state = old ]; then
                    cmp -s "$work/cold/m.ninfer.conversion.json" "$d/m.ninfer.conversion.json" && ok ||
                        bad "$what: the old artifact is back without its report"
                elif [ $state = new ] && ! grep -q "$new_id" "$d/m.ninfer.conversion.json"; then
                    bad "$what: the new artifact beside a report that is not its own"
                fi
            else
                state=absent
                if [ $mode = force ]; then
                    while read -r from to; do mv "$from" "$to"; done <"$work/restore"
                    if "$bin/ninfer-verify" -q "$d/m.ninfer" >/dev/null 2>&1 && [ "$(artifact_id "$d/m.ninfer")" = $old_id ] &&
                        cmp -s "$work/cold/m.ninfer.conversion.json" "$d/m.ninfer.conversion.json"; then
                        ok
                        state=restored
                    else
                        bad "$what: the old artifact cannot be restored from what was set aside: $(head -c 300 "$work/err")"
                    fi
                elif [ -e "$d/m.ninfer.conversion.json" ]; then
                    bad "$what: a report without its artifact"
                fi
            fi
            left=$(temps "$d")
            [ -z "$left" ] && ok || bad "$what: --remove-stale left $left"
            case " $crash_outcomes " in *" $mode:$state "*) ;; *) crash_outcomes="$crash_outcomes $mode:$state" ;; esac
        done
    done
done
echo "crash points: $crashes (outcomes:$crash_outcomes)"

# usage: cleanup-only mode takes no conversion options
"$bin/ninfer-convert" -o "$d/m.ninfer" --remove-stale --format q8_g32_fp16 >/dev/null 2>&1
check test $? -eq 2

finish "sigkill"
