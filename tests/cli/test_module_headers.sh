#!/usr/bin/env bash
# Each module's private headers stay inside it, and includes run only from higher modules to
# lower ones (docs/library.md, "Modules and headers").  The rule, as checked here:
#   - A module is a directory lib/src/M.  The modules, lowest first, are the words of $order
#     below; a directory of lib/src missing from it fails the test, so a new module gets a
#     place in the order before it builds.
#   - Module interfaces: every header of lib/src/common, and the headers named in $interfaces.
#     Every other file under lib/src/M (headers, .inc fragments) is private to M.
#   1. A file under lib/src/M includes a "X/..." file of another module X only when it is a
#      module interface of X, and only when X is lower than M (common, the lowest, includes
#      nothing of another module).
#   2. A file under lib/src/M includes a public header <ninfer/H.h> only when H's module is M or
#      lower: error.h, escape.h, export.h and simd.h are common's, every other H.h is module H's.
#      The umbrella <ninfer/ninfer.h> names every module: only the highest module (convert)
#      includes it, and lib/src/common/version.c, which defines the nf_version it declares.
#   3. cmd/ and bench/ include only module interfaces of lib/src (and the public headers).
#   4. A public header includes only the public headers of its module or lower ones.
# tests/ are white-box tests and may include any module's private headers.  Last, the same scan
# runs on a small tree with one planted violation of each rule, which it must report.
# usage: test_module_headers.sh BIN_DIR DATA_DIR   (only the source tree is read)
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

order="common names preset format layout stats budget method container source import imatrix verify recipe dialect convert"
interfaces="format/ggml.h stats/stats.h budget/solve.h budget/werror.h budget/sensitivity.h stats/simd/lanes_avx2.h stats/simd/lanes_avx512.h
container/container_module.h"

rank() {
    local i=0 m
    for m in $order; do
        if [ "$m" = "$1" ]; then echo "$i"; return; fi
        i=$((i + 1))
    done
    echo -1
}
public_owner() {
    case $1 in
    error | escape | export | simd) echo common ;;
    *) echo "$1" ;;
    esac
}
is_interface() {
    case $1 in common/*) return 0 ;; esac
    local h
    for h in $interfaces; do [ "$h" = "$1" ] && return 0; done
    return 1
}
# "LINE TARGET" for every #include "DIR/..." (q: TARGET is DIR/...) or #include <ninfer/H.h>
# (p: TARGET is H) of file $2
includes() {
    if [ "$1" = q ]; then
        awk '/^[ \t]*#[ \t]*include[ \t]*"[A-Za-z0-9_]+\/[^"]*"/ {
            s = $0; sub(/^[^"]*"/, "", s); sub(/".*/, "", s); print FNR, s }' "$2"
    else
        awk '/^[ \t]*#[ \t]*include[ \t]*<ninfer\/[A-Za-z0-9_]+\.h>/ {
            s = $0; sub(/^[^<]*<ninfer\//, "", s); sub(/\.h>.*/, "", s); print FNR, s }' "$2"
    fi
}

