#!/usr/bin/env bash
# A valid artifact of 341 continuation parts under `ulimit -n 64` (docs/security.md 7.1, F8: one descriptor
# stayed open per part, so verify, inspect and dequant failed with "Too many open files"): the
# reader keeps a bounded cache of open parts (lib/src/container/reader.c), so every program
# reads it under that limit, on one thread or several, with the same results as without it.
# The writer too: a conversion into more parts than that limit writes the same bytes (below).
# usage: test_many_parts.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

# Framed by hand (docs/artifact.md 2-3): a bf16 tensor w [682, 1024] and a resource r, over the
# entry's payload page and 341 parts of one page each.
python3 - "$work" <<'PY'
import json, random, struct, sys
d = sys.argv[1]
parts = 341
page = 4096
total = (parts + 1) * page
rnd = random.Random(3)
words = [rnd.randrange(0x3000, 0x4000) | (rnd.randrange(2) << 15) for _ in range(682 * 1024)]
w = struct.pack('<%dH' % len(words), *words)
res = bytes(rnd.randrange(256) for _ in range(total - len(w) - 256 - 100))
payload = w + bytes(256) + res
payload += bytes(total - len(payload))
root = {"components": {"text": {"config": {}, "resources": {"r": "r"}}},
        "objects": [{"id": "w", "shape": [682, 1024], "format": "bf16", "layout": "contiguous_le_v1", "offset": 0,
                     "bytes": len(w), "kind": "tensor"},
                    {"id": "r", "encoding": "raw_bytes_v1", "offset": len(w) + 256, "bytes": len(res),
                     "kind": "resource"}],
        "bindings": {"w": {"object": "w"}}, "uses": [], "metadata": {}, "provenance": {},
        "files": [{"path": None, "payload_bytes": page}] +
                 [{"path": "m.ninfer.part-%04d" % i, "payload_bytes": page} for i in range(1, parts + 1)]}
text = json.dumps(root, separators=(',', ':')).encode()
aid = bytes(range(16))
head = b'NINFER\0\3' + struct.pack('<Q', len(text)) + aid + text
start = (len(head) + page - 1) // page * page
open(d + '/m.ninfer', 'wb').write(head + bytes(start - len(head)) + payload[:page])
for i in range(1, parts + 1):
    open(d + '/m.ninfer.part-%04d' % i, 'wb').write(b'NINPRT\0\3' + struct.pack('<Q', i) + aid + bytes(page - 32) +
                                                    payload[i * page:(i + 1) * page])
open(d + '/w.raw', 'wb').write(w)
PY
m=$work/m.ninfer

# reference results without the limit
"$bin/ninfer-dequant" "$m" w --to bf16 -o "$work/ref.bf16" 2>/dev/null || bad "dequant without a limit"
"$bin/ninfer-inspect" "$m" --tensor w --stats >"$work/ref.stats" 2>/dev/null || bad "inspect without a limit"
same "$work/ref.bf16" "$work/w.raw"

limited() { (ulimit -n 64 && "$@"); }
run 0 limited "$bin/ninfer-verify" "$m";                     contains "$work/out" "valid (2 objects"
run 0 limited "$bin/ninfer-verify" --threads 8 "$m";         contains "$work/out" "valid (2 objects"
run 0 limited "$bin/ninfer-verify" --quick "$m"
run 0 limited "$bin/ninfer-inspect" "$m"
run 0 limited "$bin/ninfer-inspect" "$m" --tensor w --stats; same "$work/out" "$work/ref.stats"
run 0 limited "$bin/ninfer-inspect" "$m" --words w --rows 680:682 --cols 1000:1024
contains "$work/out" "row 681:"
run 0 limited "$bin/ninfer-dequant" "$m" w --to bf16 -o "$work/a.bf16"; same "$work/a.bf16" "$work/w.raw"
run 0 limited "$bin/ninfer-dequant" "$m" --all -o "$work/all.safetensors"
run 0 "$bin/ninfer-inspect" "$work/all.safetensors" --tensor w --stats
# a damaged last part is still found under the limit
printf '\x01' | dd of="$work/m.ninfer.part-0341" bs=1 seek=100 conv=notrunc status=none
run 1 limited "$bin/ninfer-verify" "$m";                     contains "$work/out" "m.ninfer.part-0341"

# Writing: a conversion into more parts than the soft RLIMIT_NOFILE (issue 23 item 10,
# docs/security.md 7.2: one descriptor per temp file, "Too many open files", exit 3) keeps a
# bounded cache of the temp files' descriptors (lib/src/container/writer_io.c), on one thread
# or several, and writes the same bytes as without the limit.
"$bin/ninfer-gen-checkpoint" "$work/ck" --hidden 256 --intermediate 1024 --layers 1 --vocab 512 >/dev/null ||
    bad "gen-checkpoint"
id=0123456789abcdef0123456789abcdef
# the same files with the same bytes in two directories
same_dir() {
    local diff
    diff=$(cd "$1" && for f in * .[!.]*; do [ -e "$f" ] || continue; cmp -s "$f" "$2/$f" || printf '%s ' "$f"; done)
    if [ -z "$diff" ] && [ "$(ls -A "$1" | wc -l)" -eq "$(ls -A "$2" | wc -l)" ]; then ok
    else bad "$3: $2 differs from $1: ${diff:0:300} ($(ls -A "$2" | wc -l) files)"; fi
}
conv() { "$bin/ninfer-convert" "$work/ck" --format bf16 --max-file-bytes 32768 --artifact-id $id --no-report -q "$@"; }
mkdir -p "$work/ref" "$work/lim"
run 0 conv -o "$work/ref/m.ninfer"
nparts=$(find "$work/ref" -name 'm.ninfer.part-*' | wc -l)
[ "$nparts" -gt 64 ] && ok || bad "the reference has $nparts parts, not more than 64"
for t in 1 4; do
    rm -f "$work/lim"/*
    run 0 limited conv -o "$work/lim/m.ninfer" --threads $t
    same_dir "$work/ref" "$work/lim" "--threads $t"
done
run 0 limited "$bin/ninfer-verify" "$work/lim/m.ninfer"; contains "$work/out" "valid ("
# replacing it under the limit (its parts set aside, then dropped), and with fewer parts
run 0 limited conv -o "$work/lim/m.ninfer" --force --threads 4
same_dir "$work/ref" "$work/lim" "--force"
run 0 limited "$bin/ninfer-convert" "$work/ck" --format q8_g32_fp16 --max-file-bytes 65536 --artifact-id $id \
    --no-report -q -o "$work/lim/m.ninfer" --force
run 0 limited "$bin/ninfer-verify" "$work/lim/m.ninfer"; contains "$work/out" "valid ("
[ -z "$(find "$work/lim" -name '.*')" ] && ok || bad "--force: left $(find "$work/lim" -name '.*')"

finish "many parts"
