#!/usr/bin/env bash
# What happens to each kind of output path (docs/security.md 1.3: an output path that
# exists and is not a regular file is written into or refused, never replaced; `-o -` is
# standard output where a stream makes sense).  ninfer-dequant streams into a FIFO, a device
# node or its own standard output (also through a symbolic link such as one to /proc/self/fd/1),
# writes through a symbolic link to a regular file (the link stays, its target is replaced
# atomically), and refuses a directory, a socket or a dangling link; ninfer-convert refuses every
# output that is not a regular file (an artifact is several files published by rename), with
# --force or not, and `-o -`.  Usage errors on outputs (empty names, --max-file-bytes too small
# for any file) are exit 2 with a clear message.  Every device node, FIFO and link here is the
# test's own, in its scratch directory: a regression can replace nothing outside it.
# usage: test_outputs.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
no_temps() { # no_temps DIR: no temp file (".*.tmp") and no lock file is left in DIR
    local left
    left=$(cd "$1" && ls -A | grep -E '\.(tmp|lock)$' | tr '\n' ' ')
    if [ -z "$left" ]; then ok; else bad "left in $1: $left"; fi
}

ck=$work/ckpt
"$bin/ninfer-gen-checkpoint" "$ck" >/dev/null || { echo "FAIL generator"; exit 1; }
art=$work/m.ninfer
"$bin/ninfer-convert" "$ck" -o "$art" --format q8_g32_fp16 --no-report -q || { echo "FAIL convert"; exit 1; }
id=lm_head.weight
dq() { "$bin/ninfer-dequant" "$art" "$@"; }
dq "$id" -o "$work/want.f32" || bad "dequant to a new file"
dq --all -o "$work/want.safetensors" || bad "dequant --all to a new file"
d=$work/d
mkdir "$d"

# ---------------------------------------------------------------- ninfer-dequant
# A FIFO: the values stream into it (a reader started first), and it stays a FIFO.  Should the
# FIFO be replaced, the reader would block for ever on the unlinked FIFO: it is killed instead.
stream_fifo() { # stream_fifo WANT ARGS...: dequant ARGS... -o FIFO, read back, compare with WANT
    local want=$1
    shift
    rm -f "$d/fifo" "$d/got"
    mkfifo "$d/fifo"
    cat "$d/fifo" >"$d/got" &
    local reader=$!
    run 0 dq "$@" -o "$d/fifo"
    if [ -p "$d/fifo" ]; then
        ok
        wait "$reader"
        same "$d/got" "$want"
    else
        bad "dequant $* -o FIFO replaced the FIFO: $(ls -l "$d/fifo")"
        kill "$reader" 2>/dev/null
        wait "$reader" 2>/dev/null
    fi
    no_temps "$d"
}
stream_fifo "$work/want.f32" "$id"
stream_fifo "$work/want.safetensors" --all
stream_fifo "$work/want.f32" "$id" --threads 3

# A symbolic link to /proc/self/fd/1 is the program's own standard output: written there (a
# regular file or a pipe), and the link stays a link.
ln -s /proc/self/fd/1 "$d/stdout"
run 0 dq "$id" -o "$d/stdout"
check test -L "$d/stdout"
same "$work/out" "$work/want.f32"
dq "$id" -o "$d/stdout" | cat >"$d/piped" || bad "dequant -o link-to-stdout into a pipe"
check test -L "$d/stdout"
same "$d/piped" "$work/want.f32"
run 0 dq --all -o "$d/stdout"
same "$work/out" "$work/want.safetensors"
no_temps "$d"

# `-o -` is standard output, for --all too; no file named '-' appears.
(cd "$d" && "$bin/ninfer-dequant" "$art" --all -o - >"$work/out" 2>"$work/err") && ok || bad "--all -o -: $(cat "$work/err")"
same "$work/out" "$work/want.safetensors"
(cd "$d" && "$bin/ninfer-dequant" "$art" "$id" -o - >"$work/out" 2>"$work/err") && ok || bad "-o -: $(cat "$work/err")"
same "$work/out" "$work/want.f32"
check test ! -e "$d/-"

