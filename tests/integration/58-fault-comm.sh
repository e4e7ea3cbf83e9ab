#!/bin/bash
# 58-fault-comm: the MPI shim when a peer dies or its whole node freezes in
# the middle of a run of allreduces. 2 test nodes, `srun --mpi=pmix -N2 -n4`
# (2 ranks per node) running build/tests/comm_mpi_check train (a loop of
# gradient MPI_Allreduce only, which the shim handles: a two-level plan, one
# island per node, ISLE_COMM_ALGO=hier) with LD_PRELOAD=libisle_preload.so
# and ISLE_COMM_TIMEOUT_S=15:
#  1. rank 3 (second node) gets SIGKILL (srun --kill-on-bad-exit=0: Slurm
#     does not end the step for it). srun names the killed task and the
#     other ranks end with an error: the shim's "allreduce timed out after
#     15 s waiting for rank 3" naming the peer, or, as it usually goes here,
#     Open MPI's own report of the broken TCP connection (it then aborts the
#     step through PMIx) before the shim's deadline; never a hang (guard
#     150 s).
#  2. the second node is frozen: SIGSTOP to its slurmd, its slurmstepds and
#     its ranks. The first node's ranks report the shim's timeout naming a
#     rank on the frozen node, and end while it is still stopped: Open MPI's
#     abort blocks on the frozen node, so the shim's watchdog ends them one
#     more timeout later ("MPI_Abort did not end the process"). Then
#     SIGCONT, and the step ends.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
isle_cluster_require
# shellcheck source=comm_shim/testlib.sh
source "$repo/comm_shim/testlib.sh"
isle_comm_srun_require

