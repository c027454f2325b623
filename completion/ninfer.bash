# bash completion for ninfer and the ninfer-* programs (ninfer-tools).
#
# Installed as share/bash-completion/completions/ninfer, with ninfer-convert, ninfer-inspect,
# ... as symbolic links to it, so bash-completion loads it on first use of any of them; it can
# also be sourced by hand (`. completion/ninfer.bash`).
#
# Nothing here lists options: they are read from the program's own --help (the option rows of
# cmd/cli/cli.h print every one), so the completion cannot fall behind a program.  The argument
# name --help shows decides what completes after an option: FORMAT, METHOD and PRESET the
# registry's names (ninfer-convert --list-formats / --list-methods / --list-presets), GLOB=FORMAT[:METHOD] the same after
# '=' and ':', a|b|c those words, DIR directories, N, I, HEX, BYTES, A:B and NAME nothing, and
# anything else (FILE, OUT.ninfer, RECIPE.yaml, ...) file names.

declare -gA _ninfer_opts_cache _ninfer_arg_cache 2>/dev/null || true

# _ninfer_load KEY CMD...: parse `CMD... --help` once per KEY (the program as typed) into the
# option list _ninfer_opts_cache[KEY] and the argument names _ninfer_arg_cache[KEY|OPT].
_ninfer_load()
{
    local key=$1 line name short arg
    shift
    [[ -n ${_ninfer_opts_cache[$key]+set} ]] && return 0
    local opts=""
    local re='^  (-([A-Za-z]), )? *--([a-z][a-z0-9-]*)(\[=[A-Z]+\])?( ([^ ]+))?'
    while IFS= read -r line; do
        [[ $line =~ $re ]] || continue
        short=${BASH_REMATCH[2]} name=--${BASH_REMATCH[3]} arg=${BASH_REMATCH[6]}
        # an optional argument ("--zstd[=LEVEL]") is only ever attached with '='
        [[ -n ${BASH_REMATCH[4]} ]] && arg=""
        # argument names are upper case (FILE, OUT.ninfer) or a list of words (f32|f16): a
        # lower-case word is the help text of a long option that filled its column
        [[ $arg =~ ^[A-Z] || $arg == *"|"* ]] || arg=""
        opts+=" $name"
        _ninfer_arg_cache[$key\|$name]=$arg
        if [[ -n $short ]]; then
            opts+=" -$short"
            _ninfer_arg_cache[$key\|-$short]=$arg
        fi
    done < <("$@" --help 2>/dev/null)
    _ninfer_opts_cache[$key]=$opts
}

# _ninfer_names CONVERT_CMD... KIND: the registry's format or method names, one a line
_ninfer_names()
{
    local kind=${!#}
    "${@:1:$#-1}" --list-"$kind" 2>/dev/null
}

# _ninfer_values CONVERT_CMD ARGNAME CUR: the words completing CUR as the argument ARGNAME
_ninfer_values()
{
    local -n _conv=$1
    local argname=$2 cur=$3
    case $argname in
        FORMAT) compgen -W "$(_ninfer_names "${_conv[@]}" formats)" -- "$cur" ;;
        METHOD) compgen -W "$(_ninfer_names "${_conv[@]}" methods)" -- "$cur" ;;
        PRESET) compgen -W "$(_ninfer_names "${_conv[@]}" presets)" -- "$cur" ;;
        GLOB=FORMAT*)
            # the glob is the user's; after '=' a format, after the format's ':' a method
            if [[ $cur == *=*:* ]]; then
                local head=${cur%:*}
                compgen -W "$(_ninfer_names "${_conv[@]}" methods)" -P "$head:" -- "${cur##*:}"
            elif [[ $cur == *=* ]]; then
                local head=${cur%%=*}
                compgen -W "$(_ninfer_names "${_conv[@]}" formats)" -P "$head=" -- "${cur#*=}"
            fi
            ;;
        *"|"*) compgen -W "${argname//|/ }" -- "$cur" ;;
        DIR) compgen -d -- "$cur" ;;
        N | I | HEX | BYTES | A:B | NAME | LEVEL | ID) ;;
        NAME=PATH)
            # the source name is the user's; after '=' a path
            [[ $cur == *=* ]] && compgen -f -P "${cur%%=*}=" -- "${cur#*=}"
            ;;
        *) compgen -f -- "$cur" ;;
    esac
}

