# Helpers the CLI test scripts source (not a test itself: ctest runs tests/cli/test_*.sh).
# A script sets `work` (its scratch directory) and the counters pass=0 fail=0, then:
#   ok                       count a passed check
#   bad MESSAGE...           count a failed check and print it
#   run STATUS CMD ARGS...   run CMD (stdout in $work/out, stderr in $work/err) and check its exit status
#   same FILE1 FILE2         check that two files have the same bytes
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); printf 'FAIL %s\n' "$*"; }
run() {
    local want=$1; shift
    "$@" >"$work/out" 2>"$work/err"
    local got=$?
    if [ "$got" -eq "$want" ]; then ok; else bad "$* exited $got, expected $want: $(head -c 400 "$work/err")"; fi
}
same() { if cmp -s "$1" "$2"; then ok; else bad "$1 and $2 differ"; diff <(head -c 2000 "$1") <(head -c 2000 "$2") | head -20; fi; }
