#!/usr/bin/env bash
# make deb (scripts/mkdeb.sh): the package is named ninfer-tools_VERSION_ARCH.deb, its control
# file has the project's version, this machine's architecture, a maintainer, a description and
# the Depends of what the programs actually link; it holds every program, man page, completion
# file, public header, the shared and static library, ninfer.pc and the CMake package.  As
# root, it is installed with dpkg -i, each program's --version runs from /usr/bin, man finds
# ninfer-convert(1) and pkg-config finds ninfer; dpkg -r then removes it, leaving the system as
# it was.  Not root, or ninfer-tools already installed: that part is skipped, and says so.
# usage: test_deb.sh BIN_DIR DATA_DIR
. "$(dirname "$0")/lib.sh" "$@"
build=$(cd "$bin/.." && pwd)
for tool in dpkg-deb dpkg; do
    command -v $tool >/dev/null || { echo "SKIP $tool is not installed: no Debian package to build"; exit 0; }
done

deb=$(bash "$top/scripts/mkdeb.sh" "$build" "$work/out" 2>"$work/mkdeb.err") ||
    { bad "mkdeb.sh failed: $(head -c 1000 "$work/mkdeb.err")"; finish deb; exit 1; }
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
arch=$(dpkg --print-architecture)
[ "$deb" = "$work/out/ninfer-tools_${version}_${arch}.deb" ] && ok || bad "the package is $deb"
check test -s "$deb"
# the version is the programs' own
"$bin/ninfer" --version | grep -qF " $version" && ok || bad "ninfer --version is not $version"

field() { dpkg-deb --field "$deb" "$1"; }
[ "$(field Package)" = ninfer-tools ] && ok || bad "Package: $(field Package)"
[ "$(field Version)" = "$version" ] && ok || bad "Version: $(field Version)"
[ "$(field Architecture)" = "$arch" ] && ok || bad "Architecture: $(field Architecture)"
[ -n "$(field Maintainer)" ] && ok || bad "no Maintainer"
[ -n "$(field Description)" ] && ok || bad "no Description"
dpkg-deb --info "$deb" >"$work/info" || bad "dpkg-deb --info fails"
contains "$work/info" "Installed-Size:"
depends=$(field Depends)
for p in libjansson4 libyaml-0-2 libxxhash0 libzstd1 zlib1g libc6; do
    if printf '%s\n' "$depends" | grep -qE "(^|, )$p( |,|\$)"; then ok; else bad "Depends lacks $p: $depends"; fi
done

dpkg-deb --contents "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$work/contents"
has() { if grep -qxF -- "$1" "$work/contents"; then ok; else bad "the package lacks $1"; fi; }
commands=$("$bin/ninfer" --help | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p')
has /usr/bin/ninfer
# a build configured with -DNINFER_MANPAGES=OFF packages none
man=1
grep -qx 'NINFER_MANPAGES:BOOL=OFF' "$build/CMakeCache.txt" && man=0
[ $man -eq 1 ] && has /usr/share/man/man1/ninfer.1.gz
has /usr/share/bash-completion/completions/ninfer
has /usr/lib/python3/dist-packages/ninfer_method.py # method programs' helper (docs/method-programs.md 6)
for c in $commands; do
    has /usr/bin/ninfer-$c
    [ $man -eq 1 ] && has /usr/share/man/man1/ninfer-$c.1.gz
    has /usr/share/bash-completion/completions/ninfer-$c
done
for h in "$top"/lib/include/ninfer/*.h; do has "/usr/include/ninfer/$(basename "$h")"; done
libdir=/usr/$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")
for f in libninfer.a libninfer.so libninfer.so.${version%%.*} libninfer.so.$version pkgconfig/ninfer.pc \
         cmake/ninfer/ninferConfig.cmake cmake/ninfer/ninferConfigVersion.cmake cmake/ninfer/ninferTargets.cmake; do
    has "$libdir/$f"
done
# nothing of the build tree's test programs
if grep -qE 'ninfer-(demo-sample|gen-checkpoint|convert-faults)|/example_' "$work/contents"; then
    bad "the package holds test programs: $(grep -E 'demo-sample|gen-checkpoint|faults|example_' "$work/contents")"
else ok; fi

# install, use, remove: root only, and only on a system without the package
if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP dpkg -i / dpkg -r: not root (run the suite as root to install the package)"
elif dpkg-query -W -f='${Status}' ninfer-tools 2>/dev/null | grep -q 'install ok installed'; then
    echo "SKIP dpkg -i / dpkg -r: ninfer-tools is installed already; this test leaves it alone"
elif [ -e /usr/bin/ninfer ] || [ -e /usr/bin/ninfer-convert ]; then
    echo "SKIP dpkg -i / dpkg -r: /usr/bin/ninfer* exist outside the package; this test leaves them alone"
else
    # dpkg takes a system-wide lock: another apt or dpkg run (make deps) makes it wait, not fail
    dpkg_retry() {
        local i
        for i in 1 2 3 4 5 6 7 8 9 10; do
            DEBIAN_FRONTEND=noninteractive dpkg "$@" >"$work/dpkg.log" 2>&1 && return 0
            grep -qi lock "$work/dpkg.log" || return 1
            sleep 3
        done
        return 1
    }
    trap 'DEBIAN_FRONTEND=noninteractive dpkg -r ninfer-tools >/dev/null 2>&1; rm -rf "$work"' EXIT
    if dpkg_retry -i "$deb"; then
        ok
        for p in ninfer $(for c in $commands; do echo ninfer-$c; done); do
            if out=$(/usr/bin/$p --version 2>&1); then ok; else bad "/usr/bin/$p --version: $out"; fi
        done
        if [ $man -eq 1 ] && command -v man >/dev/null; then
            where=$(env -u MANPATH man -w ninfer-convert 2>&1)
            [ "$where" = /usr/share/man/man1/ninfer-convert.1.gz ] && ok || bad "man -w ninfer-convert: $where"
        fi
        if command -v pkg-config >/dev/null; then
            got=$(env -u PKG_CONFIG_PATH pkg-config --modversion ninfer 2>&1)
            [ "$got" = "$version" ] && ok || bad "pkg-config --modversion ninfer: $got"
        fi
        if [ -x /usr/bin/python3 ]; then # Debian's python3 finds the helper (without importing numpy)
            got=$(/usr/bin/python3 -c 'import importlib.util as u; print(u.find_spec("ninfer_method").origin)' 2>&1)
            [ "$got" = /usr/lib/python3/dist-packages/ninfer_method.py ] && ok || bad "python3 finds ninfer_method at: $got"
        fi
        if dpkg_retry -r ninfer-tools; then ok; else bad "dpkg -r: $(tail -5 "$work/dpkg.log")"; fi
        trap 'rm -rf "$work"' EXIT
        if dpkg-query -W -f='${Status}' ninfer-tools 2>/dev/null | grep -q 'install ok installed'; then
            bad "ninfer-tools is still installed"
        else ok; fi
        for f in /usr/bin/ninfer /usr/bin/ninfer-convert /usr/share/man/man1/ninfer-convert.1.gz "$libdir/libninfer.so"; do
            [ -e "$f" ] && bad "$f is left after dpkg -r" || ok
        done
    else
        bad "dpkg -i failed: $(tail -5 "$work/dpkg.log")"
    fi
fi
finish deb
