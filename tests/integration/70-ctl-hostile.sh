#!/bin/bash
# 70-ctl-hostile: slurmctld with topology/isle trusts nothing that reaches it
# from a job or a cluster file (8 nodes x 4 GPUs, NVLink domains of 4).
#  1. A job submitted through libslurm (tests/integration/isle_submit.c, no
#     sbatch, so no spank_isle.so checks) with SPANK_ISLE_TP=65536,
#     SPANK_ISLE_PP=65536 and gres/gpu:65536 once killed slurmctld (SIGFPE
#     in the engine). The controller must stay up and answer.
#  2. The same options on a job that fits: the controller refuses them with
#     the SPANK parser's message (logged once, in the AdminComment) and
#     Slurm's default selection runs the job. Options within the parser's
#     limits but against the admin's policy in plugstack.conf (max_tp=4,
#     allowed_codecs=none,bf16) are refused the same way; a job within the
#     policy is placed by isle, from libslurm and from sbatch.
#  3. Decision records: the record of a started job (and of every task of
#     a job array, under the task's own job id) is written (islectl explain
#     works) and removed when Slurm purges the job (MinJobAge); the
#     directory holds no record of the purged jobs.
#  4. A cyclic switch graph (12 leafs and 12 spines, each listing all of the
#     other kind) once kept slurmctld from answering at load. islectl
#     validate refuses it naming the cycle; on reconfigure the controller
#     logs the reason, falls back to default selection and keeps answering;
#     jobs still run.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_pt_setup
[ -x "$repo/build/bin/islectl" ] || { echo "FAIL: build/bin/islectl not built (make)"; exit 1; }

