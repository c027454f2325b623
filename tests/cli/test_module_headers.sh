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
#   3. cmd/ (programs/, cli/, gen/: every file below it) and bench/ include only module
#      interfaces of lib/src (and the public headers).
#   4. A public header includes only the public headers of its module or lower ones.
#   5. No two files under lib/src and cmd (its subdirectories too) have the same name (a name
#      says which file, in a message, a backtrace or a profile, without its directory).
#   6. Every global the library defines (`nm -g --defined-only` of BIN_DIR/../lib/libninfer.a)
#      is named nf_...; an internal one (not exported by libninfer.so, whose names are the
#      documented API) nf_<module>_..., or nf_<word>_... for a word listed for its module in
#      $prefixes below (the families a module had before the rule: common's nf_buf_, nf_io_, ...).
# tests/ are white-box tests and may include any module's private headers.  Last, the same scan
# runs on a small tree with one planted violation of each rule, which it must report.
# usage: test_module_headers.sh BIN_DIR DATA_DIR   (the source tree, and the library for rule 6)
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

order="common outputs names preset format layout stats budget method container source import imatrix verify mprog recipe dialect convert"
interfaces="outputs/out_names.h outputs/out_lock.h outputs/out_publish.h outputs/out_file.h outputs/out_signals.h outputs/out_whole.h
format/ggml.h stats/stats.h budget/solve.h budget/werror.h budget/sensitivity.h stats/simd/lanes_avx2.h stats/simd/lanes_avx512.h stats/simd/lanes_neon.h
container/container_module.h dialect/qweight_rows.h method/measure.h mprog/mprog_module.h"
# rule 6: the words an internal global of a module may take after nf_ besides the module's name
declare -A prefixes=(
    [common]="buf io json jw pool sha256 simd strset utf8"
    [outputs]="out sig"
    [format]="ggml"
    [layout]="codes e2m1 e4m3fn fp8 grouped nibbles nvfp4 problems rs words"
    [stats]="errstats xsum"
    [budget]="sensitivity"
    [method]="absmax fp8 ggml gq gq1 gq1m gq1s gq3 grouped iq2 nvfp4 search"
    [container]="artifact dir json part split wr writer xxh3"
    [convert]="budget gguf plan"
)

# (asked of the shell and of one awk per directory: a subshell per include and two awks per file
# made this scan cost more than a build)
declare -A rank_of=()
i=0
for m in $order; do rank_of[$m]=$i; i=$((i + 1)); done
rank() { rk=${rank_of[$1]:--1}; }   # sets rk: the rank of module $1, -1 when not in the order
public_owner() {                    # sets owner: the module of the public header $1.h
    case $1 in
    error | escape | export | simd) owner=common ;;
    *) owner=$1 ;;
    esac
}
is_interface() {
    case $1 in common/*) return 0 ;; esac
    local h
    for h in $interfaces; do [ "$h" = "$1" ] && return 0; done
    return 1
}
# "FILE<tab>LINE<tab>KIND<tab>TARGET" for every #include "DIR/..." (KIND q: TARGET is DIR/...) and
# every #include <ninfer/H.h> (KIND p: TARGET is H) of the files named on stdin, one a line
includes() {
    local files=()
    mapfile -t files
    [ ${#files[@]} -gt 0 ] || return 0
    awk '/^[ \t]*#[ \t]*include[ \t]*"[A-Za-z0-9_]+\/[^"]*"/ {
            s = $0; sub(/^[^"]*"/, "", s); sub(/".*/, "", s); print FILENAME "\t" FNR "\tq\t" s }
         /^[ \t]*#[ \t]*include[ \t]*<ninfer\/[A-Za-z0-9_]+\.h>/ {
            s = $0; sub(/^[^<]*<ninfer\//, "", s); sub(/\.h>.*/, "", s); print FILENAME "\t" FNR "\tp\t" s }' "${files[@]}"
}

