#!/bin/bash
# 37-startcheck: islesim's start times against real Slurm's. A small
# trace (40 jobs of 1 to 32 GPUs, 5-60 s runs, limits of 1-2 minutes,
# seed 37) runs through a real slurmctld with sched/backfill (bf_interval
# 5 s, bf_resolution 5 s) under topology/tree, topology/block and
# topology/isle on the 16-node cross-check cluster, and islesim replays it
# with the same policy (bench/startcheck/run.sh, which docs/startcheck.md
# describes). It takes a few minutes.
#
# Fails on a pipeline error: a cluster that does not start, a failed
# sbatch, a job that does not start or end, a job without a submit or
# start record in slurmctld's log or whose log time disagrees with
# scontrol's by 1.5 s or more, islesim failing or not starting every
# job, a result file without a policy's figures. Fails also when, for a
# policy, fewer than half of the jobs start within one bf_interval of
# their real start: the model is then broken, not merely inexact.
#
# The goal of issue 25 is 90% within one bf_interval per policy. This test
# prints that verdict per policy; STARTCHECK_STRICT=1 turns a miss into a
# failure.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
isle_cluster_require
for b in islesim islectl; do
	if [ ! -x "$repo/build/bin/$b" ]; then
		echo "FAIL: build/bin/$b not built (make)"
		exit 1
	fi
done
work=$(mktemp -d "${TMPDIR:-/tmp}/isle-t37.XXXXXX")
trap 'rm -rf "$work"' EXIT

policies="tree block isle"
goal=0.90
floor=0.50
out=$work/startcheck.json
rc=0
STARTCHECK_JOBS=40 STARTCHECK_SEED=37 STARTCHECK_DUR_MIN=5 \
	STARTCHECK_DUR_MAX=60 STARTCHECK_LOAD=1.0 STARTCHECK_BF_INTERVAL=5 \
	STARTCHECK_BF_RESOLUTION=5 STARTCHECK_POLICIES="$policies" \
	STARTCHECK_KEEP=$work/run \
	bash "$repo/bench/startcheck/run.sh" "$out" || rc=$?
[ "$rc" = 77 ] && { echo "SKIP: bench/startcheck/run.sh skipped"; exit 77; }
[ "$rc" = 0 ] || { echo "FAIL: bench/startcheck/run.sh exited $rc"; exit 1; }

bad=0 missed=0
for pol in $policies; do
	line=$(jq -r --arg p "$pol" '.results[] | select(.policy == $p) |
		"\(.jobs) \(.within) \(.fraction) \(.diff_s.median) \(.diff_s.p90) \(.diff_s.max) \(.miss_by.main) \(.miss_by.backfill)"' "$out")
	if [ -z "$line" ]; then
		echo "FAIL: $pol: no result in $out"
		bad=1
		continue
	fi
	read -r n w f med p90 max mm mb <<<"$line"
	echo "$pol: $w/$n within one bf_interval ($f); |sim - real| median $med s, p90 $p90 s, max $max s; misses started by the main scheduler $mm, by backfill $mb"
	if [ "$n" -ne 40 ]; then
		echo "FAIL: $pol: $n jobs compared, not 40"
		bad=1
	fi
	# Wait by class (issue 25): every job in one class, means as the
	# per-job rows give them.
	want=$(awk -v p="$pol" '$1 == p {
		c = $4 == 1 ? "1" : $4 <= 8 ? "2-8" : $4 <= 64 ? "9-64" : ">64"
		n[c]++; s[c] += $7 - $6 }
		END { for (c in n) printf "%s %d %.2f\n", c, n[c], s[c] / n[c] }' \
		"$(dirname "$out")/startcheck-jobs.tsv" | sort)
	got=$(jq -r --arg p "$pol" '.results[] | select(.policy == $p) |
		.wait_by_class.real | to_entries[] | "\(.key) \(.value.jobs) \(.value.mean_s)"' "$out" |
		awk '{ printf "%s %d %.2f\n", $1, $2, $3 }' | sort)
	if [ -z "$got" ] || [ "$got" != "$want" ]; then
		echo "FAIL: $pol: wait_by_class.real '$got', the job rows give '$want'"
		bad=1
	else
		echo "$pol: real wait by class (class jobs mean_s): $(echo "$got" | paste -sd ';')"
	fi
	if awk -v f="$f" -v t="$floor" 'BEGIN { exit !(f < t) }'; then
		echo "FAIL: $pol: $f of the jobs within one bf_interval, under $floor"
		bad=1
	fi
	if awk -v f="$f" -v t="$goal" 'BEGIN { exit !(f < t) }'; then
		echo "GOAL MISSED: $pol: $f < $goal within one bf_interval"
		missed=1
	else
		echo "GOAL MET: $pol: $f >= $goal within one bf_interval"
	fi
done
# The jobs that missed, for the log.
awk -v bfi=5 '!/^#/ && ($9 > bfi || $9 < -bfi)' "$(dirname "$out")/startcheck-jobs.tsv" |
	sed 's/^/miss: /' | head -40
[ "$bad" = 0 ] || exit 1
if [ "$missed" = 1 ] && [ "${STARTCHECK_STRICT:-0}" = 1 ]; then
	echo "FAIL: the 90% goal missed (STARTCHECK_STRICT=1)"
	exit 1
fi
echo "PASS"