# scan ROOT: print one line per violation of rules 1-4 in the tree ROOT
scan() {
    local root=$1 d m f rel line target x rx rm o
    for x in $interfaces; do
        [ -f "$root/lib/src/$x" ] || echo "interface $x (listed in test_module_headers.sh) does not exist"
    done
    for d in "$root"/lib/src/*/; do
        m=$(basename "$d")
        rm=$(rank "$m")
        if [ "$rm" -lt 0 ]; then
            echo "lib/src/$m: module not in the order of test_module_headers.sh"
            continue
        fi
        while IFS= read -r f; do
            rel=${f#"$root"/}
            while read -r line target; do
                [ -n "$target" ] || continue
                x=${target%%/*}
                [ "$x" = "$m" ] && continue
                [ -d "$root/lib/src/$x" ] || continue
                if ! is_interface "$target"; then
                    echo "$rel:$line: includes $target, private to module $x"
                fi
                rx=$(rank "$x")
                if [ "$rx" -ge "$rm" ]; then
                    echo "$rel:$line: module $m includes $target of module $x, which is not lower"
                fi
            done < <(includes q "$f")
            while read -r line target; do
                [ -n "$target" ] || continue
                if [ "$target" = ninfer ]; then
                    if [ "$m" != convert ] && [ "$rel" != lib/src/common/version.c ]; then
                        echo "$rel:$line: includes the umbrella <ninfer/ninfer.h>, which names higher modules"
                    fi
                    continue
                fi
                o=$(public_owner "$target")
                rx=$(rank "$o")
                if [ "$rx" -lt 0 ] || [ "$rx" -gt "$rm" ]; then
                    echo "$rel:$line: module $m includes <ninfer/$target.h> of module $o, which is not lower"
                fi
            done < <(includes p "$f")
        done < <(find "$d" -type f \( -name '*.c' -o -name '*.h' -o -name '*.inc' \) | sort)
    done
    while IFS= read -r f; do
        rel=${f#"$root"/}
        while read -r line target; do
            [ -n "$target" ] || continue
            x=${target%%/*}
            [ -d "$root/lib/src/$x" ] || continue
            is_interface "$target" || echo "$rel:$line: includes $target, private to module $x"
        done < <(includes q "$f")
    done < <(find "$root/cmd" "$root/bench" -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null | sort)
    for f in "$root"/lib/include/ninfer/*.h; do
        [ -f "$f" ] || continue
        rel=${f#"$root"/}
        m=$(basename "$f" .h)
        [ "$m" = ninfer ] && continue
        rm=$(rank "$(public_owner "$m")")
        while read -r line target; do
            [ -n "$target" ] || continue
            o=$(public_owner "$target")
            rx=$(rank "$o")
            if [ "$target" = ninfer ] || [ "$rx" -lt 0 ] || [ "$rx" -gt "$rm" ]; then
                echo "$rel:$line: public header of module $(public_owner "$m") includes <ninfer/$target.h>"
            fi
        done < <(includes p "$f")
    done
}

# the tree itself
scan "$top" >"$work/violations"
if [ -s "$work/violations" ]; then
    bad "module header rule broken:"
    cat "$work/violations"
else
    ok
fi

# a planted violation of each rule must be reported
t=$work/tree
for m in $order; do mkdir -p "$t/lib/src/$m"; done
mkdir -p "$t/lib/include/ninfer" "$t/cmd"
for x in $interfaces; do mkdir -p "$t/lib/src/${x%/*}" && : >"$t/lib/src/$x"; done
: >"$t/lib/src/container/container_internal.h"
: >"$t/lib/src/method/method_impl.h"
printf '#include "common/io.h"\n#include "container/container_module.h"\n#include <ninfer/container.h>\n' \
    >"$t/lib/src/verify/fine.c"
printf '#include <ninfer/ninfer.h>\n' >"$t/lib/src/convert/fine.c"
printf '#include "format/ggml.h"\n#include "stats/stats.h"\n' >"$t/lib/src/method/fine.c"
printf '#include <ninfer/ninfer.h>\n' >"$t/lib/src/common/version.c"
printf '#include <ninfer/error.h>\n#include <ninfer/format.h>\n' >"$t/lib/include/ninfer/layout.h"
scan "$t" >"$work/clean"
if [ -s "$work/clean" ]; then bad "the scan reports allowed includes: $(head -c 400 "$work/clean")"; else ok; fi
plant() { # FILE TEXT EXPECTED: TEXT added to FILE of the tree must be reported as EXPECTED
    printf '%s\n' "$2" >"$t/$1"
    scan "$t" >"$work/planted"
    if grep -qF -- "$3" "$work/planted"; then ok; else bad "planted '$2' in $1 not reported ($3)"; fi
    rm -f "$t/$1"
}
plant lib/src/recipe/p.c '#include "container/container_internal.h"' 'includes container/container_internal.h, private to module container'
plant lib/src/common/p.c '#include "method/method_impl.h"' 'module common includes method/method_impl.h'
plant lib/src/format/p.c '#include "stats/stats.h"' 'module format includes stats/stats.h of module stats, which is not lower'
plant lib/src/common/p.c '#include <ninfer/method.h>' 'module common includes <ninfer/method.h>'
plant lib/src/verify/p.c '#include <ninfer/ninfer.h>' 'includes the umbrella'
plant cmd/p.c '#include "layout/kernels.h"' 'cmd/p.c:1: includes layout/kernels.h, private to module layout'
plant lib/include/ninfer/format.h '#include <ninfer/layout.h>' 'public header of module format includes <ninfer/layout.h>'
mkdir -p "$t/lib/src/newmod"
scan "$t" >"$work/planted"
contains "$work/planted" "lib/src/newmod: module not in the order"
finish "module headers"
