#!/bin/bash
# bench/soak/ctld_rss.sh - slurmctld's memory with topology/isle over many
# jobs and reconfigures (a benchmark: it measures, it asserts nothing).
#
#   bench/soak/ctld_rss.sh [--nodes N] [--jobs J] [--reconfigures R]
#                          [--topology isle|tree] [--out FILE]
#                                                (make bench-soak)
#
# A test cluster (tests/cluster/cluster.sh) of N nodes (default 8, 4 GPUs
# each, GB200-like cluster file) runs topology/isle (or, as the baseline,
# topology/tree on the same switches). Two phases:
#  1. jobs: J (default 2000) small jobs in arrays of 100 tasks (`--wrap true`;
#     1-node 1-GPU and 2-node 2-GPU-per-node arrays alternate), at most 4
#     arrays queued at a time; VmRSS of slurmctld (from /proc/PID/status, PID
#     from its pid file) every 100 completed jobs;
#  2. reconfigures: R (default 50) `scontrol reconfigure` cycles, each
#     waiting for the controller to answer `scontrol show topology` again,
#     with a sample after each. 24.11 and later re-exec slurmctld on
#     reconfigure, so the PID changes and each sample is the new process
#     after it reloaded its state (the isle records of phase 1 included).
# MinJobAge=10 (the harness's 300 would keep every finished job, and its
# memory, for the whole run): finished jobs leave the controller, so growth
# over phase 1 is what isle or Slurm keeps per job.
#
# Writes FILE (default $B/bench/ctld_rss.json): the samples, start and end
# RSS of each phase and least-squares slopes (MB per 1000 jobs over phase 1,
# MB per reconfigure over phase 2). Exit 0, 77 where no cluster can run
# (not root, Slurm or the plugins not built), 1 on failure.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
B=${B:-$here/build}
# Sourced before the options are read: it re-executes this script with them
# in a private mount namespace.
# shellcheck source=tests/cluster/cluster.sh
source "$here/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$here/slurm_plugin/testlib.sh"
nodes=8 jobs=2000 reconf=50 topo=isle json=$B/bench/ctld_rss.json
while [ $# -gt 0 ]; do
	case $1 in
	--nodes) nodes=$2; shift 2 ;;
	--jobs) jobs=$2; shift 2 ;;
	--reconfigures) reconf=$2; shift 2 ;;
	--topology) topo=$2; shift 2 ;;
	--out) json=$2; shift 2 ;;
	*) echo "ctld_rss: unknown option $1" >&2; exit 2 ;;
	esac
done

ISLE_PT_PLUGINS=$B/slurm
isle_pt_setup 40
command -v jq >/dev/null || { echo "SKIP: no jq"; exit 77; }
# shellcheck source=bench/stamp.sh
source "$here/bench/stamp.sh"
isle_bench_begin

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-soak.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
isle_pt_gb200 "$work" "$nodes" 4 8
case $topo in
isle) topo_args=(--topology isle --etc-file "$work/isle.json") ;;
tree) topo_args=(--topology tree --topo-conf "$work/topology-tree.conf") ;;
*) echo "ctld_rss: --topology isle or tree" >&2; exit 2 ;;
esac
isle_cluster_start --nodes "$nodes" --gpus 4 "${topo_args[@]}" \
	--plugin-dir "$B/slurm" --slurm-extra "MinJobAge=10" --timeout 180 ||
	fail "cluster did not start"
log=$ISLE_CLUSTER_DIR/log/slurmctld.log
pidfile=$ISLE_CLUSTER_DIR/run/slurmctld.pid
[ "$topo" != isle ] || grep -q "isle: loaded .*isle.json: $nodes nodes" "$log" ||
	fail "cluster file not loaded"
t0=$SECONDS
samples=$work/samples # phase t_s jobs_done reconfigures pid rss_kb

# VmRSS (kB) of the slurmctld in the pid file; empty while it restarts.
rss() {
	local pid
	pid=$(cat "$pidfile" 2>/dev/null) || return 1
	awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null | grep . || return 1
	echo "$pid" >"$work/pid"
}
sample() { # PHASE JOBS_DONE RECONFIGURES
	local kb
	wait_for 60 rss >/dev/null || fail "no slurmctld to sample"
	kb=$(rss)
	echo "$1 $((SECONDS - t0)) $2 $3 $(cat "$work/pid") $kb" | tee -a "$samples"
}
new_pid() { [ "$(cat "$pidfile" 2>/dev/null)" != "$1" ]; }
topo_ok() {
	if [ "$topo" = isle ]; then
		scontrol show topology 2>/dev/null | grep -q Status=ok
	else
		scontrol show topology >/dev/null 2>&1
	fi
}
# Jobs this run submitted that are still in the queue.
queued() { squeue -h -r -o %i 2>/dev/null | wc -l; }

