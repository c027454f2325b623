#!/usr/bin/env bash
# The bad-input corpus (docs/security.md): tests/badinput/gen_bad_inputs.py writes one
# handcrafted bad file set per failure class of every reader (GGUF, safetensors and their
# index, .ninfer containers and parts, recipes, imatrix files); each case is run with the program
# it names and must
#   - exit with the expected status (1 invalid input, 3 I/O) within 60 s (no hang),
#   - print every expected substring (the file, the rule, the object/tensor/key, the position),
#   - leave no new file in its directory (no output, no temp file, no report),
#   - for ninfer-verify, name no object twice in one problem line ("object 'x': structure:
#     object 'x': ..."),
#   - produce no sanitizer report (ASan/LSan/UBSan: in the sanitize build a report fails the
#     case even when the exit status happens to match);
# and a case flagged "mem" (a tiny file declaring 2^40 elements, tensors, keys, bytes...) must
# also fail the same way with its address space limited to 1 GB (`ulimit -v`), so a parser
# that allocates by declared counts cannot pass.  The ulimit run is skipped when the programs
# are sanitized (ASan reserves terabytes of shadow address space).
# usage: test_bad_inputs.sh BIN_DIR DATA_DIR [CASE-PATTERN]
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
pattern=${3:-}
here=$(cd "$(dirname "$0")" && pwd)

# the corpus ctest's fixture fixture_badinput_corpus wrote (NINFER_BADINPUT_CORPUS, shared with
# test_diff_bad_inputs.sh: tests/README.md), else one generated here
cases=${NINFER_BADINPUT_CORPUS:-}
if [ -z "$cases" ] || [ ! -f "$cases/cases.tsv" ]; then
    cases=$work/cases
    python3 "$here/../badinput/gen_bad_inputs.py" "$cases" "$data" || { echo "FAIL the generator"; exit 1; }
fi

sanitized=0
case "${NINFER_TEST_CFLAGS:-}" in *-fsanitize*) sanitized=1 ;; esac
# A sanitizer report must never look like a plain "invalid input" exit: give it its own status.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}exitcode=86"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}halt_on_error=1:exitcode=87"
export LSAN_OPTIONS="${LSAN_OPTIONS:+$LSAN_OPTIONS:}exitcode=88"
unset NINFER_BADINPUT_UNDEFINED
limit_kb=1000000

# check NAME STATUS NEEDLES LOG GOT: the common assertions on one run (the log read once, matched
# in the shell: a fork per needle made the bash the larger part of the test's time)
sanitizer_report='ERROR: (Address|Leak)Sanitizer|runtime error:|UndefinedBehaviorSanitizer|SUMMARY: .*Sanitizer'
check() {
    local name=$1 want=$2 needles=$3 log=$4 got=$5 what=${6:-} text
    { text=$(<"$log"); } 2>/dev/null # (a NUL byte would be dropped with a warning)
    if [[ $text =~ $sanitizer_report ]]; then
        bad "$name$what: sanitizer report: $(grep -m3 -E 'Sanitizer|runtime error' "$log" | tr '\n' ' ')"
        return
    fi
    if [ "$got" -ne "$want" ]; then
        bad "$name$what: exit status $got, expected $want: $(head -c 400 "$log" | tr '\n' ' ')"
        return
    fi
    local rest=$needles n
    while [ -n "$rest" ]; do
        n=${rest%% && *}
        if [ "$n" = "$rest" ]; then rest=; else rest=${rest#* && }; fi
        if [[ $text != *"$n"* ]]; then
            bad "$name$what: output lacks '$n': $(head -c 400 "$log" | tr '\n' ' ')"
            return
        fi
    done
    ok
}

# What each case leaves in its directory is checked once for all of them: one listing of the
# case tree before the runs and one after (two finds per case cost more than the runs).
list_cases() { (cd "$cases" && find . -mindepth 1 | sort) >"$1"; }
list_cases "$work/before"
ncases=0
nverify=0
ran=()
while IFS=$'\t' read -r -a f; do
    name=${f[0]} want=${f[1]} needles=${f[2]} flags=${f[3]} prog=${f[4]}
    if [ -n "$pattern" ] && [[ $name != *$pattern* ]]; then continue; fi
    ncases=$((ncases + 1))
    dir=$cases/$name
    args=()
    for a in "${f[@]:5}"; do args+=("${a//\{out\}/$dir/out}"); done
    cd "$dir" || { bad "$name: no case directory"; continue; }
    timeout 60 "$bin/$prog" "${args[@]}" >"$work/log" 2>&1 </dev/null
    got=$?
    cd "$work" || exit 1
    if [ "$got" -eq 124 ]; then bad "$name: timed out (hang)"; continue; fi
    check "$name" "$want" "$needles" "$work/log" "$got"
    ran+=("$name")
    if [ "$prog" = ninfer-verify ]; then
        # no problem line names its object twice ("object 'x': structure: object 'x': ..."; was
        # test_verify_integrity.sh's own run of these cases)
        nverify=$((nverify + 1))
        if grep -E "object '([^']*)': [a-z]+: object '\1'" "$work/log" >"$work/dup"; then
            bad "$name: the object is named twice: $(head -c 300 "$work/dup")"
        else
            ok
        fi
    fi
    if [[ ,$flags, == *,mem,* ]] && [ "$sanitized" -eq 0 ]; then
        (cd "$dir" && ulimit -v "$limit_kb" && timeout 60 "$bin/$prog" "${args[@]}") >"$work/log" 2>&1 </dev/null
        got=$?
        check "$name" "$want" "$needles" "$work/log" "$got" " (ulimit -v $limit_kb)"
    fi
    [ "${NINFER_BADINPUT_VERBOSE:-0}" = 1 ] && printf '%s: %s\n' "$name" "$(head -c 300 "$work/log" | tr '\n' ' ')"
done <"$cases/cases.tsv"
# no new file (no output, no temp file, no report) and none gone, in any case's directory
list_cases "$work/after"
declare -A changed=()
while IFS= read -r path; do
    path=${path#./}
    changed[${path%%/*}]+="${path#*/} "
done < <(comm -3 "$work/before" "$work/after" | tr -d '\t')
for name in "${ran[@]}"; do
    if [ -n "${changed[$name]:-}" ]; then bad "$name: left files behind (or removed some): ${changed[$name]}"; else ok; fi
done

[ "$ncases" -ge 1 ] || bad "no case ran"
if [ -z "$pattern" ] && [ "$ncases" -lt 60 ]; then bad "only $ncases cases (at least 60 expected)"; fi
if [ -z "$pattern" ] && [ "$nverify" -lt 50 ]; then bad "only $nverify ninfer-verify cases (at least 50 expected)"; fi
echo "bad inputs: $ncases cases, $pass checks passed, $fail failed"
[ "$fail" -eq 0 ]
