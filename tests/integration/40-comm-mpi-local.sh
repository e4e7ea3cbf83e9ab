#!/bin/bash
# comm_shim under local Open MPI (mpirun, shared memory): the PMPI shim
# libisle_preload.so (-> libisle_mpi_ompi.so) preloaded into build/tests/comm_mpi_check.
#   exactness: codec none bit-identical to MPI_Allreduce on integer-valued
#              floats (real values within 2*p*eps), 2..16 ranks, unequal
#              ranks per node through plan files, sizes 1..2^26, in place,
#              MPI_Iallreduce (+fusion), a sub-communicator, all algorithms,
#              the pipelined hierarchy (tiny segments);
#   codecs:    error bounds under MPI, ranks bit-identical;
#   training:  8-rank softmax regression, int8 and topk:0.01 (error feedback)
#              within 1% of fp32, top-k without error feedback worse;
#   failure:   a hung or exiting rank ends the job with a clear error, and a
#              bad plan fails at init naming the file and the field.
set -u
# shellcheck source=comm_shim/testlib.sh
source "$(dirname "$0")/../../comm_shim/testlib.sh"
isle_comm_local_setup comm
# make test SANITIZE=1 ($B/.build-flags): the sanitized shim ($B/asan/lib)
# behind the ASan runtime, which must be the first library loaded.
PRELOAD=$SHIM san=()
if grep -qx SANITIZE=1 "$B/.build-flags" 2>/dev/null; then
	[ -f "$B/asan/lib/libisle_preload.so" ] || { echo "FAIL: no $B/asan/lib/libisle_preload.so (make SANITIZE=1)"; exit 1; }
	PRELOAD=$(gcc -print-file-name=libasan.so):$PWD/$B/asan/lib/libisle_preload.so
	san=(-x LSAN_OPTIONS="${LSAN_OPTIONS:-}")
	echo "shim under ASan: $PRELOAD"
fi
fails=0

