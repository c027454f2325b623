#!/usr/bin/env bash
# The hardening flags of the top-level CMakeLists.txt reach the binaries: every program and the
# shared library is position independent (ELF type DYN), has full RELRO (a GNU_RELRO segment and
# BIND_NOW / FLAGS_1 NOW), calls the stack protector, and, in an optimized build without
# sanitizers, uses the _FORTIFY_SOURCE checked functions (__*_chk).  Skipped when readelf is
# missing or the tree was configured with -DNINFER_HARDEN=OFF.
# usage: test_hardening.sh BIN_DIR DATA_DIR   (BIN_DIR is BUILD/bin)
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
build=$(cd "$bin/.." && pwd)
if ! command -v readelf >/dev/null 2>&1; then
    echo "SKIP readelf is not installed (binutils): hardening not checked"
    exit 0
fi
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" 2>/dev/null | head -n 1; }
harden=$(cache_value NINFER_HARDEN)
case "$harden" in OFF | FALSE | NO | 0 | off | false | no)
    echo "SKIP configured with NINFER_HARDEN=$harden"
    exit 0 ;;
esac
type=$(cache_value CMAKE_BUILD_TYPE)
sanitize=$(cache_value NINFER_SANITIZE)
fortify=no
case "$type" in Release | RelWithDebInfo | MinSizeRel) [ "$sanitize" = ON ] || fortify=yes ;; esac


files=("$bin/ninfer" "$bin/ninfer-convert" "$bin/ninfer-inspect" "$bin/ninfer-verify" "$bin/ninfer-dequant" "$bin/ninfer-diff")
lib=$(ls "$build"/lib/libninfer.so.*.*.* 2>/dev/null | head -n 1)
[ -n "$lib" ] && files+=("$lib") || bad "no shared library under $build/lib"
chk_total=0
for f in "${files[@]}"; do
    name=${f#"$build"/}
    [ -f "$f" ] || { bad "$name is missing"; continue; }
    if LC_ALL=C readelf -h "$f" | grep -qE 'Type:[[:space:]]+DYN'; then ok; else bad "$name is not PIE (ELF type is not DYN)"; fi
    if LC_ALL=C readelf -lW "$f" | grep -q GNU_RELRO; then ok; else bad "$name has no GNU_RELRO segment"; fi
    dyn=$(LC_ALL=C readelf -dW "$f")
    if grep -qE '\(BIND_NOW\)|\(FLAGS\).*BIND_NOW|\(FLAGS_1\).*NOW' <<<"$dyn"; then ok; else bad "$name is not linked with -z now (partial RELRO)"; fi
    syms=$(LC_ALL=C readelf --dyn-syms -W "$f")
    if grep -q '__stack_chk_fail' <<<"$syms"; then ok; else bad "$name does not use the stack protector"; fi
    chk=$(grep -cE ' __[a-z0-9_]+_chk(@|$)' <<<"$syms")
    chk_total=$((chk_total + chk))
done
if [ "$fortify" = yes ]; then
    if [ "$chk_total" -gt 0 ]; then ok; else bad "no __*_chk function is used: _FORTIFY_SOURCE is not in effect ($type build)"; fi
else
    echo "note: _FORTIFY_SOURCE not checked ($type build${sanitize:+, NINFER_SANITIZE=$sanitize})"
fi
finish "hardening"
