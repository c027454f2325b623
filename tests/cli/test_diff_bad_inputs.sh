#!/usr/bin/env bash
# ninfer-diff (docs/ninfer-diff.md) on the bad-input corpus (docs/security.md): every
# ninfer-verify / ninfer-inspect case of tests/badinput/gen_bad_inputs.py as A, as B and as both,
# against a converted artifact: never a crash, a hang or a sanitizer report; a failure is an error
# on stderr with an exit status of 1 or 3.  A file compared with itself may be "same" (0):
# ninfer-diff compares, ninfer-verify judges.  (Apart from test_diff.sh so that the two run side
# by side; tests/README.md.)  The corpus is the one ctest's fixture
# fixture_badinput_corpus wrote (NINFER_BADINPUT_CORPUS), else one generated here.
# usage: test_diff_bad_inputs.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

corpus=${NINFER_BADINPUT_CORPUS:-}
if [ -z "$corpus" ] || [ ! -f "$corpus/cases.tsv" ]; then
    corpus=$work/bad
    python3 "$top/tests/badinput/gen_bad_inputs.py" "$corpus" "$data" >/dev/null || { echo "FAIL the bad-input generator"; exit 1; }
fi

# the valid side: test_diff.sh's base artifact (a q8 recipe of a one-layer checkpoint)
"$bin/ninfer-gen-checkpoint" "$work/ck" --layers 1 --vocab 300 >/dev/null || { echo "FAIL generator"; exit 1; }
diff_recipe "$work/base.yaml" diff-test ""
a=$work/m.ninfer
"$bin/ninfer-convert" -r "$work/base.yaml" -o "$a" --artifact-id 00112233445566778899aabbccddeeff --force \
    >/dev/null 2>"$work/conv.err" || { echo "FAIL convert: $(cat "$work/conv.err")"; exit 1; }

export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}exitcode=86"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}halt_on_error=1:exitcode=87"
# LeakSanitizer's scan at exit doubles the cost of a sanitized start (measured: 129 against 71 ms
# of CPU).  The first run of a case (the file as B, after A opened) checks for leaks the reader's
# whole path through that file and A's release after B failed; the other two read the same file
# with the same reader, and add ninfer-diff's own path when A fails, which is the same whatever
# the file: they check for leaks on every 8th case only (tests/README.md).  Every run is still
# watched by ASan and UBSan.
leaks_every=8
nbad=0
while IFS=$'\t' read -r -a f; do
    case ${f[4]} in ninfer-verify | ninfer-inspect) ;; *) continue ;; esac
    [ "${#f[@]}" -eq 6 ] || continue
    nbad=$((nbad + 1))
    leaks=
    for pair in "$a|${f[5]}" "${f[5]}|$a" "${f[5]}|${f[5]}"; do
        cd "$corpus/${f[0]}" || exit 1
        ASAN_OPTIONS=$ASAN_OPTIONS$leaks timeout 60 "$bin/ninfer-diff" "${pair%%|*}" "${pair#*|}" >"$work/out" 2>"$work/err" </dev/null
        got=$?
        cd "$work" || exit 1
        { err=$(<"$work/err"); } 2>/dev/null # (read in the shell: a grep per run cost more than the run)
        if [ $got -gt 3 ] || [ $got -eq 2 ] || [[ $err == *Sanitizer* ]]; then
            bad "${f[0]}: ninfer-diff ${pair/|/ } exited $got: $(head -c 300 "$work/err")"
        elif [ $got -ne 0 ] && [ ! -s "$work/out" ] && [ ! -s "$work/err" ]; then
            bad "${f[0]}: ninfer-diff ${pair/|/ } exited $got without a word"
        else
            ok
        fi
        [ $((nbad % leaks_every)) -eq 0 ] || leaks=:detect_leaks=0
    done
done <"$corpus/cases.tsv"
check test "$nbad" -ge 100

finish test_diff_bad_inputs
