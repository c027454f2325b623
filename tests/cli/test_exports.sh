#!/usr/bin/env bash
# The ABI of libninfer.so is its documented API (docs/library.md, "ABI"): the dynamic symbol
# table lists exactly the functions the public headers (lib/include/ninfer/*.h) declare with
# NF_API, every one prefixed nf_; internal helpers and test hooks (nf_io_fault_arm,
# nf_simd_force, nf_layout_check_fast) are not there.
# usage: test_exports.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

so=$(ls "$bin"/../lib/libninfer.so.*.*.* 2>/dev/null | head -n 1)
if [ -z "$so" ]; then
    bad "no shared library beside $bin"
    finish "exports"
    exit
fi
command -v nm >/dev/null || { echo "SKIP nm is not installed"; exit 0; }
# every defined dynamic symbol of the library (functions and data alike)
nm -D --defined-only "$so" | awk '{print $NF}' | sed 's/@.*//' | sort -u >"$work/exported"
# every name a public header declares with NF_API
sed -n 's/^NF_API [^(]*\b\(nf_[A-Za-z0-9_]*\) *(.*/\1/p' "$top"/lib/include/ninfer/*.h | sort -u >"$work/declared"
[ -s "$work/declared" ] && ok || bad "no NF_API declaration found in lib/include/ninfer"
if cmp -s "$work/exported" "$work/declared"; then
    ok
else
    bad "exported symbols differ from the NF_API declarations"
    echo "exported, not declared:"; comm -23 "$work/exported" "$work/declared" | head -20
    echo "declared, not exported:"; comm -13 "$work/exported" "$work/declared" | head -20
fi
if grep -v '^nf_' "$work/exported" | head -5 | grep -q .; then bad "unprefixed exports: $(grep -v '^nf_' "$work/exported" | head -5 | tr '\n' ' ')"; else ok; fi
for hook in nf_io_fault_arm nf_simd_force nf_layout_check_fast; do
    lacks "$work/exported" "$hook"
done
finish "exports"