T=""
stopped=()
srun_pid=""
cleanup() {
	local p
	for p in "${stopped[@]}"; do kill -CONT "$p" 2>/dev/null; done
	[ -n "$srun_pid" ] && kill -KILL "$srun_pid" 2>/dev/null
	isle_cluster_stop
}
die() {
	echo "FAIL: $*"
	for f in "$T"/*.out; do [ -e "$f" ] && { echo "--- $f"; tail -15 "$f"; }; done
	isle_cluster_logs 20
	exit 1
}

isle_cluster_start --nodes 2 --gpus 4 || die "cluster did not start"
trap cleanup EXIT
read -r n1 n2 <<<"$ISLE_CLUSTER_NODE_NAMES"
d=$ISLE_CLUSTER_DIR
T=$d/tmp/comm58
mkdir -p "$T"

export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_mpi_yield_when_idle=1
export ISLE_COMM_TIMEOUT_S=15 ISLE_COMM_VERBOSE=1 ISLE_COMM_ALGO=hier
unset ISLE_COMM_CODEC ISLE_COMM_DISABLE LD_PRELOAD
OPTS="-N2 -n4 --ntasks-per-node=2 -w $n1,$n2"

# The plan: ranks where srun puts them (block: 0,1 on n1, 2,3 on n2), one
# island per node.
cat >"$T/plan.json" <<PLAN
{"isle_plan": 1, "job_id": "t58", "ranks": [
 {"rank": 0, "node": "$n1", "gpu": 0, "island": "nvl-$n1", "leaf": "l0"},
 {"rank": 1, "node": "$n1", "gpu": 1, "island": "nvl-$n1", "leaf": "l0"},
 {"rank": 2, "node": "$n2", "gpu": 0, "island": "nvl-$n2", "leaf": "l0"},
 {"rank": 3, "node": "$n2", "gpu": 1, "island": "nvl-$n2", "leaf": "l0"}],
 "levels": [{"name": "nvlink", "scope": "island", "bw_gbps": 100, "lat_us": 1, "codec": "none"},
  {"name": "net", "scope": "job", "bw_gbps": 1, "lat_us": 20, "codec": "none"}]}
PLAN

# launch NAME KILL_ON_BAD_EXIT: starts the training loop in the background
# (srun_pid); each task leaves "PID NODE" in $T/NAME.pid.RANK and execs the
# checker (same PID). Returns once every rank runs the shim's allreduce loop
# (its ISLE_COMM_VERBOSE line) for a few seconds.
launch() {
	local name=$1 kobe=$2 r
	rm -f "$T/$name".pid.*
	ISLE_PLAN=$T/plan.json timeout 300 srun --mpi=pmix $OPTS --gpus-per-node=2 -m block \
		--kill-on-bad-exit="$kobe" \
		bash -c 'echo "$$ $SLURMD_NODENAME" >"$0.pid.$SLURM_PROCID"
			LD_PRELOAD=$1 exec "$2" train --steps 100000000 --dim 64 --classes 8 --samples 50' \
		"$T/$name" "$SHIM" "$CHECK" >"$T/$name.out" 2>&1 &
	srun_pid=$!
	for ((i = 0; i < 240; i++)); do
		grep -q '^isle_comm: 4 ranks, plan .*nvlink\[island' "$T/$name.out" &&
			[ "$(ls "$T/$name".pid.* 2>/dev/null | wc -l)" = 4 ] && break
		kill -0 "$srun_pid" 2>/dev/null || break
		sleep 0.5
	done
	grep -q '^isle_comm: 4 ranks, plan .*nvlink\[island' "$T/$name.out" ||
		die "$name: the shim did not engage on 4 ranks"
	for r in 0 1 2 3; do
		[ -s "$T/$name.pid.$r" ] || die "$name: rank $r left no pid"
	done
	sleep 3
	kill -0 "$srun_pid" 2>/dev/null || die "$name: the step ended before the fault"
}
rank_pid() { awk '{ print $1 }' "$T/$1.pid.$2"; }
# wait_gone SECONDS PID...: until none of the PIDs runs (hang guard).
wait_gone() {
	local t=$1 p alive
	shift
	for ((i = 0; i < t * 2; i++)); do
		alive=0
		for p in "$@"; do
			[ -e "/proc/$p" ] && [ "$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null)" != Z ] && alive=1
		done
		[ $alive = 0 ] && return 0
		sleep 0.5
	done
	return 1
}

# --- 1. a rank killed ----------------------------------------------------------
launch kill 0
victim=$(rank_pid kill 3)
others=("$(rank_pid kill 0)" "$(rank_pid kill 1)" "$(rank_pid kill 2)")
echo "     SIGKILL to rank 3 (pid $victim on $n2) mid-run"
t0=$SECONDS
kill -KILL "$victim"
wait_gone 150 "${others[@]}" || die "kill: ranks 0-2 still run 150 s after rank 3 died"
el=$((SECONDS - t0))
wait "$srun_pid"
rc=$?
srun_pid=""
[ $rc -ne 0 ] && [ $rc -ne 124 ] || die "kill: srun rc $rc"
grep -q 'task 3: Killed' "$T/kill.out" || die "kill: srun does not name the killed rank"
msg=$(grep -m1 -E "isle_comm: rank [0-2] .*allreduce timed out after 15 s waiting for rank 3 \($n2\)|isle_comm: rank [0-2] .*(transport error|peer dead)|unexpectedly disconnected|Your Open MPI job may now hang or fail|MPI_ABORT|[Pp]eer hangup" "$T/kill.out" || true)
[ -n "$msg" ] || die "kill: no error from the other ranks (shim or MPI)"
echo "ok   rank 3 killed: ranks 0-2 ended after ${el} s, srun rc $rc: $msg"

# --- 2. a node frozen ----------------------------------------------------------
# n2's slurmd first moves to a session of its own: a stopped process in this
# script's process group would get SIGHUP and SIGCONT from the kernel as
# soon as the group is orphaned (a caller run under setsid or nohup, or a
# parent shell that ends), taking the test down and the node out of its
# freeze.
slurmd2=$(awk -v n="$n2" '$1 == "slurmd" && $2 == n { print $3 }' "$d/pids" | tail -1)
[ -n "$slurmd2" ] || die "no slurmd pid for $n2"
kill -TERM "$slurmd2"
wait_gone 60 "$slurmd2" || die "slurmd of $n2 did not stop"
sed -i "/^slurmd $n2 /d" "$d/pids"
isle__spawn "$d" slurmd "$n2" setsid "$ISLE_SLURM_PREFIX/sbin/slurmd" -D -N "$n2" -f "$d/etc/slurm.conf"
slurmd2=$(awk -v n="$n2" '$1 == "slurmd" && $2 == n { print $3 }' "$d/pids" | tail -1)
for ((i = 0; i < 240; i++)); do
	[ "$(sinfo -h -n "$n2" -o %T 2>/dev/null)" = idle ] && break
	sleep 0.5
done
[ "$(sinfo -h -n "$n2" -o %T)" = idle ] || die "$n2 is not idle after its slurmd restart"
[ "$(ps -o sid= -p "$slurmd2" | tr -d ' ')" = "$slurmd2" ] || die "slurmd of $n2 is not in a session of its own"
launch freeze 1
frozen=("$(rank_pid freeze 2)" "$(rank_pid freeze 3)")
live=("$(rank_pid freeze 0)" "$(rank_pid freeze 1)")
# n2's slurmstepds hold its spool dir or log open.
for p in $(find /proc/[0-9]*/fd -maxdepth 1 \( -lname "$d/spool/$n2/*" -o -lname "$d/log/slurmd-$n2.log" \) 2>/dev/null | cut -d/ -f3 | sort -u); do
	[ "$(cat "/proc/$p/comm" 2>/dev/null)" = slurmstepd ] && frozen+=("$p")
