#!/usr/bin/env bash
# ninfer-dequant interrupted (docs/security.md 7.1, F12): SIGINT, SIGTERM and SIGHUP set a flag that the write
# loops check, as in ninfer-convert; the run then removes its temp file, publishes nothing and
# exits 3 ("interrupted").  A run killed with SIGKILL cannot clean up: the next run for the same
# OUT names its temp file in a warning, and `ninfer-dequant -o OUT --remove-stale` removes
# exactly the stale temp files of OUT (process gone), never those of a running process or other
# names.
# Each signal is delivered while the run is stopped (SIGSTOP) with its temp file present, so it
# surely lands before the publication: no timing is asserted.
# usage: test_outputs_signals.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
temps() { (cd "$1" && ls -A | grep -E '\.tmp$' | tr '\n' ' '); }

"$bin/ninfer-gen-checkpoint" "$work/ck" --hidden 512 --intermediate 1024 --layers 2 --vocab 32000 >/dev/null ||
    { echo "FAIL generator"; exit 1; }
art=$work/m.ninfer
"$bin/ninfer-convert" "$work/ck" -o "$art" --format q8_g32_fp16 --no-report -q || { echo "FAIL convert"; exit 1; }
d=$work/d
mkdir "$d"

# stopped_run ARGS...: start `ninfer-dequant ARGS...` (into $d), stop it once its temp file
# exists; sets pid (0 when the run ended before it could be stopped with its temp file there)
stopped_run() {
    ( exec "$bin/ninfer-dequant" "$art" "$@" 2>"$work/err" ) &
    pid=$!
    mine() { ls -A "$d" | grep -qE "^\.all\.safetensors\.$pid@$nf_host\.......\.tmp$"; }
    while kill -0 $pid 2>/dev/null && ! mine; do :; done
    kill -STOP $pid 2>/dev/null
    if mine; then return; fi
    kill -CONT $pid 2>/dev/null
    wait $pid 2>/dev/null
    pid=0
}

for sig in INT TERM HUP; do
    caught=no
    for attempt in 1 2 3 4 5; do
        rm -f "$d/all.safetensors"
        stopped_run --all -o "$d/all.safetensors" --threads 1
        [ $pid -ne 0 ] || continue
        caught=yes
        kill -$sig $pid
        kill -CONT $pid
        wait $pid
        rc=$?
        check test $rc -eq 3
        contains "$work/err" "interrupted"
        check test -z "$(temps "$d")"
        check test ! -e "$d/all.safetensors"
        break
    done
    [ $caught = yes ] && ok || bad "SIG$sig: the run never stopped with its temp file present in 5 attempts"
done

# the same for one tensor on several threads, and into a FIFO (a stream: nothing to remove, but
# the run stops and exits 3 instead of dying)
mkfifo "$d/fifo"
sleep 1000 >"$d/fifo" &  # a writer so that the reader below never sees end of file early
holder=$!
exec 7<"$d/fifo"         # the reader: opened, never read, so the dequant blocks in write()
( exec 7<&- "$bin/ninfer-dequant" "$art" lm_head.weight -o "$d/fifo" --threads 2 2>"$work/err" ) &
pid=$!
# once ninfer-dequant itself (not the subshell before its exec) has the FIFO open: its signal
# handlers are in place by then
opened() {
    [ "$(readlink /proc/$pid/exe 2>/dev/null)" = "$(readlink -f "$bin/ninfer-dequant")" ] &&
        ls -l /proc/$pid/fd 2>/dev/null | grep -qF -- "$d/fifo"
}
while kill -0 $pid 2>/dev/null && ! opened; do :; done
kill -INT $pid
wait $pid
check test $? -eq 3
contains "$work/err" "interrupted"
exec 7<&-
kill $holder 2>/dev/null
wait $holder 2>/dev/null
rm -f "$d/fifo"

# killed_run: a run killed with SIGKILL while its temp file is there (a few attempts); pid as
# stopped_run sets it
killed_run() {
    for attempt in 1 2 3 4 5; do
        stopped_run --all -o "$d/all.safetensors" --threads 1
        [ $pid -ne 0 ] || continue
        kill -KILL $pid
        wait $pid 2>/dev/null
        return
    done
}

# SIGKILL: the temp file stays; the next run warns about it; --remove-stale removes it
killed_run
if [ $pid -ne 0 ]; then
    stale=$(temps "$d")
    check test -n "$stale"
    live=".all.safetensors.$$.AbCd12.tmp" # this shell is alive: never reported nor removed
    touch "$d/$live" "$d/.other.safetensors.$pid.AbCd12.tmp" "$d/notes.txt"
    run 0 "$bin/ninfer-dequant" "$art" model.norm.weight -o "$d/all.safetensors"
    for t in $stale; do
        contains "$work/err" "$d/$t: temp file of an interrupted run (process $pid is gone); --remove-stale removes it"
        check test -e "$d/$t"
    done
    grep -qF -- "$live" "$work/err" && bad "the temp file of a running process was reported" || ok
    run 0 "$bin/ninfer-dequant" -o "$d/all.safetensors" --remove-stale
    for t in $stale; do
        contains "$work/err" "removed stale temp file $d/$t (process $pid is gone)"
        check test ! -e "$d/$t"
    done
    for f in "$live" ".other.safetensors.$pid.AbCd12.tmp" notes.txt all.safetensors; do check test -e "$d/$f"; done
    # with a tensor to write, it removes and then writes
    killed_run
    check test $pid -ne 0
    run 0 "$bin/ninfer-dequant" "$art" model.norm.weight -o "$d/all.safetensors" --remove-stale
    contains "$work/err" "removed stale temp file"
    check test "$(temps "$d" | tr ' ' '\n' | grep '^\.all' | tr '\n' ' ')" = "$live "
    run 0 "$bin/ninfer-dequant" -o "$d/all.safetensors" --remove-stale # nothing stale: nothing said
    check test ! -s "$work/err"
    # usage: --remove-stale needs -o
    run 2 "$bin/ninfer-dequant" --remove-stale
