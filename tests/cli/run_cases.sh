#!/usr/bin/env bash
# The case-per-file CLI golden suite (tests/cli/cases, described in tests/README.md).
#
# usage: run_cases.sh [--bin DIR] [--data DIR] [--set-exact] [--verbose] [PATTERN...]
#
# Every tests/cli/cases/GROUP/NAME.sh is a case: a bash script run in a fresh scratch directory
# holding only `data` (a symbolic link to DATA_DIR, default tests/data), with BIN_DIR (default
# build/bin) first on PATH and a fixed environment (LC_ALL=C, TZ=UTC, HOME the scratch directory).
# Its stdout, stderr and exit status must equal NAME.sh.stdout.exp, NAME.sh.stderr.exp and
# NAME.sh.exit.exp byte for byte; a missing expected file is a failure.  Output that names the
# scratch directory, the repository or DATA_DIR is a failure too (a case uses relative paths).
#
# PATTERN selects the cases whose path below cases/, written /GROUP/NAME.sh, contains it (so
# /verify/ is exactly the group verify); with none, all.
# --set-exact writes the expected files from what the selected cases do now (review the diff
# with git before committing); it refuses (and fails) a case whose output names a path above.
# --verbose lists every case run.
# Exit status: 0 when every selected case matches (or, with --set-exact, was written), 1 otherwise,
# 2 usage error.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
cases=$here/cases
bin=$top/build/bin
data=$top/tests/data
set_exact=0
verbose=0
patterns=()
while [ $# -gt 0 ]; do
    case "$1" in
    --bin) bin=${2:?--bin needs a directory}; shift 2 ;;
    --data) data=${2:?--data needs a directory}; shift 2 ;;
    --set-exact) set_exact=1; shift ;;
    --verbose) verbose=1; shift ;;
    -h | --help) sed -n '2,/^set -u/{/^set -u/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    --) shift; patterns+=("$@"); break ;;
    -*) echo "run_cases.sh: unknown option '$1'" >&2; exit 2 ;;
    *) patterns+=("$1"); shift ;;
    esac
done
bin=$(cd "$bin" && pwd) || { echo "run_cases.sh: no binary directory" >&2; exit 2; }
data=$(cd "$data" && pwd) || { echo "run_cases.sh: no data directory" >&2; exit 2; }

scratch_root=$(mktemp -d)
trap 'rm -rf "$scratch_root"' EXIT

selected() {
    local rel=$1 p
    [ ${#patterns[@]} -eq 0 ] && return 0
    for p in "${patterns[@]}"; do
        case "/$rel" in *"$p"*) return 0 ;; esac
    done
    return 1
}

# compare KIND EXPECTED GOT: diff -u, labelled with the case
compare() {
    local kind=$1 exp=$2 got=$3
    if [ ! -f "$exp" ]; then
        echo "  missing ${exp#"$cases"/} (write it with --set-exact)"
        return 1
    fi
    if ! cmp -s "$exp" "$got"; then
        echo "  $kind differs:"
        diff -u --label "${exp#"$cases"/}" --label "$kind (got)" "$exp" "$got" | head -60 | sed 's/^/    /'
        return 1
    fi
    return 0
}

n=0 failed=0 written=0
failures=()
while IFS= read -r file; do
    rel=${file#"$cases"/}
    selected "$rel" || continue
    n=$((n + 1))
    [ "$verbose" = 1 ] && echo "case $rel"
    s=$scratch_root/$n
    mkdir "$s" "$s/run"
    ln -s "$data" "$s/run/data"
    (cd "$s/run" && env -i PATH="$bin:/usr/local/bin:/usr/bin:/bin" HOME="$s/run" LC_ALL=C TZ=UTC \
        ${ASAN_OPTIONS:+ASAN_OPTIONS="$ASAN_OPTIONS"} ${UBSAN_OPTIONS:+UBSAN_OPTIONS="$UBSAN_OPTIONS"} \
        timeout 120 bash "$file" >"$s/stdout" 2>"$s/stderr" </dev/null)
    echo "$?" >"$s/exit"
    ok=1
    : >"$s/report"
    for path in "$s" "$top" "$data"; do
        if grep -qF -- "$path" "$s/stdout" "$s/stderr"; then
            echo "  output names $path (use relative paths: data/...)" >>"$s/report"
            ok=0
        fi
    done
    if [ "$set_exact" = 1 ] && [ "$ok" = 1 ]; then
        for k in stdout stderr exit; do
            if ! cmp -s "$s/$k" "$file.$k.exp"; then
                cp "$s/$k" "$file.$k.exp"
                echo "wrote ${rel}.$k.exp"
                written=$((written + 1))
            fi
        done
        rm -rf "$s"
        continue
    fi
    if [ "$set_exact" = 0 ]; then
        for k in exit stdout stderr; do
            compare "$k" "$file.$k.exp" "$s/$k" >>"$s/report" || ok=0
        done
    fi
    if [ "$ok" = 0 ]; then
        failed=$((failed + 1))
        failures+=("$rel")
        echo "FAIL $rel"
        cat "$s/report"
    fi
    rm -rf "$s"
done < <(find "$cases" -type f -name '*.sh' | LC_ALL=C sort)

if [ "$n" -eq 0 ]; then
    echo "run_cases.sh: no case matches ${patterns[*]:-}" >&2
    exit 1
fi
if [ "$set_exact" = 1 ]; then
    echo "cases: $n run, $written expected files written, $failed refused"
else
    echo "cases: $n run, $((n - failed)) passed, $failed failed"
fi
[ "$failed" -eq 0 ] || { printf '  failed: %s\n' "${failures[@]}"; exit 1; }
