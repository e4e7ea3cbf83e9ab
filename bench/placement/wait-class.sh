#!/bin/bash
# bench/placement/wait-class.sh (make bench-wait-class): the goal of issue
# 25 judged on islesim's output: isle does not buy large jobs' wait with
# small jobs'. Exit 0 when every bound holds, 1 when one is missed (a
# benchmark's verdict, kept out of make test: the goal is not met yet),
# 77 when islesim or the lingjun data is missing. islesim (Slurm's main scheduler and sched/backfill,
# every policy on the same job stream) runs superpod, nvl72, pcie and
# lingjun under the four published mixes (2,000 jobs, seed 1 or
# WAIT_CLASS_SEED, load 0.9).
# For every cluster and mix:
#  - per size class (1, 2-8, 9-64, >64 GPUs), isle's mean wait is at most
#    1.1 x the better of tree and block, plus 60 s;
#  - isle's GPU-weighted wait is at most the best baseline's (linear, tree,
#    block, random, tree-sw, block-seg);
#  - isle's mean step time (flow model) is at most 1.01 x the better of
#    tree and block.
# Waits and step times here are the simulator's model figures, not
# measured time. Thresholds as in issue 25, fixed before the tuning.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
seed=${WAIT_CLASS_SEED:-1}
sim=$repo/build/bin/islesim
if [ ! -x "$sim" ]; then
	echo "SKIP: build/bin/islesim not built (make)"
	exit 77
fi
data=${ISLE_TEST_DATA:-$repo/../shared/data}
if [ ! -r "$data/clos/lingjun-2023-topo.csv" ]; then
	echo "SKIP: $data/clos/lingjun-2023-topo.csv missing (ISLE_TEST_DATA)"
	exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/isle-waitclass.XXXXXX")
trap 'rm -rf "$work"' EXIT

bad=0
for cluster in superpod nvl72 pcie lingjun; do
	for mix in seren kalos philly helios; do
		out=$work/$cluster-$mix.txt
		"$sim" --cluster "$cluster" --mix "$mix" --jobs 2000 --seed "$seed" \
			--data "$data" >"$out" ||
			{ echo "FAIL: islesim $cluster $mix"; exit 1; }
		# columns: cluster mix policy step ... wait_gpu (9) ... then
		# "1 m/p 2-8 m/p 9-64 m/p >64 m/p"
		awk -v c="$cluster" -v m="$mix" '
		$1 == c && $2 == m {
			p = $3; step[p] = $4; gw[p] = $9
			for (i = 18; i < NF; i += 2) {
				split($(i + 1), v, "/")
				w[p, $i] = v[1]
			}
		}
		END {
			n = split("1 2-8 9-64 >64", cls, " ")
			fail = 0
			for (k = 1; k <= n; k++) {
				b = w["tree", cls[k]]
				if (w["block", cls[k]] < b)
					b = w["block", cls[k]]
				lim = 1.1 * b + 60
				ok = w["isle", cls[k]] <= lim
				printf "%-8s %-6s class %-4s isle %7.0f tree %7.0f block %7.0f limit %7.0f %s\n", \
					c, m, cls[k], w["isle", cls[k]], w["tree", cls[k]], \
					w["block", cls[k]], lim, ok ? "ok" : "FAIL"
				fail += !ok
			}
			best = ""; bw = 0
			split("linear tree block random tree-sw block-seg", bl, " ")
			for (k = 1; k <= 6; k++)
				if (best == "" || gw[bl[k]] < bw) { best = bl[k]; bw = gw[bl[k]] }
			ok = gw["isle"] <= bw
			printf "%-8s %-6s GPU-weighted wait isle %.0f best baseline %.0f (%s) %s\n", \
				c, m, gw["isle"], bw, best, ok ? "ok" : "FAIL"
			fail += !ok
			s = step["tree"] < step["block"] ? step["tree"] : step["block"]
			ok = step["isle"] <= 1.01 * s
			printf "%-8s %-6s step isle %.3f tree/block best %.3f %s\n", \
				c, m, step["isle"], s, ok ? "ok" : "FAIL"
			fail += !ok
			exit fail > 0
		}' "$out" || bad=$((bad + 1))
	done
done
if [ "$bad" -gt 0 ]; then
	echo "FAIL: $bad cluster/mix combination(s) miss the bounds"
	exit 1
fi
echo "PASS: isle within the wait bounds of issue 25 on 4 clusters x 4 mixes"
