#!/usr/bin/env bash
# Program-level tests: exit statuses, --help/--version, the dispatcher and refusals of damaged
# artifacts.  (The golden outputs of ninfer-inspect and ninfer-verify on upstream artifacts are
# cases of tests/cli/cases, run by run_cases.sh.)
# usage: test_programs.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

# expect_exit STATUS PROG ARGS...: run and compare the exit status.
expect_exit() {
    local want=$1; shift
    "$@" >"$work/out" 2>"$work/err"
    local got=$?
    if [ "$got" -eq "$want" ]; then ok; else bad "$* exited $got, expected $want: $(head -c 300 "$work/err")"; fi
}

# contains FILE TEXT
contains() { if grep -qF -- "$2" "$1"; then ok; else bad "$1 lacks '$2'"; fi; }

for p in inspect verify; do
    expect_exit 0 "$bin/ninfer-$p" --help
    contains "$work/out" "usage: ninfer-$p"
    contains "$work/out" "examples:"
    expect_exit 0 "$bin/ninfer-$p" --version
    contains "$work/out" "ninfer-tools"
    expect_exit 2 "$bin/ninfer-$p" --no-such-flag
    contains "$work/err" "ninfer-$p: error: unknown option '--no-such-flag'"
    expect_exit 2 "$bin/ninfer-$p"
    expect_exit 3 "$bin/ninfer-$p" "$work/does-not-exist.ninfer"
    contains "$work/err" "does-not-exist.ninfer"
done
expect_exit 2 "$bin/ninfer-inspect" "$data/upstream/direct.ninfer" --rows 0:1
expect_exit 2 "$bin/ninfer-inspect" "$data/upstream/direct.ninfer" --words bf16/matrix --rows 1:x
expect_exit 2 "$bin/ninfer-inspect" "$data/upstream/direct.ninfer" --words bf16/matrix --rows 0:9
expect_exit 1 "$bin/ninfer-inspect" "$data/upstream/direct.ninfer" --tensor no/such/object
contains "$work/err" "no object 'no/such/object'"
expect_exit 2 "$bin/ninfer-verify" --progress=sometimes "$data/upstream/direct.ninfer"

# the build's helper programs: --help and -h print usage (exit 0) and an unknown option is a usage
# error (exit 2); neither writes a file named after the option (issue 25 item 4: --help used to
# name the artifact or checkpoint it wrote)
here=$PWD
for p in gen-checkpoint demo-sample; do
    mkdir -p "$work/helper-$p"
    cd "$work/helper-$p" || exit 3
    for h in --help -h; do
        expect_exit 0 "$bin/ninfer-$p" "$h"
        contains "$work/out" "usage: ninfer-$p"
    done
    expect_exit 2 "$bin/ninfer-$p" --no-such-flag
    contains "$work/err" "usage: ninfer-$p"
    expect_exit 2 "$bin/ninfer-$p" x --no-such-flag
    cd "$here" || exit 3
    [ -z "$(ls -A "$work/helper-$p")" ] && ok || bad "ninfer-$p wrote '$(ls -A "$work/helper-$p")' on --help, -h or an unknown option"
done

# dispatcher
expect_exit 0 "$bin/ninfer" --help
contains "$work/out" "inspect"
expect_exit 0 "$bin/ninfer" verify "$data/upstream/direct.ninfer"
expect_exit 2 "$bin/ninfer" frobnicate
expect_exit 0 "$bin/ninfer" inspect --version
# every program the build installs is a command of the dispatcher, listed in its --help
"$bin/ninfer" --help >"$work/commands" 2>&1
for p in "$bin"/ninfer-*; do
    name=${p##*/ninfer-}
    case "$name" in gen-checkpoint | demo-sample | mprog-echo) continue ;; esac # build helpers, not installed
    expect_exit 0 "$bin/ninfer" "$name" --version
    grep -q "^  $name " "$work/commands" && ok || bad "ninfer --help does not list '$name'"
done

# damaged artifacts: copies in the work directory
cp "$data"/upstream/split.ninfer* "$work/"
rm "$work/split.ninfer.part-0002"
expect_exit 1 "$bin/ninfer-verify" "$work/split.ninfer"
contains "$work/out" "split.ninfer.part-0002"
expect_exit 0 "$bin/ninfer-verify" --quick "$data/upstream/split.ninfer"
# a FIFO where a part should be is refused at once, not waited on (docs/security.md 7, C1)
mkfifo "$work/split.ninfer.part-0002"
expect_exit 1 timeout 10 "$bin/ninfer-verify" --quick "$work/split.ninfer"
contains "$work/out" "not a regular file"
rm -f "$work/split.ninfer.part-0002"

cp "$data/upstream/row_split.ninfer" "$work/q8bad.ninfer"
# q8 object at payload offset 2048 (see its sidecar): code 0 of row 0 := 0x80 (-128)
printf '\x80' | dd of="$work/q8bad.ninfer" bs=1 seek=$((4096 + 2048)) conv=notrunc status=none
expect_exit 1 "$bin/ninfer-verify" --json "$work/q8bad.ninfer"
contains "$work/out" '"object": "q8"'
contains "$work/out" '"check": "words"'
expect_exit 0 "$bin/ninfer-verify" --quick "$work/q8bad.ninfer"
expect_exit 0 "$bin/ninfer-inspect" "$work/q8bad.ninfer"

cp "$data/upstream/direct.ninfer" "$work/magic.ninfer"
printf 'X' | dd of="$work/magic.ninfer" bs=1 seek=0 conv=notrunc status=none
expect_exit 1 "$bin/ninfer-verify" "$work/magic.ninfer"
expect_exit 1 "$bin/ninfer-inspect" "$work/magic.ninfer"
contains "$work/err" "magic.ninfer"

finish "programs"
