#!/bin/bash
# bench-converge: Fashion-MNIST convergence under the shim's codecs
# (make bench-converge; also run by scripts/bench-comm.sh into comm.json).
#
# build/tests/train_mnist (784-256-10 MLP, ReLU, minibatch SGD with
# momentum) data-parallel over 8 ranks: a test cluster of 2 nodes x 4 GPUs
# (tests/cluster), one sbatch job per codec with the SPANK plugin's options
# (--isle-tp=4 --isle-compress=CODEC), every seed a `srun --mpi=pmix` step.
# Gradients go through plain MPI_Allreduce; the injected shim
# (ISLE_COMM_ALGO=hier, so the codec carries every gradient) compresses the
# network level: fp32 (ISLE_COMM_DISABLE=1: Open MPI alone), bf16, int8,
# top-k 1% with error feedback, top-k 1% with momentum correction
# (topk:0.01,mom=0.9), and top-k 1% without error feedback (the control).
# The --sgd-codecs run again with momentum 0 (plain SGD), labelled
# CODEC/sgd: error feedback hands back its delayed mass in bursts, which the
# optimizer's momentum, applied after the allreduce, amplifies. A codec with
# mom= carries the momentum itself, so its optimizer always runs plain SGD
# (momentum 0 in its result line) under the codec's own label.
#
# Usage: scripts/bench-converge.sh [--epochs E] [--train-n N] [--seeds "1 2 3"]
#                                  [--batch B] [--lr LR]
#                                  [--codecs "fp32 bf16 ..."]
#                                  [--sgd-codecs "fp32 ..."] [--out FILE]
#                                  [--summary FILE]
#   --epochs    passes over the training images (default 2)
#   --train-n   training images used (default 0 = all 60,000)
#   --batch     samples per rank and step (default 32)
#   --lr        learning rate (default 0.05; momentum 0.9)
#   --out       JSON lines, one per run (default build/bench/converge.json);
#               mean and spread per codec on stdout
#   --summary   also one JSON object: the runs, and per codec the median,
#               min and max of test_acc and train_loss over the seeds
# Exits 77 with a reason when Slurm, Open MPI or the data set is missing,
# 1 when a run failed or the shim did not carry its gradients.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
# First: it runs the script again in a private mount namespace, with its
# arguments.
# shellcheck source=tests/cluster/cluster.sh
source "$here/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$here/slurm_plugin/testlib.sh"
B=${B:-$here/build}
data=${ISLE_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}
epochs=2
train_n=0
seeds="1 2 3"
batch=32
lr=0.05
codecs="fp32 bf16 int8 topk:0.01 topk:0.01,mom=0.9 topk:0.01,noef"
sgd_codecs="fp32 topk:0.01 topk:0.01,noef"
out=$B/bench/converge.json
summary=""

while [ $# -gt 0 ]; do
	case $1 in
	--epochs) epochs=$2; shift 2 ;;
	--train-n) train_n=$2; shift 2 ;;
	--seeds) seeds=$2; shift 2 ;;
	--batch) batch=$2; shift 2 ;;
	--lr) lr=$2; shift 2 ;;
	--codecs) codecs=$2; shift 2 ;;
	--sgd-codecs) sgd_codecs=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--summary) summary=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-converge: unknown option $1" >&2; exit 2 ;;
	esac
done

skip() {
	echo "bench-converge: SKIP: $*" >&2
	exit 77
}
command -v mpicc.openmpi >/dev/null || command -v mpicc >/dev/null ||
	skip "no Open MPI compiler (mpicc): train_mnist is not made here (libopenmpi-dev)"
for f in "$B/tests/train_mnist" "$B/lib/libisle_preload.so" "$B/lib/libisle_mpi_ompi.so" \
	"$B/bin/isle-agent" "$B/slurm/spank_isle.so"; do
	[ -e "$f" ] || { echo "bench-converge: FAIL: $f not built (make)" >&2; exit 1; }
done
[ -r "$data/train-images-idx3-ubyte.gz" ] || skip "$data: no Fashion-MNIST (apt-get install dataset-fashion-mnist)"
(isle_cluster_require) >/dev/null || skip "cannot run a test cluster here (tests/cluster)"
[ -e "$ISLE_SLURM_PREFIX/lib/slurm/mpi_pmix.so" ] || skip "Slurm without mpi_pmix.so"

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-bench-converge.XXXXXX")
chmod 0755 "$work"
trap 'isle_cluster_stop >/dev/null 2>&1; rm -rf "$work"' EXIT
mkdir -p "$work/shim"
cp "$B/lib/libisle_preload.so" "$B/lib/libisle_mpi_ompi.so" "$work/shim/"
isle_pt_leaf "$work/isle.json" conv 2 4
echo "required $B/slurm/spank_isle.so agent=$B/bin/isle-agent cluster=@ETC@/isle.json rundir=@DIR@/run/isle/%n shim=$work/shim/libisle_preload.so" \
	>"$work/plugstack.conf"