# plan NAME "N:leaf N:leaf ..." CODEC1 CODEC2: ranks per node (one island
# per node), 3 levels (island / leaf / job) or 2 when CODEC2 is "-".
plan() {
	local name=$1 layout=$2 c1=$3 c2=$4 r=0 node=0 sep="" n leaf g
	{
		echo '{"isle_plan": 1, "job_id": "t40", "ranks": ['
		for nl in $layout; do
			n=${nl%%:*} leaf=${nl#*:}
			for ((g = 0; g < n; g++)); do
				printf '%s{"rank": %d, "node": "n%02d", "gpu": %d, "island": "nvl%d", "leaf": "%s"}\n' \
					"$sep" $r $node $g $node "$leaf"
				sep=, r=$((r + 1))
			done
			node=$((node + 1))
		done
		echo '], "levels": ['
		echo '{"name": "nvlink", "bw_gbps": 100, "lat_us": 1, "codec": "none"},'
		if [ "$c2" = - ]; then
			echo "{\"name\": \"net\", \"bw_gbps\": 1, \"lat_us\": 20, \"codec\": \"$c1\"}"
		else
			echo "{\"name\": \"leaf\", \"bw_gbps\": 10, \"lat_us\": 5, \"codec\": \"$c1\"},"
			echo "{\"name\": \"spine\", \"bw_gbps\": 2, \"lat_us\": 10, \"codec\": \"$c2\"}"
		fi
		echo ']}'
	} >"$T/$name.json"
}

# run NP [VAR=VALUE...] -- ARGS: mpirun with the shim, output in $T/out.
run() {
	local np=$1 env=()
	shift
	while [ "$1" != -- ]; do env+=(-x "$1"); shift; done
	shift
	timeout 170 mpirun -np "$np" -x LD_PRELOAD="$PRELOAD" -x ISLE_COMM_TIMEOUT_S=30 \
		"${san[@]}" "${env[@]}" "$CHECK" "$@" >"$T/out" 2>&1
}

expect_pass() { # what NP ENV... -- ARGS
	local what=$1
	shift
	if run "$@" && grep -q '^exact: PASS' "$T/out"; then
		echo "ok   $what"
	else
		echo "FAIL $what"
		grep -E 'FAIL|rror|isle_comm' "$T/out" | head -20
		fails=$((fails + 1))
	fi
}

plan p7 "3:l0 2:l0 2:l1" none none     # unequal ranks per node, 3 levels
plan p16 "5:l0 3:l0 4:l1 4:l1" none none
plan p8 "4:l0 4:l0" none -
plan p4one "4:l0" none - # one node: the top level's groups are single ranks
SIZES=1,2,3,7,64,1000,4099,65537,1048577

# --- exactness (codec none)
expect_pass "exact 7 ranks 3 levels unequal, algo auto" 7 \
	ISLE_PLAN="$T/p7.json" -- exact --sizes $SIZES --async 8 --subcomm
for algo in hier ring rdoubling leader; do
	expect_pass "exact 7 ranks 3 levels unequal, algo $algo" 7 \
		ISLE_PLAN="$T/p7.json" ISLE_COMM_ALGO=$algo -- \
		exact --sizes 1,7,4099,65537 --async 3
done
# Pipelined hierarchy: 4 KiB segments, so that most sizes run many of them.
expect_pass "exact 7 ranks 3 levels unequal, pipelined" 7 \
	ISLE_PLAN="$T/p7.json" ISLE_COMM_ALGO=hier ISLE_COMM_SEGMENT_BYTES=4K -- \
	exact --sizes 1,7,4099,65537 --async 3
expect_pass "exact 8 ranks 2 levels, pipelined" 8 ISLE_PLAN="$T/p8.json" \
	ISLE_COMM_ALGO=hier ISLE_COMM_SEGMENT_BYTES=4K -- \
	exact --sizes 1,4099,1048577 --async 3
expect_pass "exact 7 ranks real values" 7 ISLE_PLAN="$T/p7.json" -- \
	exact --sizes $SIZES --values real
expect_pass "exact 16 ranks 5+3+4+4" 16 ISLE_PLAN="$T/p16.json" ISLE_COMM_ALGO=hier -- \
	exact --sizes 1,17,100003 --async 4
expect_pass "exact 16 ranks 5+3+4+4, algo leader" 16 ISLE_PLAN="$T/p16.json" ISLE_COMM_ALGO=leader -- \
	exact --sizes 1,17,100003 --async 4
expect_pass "exact 4 ranks one node, algo leader" 4 ISLE_PLAN="$T/p4one.json" ISLE_COMM_ALGO=leader -- \
	exact --sizes 1,17,4099 --async 2
expect_pass "exact 3 ranks, no plan (host names)" 3 -- exact --sizes 1,5,300001
expect_pass "exact 4 ranks, small ones passed to MPI (MIN_BYTES)" 4 \
	ISLE_COMM_MIN_BYTES=1K -- exact --sizes 1,999,70001 --async 12
expect_pass "exact 2 ranks 2^26 floats" 2 ISLE_COMM_ALGO=ring -- \
	exact --sizes 67108864 --dtype float

# --- the helper thread runs for a program that called plain MPI_Init: the
# shim asks for MPI_THREAD_MULTIPLE, and the probe's MPI_T session must not
# lower it (Open MPI 4.1's MPI_T_init_thread sets the process's level), or
# every MPI_Iallreduce silently passes through. After the probe (share 0:
# at the first call) the helper's calls stay exact.
if run 4 ISLE_COMM_VERBOSE=1 ISLE_COMM_PROBE_SHARE=0 -- exact --sizes 1,7,4099,65537 --async 4 &&
	grep -q '^exact: PASS' "$T/out" &&
	grep -q '^isle_comm: 4 ranks, .*, async helper, ' "$T/out"; then
	echo "ok   helper thread after MPI_Init and the probe: $(grep -m1 '^isle_comm: 4 ranks, ' "$T/out" | sed 's/^isle_comm: //')"
else
	echo "FAIL helper thread: not started after MPI_Init (or the run failed)"
	grep -E 'FAIL|rror|isle_comm' "$T/out" | head -10
	fails=$((fails + 1))
fi

# --- the crossover probe runs once, at the first float or double sum of a
# communicator once it is due; unbounded (ISLE_COMM_PROBE_SHARE=0), that
# is the first call, whatever its size. Its picks (ISLE_COMM_VERBOSE=2:
# every rank's line) are the same on all 8 ranks, and the calls after it
# stay exact whoever runs them (the library's algorithms included).
probe_lines() { grep -c '^isle_comm: 8 ranks: crossover probed' "$T/out"; }
picks_agree() { # all 8 ranks print the same picks, rank 0's line among them
	local n u
	n=$(grep -c '^isle_comm: rank [0-7] of 8, probed ' "$T/out")
	u=$(sed -n 's/^isle_comm: rank [0-7] of 8, probed /probed /p' "$T/out" | sort -u | wc -l)
	[ "$n" = 8 ] && [ "$u" = 1 ] &&
		grep -q "$(sed -n 's/^isle_comm: rank 0 of 8, probed /probed /p' "$T/out")" <(grep 'crossover probed' "$T/out")
}
if run 8 ISLE_PLAN="$T/p8.json" ISLE_COMM_VERBOSE=2 ISLE_COMM_PROBE_SHARE=0 -- exact --sizes 1,32,2097152 \
	--dtype float && grep -q '^exact: PASS' "$T/out" && [ "$(probe_lines)" = 1 ] &&
	grep -q '^isle_comm: 8 ranks: crossover probed at the first allreduce of 4 bytes' "$T/out" && picks_agree; then
	echo "ok   one crossover probe, at the first call, the same picks on all ranks: $(grep -m1 'crossover probed' "$T/out" | sed 's/^isle_comm: //')"
else
	echo "FAIL crossover probe at the first call ($(probe_lines) probe lines)"
	grep -E 'FAIL|rror|isle_comm' "$T/out" | head -12
	fails=$((fails + 1))
fi
if run 8 ISLE_PLAN="$T/p8.json" ISLE_COMM_VERBOSE=2 ISLE_COMM_PROBE_SHARE=0 -- exact --sizes 1,4099,65537,1048577 \
	--dtype double --async 4 && grep -q '^exact: PASS' "$T/out" && [ "$(probe_lines)" = 1 ] && picks_agree; then
	echo "ok   one crossover probe, doubles and MPI_Iallreduce beside it, the same picks on all ranks"
else
	echo "FAIL crossover probe with doubles and MPI_Iallreduce ($(probe_lines) probe lines)"
	grep -E 'FAIL|rror|isle_comm' "$T/out" | head -12
	fails=$((fails + 1))
fi
# --- bounded (default 1%): the same calls carry far less than 100 times
# the probe's payload, so no probe; with a share of 1, 70 calls of 1 MiB
# earn it (58 MB), at a later call, its payload at most what was carried.
if run 8 ISLE_PLAN="$T/p8.json" ISLE_COMM_VERBOSE=1 -- exact --sizes 1,4099,65537,1048577 \
	--dtype float --async 4 && grep -q '^exact: PASS' "$T/out" && [ "$(probe_lines)" = 0 ]; then
	echo "ok   no crossover probe within 1% of what the calls carried"
else
	echo "FAIL crossover probe beyond 1% of what the calls carried ($(probe_lines) probe lines)"
	grep -E 'FAIL|rror|isle_comm' "$T/out" | head -10
	fails=$((fails + 1))
fi
line=""
if run 8 ISLE_PLAN="$T/p8.json" ISLE_COMM_VERBOSE=1 ISLE_COMM_PROBE_SHARE=1 -- exact --sizes 262144 \
	--dtype float --iters 70 && grep -q '^exact: PASS' "$T/out" && [ "$(probe_lines)" = 1 ]; then
	line=$(grep -m1 'crossover probed' "$T/out")
fi
carried=$(sed -n 's/.*probed at an allreduce of 1048576 bytes (\([0-9]*\) bytes carried, probe \([0-9]*\)).*/\1/p' <<<"$line")
cost=$(sed -n 's/.*probed at an allreduce of 1048576 bytes (\([0-9]*\) bytes carried, probe \([0-9]*\)).*/\2/p' <<<"$line")
if [ -n "$carried" ] && [ -n "$cost" ] && [ "$cost" -gt 0 ] && [ "$cost" -le "$carried" ] &&
	[ "$cost" -gt $((carried - 1048576)) ]; then
	echo "ok   probe at a share of 1: at the first call where it is at most what was carried: ${line#isle_comm: }"
else
	echo "FAIL probe at a share of 1 (carried '$carried', probe '$cost'): $line"
	grep -E 'FAIL|rror|isle_comm' "$T/out" | head -10
	fails=$((fails + 1))
fi

# --- codecs on the network levels: error bounds, ranks identical
for spec in "fp16 0.002" "bf16 0.02" "int8:64 0.01" "topk:0.05 1e30"; do
	set -- $spec
	expect_pass "codec $1 (tol $2 of the max)" 7 ISLE_PLAN="$T/p7.json" \
		ISLE_COMM_ALGO=hier ISLE_COMM_CODEC=$1 -- \
		exact --sizes 7,65537 --dtype float --values real --tol $2 \
		--tol-mode max --async 4
	expect_pass "codec $1 pipelined (tol $2 of the max)" 8 \
		ISLE_PLAN="$T/p8.json" ISLE_COMM_ALGO=hier ISLE_COMM_CODEC=$1 \
		ISLE_COMM_SEGMENT_BYTES=4K -- \
		exact --sizes 7,65537 --dtype float --values real --tol $2 \
		--tol-mode max --async 4
done

# --- convergence
train() { # codec [VAR=VALUE] -> final loss on stdout
	run 8 ISLE_PLAN="$T/p8.json" ISLE_COMM_ALGO=hier ISLE_COMM_CODEC="$1" \
		${2:+"$2"} -- \
		train --steps 400 --dim 64 --classes 16 --samples 100 --lr 1 &&
		sed -n 's/^final_loss //p' "$T/out"
}
l_fp32=$(train none) l_int8=$(train int8) l_topk=$(train topk:0.01) l_noef=$(train topk:0.01,noef)
# 1040 parameters in 1 KiB segments: error feedback across the pipeline.
l_pipe=$(train topk:0.01 ISLE_COMM_SEGMENT_BYTES=1K)
echo "train: fp32 $l_fp32 int8 $l_int8 topk:0.01 $l_topk topk:0.01,noef $l_noef topk:0.01,pipelined $l_pipe"
if awk -v a="$l_fp32" -v i="$l_int8" -v t="$l_topk" -v n="$l_noef" -v q="$l_pipe" 'BEGIN {
	if (a == "" || i == "" || t == "" || n == "" || q == "") exit 1
	gi = (i - a) / a; gt = (t - a) / a; gn = (n - a) / a; gq = (q - a) / a
	printf "train: gaps int8 %.4f topk %.4f topk-noef %.4f topk-pipelined %.4f\n", gi, gt, gn, gq
	exit !(gi < 0.01 && gt < 0.01 && gq < 0.01 && gn > 0.01 && gn > 2 * gt) }'; then
	echo "ok   convergence"