ctld_up() {
	timeout 30 scontrol ping 2>/dev/null | isle_grep_q "is UP" &&
		timeout 30 squeue -h >/dev/null 2>&1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-t70.XXXXXX")
trap 'rm -rf "$work"' EXIT

isle_pt_submit_tool "$work" || fail "cannot build isle_submit against ${ISLE_SLURM_PREFIX:-24.11}"

isle_pt_gb200 "$work" 8 4 4
isle_pt_plugstack "$work" default_mode=preferred max_tp=4 allowed_codecs=none,bf16

isle_cluster_start --nodes 8 --gpus 4 --topology isle \
	--plugin-dir "$repo/build/slurm" --plugstack "$work/plugstack.conf" \
	--etc-file "$work/isle.json" --slurm-extra "MinJobAge=5" ||
	fail "cluster did not start"
log=$ISLE_CLUSTER_DIR/log/slurmctld.log
recdir=$ISLE_CLUSTER_DIR/state/isle
grep -q "isle: loaded .*isle.json: 8 nodes" "$log" || fail "cluster file not loaded"
ctld_pid=$(cat "$ISLE_CLUSTER_DIR/run/slurmctld.pid")

# --- 1. the crash ------------------------------------------------------------
if j=$("$work/isle_submit" --spank SPANK_ISLE_TP=65536 --spank SPANK_ISLE_PP=65536 \
	--tres-per-job gres/gpu:65536 2>"$work/submit.err"); then
	echo "hostile job $j accepted (pending)"
else
	echo "hostile job refused at submit: $(cat "$work/submit.err")"
fi
# Let the scheduler and backfill look at it.
for _ in 1 2 3 4 5 6; do
	ctld_up || break
	sleep 1
done
kill -0 "$ctld_pid" 2>/dev/null || fail "slurmctld died on the hostile job"
ctld_up || fail "slurmctld does not answer after the hostile job"
[ -n "${j:-}" ] && scancel "$j"

# --- 2. options checked in the controller ------------------------------------
j=$("$work/isle_submit" -N 2 --tres-per-node gres/gpu:4 \
	--spank SPANK_ISLE_TP=65536 --spank SPANK_ISLE_PP=65536) ||
	fail "job with a valid size refused"
isle_wait_job "$j" 120 >/dev/null || fail "job $j did not run under default selection"
ac=$(isle_job_field "$j" AdminComment)
echo "tp=65536: $(scontrol show job "$j" | grep -o 'AdminComment=.*')"
scontrol show job "$j" | isle_grep_q "AdminComment=isle: default selection: job option ISLE_TP refused: invalid --isle-tp '65536': expected an integer from 1 to 1024" ||
	fail "AdminComment of $j does not give the reason: $ac"
grep -q "isle: JobId=$j: default selection: job option ISLE_TP refused" "$log" ||
	fail "refusal of job $j not logged"
[ "$(grep -c "isle: JobId=$j: default selection" "$log")" = 1 ] ||
	fail "refusal of job $j logged more than once"

for case in "SPANK_ISLE_TP=8|exceeds the site limit max_tp=4" \
	"SPANK_ISLE_COMPRESS=int8|--isle-compress=int8 is not allowed" \
	"SPANK_ISLE_MODE=sometimes|invalid --isle-mode 'sometimes'"; do
	env=${case%%|*} want=${case#*|}
	j=$("$work/isle_submit" -N 2 --tres-per-node gres/gpu:4 --spank "$env") ||
		fail "job with $env refused at submit"
	isle_wait_job "$j" 120 >/dev/null || fail "job $j ($env) did not run"
	scontrol show job "$j" | isle_grep_q "AdminComment=isle: default selection: .*$want" ||
		fail "job $j ($env): $(scontrol show job "$j" | grep -o 'AdminComment=.*')"
done

j=$("$work/isle_submit" -N 2 --tres-per-node gres/gpu:4 --spank SPANK_ISLE_TP=4 \
	--spank SPANK_ISLE_MODE=required) || fail "job within the policy refused"
isle_wait_job "$j" 120 >/dev/null || fail "job $j within the policy did not run"
scontrol show job "$j" | isle_grep_q "AdminComment=isle: tp=4 pp=1 dp=2 " ||
	fail "job $j within the policy not placed by isle: $(scontrol show job "$j" | grep -o 'AdminComment=.*')"

# sbatch's own job environment (every option, span "core") reads back.
j=$(sbatch --parsable -N2 --gpus-per-node=4 --isle-tp=4 -o /dev/null --wrap true) || fail "sbatch --isle-tp=4"
isle_wait_job "$j" 120 >/dev/null || fail "sbatch job $j did not run"
scontrol show job "$j" | isle_grep_q "AdminComment=isle: tp=4 pp=1 dp=2 " ||
	fail "sbatch job $j not placed by isle: $(scontrol show job "$j" | grep -o 'AdminComment=.*')"

# --- 3. decision records -----------------------------------------------------
wait_for 60 test -f "$recdir/job_$j.json" || fail "no record of started job $j"
"$repo/build/bin/islectl" explain --state-dir "$ISLE_CLUSTER_DIR/state" "$j" |
	grep -q "^Job $j: isle: tp=4" || fail "islectl explain $j"
# Array tasks are evaluated under the pending array's record and get their
# own job id when they start: each task's record is filed under that id.
a=$(sbatch --parsable --array=1-4 -N1 --gpus-per-node=2 --isle-tp=2 -o /dev/null --wrap true) ||
	fail "sbatch --array"
# Collect the task job ids while the array runs: MinJobAge=5 may purge a
# finished task before the last one ends.
tasks=""
for _ in $(seq 240); do
	tasks=$(printf '%s\n' $tasks $(scontrol -o show job "$a" 2>/dev/null | grep -o '^JobId=[0-9]*' | cut -d= -f2) | sort -un)
	squeue -h -r -j "$a" 2>/dev/null | isle_grep_q . || break
	sleep 0.5
done
squeue -h -r -j "$a" 2>/dev/null | isle_grep_q . && fail "array $a did not finish"
[ "$(echo "$tasks" | wc -w)" = 4 ] || fail "array $a: tasks '$tasks'"
for t in $tasks; do
	wait_for 60 test -f "$recdir/job_$t.json" || fail "no record of array task job $t"
	grep -q '"line":"isle: tp=2 ' "$recdir/job_$t.json" || fail "record of task job $t: $(cat "$recdir/job_$t.json")"
done
# MinJobAge=5: Slurm purges finished jobs on its next purge pass (about a
# minute), and the writer drops their records.
wait_for 300 bash -c "! scontrol show job 2>/dev/null | grep -q JobId=" || fail "jobs never purged"
no_records() { [ -z "$(find "$recdir" -name 'job_*.json')" ]; }
wait_for 60 no_records || fail "records left after every job was purged: $(ls "$recdir")"

# --- 4. a cyclic switch graph ------------------------------------------------
python3 - "$work/isle.json" "$work/cyclic.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
leafs = [{"name": "leaf%d" % i, "level": "leaf", "switches": ["spine%d" % k for k in range(1, 13)]}
         for i in range(1, 13)]
leafs[0]["nodes"] = ["n[01-04]"]
leafs[1]["nodes"] = ["n[05-08]"]
spines = [{"name": "spine%d" % i, "level": "spine", "switches": ["leaf%d" % k for k in range(1, 13)]}
          for i in range(1, 13)]
c["switches"] = leafs + spines
json.dump(c, open(sys.argv[2], "w"), indent=1)
EOF
if out=$(timeout 60 "$repo/build/bin/islectl" validate "$work/cyclic.json" 2>&1); then
	fail "islectl validate accepted the cyclic file: $out"
fi
echo "validate: $out"
echo "$out" | isle_grep_q "switch links form a cycle.*leaf1 -> spine1 -> leaf1" || fail "validate does not name the cycle: $out"

cp "$work/cyclic.json" "$ISLE_CLUSTER_DIR/etc/isle.json"
timeout 60 scontrol reconfigure || fail "scontrol reconfigure failed"
wait_for 120 grep -q "isle: cannot load cluster file .*switch links form a cycle" "$log" ||
	fail "controller did not log the refused file"
grep "isle: cannot load cluster file" "$log" | tail -1
wait_for 60 ctld_up || fail "controller does not answer after the cyclic file"
scontrol show topology | isle_grep_q "Status=fallback" || fail "topology does not report the fallback"
j=$(sbatch --parsable -N2 --gpus-per-node=4 -o /dev/null --wrap true) || fail "sbatch failed"
isle_wait_job "$j" 120 >/dev/null || fail "job $j did not run after the cyclic file"
ctld_up || fail "controller down at the end"
echo "PASS"
