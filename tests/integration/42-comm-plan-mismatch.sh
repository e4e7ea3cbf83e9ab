#!/bin/bash
# comm_shim: ranks that hold different plans (nodes whose plans were
# written from different GPU sets) must not deadlock. Two ranks get a plan
# where each node is one NVLink island, the two others a plan where every
# GPU is its own island. All four see the plans differ in one collective at
# init, fall back to plain MPI together, say so once, and sums are exact;
# with the same plan everywhere the shim's own algorithms run.
set -u
# shellcheck source=comm_shim/testlib.sh
source "$(dirname "$0")/../../comm_shim/testlib.sh"
isle_comm_local_setup comm42
fails=0

# plan NAME G0 G1 ISLAND: 2 nodes x 2 GPUs; ISLAND "node" (NVLink pair) or
# "gpu" (each GPU alone: the pair crosses PCIe).
plan() {
	local name=$1 g0=$2 g1=$3 isl=$4 r=0 sep="" island
	{
		echo '{"isle_plan": 1, "job_id": "t42", "ranks": ['
		for node in 0 1; do
			for g in $g0 $g1; do
				island=nvl$node
				[ "$isl" = gpu ] && island=n${node}g$g
				printf '%s{"rank": %d, "node": "n%d", "gpu": %d, "island": "%s", "leaf": "l0"}\n' \
					"$sep" $r $node $g "$island"
				sep=, r=$((r + 1))
			done
		done
		echo '], "levels": ['
		echo '{"name": "nvlink", "bw_gbps": 100, "lat_us": 1, "codec": "none"},'
		echo '{"name": "net", "bw_gbps": 1, "lat_us": 20, "codec": "none"}'
		echo ']}'
	} >"$T/$name.json"
}
plan pair 0 1 node
plan pcie 1 2 gpu

# mpmd PLAN_A PLAN_B ARGS...: ranks 0-1 read PLAN_A, ranks 2-3 PLAN_B
# (mpirun's -x options belong to one application context each).
mpmd() {
	local a=$1 b=$2 env=(-x LD_PRELOAD="$SHIM" -x ISLE_COMM_TIMEOUT_S=30
		-x ISLE_COMM_VERBOSE=1 -x ISLE_COMM_ALGO=hier)
	shift 2
	timeout 170 mpirun \
		-np 2 "${env[@]}" -x ISLE_PLAN="$T/$a.json" "$CHECK" "$@" : \
		-np 2 "${env[@]}" -x ISLE_PLAN="$T/$b.json" "$CHECK" "$@" \
		>"$T/out" 2>&1
}

SIZES=1,7,4099,16384,65537,1048577
mpmd pair pcie exact --sizes $SIZES --async 4 --subcomm
rc=$?
said=$(grep -c 'the ranks hold different plans' "$T/out")
if [ $rc -eq 0 ] && grep -q '^exact: PASS' "$T/out" && [ "$said" -eq 1 ] &&
	grep -q "plans differ: plain MPI" "$T/out"; then
	echo "ok   different plans: plain MPI on every rank, said once"
else
	echo "FAIL different plans: rc $rc, said $said times"
	grep -E 'FAIL|rror|isle_comm' "$T/out" | head -20
	fails=$((fails + 1))
fi

mpmd pair pair exact --sizes $SIZES --async 4
rc=$?
if [ $rc -eq 0 ] && grep -q '^exact: PASS' "$T/out" &&
	! grep -q 'different plans' "$T/out" &&
	grep -q "plan $T/pair.json, codecs" "$T/out"; then
	echo "ok   same plan: the shim's algorithms"
else
	echo "FAIL same plan: rc $rc"
	grep -E 'FAIL|rror|isle_comm' "$T/out" | head -20
	fails=$((fails + 1))
fi

[ $fails -eq 0 ] || { echo "42-comm-plan-mismatch: $fails failed"; exit 1; }
exit 0
