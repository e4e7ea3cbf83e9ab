#!/bin/bash
# 53-rank-order: the plan's rank -> node map is Slurm's real task layout,
# also when NVLink islands interleave node names.
#
# 4 slurmd x 2 fake GPUs, topology/isle, islands nvlA = {n01, n03} and
# nvlB = {n02, n04}. In each case one job -N4 --gpus-per-node=2 --isle-tp=4
# runs a step printing each task's SLURM_PROCID, node and the node its plan
# gives that rank (they must agree on every task, with no "isle: shim off"
# line), then with PMIx an MPI allreduce under the shim the prolog preloads
# (exact sums, and the shim's line shows it runs on the plan). Cases:
#  ranked        node ranking on: the hostlist walks islands; TP groups in
#                islands on both releases;
#  no-node-rank  TopologyParam=IsleNoNodeRank: the hostlist is n[01-04];
#                24.11 and 25.11 keep it, 26.05 lays tasks out by
#                topology/isle's get_rank, so TP groups stay in islands;
#  no-dist-topo  (26.05) + CR_NO_DIST_TOPO_BLOCK: hostlist order again;
#  mismatch      IsleNoNodeRank with an agent given the other rank order:
#                the first task on a disagreeing node names the task, its
#                node and the plan's node; the shim falls back to plain MPI
#                on every rank, naming the rank, and sums stay exact.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
isle_cluster_require

agent=$repo/build/bin/isle-agent
spank=$repo/build/slurm/spank_isle.so
shim=$repo/build/lib/libisle_preload.so
check=$repo/build/tests/comm_mpi_check
for f in "$agent" "$spank" "$shim" "$repo/build/slurm/topology_isle.so"; do
	[ -f "$f" ] || { echo "FAIL: $f not built (make)"; exit 1; }
done

fail() {
	echo "FAIL: $*"
	isle_cluster_logs 30
	exit 1
}

work=$(mktemp -d "${ISLE_TMPDIR:-${TMPDIR:-/tmp}}/isle-53.XXXXXX")
trap 'rm -rf "$work"' EXIT
nic='"nics": [{"name": "mlx5_0", "rail": 0, "switch": "leaf0", "gbps": 400}]'
cat >"$work/isle.json" <<EOF
{"version": 1, "name": "interleaved",
 "nodes": [
  {"name": "n01", "gpus": 2, "nvlink_all": 4, $nic},
  {"name": "n02", "gpus": 2, "nvlink_all": 4, $nic},
  {"name": "n03", "gpus": 2, "nvlink_all": 4, $nic},
  {"name": "n04", "gpus": 2, "nvlink_all": 4, $nic}
 ],
 "domains": [{"name": "nvlA", "nodes": ["n01", "n03"]},
             {"name": "nvlB", "nodes": ["n02", "n04"]}],
 "switches": [{"name": "leaf0", "level": "leaf"}]}
EOF
cat >"$work/plugstack.conf" <<EOF
required $spank agent=$agent cluster=@ETC@/isle.json rundir=@DIR@/run/isle/%n shim=$shim
EOF
# The mismatch case: an agent told the other rank order than the prolog's.
cat >"$work/agent-flip.sh" <<EOF
#!/bin/bash
args=()
for a in "\$@"; do
	case \$a in
	topology) a=hostlist ;;
	hostlist) a=topology ;;
	esac
	args+=("\$a")
done
exec $agent "\${args[@]}"
EOF
chmod 755 "$work" "$work/agent-flip.sh"
sed "s|agent=$agent|agent=$work/agent-flip.sh|" "$work/plugstack.conf" >"$work/plugstack-flip.conf"

ver=$("$ISLE_SLURM_PREFIX/sbin/slurmctld" -V | awk '{print $2}')
pmix=0
[ -e "$ISLE_SLURM_PREFIX/lib/slurm/mpi_pmix.so" ] && [ -x "$check" ] && pmix=1
island() { case $1 in n01 | n03) echo nvlA ;; *) echo nvlB ;; esac; }