# --- 1. jobs ---------------------------------------------------------------
per=100 submitted=0 arrays=0 next=$per
sample jobs 0 0
while [ $submitted -lt "$jobs" ] || [ "$(queued)" -gt 0 ]; do
	if [ $submitted -lt "$jobs" ] && [ "$(queued)" -le $((3 * per)) ]; then
		n=$((jobs - submitted < per ? jobs - submitted : per))
		if [ $((arrays % 2)) = 0 ]; then
			spec=(-N1 --gpus-per-node=1)
		else
			spec=(-N2 --gpus-per-node=2)
		fi
		# A loaded controller may time out one submission: retry.
		for try in 1 2 3 4 5 6; do
			sbatch --parsable --array=0-$((n - 1)) "${spec[@]}" -t 1 \
				-o /dev/null --wrap true >/dev/null && break
			[ "$try" -lt 6 ] || fail "sbatch"
			sleep 5
		done
		submitted=$((submitted + n)) arrays=$((arrays + 1))
	fi
	done_n=$((submitted - $(queued)))
	while [ $done_n -ge $next ] && [ $next -le "$jobs" ]; do
		sample jobs $next 0
		next=$((next + per))
	done
	sleep 1
	[ $((SECONDS - t0)) -lt 3600 ] || fail "jobs not done after an hour"
done
[ $((next - per)) -ge "$jobs" ] || sample jobs "$jobs" 0
bad=$(grep -c "error: .*isle" "$log" || true)

# --- 2. reconfigures -------------------------------------------------------
same_pid=
for ((r = 1; r <= reconf; r++)); do
	old=$(cat "$pidfile")
	scontrol reconfigure >/dev/null || fail "scontrol reconfigure $r"
	# The re-executed controller (a new PID) must answer with the cluster
	# file loaded; a release that reconfigures in place keeps its PID.
	[ -n "$same_pid" ] || wait_for 30 new_pid "$old" || same_pid=1
	wait_for 120 topo_ok ||
		fail "topology not back after reconfigure $r"
	sample reconf "$jobs" "$r"
done

# --- results ---------------------------------------------------------------
ver=$("$ISLE_SLURM_PREFIX/sbin/slurmctld" -V | awk '{print $2}')
mkdir -p "$(dirname "$json")"
awk -v slurm="$ver" -v plugin="$topo" -v nodes="$nodes" -v jobs="$jobs" -v reconf="$reconf" \
	-v errs="$bad" '
	function slope(p, xcol,   i, n, sx, sy, sxx, sxy) {
		n = cnt[p]; sx = sy = sxx = sxy = 0
		for (i = 1; i <= n; i++) {
			sx += X[p, i, xcol]; sy += Y[p, i]
			sxx += X[p, i, xcol] ^ 2; sxy += X[p, i, xcol] * Y[p, i]
		}
		if (n < 2 || n * sxx - sx * sx == 0) return 0
		return (n * sxy - sx * sy) / (n * sxx - sx * sx)
	}
	{
		p = $1; i = ++cnt[p]
		X[p, i, 1] = $3 / 1000; X[p, i, 2] = $4; Y[p, i] = $6 / 1024
		s = sprintf("{\"phase\": \"%s\", \"t_s\": %d, \"jobs_done\": %d, \"reconfigures\": %d, \"pid\": %d, \"rss_mb\": %.2f}", p, $2, $3, $4, $5, $6 / 1024)
		list = list (NR > 1 ? ",\n    " : "") s
	}
	END {
		printf "{\n  \"slurm\": \"%s\", \"plugin\": \"%s\", \"nodes\": %d, \"jobs\": %d, \"reconfigures\": %d,\n", slurm, plugin, nodes, jobs, reconf
		printf "  \"ctld_isle_error_lines\": %d,\n", errs
		printf "  \"jobs_rss_mb_start\": %.2f, \"jobs_rss_mb_end\": %.2f, \"jobs_slope_mb_per_1000_jobs\": %.3f,\n", Y["jobs", 1], Y["jobs", cnt["jobs"]], slope("jobs", 1)
		printf "  \"reconf_rss_mb_start\": %.2f, \"reconf_rss_mb_end\": %.2f, \"reconf_slope_mb_per_reconfigure\": %.4f,\n", Y["reconf", 1], Y["reconf", cnt["reconf"]], slope("reconf", 2)
		printf "  \"samples\": [\n    %s\n  ]\n}\n", list
	}' "$samples" >"$json.tmp" || fail "summary"
jq . "$json.tmp" >/dev/null || fail "summary is not JSON"
mv -f "$json.tmp" "$json"
isle_bench_stamp "$json"
jq -c 'del(.samples)' "$json"
echo "ctld_rss: $json"
