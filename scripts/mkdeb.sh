#!/usr/bin/env bash
# make deb: build ninfer-tools_<version>_<arch>.deb from a built tree, with dpkg-deb.
# usage: mkdeb.sh BUILD_DIR OUT_DIR
#
# The package is what `cmake --install --prefix /usr` puts in a temporary root (programs, the
# shared and static library, headers, ninfer.pc, the CMake package, man pages, bash completion),
# prepared the way Debian packages are: binaries stripped of debug info, man pages gzipped
# (-9n: no name or time stamp, so the bytes do not depend on when it ran), and a DEBIAN/control
# whose Depends comes from what the programs and the library actually link (dpkg-shlibdeps when
# dpkg-dev is installed; otherwise the packages that own the libraries ldd resolves).
set -euo pipefail
build=$(cd "${1:?usage: mkdeb.sh BUILD_DIR OUT_DIR}" && pwd)
mkdir -p "${2:?usage: mkdeb.sh BUILD_DIR OUT_DIR}"
out=$(cd "$2" && pwd)
for tool in dpkg-deb dpkg cmake; do
    command -v "$tool" >/dev/null || { echo "mkdeb: $tool is needed (Debian: apt-get install dpkg cmake)" >&2; exit 1; }
done

version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
[ -n "$version" ] || { echo "mkdeb: no project version in $build/CMakeCache.txt (configure first)" >&2; exit 1; }
arch=$(dpkg --print-architecture)
deb=$out/ninfer-tools_${version}_${arch}.deb

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
root=$stage/root
DESTDIR=$root cmake --install "$build" --prefix /usr >"$stage/install.log" ||
    { cat "$stage/install.log" >&2; exit 1; }

# Debian ships binaries without debug info (a -dbgsym package would hold it) and man pages
# compressed; strip only when binutils is there: an unstripped package still works.
if command -v strip >/dev/null; then
    for f in "$root"/usr/bin/* "$root"/usr/lib/libninfer.so.*.*; do
        [ -f "$f" ] && [ ! -L "$f" ] && strip --strip-unneeded --remove-section=.comment "$f"
    done
    for f in "$root"/usr/lib/libninfer.a; do
        [ -f "$f" ] && strip --strip-debug "$f"
    done
fi
find "$root/usr/share/man" -type f -name '*.[0-9]' -exec gzip -9n {} +

# Depends: the packages of the shared libraries the ELF files need
elves=()
while IFS= read -r f; do
    head -c 4 "$f" | grep -q $'\x7fELF' && elves+=("$f")
done < <(find "$root/usr/bin" "$root/usr/lib" -type f -name '*' ! -name '*.a')
depends=""
if command -v dpkg-shlibdeps >/dev/null; then
    # dpkg-shlibdeps wants to run in a source tree: a debian/control naming the package is enough
    mkdir -p "$stage/src/debian"
    printf 'Source: ninfer-tools\n\nPackage: ninfer-tools\nArchitecture: any\n' >"$stage/src/debian/control"
    # the package's own library is found in the staged root, not on the system
    depends=$(cd "$stage/src" && dpkg-shlibdeps -O -l"$root/usr/lib" "${elves[@]}" 2>"$stage/shlibdeps.log" |
              sed -n 's/^shlibs:Depends=//p') || depends=""
fi
if [ -z "$depends" ]; then
    # fallback: the package owning each library ldd resolves, without versions
    pkgs=$(for f in "${elves[@]}"; do LD_LIBRARY_PATH=$root/usr/lib ldd "$f" 2>/dev/null; done |
           awk '$2 == "=>" && $3 ~ /^\// {print $3}' | grep -v "^$root" | sort -u |
           while IFS= read -r lib; do
               dpkg -S "$lib" 2>/dev/null || dpkg -S "$(readlink -f "$lib")" 2>/dev/null || true
           done | cut -d: -f1 | sort -u)
    depends=$(printf '%s\n' $pkgs | paste -sd, | sed 's/,/, /g')
fi
[ -n "$depends" ] || { echo "mkdeb: could not work out the package's dependencies" >&2; exit 1; }

mkdir -p "$root/DEBIAN"
installed_kb=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat >"$root/DEBIAN/control" <<EOF
Package: ninfer-tools
Version: $version
Architecture: $arch
Maintainer: ninfer-tools developers <ninfer-tools@localhost>
Installed-Size: $installed_kb
Depends: $depends
Section: utils
Priority: optional
Description: convert, inspect, verify and dequantize .ninfer model artifacts
 ninfer-convert turns safetensors and GGUF checkpoints into .ninfer v3
 artifacts following a YAML recipe; ninfer-inspect, ninfer-verify and
 ninfer-dequant read them back, exact to the bit.  The package also holds
 libninfer (shared and static), its headers, a pkg-config file and a CMake
 package (find_package(ninfer)), the man pages and bash completion.
EOF
# the shared library: run ldconfig after install and removal
echo "activate-noawait ldconfig" >"$root/DEBIAN/triggers"
(cd "$root" && find usr -type f -exec md5sum {} + | sort -k2) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/triggers" "$root/DEBIAN/md5sums"

dpkg-deb --root-owner-group -Zxz -z6 --build "$root" "$deb" >/dev/null
echo "$deb"
