#!/bin/bash
# 54-fabric-calibration: islesim's flow model against the emulated fabric.
# Replays build/bench/fabric.json (make bench-fabric; ISLE_FABRIC_JSON names
# another) with islesim --replay-fabric on the placements Slurm chose and
# compares predicted with measured mean training step per shape and
# configuration. Judged, within 15%: every configuration whose predicted
# step is at least a quarter fabric time (the network model is what is
# tested) and whose runs left the host at least 15% idle CPU. The others
# are printed with the reason: a step that is mostly host time (tens of
# MPI ranks polling on a few cores: compute wake-ups, copies, waits) or a
# host busy with other work. Skips (77) when there is no result file, when
# it predates the recorded placements, or when no configuration qualifies.
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

# Columns: shape config runs meas_ms pred_ms err% fab_ms host_ms lat_ms
# idle%; the per-phase table after the first empty line is not judged.
echo "$out" | awk -v max=15 -v idle=15 -v share=25 '
	NR == 1 { next }
	/^$/ { done = 1 }
	!done && NF == 10 {
		n++
		if ($4 <= 0 || $5 <= 0) { bad++; print "FAIL: " $1 " " $2 ": no step time"; next }
		if (100 * $7 / $5 < share) {
			printf "not judged: %s %s: fabric %.0f%% of the predicted step (host-bound)\n", $1, $2, 100 * $7 / $5
			skipped++; next
		}
		if ($10 < idle) {
			printf "not judged: %s %s: host CPU idle %s%% (busy with other work)\n", $1, $2, $10
			skipped++; next
		}
		judged++
		e = $6 < 0 ? -$6 : $6
		if (e > max) { bad++; printf "FAIL: %s %s: error %s%% (over %d%%)\n", $1, $2, $6, max }
	}
	END {
		if (!n) { print "FAIL: no configuration replayed"; exit 1 }
		if (bad) exit 1
		if (!judged) {
			printf "SKIP: none of %d configurations qualifies (fabric >= %d%% of the step, CPU idle >= %d%%)\n", n, share, idle
			exit 77
		}
		printf "%d configurations within %d%%, %d not judged\n", judged, max, skipped + 0
	}'