isle_cluster_start --nodes 2 --gpus 4 --plugstack "$work/plugstack.conf" \
	--etc-file "$work/isle.json" >&2 || { echo "bench-converge: test cluster did not start" >&2; exit 1; }
jobs=$ISLE_CLUSTER_DIR/jobs

mkdir -p "$(dirname "$out")"
: >"$out"
# shellcheck source=bench/stamp.sh
source "$here/bench/stamp.sh"
isle_bench_begin
fail=0
runs=""
for c in $codecs; do
	case $c in
	*mom=*) runs+=" $c@shim" ;;
	*) runs+=" $c@0.9" ;;
	esac
done
for c in $sgd_codecs; do runs+=" $c@0"; done
for run in $runs; do
	codec=${run%@*} mom=${run#*@} label=$codec
	[ "$mom" = 0 ] && label=$codec/sgd
	[ "$mom" = shim ] && mom=0 # the codec's momentum, not the optimizer's
	name=${label//[:,\/]/_}
	opts=(--isle-compress="$codec")
	envs="ISLE_COMM_ALGO=hier ISLE_COMM_VERBOSE=1"
	[ "$codec" = fp32 ] && opts=() envs="ISLE_COMM_DISABLE=1"
	cat >"$jobs/$name.sh" <<EOF
#!/bin/bash
export ISLE_COMM_TIMEOUT_S=300 $envs
# Open MPI between test nodes: TCP over lo; busy ranks yield on 2 cores.
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export OMPI_MCA_mpi_yield_when_idle=1
for seed in $seeds; do
	# a launch or Open MPI's TCP wire-up failing before any rank trained
	# (41-comm-srun-pmix.sh) is launched again
	for try in 1 2 3; do
		srun --mpi=pmix --kill-on-bad-exit=1 $B/tests/train_mnist --data $data \\
			--epochs $epochs --seed \$seed --train-n $train_n --batch $batch \\
			--lr $lr --momentum $mom --label $label >$jobs/$name.\$seed.out 2>&1 && break
		grep -Eq '^(isle_comm: [0-9]|\\{)' $jobs/$name.\$seed.out && break
		grep -Eq 'launch failed|TCP connect|Segmentation fault' $jobs/$name.\$seed.out || break
	done
done
EOF
	chmod +x "$jobs/$name.sh"
	echo "bench-converge: $label (momentum $mom), seeds $seeds" >&2
	id=$(sbatch --parsable -N2 --gpus-per-node=4 --ntasks-per-node=4 --isle-tp=4 "${opts[@]}" \
		--chdir="$jobs" -o "$jobs/$name.job.out" -e "$jobs/$name.job.err" "$jobs/$name.sh") ||
		{ echo "bench-converge: sbatch failed for $codec" >&2; fail=1; continue; }
	isle_wait_job "$id" 7200 >/dev/null || { echo "bench-converge: $codec: job $id did not complete" >&2; fail=1; }
	for seed in $seeds; do
		o=$jobs/$name.$seed.out
		line=$(grep -m1 '^{"codec"' "$o" 2>/dev/null || true)
		# the shim must have carried the gradients with that codec
		if [ -z "$line" ] || { [ "$codec" != fp32 ] &&
			! grep '^isle_comm: 8 ranks, plan ' "$o" | grep -qE ", $codec(:[0-9]+)?\]"; }; then
			echo "bench-converge: $codec seed $seed: no result or the shim did not engage" >&2
			tail -5 "$o" >&2 2>/dev/null || true
			fail=1
			continue
		fi
		echo "$line" | tee -a "$out" >&2
	done
done
[ -s "$out" ] && isle_bench_stamp "$out"
if [ -n "$summary" ] && [ -s "$out" ]; then
	mkdir -p "$(dirname "$summary")"
	jq -s '
		def med: sort | if length % 2 == 1 then .[length / 2 | floor]
			else (.[length / 2 - 1] + .[length / 2]) / 2 end;
		{bench: "converge", runs: .,
		 summary: (group_by(.codec) | map({codec: .[0].codec,
			momentum: .[0].momentum, seeds: length,
			test_acc_median: (map(.test_acc) | med),
			test_acc_min: (map(.test_acc) | min),
			test_acc_max: (map(.test_acc) | max),
			train_loss_median: (map(.train_loss) | med),
			train_loss_min: (map(.train_loss) | min),
			train_loss_max: (map(.train_loss) | max)}))}' "$out" >"$summary"
	isle_bench_stamp "$summary"
fi

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
exit $fail
