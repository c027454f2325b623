#!/usr/bin/env bash
# Who names what in a message about one object of an artifact (docs/library.md, "Who names
# what"): the library's object check and object reader say what is wrong inside the object; the
# program that chose the object adds "FILE: object 'ID'" once.  Each message is compared whole,
# so a file or an object named twice (or not at all) fails.
. "$(dirname "$0")/lib.sh" "$@"

cd "$work" || exit 1
cp "$top"/tests/data/upstream/split.ninfer* .
rm split.ninfer.part-0004 # holds the end of 'matrix' and all of 'q8'

expect_err() { # WANT-LINE: the whole of stderr
    local want=$1
    if [ "$(cat "$work/err")" = "$want" ]; then ok; else bad "stderr is '$(cat "$work/err")', expected '$want'"; fi
}
missing="missing part file split.ninfer.part-0004 (files[4])"

run 1 "$bin/ninfer-inspect" split.ninfer --words q8
expect_err "ninfer-inspect: error: split.ninfer: object 'q8': $missing"
run 1 "$bin/ninfer-inspect" split.ninfer --tensor matrix --stats
expect_err "ninfer-inspect: error: split.ninfer: object 'matrix': $missing"
run 1 "$bin/ninfer-dequant" split.ninfer q8 -o q8.bin
expect_err "ninfer-dequant: error: split.ninfer: object 'q8': $missing"
check test ! -e q8.bin
run 1 "$bin/ninfer-dequant" split.ninfer --all -o all.safetensors
expect_err "ninfer-dequant: error: split.ninfer: object 'matrix': $missing"
check test ! -e all.safetensors

# an object the check refuses (its format renamed in the directory, same length): the check's
# message, with the file and the object once
cp "$top"/tests/data/upstream/split.ninfer* .
python3 -c '
import sys
b = open("split.ninfer", "rb").read()
assert b.count(b"\"format\":\"q8_g32_fp16\"") == 1
open("split.ninfer", "wb").write(b.replace(b"\"format\":\"q8_g32_fp16\"", b"\"format\":\"q8_g32_fp17\""))
'
unknown="unknown format 'q8_g32_fp17'"
run 1 "$bin/ninfer-inspect" split.ninfer --tensor q8
expect_err "ninfer-inspect: error: split.ninfer: object 'q8': $unknown"
run 1 "$bin/ninfer-dequant" split.ninfer q8 -o q8.bin
expect_err "ninfer-dequant: error: split.ninfer: object 'q8': $unknown"
# ninfer-verify keeps the object as a field of its problem, the message without it
run 1 "$bin/ninfer-verify" split.ninfer
check grep -qxF "  object 'q8': structure: $unknown" "$work/out"
run 1 "$bin/ninfer-verify" split.ninfer --json
check python3 -c '
import json, sys
problems = json.load(open(sys.argv[1]))["problems"]
assert [(p["object"], p["check"], p["message"]) for p in problems] == [("q8", "structure", sys.argv[2])], problems
' "$work/out" "$unknown"

finish test_error_naming
