#!/bin/bash
# bench/load/run.sh [OUT.json]: the load benchmark (`make bench-load`). The
# same 2,000 short jobs of mixed sizes on a 32-node test cluster (8 GPUs per
# node, all-to-all NVLink inside a node, leaf switches of 8 nodes under one
# spine), once under topology/isle and once under topology/tree (a
# topology.conf with the same switches), one fresh cluster each.
#
# Jobs: `sbatch -N k --gpus-per-node=g --wrap "sleep s"`, k in 1..4 (1 most
# often), g in 1,2,4,8, s in 0..2, from a fixed seed: both plugins get the
# same list. They are all queued while the partition is down, then it is set
# up, so the scheduler sees the whole queue at once.
#
# Per plugin: jobs, completed (JobState=COMPLETED in jobcomp/filetxt),
# started_per_min (jobs over the span from the first start to the last
# start, plus one second: StartTime has whole seconds), the main
# scheduler's cycle mean and max (sdiag, us), isle's eval time per call
# (p50, p99, us; the IsleEval line of `scontrol show topology`, null for
# tree), and slurmctld's RSS (MB) once the jobs are queued and once they
# are all done.
#
# Writes OUT.json (default build/bench/load.json):
#   {"slurm": "VER", "results": [{"plugin", "jobs", "completed",
#     "started_per_min", "sched_cycle_us_mean", "sched_cycle_us_max",
#     "eval_us_p50", "eval_us_p99", "ctld_rss_mb_start", "ctld_rss_mb_end"}]}
# Environment: ISLE_LOAD_JOBS (2000), ISLE_LOAD_PLUGINS ("isle tree"),
# ISLE_LOAD_SEED (16), ISLE_LOAD_TIMEOUT (hang guard per plugin, 5400 s).
# A benchmark, not a test: run it nice'd on a quiet host.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$repo/build/bench/load.json}
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_cluster_require
NJOBS=${ISLE_LOAD_JOBS:-2000}
PLUGINS=${ISLE_LOAD_PLUGINS:-isle tree}
SEED=${ISLE_LOAD_SEED:-16}
GUARD=${ISLE_LOAD_TIMEOUT:-5400}
NODES=32
[[ " $PLUGINS " == *" isle "* ]] && isle_pt_require_plugins

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-bench-load.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$(dirname "$out")"
# shellcheck source=bench/stamp.sh
source "$repo/bench/stamp.sh"
isle_bench_begin

# --- the cluster: isle.json, topology.conf and gres.conf agree ------------
{
	printf '{\n  "version": 1,\n  "name": "load-test",\n  "nodes": [\n'
	nv=""
	for ((a = 0; a < 8; a++)); do
		for ((b = a + 1; b < 8; b++)); do nv+="${nv:+,}[$a,$b,18]"; done
	done
	for ((i = 1; i <= NODES; i++)); do
		printf '    {"name": "n%02d", "gpus": 8, "nvlinks": [%s]}%s\n' "$i" "$nv" \
			"$([ $i -lt $NODES ] && echo , || true)"
	done
	printf '  ],\n  "switches": [\n'
	for ((l = 1; l <= NODES / 8; l++)); do
		printf '    {"name": "leaf%d", "level": "leaf", "nodes": ["n[%02d-%02d]"]},\n' \
			"$l" $(((l - 1) * 8 + 1)) $((l * 8))
	done
	printf '    {"name": "spine1", "level": "spine", "switches": ["leaf[1-%d]"]}\n  ]\n}\n' $((NODES / 8))
} >"$work/isle.json"
{
	for ((l = 1; l <= NODES / 8; l++)); do
		printf 'SwitchName=leaf%d Nodes=n[%02d-%02d]\n' "$l" $(((l - 1) * 8 + 1)) $((l * 8))
	done
	printf 'SwitchName=spine1 Switches=leaf[1-%d]\n' $((NODES / 8))
} >"$work/topology.conf"
{
	echo "AutoDetect=off"
	for ((g = 0; g < 8; g++)); do
		echo "NodeName=@NODES@ Name=gpu File=@DEVDIR@/nvidia$g Cores=$((g / 4 * 8))-$((g / 4 * 8 + 7))"
	done
} >"$work/gres.conf"

# --- the job list: "k g s" per line, the same for every plugin -------------
awk -v n="$NJOBS" -v seed="$SEED" 'BEGIN {
	srand(seed)
	split("1 2 4 8", G, " ")
	for (i = 0; i < n; i++) {
		r = rand()
		k = r < 0.5 ? 1 : r < 0.75 ? 2 : r < 0.85 ? 3 : 4
		g = G[1 + int(rand() * 4)]
		print k, g, int(rand() * 3)
	}
}' >"$work/jobs"

