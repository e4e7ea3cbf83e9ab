#!/bin/bash
# 49-fabric-quick: real Slurm placing real MPI jobs on the emulated fabric
# (bench/fabric/run.sh --quick: the GB200-like shape, two 2-node TP=8
# training jobs and one 1-node inference job, topology/tree and topology/isle).
# Correctness only, never time:
#  - every job completed with all its step records and verified sums
#    (the runner exits non-zero otherwise);
#  - the result JSON has both configs, every job, step and token records;
#  - the data network carried the traffic: the kernel's cable counters hold
#    at least the bytes of the cross-node TP allreduces;
#  - nothing of any run is left: run dir, namespaces, processes.
# A failed run prints the runner's diagnostics (which job, which launch,
# where each rank of a hung job waited).
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/integration/lib/fabric-bench.sh
source "$repo/tests/integration/lib/fabric-bench.sh"

# On failure: the runner's own lines, each failed job with its launches,
# Slurm's reason, its ranks' stacks if it hung (gdb) and its log lines.
isle_fabric_bench_run "$work/fabric.json" 80 --quick

n=$(jq '.shapes[0].results | length' "$work/fabric.json")
[ "$n" = 2 ] || fail "expected 2 results (tree, isle), got $n"
for cfg in tree isle; do
	r=$(jq -c --arg c "$cfg" '.shapes[0].results[] | select(.config == $c)' "$work/fabric.json")
	[ -n "$r" ] || { fail "$cfg: no result"; continue; }
	jobs=$(jq '.jobs' <<<"$r")
	sub=$(jq '.jobs_submitted' <<<"$r")
	[ "$jobs" = 3 ] && [ "$sub" = 3 ] || fail "$cfg: $jobs of $sub jobs completed (want 3 of 3)"
	jq -e '.step_ms_mean > 0 and .infer_token_ms_mean > 0 and .makespan_s >= 0 and (.tp_groups_split | type) == "number"' <<<"$r" >/dev/null ||
		fail "$cfg: step/token records or fields missing: $r"
	# Two 2-node jobs x 3 steps x one TP allreduce (7B: 2^31 bytes x scale,
	# whole floats) whose ranks sit on two nodes: at least that much
	# crossed the data network.
	bytes=$(jq '[.link_bytes_by_tier[]] | add // 0' <<<"$r")
	want=$(jq '2 * 3 * 4 * ((2147483648 * .scale / 4) | floor)' "$work/fabric.json")
	[ "$bytes" -ge "$want" ] || fail "$cfg: data network carried $bytes bytes, want >= $want"
	echo "ok   $cfg: $jobs jobs, $(jq -c .link_bytes_by_tier <<<"$r") bytes by tier, $(jq .tp_groups_split <<<"$r") TP groups split"
done

# Leftovers of every run.
isle_fabric_bench_leftovers
[ "$(grep -c '^fabric-bench: run dir' "$work/log")" = 2 ] || fail "expected 2 runs in the log"

isle_fabric_bench_end
