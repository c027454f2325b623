#!/usr/bin/env bash
# The default build is the fast build (docs/library.md, "Build flags"): `make`, `make demo`,
# `make install` and the library users link are compiled -O3 with debug info, with the flags
# `make bench` measures, and without -march=native (the SIMD kernels are chosen at run time).
#   1. a fresh configure of the source tree with no build type gives RelWithDebInfo = -O3 -g;
#   2. the Makefile's configure commands of `make` (build) and `make bench` name the same type;
#   3. in an optimized build (this one, unless it is the sanitizer or a Debug build), every
#      compilation unit of libninfer.so records -O3 and -g in its DWARF producer string, and
#      none records -march=native.
# usage: test_build_flags.sh BIN_DIR DATA_DIR   (BIN_DIR is BUILD/bin, DATA_DIR is tests/data)
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
build=$(cd "$bin/.." && pwd)
src=$(cd "$2/../.." && pwd)

cache_value() { sed -n "s/^$2:[A-Z]*=//p" "$1/CMakeCache.txt" 2>/dev/null | head -n 1; }

# 1. a fresh configure, as `cmake -S . -B build` with nothing else
if cmake -S "$src" -B "$work/fresh" -DNINFER_TESTS=OFF >"$work/configure.log" 2>&1; then
    ok
    type=$(cache_value "$work/fresh" CMAKE_BUILD_TYPE)
    flags=$(cache_value "$work/fresh" CMAKE_C_FLAGS_RELWITHDEBINFO)
    [ "$type" = RelWithDebInfo ] && ok || bad "a fresh configure picks build type '$type', expected RelWithDebInfo"
    case " $flags " in *" -O3 "*) ok ;; *) bad "RelWithDebInfo flags are '$flags': no -O3" ;; esac
    case " $flags " in *" -g "*) ok ;; *) bad "RelWithDebInfo flags are '$flags': no -g" ;; esac
    case " $flags " in *"-march=native"*) bad "RelWithDebInfo flags are '$flags': -march=native" ;; *) ok ;; esac
else
    bad "cmake -S $src failed: $(tail -n 5 "$work/configure.log")"
fi

# 2. the Makefile: `make` (build) and `make bench` configure with the same build type
make_type() {
    make -n -C "$src" "$@" 2>/dev/null | sed -n 's/.*-DCMAKE_BUILD_TYPE=\([A-Za-z]*\).*/\1/p' | head -n 1
}
t_build=$(make_type build BUILD="$work/mk-build")
t_bench=$(make_type bench BENCH_BUILD="$work/mk-bench")
[ "$t_build" = RelWithDebInfo ] && ok || bad "make configures build type '$t_build', expected RelWithDebInfo"
[ -n "$t_bench" ] && [ "$t_bench" = "$t_build" ] && ok ||
    bad "make bench configures build type '$t_bench', make configures '$t_build': they must measure the same flags"

# 3. what this build compiled
type=$(cache_value "$build" CMAKE_BUILD_TYPE)
sanitize=$(cache_value "$build" NINFER_SANITIZE)
lib=$(ls "$build"/lib/libninfer.so.*.*.* 2>/dev/null | head -n 1)
if ! command -v readelf >/dev/null 2>&1; then
    echo "note: readelf is not installed (binutils): the compiled flags are not checked"
elif [ "$sanitize" = ON ] || { [ "$type" != RelWithDebInfo ] && [ "$type" != Release ]; }; then
    echo "note: $type build${sanitize:+ (NINFER_SANITIZE=$sanitize)}: the compiled flags are not checked"
elif [ -z "$lib" ]; then
    bad "no shared library under $build/lib"
else
    LC_ALL=C readelf --debug-dump=info "$lib" 2>/dev/null | sed -n 's/.*DW_AT_producer.*: \(GNU .*\)$/\1/p' \
        >"$work/producers"
    units=$(wc -l <"$work/producers")
    [ "$units" -gt 10 ] && ok || bad "libninfer.so has $units compilation units with a producer string (no -g?)"
    missing=$(grep -cv -- ' -O3' "$work/producers")
    [ "$missing" -eq 0 ] && ok || bad "$missing of $units units of libninfer.so are not compiled -O3: $(grep -v -- ' -O3' "$work/producers" | head -n 1)"
    missing=$(grep -cv -- ' -g' "$work/producers")
    [ "$missing" -eq 0 ] && ok || bad "$missing of $units units of libninfer.so are compiled without -g"
    native=$(grep -c -- '-march=native' "$work/producers")
    [ "$native" -eq 0 ] && ok || bad "$native units of libninfer.so are compiled -march=native"
fi

finish "build flags"
