#!/usr/bin/env bash
# ninfer-convert never publishes an artifact its own readers refuse (docs/security.md 1.3, "every cap a
# reader enforces is checked by the writer before publishing"; findings F11, F14): a config.json
# holding one 70 MB string would make a directory beyond the reader's 64 MiB (NF_MAX_JSON_BYTES);
# it is refused first by the checkpoint reader's 16 MiB cap on config.json: the conversion exits
# 1 naming the file and the cap, and writes nothing (no temp file, no lock, no report).  The
# directory cap itself is tested in tests/unit/test_container_writer_caps.c.
# usage: test_outputs_caps.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

ck=$work/ckpt
"$bin/ninfer-gen-checkpoint" "$ck" --hidden 64 --intermediate 128 --layers 1 --vocab 64 >/dev/null ||
    { echo "FAIL generator"; exit 1; }
python3 - "$ck/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c['notes'] = 'x' * 70000000
json.dump(c, open(sys.argv[1], 'w'))
PY
mkdir "$work/o"
for extra in "" "--max-file-bytes 1000000"; do
    run 1 "$bin/ninfer-convert" "$ck" -o "$work/o/m.ninfer" --format q8_g32_fp16 $extra
    contains "$work/err" "$ck/config.json"
    contains "$work/err" "16777216"
    check test -z "$(ls -A "$work/o")"
done

finish "outputs caps"
