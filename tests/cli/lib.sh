# Helpers the CLI test scripts source (not a test itself: ctest runs tests/cli/test_*.sh).
# A script starts with
#   . "$(dirname "$0")/lib.sh" "$@"
# and then has: set -u; bin (BIN_DIR, $1, absolute), data (DATA_DIR, $2, absolute), top (the
# repository), work (a scratch directory, removed on exit: a script with more to clean sets its
# own EXIT trap, which must remove "$work" too), the counters pass=0 fail=0, and:
#   ok                       count a passed check
#   bad MESSAGE...           count a failed check and print it
#   check CMD ARGS...        count CMD's success as a passed check, its failure as a failed one
#   run STATUS CMD ARGS...   run CMD (stdout in $work/out, stderr in $work/err) and check its exit status
#   same FILE1 FILE2         check that two files have the same bytes
#   contains FILE TEXT       check that FILE holds TEXT; lacks FILE TEXT: that it does not
#   nf_host                  this host's name as temp names carry it
#   finish NAME              print "NAME: P passed, F failed"; exit status 0 when nothing failed
# python3 runs NINFER_PYTHON when ctest names the interpreter (tests/CMakeLists.txt): a version
# manager's shim on PATH (pyenv) costs more per call than most of what a test asks of Python.
set -u
bin=$(cd "$1" && pwd)
data=$(cd "${2:-.}" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# the conversions' digest cache (docs/provenance.md) in the scratch directory, not the user's
export XDG_CACHE_HOME="$work/.cache"
pass=0
fail=0
# this host as temp names carry it (".<name>.<pid>@<host>.XXXXXX.tmp", lib/src/outputs/out_names.h nf_outputs_host)
nf_host=$(hostname | tr -c 'A-Za-z0-9\n-' '-' | cut -c1-63)
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); printf 'FAIL %s\n' "$*"; }
check() { if "$@"; then ok; else bad "check failed: $*"; fi; }
run() {
    local want=$1; shift
    "$@" >"$work/out" 2>"$work/err"
    local got=$?
    if [ "$got" -eq "$want" ]; then ok; else bad "$* exited $got, expected $want: $(head -c 400 "$work/err")"; fi
}
same() { if cmp -s "$1" "$2"; then ok; else bad "$1 and $2 differ"; diff <(head -c 2000 "$1") <(head -c 2000 "$2") | head -20; fi; }
contains() { if grep -qF -- "$2" "$1"; then ok; else bad "$1 lacks '$2': $(head -c 400 "$1")"; fi; }
lacks() { if grep -qF -- "$2" "$1"; then bad "$1 has '$2': $(head -c 400 "$1")"; else ok; fi; }
finish() { echo "$1: $pass passed, $fail failed"; [ "$fail" -eq 0 ]; }
if [ -n "${NINFER_PYTHON:-}" ] && [ -x "$NINFER_PYTHON" ]; then python3() { "$NINFER_PYTHON" "$@"; }; fi

# diff_recipe FILE OUTPUT_NAME EXTRA: the ninfer-diff tests' recipe of the generated checkpoint
# `ck` beside FILE -- q8_g32_fp16, norms fp32, the tokenizer a resource -- with EXTRA appended
# (rules or groups) (test_diff.sh, test_diff_bad_inputs.sh).
diff_recipe() {
    cat >"$1" <<EOF
recipe: 1
sources:
  base: ck
output:
  name: $2
components:
  text:
    config: {from: base}
    resources: {tokenizer.json: base/tokenizer.json}
defaults: {format: q8_g32_fp16}
rules:
  - match: ["*norm*"]
    when: {rank: 1}
    format: fp32
$3
EOF
}
