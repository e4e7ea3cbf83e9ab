#!/bin/bash
# 51-plan-node-gpus: nodes of one job granted different GPU indices get the
# same plan. A 2-node test cluster, 4 fake GPUs per node wired as NVLink
# pairs {0,1} and {2,3}. A 1-GPU job holds GPU 0 of the first node, so a
# 2-node job with 2 GPUs per node gets {1,2} there (across the pairs: two
# islands of one) and {0,1} on the second node (one NVLink pair). The job
# prolog used to hand this node's SLURM_JOB_GPUS to the agent as every
# node's GPUs, so the two nodes wrote different plans and the shim's ranks
# chose different algorithms (a hang). Now every node's plan carries each
# node's own indices from the controller's allocation:
#  - the plan files of both nodes are identical and name {1,2} on the first
#    node, {0,1} on the second;
#  - under srun --mpi=pmix with the shim injected by spank_isle.so, the
#    ranks agree on the plan (no "different plans" fallback), use it (its
#    levels in the shim's line) and the sums are exact.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_cluster_require

agent=$repo/build/bin/isle-agent
spank=$repo/build/slurm/spank_isle.so
CHECK=$repo/build/tests/comm_mpi_check
SHIM=$repo/build/lib/libisle_preload.so
command -v mpicc.openmpi >/dev/null || command -v mpicc >/dev/null ||
	{ echo "SKIP: no Open MPI (mpicc): the shim's MPI part is not made here (libopenmpi-dev)"; exit 77; }
for f in "$agent" "$spank" "$CHECK" "$SHIM"; do
	[ -f "$f" ] || { echo "FAIL: $f not built (make)"; exit 1; }
done
[ -e "$ISLE_SLURM_PREFIX/lib/slurm/mpi_pmix.so" ] ||
	{ echo "SKIP: Slurm built without PMIx (no mpi_pmix.so)"; exit 77; }

die() {
	echo "FAIL: $*"
	isle_cluster_logs 30
	exit 1
}

work=$(mktemp -d "${ISLE_TMPDIR:-${TMPDIR:-/tmp}}/isle-51.XXXXXX")
trap 'rm -rf "$work"' EXIT
isle_pt_leaf "$work/isle.json" pairs 2 4 '"nvlinks": [[0, 1, 4], [2, 3, 4]],'
cat >"$work/plugstack.conf" <<EOF
required $spank agent=$agent cluster=@ETC@/isle.json rundir=@DIR@/run/isle/%n shim=$SHIM
EOF

isle_cluster_start --nodes 2 --gpus 4 --plugstack "$work/plugstack.conf" \
	--etc-file "$work/isle.json" || die "cluster did not start"
read -r n1 n2 <<<"$ISLE_CLUSTER_NODE_NAMES"
[ "$n1" = n01 ] && [ "$n2" = n02 ] || die "unexpected node names $n1 $n2"
T=$ISLE_CLUSTER_DIR/tmp/t51
mkdir -p "$T"
chmod 0777 "$T"

# GPU 0 of n01 busy for the whole test.
hold=$(sbatch --parsable -w n01 -N1 -n1 --gres=gpu:1 -o /dev/null \
	--wrap "sleep 600") || die "sbatch of the 1-GPU job failed"
for _ in $(seq 60); do
	[ "$(isle_job_field "$hold" JobState)" = RUNNING ] && break
	sleep 1
done
[ "$(isle_job_field "$hold" JobState)" = RUNNING ] || die "1-GPU job $hold not running"
held=$(isle_job_field_all "$hold" GRES | head -1)
echo "     job $hold holds $held on n01"

export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_mpi_yield_when_idle=1
# codec none on every level: sums of integers are exact.
export ISLE_COMM_TIMEOUT_S=30 ISLE_COMM_VERBOSE=1 ISLE_COMM_ALGO=hier ISLE_COMM_CODEC=none
unset ISLE_PLAN ISLE_COMM_DISABLE LD_PRELOAD

# Every task saves the plan it was given, then runs the checker (the shim is
# in LD_PRELOAD through spank_isle.so). Launch failures of Open MPI's TCP
# wire-up on this loaded host are retried, as in 41-comm-srun-pmix.sh.
for try in 1 2 3; do
	rm -f "$T"/plan.* "$T/out"
	timeout 150 srun --mpi=pmix -N2 --ntasks-per-node=2 --gpus-per-node=2 \
		-m block --kill-on-bad-exit=1 bash -c '
		echo "MAP $SLURM_PROCID $SLURMD_NODENAME gpus=$SLURM_JOB_GPUS"
		cp "$ISLE_PLAN" "$0/plan.$SLURMD_NODENAME.$SLURM_LOCALID"
		exec "$@"' "$T" "$CHECK" exact --sizes 1,7,4099,16384,65537 --async 2 \
		>"$T/out" 2>&1
	rc=$?
	if [ $rc -eq 0 ] || [ $try -eq 3 ] ||
		! grep -Eq 'Open MPI failed to TCP connect|task [0-9]+ launch failed|Segmentation fault' "$T/out" ||
		grep -Eq '^(isle_comm|exact)' "$T/out"; then
		break
	fi
	echo "     launch failed before the shim ran: launch again"
done
grep -E '^(MAP|isle_comm)' "$T/out" | sort

fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}
ranks() { # plan file -> "node gpu" lines in rank order
	sed -n 's/.*"rank": *\([0-9]*\), *"node": *"\([^"]*\)", *"gpu": *\([0-9]*\).*/\1 \2 \3/p' "$1" |
		sort -n | cut -d' ' -f2-
}
p1=$T/plan.n01.0 p2=$T/plan.n02.0
if [ ! -f "$p1" ] || [ ! -f "$p2" ]; then
	fail "no plan reached the tasks"
	tail -20 "$T/out"
else
	if cmp -s "$p1" "$p2"; then
		echo "ok   n01 and n02 hold the same plan"
	else
		fail "the nodes' plans differ"
		diff "$p1" "$p2" | head -20
	fi
	got=$(ranks "$p1" | xargs)
	if [ "$got" = "n01 1 n01 2 n02 0 n02 1" ]; then
		echo "ok   the plan names each node's own GPUs: $got"
	else
		fail "plan ranks '$got' (want n01 1 n01 2 n02 0 n02 1)"
	fi
fi
if [ $rc -eq 0 ] && grep -q '^exact: PASS' "$T/out"; then
	echo "ok   sums exact under the shim"
else
	fail "checker rc $rc"
	grep -E 'FAIL|rror|isle_comm|srun' "$T/out" | head -20
fi
if grep -q 'different plans' "$T/out"; then
	fail "the ranks found their plans differ"
elif grep -Eq "^isle_comm: 4 ranks, plan .*/plan.json, codecs .*island groups 1\.\.2" "$T/out"; then
	echo "ok   the shim runs the job's plan: $(grep '^isle_comm: 4 ranks' "$T/out" | head -1)"
else
	fail "no isle_comm line with the plan's levels"
	grep '^isle_comm' "$T/out"
fi
scancel "$hold"
[ $fails -eq 0 ] || { isle_cluster_logs 20; exit 1; }
exit 0
