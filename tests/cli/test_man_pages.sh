#!/usr/bin/env bash
# The man(1) pages generated from docs/ninfer*.md (scripts/md2man.py, at build time into
# BUILD/man/man1): one for the dispatcher and for every command `ninfer --help` lists; each
# renders without a single warning under `groff -man -ww -z` and, where mandoc is installed,
# `mandoc -T lint -W warning` (its STYLE notes, such as lines over 80 bytes, are not
# warnings); every option a program's --help names is in its page; and `cmake --install` puts
# them where man finds them (`man -w` with MANPATH at the prefix).
# usage: test_man_pages.sh BIN_DIR DATA_DIR
. "$(dirname "$0")/lib.sh" "$@"
build=$(cd "$bin/.." && pwd)
mandir=$build/man/man1
if grep -qx 'NINFER_MANPAGES:BOOL=OFF' "$build/CMakeCache.txt"; then
    echo "SKIP this build has no man pages (-DNINFER_MANPAGES=OFF)"
    exit 0
fi
command -v groff >/dev/null || { echo "FAIL groff is not installed (make test installs it)"; exit 1; }

commands=$("$bin/ninfer" --help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p')
[ -n "$commands" ] || bad "ninfer --help lists no commands"
pages="ninfer"
for c in $commands; do pages="$pages ninfer-$c"; done

# the page's text with roff's escapes of '-' and its font changes undone, to grep options in
text_of() { sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\&//g' "$1"; }

for p in $pages; do
    page=$mandir/$p.1
    if [ ! -f "$page" ]; then
        bad "no man page $p.1 in $mandir (docs/$p.md missing?)"
        continue
    fi
    out=$(groff -man -ww -z "$page" 2>&1)
    if [ -z "$out" ]; then ok; else bad "groff warns about $p.1: $(printf '%s' "$out" | head -5)"; fi
    if command -v mandoc >/dev/null; then
        out=$(mandoc -T lint -W warning "$page" 2>&1)
        if [ -z "$out" ]; then ok; else bad "mandoc warns about $p.1: $(printf '%s' "$out" | head -5)"; fi
    fi
    # the NAME line whatis and apropos read: "name \- summary"
    if grep -A1 '^\.SH "NAME"' "$page" | grep -q "^$(printf '%s' "$p" | sed 's/-/\\\\-/g') \\\\- "; then ok
    else bad "$p.1 has no 'NAME \\- summary' line"; fi
    help=$("$bin/$p" --help) || { bad "$p --help exits non-zero"; continue; }
    t=$(text_of "$page")
    # long options (as the help-vs-docs test reads them), then "  -j, --threads" short ones
    for opt in $(printf '%s\n' "$help" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u) \
               $(printf '%s\n' "$help" | grep -oE '^  -[a-zA-Z], --' | cut -c3-4 | sort -u); do
        if printf '%s\n' "$t" | grep -qE -- "(^|[^a-zA-Z0-9-])$opt([^a-zA-Z0-9-]|\$)"; then ok
        else bad "$p: $opt is in --help but not in $p.1"; fi
    done
done

# installed where man looks: PREFIX/share/man/man1 (CMAKE_INSTALL_MANDIR)
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null || bad "cmake --install failed"
if command -v man >/dev/null; then
    for p in $pages; do
        where=$(MANPATH="$prefix/share/man" man -w "$p" 2>/dev/null)
        if [ "$where" = "$prefix/share/man/man1/$p.1" ]; then ok; else bad "man -w $p gives '$where'"; fi
    done
    # and it formats: the synopsis of ninfer-convert is there
    if MANPATH="$prefix/share/man" MANWIDTH=100 man ninfer-convert 2>/dev/null | grep -q -- '--list-formats'; then ok
    else bad "man ninfer-convert does not show --list-formats"; fi
else
    for p in $pages; do check test -f "$prefix/share/man/man1/$p.1"; done
fi
finish "man pages"
