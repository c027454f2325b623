#!/usr/bin/env bash
# bash completion (completion/ninfer.bash): sourced in bash and its function called the way
# bash calls it (COMP_LINE, COMP_POINT, COMP_WORDS, COMP_CWORD), it completes the dispatcher's
# commands, every option of each program's --help, format and method names from the registry
# (ninfer-convert --list-formats / --list-methods) after --format, --method and in --rule, the
# listed values of --to and --progress, and file names where a file goes; and `cmake --install`
# puts it, and a link per program, where bash-completion loads it.
# usage: test_completion.sh BIN_DIR DATA_DIR
. "$(dirname "$0")/lib.sh" "$@"
export PATH="$bin:$PATH"
script=$top/completion/ninfer.bash

# --list-formats and --list-methods: one registry name a line, exit 0
run 0 ninfer-convert --list-formats
check grep -qx q8_g32_fp16 "$work/out"
check grep -qx gguf_q4_k "$work/out"
nformats=$(wc -l <"$work/out")
[ "$nformats" -eq 30 ] && ok || bad "--list-formats prints $nformats names, docs/formats.md has 30"
run 0 ninfer-convert --list-methods
check grep -qx grouped_search "$work/out"
run 0 ninfer convert --list-methods

# comp LINE: the completions of LINE (cursor at its end), one a line, as bash would offer them
comp() {
    bash -c '
        . "$1" || exit 99
        COMP_LINE=$2 COMP_POINT=${#2}
        read -r -a COMP_WORDS <<<"$2"
        [[ $2 == *" " ]] && COMP_WORDS+=("")
        COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
        _ninfer_complete || exit 98
        printf "%s\n" "${COMPREPLY[@]}"' comp "$script" "$1"
}
# expect LINE WORD...: each WORD is among the completions of LINE
expect() {
    local line=$1 got w
    shift
    got=$(comp "$line")
    for w in "$@"; do
        if printf '%s\n' "$got" | grep -qxF -- "$w"; then ok; else bad "'$line<TAB>' lacks '$w': $(echo $got | head -c 300)"; fi
    done
}
# only LINE WORD...: the completions of LINE are exactly these
only() {
    local line=$1 got want
    shift
    got=$(comp "$line" | sort)
    want=$(printf '%s\n' "$@" | sort)
    if [ "$got" = "$want" ]; then ok; else bad "'$line<TAB>' gives '$(echo $got)', expected '$(echo $want)'"; fi
}

only "ninfer con" convert
only "ninfer ver" verify
expect "ninfer " convert inspect verify dequant --help --version
only "ninfer-convert --for" --force --format
only "ninfer-convert --list" --list-formats --list-methods --list-presets
only "ninfer-convert x -o y --preset Q4_K" Q4_K_S Q4_K_M
# every q4 format of the registry, and nothing else
only "ninfer-convert --format q4" $(ninfer-convert --list-formats | grep '^q4')
only "ninfer convert x -o y --format gguf_q8" $(ninfer-convert --list-formats | grep '^gguf_q8')
only "ninfer-convert --method grouped_" grouped_absmax grouped_search
# --format=VALUE: bash replaces what follows '=' only
only "ninfer-convert --format=q8_g" q8_g32_fp16
# --rule GLOB=FORMAT[:METHOD]: formats after '=', methods after ':'
only "ninfer-convert --rule lm_head.*=q8_g" q8_g32_fp16
only "ninfer-convert --rule lm_head.*=q4_g64_fp16:grouped_s" grouped_search
# in an open quote bash does not break at '=' or ':': the whole word (without the quote) is replaced
only "ninfer-convert --rule 'lm_head.*=q8_g" "lm_head.*=q8_g32_fp16"
only "ninfer-convert --rule \"x=q4_g64_fp16:grouped_a" "x=q4_g64_fp16:grouped_absmax"
only "ninfer-dequant m.ninfer w --to " f32 f16 bf16 native
only "ninfer-dequant m.ninfer w --format n" npy
only "ninfer verify --progress a" auto always
only "ninfer-convert --threads " 
# every option of every program's --help completes from "-"
for p in convert inspect verify dequant; do
    opts=$(ninfer-$p --help | grep -oE '^  (-[a-zA-Z], )? *--[a-z][a-z0-9-]*' | grep -oE -- '--[a-z][a-z0-9-]*|^  -[a-zA-Z]' | tr -d ' ')
    # shellcheck disable=SC2086
    expect "ninfer-$p -" $opts
    expect "ninfer $p -" $opts
done
# file names where a file goes: an option's argument (OUT.ninfer, RECIPE.yaml) and positionals
mkdir "$work/dir"
: >"$work/dir/model.ninfer"
: >"$work/dir/recipe.yaml"
mkdir "$work/dir/sub"
only "ninfer-convert -o $work/dir/mo" "$work/dir/model.ninfer"
only "ninfer-convert -r $work/dir/r" "$work/dir/recipe.yaml"
only "ninfer-verify $work/dir/m" "$work/dir/model.ninfer"
only "ninfer inspect $work/dir/s" "$work/dir/sub"
only "ninfer-convert --allow-path $work/dir/" "$work/dir/sub"
only "ninfer-convert --source base=$work/dir/mo" "$work/dir/model.ninfer"   # after the "="
# sourcing registers the function for ninfer and every ninfer-* program on PATH
reg=$(bash -c '. "$1"; complete -p' x "$script")
for p in ninfer ninfer-convert ninfer-inspect ninfer-verify ninfer-dequant ninfer-gen-checkpoint; do
    if printf '%s\n' "$reg" | grep -qx "complete -F _ninfer_complete $p"; then ok; else bad "no completion for $p"; fi
done
# a caller that sets only COMP_WORDS and COMP_CWORD
got=$(bash -c '. "$1"; COMP_WORDS=(ninfer-convert --format q8_g); COMP_CWORD=2; _ninfer_complete; printf "%s\n" "${COMPREPLY[@]}"' x "$script")
[ "$got" = q8_g32_fp16 ] && ok || bad "COMP_WORDS alone: '$got'"
# the programs by path (a build tree): options still come from that program's --help
only "$bin/ninfer-convert --list-f" --list-formats
only "$bin/ninfer-verify --against $work/dir/mo" "$work/dir/model.ninfer"

# installed where bash-completion looks (share/bash-completion/completions/COMMAND)
prefix=$work/prefix
cmake --install "$bin/.." --prefix "$prefix" >/dev/null || bad "cmake --install failed"
cdir=$prefix/share/bash-completion/completions
check test -f "$cdir/ninfer"
for p in convert inspect verify dequant; do
    if [ -L "$cdir/ninfer-$p" ] && [ "$(readlink "$cdir/ninfer-$p")" = ninfer ]; then ok
    else bad "$cdir/ninfer-$p is not a link to ninfer"; fi
done
check cmp -s "$cdir/ninfer" "$script"
# bash-completion's own loader finds it there (XDG_DATA_DIRS is where it looks besides /usr)
bc=/usr/share/bash-completion/bash_completion
if [ -f "$bc" ]; then
    for p in ninfer ninfer-convert ninfer-dequant; do
        got=$(XDG_DATA_DIRS=$prefix/share bash -c '. "$1" >/dev/null 2>&1; __load_completion "$2"; complete -p "$2"' x "$bc" "$p" 2>&1)
        [ "$got" = "complete -F _ninfer_complete $p" ] && ok || bad "bash-completion loads for $p: '$got'"
    done
else
    echo "SKIP bash-completion's loader: the bash-completion package is not installed"
fi
finish "completion"
