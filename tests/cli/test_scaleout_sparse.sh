#!/usr/bin/env bash
# The scale-out measurement of bench/README.md ("Scale-out at 1T weights") at a small scale, so
# its tools keep working: ninfer-gen-checkpoint --experts --shards --sparse writes a sharded MoE
# checkpoint whose data are holes, a plan is made over it, the entry's task runs for real,
# bench/scaleout_standins.py stands in for the other tasks, and --assemble publishes.
. "$(dirname "$0")/lib.sh" "$@"

conv=$bin/ninfer-convert
mkdir "$work/w" && cd "$work/w" || exit 1 # ($work/out and $work/err are run's)
run 0 "$bin/ninfer-gen-checkpoint" ck --hidden 128 --layers 3 --experts 8 --intermediate 64 --vocab 256 --shards 3 --sparse
contains "$work/out" "(96 tensors, 1564416 bytes of bf16 weights, the data as holes)"
check test -f ck/model.safetensors.index.json
check test -f ck/model-00003-of-00003.safetensors
check test ! -e ck/model.safetensors
# the data are holes: the shards take (almost) no blocks
check test "$(du -sk ck | cut -f1)" -lt 200
# the generator refuses what GGUF does not do here
run 2 "$bin/ninfer-gen-checkpoint" g --gguf --experts 2
# without --sparse the same sharded layout holds real values: a dense run converts it
run 0 "$bin/ninfer-gen-checkpoint" dense --hidden 128 --layers 1 --experts 2 --intermediate 64 --vocab 64 --shards 2
mkdir d
run 0 "$conv" dense -o d/m.ninfer --format q8_g32_fp16 -q
run 0 "$bin/ninfer-verify" d/m.ninfer -q

mkdir out
run 0 "$conv" -r "$top/bench/scaleout-1t.yaml" --source base=ck -o out/m.ninfer --max-file-bytes 60000 \
    --artifact-id 00112233445566778899aabbccddeeff --plan-out plan.json --tasks 512
check test "$(cat "$work/out")" -gt 5
run 1 python3 "$top/bench/scaleout_standins.py" plan.json
contains "$work/err" "no receipt of the entry"
run 0 "$conv" --plan plan.json --task 0 -q
run 0 python3 "$top/bench/scaleout_standins.py" plan.json
run 0 "$conv" --plan plan.json --assemble
contains "$work/err" "assembled out/m.ninfer (97 objects)"
check test -f out/m.ninfer.conversion.json
check test -z "$(ls out | grep receipt)"

# a directory of more than 2 MiB (4,632 tensors): the assembler compares the staged entry with the
# plan's image a MiB at a time, as the tasks left it and, after an assembly that failed once the
# checksums were in, with the checksums; a byte changed past the second MiB is found either way
run 0 "$bin/ninfer-gen-checkpoint" big --hidden 64 --layers 3 --experts 512 --intermediate 32 --vocab 64 --shards 2 \
    --sparse
mkdir bo
run 0 "$conv" -r "$top/bench/scaleout-1t.yaml" --source base=big -o bo/m.ninfer --max-file-bytes 4000000 \
    --artifact-id 00112233445566778899aabbccddeeff --plan-out big.json --tasks 512
run 0 "$conv" --plan big.json --task 0 -q
run 0 python3 "$top/bench/scaleout_standins.py" big.json
check python3 -c 'import struct,sys; assert struct.unpack("<Q", open(sys.argv[1], "rb").read(16)[8:])[0] > 2300000' \
    bo/m.ninfer.entry-staged
cp bo/m.ninfer.entry-staged staged.keep
printf 'X' | dd of=bo/m.ninfer.entry-staged bs=1 seek=2250000 conv=notrunc 2>/dev/null
run 1 "$conv" --plan big.json --assemble
contains "$work/err" "its header and directory are not this plan's"
check test ! -e bo/m.ninfer
cp staged.keep bo/m.ninfer.entry-staged
faulty=$bin/../tests/bin/ninfer-convert-faults
if [ -x "$faulty" ]; then
    # the second sync is the staged entry's, its checksums written
    run 3 env NINFER_IO_FAULT=sync:2:EIO "$faulty" --plan big.json --assemble -q
    check test ! -e bo/m.ninfer
    check test -n "$(cmp bo/m.ninfer.entry-staged staged.keep 2>&1)"
    cp bo/m.ninfer.entry-staged staged.filled
    printf 'X' | dd of=bo/m.ninfer.entry-staged bs=1 seek=2250000 conv=notrunc 2>/dev/null
    run 1 "$conv" --plan big.json --assemble
    contains "$work/err" "its header and directory are not this plan's"
    cp staged.filled bo/m.ninfer.entry-staged
else
    echo "SKIP the failing assembly: no $faulty"
fi
run 0 "$conv" --plan big.json --assemble
contains "$work/err" "assembled bo/m.ninfer (4633 objects)"
run 0 "$bin/ninfer-verify" bo/m.ninfer --quick -q
finish test_scaleout_sparse
