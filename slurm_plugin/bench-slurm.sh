#!/bin/bash
# slurm_plugin/bench-slurm.sh OUT.json: the same job sequence under
# topology/tree, topology/block and topology/isle (and topology/ring where
# the Slurm release has it: 26.05) on the same 16-node GB200-like test
# cluster (4 GPUs per node, NVLink domains of 4 nodes, leaf switches of 8
# nodes), run by `make bench-slurm` on the release make selected
# (SLURM=24.11|25.11|26.05; the harness takes ISLE_SLURM_PREFIX).
#
# Sequence: 1-node jobs hold n01 (1st node of nvl1) and n08 (4th node of
# nvl2), then six 2-node --isle-tp=8 jobs, each submitted once the previous
# one runs. Each TP=8 job is one TP group of 8 GPUs; it is split when its two
# nodes are in different NVLink domains.
#
# topology/ring gets one ring per leaf switch, its nodes in order
# (RingName=leaf1 Nodes=n[01-08], ...): ring places a job on consecutive
# nodes of one ring, the ring counterpart of tree's leaf switches. It knows
# nothing of the NVLink domains, as tree does not.
#
# ISLE_BENCH_PLUGINS="tree block" runs only those. Without isle in the list,
# isle's plugins are not needed (no plugstack, no --isle-tp: Slurm's own
# plugins ignore it), e.g. to compare Slurm's plugins on a release isle's
# plugins are not built for yet.
#
# Writes {"slurm":"VERSION","commit":"GIT DESCRIBE","results":[{"plugin":"tree|block|isle|ring","jobs":N,
#          "tp_groups":M,"tp_groups_split":K,"leafs_spanned_mean":X}]}
set -euo pipefail

out=${1:?usage: bench-slurm.sh OUT.json}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_cluster_require
plugins=${ISLE_BENCH_PLUGINS:-tree block isle}
with_isle=
[[ " $plugins " == *" isle "* ]] && with_isle=1
[ -z "$with_isle" ] || isle_pt_require_plugins
# shellcheck source=bench/stamp.sh
source "$repo/bench/stamp.sh"
isle_bench_begin

NJOBS=${ISLE_BENCH_JOBS:-6}
work=$(mktemp -d "${TMPDIR:-/tmp}/isle-bench-slurm.XXXXXX")
trap 'rm -rf "$work"' EXIT
isle_pt_gb200 "$work" 16 4 8
isle_pt_plugstack "$work"
# One ring per leaf switch (see the top).
awk '{ print $3, $1 }' "$work/domains" | sort -k1,1 -k2,2 |
	awk '{ n[$1] = n[$1] (n[$1] == "" ? "" : ",") $2 } END { for (l in n) print "RingName=" l " Nodes=" n[l] }' |
	sort >"$work/topology-ring.conf"

slurm_ver=$("$ISLE_SLURM_PREFIX/sbin/slurmctld" -V | awk '{ print $2 }')
if [ -z "${ISLE_BENCH_PLUGINS:-}" ] && [ -e "$ISLE_SLURM_PREFIX/lib/slurm/topology_ring.so" ]; then
	plugins="$plugins ring"
fi
echo "bench: Slurm $slurm_ver ($ISLE_SLURM_PREFIX): $plugins" >&2

# run_one PLUGIN: sets RESULT to one JSON result object. (Not run in $(...):
# the cluster harness stops its clusters when the shell that started them exits.)
run_one() {
	local plugin=$1 j n k jobs=() split=0 leafs_total=0 doms leafs started=0
	local args=(--nodes 16 --gpus 4 --topology "$plugin") tp=()
	if [ -n "$with_isle" ]; then
		args+=(--plugin-dir "$repo/build/slurm" --plugstack "$work/plugstack.conf")
		tp=(--isle-tp=8)
	fi
	case $plugin in
	tree) args+=(--topo-conf "$work/topology-tree.conf") ;;
	block) args+=(--topo-conf "$work/topology-block.conf") ;;
	ring) args+=(--topo-conf "$work/topology-ring.conf") ;;
	isle) args+=(--etc-file "$work/isle.json") ;;
	esac
	ISLE_CLUSTER_QUIET=1 isle_cluster_start "${args[@]}" >&2 || return 1

	for n in n01 n08; do
		j=$(sbatch --parsable -N1 -w "$n" --gpus-per-node=4 -o /dev/null --wrap "sleep 600")
		isle_pt_wait_state "$j" RUNNING 60 || { echo "bench: holder on $n did not start" >&2; return 1; }
	done
	for ((k = 0; k < NJOBS; k++)); do
		j=$(sbatch --parsable -N2 --gpus-per-node=4 "${tp[@]}" -o /dev/null --wrap "sleep 600")
		if isle_pt_wait_state "$j" RUNNING 60; then
			jobs+=("$j")
			started=$((started + 1))
		else
			echo "bench: $plugin: job $j pending: $(squeue -h -j "$j" -o %r)" >&2
		fi
	done
	for j in "${jobs[@]}"; do
		doms=$(isle_pt_job_nodes "$j" | while read -r n; do awk -v n="$n" '$1 == n { print $2 }' "$work/domains"; done | sort -u | wc -l)
		leafs=$(isle_pt_job_nodes "$j" | while read -r n; do awk -v n="$n" '$1 == n { print $3 }' "$work/domains"; done | sort -u | wc -l)
		echo "bench: $plugin: job $j on $(isle_pt_job_nodes "$j" | tr '\n' ' ')($doms domains, $leafs leafs)" >&2
		[ "$doms" -gt 1 ] && split=$((split + 1))
		leafs_total=$((leafs_total + leafs))
	done
	isle_cluster_stop >&2
	printf -v RESULT '{"plugin":"%s","jobs":%d,"tp_groups":%d,"tp_groups_split":%d,"leafs_spanned_mean":%s}' \
		"$plugin" "$started" "$started" "$split" \
		"$(awk -v t="$leafs_total" -v n="$started" 'BEGIN { printf "%.3f", n ? t / n : 0 }')"
}

results=()
for plugin in $plugins; do
	run_one "$plugin" || { echo "bench: $plugin run failed" >&2; exit 1; }
	results+=("$RESULT")
	echo "bench: $RESULT" >&2
done
mkdir -p "$(dirname "$out")"
{
	printf '{"slurm":"%s","commit":"%s","results":[' "$slurm_ver" \
		"$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)"
	(IFS=,; printf '%s' "${results[*]}")
	printf ']}\n'
} >"$out"
isle_bench_stamp "$out"
cat "$out"
