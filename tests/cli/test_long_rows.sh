#!/usr/bin/env bash
# Rows longer than a chunk (docs/ninfer-convert.md, docs/ninfer-dequant.md "Long rows"): a
# [2, 2^24] BF16 tensor (64 MB) is converted and dequantized in spans of its rows, so the peak
# RSS stays far below one row's size (a row of 2^24 values is 64 MiB as binary32); the bytes
# and values are those of the whole rows: a fp32 cast dequantizes to the source values exactly,
# a q4 conversion is the same artifact whatever --chunk-values, and verify --against passes.
# The same for a quantized checkpoint's weight (docs/dialects.md "Values": requantized by
# convert, re-derived by verify --against, compared by diff), for a budget's measuring pass
# (docs/recipes.md "Budgets", --dry-run) and for nvfp4 objects (spans of 128-row bands: import,
# dequant, diff, verify --against): under the limit, with the whole rows' bytes and figures.
# usage: test_long_rows.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

# Rows of 2^24 values: one row (64 MiB as binary32) is more than the peak RSS bound below.  Under
# ASan+UBSan (NINFER_TEST_CFLAGS has -fsanitize) the bound is not checked (ASan's memory, not the
# program's) and rows of 2^20 values take the same paths -- 4 spans of 2^18 a row, 256 with
# --chunk-values 4096 -- in a sixteenth of the sanitized time.
cols=$((1 << 24))
case "${NINFER_TEST_CFLAGS:-}" in *-fsanitize*) cols=$((1 << 20)) ;; esac
# the checkpoint: one tensor of 2 rows of $cols BF16 values, and config.json
python3 "$(dirname "$0")/gen_long_rows.py" "$work/ck" long.weight 2 "$cols" || bad "the checkpoint generator"
# peak RSS (KiB) of a command, from wait4; -1 unless it exits with $STATUS (default 0)
rss() {
    python3 - "$@" <<'PY'
import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=open(os.environ.get('ERRFILE', '/dev/null'), 'w'))
_, status, ru = os.wait4(p.pid, 0)
print(ru.ru_maxrss if os.waitstatus_to_exitcode(status) == int(os.environ.get('STATUS', '0')) else -1)
PY
}
export ERRFILE=$work/err
limit=$((40 * 1024)) # KiB: one row alone is 32 MiB of BF16, 64 MiB as binary32
# Under ASan+UBSan (NINFER_TEST_CFLAGS has -fsanitize) the peak RSS is ASan's (shadow memory,
# quarantine, redzones), not the program's: there the bounds are not checked (rss prints 1 for
# a run with the wanted status) and the runs made only to measure one are left out; every run
# that writes or checks bytes and figures runs sanitized.
sanitized=no
case "${NINFER_TEST_CFLAGS:-}" in *-fsanitize*) sanitized=yes ;; esac
if [ $sanitized = yes ]; then
    echo "note: sanitized build: peak RSS bounds not checked (ASan's memory, not the program's)"
    rss() { "$@" >/dev/null 2>"$ERRFILE"; [ $? -eq "${STATUS:-0}" ] && echo 1 || echo -1; }
fi
got=$(rss "$bin/ninfer-convert" "$work/ck" -o "$work/q4.ninfer" --format q4_g64_fp16 --threads 2 --progress=never)
[ "$got" -gt 0 ] && [ "$got" -lt "$limit" ] && ok || bad "convert q4: peak RSS $got KiB (limit $limit): $(head -c 300 "$work/err")"
got=$(rss "$bin/ninfer-convert" "$work/ck" -o "$work/f32.ninfer" --format fp32 --threads 2 --progress=never)
[ "$got" -gt 0 ] && [ "$got" -lt "$limit" ] && ok || bad "convert fp32: peak RSS $got KiB: $(head -c 300 "$work/err")"
got=$(rss "$bin/ninfer-dequant" "$work/f32.ninfer" long.weight -o "$work/f32.raw" --threads 2)
[ "$got" -gt 0 ] && [ "$got" -lt "$limit" ] && ok || bad "dequant: peak RSS $got KiB: $(head -c 300 "$work/err")"
got=$(rss "$bin/ninfer-dequant" "$work/q4.ninfer" --all -o "$work/q4.safetensors")
[ "$got" -gt 0 ] && [ "$got" -lt "$limit" ] && ok || bad "dequant --all: peak RSS $got KiB: $(head -c 300 "$work/err")"
# inspect --tensor --stats reads long rows in spans too, for artifacts and checkpoints alike
for f in "$work/q4.ninfer" "$work/f32.ninfer" "$work/ck" "$work/q4.safetensors"; do
    if [ $sanitized = no ]; then
        got=$(rss "$bin/ninfer-inspect" "$f" --tensor long.weight --stats --json)
        [ "$got" -gt 0 ] && [ "$got" -lt "$limit" ] && ok || bad "inspect --stats $f: peak RSS $got KiB: $(head -c 300 "$work/err")"
    fi
    "$bin/ninfer-inspect" "$f" --tensor long.weight --stats --json >"$work/stats.$(basename "$f").json" 2>"$work/err" ||
        bad "inspect --stats $f: $(head -c 300 "$work/err")"
