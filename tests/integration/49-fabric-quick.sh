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
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
isle_cluster_require
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-t46.XXXXXX")
trap 'rm -rf "$work"' EXIT
fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

B=$repo/build "$repo/bench/fabric/run.sh" --quick --out "$work/fabric.json" >"$work/log" 2>&1
rc=$?
if [ $rc = 77 ]; then
	grep SKIP "$work/log"
	exit 77
fi
if [ $rc != 0 ]; then
	# The runner's own lines: each failed job with its launches, Slurm's
	# reason, its ranks' stacks if it hung (gdb) and its log lines.
	grep '^fabric-bench: ' "$work/log" | tail -80
	fail "runner exited $rc"
fi
[ -s "$work/fabric.json" ] || { echo "FAIL: no result file"; exit 1; }

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
while read -r d p; do
	[ -e "$d" ] && fail "run dir $d left behind"
	ip netns list 2>/dev/null | isle_grep_q "^$p-" && fail "namespaces $p-* left behind"
	ls /run/netns 2>/dev/null | isle_grep_q "^$p-" && fail "/run/netns/$p-* left behind"
	if grep -lsF "$d/" /proc/[0-9]*/cmdline >/dev/null 2>&1; then
		fail "processes of $d left behind"
	fi
	echo "ok   nothing left of $p"
done < <(sed -n 's/^fabric-bench: run dir \([^ ]*\) prefix \([^ ]*\) .*/\1 \2/p' "$work/log")
[ "$(grep -c '^fabric-bench: run dir' "$work/log")" = 2 ] || fail "expected 2 runs in the log"

[ $fails = 0 ] || exit 1
echo "PASS"
