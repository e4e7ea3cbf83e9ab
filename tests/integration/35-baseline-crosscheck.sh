#!/bin/bash
# 35-baseline-crosscheck: islesim's `tree`, `block` and `linear` baselines
# are re-implementations of Slurm's topology/tree, topology/block and
# cons_tres without a topology plugin (_eval_nodes_consec), `tree-sw` and
# `block-seg` the same with --switches=1 and --segment (xc_job_args); this
# test checks them against the real plugins. One cluster file
# (tests/crosscheck/cluster.json: 16 nodes x 4 GPUs, NVLink domains of 2
# nodes, leafs of 4, 2 spines) gives topology.conf (tree and block) and
# gres.conf through islectl; the test cluster runs with each plugin, the
# job sequence tests/crosscheck/jobs.txt is submitted (holders pinned with
# -w fragment the cluster, then multi-node --gpus-per-node jobs; nothing
# ends) and each job's NodeList is collected. islesim then replays the same
# sequence with the same policy, every decision taken from the state Slurm
# was in, and the node sets are compared job by job. Jobs marked "=" in
# jobs.txt must agree; known differences (~REASON) are printed, not
# asserted. Then two random sequences (xc_gen, seeds XC_SEEDS, XC_GEN_JOBS
# jobs each) of single-node jobs of 1-4 GPUs (part of a node) and
# multi-node jobs, as users submit them, with jobs ending in between: every
# decision asserted, at least 50 per policy in all. See
# docs/baseline-crosscheck.md.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=tests/crosscheck/crosscheck.sh
source "$repo/tests/crosscheck/crosscheck.sh"
isle_cluster_require
for b in islectl islesim; do
	if [ ! -x "$repo/build/bin/$b" ]; then
		echo "FAIL: build/bin/$b not built (make)"
		exit 1
	fi
done

cluster=$repo/tests/crosscheck/cluster.json
# islesim follows the release under test (26.05 takes one-node jobs first-fit).
XC_SLURM_RELEASE=$("$ISLE_SLURM_PREFIX/sbin/slurmctld" -V | awk '{print $2}')
echo "Slurm $XC_SLURM_RELEASE"
work=$(mktemp -d "${TMPDIR:-/tmp}/isle-t35.XXXXXX")
trap 'rm -rf "$work"' EXIT
seqs=("${XC_JOBS_FILE:-$repo/tests/crosscheck/jobs.txt}")
for seed in ${XC_SEEDS:-1 2}; do
	xc_gen "$seed" "${XC_GEN_JOBS:-40}" >"$work/gen-$seed.txt"
	seqs+=("$work/gen-$seed.txt")
done

fail() {
	echo "FAIL: $*"
	isle_cluster_logs 30 || true
	exit 1
}

xc_emit "$cluster" "$work" || fail "islectl emit failed"
nodes=$(grep -c '"gpus":' "$cluster")

table=$work/table
summary=()
bad=0
for pol in ${XC_POLICIES:-tree block linear tree-sw block-seg}; do
	decisions=0 partial=0
	# linear: no topology plugin (cons_tres's _eval_nodes_consec); one CPU
	# per GPU on nodes of 4, so that a node's CPUs are what its GPUs are
	# tree-sw and block-seg: tree and block with what a careful user adds
	# (xc_job_args: --switches=1, --segment=2)
	base=${pol%-*}
	topo=(--topology "$base" --topo-conf "$work/topology-$base.conf")
	XC_SBATCH_EXTRA=
	XC_JOB_ARGS=
	case $pol in
	linear)
		topo=(--topology default --cpus 4)
		XC_SBATCH_EXTRA=--cpus-per-gpu=1
		;;
	tree-sw | block-seg) XC_JOB_ARGS=$pol ;;
	esac
	for seq in "${seqs[@]}"; do
		tag=$pol-$(basename "$seq" .txt)
		isle_cluster_start --nodes "$nodes" --gpus 4 "${topo[@]}" \
			--gres-conf "$work/gres.conf" \
			--slurm-extra "SchedulerParameters=batch_sched_delay=0,sched_min_interval=0" ||
			fail "$pol cluster did not start"
		if [ "$pol" != linear ]; then
			grep -q "topology/$base" "$SLURM_CONF" || fail "slurm.conf lacks topology/$base"
		fi
		xc_slurm_run "$seq" "$work/slurm-$tag" || fail "job sequence on topology/$pol"
		isle_cluster_stop
		xc_replay "$seq" "$work/slurm-$tag" "$pol" "$cluster" "$work/sim-$tag" ||
			fail "islesim --replay ($pol)"
		xc_compare "$seq" "$pol" "$work/slurm-$tag" "$work/sim-$tag" >>"$table"
		summary+=("$pol $(basename "$seq"): $XC_SAME/$XC_JOBS decisions identical ($((XC_SAME - XC_WAITS)) placements, $XC_WAITS both wait); $XC_KNOWN known differences, $XC_FAIL unexpected")
		# The asserted jobs must include real placements, not only waits.
		[ $((XC_SAME - XC_WAITS)) -gt 0 ] || fail "$pol: no placement agreed"
		[ "$XC_NOWSAME" -gt 0 ] && summary+=("$pol: $XC_NOWSAME known differences now agree: update tests/crosscheck/jobs.txt")
		bad=$((bad + XC_FAIL))
		# A sequence that placed nothing would compare nothing.
		[ "$XC_JOBS" -gt 0 ] || fail "$pol: no policy decision compared"
		decisions=$((decisions + XC_JOBS))
		# single-node jobs on part of a node that Slurm placed
		partial=$((partial + $(awk 'NR == FNR { if ($1 != "end" && $4 == "-" &&
			$2 == 1 && $3 < 4) p[$1] = 1; next } ($1 in p) && $2 != "-"' \
			<(xc__jobs "$seq") "$work/slurm-$tag" | wc -l)))
	done
	summary+=("$pol: $decisions decisions compared, $partial placed single-node jobs on part of a node")
	[ "$decisions" -ge 50 ] || fail "$pol: only $decisions decisions compared (< 50)"
	[ "$partial" -gt 0 ] || fail "$pol: no partial-node job placed"
done

printf '| %-6s | %-5s | %-5s | %-22s | %-22s | %s |\n' policy job req \
	"Slurm NodeList" "islesim" verdict
echo "|--------|-------|-------|------------------------|------------------------|---------|"
cat "$table"
printf '%s\n' "${summary[@]}"
[ "$bad" -eq 0 ] || fail "$bad asserted job(s) placed differently by islesim and Slurm"
echo "PASS"