else
    bad "the run never stopped with its temp file present"
fi

# One signal policy for every program (lib/src/outputs/out_signals.c, docs/security.md 7.1 F12): a signal ignored
# when the program starts stays ignored, so `nohup ninfer-convert ...` survives a hang-up (it used
# to install its handler over the ignored SIGHUP and exit 3; issue 23, item 14).  The test copy of
# ninfer-convert stops itself at a write (its handlers are in place by then: the run is
# encoding); the signal is sent while it is stopped, so no timing is asserted.
faulty=$bin/../tests/bin/ninfer-convert-faults
# stopped_at OP:N ARGS...: start the test copy of ninfer-convert (SIGHUP ignored when $ignore_hup
# is yes) and wait until it has stopped itself at call N of OP; sets pid (0: it ended first)
stopped_at() {
    local fault=$1; shift
    if [ "$ignore_hup" = yes ]; then
        ( trap '' HUP; NINFER_IO_FAULT=$fault:SIGSTOP exec "$faulty" "$@" 2>"$work/err" ) &
    else
        ( NINFER_IO_FAULT=$fault:SIGSTOP exec "$faulty" "$@" 2>"$work/err" ) &
    fi
    pid=$!
    while kill -0 $pid 2>/dev/null && ! ps -o stat= -p $pid | grep -q '^T'; do sleep 0.01; done
    ps -o stat= -p $pid | grep -q '^T' || { wait $pid; pid=0; }
}
# (stopped in the middle of its writes: encoding, before the publication)
mkdir "$work/h"
NINFER_IO_COUNTS=$work/counts "$faulty" "$work/ck" -o "$work/h/m.ninfer" --format q8_g32_fp16 --no-report -q -j 1 ||
    bad "counting run failed"
writes=$(awk '$1 == "write" { print $2 }' "$work/counts")
for ignore_hup in yes no; do
    rm -rf "$work/h" && mkdir "$work/h"
    stopped_at write:$((writes / 2)) "$work/ck" -o "$work/h/m.ninfer" --format q8_g32_fp16 --no-report -q -j 1
    if [ $pid -ne 0 ]; then
        kill -HUP $pid
        kill -CONT $pid
        wait $pid
        rc=$?
        if [ $ignore_hup = yes ]; then
            check test $rc -eq 0
            check test -e "$work/h/m.ninfer"
        else
            check test $rc -eq 3
            contains "$work/err" "interrupted"
            check test ! -e "$work/h/m.ninfer"
        fi
        check test -z "$(temps "$work/h")"
    else
        bad "convert (SIGHUP ignored: $ignore_hup) never stopped at write $((writes / 2))"
    fi
done
# the same policy in ninfer-dequant
( trap '' HUP; exec "$bin/ninfer-dequant" "$art" --all -o "$d/all.safetensors" --threads 1 2>"$work/err" ) &
pid=$!
# (signalled once it is ninfer-dequant, which inherited the ignored SIGHUP; before, the subshell
# may not have ignored it yet)
while kill -0 $pid 2>/dev/null && [ "$(readlink /proc/$pid/exe 2>/dev/null)" != "$(readlink -f "$bin/ninfer-dequant")" ]; do :; done
while kill -0 $pid 2>/dev/null; do kill -HUP $pid 2>/dev/null; sleep 0.01; done
wait $pid
check test $? -eq 0

# --plan-out interrupted (SIGTERM, SIGINT) leaves no temp file beside the plan, and no plan (issue 23,
# item 6): the run stops at the plan's sync, is signalled, and exits 3 with its temp file removed
for sig in TERM INT; do
    ignore_hup=no
    rm -rf "$work/p" && mkdir "$work/p"
    stopped_at sync:1 "$work/ck" -o "$work/p/m.ninfer" --format q8_g32_fp16 --plan-out "$work/p/plan.json"
    if [ $pid -ne 0 ]; then
        check test -n "$(temps "$work/p")" # (the plan's temp file, stopped at its sync)
        kill -$sig $pid
        kill -CONT $pid
        wait $pid
        check test $? -eq 3
        contains "$work/err" "interrupted"
        check test -z "$(temps "$work/p")"
        check test ! -e "$work/p/plan.json"
    else
        bad "--plan-out never stopped at its first sync"
    fi
done

finish "outputs signals"
