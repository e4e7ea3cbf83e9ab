#!/bin/bash
# bench/comm/paired.sh: every allreduce variant interleaved inside one MPI
# job (build/bench/bench_paired): the same processes, variants taking turns
# each iteration, at least 30 timed iterations per size after warm-up.
#
#   Open MPI  one mpirun (coll_tuned dynamic rules): mpi_default, mpi_ring,
#             mpi_rdoubling, mpi_rabenseifner and mpi_segring at three
#             segment sizes, each a communicator duplicated under its
#             coll_tuned_allreduce_algorithm (MPI_T), beside the shim's
#             isle_none/bf16/int8/topk; a second mpirun with coll/han
#             selected (its priority is read-only at run time) pairs
#             mpi_han with isle_none.
#   MPICH     one mpiexec: MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM written
#             before each call (auto, nb, smp, recursive doubling,
#             reduce-scatter + allgather) beside the same shim variants.
#
# Ranks run on this host over shared memory; the plan puts them on two
# emulated nodes (--ppn per node) so that the shim builds its hierarchy.
# MPICH's ranks busy-poll without yielding: on a 2-core host it runs one
# rank per node (--mpich-ppn 1, 2 ranks) where Open MPI runs --ppn 2.
# Below 64 KiB each timed iteration makes 64 KiB / bytes calls back to back
# (at most 256; calls_per_iter): one 8 B call (about 1 us on MPICH) is
# within a barrier's skew and the clock's reach.
# Rows: mpi, algo, bytes, time_us_median/p10/p90, link_bytes (null here: no
# emulated uplink), mismatches (every call checked against the exact sum).
# The file adds commit, the host's idle CPU share during each job, and
# mpi_best (fastest mpi_* median) per size and MPI with each isle_*
# variant's ratio to it.
#
# Usage: bench/comm/paired.sh [--ppn R] [--mpich-ppn R] [--sizes B,B,...]
#                             [--max-bytes B] [--iters N]
#                             [--big-bytes B --big-iters N] [--out FILE]
# From --big-bytes (16 MiB) on, --big-iters (10) timed iterations per size
# instead of --iters (30): 13 variants of 256 MiB on 2 cores.
set -euo pipefail

here=$(cd "$(dirname "$0")/../.." && pwd)
B=${B:-$here/build}
ppn=2 mppn=1 max=$((256 << 20)) iters=30 big=$((16 << 20)) big_iters=10
# 8 B (the pass-through cost) to 256 MiB by 8x, and 64 MiB (the codec goals).
sizes=8,64,512,4K,32K,256K,2M,16M,64M,128M,256M
out=$B/bench/comm-paired.json
while [ $# -gt 0 ]; do
	case $1 in
	--ppn) ppn=$2; shift 2 ;;
	--mpich-ppn) mppn=$2; shift 2 ;;
	--sizes) sizes=$2; shift 2 ;;
	--max-bytes) max=$2; shift 2 ;;
	--iters) iters=$2; shift 2 ;;
	--big-bytes) big=$2; shift 2 ;;
	--big-iters) big_iters=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	*) echo "paired.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
np=$((2 * ppn))
# The checkout measured: read before the jobs run, not after.
commit=$(git -C "$here" describe --always --dirty 2>/dev/null || echo unknown)
shim=$B/lib/libisle_preload.so
[ -f "$shim" ] && [ -x "$B/bench/bench_paired" ] || { echo "paired.sh: SKIP: not built" >&2; exit 77; }
work=$(mktemp -d /tmp/isle-paired.XXXXXX)
trap 'rm -rf "$work"' EXIT

# plan PPN FILE: ranks 0..PPN-1 on n00, the rest on n01; a 1 GB/s, 20 us
# network between them.
plan() {
	local r
	{
		echo '{"isle_plan": 1, "job_id": "paired", "ranks": ['
		for ((r = 0; r < 2 * $1; r++)); do
			printf '%s{"rank": %d, "node": "n%02d", "gpu": %d, "island": "nvl%d", "leaf": "l0"}\n' \
				"$([ $r -gt 0 ] && echo ,)" $r $((r / $1)) $((r % $1)) $((r / $1))
		done
		echo '], "levels": ['
		echo '{"name": "nvlink", "bw_gbps": 20, "lat_us": 1, "codec": "none"},'
		echo '{"name": "net", "bw_gbps": 1, "lat_us": 20, "codec": "none"}]}'
	} >"$2"
}
plan "$ppn" "$work/plan.json"
plan "$mppn" "$work/plan-mpich.json"

