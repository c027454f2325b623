#!/usr/bin/env bash
# A full filesystem: ninfer-convert reserves its output's blocks before writing any payload
# (common/io.c nf_io_allocate), so an artifact that cannot fit fails at once with exit 3, names
# the file and the reason, and leaves nothing behind; ninfer-dequant likewise.  Runs on a small
# tmpfs mounted for the test (root only; skipped, saying why, otherwise or where mounting is not
# allowed), unmounted at the end.
# usage: test_disk_full.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
mnt=$work/small
mounted=no
cleanup() {
    [ "$mounted" = yes ] && umount "$mnt" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP not root: cannot mount a small tmpfs to fill"
    exit 0
fi
mkdir "$mnt"
if ! mount -t tmpfs -o size=2m,mode=0755 tmpfs "$mnt" 2>"$work/mount.err"; then
    echo "SKIP cannot mount a tmpfs here: $(head -c 200 "$work/mount.err")"
    exit 0
fi
mounted=yes
"$bin/ninfer-gen-checkpoint" "$work/ck" --hidden 512 --intermediate 1024 --layers 1 --vocab 512 >/dev/null ||
    { echo "FAIL generator"; exit 1; }
run 3 "$bin/ninfer-convert" "$work/ck" -o "$mnt/m.ninfer" --format bf16
grep -q "No space left on device" "$work/err" && ok || bad "no ENOSPC in: $(head -c 300 "$work/err")"
grep -q "$mnt/m.ninfer" "$work/err" && ok || bad "the message does not name the output: $(head -c 300 "$work/err")"
[ -z "$(ls -A "$mnt")" ] && ok || bad "left behind: $(ls -A "$mnt")"
# it fits once the format is small enough: the same filesystem is usable again
run 0 "$bin/ninfer-convert" "$work/ck" -o "$mnt/q.ninfer" --format q4_g64_fp16 --no-report
run 0 "$bin/ninfer-verify" "$mnt/q.ninfer"
# dequant's f32 output does not fit
run 3 "$bin/ninfer-dequant" "$mnt/q.ninfer" --all -o "$mnt/all.safetensors"
[ "$(ls -A "$mnt")" = "q.ninfer" ] && ok || bad "dequant left behind: $(ls -A "$mnt")"
finish "disk full"
