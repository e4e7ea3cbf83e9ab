#!/bin/bash
# bench-converge: Fashion-MNIST convergence under the shim's codecs
# (make bench-converge; also run by scripts/bench-comm.sh into comm.json).
#
# build/tests/train_mnist (784-256-10 MLP, ReLU, minibatch SGD with
# momentum) data-parallel over 8 ranks of local Open MPI, 2 emulated nodes
# of 4 ranks in the plan; gradients go through plain MPI_Allreduce and the
# preloaded shim (ISLE_COMM_ALGO=hier, so the codec is used at every size)
# compresses the network level: fp32 (no shim), bf16, int8, top-k 1% with
# error feedback, and top-k 1% without (the control). 3 seeds each.
#
# Usage: scripts/bench-converge.sh [--epochs E] [--train-n N] [--seeds "1 2 3"]
#                                  [--batch B] [--lr LR]
#                                  [--codecs "fp32 bf16 ..."] [--out FILE]
#   --train-n   training images used (default 12000 of 60000; 0 = all)
#   --batch     samples per rank and step (default 8; a loaded host pays per
#               step, so a larger batch is the cheaper short run)
#   --lr        learning rate (default 0.05)
#   --out       JSON lines, one per run (default build/bench/converge.json);
#               mean and spread per codec on stdout
# Exits 77 with a reason when Open MPI or the data set is missing.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
B=${B:-$here/build}
data=${ISLE_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
epochs=2
train_n=12000
seeds="1 2 3"
batch=8
lr=0.05
codecs="fp32 bf16 int8 topk:0.01 topk:0.01,noef"
out=$B/bench/converge.json

while [ $# -gt 0 ]; do
	case $1 in
	--epochs) epochs=$2; shift 2 ;;
	--train-n) train_n=$2; shift 2 ;;
	--seeds) seeds=$2; shift 2 ;;
	--batch) batch=$2; shift 2 ;;
	--lr) lr=$2; shift 2 ;;
	--codecs) codecs=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-converge: unknown option $1" >&2; exit 2 ;;
	esac
done

skip() {
	echo "bench-converge: SKIP: $*" >&2
	exit 77
}
# Open MPI's own launcher (the mpirun alternative may point to MPICH's), by
# name: an absolute path makes Open MPI pass --prefix to the launch agent.
MPIRUN=mpirun.openmpi
command -v $MPIRUN >/dev/null || MPIRUN=mpirun
command -v $MPIRUN >/dev/null || skip "Open MPI mpirun not installed"
[ -x "$B/tests/train_mnist" ] || skip "$B/tests/train_mnist not built"
[ -f "$B/lib/libisle_preload.so" ] || skip "$B/lib/libisle_preload.so not built"
[ -r "$data/train-images-idx3-ubyte.gz" ] || skip "$data: no Fashion-MNIST (apt-get install dataset-fashion-mnist)"

work=$(mktemp -d /tmp/isle-bench-converge.XXXXXX)
trap 'rm -rf "$work"' EXIT
plan=$work/plan.json
{
	echo '{"isle_plan": 1, "job_id": "bench-converge", "ranks": ['
	for r in 0 1 2 3 4 5 6 7; do
		printf '{"rank": %d, "node": "n%d", "island": "nvl%d", "leaf": "l0"}%s\n' \
			$r $((r / 4)) $((r / 4)) "$([ $r = 7 ] || echo ,)"
	done
	echo '], "levels": ['
	echo '{"name": "shm", "bw_gbps": 5, "lat_us": 2, "codec": "none"},'
	echo '{"name": "net", "bw_gbps": 0.03, "lat_us": 50, "codec": "none"}'
	echo ']}'
} >"$plan"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1
mkdir -p "$(dirname "$out")"
: >"$out"
for codec in $codecs; do
	for seed in $seeds; do
		shim=(-x LD_PRELOAD="$B/lib/libisle_preload.so" -x ISLE_PLAN="$plan"
			-x ISLE_COMM_ALGO=hier -x ISLE_COMM_CODEC="$codec" -x ISLE_COMM_VERBOSE=1)
		[ "$codec" = fp32 ] && shim=()
		echo "bench-converge: $codec seed $seed" >&2
		"$MPIRUN" -np 8 "${shim[@]}" "$B/tests/train_mnist" --data "$data" \
			--epochs "$epochs" --seed "$seed" --train-n "$train_n" \
			--batch "$batch" --lr "$lr" --label "$codec" >"$work/run.out" 2>&1 ||
			{ tail -20 "$work/run.out" >&2; exit 1; }
		# The shim must have carried the gradients with that codec.
		if [ "$codec" != fp32 ] && ! grep -q "^isle_comm: 8 ranks.*net\[.*${codec%%,*}" "$work/run.out"; then
			echo "bench-converge: $codec: the shim did not engage" >&2
			tail -5 "$work/run.out" >&2
			exit 1
		fi
		grep '^{"codec"' "$work/run.out" | tee -a "$out" >&2
	done
done

# Mean and spread (min..max over seeds) per codec.
awk '
	function field(k,   r) {
		if (!match($0, "\"" k "\": (\"[^\"]*|[^,}]*)")) return ""
		r = substr($0, RSTART, RLENGTH); sub(/^"[^"]*": /, "", r); gsub(/"/, "", r); return r
	}
	/^\{"codec"/ {
		c = field("codec"); a = field("test_acc") + 0; l = field("train_loss") + 0
		if (!(c in n)) { order[++m] = c; amin[c] = amax[c] = a }
		n[c]++; sa[c] += a; sl[c] += l
		if (a < amin[c]) amin[c] = a
		if (a > amax[c]) amax[c] = a
	}
	END {
		printf "%-16s %5s %26s %10s\n", "codec", "seeds", "test_acc mean (min..max)", "loss mean"
		for (j = 1; j <= m; j++) { c = order[j]
			printf "%-16s %5d %8.4f (%.4f..%.4f) %10.4f\n", c, n[c], sa[c] / n[c], amin[c], amax[c], sl[c] / n[c] }
	}' "$out"
