#!/bin/bash
# 52-task-distribution: steps whose tasks land where the plan puts its ranks
# get the plan whatever --distribution says, and the others say what to
# change.
#
# 3 slurmd x 2 fake GPUs, all in the cluster file. With as many tasks as
# nodes Slurm's default distribution is cyclic, which lays out ranks as
# block does when each node runs one task or the step has one node:
#  1. -N2 --gpus-per-node=1 --ntasks-per-node=1 (pure data parallelism):
#     both tasks get ISLE_PLAN, nothing on stderr;
#  2. --gpus=1 -n1: the task gets ISLE_PLAN;
#  3. -N1 with 2 tasks and srun -m cyclic: both get ISLE_PLAN;
#  4. --isle-tp=2, -N2 with 2 tasks per node, srun -m cyclic: no plan, and one line on
#     stderr naming the distribution and the fix (-m block).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_cluster_require

agent=$repo/build/bin/isle-agent
spank=$repo/build/slurm/spank_isle.so
for f in "$agent" "$spank"; do
	[ -f "$f" ] || { echo "FAIL: $f not built (make)"; exit 1; }
done
# Plans need a shim= (without one the shim is off); any harmless library
# shows the mechanics.
shim=
for f in "$repo/build/lib/libisle_preload.so" /usr/lib/x86_64-linux-gnu/libm.so.6 /lib/x86_64-linux-gnu/libm.so.6; do
	[ -f "$f" ] && { shim=$f; break; }
done
[ -n "$shim" ] || { echo "SKIP: no library to name as shim="; exit 77; }

fail() {
	echo "FAIL: $*"
	isle_cluster_logs 30
	exit 1
}

work=$(mktemp -d "${ISLE_TMPDIR:-${TMPDIR:-/tmp}}/isle-52.XXXXXX")
trap 'rm -rf "$work"' EXIT
isle_pt_leaf "$work/isle.json" distribution 3 2 '"nvlink_all": 4,'
cat >"$work/plugstack.conf" <<EOF
required $spank agent=$agent cluster=@ETC@/isle.json rundir=@DIR@/run/isle/%n shim=$shim
EOF

isle_cluster_start --nodes 3 --gpus 2 --plugstack "$work/plugstack.conf" \
	--etc-file "$work/isle.json" || fail "cluster did not start"
jobs=$ISLE_CLUSTER_DIR/jobs

# run NAME SRUN-ARGS -- SBATCH-ARGS...: a job whose one step prints each
# task's ISLE_PLAN and SLURM_DISTRIBUTION.
run() {
	local name=$1 srun_args=$2 j state
	shift 2
	cat >"$jobs/$name.sh" <<EOF
#!/bin/bash
srun $srun_args bash -c 'echo "TASK \$SLURM_PROCID \$SLURMD_NODENAME dist=\${SLURM_DISTRIBUTION:-none} plan=\${ISLE_PLAN:-unset}"'
EOF
	chmod +x "$jobs/$name.sh"
	j=$(sbatch --parsable --chdir="$jobs" "$@" -o "$jobs/$name.out" \
		-e "$jobs/$name.err" "$jobs/$name.sh") || fail "$name: sbatch failed"
	state=$(isle_wait_job "$j" 60) || { cat "$jobs/$name.out" "$jobs/$name.err"; fail "$name: job $j ended $state"; }
	echo "$name (job $j):"
	sed 's/^/  /' "$jobs/$name.out" "$jobs/$name.err"
	echo "$j" >"$jobs/$name.id"
}

# expect_plans NAME COUNT: COUNT tasks, each with a readable-path plan.
expect_plans() {
	local name=$1 want=$2 n
	n=$(grep -c '^TASK .* plan=/.*/plan\.json$' "$jobs/$name.out" || true)
	[ "$n" = "$want" ] || fail "$name: $n of $want tasks got ISLE_PLAN"
	if grep -q 'isle: shim off' "$jobs/$name.err"; then
		fail "$name: the shim was turned off: $(grep 'isle: shim off' "$jobs/$name.err")"
	fi
	echo "ok: $name: $want tasks with the plan"
}

run dp-one-per-node "" -N2 --gpus-per-node=1 --ntasks-per-node=1
expect_plans dp-one-per-node 2
[ "$(grep '^TASK ' "$jobs/dp-one-per-node.out" | awk '{ print $3 }' | sort -u | wc -l)" = 2 ] ||
	fail "dp-one-per-node: the two tasks do not run on two nodes"

run one-gpu "" --gpus=1 -n1
expect_plans one-gpu 1

run one-node-cyclic "-m cyclic" -N1 --gpus-per-node=2 --ntasks-per-node=2
grep -q 'dist=cyclic' "$jobs/one-node-cyclic.out" || fail "one-node-cyclic: the step did not run cyclic"
expect_plans one-node-cyclic 2

run two-nodes-cyclic "-m cyclic" -N2 --gpus-per-node=2 --ntasks-per-node=2 --isle-tp=2
grep -q 'dist=cyclic' "$jobs/two-nodes-cyclic.out" || fail "two-nodes-cyclic: the step did not run cyclic"
[ "$(grep -c '^TASK .* plan=unset$' "$jobs/two-nodes-cyclic.out")" = 4 ] ||
	fail "two-nodes-cyclic: a task got the plan although its rank is elsewhere"
j=$(cat "$jobs/two-nodes-cyclic.id")
[ "$(grep -c "isle: shim off for job $j on .*--distribution=cyclic.*-m block" "$jobs/two-nodes-cyclic.err")" = 1 ] ||
	fail "two-nodes-cyclic: want one line naming the distribution and -m block"
echo "ok: two-nodes-cyclic: no plan, one line says what to change"

isle_cluster_stop
echo "PASS"
