#!/usr/bin/env bash
# The Kubernetes example (examples/k8s/README.md) cannot run here: its YAML files parse, the
# tasks Job is an Indexed Job whose command passes $(JOB_COMPLETION_INDEX) to --task, whose pod
# failure policy fails an index at exit 1 (and 2) and counts exit 3 for a retry, and the
# assembly Job assembles the same plan.  PyYAML (Debian's python3-yaml) is installed with
# apt-get when missing (as root); otherwise the test is skipped.
# usage: test_examples_yaml.sh BIN_DIR DATA_DIR  (both unused: this test reads the source tree)
. "$(dirname "$0")/lib.sh" "$@"

command -v python3 >/dev/null || { echo "SKIP python3 is not installed"; exit 0; }
if ! python3 -c 'import yaml' 2>/dev/null; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "SKIP PyYAML is missing and installing python3-yaml needs root (uid $(id -u))"; exit 0
    fi
    if ! command -v apt-get >/dev/null; then
        echo "SKIP PyYAML is missing and there is no apt-get to install python3-yaml"; exit 0
    fi
    { DEBIAN_FRONTEND=noninteractive apt-get install -y python3-yaml ||
        { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y python3-yaml; }; } >"$work/apt.log" 2>&1
    # Debian's package is for Debian's python3, which may not be the first on PATH
    py=python3
    python3 -c 'import yaml' 2>/dev/null || py=/usr/bin/python3
    if ! "$py" -c 'import yaml' 2>/dev/null; then
        echo "SKIP PyYAML is missing and apt-get install python3-yaml did not provide it: $(tail -c 300 "$work/apt.log")"
        exit 0
    fi
else
    py=python3
fi

k8s=$top/examples/k8s
for f in "$k8s"/*.yaml; do
    check "$py" -c 'import sys, yaml; docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None]; assert docs, "no document"' "$f"
done

"$py" - "$k8s/convert-job.yaml" "$k8s/convert-assemble.yaml" >"$work/checks" 2>&1 <<'PY'
import sys, yaml

def one_job(path):
    docs = [d for d in yaml.safe_load_all(open(path)) if d is not None]
    jobs = [d for d in docs if d.get("kind") == "Job"]
    assert len(jobs) == 1 and jobs[0].get("apiVersion") == "batch/v1", f"{path}: not one batch/v1 Job"
    return jobs[0]

def expect(cond, what):
    print(("ok " if cond else "FAIL ") + what)

tasks, asm = one_job(sys.argv[1]), one_job(sys.argv[2])
s = tasks["spec"]
pod = s["template"]["spec"]
expect(s.get("completionMode") == "Indexed", "the tasks Job is Indexed")
expect(isinstance(s.get("completions"), int) and s["completions"] > 0, "completions is a task count")
expect(isinstance(s.get("parallelism"), int) and s["parallelism"] > 0, "parallelism is set")
expect(isinstance(s.get("backoffLimitPerIndex", s.get("backoffLimit")), int), "a backoff limit is set")
expect(pod.get("restartPolicy") == "Never", "restartPolicy Never (needed by podFailurePolicy)")
(c,) = pod["containers"]
cmd = c.get("command", []) + c.get("args", [])
expect(cmd[:1] == ["ninfer-convert"], "the container runs ninfer-convert")
expect("--plan" in cmd and cmd[cmd.index("--plan") + 1] == "/data/plan.json", "--plan /data/plan.json")
expect("--task" in cmd and cmd[cmd.index("--task") + 1] == "$(JOB_COMPLETION_INDEX)",
       "--task $(JOB_COMPLETION_INDEX)")
mounts = {m["name"]: m["mountPath"] for m in c.get("volumeMounts", [])}
vols = {v["name"]: v for v in pod.get("volumes", [])}
expect(any(p == "/data" and "persistentVolumeClaim" in vols.get(n, {}) for n, p in mounts.items()),
       "a PVC mounted at /data")
rules = s.get("podFailurePolicy", {}).get("rules", [])
def action_for(code):  # the first rule matching an exit code (rules are tried in order)
    for r in rules:
        e = r.get("onExitCodes")
        if e and e.get("containerName", c["name"]) == c["name"]:
            hit = code in e["values"]
            if hit == (e["operator"] == "In"):
                return r["action"]
    return "Count"
expect(action_for(1) in ("FailIndex", "FailJob"), "exit 1 is not retried")
expect(action_for(2) in ("FailIndex", "FailJob"), "exit 2 is not retried")
expect(action_for(3) == "Count", "exit 3 is retried")
expect("FailIndex" not in [r["action"] for r in rules] or "backoffLimitPerIndex" in s,
       "FailIndex comes with backoffLimitPerIndex")
a = asm["spec"]
(ac,) = a["template"]["spec"]["containers"]
acmd = " ".join(ac.get("command", []) + ac.get("args", []))
expect("ninfer-convert --plan /data/plan.json --assemble" in acmd, "the assembly Job assembles the plan")
expect(a.get("completionMode", "NonIndexed") == "NonIndexed" and a.get("completions", 1) == 1,
       "the assembly is one pod")
PY
if [ $? -ne 0 ]; then bad "the YAML checks failed: $(tail -c 600 "$work/checks")"; fi
while read -r st what; do
    if [ "$st" = ok ]; then ok; else bad "examples/k8s: $what"; fi
done <"$work/checks"
check grep -q "kubectl wait --for=condition=complete" "$k8s/README.md"
finish test_examples_yaml
