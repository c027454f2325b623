#!/usr/bin/env bash
# --threads of ninfer-verify and ninfer-dequant: the report (text and JSON, problem order, exit
# status) and the output bytes are the same for every thread count, on a valid artifact, a split
# one and a damaged one (problems in several objects), with tensors of several row chunks.
# usage: test_threads.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

# gate/up/down are [1152, 1024]: 1.18 M values, two row chunks of dequant's 2^20-value chunks
ck=$work/ck
"$bin/ninfer-gen-checkpoint" "$ck" --hidden 1024 --kv-hidden 256 --intermediate 1152 --layers 2 --vocab 300 >/dev/null ||
    { echo "FAIL generator"; exit 1; }
cat >"$work/r.yaml" <<'YAML'
recipe: 1
sources:
  base: ./ck
output:
  name: threads-test
defaults: {format: bf16}
rules:
  - match: "model.layers.*.self_attn.*_proj.weight"
    format: q4_g64_fp16
    method: grouped_absmax
  - match: "model.layers.*.mlp.*_proj.weight"
    format: fp8_e4m3fn_row_bf16
    method: fp8_row_maxabs
  - match: lm_head.weight
    format: q8_g32_fp16
  - match: ["*norm*"]
    format: fp32
YAML
run 0 "$bin/ninfer-convert" -r "$work/r.yaml" --source base="$ck" -o "$work/m.ninfer" --threads 2 --no-report
mkdir "$work/split"
run 0 "$bin/ninfer-convert" -r "$work/r.yaml" --source base="$ck" -o "$work/split/m.ninfer" --threads 1 --no-report \
    --max-file-bytes 3000000

# the conversion report's error statistics: the same figures for every thread count
for t in 1 2 3; do
    mkdir "$work/rep$t"
    run 0 "$bin/ninfer-convert" -r "$work/r.yaml" --source base="$ck" -o "$work/rep$t/m.ninfer" --threads "$t"
done
python3 - "$work"/rep1/m.ninfer.conversion.json "$work"/rep2/m.ninfer.conversion.json \
    "$work"/rep3/m.ninfer.conversion.json <<'PY' && ok || bad "conversion reports differ across thread counts"
import json, sys
docs = [json.load(open(p)) for p in sys.argv[1:]]
assert all(d['objects'] == docs[0]['objects'] for d in docs), 'objects differ'
o = {x['object']: x for x in docs[0]['objects']}
assert o['model.layers.0.mlp.up_proj.weight']['values_compared'] == 1152 * 1024
assert 20 < o['model.layers.0.mlp.up_proj.weight']['snr_db'] < 40  # fp8 rows
assert o['model.norm.weight']['max_abs_error'] == 0
PY

# verify: same stdout, stderr and status for every thread count
verify_all() { # NAME STATUS QUICK_STATUS ARTIFACT
    local name=$1 want=$2 qwant=$3 art=$4
    for t in 1 2 3 8; do
        run "$want" "$bin/ninfer-verify" --threads "$t" "$art"
        cp "$work/out" "$work/$name.v$t.txt"
        run "$want" "$bin/ninfer-verify" -j "$t" --json "$art"
        cp "$work/out" "$work/$name.v$t.json"
        run "$qwant" "$bin/ninfer-verify" --threads "$t" --quick "$art"
        cp "$work/out" "$work/$name.q$t.txt"
    done
    run "$want" "$bin/ninfer-verify" "$art" # the default: every core
    cp "$work/out" "$work/$name.vd.txt"
    for t in 2 3 8 d; do
        [ "$t" = d ] || { same "$work/$name.v1.json" "$work/$name.v$t.json"; same "$work/$name.q1.txt" "$work/$name.q$t.txt"; }
        same "$work/$name.v1.txt" "$work/$name.v$t.txt"
    done
}
verify_all valid 0 0 "$work/m.ninfer"
verify_all split 0 0 "$work/split/m.ninfer"

# damage: bytes changed inside several objects (word problems and checksum mismatches in
# several objects at once) and in a gap
cp "$work/m.ninfer" "$work/bad.ninfer"
python3 - "$work/bad.ninfer" <<'PY' || bad "damaging the artifact"
import os, sys
path = sys.argv[1]
size = os.path.getsize(path)
with open(path, 'r+b') as f:
    # every 1/16 of the file past the first 64 KiB (the directory): 0xFF bytes (E4M3FN NaN codes,
    # odd q4 nibbles, NaN-ish scales: word problems, and checksum mismatches everywhere)
    for k in range(1, 16):
        at = 65536 + (size - 65536) * k // 16
        f.seek(at)
        f.write(b'\xff' * 64)