done
frozen+=("$slurmd2")
echo "     SIGSTOP to $n2: $(for p in "${frozen[@]}"; do printf '%s(%s) ' "$p" "$(cat /proc/$p/comm)"; done)"
t0=$SECONDS
for p in "${frozen[@]}"; do
	kill -STOP "$p" && stopped+=("$p")
done
wait_gone 150 "${live[@]}" || die "freeze: ranks 0-1 still run 150 s after $n2 froze"
el=$((SECONDS - t0))
for p in "${frozen[@]}"; do
	[ "$(awk '{ print $3 }' "/proc/$p/stat" 2>/dev/null)" = T ] ||
		die "freeze: pid $p of $n2 is not stopped while ranks 0-1 ended"
done
msg=$(grep -m1 -E "isle_comm: rank [01] \($n1\): allreduce timed out after 15 s waiting for (rank [23] \($n2\)|the other ranks)" "$T/freeze.out" || true)
[ -n "$msg" ] || die "freeze: no shim timeout naming a rank on $n2"
echo "ok   $n2 frozen: ranks 0-1 ended after ${el} s: $msg"
grep -m1 'MPI_Abort did not end the process' "$T/freeze.out" | sed 's/^/     /' || true
for p in "${frozen[@]}"; do kill -CONT "$p" 2>/dev/null; done
T=""
stopped=()
wait_gone 150 "$srun_pid" || die "freeze: srun did not end within 150 s of SIGCONT"
wait "$srun_pid"
rc=$?
srun_pid=""
[ $rc -ne 0 ] && [ $rc -ne 124 ] || die "freeze: srun rc $rc"
wait_for_idle() {
	for ((i = 0; i < 240; i++)); do
		[ -z "$(squeue -h)" ] && return 0
		sleep 0.5
	done
	return 1
}
wait_for_idle || die "jobs left after SIGCONT: $(squeue -h)"
[ "$(sinfo -h -n "$n2" -o %T)" != down ] || die "$n2 is down after SIGCONT"
echo "ok   SIGCONT: the step ended (rc $rc), $n2 is $(sinfo -h -n "$n2" -o %T)"
echo "58-fault-comm: all passed"
