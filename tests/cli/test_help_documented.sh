#!/usr/bin/env bash
# Every option a program's --help names (long and short, both printed from the option rows of
# cmd/cli/cli.h) is documented in its manual page (docs/ninfer-convert.md and its siblings), and
# every option row of the manual page names options --help knows: a documented option that no
# longer exists fails.
# usage: test_help_documented.sh BIN_DIR DATA_DIR
set -u
bin=$(cd "$1" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
pass=0
fail=0
for p in convert inspect verify dequant diff; do
    help=$("$bin/ninfer-$p" --help) || { echo "FAIL ninfer-$p --help exits non-zero"; fail=$((fail + 1)); continue; }
    doc="$top/docs/ninfer-$p.md"
    for opt in $(printf '%s\n' "$help" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
        if grep -q -- "\`$opt" "$doc"; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL ninfer-$p: $opt is in --help but not in docs/ninfer-$p.md"
        fi
    done
    # option-table rows of the manual page: | `--name ...` |
    for opt in $(grep -E '^\| *`--' "$doc" | grep -oE -- '`--[a-z][a-z0-9-]*' | tr -d '`' | sort -u); do
        if printf '%s\n' "$help" | grep -qE -- "$opt([^a-z0-9-]|\$)"; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL ninfer-$p: docs/ninfer-$p.md documents $opt, which --help does not name"
        fi
    done
    # short options: "  -j, --threads N" in --help; `-j` (or `-j N`) in a row of the manual page
    shorts=$(printf '%s\n' "$help" | grep -oE '^  -[a-zA-Z], --' | cut -c3-4 | sort -u)
    for opt in $shorts; do
        if grep -E '^\| *`-' "$doc" | grep -q -- "\`$opt[\` ]"; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL ninfer-$p: $opt is in --help but in no option row of docs/ninfer-$p.md"
        fi
    done
    for opt in $(grep -E '^\| *`-' "$doc" | grep -oE -- '`-[a-zA-Z]' | tr -d '`' | sort -u); do
        if printf '%s\n' "$shorts" | grep -qx -- "$opt"; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL ninfer-$p: docs/ninfer-$p.md documents $opt, which --help does not name"
        fi
    done
done
echo "help options documented: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