ver=$("$ISLE_SLURM_PREFIX/sbin/slurmctld" -V | awk '{ print $2 }')
ctld_rss_mb() {
	local pid
	pid=$(awk '$1 == "slurmctld" { print $3 }' "$ISLE_CLUSTER_DIR/pids" | tail -1)
	awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status"
}
# sdiag's main scheduler section: "mean max" in us.
sched_cycles() {
	sdiag | awk '/^Main schedule statistics/ { m = 1; next }
		/^[^ \t]/ && m { m = 0 }
		m && /Max cycle:/ { max = $3 }
		m && /Mean cycle:/ { mean = $3 }
		END { print (mean == "" ? "null" : mean), (max == "" ? "null" : max) }'
}

results=()
for plugin in $PLUGINS; do
	args=(--nodes "$NODES" --gpus 8 --cpus 16 --topology "$plugin"
		--gres-conf "$work/gres.conf" --timeout 300
		--slurm-extra "JobCompType=jobcomp/filetxt
JobCompLoc=@DIR@/log/jobcomp.txt")
	case $plugin in
	isle) args+=(--plugin-dir "$repo/build/slurm" --etc-file "$work/isle.json") ;;
	tree) args+=(--topo-conf "$work/topology.conf") ;;
	esac
	echo "load: $plugin: starting $NODES nodes (Slurm $ver)" >&2
	isle_cluster_start "${args[@]}" || { echo "load: $plugin: cluster did not start" >&2; exit 1; }
	comp=$ISLE_CLUSTER_DIR/log/jobcomp.txt
	scontrol update partitionname=gpu state=down
	t0=$SECONDS
	# Four submitters at once: sbatch waits on the controller's reply.
	awk '{ printf "%d %d %d\n", $1, $2, $3 }' "$work/jobs" |
		xargs -P 4 -L 1 sh -c 'sbatch --parsable -N "$0" --gpus-per-node="$1" \
			-o /dev/null --wrap "sleep $2" >/dev/null || echo "sbatch -N $0 --gpus-per-node=$1 failed" >&2'
	queued=$(squeue -h -t PD | wc -l)
	echo "load: $plugin: $queued jobs queued in $((SECONDS - t0)) s" >&2
	rss0=$(ctld_rss_mb)
	scontrol update partitionname=gpu state=up
	t0=$SECONDS
	while :; do
		left=$(squeue -h | wc -l)
		[ "$left" -eq 0 ] && break
		if [ $((SECONDS - t0)) -ge "$GUARD" ]; then
			echo "load: $plugin: $left jobs left after $GUARD s (hang guard)" >&2
			break
		fi
		sleep 5
	done
	echo "load: $plugin: queue empty after $((SECONDS - t0)) s" >&2
	# jobcomp/filetxt writes each line as the job ends.
	for _ in $(seq 1 60); do
		[ "$(wc -l <"$comp" 2>/dev/null || echo 0)" -ge "$queued" ] && break
		sleep 1
	done
	rss1=$(ctld_rss_mb)
	read -r cmean cmax < <(sched_cycles)
	p50=null p99=null
	if [ "$plugin" = isle ]; then
		ev=$(scontrol show topology | grep '^IsleEval' || true)
		echo "load: $plugin: $ev" >&2
		p50=$(echo "$ev" | sed -n 's/.* P50Us=\([0-9]*\).*/\1/p')
		p99=$(echo "$ev" | sed -n 's/.* P99Us=\([0-9]*\).*/\1/p')
		: "${p50:=null}" "${p99:=null}"
	fi
	completed=$(grep -c 'JobState=COMPLETED' "$comp" || true)
	# Starts to the second: the span from the first start to the last.
	spm=$(sed -n 's/.* StartTime=\([^ ]*\) .*/\1/p' "$comp" |
		while read -r s; do date -d "$s" +%s; done | sort -n |
		awk '{ t[NR] = $1 } END {
			if (NR == 0) print "null"
			else printf "%.1f", NR * 60 / (t[NR] - t[1] + 1) }')
	r=$(printf '{"plugin": "%s", "jobs": %d, "completed": %d, "started_per_min": %s, "sched_cycle_us_mean": %s, "sched_cycle_us_max": %s, "eval_us_p50": %s, "eval_us_p99": %s, "ctld_rss_mb_start": %s, "ctld_rss_mb_end": %s}' \
		"$plugin" "$NJOBS" "$completed" "$spm" "$cmean" "$cmax" "$p50" "$p99" "$rss0" "$rss1")
	echo "load: $r" >&2
	results+=("$r")
	isle_cluster_stop
done

n=${#results[@]}
{
	printf '{"slurm": "%s", "results": [\n' "$ver"
	for ((i = 0; i < n; i++)); do
		sep=,
		[ "$i" -eq $((n - 1)) ] && sep=
		printf '  %s%s\n' "${results[i]}" "$sep"
	done
	printf ']}\n'
} >"$out"
isle_bench_stamp "$out"
cat "$out"
