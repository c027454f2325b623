#!/usr/bin/env bash
# `cmake --install` puts programs, the library, headers, a relocatable pkg-config file and a
# CMake package under a prefix; a C program builds against them with pkg-config alone, and a
# CMake project with find_package(ninfer) and the ninfer::ninfer target (and ninfer::ninfer_static).
# usage: test_install.sh BIN_DIR DATA_DIR   (BIN_DIR is BUILD/bin)
set -eu
build=$(cd "$1/.." && pwd)
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in bin/ninfer bin/ninfer-inspect bin/ninfer-verify bin/ninfer-diff include/ninfer/ninfer.h; do
    test -e "$prefix/$f" || { echo "FAIL missing $f"; exit 1; }
done
# the method programs' Python helper, where Debian's python3 looks under this prefix (lib/python3.X)
ls "$prefix"/lib/python3*/dist-packages/ninfer_method.py >/dev/null 2>&1 ||
    { echo "FAIL no lib/python3*/dist-packages/ninfer_method.py"; exit 1; }
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
# the CMake package: a consumer project, shared and static
mkdir "$prefix/consumer"
cp "$prefix/use.c" "$prefix/consumer/use.c"
cat >"$prefix/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(use C)
find_package(ninfer 0.1 REQUIRED)
add_executable(use_shared use.c)
target_link_libraries(use_shared PRIVATE ninfer::ninfer)
add_executable(use_static use.c)
target_link_libraries(use_static PRIVATE ninfer::ninfer_static)
CM
cmake -S "$prefix/consumer" -B "$prefix/consumer/build" -DCMAKE_PREFIX_PATH="$prefix" \
    -DCMAKE_C_FLAGS="${NINFER_TEST_CFLAGS:-}" >"$prefix/cmake.log" 2>&1 ||
    { echo "FAIL find_package(ninfer): $(tail -20 "$prefix/cmake.log")"; exit 1; }
cmake --build "$prefix/consumer/build" >>"$prefix/cmake.log" 2>&1 ||
    { echo "FAIL building against ninfer::ninfer: $(tail -20 "$prefix/cmake.log")"; exit 1; }
"$prefix/consumer/build/use_shared" >/dev/null || { echo "FAIL use_shared"; exit 1; }
"$prefix/consumer/build/use_static" >/dev/null || { echo "FAIL use_static"; exit 1; }
# the shared one links libninfer.so from the prefix
ldd "$prefix/consumer/build/use_shared" | grep -q "$prefix/lib.*/libninfer.so" ||
    { echo "FAIL use_shared does not link the installed libninfer.so: $(ldd "$prefix/consumer/build/use_shared")"; exit 1; }
# staged (DESTDIR, as `make install PREFIX=... DESTDIR=...` does): the .pc file still finds its
# prefix from where it lies
DESTDIR="$prefix/stage" cmake --install "$build" --prefix /opt/ninfer-test >/dev/null
spc=$(find "$prefix/stage" -name ninfer.pc | head -n 1)
libdir=$(PKG_CONFIG_PATH=$(dirname "$spc") pkg-config --variable=libdir ninfer)
test -e "$libdir/libninfer.so" || { echo "FAIL the staged ninfer.pc points at $libdir"; exit 1; }
echo "4 passed, 0 failed"
