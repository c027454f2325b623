#!/usr/bin/env bash
# examples/parallel.sh (examples/README.md): the tasks of a plan run by GNU parallel, then
# assembled, give byte for byte the files of one ninfer-convert run; with a task killed
# (SIGKILL) mid-write, the first run fails, a --resume run completes, still byte-identical, and
# no temp file is left (docs/scale-out.md).  GNU parallel is installed with apt-get when missing
# (as root); otherwise the test is skipped.
# usage: test_parallel.sh BIN_DIR DATA_DIR
. "$(dirname "$0")/lib.sh" "$@"

if ! command -v parallel >/dev/null; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "SKIP GNU parallel is not installed and installing it needs root (uid $(id -u))"; exit 0
    fi
    if ! command -v apt-get >/dev/null; then
        echo "SKIP GNU parallel is not installed and there is no apt-get to install it"; exit 0
    fi
    { DEBIAN_FRONTEND=noninteractive apt-get install -y parallel ||
        { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y parallel; }; } >"$work/apt.log" 2>&1
    if ! command -v parallel >/dev/null; then
        echo "SKIP GNU parallel is not installed and apt-get install parallel failed: $(tail -c 300 "$work/apt.log")"
        exit 0
    fi
fi
# GNU parallel itself may be another program of that name (moreutils' parallel)
parallel --version 2>/dev/null | grep -q 'GNU parallel' ||
    { echo "SKIP '$(command -v parallel)' is not GNU parallel"; exit 0; }
command -v python3 >/dev/null || { echo "SKIP python3 (to read a plan's task count) is not installed"; exit 0; }

conv=$bin/ninfer-convert
ex=$top/examples/parallel.sh
mkdir "$work/w" && cd "$work/w" || exit 1 # ($work/out and $work/err are run's)
"$bin/ninfer-gen-checkpoint" ck --hidden 256 --kv-hidden 256 --intermediate 512 --layers 3 --vocab 64 >/dev/null
id=00112233445566778899aabbccddeeff
args=(ck -o out/m.ninfer --format q8_g32_fp16 --max-file-bytes 40000 --artifact-id $id)

# the reference: one run, set aside
mkdir out
"$conv" "${args[@]}" -q || bad "the one-machine run failed"
mv out ref
nparts=$(ls ref | grep -c '^m\.ninfer\.part-')
[ "$nparts" -ge 16 ] && ok || bad "the reference has $nparts parts, expected many"
same_as_ref() { # LABEL: out/ holds exactly ref/'s files, byte for byte, and no temp file
    local d=0 f
    for f in ref/*; do cmp -s "$f" "out/${f#ref/}" || { d=1; bad "$1: out/${f#ref/} differs from the one-machine run"; }; done
    [ "$(ls -A out | sort)" = "$(ls ref | sort)" ] ||
        { d=1; bad "$1: out/ holds $(ls -A out | tr '\n' ' '), not $(ls ref | tr '\n' ' ')"; }
    [ $d -eq 0 ] && ok
}

# 1. the plan made by the script from the convert arguments, 8 tasks, 2 at a time
mkdir out
run 0 "$ex" --convert "$conv" -j 2 -t 1 --plan plan.json --tasks 8 --verify -- "${args[@]}"
same_as_ref "parallel.sh"
check test "$(python3 -c 'import json; print(len(json.load(open("plan.json"))["tasks"]))')" = 8
check test "$(awk -F'\t' 'NR > 1 && $7 == 0 && $8 == 0' plan.json.joblog | wc -l)" = 8
contains "$work/err" "assembled out/m.ninfer"
# usage errors of the script: exit 2
run 2 "$ex" --convert "$conv" --tasks 8
contains "$work/err" "--plan PLAN.json is required"
run 2 "$ex" --convert "$conv" --plan plan.json --retries x

# 2. a plan made already; task 3's first try is SIGKILLed mid-write, with no retry (--retries 1):
#    the run fails with exit 3 (worth retrying) and publishes nothing; --resume completes it.
#    The first try runs the test copy of ninfer-convert, which stops itself (SIGSTOP) at its 3rd
#    write (tests/cli/fault_hook.c), so the kill surely lands while the task's temp files exist.
faulty=$bin/../tests/bin/ninfer-convert-faults
rm -rf out && mkdir out
run 0 "$conv" "${args[@]}" --plan-out "$PWD/plan2.json" --tasks 8 -q
if [ -x "$faulty" ]; then
    cat >convert.sh <<SH
#!/bin/sh
case " \$* " in
*" --task 3 "*) if mkdir "$PWD/tried3" 2>/dev/null; then
        NINFER_IO_FAULT=write:3:SIGSTOP exec "$faulty" "\$@"; fi ;;
esac
exec "$conv" "\$@"
SH
    chmod +x convert.sh
    # wait for the stopped task (at most ~20 s), SIGKILL it by its pid
    ( for _ in $(seq 400); do
        for p in $(pgrep -f -- "ninfer-convert-faults --plan $PWD/plan2.json --task 3 "); do
            if [ "$(ps -o stat= -p "$p" 2>/dev/null | cut -c1)" = T ]; then
                ls -A out | grep -q '\.tmp$' && echo temp >killed
                kill -KILL "$p" && echo "$p" >>killed; exit 0
            fi
        done
        sleep 0.05
    done ) &
    killer=$!
    run 3 "$ex" --convert ./convert.sh -j 2 -t 1 --retries 1 --plan plan2.json
    wait $killer
    check test -s killed
    contains killed temp
    contains "$work/err" "1 of 8 tasks failed (exit 3 or killed); rerun with --resume"
    check test ! -e out/m.ninfer
    check test "$(awk -F'\t' 'NR > 1 && $1 == 4 { print $8 }' plan2.json.joblog)" = 9
    # the resume reruns task 3 only (job 4), whose --remove-stale clears the killed run's temp files
    run 0 "$ex" --convert ./convert.sh -j 2 -t 1 --resume --plan plan2.json
    check test "$(awk -F'\t' 'NR > 1' plan2.json.joblog | wc -l)" = 9
    check test "$(awk -F'\t' 'NR > 1 { s = $1 } END { print s }' plan2.json.joblog)" = 4
    same_as_ref "killed, then --resume"
else
    echo "SKIP the kill and --resume: no test copy of ninfer-convert at $faulty"
fi

# 3. a task that fails for good (exit 1: the sources changed since the plan) is reported as such
rm -rf out && mkdir out
run 0 "$conv" "${args[@]}" --plan-out plan3.json --tasks 2 -q
cp ck/model.safetensors ck.orig
printf '\001' | dd of=ck/model.safetensors bs=1 seek=$(( $(stat -c %s ck/model.safetensors) - 10 )) conv=notrunc 2>/dev/null
run 1 "$ex" --convert "$conv" -t 1 --retries 2 --plan plan3.json
contains "$work/err" "changed since the plan was made"
contains "$work/err" "not worth retrying"
check test ! -e out/m.ninfer
cp ck.orig ck/model.safetensors
finish test_parallel
