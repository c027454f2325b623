#!/usr/bin/env bash
# No input is ever replaced (docs/security.md 1.3; docs/security.md 7.1, F1): ninfer-convert refuses (exit 2, naming the
# file and the input it is) an input that is any file the run would create, replace or remove for
# OUT, not only OUT and its report: a part name (of this run's parts, or beyond them: a part of
# the artifact being replaced that --force would remove), the lock file, a temp or set-aside name
# of OUT; by name or as another link to the same file.  The input is left byte for byte, and
# nothing is published.
# usage: test_outputs_inputs.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"

d=$work/d
mkdir "$d"
"$bin/ninfer-gen-checkpoint" "$d/ck" >/dev/null || { echo "FAIL generator"; exit 1; }
recipe() { # recipe RESOURCE-PATH: a recipe in $d with one resource
    printf 'recipe: 1\nsources:\n  base: ck\noutput:\n  name: m\ncomponents:\n  text:\n    config: {from: base}\n    resources: {extra.bin: "./%s"}\ndefaults: {format: bf16}\nrules:\n  - match: "*"\n    format: bf16\n' "$1" >"$d/r.yaml"
}
conv() { "$bin/ninfer-convert" -r "$d/r.yaml" -o "$d/m.ninfer" --max-file-bytes 400000 -q "$@"; }
printf 'precious bytes\n' >"$work/precious"

# a clean split run, for the names it writes
recipe ck/tokenizer.json
conv --force || bad "the clean run failed"
nparts=$(ls "$d" | grep -c '^m\.ninfer\.part-')
[ "$nparts" -ge 3 ] && ok || bad "the conversion is not split into 3 parts or more ($nparts)"

# refused INPUT-NAME [ARGS...]: INPUT-NAME in $d is the recipe's resource; the run is refused
refused() {
    local name=$1
    shift
    rm -f "$d"/m.ninfer*
    cp "$work/precious" "$d/$name"
    recipe "$name"
    for force in "" --force; do
        run 2 conv $force "$@"
        contains "$work/err" "$d/$name"
        contains "$work/err" "refusing to overwrite an input"
        same "$d/$name" "$work/precious"
        check test ! -e "$d/m.ninfer"
        check test -z "$(cd "$d" && ls -A | grep -E '\.(tmp|old)$|^\.m\.ninfer\.lock$' | grep -vxF -- "$name")"
    done
    rm -f "$d/$name"
}
refused m.ninfer.part-0001                # a part this run writes
refused m.ninfer.part-0002 --no-report
refused m.ninfer.part-0042                # beyond this run's parts: removed with a replaced artifact
refused m.ninfer.part-00001               # any number of digits the part pattern reads
refused .m.ninfer.lock                    # the lock file: locked, then removed
refused .m.ninfer.12345.AbCdEf.tmp        # a temp name of OUT (--remove-stale would remove it)
refused .m.ninfer.part-0003.12345.AbCdEf.old

# another link to the same file under a part's name: refused too (the input is that file)
rm -f "$d"/m.ninfer*
cp "$work/precious" "$d/res.bin"
ln "$d/res.bin" "$d/m.ninfer.part-0002"
recipe res.bin
run 2 conv --force
contains "$work/err" "$d/m.ninfer.part-0002"
same "$d/res.bin" "$work/precious"
rm -f "$d/m.ninfer.part-0002"
# an input elsewhere that is a symbolic link to a part name of OUT
mkdir "$d/sub"
cp "$work/precious" "$d/m.ninfer.part-0001"
ln -s ../m.ninfer.part-0001 "$d/sub/linked.bin"
recipe sub/linked.bin
run 2 conv --force
contains "$work/err" "m.ninfer.part-0001"
same "$d/m.ninfer.part-0001" "$work/precious"
rm -f "$d/m.ninfer.part-0001"

# names that only look alike are no conflict
for name in m.ninfer.part-1 m.ninfer.part-00a1 xm.ninfer.part-0001 .m.ninfer.lockx; do
    cp "$work/precious" "$d/$name"
    recipe "$name"
    run 0 conv --force
    same "$d/$name" "$work/precious"
    rm -f "$d/$name"
done
# under --no-report, an input named like the report is left alone (the report is not replaced)
cp "$work/precious" "$d/m.ninfer.conversion.json"
recipe m.ninfer.conversion.json
run 0 conv --force --no-report
same "$d/m.ninfer.conversion.json" "$work/precious"
run 2 conv --force
same "$d/m.ninfer.conversion.json" "$work/precious"

finish "outputs inputs"