# A symbolic link to a regular file: written through, like cp and dd (the target gets the
# values, atomically: a temp file beside the target, renamed over it), and the link stays.
mkdir "$d/t"
echo old >"$d/t/target.f32"
ln -s t/target.f32 "$d/link.f32"
run 0 dq "$id" -o "$d/link.f32"
check test -L "$d/link.f32"
check test "$(readlink "$d/link.f32")" = t/target.f32
same "$d/t/target.f32" "$work/want.f32"
no_temps "$d"
no_temps "$d/t"
# a chain of links ends at the same target
ln -s link.f32 "$d/link2.f32"
echo old >"$d/t/target.f32"
run 0 dq "$id" -o "$d/link2.f32"
check test -L "$d/link2.f32"
check test -L "$d/link.f32"
same "$d/t/target.f32" "$work/want.f32"
# a dangling link is refused (exit 2, naming it) and nothing is created at its target
ln -s t/missing.f32 "$d/dangling.f32"
run 2 dq "$id" -o "$d/dangling.f32"
contains "$work/err" "$d/dangling.f32"
check test -L "$d/dangling.f32"
check test ! -e "$d/t/missing.f32"
# a directory: refused, exit 2, naming it
mkdir "$d/dir.f32"
run 2 dq "$id" -o "$d/dir.f32"
contains "$work/err" "$d/dir.f32"
contains "$work/err" "directory"
check test -d "$d/dir.f32"
run 2 dq --all -o "$d/dir.f32"
check test -d "$d/dir.f32"
# a socket: refused, exit 2, naming it, and still a socket
if python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$d/sock"; then
    run 2 dq "$id" -o "$d/sock"
    contains "$work/err" "$d/sock"
    check test -S "$d/sock"
fi
no_temps "$d"
# an empty output name: a usage error, not a file
run 2 dq "$id" -o ''
contains "$work/err" "-o"
run 2 dq --all -o ''

# Device nodes of the test's own (mknod needs root): written into, never replaced.
if [ "$(id -u)" -eq 0 ] && mknod "$d/null" c 1 3 2>/dev/null; then
    run 0 dq "$id" -o "$d/null"
    check test -c "$d/null"
    run 0 dq --all -o "$d/null"
    check test -c "$d/null"
    ln -s null "$d/null-link"
    run 0 dq "$id" -o "$d/null-link"
    check test -c "$d/null" -a -L "$d/null-link"
    no_temps "$d"
else
    echo "SKIP dequant and convert into a device node: mknod needs root (uid $(id -u))"
fi

# ---------------------------------------------------------------- ninfer-convert
conv() { "$bin/ninfer-convert" "$ck" --format q8_g32_fp16 -q "$@"; }
refused() { # refused WHAT: the last run was refused with exit 2 naming WHAT, and published nothing
    contains "$work/err" "$1"
    check test ! -e "$d/m.ninfer"
    no_temps "$d"
}
# An artifact is several files published by rename: it never goes to a stream, with --force or
# not.
(cd "$d" && "$bin/ninfer-convert" "$ck" --format q8_g32_fp16 -q -o - >"$work/out" 2>"$work/err")
check test $? -eq 2
contains "$work/err" "standard output"
check test ! -e "$d/-"
(cd "$d" && "$bin/ninfer-convert" "$ck" --format q8_g32_fp16 -q -o - --force >"$work/out" 2>"$work/err")
check test $? -eq 2
check test ! -e "$d/-" -a ! -e "$d/-.conversion.json"
run 2 conv -o ''
contains "$work/err" "-o"
run 2 conv -o "$d/"
contains "$work/err" "$d/"
check test -z "$(ls -A "$d" | grep -v -e fifo -e got -e stdout -e piped -e '^t$' -e link -e dangling -e dir.f32 -e sock -e null)"
for force in "" --force; do
    rm -f "$d/fifo"
    mkfifo "$d/fifo"
    run 2 conv -o "$d/fifo" $force
    check test -p "$d/fifo"
    refused "$d/fifo"
    run 2 conv -o "$d/stdout" $force
    check test -L "$d/stdout"
    refused "$d/stdout"
    run 2 conv -o "$d/link.f32" $force
    check test -L "$d/link.f32"
    same "$d/t/target.f32" "$work/want.f32"
    run 2 conv -o "$d/dangling.f32" $force
    check test -L "$d/dangling.f32"
    check test ! -e "$d/t/missing.f32"
    run 2 conv -o "$d/dir.f32" $force
    check test -d "$d/dir.f32"
    if [ -c "$d/null" ]; then
        run 2 conv -o "$d/null" $force
        check test -c "$d/null"
    fi
