#!/usr/bin/env bash
# Run a scale-out plan's tasks with GNU parallel, then assemble (docs/scale-out.md; usage and
# semantics: examples/README.md).
#
#   examples/parallel.sh [OPTIONS] --plan PLAN.json                  # a plan made already
#   examples/parallel.sh [OPTIONS] --plan PLAN.json -- CONVERT-ARGS  # make it first (--plan-out)
#   examples/parallel.sh --resume [OPTIONS] --plan PLAN.json         # continue a stopped run
#
# Exit status: 0 assembled; 1 a task or the assembly failed in a way a rerun does not cure
# (exit 1 or 2 of ninfer-convert); 3 a task failed only in ways worth retrying (exit 3, or
# killed): rerun with --resume; 2 a usage error of this script.
set -u

prog=${0##*/}
usage() {
    cat <<EOF
usage: $prog [OPTIONS] --plan PLAN.json [-- CONVERT-ARGS...]
  --plan PLAN.json   the plan to run (with CONVERT-ARGS after --: written first with --plan-out)
  --tasks N          with CONVERT-ARGS: group the parts into N tasks (ninfer-convert --tasks)
  --joblog FILE      GNU parallel's job log (default: PLAN.json.joblog)
  --resume           continue from the job log: rerun the failed tasks and those never run
                     (parallel --resume-failed); the plan is not made again
  --retries N        tries per task (parallel --retries; default 3; 1: no retry)
  -j, --jobs N       tasks at once on each host (parallel -j; default 1)
  -t, --threads N    threads per task (ninfer-convert --threads; default: its own)
  -S, --sshlogin L   run tasks on these hosts too (parallel -S; repeatable; ':' is this host)
  --convert PATH     the ninfer-convert to run (default: \$NINFER_CONVERT, else ninfer-convert
                     on PATH); with -S it must be the same path on every host
  --verify           assemble with --verify (reread every part against its receipt)
  --no-assemble      run the tasks only
  -q, --quiet        pass -q to the tasks and the assembly
  -h, --help         this text
EOF
}
die() { printf '%s: %s\n' "$prog" "$*" >&2; exit 2; }

plan='' tasks='' joblog='' resume=no retries=3 jobs=1 threads='' convert=${NINFER_CONVERT:-ninfer-convert}
verify=no assemble=yes quiet=no
logins=()
while [ $# -gt 0 ]; do
    case $1 in
    --plan) [ $# -ge 2 ] || die "--plan needs a file"; plan=$2; shift 2 ;;
    --tasks) [ $# -ge 2 ] || die "--tasks needs a number"; tasks=$2; shift 2 ;;
    --joblog) [ $# -ge 2 ] || die "--joblog needs a file"; joblog=$2; shift 2 ;;
    --resume) resume=yes; shift ;;
    --retries) [ $# -ge 2 ] || die "--retries needs a number"; retries=$2; shift 2 ;;
    -j | --jobs) [ $# -ge 2 ] || die "$1 needs a number"; jobs=$2; shift 2 ;;
    -t | --threads) [ $# -ge 2 ] || die "$1 needs a number"; threads=$2; shift 2 ;;
    -S | --sshlogin) [ $# -ge 2 ] || die "$1 needs hosts"; logins+=(-S "$2"); shift 2 ;;
    --convert) [ $# -ge 2 ] || die "--convert needs a program"; convert=$2; shift 2 ;;
    --verify) verify=yes; shift ;;
    --no-assemble) assemble=no; shift ;;
    -q | --quiet) quiet=yes; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    *) usage >&2; die "unknown option '$1'" ;;
    esac
done
[ -n "$plan" ] || { usage >&2; die "--plan PLAN.json is required"; }
for v in "$retries" "$jobs" ${tasks:+"$tasks"} ${threads:+"$threads"}; do
    case $v in '' | *[!0-9]*) die "'$v' is not a number" ;; esac
