#!/bin/bash
# 00-cluster-basic: a live slurmctld + 2 slurmd with 4 fake GPUs each.
#  1. sbatch -N2 --gpus-per-node=4 running srun: the job completes, the tasks
#     ran on both nodes, `scontrol show job -d` reports GRES=gpu:4(IDX:0-3) per
#     node, and CUDA_VISIBLE_DEVICES / SLURM_STEP_GPUS in every task match the
#     indices of that task's node.
#  2. A job holding GPU 0 of one node, then a 2-GPU job on that node: it gets
#     indices that do not start at 0, and the task's CUDA_VISIBLE_DEVICES
#     follows them (so the check above is not trivially "0,1,2,3").
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
isle_cluster_require

fail() {
	echo "FAIL: $*"
	isle_cluster_logs 20
	exit 1
}

# Wait until FILE has COUNT lines matching REGEX (the job's srun output).
wait_lines() { # file regex count
	local i n
	for i in $(seq 1 300); do
		n=$(grep -c -- "$2" "$1" 2>/dev/null) || true
		[ "${n:-0}" -ge "$3" ] && return 0
		sleep 0.2
	done
	return 1
}

isle_cluster_start --nodes 2 --gpus 4 || fail "cluster did not start"
read -r n1 n2 <<<"$ISLE_CLUSTER_NODE_NAMES"
jobs=$ISLE_CLUSTER_DIR/jobs

# --- 1. two nodes, four GPUs each ------------------------------------------
cat >"$jobs/job.sh" <<'EOF'
#!/bin/bash
echo "BATCH node=$SLURMD_NODENAME job_gpus=${SLURM_JOB_GPUS:-unset}"
srun --ntasks-per-node=2 bash -c 'echo "TASK node=$SLURMD_NODENAME rank=$SLURM_PROCID cvd=${CUDA_VISIBLE_DEVICES:-unset} step_gpus=${SLURM_STEP_GPUS:-unset} job_gpus=${SLURM_JOB_GPUS:-unset}"'
# Hold the allocation until the test has read `scontrol -d show job`
# (a finished job no longer lists its GRES indices).
for _ in $(seq 1 600); do [ -e "$ISLE_GO" ] && break; sleep 0.1; done
EOF
jobid=$(ISLE_GO=$jobs/go1 sbatch --parsable -N2 --ntasks-per-node=2 --gpus-per-node=4 \
	-o "$jobs/%j.out" "$jobs/job.sh") || fail "sbatch refused the job"
echo "submitted job $jobid"
wait_lines "$jobs/$jobid.out" '^TASK ' 4 || fail "job $jobid: no srun output (state $(isle_job_field "$jobid" JobState))"
scontrol -d show job "$jobid" | grep -E 'NodeList=|GRES=|TresPerNode' || true
mapfile -t idx_lines < <(isle_job_gres_idx "$jobid")
touch "$jobs/go1"
state=$(isle_wait_job "$jobid" 60) || fail "job $jobid ended $state"
echo "job $jobid: $state"
cat "$jobs/$jobid.out"

[ ${#idx_lines[@]} -eq 2 ] || fail "scontrol -d listed ${#idx_lines[@]} node GRES lines, want 2: ${idx_lines[*]}"
declare -A want=()
for l in "${idx_lines[@]}"; do
	read -r node idx <<<"$l"
	[ "$idx" = 0-3 ] || fail "node $node: GRES indices '$idx', want 0-3 (whole node)"
	want[$node]=$(isle_idx_expand "$idx")
done
{ [ -n "${want[$n1]:-}" ] && [ -n "${want[$n2]:-}" ]; } || fail "GRES lines do not name $n1 and $n2: ${idx_lines[*]}"

ntask=0
declare -A seen=()
while read -r _ node rank cvd step_gpus _; do
	node=${node#node=} cvd=${cvd#cvd=} step_gpus=${step_gpus#step_gpus=}
	[ -n "${want[$node]:-}" ] || fail "task ${rank} ran on unexpected node '$node'"
	[ "$cvd" = "${want[$node]}" ] || fail "$node ${rank}: CUDA_VISIBLE_DEVICES=$cvd, GRES indices ${want[$node]}"
	[ "$step_gpus" = "${want[$node]}" ] || fail "$node ${rank}: SLURM_STEP_GPUS=$step_gpus, GRES indices ${want[$node]}"
	seen[$node]=1
	ntask=$((ntask + 1))
done < <(grep '^TASK ' "$jobs/$jobid.out")
[ $ntask -eq 4 ] || fail "want 4 task lines, got $ntask"
[ ${#seen[@]} -eq 2 ] || fail "tasks ran on ${!seen[*]}, want $n1 and $n2"
batch_gpus=$(sed -n 's/^BATCH node=[^ ]* job_gpus=//p' "$jobs/$jobid.out")
[ "$batch_gpus" = 0,1,2,3 ] || fail "SLURM_JOB_GPUS in the batch step is '$batch_gpus', want 0,1,2,3"
echo "ok: 4 tasks on $n1,$n2; GRES IDX:0-3 on both; CUDA_VISIBLE_DEVICES and SLURM_STEP_GPUS match"

# --- 2. indices that do not start at 0 -----------------------------------------
hold=$(sbatch --parsable -w "$n1" -N1 --gpus-per-node=1 -o /dev/null --wrap 'sleep 300') ||
	fail "sbatch of the holder job failed"
for _ in $(seq 1 100); do
	[ "$(isle_job_field "$hold" JobState)" = RUNNING ] && break
	sleep 0.2
done
[ "$(isle_job_field "$hold" JobState)" = RUNNING ] || fail "holder job $hold is not running"
hold_idx=$(isle_job_gres_idx "$hold" | awk '{ print $2 }')
j2=$(sbatch --parsable -w "$n1" -N1 --gpus-per-node=2 -o "$jobs/%j.out" \
	--wrap "srun bash -c 'echo TASK node=\$SLURMD_NODENAME cvd=\$CUDA_VISIBLE_DEVICES'
		for _ in \$(seq 1 600); do [ -e $jobs/go2 ] && break; sleep 0.1; done") ||
	fail "sbatch of the 2-GPU job failed"
wait_lines "$jobs/$j2.out" '^TASK ' 1 || fail "job $j2: no srun output (state $(isle_job_field "$j2" JobState))"
j2_idx=$(isle_job_gres_idx "$j2" | awk '{ print $2 }')
touch "$jobs/go2"
state=$(isle_wait_job "$j2" 60) || fail "job $j2 ended $state"
j2_cvd=$(sed -n 's/^TASK node=[^ ]* cvd=//p' "$jobs/$j2.out")
echo "holder job $hold has IDX:$hold_idx; job $j2 has IDX:$j2_idx, CUDA_VISIBLE_DEVICES=$j2_cvd"
[ -n "$j2_idx" ] || fail "no GRES indices for job $j2"
[[ ",$(isle_idx_expand "$j2_idx")," != *",$(isle_idx_expand "$hold_idx"),"* ]] || fail "job $j2 was given the held GPU"
[ "$j2_cvd" = "$(isle_idx_expand "$j2_idx")" ] || fail "CUDA_VISIBLE_DEVICES=$j2_cvd does not match IDX:$j2_idx"
scancel "$hold"

isle_cluster_stop
echo "PASS"
