#!/bin/bash
# 54-fabric-calibration: islesim's flow model against the emulated fabric.
# Replays build/bench/fabric.json (make bench-fabric; ISLE_FABRIC_JSON names
# another) with islesim --replay-fabric on the placements Slurm chose and
# compares predicted with measured mean training step per shape and
# configuration. Every configuration is judged, within 15%, none filtered
# out: the bench is meant to run link-bound (run.sh warns on a run under
# 30% host idle), so a miss is the model's; the replay's fab/host/lat
# columns say which term. The file must record its commit and every run its
# host CPU idle share (cpu_idle_pct). Skips (77) when there is no result
# file, when it predates the recorded placements, or when it has no
# training configuration.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
f=${ISLE_FABRIC_JSON:-$repo/build/bench/fabric.json}
sim=$repo/build/bin/islesim
[ -x "$sim" ] || { echo "FAIL: $sim not built (make)"; exit 1; }
[ -r "$f" ] || { echo "SKIP: no $f (run make bench-fabric)"; exit 77; }

# Runs before the shim's lines were recorded replay the shim as plain MPI.
if command -v jq >/dev/null &&
	! jq -e '[.shapes[].results[].job_list[]? | has("shim")] | any' "$f" >/dev/null 2>&1; then
	echo "SKIP: $f predates the recorded shim levels (job_list[].shim): rerun make bench-fabric"
	exit 77
fi
out=$("$sim" --replay-fabric "$f" --shape-dir "$repo/bench/fabric")
rc=$?
echo "$out"
case $rc in
0) ;;
3) echo "SKIP: $f has no recorded placements (job_list): rerun make bench-fabric"; exit 77 ;;
*) echo "FAIL: islesim --replay-fabric exited $rc"; exit 1 ;;
esac

# What each run was measured under, printed beside the judgement.
if command -v jq >/dev/null; then
	jq -e 'has("commit") and (.commit | type) == "string"' "$f" >/dev/null ||
		{ echo "FAIL: $f records no commit"; exit 1; }
	miss=$(jq '[.shapes[].results[] | select((.cpu_idle_pct | type) != "number")] | length' "$f")
	[ "$miss" = 0 ] || { echo "FAIL: $miss runs of $f record no cpu_idle_pct"; exit 1; }
	echo "commit $(jq -r .commit "$f"), host CPU idle per run $(jq -c '[.shapes[].results[].cpu_idle_pct]' "$f")"
fi

# Columns: shape config runs meas_ms pred_ms err% fab_ms host_ms lat_ms
# idle%; the per-phase table after the first empty line is not judged.
echo "$out" | awk -v max=15 '
	NR == 1 { next }
	/^$/ { done = 1 }
	!done && NF == 10 {
		n++
		if ($4 <= 0 || $5 <= 0) { bad++; print "FAIL: " $1 " " $2 ": no step time"; next }
		e = $6 < 0 ? -$6 : $6
		if (e > max) {
			bad++
			printf "FAIL: %s %s: error %s%% (over %d%%; fabric %s, host %s, latency %s ms of the prediction; idle %s%%)\n", $1, $2, $6, max, $7, $8, $9, $10
		} else
			printf "ok   %s %s: error %s%%\n", $1, $2, $6
	}
	END {
		if (!n) {
			print "SKIP: no training configuration in the result file"
			exit 77
		}
		if (bad) {
			printf "FAIL: %d of %d configurations over %d%%\n", bad, n, max
			exit 1
		}
		printf "%d configurations within %d%%\n", n, max
	}'
