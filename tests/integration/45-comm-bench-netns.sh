#!/bin/bash
# 45-comm-bench-netns: the emulated two-tier network of `make bench-comm`,
# small: 2 namespace "nodes" x 4 ranks, messages up to 16 KiB, Open MPI's
# default, forced Rabenseifner and han, and isle with int8 (no convergence
# runs: 46 covers those). Checks that ranks were launched across the
# namespaces, that traffic went through the tbf-shaped uplinks (per
# algorithm, from tc), that every uncompressed result equals the exact sum,
# and that comm.json has every field the benchmark promises.
# Exit 0 pass, 77 skip (no root / netns / tc / mpirun: said by the script).
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
B=$here/build
tmp=$(mktemp -d /tmp/isle-it45.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

fail() {
	echo "45-comm-bench-netns: FAIL: $*"
	[ -f "$tmp/log" ] && tail -20 "$tmp/log"
	exit 1
}

algos="mpi_default mpi_rabenseifner mpi_han isle_int8"
B=$B ISLE_BENCH_CONVERGE=0 timeout 400 "$here/scripts/bench-comm.sh" --max-bytes 16K \
	--algos "${algos// /,}" --out "$tmp/comm.json" >"$tmp/log" 2>&1
rc=$?
[ $rc = 77 ] && { grep SKIP "$tmp/log"; exit 77; }
[ $rc = 0 ] || fail "bench-comm.sh exited $rc"
j=$tmp/comm.json
[ -s "$j" ] || fail "no comm.json"

# Every algorithm at every size, with a positive time.
# Every algorithm at every size, with positive times, 10 repetitions, and
# the bytes it sent on each shaped link.
for algo in $algos; do
	for bytes in 4096 16384; do
		grep -Eq "\"algo\": \"$algo\", \"bytes\": $bytes, \"time_us_median\": [0-9.]*[1-9][0-9.]*, \"time_us_p10\": [0-9.]*[1-9][0-9.]*, \"time_us_p90\": [0-9.]*[1-9][0-9.]*, \"reps\": 10," "$j" ||
			fail "no $algo result at $bytes bytes"
	done
	grep -Eq "\"$algo\": \{\"n0_up\": [0-9]+, \"n0_down\": [0-9]+, \"n1_up\": [0-9]+, \"n1_down\": [0-9]+, \"total\": [1-9][0-9]*\}" "$j" ||
		fail "no link bytes for $algo"
done
# Uncompressed results are bit-exact (the driver fails otherwise; here the
# report says so too), int8's error is reported and nonzero where it ran.
[ "$(grep -Ec '"algo": "mpi_.*"mismatches": 0,' "$j")" = 6 ] ||
	fail "not every MPI result (3 variants x 2 sizes) equals the exact sum"
grep -Eq '"algo": "isle_int8".*"rel_error": [0-9.e-]+' "$j" || fail "no rel_error for isle_int8"
for key in '"mpi_default": \[' '"mpi_rabenseifner": \[' '"mpi_han": \[' '"mpi_best": \[' \
	'"idle_cpu_pct": \{"mpi_default": [0-9.]+' '"convergence": \[' '"vs_mpi_best": [0-9.]*[1-9]'; do
	grep -Eq "$key" "$j" || fail "comm.json lacks $key"
done
for key in '"memcpy_gbps": [0-9.]*[1-9]' '"codec": "int8"' '"codec": "topk:0.01"' \
	'"nodes": 2' '"ranks_per_node": 4' '"qdisc": "tbf"'; do
	grep -Eq "$key" "$j" || fail "comm.json lacks $key"
done
# The probe and the allreduces crossed the shaped link.
shaped=$(sed -n 's/.*"shaped_bytes": \([0-9]*\).*/\1/p' "$j")
[ "${shaped:-0}" -gt 100000 ] || fail "only ${shaped:-0} bytes through the shaped uplinks"
# The ranks ran on two hosts (namespaces), four each.
grep -q "8 ranks" "$tmp/log" || fail "isle_comm did not see 8 ranks"
grep -q "node groups 4..4" "$tmp/log" || fail "ranks were not grouped 4 per node"
# The namespaces are gone again.
prefix=$(sed -n 's/^bench-comm: namespaces \(isle-bench-[0-9]*\)-\*$/\1/p' "$tmp/log")
[ -n "$prefix" ] || fail "bench-comm.sh did not name its namespaces"
ip netns list | grep -q "^$prefix-" && fail "namespaces $prefix-* left behind"
echo "45-comm-bench-netns: ok (shaped bytes $shaped)"