_ninfer_complete()
{
    local words=() cur prev line
    # Words split on blanks only: bash's own COMP_WORDS also splits at '=' and ':', which would
    # cut "--format=q4" and "--rule 'x=q4_g64_fp16:grouped'" apart.  COMP_LINE is what bash
    # gives; without it (a caller that sets only COMP_WORDS) the words are taken as they are.
    if [[ -n ${COMP_LINE+set} ]]; then
        line=${COMP_LINE:0:${COMP_POINT:-${#COMP_LINE}}}
        read -r -a words <<<"$line"
        if [[ -z $line || $line == *[[:blank:]] ]]; then
            cur=""
        else
            cur=${words[-1]}
            unset 'words[-1]'
        fi
    else
        words=("${COMP_WORDS[@]:0:COMP_CWORD}")
        cur=${COMP_WORDS[COMP_CWORD]}
    fi
    prev=${words[-1]:-}
    # a quote the user opened is not part of the names compared; inside it bash does not break
    # the word at '=' or ':', so the whole word is replaced (below)
    local quoted=0
    if [[ $cur == [\'\"]* ]]; then
        quoted=1
        cur=${cur:1}
    fi

    local cmd=("${words[0]:-ninfer}") key conv
    local base=${cmd[0]##*/}
    local first=1
    if [[ $base == ninfer ]]; then
        if [[ ${#words[@]} -le 1 ]]; then
            # the dispatcher's commands, from its --help (a program added to the build is listed)
            local cmds
            cmds=$("${cmd[@]}" --help 2>/dev/null | sed -n '/^commands:/,/^$/s/^  \([a-z][a-z0-9-]*\) .*/\1/p')
            COMPREPLY=($(compgen -W "$cmds --help --version" -- "$cur"))
            return 0
        fi
        cmd+=("${words[1]}")
        key="ninfer ${words[1]}"
        conv=("${cmd[0]}" convert)
        first=2
    else
        key=$base
        if [[ $base == ninfer-convert ]]; then
            conv=("${cmd[0]}")
        else
            conv=("${cmd[0]%ninfer-*}ninfer-convert")
        fi
    fi
    _ninfer_load "$key" "${cmd[@]}"

    local out="" argname
    if [[ $cur == --*=* ]]; then
        # --opt=VALUE
        local opt=${cur%%=*}
        argname=${_ninfer_arg_cache[$key|$opt]-}
        [[ -n $argname ]] && out=$(_ninfer_values conv "$argname" "${cur#*=}" | sed "s|^|$opt=|")
    elif [[ ${#words[@]} -gt $first && $prev == -* && -n ${_ninfer_arg_cache[$key|$prev]-} ]]; then
        out=$(_ninfer_values conv "${_ninfer_arg_cache[$key|$prev]}" "$cur")
        argname=${_ninfer_arg_cache[$key|$prev]}
    elif [[ $cur == -* ]]; then
        out=$(compgen -W "${_ninfer_opts_cache[$key]}" -- "$cur")
    else
        # a positional argument: an artifact, a checkpoint (file or directory), an object id
        out=$(compgen -f -- "$cur")
        argname=FILE
    fi
    case $argname in
        FORMAT | METHOD | PRESET | GLOB=* | *"|"* | N | I | HEX | BYTES | A:B | NAME | LEVEL | ID | "") ;;
        *) compopt -o filenames 2>/dev/null ;;
    esac

    # bash replaces only the part of the word after its last word-break character ('=', ':'):
    # drop that much of each candidate
    local rl=$cur
    local breaks=${COMP_WORDBREAKS-$' \t\n"\'><=;|&(:'}
    local i c cut=0
    for ((i = ${#cur} - 1; i >= 0; i--)); do
        c=${cur:i:1}
        if [[ $c != [[:blank:]] && $breaks == *"$c"* ]]; then
            cut=$((i + 1))
            break
        fi
    done
    [[ -n ${COMP_LINE+set} && $quoted -eq 0 ]] || cut=0
    COMPREPLY=()
    local w
    while IFS= read -r w; do
        [[ -n $w ]] && COMPREPLY+=("${w:cut}")
    done <<<"$out"
    return 0
}

# the programs of today, and any ninfer-* on PATH (a program added later, whose link to this
# file bash-completion follows, needs no change here)
complete -F _ninfer_complete ninfer ninfer-convert ninfer-inspect ninfer-verify ninfer-dequant \
    $(compgen -c ninfer- 2>/dev/null | sort -u)
