#!/usr/bin/env bash
# ninfer-verify's integrity checks end to end: --require-checksums (the CI gate: exit 1 unless
# metadata.checksums has a digest for every object and for the directory; a usage error with
# --quick), the closed schema of metadata.checksums (a renamed member is a problem, a renamed
# "checksums" is not, unless --require-checksums), nonzero bytes in a continuation header's
# tail [32, 4096).  That no problem line names its object twice ("object 'x': structure:
# object 'x': ...") over every ninfer-verify case of the bad-input corpus is checked where those
# cases run, in test_bad_inputs.sh (tests/README.md).
# usage: test_verify_integrity.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
here=$(cd "$(dirname "$0")" && pwd)

# run STATUS ARGS...: run ninfer-verify, compare the exit status; output in $work/log
run() {
    local want=$1; shift
    "$bin/ninfer-verify" "$@" >"$work/log" 2>&1
    local got=$?
    if [ "$got" -eq "$want" ]; then ok; else bad "ninfer-verify $* exited $got, expected $want: $(head -c 400 "$work/log")"; fi
}
# has TEXT: the last run's output contains TEXT
has() { if grep -qF -- "$1" "$work/log"; then ok; else bad "output lacks '$1': $(head -c 400 "$work/log")"; fi; }

conv=$here/../fuzz/corpus/container_artifact/converted_checksums.ninfer

# --help documents the flag
run 0 --help
has "--require-checksums"

# an upstream artifact records no checksums: valid, but not under --require-checksums
run 0 "$data/upstream/direct.ninfer"
has "no checksums recorded"
run 1 --require-checksums "$data/upstream/direct.ninfer"
has "checksums: metadata.checksums is absent"
run 1 --require-checksums --json "$data/upstream/direct.ninfer"
python3 - "$work/log" <<'EOF' && ok || bad "--json --require-checksums: unexpected report: $(head -c 400 "$work/log")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["valid"] is False and r["checksums_checked"] == 0, r
assert [(p["object"], p["check"]) for p in r["problems"]] == [(None, "checksums")], r
EOF
run 2 --quick --require-checksums "$data/upstream/direct.ninfer"
has "cannot be combined with --quick"

# our converter's artifact records them all
run 0 --require-checksums "$conv"
has "11 checksums"

# one byte of a member name inside metadata.checksums, and of "checksums" itself
python3 - "$conv" "$work" <<'EOF'
import sys
raw = open(sys.argv[1], "rb").read()
at = raw.index(b'"checksums":{')
def edit(name, old, new):
    k = raw.index(old, at if old != b'"checksums":' else 0)  # the member inside metadata.checksums
    assert raw.count(b'"checksums":') == 1 and len(old) == len(new)
    open(sys.argv[2] + "/" + name, "wb").write(raw[:k] + new + raw[k + len(old):])
edit("dirname.ninfer", b'"directory":', b'"directorz":')
edit("objname.ninfer", b'"objects":{', b'"objectz":{')
edit("sumsname.ninfer", b'"checksums":', b'"chedksums":')
EOF
run 1 "$work/dirname.ninfer"
has "metadata.checksums has an unknown member 'directorz'"
run 1 "$work/objname.ninfer"
has "metadata.checksums has an unknown member 'objectz'"
run 0 "$work/sumsname.ninfer"
has "no checksums recorded"
run 1 --require-checksums "$work/sumsname.ninfer"
has "metadata.checksums is absent"

# a nonzero byte in the zero tail of a continuation header
mkdir "$work/split"
cp "$data/upstream/split.ninfer" "$data"/upstream/split.ninfer.part-* "$work/split/"
printf '\x5a' | dd of="$work/split/split.ninfer.part-0002" bs=1 seek=300 conv=notrunc status=none
run 0 --quick "$work/split/split.ninfer"
run 1 "$work/split/split.ninfer"
has "words: part file split.ninfer.part-0002: byte 300 (continuation header bytes [32, 4096)) is 0x5a, expected 0x00"

finish "test_verify_integrity"
