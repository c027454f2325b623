#!/bin/bash
# Converts one artifact as a Slurm array job (docs/scale-out.md; examples/slurm/README.md):
#
#   submit.sh --plan /shared/out/plan.json [--tasks N] [--cpus C] [--sbatch ARG]... \
#       -- CONVERT-ARGS...
#     makes the plan (`ninfer-convert CONVERT-ARGS --plan-out PLAN --tasks N`), submits
#     convert.sbatch as `--array=0-<tasks-1>` with C cores per element, and assemble.sbatch
#     with `--dependency=afterok:<array job>`
#   submit.sh --plan /shared/out/plan.json --resubmit [LIST] [--cpus C] [--sbatch ARG]...
#     the plan exists: submits the array elements LIST (sbatch --array syntax, e.g. 3,7-9;
#     default every task: the ones done already exit 0 at once) and a new assemble job
#
# --sbatch ARG is passed to both sbatch calls (e.g. --sbatch --partition=big --sbatch
# --time=2:00:00).  NINFER_CONVERT names the ninfer-convert to run (default: the one on PATH);
# the jobs get it as an absolute path.  Prints "array_job=ID" and "assemble_job=ID".
set -u
here=$(cd "$(dirname "$0")" && pwd)
usage() { sed -n '3,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
plan='' tasks='' cpus=1 resubmit=0 list='' sb=()
while [ $# -gt 0 ]; do
    case $1 in
        --plan) plan=${2:?}; shift 2 ;;
        --tasks) tasks=${2:?}; shift 2 ;;
        --cpus) cpus=${2:?}; shift 2 ;;
        --sbatch) sb+=("${2:?}"); shift 2 ;;
        --resubmit) resubmit=1; shift
                    case ${1:-} in ''|-*) ;; *) list=$1; shift ;; esac ;;
        --) shift; break ;;
        -h|--help) usage ;;
        *) echo "submit.sh: unknown option $1" >&2; usage ;;
    esac
done
[ -n "$plan" ] || usage
conv=$(command -v "${NINFER_CONVERT:-ninfer-convert}") || {
    echo "submit.sh: no ninfer-convert (set NINFER_CONVERT)" >&2; exit 1; }
export NINFER_CONVERT=$conv
# every task and the assemble job read the plan: an absolute path on the shared filesystem
case $plan in /*) ;; *) plan=$PWD/$plan ;; esac

if [ $resubmit -eq 0 ]; then
    [ $# -gt 0 ] || { echo "submit.sh: give the conversion's arguments after --" >&2; usage; }
    n=$("$conv" "$@" --plan-out "$plan" ${tasks:+--tasks "$tasks"}) || {
        echo "submit.sh: making the plan failed" >&2; exit 1; }
    list=0-$((n - 1))
    echo "submit.sh: $plan: $n tasks" >&2
elif [ -z "$list" ]; then
    [ -f "$plan" ] || { echo "submit.sh: no plan $plan" >&2; exit 1; }
    n=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["tasks"]))' "$plan") || {
        echo "submit.sh: cannot count the tasks of $plan: give the list to --resubmit" >&2; exit 1; }
    list=0-$((n - 1))
fi

jid() { local out; out=$(sbatch --parsable "$@") || return 1; echo "${out%%;*}"; }
array=$(jid "${sb[@]}" --array="$list" --cpus-per-task="$cpus" "$here/convert.sbatch" "$plan") || {
    echo "submit.sh: sbatch of the array job failed" >&2; exit 1; }
echo "array_job=$array"
asm=$(jid "${sb[@]}" --dependency=afterok:"$array" --kill-on-invalid-dep=yes \
        "$here/assemble.sbatch" "$plan") || {
    echo "submit.sh: sbatch of the assemble job failed (the array job $array is queued)" >&2; exit 1; }
echo "assemble_job=$asm"
