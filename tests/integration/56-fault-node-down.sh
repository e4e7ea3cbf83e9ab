#!/bin/bash
# 56-fault-node-down: a node set DOWN while jobs queue is never chosen by
# topology/isle, and is used again once resumed.
#  4 nodes of 4 GPUs (nvl1 = n[01-04]); ReturnToService=1 so that the admin's
#  DOWN holds (RTS=2 would let a registering slurmd lift it). Holders fill
#  n01, n03, n04; n02 is free and set DOWN. Then three 1-node 4-GPU jobs and
#  one 2-node job queue: the only node with free GPUs is down, so none
#  starts. One holder ends: the first queued job runs on the freed node, not
#  on n02, and its AdminComment is isle's decision naming that node. Then
#  n02 is resumed: the next queued job runs on n02 (isle's decision says so).
#  No job in the test ever ran on n02 while it was down.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_pt_setup

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-t56.XXXXXX")
trap 'rm -rf "$work"' EXIT
isle_pt_gb200 "$work" 4 4 4
isle_cluster_start --nodes 4 --gpus 4 --topology isle \
	--plugin-dir "$repo/build/slurm" --etc-file "$work/isle.json" \
	--slurm-extra "ReturnToService=1" || fail "cluster did not start"
log=$ISLE_CLUSTER_DIR/log/slurmctld.log
grep -q "isle: loaded .*isle.json: 4 nodes" "$log" || fail "cluster file not loaded"

# decision JOBID: isle's AdminComment line for a started job (not planned).
decision() { scontrol -o show job "$1" | grep -o 'AdminComment=isle: tp=.*' || true; }

declare -A holder
for n in n01 n03 n04; do
	holder[$n]=$(sbatch --parsable -N1 -w "$n" --gpus-per-node=4 -o /dev/null --wrap "sleep 600")
done
for n in n01 n03 n04; do
	isle_pt_wait_state "${holder[$n]}" RUNNING 120 || fail "holder on $n did not start"
done
scontrol update nodename=n02 state=down reason=t56-down
wait_for 60 sh -c '[ "$(sinfo -h -n n02 -o %T)" = down ]' ||
	fail "n02 is not down: $(sinfo -h -n n02 -o '%T %E')"

q=()
for _ in 1 2 3; do
	q+=("$(sbatch --parsable -N1 --gpus-per-node=4 -o /dev/null --wrap "sleep 600")")
done
wide=$(sbatch --parsable -N2 --gpus-per-node=4 -o /dev/null --wrap "sleep 600")
# Until the scheduler has looked at them (a reason set), then some more
# passes: none may start while the only GPU-free node is down.
reasoned() {
	local j r
	for j in "${q[@]}" "$wide"; do
		r=$(squeue -h -j "$j" -o %r)
		[ -n "$r" ] && [ "$r" != None ] || return 1
	done
}
wait_for 120 reasoned || fail "queued jobs got no pending reason: $(squeue -h -o '%i %T %r')"
scontrol schedule >/dev/null 2>&1 || true
sleep 5
for j in "${q[@]}" "$wide"; do
	s=$(squeue -h -j "$j" -o %T)
	[ "$s" = PENDING ] || fail "job $j is $s with n02 down ($(isle_job_field "$j" NodeList))"
done
echo "ok: 4 jobs pending with n02 down: $(squeue -h -j "${q[0]}" -o %r)"

# One holder ends: the freed node is used, n02 is not.
scancel "${holder[n03]}"
started=""
has_started() {
	local j
	for j in "${q[@]}"; do
		[ "$(squeue -h -j "$j" -o %T)" = RUNNING ] && { started=$j; return 0; }
	done
	return 1
}
wait_for 120 has_started || fail "no queued job started after n03 was freed"
nl=$(isle_job_field "$started" NodeList)
[ "$nl" = n03 ] || fail "job $started ran on $nl with n02 down, want n03"
d=$(decision "$started")
[[ $d == *" nodes=n03 "* ]] || fail "job $started: AdminComment is not isle's decision for n03: $d"
echo "ok: job $started on n03 while n02 is down: ${d%% cost=*}"
for j in "${q[@]}" "$wide"; do
	[ "$j" = "$started" ] && continue
	s=$(squeue -h -j "$j" -o %T)
	[ "$s" = PENDING ] || fail "job $j is $s with n02 down ($(isle_job_field "$j" NodeList))"
done

# Resume: the next job runs on n02.
scontrol update nodename=n02 state=resume
wait_for 60 sh -c '[ "$(sinfo -h -n n02 -o %T)" != down ]' || fail "n02 did not resume"
second=""
has_second() {
	local j
	for j in "${q[@]}"; do
		[ "$j" = "$started" ] && continue
		[ "$(squeue -h -j "$j" -o %T)" = RUNNING ] && { second=$j; return 0; }
	done
	return 1
}
wait_for 120 has_second || fail "no queued job started after n02 was resumed: $(squeue -h -o '%i %T %r')"
nl=$(isle_job_field "$second" NodeList)
[ "$nl" = n02 ] || fail "job $second ran on $nl after resume, want n02"
d=$(decision "$second")
[[ $d == *" nodes=n02 "* ]] || fail "job $second: AdminComment is not isle's decision for n02: $d"
echo "ok: job $second on n02 after resume: ${d%% cost=*}"

# The 2-node job still waits (one node free at most), and nothing else
# ever ran on n02 but the job started after the resume.
for j in "${q[@]}" "$wide"; do
	[ "$j" = "$second" ] && continue
	nl=$(isle_job_field "$j" NodeList)
	[[ $nl == *n02* ]] && fail "job $j ran on $nl (n02)"
done
scancel "${q[@]}" "$wide" "${holder[@]}"
isle_cluster_stop
echo "PASS"