PY
verify_all bad 1 0 "$work/bad.ninfer" # the payload is not read by --quick
python3 - "$work/bad.v1.json" <<'PY' && ok || bad "damaged artifact: problems in several objects"
import json, sys
r = json.load(open(sys.argv[1]))
objs = {p['object'] for p in r['problems']}
assert not r['valid'] and len(r['problems']) >= 5 and len(objs) >= 4, r['problems'][:3]
assert {'words', 'checksums'} <= {p['check'] for p in r['problems']}
PY

# dequant: the same bytes for every thread count
for t in 1 2 3 5; do
    run 0 "$bin/ninfer-dequant" "$work/m.ninfer" --all -o "$work/all$t.safetensors" --threads "$t"
    run 0 "$bin/ninfer-dequant" "$work/split/m.ninfer" --all -o "$work/sall$t.safetensors" -j "$t" --to bf16
    run 0 "$bin/ninfer-dequant" "$work/m.ninfer" model.layers.1.mlp.up_proj.weight --format npy --rows 3:1151 \
        --to f16 -o "$work/up$t.npy" --threads "$t"
    run 0 "$bin/ninfer-dequant" "$work/m.ninfer" model.layers.0.mlp.down_proj.weight -o "$work/down$t.raw" --threads "$t"
    run 0 "$bin/ninfer-dequant" "$work/m.ninfer" model.embed_tokens.weight --to native -o "$work/emb$t.raw" --threads "$t"
    run 0 "$bin/ninfer-dequant" "$work/m.ninfer" model.layers.0.self_attn.q_proj.weight --format text --rows 0:5 \
        -o "$work/q$t.txt" --threads "$t"
done
run 0 "$bin/ninfer-dequant" "$work/m.ninfer" --all -o "$work/alld.safetensors"
for t in 2 3 5; do
    for f in all%s.safetensors sall%s.safetensors up%s.npy down%s.raw emb%s.raw q%s.txt; do
        # shellcheck disable=SC2059
        same "$work/$(printf "$f" 1)" "$work/$(printf "$f" "$t")"
    done
done
same "$work/all1.safetensors" "$work/alld.safetensors"
# threads that cannot start: the ones that did (or the calling thread alone) decode everything,
# the same bytes (a pthread_create shim failing every call after the first PTFAIL-1)
cat >"$work/ptfail.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *), void *arg)
{
    static int calls;
    const char *n = getenv("PTFAIL");
    if (n && ++calls >= atoi(n)) return EAGAIN;
    int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
        (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(RTLD_NEXT, "pthread_create");
    return real(t, a, f, arg);
}
C
if cc -shared -fPIC -o "$work/ptfail.so" "$work/ptfail.c" -ldl 2>"$work/cc.err"; then
    for n in 1 2; do
        PTFAIL=$n LD_PRELOAD="$work/ptfail.so" ASAN_OPTIONS="${ASAN_OPTIONS:-}:verify_asan_link_order=0" \
            run 0 "$bin/ninfer-dequant" "$work/m.ninfer" --all -o "$work/pt$n.safetensors" --threads 3
        same "$work/all1.safetensors" "$work/pt$n.safetensors"
    done
else
    echo "note: no C compiler for the pthread_create shim: $(head -c 200 "$work/cc.err")"
fi

# damaged words decode the same way whatever the thread count (dequant does not check words)
for t in 1 2 4; do
    run 0 "$bin/ninfer-dequant" "$work/bad.ninfer" --all -o "$work/bad$t.safetensors" --threads "$t"
done
same "$work/bad1.safetensors" "$work/bad2.safetensors"
same "$work/bad1.safetensors" "$work/bad4.safetensors"

# refusals
run 2 "$bin/ninfer-verify" --threads 0 "$work/m.ninfer"
run 2 "$bin/ninfer-verify" --threads x "$work/m.ninfer"
run 2 "$bin/ninfer-dequant" "$work/m.ninfer" --all -o "$work/x.safetensors" --threads 1025
contains "$work/err" "--threads takes a number from 1 to 1024, not '1025'"
run 2 "$bin/ninfer-convert" "$work/m.ninfer" -o "$work/x.ninfer" --format fp32 --threads 1025
contains "$work/err" "--threads takes a number from 1 to 1024, not '1025'"
run 2 "$bin/ninfer-verify" -j 1025 "$work/m.ninfer"
contains "$work/err" "--threads takes a number from 1 to 1024, not '1025'"

finish "threads"