done
# the report and the parts are outputs too: one that is not a regular file is refused before
# anything is published, and stays what it was
mkfifo "$d/m.ninfer.conversion.json"
run 2 conv -o "$d/m.ninfer" --force
check test -p "$d/m.ninfer.conversion.json"
refused "$d/m.ninfer.conversion.json"
run 0 conv -o "$d/m.ninfer" --force --no-report # no report: left alone
check test -p "$d/m.ninfer.conversion.json"
rm -f "$d/m.ninfer" "$d/m.ninfer.conversion.json"
ln -s /proc/self/fd/1 "$d/m.ninfer.part-0002"
run 2 conv -o "$d/m.ninfer" --force --max-file-bytes 400000
check test -L "$d/m.ninfer.part-0002"
refused "$d/m.ninfer.part-0002"
ls "$d" | grep -q '^m\.ninfer\.part-0001$' && bad "a part was published beside a refused one" || ok
rm -f "$d/m.ninfer.part-0002"

# --max-file-bytes below what any file can hold (a 4096-byte header page plus one page of
# payload) is a usage error; a limit the artifact's own header does not fit in is invalid input
run 2 conv -o "$d/m.ninfer" --max-file-bytes 4096
contains "$work/err" "--max-file-bytes"
contains "$work/err" "8192"
run 2 conv -o "$d/m.ninfer" --max-file-bytes 1
run 1 conv -o "$d/m.ninfer" --max-file-bytes 8192
contains "$work/err" "too small"
check test ! -e "$d/m.ninfer"
no_temps "$d"

# ---------------------------------------------------------------- long output paths (M8)
# A message names the path and keeps its reason, however long the path (messages are at most
# 1024 bytes: a long path is shortened in the middle).
long=$d
for _ in 1 2 3 4 5 6 7; do long=$long/$(printf 'x%.0s' $(seq 1 200)); done
mkdir -p "$long"
gone=$long/missing/m.ninfer
run 3 conv -o "$gone"
contains "$work/err" "No such file or directory"
contains "$work/err" "missing/m.ninfer"
run 3 conv -o "$gone" --force --max-file-bytes 400000
contains "$work/err" "No such file or directory"
run 3 dq "$id" -o "$long/missing/v.f32"
contains "$work/err" "No such file or directory"
contains "$work/err" "missing/v.f32"
run 0 conv -o "$long/m.ninfer"
run 3 conv -o "$long/m.ninfer"
contains "$work/err" "exists (use --force to replace it)"
rm -f "$long/m.ninfer.conversion.json"
run 3 conv -o "$long/m.ninfer" --no-report
contains "$work/err" "refusing to overwrite: File exists"
mkfifo "$long/m.ninfer.part-0001"
run 2 conv -o "$long/m.ninfer" --force --max-file-bytes 400000
contains "$work/err" "a FIFO, not a regular file"
no_temps "$long"

finish "outputs"
