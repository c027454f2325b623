#!/usr/bin/env bash
# Install the llama-quantize peer into a cache directory: llama.cpp's prebuilt library from the
# npm package @node-llama-cpp/linux-x64 (a pinned version, its tarball checked against the pinned
# npm integrity), and bench/peer/nf-llama-quantize.c built against nothing but libdl.
# docs/presets.md "Checked against llama-quantize" and bench/README.md "Beside llama-quantize"
# say what it is for; tests/cli/test_preset_peer.sh and bench/peer.sh call it.
#
# usage: scripts/peer-llama.sh [DIR]      (default: build/peer-llama; CC: the C compiler)
# On success it prints two lines, `PEER_BIN=DIR/nf-llama-quantize` and `PEER_LIB=.../libllama...so`
# (shell assignments: `eval "$(scripts/peer-llama.sh DIR)"`).  A second run with the same pins
# and driver source reuses DIR without the network.
# Exit status: 0 installed; 1 the package is not what is pinned (integrity, release, files);
# 3 system error (cannot write DIR, the driver does not build); 4 unavailable here: no npm, the
# registry cannot be reached, or this is not x86-64 Linux (callers skip on 4).
set -u

# The pin: npm package, version, its dist.integrity (`npm view PKG@VERSION dist.integrity`), and
# the llama.cpp it carries (its _nlcBuildMetadata.json names the release; the commit is the
# LLAMA_COMMIT its libllama-common.so holds).
PKG=@node-llama-cpp/linux-x64
VERSION=3.22.1
INTEGRITY=sha512-5uCCDNqWCNfaAm8aR/Uzxbo4HBpKgNF91kCHPepKhgMgV2OAmatoefbOlMihsqCiH2Od35E/eUHQCFbfRBJuOg==
LLAMA_RELEASE=v0.5.0
LLAMA_COMMIT=0ad4a86

top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-$top/build/peer-llama}
src=$top/bench/peer/nf-llama-quantize.c
say() { printf 'peer-llama: %s\n' "$*" >&2; }

if [ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]; then
    say "unavailable: the pinned package is x86-64 Linux only (this is $(uname -s)-$(uname -m))"
    exit 4
fi
mkdir -p "$dir" || { say "cannot create $dir"; exit 3; }
dir=$(cd "$dir" && pwd)
stamp="$PKG@$VERSION $INTEGRITY $(cksum <"$src")"
lib=$dir/package/bins/linux-x64/libllama.v0.5.0.so
if [ -f "$dir/installed" ] && [ "$(cat "$dir/installed")" = "$stamp" ] && [ -x "$dir/nf-llama-quantize" ] && [ -f "$lib" ]; then
    printf 'PEER_BIN=%s\nPEER_LIB=%s\n' "$dir/nf-llama-quantize" "$lib"
    exit 0
fi
rm -f "$dir/installed"

command -v npm >/dev/null 2>&1 || { say "unavailable: npm is not installed (apt-get install npm)"; exit 4; }
command -v node >/dev/null 2>&1 || { say "unavailable: node is not installed"; exit 4; }
tmp=$(mktemp -d "$dir/.pack.XXXXXX") || { say "cannot write in $dir"; exit 3; }
trap 'rm -rf "$tmp"' EXIT
if ! (cd "$tmp" && timeout "${PEER_NPM_TIMEOUT:-180}" npm pack "$PKG@$VERSION" --silent >pack.out 2>pack.err); then
    say "unavailable: npm pack $PKG@$VERSION failed (no network or registry?): $(tail -c 300 "$tmp/pack.err")"
    exit 4
fi
tgz=$tmp/$(tail -n 1 "$tmp/pack.out")
[ -f "$tgz" ] || { say "npm pack wrote no tarball ($(cat "$tmp/pack.out"))"; exit 1; }
got=$(node -e 'const c=require("crypto"),f=require("fs");
process.stdout.write("sha512-"+c.createHash("sha512").update(f.readFileSync(process.argv[1])).digest("base64"))' "$tgz")
if [ "$got" != "$INTEGRITY" ]; then
    say "$PKG@$VERSION: the tarball's integrity is $got, not the pinned $INTEGRITY"
    exit 1
fi
rm -rf "$dir/package"
tar -xzf "$tgz" -C "$dir" || { say "cannot unpack $tgz into $dir"; exit 3; }
meta=$dir/package/bins/linux-x64/_nlcBuildMetadata.json
release=$(node -e 'process.stdout.write(String(JSON.parse(require("fs").readFileSync(process.argv[1])).buildOptions.llamaCpp.release))' "$meta" 2>/dev/null)
if [ "$release" != "$LLAMA_RELEASE" ] || [ ! -f "$lib" ]; then
    say "$PKG@$VERSION: expected llama.cpp $LLAMA_RELEASE with $lib, found release '$release'"
    exit 1
fi
if ! "${CC:-cc}" -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -o "$dir/nf-llama-quantize" "$src" -ldl 2>"$tmp/cc.err"; then
    say "the driver does not build: $(head -c 600 "$tmp/cc.err")"
    exit 3
fi
printf '%s\n' "$stamp" >"$dir/installed"
say "installed $PKG@$VERSION (llama.cpp $LLAMA_RELEASE, commit $LLAMA_COMMIT) in $dir"
printf 'PEER_BIN=%s\nPEER_LIB=%s\n' "$dir/nf-llama-quantize" "$lib"