# run_case NAME ORDER [--slurm-extra LINE]...: a cluster, the job, the
# checks. ORDER is where Slurm should put the tasks: "hostlist" (the job's
# SLURM_JOB_NODELIST) or "island" (each TP group of 4 consecutive ranks in
# one island), or "mismatch": the plan is written in the wrong order, and
# the task and the shim must say so and fall back to plain MPI together.
run_case() {
	local name=$1 want=$2 j state real plan order hosts isl stack=$work/plugstack.conf
	shift 2
	[ "$want" = mismatch ] && stack=$work/plugstack-flip.conf
	echo "--- $name (Slurm $ver, tasks in $want order)"
	isle_cluster_start --nodes 4 --gpus 2 --topology isle "$@" \
		--plugstack "$stack" --etc-file "$work/isle.json" ||
		fail "$name: cluster did not start"
	jobs=$ISLE_CLUSTER_DIR/jobs
	# Each task: its rank, its node, and the node its own node's plan
	# gives that rank. Then (with PMIx) an exact allreduce under the
	# shim. Open MPI 4.1's TCP BTL now and then crashes inside MPI_Init
	# on loopback (see test 41): that launch is made again.
	cat >"$jobs/task.sh" <<'EOF'
#!/bin/bash
node=$(sed -n "s/.*\"rank\": $SLURM_PROCID, \"node\": \"\([^\"]*\)\".*/\1/p" "${ISLE_PLAN:-/nonexistent}" 2>/dev/null)
echo "TASK $SLURM_PROCID $SLURMD_NODENAME ${node:-none}"
EOF
	cat >"$jobs/rank.sh" <<EOF
#!/bin/bash
echo "NODELIST \$SLURM_JOB_NODELIST"
srun -m block $jobs/task.sh
[ $pmix = 1 ] || exit 0
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_mpi_yield_when_idle=1 ISLE_COMM_TIMEOUT_S=30 ISLE_COMM_VERBOSE=1
for try in 1 2 3; do
	timeout 120 srun --mpi=pmix -m block --kill-on-bad-exit=1 $check exact --sizes 1,7,4099 >$jobs/mpi.out 2>&1
	grep -Eq '^(isle_comm|exact)' $jobs/mpi.out && break
	echo "MPI launch \$try failed before the shim ran: launch again"
done
exit 0
EOF
	chmod +x "$jobs/task.sh" "$jobs/rank.sh"
	j=$(sbatch --parsable --chdir="$jobs" -N4 --gpus-per-node=2 --ntasks-per-node=2 \
		--isle-tp=4 -o "$jobs/rank.out" -e "$jobs/rank.err" "$jobs/rank.sh") ||
		fail "$name: sbatch failed"
	state=$(isle_wait_job "$j" 180) || { cat "$jobs/rank.out" "$jobs/rank.err"; fail "$name: job $j ended $state"; }
	sed 's/^/  /' "$jobs/rank.out" "$jobs/rank.err"

	real=$(awk '$1 == "TASK" { print $2, $3 }' "$jobs/rank.out" | sort -n)
	plan=$(awk '$1 == "TASK" { print $2, $4 }' "$jobs/rank.out" | sort -n)
	[ "$(echo "$real" | wc -l)" = 8 ] || fail "$name: want 8 tasks, got: $real"
	if [ "$want" = mismatch ]; then
		[ "$real" != "$plan" ] || fail "$name: the flipped plan matches the layout"
		grep -Eq "^isle: shim off for job $j on n0[1-4]: Slurm started task [0-9] on (n0[1-4]), the plan puts rank [0-9] on n0[1-4]: the step's task layout is not the plan's rank order" "$jobs/rank.err" ||
			fail "$name: no line naming the task, its node and the plan's node"
		echo "ok: $name: $(grep -m1 'isle: shim off' "$jobs/rank.err")"
		if [ $pmix = 1 ]; then
			grep -q '^exact: PASS' "$jobs/mpi.out" || { tail -20 "$jobs/mpi.out"; fail "$name: allreduce did not pass"; }
			grep -Eq "^isle_comm: rank [0-9] does not run on the node .*plan\.json gives it .*: plain MPI on every rank" "$jobs/mpi.out" ||
				fail "$name: the shim did not name the layout: $(grep 'isle_comm' "$jobs/mpi.out" | head -3)"
			echo "ok: $name: exact sums in plain MPI: $(grep -m1 '^isle_comm: rank' "$jobs/mpi.out")"
		fi
		isle_cluster_stop
		return 0
	fi
	grep -q 'isle: shim off' "$jobs/rank.err" &&
		fail "$name: the shim was turned off: $(grep 'isle: shim off' "$jobs/rank.err")"
	[ "$real" = "$plan" ] || fail "$name: the plan's rank -> node map
$plan
is not Slurm's task layout
$real"
	echo "ok: $name: every rank runs on the node its plan names"

	order=$(echo "$real" | awk '{ printf "%s%s", (NR > 1 ? " " : ""), $2 }')
	hosts=$(scontrol show hostnames "$(awk '$1 == "NODELIST" { print $2 }' "$jobs/rank.out")" |
		awk '{ printf "%s%s %s", (NR > 1 ? " " : ""), $1, $1 }')
	if [ "$want" = hostlist ]; then
		[ "$order" = "$hosts" ] ||
			fail "$name: tasks ($order) not in hostlist order ($hosts)"
		echo "ok: $name: tasks in hostlist order: $order"
	else
		for g in 0 1; do
			isl=$(echo "$real" | awk -v g=$g 'int($1 / 4) == g { print $2 }' |
				while read -r n; do island "$n"; done | sort -u)
			[ "$(echo "$isl" | wc -l)" = 1 ] ||
				fail "$name: TP group $g (ranks $((4 * g))..$((4 * g + 3))) spans islands: $(echo "$isl" | xargs) (order $order)"
		done
		echo "ok: $name: each TP group's ranks are consecutive in one island: $order (hostlist $hosts)"
	fi

	if [ $pmix = 1 ]; then
		grep -q '^exact: PASS' "$jobs/mpi.out" || { tail -20 "$jobs/mpi.out"; fail "$name: allreduce under the shim did not pass"; }
		grep -Eq '^isle_comm: 8 ranks, plan .*/plan\.json.*island groups [0-9]+\.\.[0-9]+,' "$jobs/mpi.out" ||
			fail "$name: no isle_comm line on the plan: $(grep 'isle_comm' "$jobs/mpi.out" | head -3)"
		echo "ok: $name: exact sums, shim on the plan: $(grep -m1 '^isle_comm: 8 ranks' "$jobs/mpi.out")"
	else
		echo "note: no PMIx or comm_mpi_check: allreduce not run"
	fi
	isle_cluster_stop
}

# topology/isle's node ranking orders the node table, so the hostlist
# itself walks islands (n[01,03,02,04]): both releases agree with the plan.
run_case ranked island
# Without it the hostlist is n[01-04]: 24.11 and 25.11 (no get_rank) keep
# that order, 26.05 lays tasks out by get_rank (islands) and the prolog
# says --rank-order topology.
run_case mismatch mismatch --slurm-extra "TopologyParam=IsleNoNodeRank"
case $ver in
24.11.* | 25.11.*) run_case no-node-rank hostlist --slurm-extra "TopologyParam=IsleNoNodeRank" ;;
*)
	run_case no-node-rank island --slurm-extra "TopologyParam=IsleNoNodeRank"
	# CR_NO_DIST_TOPO_BLOCK: cons_tres asks for no ranks, hostlist order.
	run_case no-dist-topo hostlist --slurm-extra "TopologyParam=IsleNoNodeRank" \
		--slurm-extra "SelectTypeParameters=CR_Core,CR_NO_DIST_TOPO_BLOCK"
	;;
esac
echo "PASS"
