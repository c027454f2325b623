#!/usr/bin/env bash
# Program-level fault loop (docs/security.md 1.3, issue 6 "Faults"): a split conversion (entry, parts and
# the report) is run once to count its calls of each I/O operation, then once per call with that
# call failing: the N-th open, read, write, fsync, link/rename and unlink, with EIO, and the
# writes also with ENOSPC and as a short write.  Every run must exit 3 with a message naming a
# path, publish nothing (no entry, no part, no report) and leave no temp file.  The same with
# --force over an empty directory (publication by rename), and over an existing artifact with
# its report (the old set comes back byte for byte; see below).
#
# The faults are injected by build/tests/bin/ninfer-convert-faults, the test copy of
# ninfer-convert linked with tests/cli/fault_hook.c (NINFER_IO_FAULT=OP:N:ERR); the real
# ninfer-convert ignores that variable, which is checked too.
# usage: test_faults.sh BIN_DIR DATA_DIR
# shellcheck source=tests/cli/lib.sh
. "$(dirname "$0")/lib.sh" "$@"
faulty=$bin/../tests/bin/ninfer-convert-faults
# fsync is what takes time here: use a memory file system when there is one
rmdir "$work"
work=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
[ -x "$faulty" ] || { echo "FAIL $faulty is missing (built when NINFER_TESTS=ON)"; exit 1; }
# Under ASan+UBSan (NINFER_TEST_CFLAGS has -fsanitize) a process start costs ~10x: there the
# many reads and writes are swept at every 4th call (the opens, syncs, links and unlinks at all).
thin=1
case "${NINFER_TEST_CFLAGS:-}" in *-fsanitize*) thin=4 ;; esac

# A checkpoint of a few dozen kilobytes; the demo recipe (copied so every path is under $work)
# split into an entry and three parts.
ck=$work/ckpt
"$bin/ninfer-gen-checkpoint" "$ck" --hidden 64 --intermediate 128 --layers 2 --vocab 64 >/dev/null ||
    { echo "FAIL generator"; exit 1; }
cp "$top/recipes/demo.yaml" "$work/recipe.yaml"
out=$work/out
mkdir "$out"
args=(-r "$work/recipe.yaml" --source "base=$ck" -o "$out/m.ninfer" --max-file-bytes 40000 -j 1)

# the clean run: counts, and the shape of what it publishes
NINFER_IO_COUNTS=$work/counts "$faulty" "${args[@]}" -q 2>"$work/err"
if [ $? -eq 0 ]; then ok; else bad "clean run: $(cat "$work/err")"; fi
published=$(ls -A "$out" | tr '\n' ' ')
if [ "$published" = "m.ninfer m.ninfer.conversion.json m.ninfer.part-0001 m.ninfer.part-0002 m.ninfer.part-0003 " ]; then
    ok
else
    bad "the clean run published '$published', expected an entry, three parts and the report"
