#!/usr/bin/env bash
# The Slurm example (examples/slurm, docs/scale-out.md) on a one-node Slurm cluster this test
# brings up on loopback: plan -> array job -> afterok assemble job gives byte for byte the files
# of one ninfer-convert run; then again with one array element cancelled mid-task and resubmitted,
# and one failing with exit 3 once, which requeues itself.
#
# Needs root and Debian's slurm-wlm and munge packages (installed with apt-get when missing).
# Everything the test starts -- munged, slurmctld, slurmd, with their key, sockets, state, spool
# and logs under one temp dir and on non-default ports -- is stopped by the pids it recorded, and
# the temp dir removed, on exit.  When it cannot run, it prints "SKIP ..." and why, and exits 0.
. "$(dirname "$0")/lib.sh" "$@"

conv=$bin/ninfer-convert
faulty=$bin/../tests/bin/ninfer-convert-faults # the test copy with the fault hook (test_faults.sh)
ex=$top/examples/slurm
t0=$SECONDS
# the daemons' pids, the jobs submitted (for the EXIT trap)
munged_pid='' ctld_pid='' slurmd_pid='' jobs=()

# processes working in this test's temp dir: the jobs' (their cwd is $work/w); cleanup cds out first
ours() {
    local p c
    for p in /proc/[0-9]*; do
        [ "${p#/proc/}" = $$ ] && continue
        c=$(readlink "$p/cwd" 2>/dev/null) || continue
        case $c in "$work"|"$work"/*) echo "${p#/proc/}" ;; esac
    done
}
stop_pid() { # PID...: TERM, up to 10 s, then KILL; each only while it is still our child
    local p i
    for p in "$@"; do [ -n "$p" ] && kill -TERM "$p" 2>/dev/null; done
    for p in "$@"; do
        [ -n "$p" ] || continue
        for i in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
}
cleanup() {
    cd / || exit 1
    if [ -n "$ctld_pid" ] && [ ${#jobs[@]} -gt 0 ]; then
        scancel "${jobs[@]}" 2>/dev/null
        local i
        for i in $(seq 50); do [ -z "$(ours)" ] && break; sleep 0.2; done
    fi
    stop_pid "$slurmd_pid" "$ctld_pid"
    local p
    for p in $(ours); do kill -KILL "$p" 2>/dev/null; done
    stop_pid "$munged_pid"
    rm -rf "$work"
}
trap cleanup EXIT
trap "exit 143" INT TERM HUP # (the EXIT trap runs then too)
skip() { echo "SKIP $*"; exit 0; }

# ---------------------------------------------------------------- the cluster
[ "$(id -u)" -eq 0 ] || skip "not root: cannot start munged, slurmctld and slurmd"
[ -x "$faulty" ] || skip "no $faulty (configure with NINFER_TESTS=ON)"
for v in $(compgen -e | grep -E '^(SLURM|SBATCH|SQUEUE|SCONTROL)_'); do unset "$v"; done # run inside a job: not that cluster
have() { for c in munged mungekey slurmctld slurmd sbatch scontrol scancel setpriv; do command -v $c >/dev/null || return 1; done; }
if ! have; then
    command -v apt-get >/dev/null || skip "slurm-wlm and munge are not installed, and there is no apt-get"
    echo "test_slurm: installing slurm-wlm and munge with apt-get"
    # The packages' own services must not start (this test starts, and stops, only its own
    # daemons): without a policy-rc.d, one that refuses every start, for the install only.
    policy=
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        policy=/usr/sbin/policy-rc.d
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy"
    fi
    inst() { DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slurm-wlm munge >"$work/apt.log" 2>&1; }
    inst || { apt-get update -q >>"$work/apt.log" 2>&1 && inst; } || {
        [ -n "$policy" ] && rm -f "$policy"
        skip "apt-get install slurm-wlm munge failed: $(tail -n 3 "$work/apt.log" | tr '\n' ' ')"
    }
    [ -n "$policy" ] && rm -f "$policy"
    have || skip "slurm-wlm and munge installed, but a program is missing"
fi
id munge >/dev/null 2>&1 || skip "no user munge (the munge package makes it)"
started() { # LABEL PID LOG: the daemon PID is alive
    kill -0 "$2" 2>/dev/null || skip "$1 did not start: $(tail -n 5 "$3" 2>/dev/null | tr '\n' ' ')"
}

chmod 711 "$work" # munged runs as munge and must reach $work/munge
m=$work/munge s=$work/slurm
mkdir -m 711 "$m" && mkdir -p "$s/state" "$s/spool" && chown munge: "$m" || skip "cannot make $m"
setpriv --reuid=munge --regid=munge --init-groups mungekey --create --keyfile="$m/munge.key" >"$m/mungekey.log" 2>&1 ||
    skip "mungekey failed: $(cat "$m/mungekey.log")"
setpriv --reuid=munge --regid=munge --init-groups munged --foreground --key-file="$m/munge.key" \
    --socket="$m/munge.socket" --pid-file="$m/munged.pid" --log-file="$m/munged.log" \
    --seed-file="$m/munged.seed" </dev/null >"$m/munged.out" 2>&1 &
munged_pid=$!
for i in $(seq 50); do [ -S "$m/munge.socket" ] && break; kill -0 $munged_pid 2>/dev/null || break; sleep 0.1; done
started munged "$munged_pid" "$m/munged.out"
[ -S "$m/munge.socket" ] || skip "munged made no socket: $(tail -n 3 "$m/munged.log" | tr '\n' ' ')"

host=$(hostname -s)
node=$(slurmd -C 2>/dev/null | head -n 1)
case $node in "NodeName=$host "*) ;; *) skip "slurmd -C says '$node', not this host ($host)" ;; esac
free_port() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
for i in $(seq 20); do
    port=$((20000 + RANDOM % 30000))
    free_port $port && free_port $((port + 1)) && break
done
cat >"$s/slurm.conf" <<EOF
ClusterName=ninfertest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire: also how long a requeued job waits before it starts again (default 120 s)
AuthInfo=socket=$m/munge.socket,cred_expire=5
StateSaveLocation=$s/state
SlurmdSpoolDir=$s/spool
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/slurmd.pid
SlurmctldLogFile=$s/slurmctld.log
SlurmdLogFile=$s/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$s/plugstack.conf
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
MinJobAge=600
KillWait=5
# the scheduler at once on a submit or an end (no batch delay, no minimum interval), and its
# periodic passes every second instead of every 60 (main) and 30 (backfill): a requeued element,
# eligible again after cred_expire, and a dependency met are seen within a second.  The test
# took 38 s with the defaults, 17 s with these (a cluster of one node, nothing else queued)
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0,sched_interval=1,bf_interval=1
$node Port=$((port + 1)) NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
sed -i 's/ UpTime=[^ ]*//' "$s/slurm.conf"
: >"$s/plugstack.conf"
export SLURM_CONF=$s/slurm.conf
slurmctld -D -i -f "$SLURM_CONF" </dev/null >"$s/slurmctld.out" 2>&1 &
ctld_pid=$!
slurmd -D -N "$host" -f "$SLURM_CONF" </dev/null >"$s/slurmd.out" 2>&1 &
slurmd_pid=$!
up=0
for i in $(seq 100); do
    kill -0 $ctld_pid 2>/dev/null || break
    kill -0 $slurmd_pid 2>/dev/null || break
    scontrol -o show node "$host" 2>/dev/null | grep -q 'State=IDLE' && { up=1; break; }
    sleep 0.2
done
started slurmctld "$ctld_pid" "$s/slurmctld.log"
started slurmd "$slurmd_pid" "$s/slurmd.log"
[ $up -eq 1 ] || skip "the node did not come up: $(scontrol -o show node "$host" 2>&1 | head -c 300) $(tail -n 3 "$s/slurmd.log" | tr '\n' ' ')"
echo "test_slurm: cluster up on port $port in $((SECONDS - t0)) s"

# ---------------------------------------------------------------- helpers
job_states() { # JOBID: every element's "ArrayTaskId JobState Restarts ExitCode", a line each
    scontrol -o show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*Restarts=\([0-9]*\).*ExitCode=\([0-9:]*\).*/\1 \2 \3/p'
}
element() { # JOBID INDEX: that element's "JobState Restarts ExitCode"
    scontrol -o show job "$1_$2" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*Restarts=\([0-9]*\).*ExitCode=\([0-9:]*\).*/\1 \2 \3/p'
}
wait_jobs() { # SECONDS JOBID...: until no element of the jobs is pending or running
    local limit=$1 end=$((SECONDS + $1)) j
    shift
    while [ $SECONDS -lt $end ]; do
        sleep 0.5
        for j in "$@"; do
            job_states "$j" | grep -qvE '^(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE) ' && continue 2
        done
        return 0
    done
    bad "jobs $* not done in $limit s: $(for j in "$@"; do scontrol -o show job "$j" | cut -c1-200; done)"
    return 1
}
submitted() { # the ids in $work/submit.out -> $array, $asm
    array=$(sed -n 's/^array_job=//p' "$work/submit.out")
    asm=$(sed -n 's/^assemble_job=//p' "$work/submit.out")
    if [ -n "$array" ] && [ -n "$asm" ]; then ok; jobs+=("$array" "$asm"); else
        bad "submit.sh gave no job ids: $(cat "$work/submit.out" "$work/submit.err")"; fi
}
all_completed() { # LABEL JOBID: every element COMPLETED, exit 0
    local st
    st=$(job_states "$2")
    if [ -n "$st" ] && ! echo "$st" | grep -qv '^COMPLETED [0-9]* 0:0$'; then ok; else bad "$1: job $2: $st"; fi
}
same_as_ref() { # LABEL: out/ holds exactly ref/'s files, byte for byte
    local d=0 f
    for f in ref/*; do cmp -s "$f" "out/${f#ref/}" || { d=1; bad "$1: out/${f#ref/} differs from the one-machine run"; }; done
    [ "$(ls out | sort)" = "$(ls ref | sort)" ] || { d=1; bad "$1: out/ holds $(ls out | tr '\n' ' '), not $(ls ref | tr '\n' ' ')"; }
    [ $d -eq 0 ] && ok
}

# ---------------------------------------------------------------- the conversion
mkdir "$work/w" && cd "$work/w" || exit 1
"$bin/ninfer-gen-checkpoint" ck --hidden 256 --kv-hidden 256 --intermediate 512 --layers 3 --vocab 64 >/dev/null
id=00112233445566778899aabbccddeeff
args=(ck -o out/m.ninfer --format q8_g32_fp16 --max-file-bytes 40000 --artifact-id $id)
mkdir out logs
"$conv" "${args[@]}" -q || bad "the one-machine run failed"
mv out ref
echo "test_slurm: the reference has $(ls ref | wc -l) files"

# The test's NINFER_CONVERT: the real ninfer-convert, except the first run of task $NF_STOP_TASK
# (the fault-hook copy stops itself at its 5th write, for the test to cancel it there) and of
# task $NF_EIO_TASK (its 3rd write fails with EIO: exit 3, worth retrying).
cat >"$work/convert" <<EOF
#!/bin/bash
t=\${SLURM_ARRAY_TASK_ID:-none}
if [ "\$t" = "\${NF_STOP_TASK:-}" ] && mkdir "$work/stopped.\$t" 2>/dev/null; then
    echo \$\$ >"$work/stopped.\$t/pid"
    NINFER_IO_FAULT=write:5:SIGSTOP exec "$faulty" "\$@"
fi
if [ "\$t" = "\${NF_EIO_TASK:-}" ] && [ "\${SLURM_RESTART_COUNT:-0}" -eq 0 ]; then
    NINFER_IO_FAULT=write:3:EIO exec "$faulty" "\$@"
fi
exec "$conv" "\$@"
EOF
chmod +x "$work/convert"
export NINFER_CONVERT=$work/convert
sub=(--plan "$work/w/plan.json" --cpus 1 --sbatch "--output=$work/w/logs/%x-%A_%a.out")

# 1. plan (6 tasks) -> array job -> afterok assemble job
t1=$SECONDS
run 0 bash "$ex/submit.sh" "${sub[@]}" --tasks 6 -- "${args[@]}"
cp "$work/out" "$work/submit.out"; cp "$work/err" "$work/submit.err"
contains "$work/err" "plan.json: 6 tasks"
mkdir out
submitted
wait_jobs 60 "$array" "$asm"
check test "$(job_states "$array" | wc -l)" -eq 6
all_completed "the array job" "$array"
all_completed "the assemble job" "$asm"
same_as_ref "Slurm array job"
run 0 "$bin/ninfer-verify" out/m.ninfer
check test -z "$(ls -A out | grep '\.tmp$')"
echo "test_slurm: plan, 6 tasks and assemble in $((SECONDS - t1)) s"

# 2. task 1 cancelled mid-task, task 4 failing with exit 3 once (it requeues itself): the assemble
# job is cancelled with its dependency and nothing is published; task 1 resubmitted, then all
# the same bytes
t2=$SECONDS
rm -rf out plan.json && mkdir out
export NF_STOP_TASK=1 NF_EIO_TASK=4
run 0 bash "$ex/submit.sh" "${sub[@]}" --tasks 6 -- "${args[@]}"
cp "$work/out" "$work/submit.out"; cp "$work/err" "$work/submit.err"
submitted
stopped=''
for i in $(seq 300); do
    p=$(cat "$work/stopped.1/pid" 2>/dev/null) && [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" = T ] && { stopped=$p; break; }
    sleep 0.1
done
if [ -n "$stopped" ]; then
    ok
    check test "$(element "$array" 1 | cut -d' ' -f1)" = RUNNING
    scancel "${array}_1"
else
    bad "task 1 did not stop at its 5th write: $(element "$array" 1)"
fi
wait_jobs 90 "$array" "$asm"
check test "$(element "$array" 1 | cut -d' ' -f1)" = CANCELLED
check test "$(element "$array" 4 | cut -d' ' -f1-3)" = "COMPLETED 1 0:0"
contains "logs/ninfer-task-${array}_4.out" "requeueing (restart 1 of at most 3)"
for t in 0 2 3 5; do check test "$(element "$array" $t)" = "COMPLETED 0 0:0"; done
check test "$(job_states "$asm" | cut -d' ' -f1)" = CANCELLED
check test ! -e out/m.ninfer
unset NF_STOP_TASK NF_EIO_TASK
run 0 bash "$ex/submit.sh" --plan "$work/w/plan.json" --resubmit 1 --cpus 1 --sbatch "--output=$work/w/logs/%x-%A_%a.out"
cp "$work/out" "$work/submit.out"; cp "$work/err" "$work/submit.err"
submitted
wait_jobs 60 "$array" "$asm"
all_completed "the resubmitted task" "$array"
all_completed "the second assemble job" "$asm"
same_as_ref "cancelled, requeued and resubmitted"
check test -z "$(ls -A out | grep '\.tmp$')"
run 0 "$bin/ninfer-verify" out/m.ninfer
echo "test_slurm: cancelled, requeued, resubmitted and assembled in $((SECONDS - t2)) s; $((SECONDS - t0)) s in all"
finish test_slurm
