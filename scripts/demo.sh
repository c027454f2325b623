#!/usr/bin/env bash
# make demo: write a sample artifact holding every format and layout through the library's
# writer, then inspect and verify it.  (ninfer-convert replaces the writer step when it lands.)
set -euo pipefail
bin=${1:-build/bin}
here=$(cd "$(dirname "$0")/.." && pwd)
out=${DEMO_OUT:-$here/demo-out}
mkdir -p "$out"
rm -f "$out"/sample.ninfer*
step() { printf '\n$ %s\n' "$*"; "$@"; }
step "$bin/ninfer-demo-sample" "$out/sample.ninfer" "$here/tests/data/gguf"
step "$bin/ninfer-inspect" "$out/sample.ninfer"
step "$bin/ninfer-verify" "$out/sample.ninfer"
step "$bin/ninfer-inspect" "$out/sample.ninfer" --tensor layers.0.q_proj.weight --stats
step "$bin/ninfer-inspect" "$out/sample.ninfer" --words layers.0.o_proj.weight --rows 0:1 --cols 0:40
