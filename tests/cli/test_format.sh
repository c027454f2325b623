#!/usr/bin/env bash
# The tree is formatted by its .clang-format (scripts/format.sh --check: exit 0), and the check
# does catch a file that is not (a scratch checkout with one badly laid out file: exit 1, the
# file named).  SKIP where scripts/format.sh cannot judge (no clang-format 14 and not root to
# install it: its exit 77), or outside a git checkout (it lists the files with git).
# usage: test_format.sh BIN_DIR DATA_DIR  (both unused: this test reads the source tree)
. "$(dirname "$0")/lib.sh" "$@"
git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1 || { echo "SKIP $top is not a git checkout"; exit 0; }

st=0
bash "$top/scripts/format.sh" --check >"$work/check.out" 2>&1 || st=$?
if [ "$st" -eq 77 ]; then
    echo "SKIP scripts/format.sh cannot judge here: $(cat "$work/check.out")"
    exit 0
fi
if [ "$st" -eq 0 ]; then ok; else bad "the tree is not formatted (run scripts/format.sh): $(head -20 "$work/check.out")"; fi

# a scratch checkout holding one file laid out against the style
s=$work/scratch
mkdir -p "$s/scripts" "$s/lib/src"
cp "$top/.clang-format" "$s/"
cp "$top/scripts/format.sh" "$top/scripts/deps.sh" "$s/scripts/"
printf 'int nf_x(int a){\nif(a) {return 1;}\n  return 0;}\n' >"$s/lib/src/x.c"
printf 'int nf_y(int a)\n{\n    if (a) return 1;\n    return 0;\n}\n' >"$s/lib/src/y.c"
git -C "$s" init -q && git -C "$s" add -A
st=0
bash "$s/scripts/format.sh" --check >"$work/bad.out" 2>&1 || st=$?
if [ "$st" -eq 1 ]; then ok; else bad "--check on a badly laid out file exits $st, not 1"; fi
contains "$work/bad.out" "lib/src/x.c"
lacks "$work/bad.out" "lib/src/y.c"
# after the rewrite the check passes, and a second rewrite changes nothing
bash "$s/scripts/format.sh" && cp "$s/lib/src/x.c" "$work/x1.c"
check bash "$s/scripts/format.sh" --check
bash "$s/scripts/format.sh"
same "$work/x1.c" "$s/lib/src/x.c"
finish test_format
