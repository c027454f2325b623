#!/usr/bin/env bash
# Every example command in README.md and docs/*.md runs: lines of ```sh blocks that start with
# "ninfer" are run (with build/bin first on PATH) in a directory holding sample.ninfer (every
# format and layout), recipes/ and demo-out/checkpoint, and must exit 0.
# usage: test_doc_examples.sh BIN_DIR DATA_DIR
set -u
bin=$(cd "$1" && pwd)
data=$(cd "$2" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PATH="$bin:$PATH"
"$bin/ninfer-demo-sample" "$work/sample.ninfer" "$data/gguf" >/dev/null || { echo "FAIL demo sample"; exit 1; }
# what `make demo` leaves: the recipes and the generated checkpoint
cp -r "$top/recipes" "$work/recipes"
mkdir -p "$work/demo-out"
"$bin/ninfer-gen-checkpoint" "$work/demo-out/checkpoint" >/dev/null || { echo "FAIL demo checkpoint"; exit 1; }
pass=0
fail=0
for doc in "$top/README.md" "$top"/docs/*.md; do
    # the sh code blocks' lines that run one of our programs (comments after '#' dropped)
    while IFS= read -r line; do
        cmd=${line%%#*}
        [ -n "${cmd// /}" ] || continue
        if (cd "$work" && bash -c "$cmd") >/dev/null 2>"$work/err"; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL $(basename "$doc"): $cmd: $(head -c 300 "$work/err")"
        fi
    done < <(awk '/^```sh/{on=1; next} /^```/{on=0} on && /^ninfer/' "$doc")
done
# the C examples, built into BIN_DIR/examples
for ex in "$bin"/examples/example_*; do
    [ -x "$ex" ] || continue
    if (cd "$work" && "$ex" sample.ninfer layers.0.q_proj.weight) >/dev/null 2>"$work/err"; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL $(basename "$ex"): $(head -c 300 "$work/err")"
    fi
done
printf '%d passed, %d failed\n' "$pass" "$fail"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
