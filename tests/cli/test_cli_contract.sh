#!/usr/bin/env bash
# The CLI contract of docs/decisions.md, "Exit statuses" where it met odd input: a usage error names the option
# the user typed (M1: "--json=" and "--help=x" used to print getopt's internal option code as a
# character), and the exit status says what went wrong (M2: 1 invalid input, 2 usage, 3 system
# error) the same way in every program, with a true message: a device, a FIFO or a pseudo-file
# such as /proc/self/mem is not a file of ours (3), an empty regular file is an invalid one (1),
# a path that is not UTF-8 is shown escaped and kept in --json.
# usage: test_cli_contract.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
ascii() { if LC_ALL=C grep -q '[^ -~]' "$1"; then bad "$1 holds a byte that is not printable ASCII: $(od -c "$1" | head -3)"; else ok; fi; }

art=$data/upstream/direct.ninfer

# M1: the option as typed
for p in inspect verify dequant convert diff; do
    run 2 "$bin/ninfer-$p" --json= "$art";   contains "$work/err" "'--json='"; contains "$work/err" "takes no value"; ascii "$work/err"
    run 2 "$bin/ninfer-$p" --help=x;         contains "$work/err" "'--help=x'"; ascii "$work/err"
    run 2 "$bin/ninfer-$p" --no-such "$art"; contains "$work/err" "unknown option '--no-such'"; ascii "$work/err"
    run 2 "$bin/ninfer-$p" -Z "$art";        contains "$work/err" "unknown option '-Z'"; ascii "$work/err"
    run 2 "$bin/ninfer-$p" -qZ "$art";       contains "$work/err" "unknown option '-Z'"; ascii "$work/err"
    run 2 "$bin/ninfer-$p" --ver;            contains "$work/err" "'--ver' is ambiguous"; ascii "$work/err"
    run 2 "$bin/ninfer-$p" $'-\xec' "$art";  contains "$work/err" "unknown option '-\\xec'"; ascii "$work/err"
    run 2 "$bin/ninfer-$p" "$art" --progress; contains "$work/err" "option '--progress' needs a value"
done
run 2 "$bin/ninfer-verify" --threads;          contains "$work/err" "option '--threads' needs a value"
run 2 "$bin/ninfer-verify" -j;                 contains "$work/err" "option '-j' needs a value"
run 0 "$bin/ninfer-verify" --thr 1 "$art"               # an unambiguous prefix is the option

# M2: what is not a file of ours is a system error (3) in every program
mkfifo "$work/fifo.ninfer"
for p in inspect verify dequant diff; do
    id=(); [ $p = dequant ] && id=(x); [ $p = diff ] && id=("$art")
    for f in /dev/null "$work/fifo.ninfer"; do
        run 3 timeout 20 "$bin/ninfer-$p" "$f" "${id[@]}"; contains "$work/err" "not a regular file"
    done
    for f in /proc/self/mem /proc/self/status; do
        run 3 timeout 20 "$bin/ninfer-$p" "$f" "${id[@]}"; contains "$work/err" "$f"
        lacks "$work/err" "shorter than"; lacks "$work/err" "too short"
    done
done
# an empty regular file is an invalid input (1), not a system error
: >"$work/empty.ninfer"
run 1 "$bin/ninfer-verify" "$work/empty.ninfer"; contains "$work/out" "0 bytes"
run 1 "$bin/ninfer-inspect" "$work/empty.ninfer"
run 1 "$bin/ninfer-dequant" "$work/empty.ninfer" x
# a directory is not an artifact: verify and dequant say so (3); inspect reads it as a checkpoint
run 3 "$bin/ninfer-verify" "$work";     contains "$work/err" "Is a directory"
run 1 "$bin/ninfer-inspect" "$work";    contains "$work/err" "no *.safetensors file"

# a path that is not UTF-8: escaped in messages, in --json as U+FFFD, never dropped
cp "$art" "$work/"$'\xff\xfe'".ninfer"
run 0 "$bin/ninfer-verify" "$work/"$'\xff\xfe'".ninfer"; contains "$work/out" '\xff\xfe.ninfer: valid'
run 0 "$bin/ninfer-verify" --json "$work/"$'\xff\xfe'".ninfer" "$art"
python3 - "$work/out" <<'PY' && ok || bad "verify --json lost the file that is not UTF-8"
import json, sys
d = json.load(open(sys.argv[1]))
assert d['valid'] and len(d['files']) == 2, d
assert d['files'][0]['file'].endswith('\ufffd\ufffd.ninfer'), d['files'][0]['file']
PY
run 3 "$bin/ninfer-verify" "$work/"$'\xff'".missing"; contains "$work/err" '\xff.missing: cannot open: No such file'
run 3 "$bin/ninfer-inspect" "$work/"$'\xff'".missing"; contains "$work/err" '\xff.missing: cannot open: No such file'
lacks "$work/err" "empty string"

# ninfer-convert: an output name that is not UTF-8 cannot be written in the artifact's directory, its
# plan or its report (JSON text): refused at once (2), naming the byte, before anything is read or
# written (it used to encode everything and then fail with "out of memory", 3: a retry status).  The
# same for a quick-mode SOURCE (it said "expected a path, got an empty string") and for any argument
# --plan-out records in the plan's command (issue 23, item 11).
"$bin/ninfer-gen-checkpoint" "$work/ck" --hidden 64 --intermediate 128 --layers 1 --vocab 64 >/dev/null ||
    bad "gen-checkpoint failed"
mkdir "$work/o"
for args in "-o $work/o/"$'\xff'"x.ninfer --format q8_g32_fp16" \
            "-o $work/o/"$'\xff'"x.ninfer --format q8_g32_fp16 --plan-out $work/o/p.json" \
            "-o $work/o/"$'\xc3'".ninfer --format q8_g32_fp16 --plan-out $work/o/p.json"; do
    # shellcheck disable=SC2086 # (word splitting wanted: no spaces in $work)
    run 2 "$bin/ninfer-convert" "$work/ck" $args
    contains "$work/err" "is not UTF-8 (byte 0x"
    lacks "$work/err" "out of memory"
    check test -z "$(ls -A "$work/o")"
done
contains "$work/err" "(byte 0xc3 at offset"
run 2 "$bin/ninfer-convert" "$work/ck" -o "$work/o/m.ninfer" --format q8_g32_fp16 --plan-out "$work/o/p"$'\xfe'".json"
contains "$work/err" "is not UTF-8 (byte 0xfe at offset"
check test -z "$(ls -A "$work/o")"
cp -r "$work/ck" "$work/ck"$'\xfe'
run 2 "$bin/ninfer-convert" "$work/ck"$'\xfe' -o "$work/o/m.ninfer" --format q8_g32_fp16
contains "$work/err" 'ck\xfe'
contains "$work/err" "is not UTF-8 (byte 0xfe at offset"
lacks "$work/err" "empty string"
check test -z "$(ls -A "$work/o")"

finish "cli contract"
