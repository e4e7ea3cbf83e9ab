#!/bin/bash
# bench/comm/probe-share.sh: the crossover probe's bytes against a job's
# (docs/comm-shim.md, Algorithms). build/tests/train_mnist, 8 ranks under
# mpirun on this host, a plan of 2 nodes x 4 ranks with int8 across,
# ISLE_COMM_ALGO left at auto (the probe runs only there); a short job (one
# epoch on 12,000 images: 187 gradient allreduces of 814,120 bytes) and a
# long one (two epochs on 60,000: 1,874), each with ISLE_COMM_PROBE_SHARE=0
# (the probe at the first call, as before the bound) and at the default
# 0.01. The probe's bytes come from the per-job report (ISLE_REPORT_FILE,
# all ranks); the job's are the gradients' bytes as a ring in rank order
# sends them (the fewest any allreduce sends), all ranks.
#
# Usage: bench/comm/probe-share.sh [--out FILE]  (default
# build/bench/probe-share.json). Needs make (Open MPI) and Fashion-MNIST.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-$here/build}
data=${ISLE_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
out=$B/bench/probe-share.json
[ "${1:-}" = --out ] && out=$2
for f in "$B/tests/train_mnist" "$B/lib/libisle_preload.so"; do
	[ -e "$f" ] || { echo "probe-share: $f not built (make)" >&2; exit 1; }
done
[ -r "$data/train-images-idx3-ubyte.gz" ] || { echo "probe-share: SKIP: no Fashion-MNIST in $data" >&2; exit 77; }
# shellcheck source=bench/stamp.sh
source "$here/bench/stamp.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/isle-probe-share.XXXXXX")
trap 'rm -rf "$work"' EXIT
{
	echo '{"isle_plan": 1, "job_id": "probe-share", "ranks": ['
	for r in 0 1 2 3 4 5 6 7; do
		printf '%s{"rank": %d, "node": "n%d", "gpu": %d, "island": "nvl%d"}\n' \
			"$([ $r = 0 ] || echo ,)" $r $((r / 4)) $((r % 4)) $((r / 4))
	done
	echo '], "levels": [{"name": "nvlink", "bw_gbps": 100, "lat_us": 1, "codec": "none"},'
	echo '{"name": "net", "bw_gbps": 1, "lat_us": 20, "codec": "int8"}]}'
} >"$work/plan.json"
root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)

isle_bench_begin
rows=""
for share in 0 0.01; do
	for job in short long; do
		args=(--epochs 1 --train-n 12000)
		[ $job = long ] && args=(--epochs 2 --train-n 60000)
		name=$work/$share.$job
		mpirun "${root[@]}" --oversubscribe -np 8 -x LD_PRELOAD="$B/lib/libisle_preload.so" \
			-x OMPI_MCA_mpi_yield_when_idle=1 -x ISLE_PLAN="$work/plan.json" -x ISLE_COMM_VERBOSE=1 \
			-x ISLE_COMM_PROBE_SHARE=$share -x ISLE_REPORT_FILE="$name.report.json" \
			"$B/tests/train_mnist" --data "$data" --seed 1 --test-n 2000 "${args[@]}" >"$name.out" 2>&1 ||
			{ echo "probe-share: run $share $job failed" >&2; tail -5 "$name.out" >&2; exit 1; }
		steps=$(grep -m1 '^{"codec"' "$name.out" | jq .steps)
		probe=$(jq .probe.bytes "$name.report.json")
		# 203530 floats over 8 ranks: shards of 25442 (2) and 25441 (6)
		ring=0
		for r in 0 1 2 3 4 5 6 7; do
			mine=$((r < 2 ? 25442 : 25441)) next=$(((r + 1) % 8 < 2 ? 25442 : 25441))
			ring=$((ring + (2 * 203530 - mine - next) * 4))
		done
		line=$(grep -m1 'crossover probed' "$name.out" | sed 's/^isle_comm: //' || true)
		rows+="${rows:+,}$(jq -n --argjson share "$share" --arg job "$job" --argjson steps "$steps" \
			--argjson probe "$probe" --argjson bytes $((steps * ring)) --arg line "$line" \
			'{probe_share: $share, job: $job, steps: $steps, probe_bytes: $probe,
			  gradient_ring_bytes: $bytes, probe_pct: (100 * $probe / $bytes), probe_line: $line}')"
	done
done
mkdir -p "$(dirname "$out")"
jq -n --argjson runs "[$rows]" '{bench: "probe-share", runs: $runs}' >"$out"
isle_bench_stamp "$out"
jq -r '.runs[] | "share \(.probe_share) \(.job): \(.steps) steps, probe \(.probe_bytes) B of \(.gradient_ring_bytes) B (\(.probe_pct | . * 1000 | round / 1000)%)"' "$out"