else
	echo "FAIL convergence"
	fails=$((fails + 1))
fi

# --- momentum correction (mom=0.9) takes effect, across nodes and in groups
# of one: plain SGD at lr 0.1 with the shim's momentum trains as heavy-ball
# momentum, so it must end clearly below top-k without it at the same lr.
train_lr() { # NP PLAN CODEC LR -> final loss
	run "$1" ISLE_PLAN="$T/$2.json" ISLE_COMM_ALGO=hier ISLE_COMM_CODEC="$3" -- \
		train --steps 400 --dim 64 --classes 16 --samples 100 --lr "$4" &&
		sed -n 's/^final_loss //p' "$T/out"
}
for pc in 8:p8 4:p4one; do
	np=${pc%%:*} pl=${pc#*:}
	l_plain=$(train_lr "$np" "$pl" topk:0.01 0.1) l_mom=$(train_lr "$np" "$pl" topk:0.01,mom=0.9 0.1)
	if awk -v a="$l_plain" -v m="$l_mom" 'BEGIN { exit !(a != "" && m != "" && m + 0 == m && m < 0.9 * a) }'; then
		echo "ok   momentum correction on $pl: lr 0.1 final loss $l_mom with mom=0.9, $l_plain without"
	else
		echo "FAIL momentum correction on $pl: final loss '$l_mom' with mom=0.9, '$l_plain' without (want < 0.9x)"
		fails=$((fails + 1))
	fi
done

# --- failure (the shim's own algorithm: auto hands small messages to MPI,
# whose allreduce has no deadline)
for how in hang exit; do
	start=$(date +%s)
	run 4 ISLE_COMM_TIMEOUT_S=3 ISLE_COMM_ALGO=ring -- fail --rank 2 --how $how
	rc=$? dur=$(($(date +%s) - start))
	if [ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $dur -lt 60 ] &&
		{ [ $how = exit ] || grep -q 'timed out after 3 s waiting for rank' "$T/out"; }; then
		echo "ok   failure: rank $how -> rc $rc in ${dur}s"
	else
		echo "FAIL failure: rank $how -> rc $rc in ${dur}s"
		tail -20 "$T/out"
		fails=$((fails + 1))
	fi
done
sed 's/"leaf": "l1"}/"leaf": 7}/' "$T/p7.json" >"$T/bad.json"
run 2 ISLE_PLAN="$T/bad.json" -- exact --sizes 1
if [ $? -ne 0 ] && grep -q "bad.json: \$.ranks\[5\].leaf: expected a string" "$T/out"; then
	echo "ok   bad plan fails at init naming the field"
else
	echo "FAIL bad plan"
	tail -20 "$T/out"
	fails=$((fails + 1))
fi

[ $fails -eq 0 ] || { echo "40-comm-mpi-local: $fails failed"; exit 1; }
exit 0