cpu() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print $5 + $6, t; exit }' /proc/stat; }
idle_of() { awk -v a="$1" -v b="$2" -v c="$3" -v d="$4" 'BEGIN { printf "%.1f", (d > b ? 100 * (c - a) / (d - b) : 0) }'; }
args=(--sizes "$sizes" --max-bytes "$max" --iters "$iters" --big-bytes "$big" --big-iters "$big_iters")
ISLE=isle_none,isle_bf16,isle_int8,isle_topk:0.01
: >"$work/rows"
: >"$work/idle"
# job NAME CMD...: one MPI job, rows appended, idle share recorded.
job() {
	local name=$1 i0 t0 i1 t1
	shift
	echo "paired.sh: $name" >&2
	read -r i0 t0 < <(cpu)
	if ! timeout 3000 "$@" >"$work/$name.out" 2>"$work/$name.err"; then
		echo "paired.sh: $name failed:" >&2
		tail -5 "$work/$name.err" >&2
	fi
	read -r i1 t1 < <(cpu)
	grep '^{"mpi"' "$work/$name.out" >>"$work/rows" || true
	echo "$name $(idle_of "$i0" "$t0" "$i1" "$t1")" >>"$work/idle"
}

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# ISLE_COMM_PROBE_SHARE=0: the crossover probe runs at once, as in a job
# long enough for its 1% bound, so these short runs time the steady state.
ompi=(mpirun.openmpi -np "$np" --oversubscribe --bind-to none --mca btl self,vader
	--mca btl_vader_single_copy_mechanism none --mca mpi_yield_when_idle 1
	-x LD_PRELOAD="$shim" -x ISLE_PLAN="$work/plan.json" -x ISLE_COMM_PROBE_SHARE=0)
if command -v mpirun.openmpi >/dev/null; then
	job openmpi "${ompi[@]}" --mca coll_tuned_use_dynamic_rules 1 "$B/bench/bench_paired" \
		--mpi openmpi --variants "mpi_default,mpi_ring,mpi_rdoubling,mpi_rabenseifner,mpi_segring:16K,mpi_segring:64K,mpi_segring:256K,$ISLE" "${args[@]}"
	job openmpi_han "${ompi[@]}" --mca coll_han_priority 100 "$B/bench/bench_paired" \
		--mpi openmpi --variants mpi_han,isle_none "${args[@]}"
fi
if command -v mpiexec.mpich >/dev/null && [ -x "$B/bench/bench_paired_mpich" ]; then
	job mpich mpiexec.mpich -np $((2 * mppn)) -env LD_PRELOAD "$shim" -env ISLE_PLAN "$work/plan-mpich.json" \
		-env ISLE_COMM_PROBE_SHARE 0 \
		"$B/bench/bench_paired_mpich" --mpi mpich \
		--variants "mpi_auto,mpi_nb,mpi_smp,mpi_rdoubling,mpi_rsag,$ISLE" "${args[@]}"
fi

# isle_none of the han job is a second sample of the same variant: kept
# under its own name so that rows stay unique.
mkdir -p "$(dirname "$out")"
awk -v commit="$commit" -v idlef="$work/idle" -v mppn="$mppn" -v np="$np" '
	function field(s, k,   m) {
		if (match(s, "\"" k "\":\"[^\"]*\"")) { m = substr(s, RSTART, RLENGTH); sub("^\"" k "\":\"", "", m); sub("\"$", "", m); return m }
		if (match(s, "\"" k "\":[^,}]*")) { m = substr(s, RSTART, RLENGTH); sub("^\"" k "\":", "", m); return m }
		return ""
	}
	BEGIN { while ((getline l < idlef) > 0) { split(l, ia, " "); idle[ia[1]] = ia[2]; ni++; iname[ni] = ia[1] } }
	{
		row[NR] = $0; mpi = field($0, "mpi"); algo = field($0, "algo"); b = field($0, "bytes") + 0
		med = field($0, "time_us_median") + 0
		if (algo == "isle_none" && seen[mpi, b, algo]++) { sub("\"isle_none\"", "\"isle_none_hanjob\"", row[NR]); algo = "isle_none_hanjob" }
		t[mpi, b, algo] = med; sizes[mpi, b] = 1; mpis[mpi] = 1; bytes_l[b] = 1
		if (algo ~ /^mpi_/ && (!((mpi, b) in best) || med < best[mpi, b])) { best[mpi, b] = med; bestalgo[mpi, b] = algo }
		if (algo ~ /^isle_/) isles[algo] = 1
	}
	END {
		printf "{\"commit\": \"%s\", \"ranks\": {\"openmpi\": %d, \"mpich\": %d}, \"host_idle_pct\": {", commit, np, 2 * mppn
		for (i = 1; i <= ni; i++) printf "%s\"%s\": %s", (i > 1 ? ", " : ""), iname[i], idle[iname[i]]
		printf "},\n \"rows\": [\n"
		for (i = 1; i <= NR; i++) printf "  %s%s\n", row[i], (i < NR ? "," : "")
		printf " ],\n \"mpi_best\": [\n"
		n = 0
		for (k in best) {
			split(k, kk, SUBSEP); mpi = kk[1]; b = kk[2]
			line = sprintf("  {\"mpi\":\"%s\",\"bytes\":%d,\"algo\":\"%s\",\"time_us_median\":%.2f", mpi, b, bestalgo[k], best[k])
			for (a in isles) if ((mpi, b, a) in t && t[mpi, b, a] > 0)
				line = line sprintf(",\"%s_speedup\":%.3f", a, best[k] / t[mpi, b, a])
			out[++n] = line "}"
		}
		for (i = 1; i <= n; i++) printf "%s%s\n", out[i], (i < n ? "," : "")
		printf " ]}\n"
	}' "$work/rows" >"$out"
echo "paired.sh: wrote $out" >&2