fi
"$bin/ninfer-verify" -q "$out/m.ninfer" && ok || bad "the clean run's artifact does not verify"
rm -f "$out"/* "$out"/.[!.]*
count() { awk -v op="$1" '$1 == op { print $2 }' "$work/counts"; }

# the real program has no hook: the variable changes nothing
NINFER_IO_FAULT=open:1:EIO "$bin/ninfer-convert" "${args[@]}" -q 2>"$work/err" && ok ||
    bad "ninfer-convert honours NINFER_IO_FAULT: $(cat "$work/err")"
rm -f "$out"/* "$out"/.[!.]*
# and the hook refuses what it cannot parse, rather than injecting nothing
NINFER_IO_FAULT=write:1:EBOGUS "$faulty" "${args[@]}" 2>/dev/null
[ $? -eq 125 ] && ok || bad "a malformed NINFER_IO_FAULT was accepted"
rm -f "$out"/* "$out"/.[!.]*

# What a directory holds and what a run said, asked of the shell: a fork or two per question cost
# more than the faulty runs themselves.
shopt -s dotglob nullglob
listing() { # listing VAR DIR: VAR = DIR's names (hidden ones too), sorted, each followed by a space
    local names=("$2"/*)
    names=("${names[@]##*/}")
    printf -v "$1" '%s ' "${names[@]}"
    [ ${#names[@]} -gt 0 ] || printf -v "$1" ''
}
runs=0
sweep() { # sweep OP ERR [EXTRA ARGS...]
    local op=$1 err=$2
    shift 2
    local total
    total=$(count "$op")
    if [ -z "$total" ] || [ "$total" -eq 0 ]; then
        bad "a split conversion makes no $op call"
        return
    fi
    local n rc left step=1
    case $op in read | write) step=$thin ;; esac
    for n in $(seq 1 "$step" "$total"); do
        runs=$((runs + 1))
        NINFER_IO_FAULT=$op:$n:$err "$faulty" "${args[@]}" "$@" >/dev/null 2>"$work/err"
        rc=$?
        listing left "$out"
        { said=$(<"$work/err"); } 2>/dev/null
        if [ "$rc" -ne 3 ]; then
            bad "$op $n/$total ($err $*): exit $rc, expected 3: $(head -c 300 "$work/err")"
        elif [[ $said != *"$work/"* ]]; then
            bad "$op $n/$total ($err $*): the message names no path: $(head -c 300 "$work/err")"
        elif [ -n "$left" ]; then
            bad "$op $n/$total ($err $*): left behind: $left ($(head -c 300 "$work/err"))"
        else
            ok
        fi
        [ -z "$left" ] || rm -f "$out"/* "$out"/.[!.]*
    done
}
sweep open EIO
sweep read EIO
sweep write EIO
sweep write ENOSPC
sweep write short
sweep sync EIO
sweep link EIO
sweep unlink EIO
# publication by rename (--force) into an empty directory
sweep link EIO --force
sweep sync ENOSPC --force

# --force over an existing split artifact and its report: a failure anywhere puts the previous
# set (entry, parts and report) back byte for byte and leaves no temp file and no set-aside
# ".old" file.  The one failure that cannot undo anything is the removal of a set-aside file
# after the new set is published and synced (the commit): that run succeeds with the complete
# new set, and the set-aside file stays (reported by the next run, test_sigkill.sh).
#   report:  the same split, with the report (every open, sync, link and unlink; reads and writes
#            as said below);
#   fewer:   the new artifact has fewer parts (1 instead of 3): the old surplus parts are removed on
#            success and back on failure (opens, reads, syncs, links, unlinks);
#   noreport: --no-report over an artifact with a report: the old report goes with the old
#            artifact on success, comes back on failure (opens, syncs, links, unlinks).
old=$work/old
mkdir "$old"
"$faulty" "${args[@]}" -o "$old/m.ninfer" --artifact-id 0123456789abcdef0123456789abcdef -q ||
    bad "writing the artifact to replace failed"
[ "$(ls "$old" | wc -l)" -eq 5 ] || bad "the artifact to replace is not an entry, three parts and a report: $(ls "$old")"
reset_out() { rm -f "$out"/* "$out"/.[!.]*; cp "$old"/* "$out"/; }
listing old_names "$old"
same_as_old() { # the output directory holds exactly the old set, byte for byte
    local now
    listing now "$out"
    [ "$now" = "$old_names" ] && diff -r -q "$old" "$out" >/dev/null
}
new_id=fedcba9876543210fedcba9876543210
frun=0
kept=0
fsweep() { # fsweep NAME EXPECTED-NAMES SPECS -- ARGS...: EXPECTED-NAMES: what a success leaves
    local name=$1 expect=$2 specs=$3
    shift 4
    local fargs=("${args[@]}" --force --artifact-id $new_id "$@")
    reset_out
    NINFER_IO_COUNTS=$work/fcounts "$faulty" "${fargs[@]}" -q || bad "$name: a clean replacement failed"
    "$bin/ninfer-verify" -q "$out/m.ninfer" && ok || bad "$name: the replacing artifact does not verify"
    [ "$(ls -A "$out" | tr '\n' ' ')" = "$expect" ] && ok ||
        bad "$name: a clean replacement left '$(ls -A "$out" | tr '\n' ' ')', expected '$expect'"
    local spec op err total step n rc extra
    for spec in $specs; do
        op=${spec%%:*}
        err=${spec#*:}
        total=$(awk -v op="$op" '$1 == op { print $2 }' "$work/fcounts")
        # the reads and writes before publication are those of the sweeps above: every 5th
        # here, and each of the last 8 (the report, the old entry's directory)
        step=1
        case $op in read | write) step=$((5 * thin)) ;; esac
        for n in $( (seq 1 "$step" "$total"; seq $((total > 8 ? total - 7 : 1)) "$total") | sort -nu); do
            frun=$((frun + 1))
            reset_out
            NINFER_IO_FAULT=$op:$n:$err "$faulty" "${fargs[@]}" >/dev/null 2>"$work/err"
            rc=$?
            if [ "$rc" -eq 3 ]; then
                if same_as_old; then ok; else
                    bad "--force $name $op $n/$total ($err): the previous set is not back as it was: $(ls -A "$out" | tr '\n' ' ') ($(head -c 300 "$work/err"))"
                fi
            elif [ "$rc" -eq 0 ] && [ "$op" = unlink ] && "$bin/ninfer-verify" -q "$out/m.ninfer" &&
                [ "$(ls "$out" | tr '\n' ' ')" = "$expect" ] &&
                [ -z "$(ls -A "$out" | grep -v -x -e 'm\.ninfer.*' -e '\.m\.ninfer.*\.old')" ]; then
                kept=$((kept + 1))
                ok
            else
                bad "--force $name $op $n/$total ($err): exit $rc: $(head -c 300 "$work/err"); left: $(ls -A "$out" | tr '\n' ' ')"
            fi
        done
    done
    if grep -q "$new_id" "$out/m.ninfer.conversion.json" 2>/dev/null || [ "$name" = noreport ]; then ok; else
        bad "$name: the report is not the new one"
    fi
}
all="m.ninfer m.ninfer.conversion.json m.ninfer.part-0001 m.ninfer.part-0002 m.ninfer.part-0003 "
fsweep report "$all" "open:EIO read:EIO write:ENOSPC write:short sync:EIO link:EIO unlink:EIO" --
fsweep fewer "m.ninfer m.ninfer.conversion.json m.ninfer.part-0001 " "open:EIO read:EIO sync:EIO link:EIO unlink:EIO" \
    -- --max-file-bytes 90000
fsweep noreport "m.ninfer m.ninfer.part-0001 m.ninfer.part-0002 m.ninfer.part-0003 " \
    "open:EIO sync:EIO link:EIO unlink:EIO" -- --no-report
echo "--force over an existing artifact and report: $frun faulty runs ($kept succeeded keeping a set-aside file)"

echo "fault points: open $(count open), read $(count read), write $(count write), sync $(count sync)," \
    "link $(count link), unlink $(count unlink); $runs faulty runs"
finish "faults"
