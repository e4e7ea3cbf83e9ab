#!/bin/bash
# 54-fabric-calibration: islesim's flow model against the emulated fabric.
# Replays build/bench/fabric.json (make bench-fabric; ISLE_FABRIC_JSON names
# another) with islesim --replay-fabric on the placements Slurm chose and
# compares predicted with measured mean training step per shape and
# configuration: every configuration measured on a host that was not
# saturated (mean CPU idle of its runs >= 30%, bench/fabric/run.sh's own
# threshold) must be within 15%. Configurations measured on a saturated
# host are printed, not judged: their steps time the host's run queue
# (other work on it), which the model cannot know. Skips (77) when there
# is no result file, when it predates the recorded placements, or when no
# configuration was measured on an unsaturated host.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
f=${ISLE_FABRIC_JSON:-$repo/build/bench/fabric.json}
sim=$repo/build/bin/islesim
[ -x "$sim" ] || { echo "SKIP: $sim not built"; exit 77; }
[ -r "$f" ] || { echo "SKIP: no $f (run make bench-fabric)"; exit 77; }

out=$("$sim" --replay-fabric "$f" --shape-dir "$repo/bench/fabric")
rc=$?
echo "$out"
case $rc in
0) ;;
3) echo "SKIP: $f has no recorded placements (job_list): rerun make bench-fabric"; exit 77 ;;
*) echo "FAIL: islesim --replay-fabric exited $rc"; exit 1 ;;
esac

# Columns: shape config runs meas_ms pred_ms err% fab_ms host_ms idle%
echo "$out" | awk -v max=15 -v idle=30 '
	NR == 1 { next }
	NF == 9 {
		n++
		if ($4 <= 0 || $5 <= 0) { bad++; print "FAIL: " $1 " " $2 ": no step time"; next }
		if ($9 < idle) { skipped++; next }
		judged++
		e = $6 < 0 ? -$6 : $6
		if (e > max) { bad++; printf "FAIL: %s %s: error %s%% (over %d%%)\n", $1, $2, $6, max }
	}
	END {
		if (!n) { print "FAIL: no configuration replayed"; exit 1 }
		if (bad) exit 1
		if (!judged) {
			printf "SKIP: all %d configurations were measured on a saturated host (CPU idle < %d%%): their errors above time the host, not the fabric\n", n, idle
			exit 77
		}
		printf "%d configurations within %d%%, %d not judged (saturated host)\n", judged, max, skipped + 0
	}'
