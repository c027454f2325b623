#!/usr/bin/env bash
# `cmake --install` puts programs, the library, headers and a relocatable pkg-config file under
# a prefix, and a C program builds against them with pkg-config alone.
# usage: test_install.sh BIN_DIR DATA_DIR   (BIN_DIR is BUILD/bin)
set -eu
build=$(cd "$1/.." && pwd)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/ninfer bin/ninfer-inspect bin/ninfer-verify include/ninfer/ninfer.h; do
    test -e "$prefix/$f" || { echo "FAIL missing $f"; exit 1; }
done
pc=$(find "$prefix" -name ninfer.pc | head -n 1)
test -n "$pc" || { echo "FAIL no ninfer.pc"; exit 1; }
export PKG_CONFIG_PATH=$(dirname "$pc")
cat >"$prefix/use.c" <<'C'
#include <ninfer/ninfer.h>
#include <stdio.h>
int main(void)
{
    const nf_format *f = nf_format_lookup("q8_g32_fp16");
    printf("%s %u\n", f ? f->name : "?", f ? f->group_size : 0);
    return f && f->group_size == 32 ? 0 : 1;
}
C
cc ${NINFER_TEST_CFLAGS:-} "$prefix/use.c" $(pkg-config --cflags --libs ninfer) -o "$prefix/use"
LD_LIBRARY_PATH=$(pkg-config --variable=libdir ninfer) "$prefix/use"
"$prefix/bin/ninfer-verify" --version >/dev/null
echo "1 passed, 0 failed"