done
# the same values give the same figures whichever reader and path found them: the fp32 artifact
# and the checkpoint; the q4 artifact and its dequantized F32 copy.  Count and extremes from the
# source's own words.
python3 - "$work" <<'PY' && ok || bad "inspect --stats figures differ"
import json, os, struct, sys
w = sys.argv[1]
st = lambda n: json.load(open(os.path.join(w, 'stats.' + n + '.json')))['stats']
assert st('f32.ninfer') == st('ck'), (st('f32.ninfer'), st('ck'))
assert st('q4.ninfer') == st('q4.safetensors'), (st('q4.ninfer'), st('q4.safetensors'))
src = open(os.path.join(w, 'ck', 'model.safetensors'), 'rb').read()
h = struct.unpack('<Q', src[:8])[0]
bf = src[8 + h:]
vals = [struct.unpack('<f', struct.pack('<I', struct.unpack_from('<H', bf, 2 * i)[0] << 16))[0]
        for i in range(0, len(bf) // 2, 4096)]
s = st('ck')
assert s['finite'] == len(bf) // 2 and s['nan'] == 0 and s['inf'] == 0, s
assert s['min'] == min(vals) and s['max'] == max(vals) and s['abs_max'] == max(abs(v) for v in vals), s
PY
# the fp32 cast gives back the source values exactly, in order
python3 - "$work/ck/model.safetensors" "$work/f32.raw" <<'PY' && ok || bad "fp32 values differ from the source"
import struct, sys
src = open(sys.argv[1], 'rb').read()
h = struct.unpack('<Q', src[:8])[0]
bf = src[8 + h:]
f32 = open(sys.argv[2], 'rb').read()
assert len(f32) == 2 * len(bf), (len(f32), len(bf))
for i in range(0, len(bf) // 2, 99991):
    w = struct.unpack_from('<H', bf, 2 * i)[0]
    assert struct.unpack_from('<I', f32, 4 * i)[0] == w << 16, i
PY
# the same artifact whatever the chunk (spans of 4096 columns or of 2^18), and re-derivable
# (one name in two directories: quick mode names the artifact after its file)
mkdir "$work/b" "$work/c"
run 0 "$bin/ninfer-convert" "$work/ck" -o "$work/b/q4.ninfer" --format q4_g64_fp16 --chunk-values 4096 \
    --artifact-id 0123456789abcdef0123456789abcdef --progress=never
run 0 "$bin/ninfer-convert" "$work/ck" -o "$work/c/q4.ninfer" --format q4_g64_fp16 --chunk-values 100000000 \
    --artifact-id 0123456789abcdef0123456789abcdef --progress=never
same "$work/b/q4.ninfer" "$work/c/q4.ninfer"
python3 - "$work/b/q4.ninfer.conversion.json" "$work/c/q4.ninfer.conversion.json" <<'PY' && ok || bad "report figures differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a['objects'] == b['objects']
PY
run 0 "$bin/ninfer-verify" "$work/b/q4.ninfer" --against "$work/ck"

# --- quantized checkpoints' weights (docs/dialects.md "Values"): requantized, re-derived and
# compared span by span, so the peak RSS stays under the same limit; the bytes and figures are
# those of whole rows (--chunk-values 100000000: one job per row).
gen() { python3 "$(dirname "$0")/gen_long_rows.py" "$@" || bad "the checkpoint generator: $*"; }
gen "$work/ds" model.layers.0.mlp.down_proj.weight 2 "$cols" deepseek_fp8
gen "$work/ct" model.layers.0.mlp.down_proj.weight_packed 2 "$cols" ct_int4
gen "$work/gq" model.layers.0.mlp.down_proj.qweight 2 "$cols" gptq4
# convert: deepseek FP8 blocks to fp8 rows (the row's maximum first, over its spans); int4 packed
# codes with packed zero points to q4
got=$(rss "$bin/ninfer-convert" "$work/ds" -o "$work/ds.ninfer" --format fp8_e4m3fn_row_bf16 --requantize --threads 2 \
    --artifact-id 0123456789abcdef0123456789abcdef --progress=never)
[ "$got" -gt 0 ] && [ "$got" -lt "$limit" ] && ok || bad "convert deepseek_fp8: peak RSS $got KiB: $(head -c 300 "$work/err")"
got=$(rss "$bin/ninfer-convert" "$work/ct" -o "$work/ct.ninfer" --format q4_g64_fp16 --requantize --threads 2 \
    --artifact-id 0123456789abcdef0123456789abcdef --progress=never)
[ "$got" -gt 0 ] && [ "$got" -lt "$limit" ] && ok || bad "convert ct_int4: peak RSS $got KiB: $(head -c 300 "$work/err")"
# GPTQ: codes down the columns of qweight, an act-order g_idx as long as the row
got=$(rss "$bin/ninfer-convert" "$work/gq" -o "$work/gq.ninfer" --format q4_g64_fp16 --requantize --threads 2 \
    --artifact-id 0123456789abcdef0123456789abcdef --progress=never)
[ "$got" -gt 0 ] && [ "$got" -lt "$limit" ] && ok || bad "convert gptq4: peak RSS $got KiB: $(head -c 300 "$work/err")"
# the same artifacts and reports with whole rows, and with spans of 4096 columns
mkdir "$work/whole" "$work/small"
for c in ds:fp8_e4m3fn_row_bf16 ct:q4_g64_fp16 gq:q4_g64_fp16; do
    n=${c%%:*}
    run 0 "$bin/ninfer-convert" "$work/$n" -o "$work/whole/$n.ninfer" --format "${c#*:}" --requantize --chunk-values 100000000 \
        --artifact-id 0123456789abcdef0123456789abcdef --progress=never
    same "$work/$n.ninfer" "$work/whole/$n.ninfer"
    python3 - "$work/$n.ninfer.conversion.json" "$work/whole/$n.ninfer.conversion.json" <<'PY' && ok || bad "$n: report figures differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a['objects'] == b['objects'], (a['objects'], b['objects'])
PY
done
for n in ct gq; do
    run 0 "$bin/ninfer-convert" "$work/$n" -o "$work/small/$n.ninfer" --format q4_g64_fp16 --requantize \
        --chunk-values 4096 --artifact-id 0123456789abcdef0123456789abcdef --progress=never
    same "$work/$n.ninfer" "$work/small/$n.ninfer"
done
# verify --against re-derives them span by span
for n in ds ct gq; do
    got=$(rss "$bin/ninfer-verify" "$work/$n.ninfer" --against "$work/$n" --threads 2)
    [ "$got" -gt 0 ] && [ "$got" -lt "$limit" ] && ok || bad "verify --against $n: peak RSS $got KiB: $(head -c 300 "$work/err")"
done
# diff against the checkpoint reads the weight's values span by span; its figures are the
# report's of the whole-row conversion
for n in ds ct gq; do
    if [ $sanitized = no ]; then
        got=$(STATUS=1 rss "$bin/ninfer-diff" "$work/$n.ninfer" "$work/$n" --threads 2 -q) # 1: the values differ
        [ "$got" -gt 0 ] && [ "$got" -lt "$limit" ] && ok || bad "diff $n: peak RSS $got KiB: $(head -c 300 "$work/err")"
    fi
    "$bin/ninfer-diff" "$work/$n.ninfer" "$work/$n" --threads 2 --json >"$work/diff.$n.json" 2>"$work/err"
    [ $? -eq 1 ] && ok || bad "diff $n: $(head -c 300 "$work/err")"
    python3 - "$work/diff.$n.json" "$work/whole/$n.ninfer.conversion.json" <<'PY' && ok || bad "diff $n: figures differ from the report's"
import json, sys
d, r = (json.load(open(p)) for p in sys.argv[1:])
s, o = d['objects'][0]['statistics'], r['objects'][0]
assert (s['count'], s['max_abs'], s['rmse'], s['snr_db']) == (o['values_compared'], o['max_abs_error'], o['rmse'], o['snr_db']), (s, o)
PY
done

# --- a budget's measuring pass (docs/recipes.md "Budgets") measures long rows span by span: the
# dry run stays under the limit, and its estimates (every row measured) are to the bit the
# weighted errors the conversion then measures over whole rows (--chunk-values 100000000), for a
# grouped format and for fp8 rows (whose spans need the row's maximum first)
budget_recipe() { # FILE BUDGET FORMATS
    printf '%s\n' "recipe: 1" "sources: {base: $work/ck}" "defaults: {format: fp32}" \
        "budget: {$2, sample_rows: 0, formats: [$3], methods: [grouped_absmax, fp8_row_maxabs]}" \
        "rules:" "  - {match: \"*\", format: budget}" >"$1"
}
budget_recipe "$work/b6.yaml" "bits_per_weight: 6" "q4_g64_fp16, fp8_e4m3fn_row_bf16"
if [ $sanitized = no ]; then
    got=$(rss "$bin/ninfer-convert" -r "$work/b6.yaml" -o "$work/b6.ninfer" --dry-run --json --threads 2)
    [ "$got" -gt 0 ] && [ "$got" -lt "$limit" ] && ok || bad "budget --dry-run: peak RSS $got KiB: $(head -c 300 "$work/err")"
fi
run 0 "$bin/ninfer-convert" -r "$work/b6.yaml" -o "$work/b6.ninfer" --dry-run --json
# the fp8 option's bytes: a budget of fp8 rows alone
most=$(python3 -c 'import json,sys; print(max(o["bytes"] for a in json.load(open(sys.argv[1]))["budget"]["allocation"] for o in a["options"]))' "$work/out") ||
    bad "the dry run's options"
budget_recipe "$work/b8.yaml" "bytes: $most" "fp8_e4m3fn_row_bf16"
for b in b6 b8; do
    run 0 "$bin/ninfer-convert" -r "$work/$b.yaml" -o "$work/$b.ninfer" --chunk-values 100000000 --progress=never
    python3 - "$work/$b.ninfer.conversion.json" "$b" <<'PY' && ok || bad "$b: the budget's estimate differs from the measured error"
import json, sys
o = json.load(open(sys.argv[1]))['objects'][0]
assert o['format'] == {'b6': 'q4_g64_fp16', 'b8': 'fp8_e4m3fn_row_bf16'}[sys.argv[2]], o
b = o['budget']
assert b['estimated_error'] == b['weighted_error'] and b['weighted_error'] > 0, b
PY
done

# --- nvfp4 (tiles of 128 rows, docs/layouts.md section 12): a [128, 2^20] ModelOpt NVFP4 weight
# (a sparse checkpoint) is imported, dequantized, compared and re-derived in spans of its 128-row
# band, under the limit; the import is the same artifact and report as with whole bands (on a
# [256, 16384] weight in spans of 4096 columns), the values are the checkpoint's (diff: the same;
# sampled against the definition e2m1 x e4m3 x weight_scale_2)
gen "$work/nv" model.layers.0.mlp.down_proj.weight 128 "$((1 << 20))" modelopt_nvfp4
got=$(rss "$bin/ninfer-convert" "$work/nv" -o "$work/nv.ninfer" --format q4_g64_fp16 --threads 2 \
    --artifact-id 0123456789abcdef0123456789abcdef --progress=never)
[ "$got" -gt 0 ] && [ "$got" -lt "$limit" ] && ok || bad "convert (import) nvfp4: peak RSS $got KiB: $(head -c 300 "$work/err")"
gen "$work/nvs" model.layers.0.mlp.down_proj.weight 256 16384 modelopt_nvfp4
run 0 "$bin/ninfer-convert" "$work/nvs" -o "$work/small/nvs.ninfer" --format q4_g64_fp16 --chunk-values 4096 \
    --artifact-id 0123456789abcdef0123456789abcdef --progress=never
run 0 "$bin/ninfer-convert" "$work/nvs" -o "$work/whole/nvs.ninfer" --format q4_g64_fp16 --chunk-values 100000000 \
    --artifact-id 0123456789abcdef0123456789abcdef --progress=never
same "$work/small/nvs.ninfer" "$work/whole/nvs.ninfer"
run 0 "$bin/ninfer-verify" "$work/small/nvs.ninfer" --against "$work/nvs"
python3 - "$work/small/nvs.ninfer.conversion.json" "$work/whole/nvs.ninfer.conversion.json" <<'PY' && ok || bad "nvs: report figures differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a['objects'] == b['objects'] and a['objects'][0]['format'] == 'nvfp4', (a['objects'], b['objects'])
PY
# MXFP4 into nvfp4 likewise, and its values are compared span by span as whole rows are: every
# one, exactly (docs/dialects.md "MXFP4")
gen "$work/mxs" model.layers.0.mlp.down_proj.weight_packed 256 16384 ct_mxfp4
run 0 "$bin/ninfer-convert" "$work/mxs" -o "$work/small/mxs.ninfer" --format q4_g64_fp16 --chunk-values 4096 \
    --artifact-id 0123456789abcdef0123456789abcdef --progress=never
run 0 "$bin/ninfer-convert" "$work/mxs" -o "$work/whole/mxs.ninfer" --format q4_g64_fp16 --chunk-values 100000000 \
    --artifact-id 0123456789abcdef0123456789abcdef --progress=never
same "$work/small/mxs.ninfer" "$work/whole/mxs.ninfer"
run 0 "$bin/ninfer-verify" "$work/small/mxs.ninfer" --against "$work/mxs"
python3 - "$work/small/mxs.ninfer.conversion.json" "$work/whole/mxs.ninfer.conversion.json" <<'PY' && ok || bad "mxs: report figures differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
o = a['objects'][0]
assert a['objects'] == b['objects'] and o['format'] == 'nvfp4', (a['objects'], b['objects'])
assert o['values_compared'] == 256 * 16384 and o['max_abs_error'] == 0, o
PY
got=$(rss "$bin/ninfer-dequant" "$work/nv.ninfer" model.layers.0.mlp.down_proj.weight -o "$work/nv.raw" --threads 2)
[ "$got" -gt 0 ] && [ "$got" -lt "$limit" ] && ok || bad "dequant nvfp4: peak RSS $got KiB: $(head -c 300 "$work/err")"
got=$(rss "$bin/ninfer-diff" "$work/nv.ninfer" "$work/nv" --threads 2 -q)
[ "$got" -gt 0 ] && [ "$got" -lt "$limit" ] && ok || bad "diff nvfp4 (the same values): peak RSS $got KiB: $(head -c 300 "$work/err")"
got=$(rss "$bin/ninfer-verify" "$work/nv.ninfer" --against "$work/nv" --threads 2)
[ "$got" -gt 0 ] && [ "$got" -lt "$limit" ] && ok || bad "verify --against nvfp4: peak RSS $got KiB: $(head -c 300 "$work/err")"
python3 - "$work/nv/model.safetensors" "$work/nv.raw" <<'PY' && ok || bad "nvfp4 values differ from the definition"
import json, struct, sys
src = open(sys.argv[1], 'rb').read()
h = struct.unpack('<Q', src[:8])[0]
hdr = json.loads(src[8:8 + h])
t = lambda n: src[8 + h + hdr[n]['data_offsets'][0]:8 + h + hdr[n]['data_offsets'][1]]
codes, scales = t('model.layers.0.mlp.down_proj.weight'), t('model.layers.0.mlp.down_proj.weight_scale')
out = open(sys.argv[2], 'rb').read()
K = 1 << 20
assert len(out) == 4 * 128 * K
E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
def e4m3(c):
    e, m = (c >> 3) & 15, c & 7
    return (m * 2.0 ** -9) if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
# every 64 KiB of codes starts a nonzero run (gen_long_rows.py); bytes in and past the runs
for b in list(range(0, len(codes), 65536 * 7 + 4093)) + list(range(5000, len(codes), 65536 * 11 + 17)):
    for c in (2 * (b % (K // 2)), 2 * (b % (K // 2)) + 1):
        r = b // (K // 2)
        nib = codes[b] >> 4 if c & 1 else codes[b] & 15
        v = (-1 if nib & 8 else 1) * E2M1[nib & 7] * e4m3(scales[r * (K // 16) + c // 16]) * 0.0078125
        got = struct.unpack_from('<f', out, 4 * (r * K + c))[0]
        assert got == v, (r, c, got, v)
PY
finish "long rows"