# scan ROOT: print one line per violation of rules 1-4 in the tree ROOT
scan() {
    local root=$1 d m f rel line kind target x rx rm o rk owner
    for x in $interfaces; do
        [ -f "$root/lib/src/$x" ] || echo "interface $x (listed in test_module_headers.sh) does not exist"
    done
    for d in "$root"/lib/src/*/; do
        m=${d%/}
        m=${m##*/}
        rank "$m"
        rm=$rk
        if [ "$rm" -lt 0 ]; then
            echo "lib/src/$m: module not in the order of test_module_headers.sh"
            continue
        fi
        while IFS=$'\t' read -r f line kind target; do
            [ -n "$target" ] || continue
            rel=${f#"$root"/}
            if [ "$kind" = q ]; then
                x=${target%%/*}
                [ "$x" = "$m" ] && continue
                [ -d "$root/lib/src/$x" ] || continue
                if ! is_interface "$target"; then
                    echo "$rel:$line: includes $target, private to module $x"
                fi
                rank "$x"
                if [ "$rk" -ge "$rm" ]; then
                    echo "$rel:$line: module $m includes $target of module $x, which is not lower"
                fi
                continue
            fi
            if [ "$target" = ninfer ]; then
                if [ "$m" != convert ] && [ "$rel" != lib/src/common/version.c ]; then
                    echo "$rel:$line: includes the umbrella <ninfer/ninfer.h>, which names higher modules"
                fi
                continue
            fi
            public_owner "$target"
            o=$owner
            rank "$o"
            if [ "$rk" -lt 0 ] || [ "$rk" -gt "$rm" ]; then
                echo "$rel:$line: module $m includes <ninfer/$target.h> of module $o, which is not lower"
            fi
        done < <(find "$d" -type f \( -name '*.c' -o -name '*.h' -o -name '*.inc' \) | sort | includes)
    done
    find "$root/lib/src" "$root/cmd" -type f 2>/dev/null | sort | awk -v root="$root/" '{
            rel = substr($0, length(root) + 1); n = split(rel, part, "/"); name = part[n]
            seen[name] = seen[name] ? seen[name] " " rel : rel; count[name]++ }
        END { for (name in count) if (count[name] > 1) print "file name " name " repeats: " seen[name] }' | sort
    while IFS=$'\t' read -r f line kind target; do
        [ -n "$target" ] && [ "$kind" = q ] || continue
        rel=${f#"$root"/}
        x=${target%%/*}
        [ -d "$root/lib/src/$x" ] || continue
        is_interface "$target" || echo "$rel:$line: includes $target, private to module $x"
    done < <(find "$root/cmd" "$root/bench" -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null | sort | includes)
    while IFS=$'\t' read -r f line kind target; do
        [ -n "$target" ] && [ "$kind" = p ] || continue
        rel=${f#"$root"/}
        m=${f##*/}
        m=${m%.h}
        [ "$m" = ninfer ] && continue
        public_owner "$m"
        rank "$owner"
        rm=$rk
        public_owner "$target"
        rank "$owner"
        if [ "$target" = ninfer ] || [ "$rk" -lt 0 ] || [ "$rk" -gt "$rm" ]; then
            public_owner "$m"
            echo "$rel:$line: public header of module $owner includes <ninfer/$target.h>"
        fi
    done < <(for f in "$root"/lib/include/ninfer/*.h; do [ -f "$f" ] && printf '%s\n' "$f"; done | includes)
}

# rule 6 on lines "MODULE SYMBOL EXPORTED" (EXPORTED 1 for a name of the shared library's ABI):
# one line per global named against the rule
globals_named() {
    local m sym exported word w ok
    while read -r m sym exported; do
        if [ "${sym#nf_}" = "$sym" ]; then
            echo "lib/src/$m: global $sym is not named nf_$m""_... (rename it)"
            continue
        fi
        [ "$exported" = 1 ] && continue
        word=${sym#nf_}
        word=${word%%_*}
        ok=0
        for w in "$m" ${prefixes[$m]:-}; do [ "$word" = "$w" ] && ok=1; done
        [ $ok = 1 ] || echo "lib/src/$m: internal global $sym is not named nf_$m""_... (rename it, or list its word for $m in test_module_headers.sh)"
    done
}
# "MODULE SYMBOL EXPORTED" for every global of the built library, its module found from the
# archive member's name (rule 5 makes it the name of one source file)
library_globals() {
    local lib=$bin/../lib/libninfer.a so=$bin/../lib/libninfer.so
    [ -f "$lib" ] || { echo "no library at $lib" >&2; return 1; }
    declare -A module_of=()
    local f name
    while read -r f; do
        name=${f##*/}
        f=${f#"$top"/lib/src/}
        module_of[$name.o]=${f%%/*}
    done < <(find "$top/lib/src" -name '*.c')
    declare -A abi=()
    if [ -f "$so" ]; then
        while read -r _ _ name; do abi[$name]=1; done < <(nm -D --defined-only "$so")
    fi
    local member sym
    while read -r member sym; do
        echo "${module_of[$member]:-unknown} $sym ${abi[$sym]:-0}"
    done < <(nm -A -g --defined-only "$lib" 2>/dev/null | awk 'NF == 3 { n = split($1, a, ":"); print a[n - 1] " " $3 }')
}

# the tree itself
scan "$top" >"$work/violations"
library_globals >"$work/globals" || bad "cannot list the library's globals"
[ -s "$work/globals" ] || bad "no global listed from $bin/../lib/libninfer.a"
globals_named <"$work/globals" >>"$work/violations"
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
    >"$t/lib/src/verify/fine_verify.c"
printf '#include <ninfer/ninfer.h>\n' >"$t/lib/src/convert/fine_convert.c"
printf '#include "format/ggml.h"\n#include "stats/stats.h"\n' >"$t/lib/src/method/fine_method.c"
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
: >"$t/lib/src/format/values.c"
plant lib/src/dialect/values.c '' 'file name values.c repeats: lib/src/dialect/values.c lib/src/format/values.c'
plant cmd/values.c '' 'file name values.c repeats: cmd/values.c lib/src/format/values.c'
rm -f "$t/lib/src/format/values.c"
mkdir -p "$t/lib/src/newmod"
scan "$t" >"$work/planted"
contains "$work/planted" "lib/src/newmod: module not in the order"
# rule 6 on a planted listing: the exported and well-named pass, the others are named
printf '%s\n' "recipe nf_recipe_parse 1" "recipe nf_recipe_glob_match 0" "common nf_jw_parse 0" "method nf_gq_fit 0" \
    "convert nf_plan_build 0" "stats nf_errstats_new 1" "common nf_strset_find 0" >"$work/fine-globals"
globals_named <"$work/fine-globals" >"$work/planted"
if [ -s "$work/planted" ]; then bad "rule 6 reports well-named globals: $(head -c 400 "$work/planted")"; else ok; fi
printf '%s\n' "recipe yn_parse 0" "source src_file_read 0" "common nf_thread_run 0" "format nf_recipe_x 0" \
    "layout gq_fit_positive 1" >"$work/bad-globals"
globals_named <"$work/bad-globals" >"$work/planted"
contains "$work/planted" "lib/src/recipe: global yn_parse is not named nf_recipe_..."
contains "$work/planted" "lib/src/source: global src_file_read is not named nf_source_..."
contains "$work/planted" "lib/src/common: internal global nf_thread_run is not named nf_common_..."
contains "$work/planted" "lib/src/format: internal global nf_recipe_x is not named nf_format_..."
contains "$work/planted" "lib/src/layout: global gq_fit_positive is not named nf_layout_..."
finish "module headers"
