#!/usr/bin/env bash
# make format: the tree's C files through clang-format with the checked-in .clang-format
# (tests/README.md, "Habits").
#   scripts/format.sh          rewrite the files in place
#   scripts/format.sh --check  name the files that would change, exit 1 if any, 2 if clang-format
#                              itself fails (cli_test_format)
# The files: every tracked .c, .h and .inc under lib/, cmd/, tests/ and bench/, but for
# lib/src/format/ggml_tables.c, which scripts/gen_ggml_tables.py writes (its layout is the
# generator's).  The style is pinned to the Debian clang-format 14 the tree was formatted with:
# another major version breaks some lines differently, so --check refuses to judge with one
# (exit 77, the suite's skip).  Without clang-format, as root it is installed with apt-get;
# otherwise the script says so and exits 77.
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
case "${1:-}" in
  --check) check=1 ;;
  '') ;;
  *) echo "usage: scripts/format.sh [--check]" >&2; exit 2 ;;
esac
if ! command -v clang-format >/dev/null; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    bash scripts/deps.sh clang-format >&2
  else
    echo "format: clang-format is not installed (apt-get install clang-format)" >&2
    exit 77
  fi
fi
version=$(clang-format --version | sed -n 's/.*clang-format version \([0-9]*\)\..*/\1/p')
if [ "$version" != 14 ]; then
  echo "format: clang-format $version is not the tree's (14): its line breaks differ" >&2
  exit 77
fi
mapfile -t files < <(git ls-files -- 'lib/*.c' 'lib/*.h' 'lib/*.inc' 'cmd/*.c' 'cmd/*.h' 'cmd/*.inc' \
  'tests/*.c' 'tests/*.h' 'tests/*.inc' 'bench/*.c' 'bench/*.h' | grep -v '^lib/src/format/ggml_tables\.c$')
if [ "$check" -eq 0 ]; then
  printf '%s\0' "${files[@]}" | xargs -0 clang-format -i
  exit 0
fi
# clang-format --dry-run --Werror names each file it would change ("FILE:LINE:COL: error: code
# should be clang-formatted"); in batches, two at a time (a process per file took 20 s).  Any
# other failure of clang-format is reported as such, never taken for "formatted".
out=$(mktemp)
trap 'rm -f "$out"' EXIT
st=0
printf '%s\0' "${files[@]}" | xargs -0 -n 64 -P 2 clang-format --dry-run --Werror >"$out" 2>&1 || st=$?
bad=$(sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' "$out" | sort -u)
if [ -n "$bad" ]; then
  printf 'format: %s is not formatted (scripts/format.sh rewrites it)\n' $bad
  exit 1
fi
if [ "$st" -ne 0 ]; then
  echo "format: clang-format failed (exit $st):" >&2
  head -20 "$out" >&2
  exit 2
fi
exit 0