done
command -v parallel >/dev/null || die "GNU parallel is not installed (Debian/Ubuntu: apt-get install parallel)"
command -v "$convert" >/dev/null || die "no ninfer-convert at '$convert' (give --convert PATH)"
# Absolute paths: parallel may run a task on another host (with -S), whose login directory is
# not ours; the plan records its own working directory (docs/scale-out.md, "What a plan holds").
case $plan in /*) ;; *) plan=$PWD/$plan ;; esac
case $convert in */*) case $convert in /*) ;; *) convert=$PWD/$convert ;; esac ;; esac
joblog=${joblog:-$plan.joblog}

# 1. the plan, when the conversion's arguments are given (not when resuming one that exists:
#    without --artifact-id a new plan would be another artifact, and the job log would be stale)
if [ $# -gt 0 ] && ! { [ $resume = yes ] && [ -e "$plan" ]; }; then
    q=()
    [ $quiet = yes ] && q=(-q)
    "$convert" "$@" --plan-out "$plan" ${tasks:+--tasks "$tasks"} "${q[@]}" >/dev/null || exit $?
elif [ $# -gt 0 ] && [ $quiet = no ]; then
    printf '%s: --resume: using the plan %s as it is\n' "$prog" "$plan" >&2
fi
[ -r "$plan" ] || die "cannot read the plan '$plan'"

# the task count: the length of the plan's "tasks" array
if command -v python3 >/dev/null; then
    n=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["tasks"]))' "$plan") || exit 1
elif command -v jq >/dev/null; then
    n=$(jq '.tasks | length' "$plan") || exit 1
else
    die "reading the task count of a plan needs python3 or jq"
fi
[ "$n" -gt 0 ] 2>/dev/null || { printf '%s: %s has no tasks\n' "$prog" "$plan" >&2; exit 1; }

# 2. the tasks.  The command is the same on every run (--resume-failed matches the job log by
#    sequence number: task I is job I+1).  --remove-stale clears the temp files of this host's
#    killed runs of the output and never touches a running task's (docs/ninfer-convert.md,
#    "Interrupted runs").  parallel retries every failure alike: it cannot retry exit 3 and
#    not exit 1, so a task that exits 1 is tried --retries times, each failing again quickly.
task_args=(--remove-stale)
[ -n "$threads" ] && task_args+=(--threads "$threads")
[ $quiet = yes ] && task_args+=(-q)
resume_args=()
[ $resume = yes ] && resume_args=(--resume-failed)
# parallel runs the command through a shell (on a remote host too): quote every word
cmd=$(printf '%q ' "$convert" --plan "$plan" --task)
cmd+="{} $(printf '%q ' "${task_args[@]}")"
seq 0 $((n - 1)) | parallel --joblog "$joblog" "${resume_args[@]}" --retries "$retries" -j "$jobs" \
    "${logins[@]}" --tagstring 'task {}' -- "$cmd"
st=$?
if [ $st -ne 0 ]; then
    # the last try of every task in the job log: Seq Host Starttime JobRuntime Send Receive
    # Exitval Signal Command (TAB separated)
    read -r failed fatal < <(awk -F'\t' 'NR > 1 { v[$1] = $7; s[$1] = $8 }
        END { f = 0; x = 0; for (k in v) if (v[k] != 0 || s[k] != 0) { f++; if (s[k] == 0 && (v[k] == 1 || v[k] == 2)) x++ }
              print f, x }' "$joblog")
    if [ "${failed:-0}" -eq 0 ]; then
        printf '%s: GNU parallel exited %d (stopped before every task ran); rerun with --resume\n' \
            "$prog" "$st" >&2
        exit 3
    fi
    if [ "${fatal:-0}" -gt 0 ]; then
        printf '%s: %d of %d tasks failed, %d not worth retrying (exit 1 or 2: see their messages and %s)\n' \
            "$prog" "$failed" "$n" "$fatal" "$joblog" >&2
        exit 1
    fi
    printf '%s: %d of %d tasks failed (exit 3 or killed); rerun with --resume to continue (%s)\n' \
        "$prog" "$failed" "$n" "$joblog" >&2
    exit 3
fi

# 3. assemble: it checks every receipt and part, names a task to rerun when one is missing
[ $assemble = yes ] || exit 0
asm_args=()
[ $verify = yes ] && asm_args+=(--verify)
[ $quiet = yes ] && asm_args+=(-q)
"$convert" --plan "$plan" --assemble "${asm_args[@]}"
