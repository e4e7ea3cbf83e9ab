#!/bin/bash
# bench/startcheck/merge.sh [STARTCHECK.json [PLACEMENT.json]]: puts the
# start-time check (bench/startcheck/run.sh) into placement.json's top
# level as "startcheck": {"policies": {POLICY: fraction within one
# bf_interval}, "jobs", "bf_interval", "slurm", "commit", "cpu_idle_pct"}
# (the commit and idle share of the startcheck run, not of the placement
# run). Defaults: build/bench/startcheck.json, build/bench/placement.json.
# `islesim --bench` rewrites placement.json whole: merge after
# bench-placement (make bench-startcheck does).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
sc=${1:-$repo/build/bench/startcheck.json}
pl=${2:-$repo/build/bench/placement.json}
for f in "$sc" "$pl"; do
	[ -r "$f" ] || { echo "merge: $f missing" >&2; exit 1; }
done
jq -e '.startcheck and .jobs and .bf_interval and .commit and (.cpu_idle_pct != null)' "$sc" >/dev/null ||
	{ echo "merge: $sc lacks startcheck, jobs, bf_interval, commit or cpu_idle_pct" >&2; exit 1; }
tmp=$pl.merge.$$
jq --slurpfile s "$sc" '. + {startcheck: ($s[0] | {policies: .startcheck, jobs,
	bf_interval, bf_resolution, slurm, commit, cpu_idle_pct})}' "$pl" >"$tmp" &&
	jq -e '.startcheck.policies' "$tmp" >/dev/null || { rm -f "$tmp"; echo "merge: $pl: not merged" >&2; exit 1; }
mv -f "$tmp" "$pl"
echo "merge: startcheck ($(jq -c .startcheck.policies "$pl")) in $pl"
