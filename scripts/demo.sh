#!/bin/bash
# isle demo (`make demo`, as root): the path a job takes through isle, on a
# local test cluster of real Slurm daemons with fake GPUs.
#
#   1. a GB200-like machine room: racks of 4-GPU trays, one NVLink domain per
#      rack, rail-optimized InfiniBand leafs under an oversubscribed spine;
#      the fabric is read back by a real `ibnetdiscover` under ibsim;
#   2. `islectl build` turns the dump plus the admin's facts into isle.json;
#   3. slurmctld + one slurmd per tray, with topology/isle and spank_isle
#      (configured from slurm.conf.example and plugstack.conf.example);
#   4. plain sbatch: single-GPU jobs, a TP=4 inference job, a TP=8 PP=2
#      training job; isle's decisions (`scontrol show job`, `scontrol show
#      topology`) and a picture of the cluster with the jobs coloured;
#   5. the plan a training job's ranks got, then one MPI training step under
#      `srun --mpi=pmix` with the shim, against the flat baseline
#      (`--isle-shim=off`): comm time and bytes on the thin links;
#   6. teardown.
#
# usage: scripts/demo.sh [--quick]
#   (default) 4 racks x 4 trays: 16 slurmd, 64 GPUs, 64 MiB gradients;
#             about 3-4 minutes once Slurm is built
#   --quick   2 racks x 4 trays, shorter jobs and a smaller model (the test
#             tests/integration/60-demo-quick.sh runs this)
# Environment: ISLE_DEMO_OUT (default build/demo) keeps the cluster file,
#   the fabric dump and the picture; ISLE_KEEP=1 keeps the cluster's run dir.
#
# Each step is a function; main() lists them in order. A step whose tools
# are not built says so and the steps that need its output are skipped.
set -euo pipefail
# Under pipefail a reader that quits early (head) can kill the demo with
# SIGPIPE (exit 141) now and then: cut output with sed -n, which reads on.

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"

QUICK=0
case ${1:-} in
--quick) QUICK=1 ;;
"") ;;
*) sed -n '19,26p' "$0" >&2; exit 2 ;;
esac

if [ "$QUICK" = 1 ]; then
	RACKS=2 TRAYS=4 RACKS_PER_SU=1 UPLINKS=2 JOB_S=20 PARAMS=$((4 << 20)) STEPS=2 SINGLES=2
else
	RACKS=4 TRAYS=4 RACKS_PER_SU=2 UPLINKS=2 JOB_S=45 PARAMS=$((16 << 20)) STEPS=3 SINGLES=3
fi
GPUS=4 # per tray, one NIC (rail) each
NODES=$((RACKS * TRAYS))
OUT=${ISLE_DEMO_OUT:-$repo/build/demo}
BIN=$repo/build/bin
PLUGINS=$repo/build/slurm
SHIM=$repo/build/lib/libisle_preload.so
step_no=0
skipped=()
SUMMARY=() # lines repeated at the end: decisions, picture, comm table
T0=$(date +%s)

banner() {
	step_no=$((step_no + 1))
	printf '\n\033[1m== Step %d: %s\033[0m\n' "$step_no" "$*"
}

show() { # print a command, then run it
	printf '\033[36m$ %s\033[0m\n' "$*"
	"$@"
}

note() { printf '\033[33mdemo: %s\033[0m\n' "$*"; }

die() {
	echo "demo: $*" >&2
	[ -n "${ISLE_CLUSTER_DIR:-}" ] && isle_cluster_logs 20
	exit 1
}

# missing WHAT FILE...: 0 (and a note) if one of the files is not there.
missing() {
	local what=$1 f
	shift
	for f in "$@"; do
		if [ ! -e "$f" ]; then
			note "$what is not available ($f missing; run make): skipped"
			skipped+=("$what")
			return 0
		fi
	done
	return 1
}

step_check_host() {
	banner "check the host"
	[ "$(id -u)" = 0 ] || die "run as root (the demo starts slurmctld/slurmd and creates device nodes)"
	[ -x "$ISLE_SLURM_PREFIX/sbin/slurmctld" ] || die "Slurm missing in $ISLE_SLURM_PREFIX: run scripts/deps.sh (make demo does)"
	echo "Slurm: $("$ISLE_SLURM_PREFIX/sbin/slurmctld" -V) in $ISLE_SLURM_PREFIX"
	for f in "$BIN/islectl" "$BIN/isle-agent" "$PLUGINS/topology_isle.so" \
		"$PLUGINS/spank_isle.so" "$SHIM"; do
		printf '  %-44s %s\n' "${f#"$repo"/}" "$([ -e "$f" ] && echo built || echo MISSING)"
	done
	mkdir -p "$OUT"
	rm -f "$OUT"/cluster.png "$OUT"/jobs.txt
}

step_fabric() {
	banner "the machine room: $RACKS racks x $TRAYS trays x $GPUS GPUs, fabric read by ibnetdiscover under ibsim"
	show "$repo/scripts/demo-fabric.sh" --racks "$RACKS" --nodes "$TRAYS" --gpus "$GPUS" \
		--racks-per-su "$RACKS_PER_SU" --spines 2 --uplinks "$UPLINKS" "$OUT" >/dev/null
	echo "  $OUT/fabric.net: $(grep -c '^Switch' "$OUT/fabric.net") switches, $(grep -c '^Ca' "$OUT/fabric.net") HCAs (ibsim's input)"
	DUMP=$OUT/fabric.out
	rm -f "$DUMP"
	if "$repo/scripts/ibsim-discover.sh" "$OUT/fabric.net" "$DUMP"; then
		echo "  $DUMP: what ibnetdiscover saw ($(grep -c '^Switch' "$DUMP") switches, $(grep -c '^Ca' "$DUMP") CAs)"
		sed -n '/^Switch/,/^$/p' "$DUMP" | sed -n '1,8p' | sed 's/^/    /'
	else
		note "ibsim/ibnetdiscover not usable here: the net file itself (also ibnetdiscover's format) stands in for the dump"
		DUMP=$OUT/fabric.net
	fi
}

step_cluster_file() {
	banner "islectl build: the dump + what InfiniBand cannot see (racks, NVLink domains, GPUs)"
	CLUSTER=
	missing "islectl" "$BIN/islectl" && return 0
	echo "  $OUT/overrides.json, the admin's part:"
	{
		sed -n '1,4p' "$OUT/overrides.json"
		echo "   ... one entry per tray: its rack, its GPUs and the NIC beside each"
		sed -n '/"domains"/,$p' "$OUT/overrides.json"
	} | sed 's/^/    /'
	show "$BIN/islectl" build --ibnetdiscover "$DUMP" --overrides "$OUT/overrides.json" \
		--name gb200-demo -o "$OUT/isle.json" || die "islectl build failed"
	show "$BIN/islectl" validate "$OUT/isle.json" || die "the cluster file does not validate"
	echo "  (switches are named by the node description ibnetdiscover reports for them)"
	show "$BIN/islectl" show "$OUT/isle.json"
	CLUSTER=$OUT/isle.json
}

step_start_cluster() {
	banner "start slurmctld + $NODES slurmd ($GPUS fake GPUs each) with topology/isle and spank_isle"
	local extra topo=isle
	# slurm.conf: the scheduling lines of slurm.conf.example; the harness
	# writes the rest (one host, per-node ports, fake devices).
	extra=$(grep -E '^(TopologyPlugin|SelectType|SelectTypeParameters|SchedulerType|GresTypes|MpiDefault)=' \
		"$repo/slurm.conf.example")
	if [ -z "$CLUSTER" ] || missing "topology/isle" "$PLUGINS/topology_isle.so"; then
		note "without a cluster file or topology/isle, Slurm places the jobs itself"
		extra=$(echo "$extra" | grep -v '^TopologyPlugin=')
		topo=default
	fi
	echo "  from slurm.conf.example:"
	sed 's/^/    /' <<<"$extra"
	# plugstack.conf: the line of plugstack.conf.example, pointed at this
	# build; the run dirs go under the cluster's dir, one per node.
	PLUGSTACK=
	if ! missing "spank_isle" "$PLUGINS/spank_isle.so"; then
		PLUGSTACK=$OUT/plugstack.conf
		sed -n 's/^required [^ ]*spank_isle\.so/required '"${PLUGINS//\//\\/}"'\/spank_isle.so/p' \
			"$repo/slurm_plugin/plugstack.conf.example" | sed -n '1p' |
			sed -e 's/ \(shim\|agent\|rundir\|cluster\)=[^ ]*//g' >"$PLUGSTACK"
		sed -i "s|\$| shim=$SHIM agent=$BIN/isle-agent rundir=@DIR@/run/isle/%n|" "$PLUGSTACK"
		echo "  plugstack.conf (from slurm_plugin/plugstack.conf.example):"
		sed 's/^/    /' "$PLUGSTACK"
	fi
	isle_cluster_start --nodes "$NODES" --gpus "$GPUS" --topology "$topo" \
		${CLUSTER:+--etc-file "$CLUSTER"} ${PLUGSTACK:+--plugstack "$PLUGSTACK"} \
		--slurm-extra "$extra" || die "the cluster did not start"
	JOBS=$ISLE_CLUSTER_DIR/jobs
	echo "run dir: $ISLE_CLUSTER_DIR"
	show sinfo -o '%P %D %T %N %G'
}

# sbatch_job NAME ARGS...: submits, remembers the id in JOB_IDS.
sbatch_job() {
	local name=$1 id
	shift
	id=$(sbatch --parsable -J "$name" -o "$JOBS/$name.%j.out" "$@") || die "sbatch $name failed"
	printf '  submitted %-16s job %s\n' "$name" "$id"
	JOB_IDS+=("$id")
}

step_submit_mix() {
	banner "users submit with plain sbatch: $SINGLES single-GPU jobs, TP=4 inference, TP=8 PP=2 training"
	local i
	JOB_IDS=()
	# Without spank_isle, sbatch knows no --isle-* option: plain jobs.
	local tp8="--isle-tp=8 --isle-pp=2" tp4="--isle-tp=4"
	if [ -z "$PLUGSTACK" ]; then
		note "spank_isle is not loaded: the jobs go without --isle-* options"
		tp8="" tp4=""
	fi
	cat >"$JOBS/train.sh" <<EOT
#!/bin/bash
#SBATCH -N 4 --gpus-per-node=$GPUS --ntasks-per-node=$GPUS
${tp8:+#SBATCH $tp8}
srun sleep $JOB_S
EOT
	show cat "$JOBS/train.sh"
	for ((i = 1; i <= SINGLES; i++)); do
		sbatch_job "single-$i" -n1 --gpus=1 --wrap "sleep $JOB_S"
	done
	# shellcheck disable=SC2086 # $tp4 is empty or one option
	sbatch_job infer-tp4 -N1 --gpus-per-node="$GPUS" --ntasks-per-node="$GPUS" $tp4 \
		--wrap "srun sleep $JOB_S"
	sbatch_job train-tp8-pp2 "$JOBS/train.sh"
	TRAIN_JOB=${JOB_IDS[-1]}
	for _ in $(seq 60); do
		[ -z "$(squeue -h -t PD -j "$(IFS=,; echo "${JOB_IDS[*]}")" 2>/dev/null)" ] && break
		sleep 0.5
	done
	show squeue -o '%.5i %.14j %.8T %.6D %N'
}

step_decisions() {
	banner "isle's decisions: scontrol show job (AdminComment) and scontrol show topology"
	local j head dec
	echo "  topology/isle writes its decision into each job's AdminComment:"
	printf '\033[36m$ scontrol show job JOBID | grep AdminComment\033[0m\n'
	for j in "${JOB_IDS[@]}"; do
		head=$(scontrol -o show job "$j" | grep -o 'JobId=[0-9]* JobName=[^ ]*\|JobState=[A-Z]*\| NodeList=[^ ]*' |
			tr '\n' ' ' | sed 's/  */ /g')
		echo "  $head"
		dec=$(scontrol show job "$j" | grep -o 'AdminComment=.*' | sed 's/[[:space:]]*$//') || true
		if [ -n "$dec" ]; then
			echo "      $dec"
		else
			note "job $j has no isle: decision line (topology/isle not in use?)"
			dec="(no isle decision)"
		fi
		SUMMARY+=("  $(printf '%-22s' "$(sed 's/JobId=\([0-9]*\) JobName=\([^ ]*\).*/job \1 \2/' <<<"$head")") ${dec#AdminComment=}")
	done
	echo "  GPU indices granted to train-tp8-pp2, per node (scontrol -d show job $TRAIN_JOB):"
	scontrol -d show job "$TRAIN_JOB" | grep -E '^[[:space:]]+Nodes=.*GRES=' | sed 's/^[[:space:]]*/    /'
	show scontrol show topology
	if [ -x "$BIN/islectl" ]; then
		echo "  why the training job went there (the record stays after the job ends):"
		show "$BIN/islectl" explain "$TRAIN_JOB" 2>&1 | sed -n '1,30p'
	fi
}

step_picture() {
	banner "a picture of the cluster with the jobs coloured (islectl dot, Graphviz)"
	[ -n "$CLUSTER" ] || { note "no cluster file: no picture"; skipped+=("picture"); return 0; }
	squeue -h -t R -o '%i:%j %N' >"$OUT/jobs.txt"
	show "$BIN/islectl" dot --jobs "$OUT/jobs.txt" -o "$OUT/cluster.png" "$CLUSTER" ||
		{ note "islectl dot failed: no picture"; skipped+=("picture"); return 0; }
	echo "picture: $OUT/cluster.png"
	SUMMARY+=("" "  picture: $OUT/cluster.png")
}

step_plan() {
	banner "the plan the training job's ranks got (written by isle-agent at job start)"
	local node dir
	node=$(scontrol show hostnames "$(squeue -h -j "$TRAIN_JOB" -o %N)" | sed -n 1p)
	dir=$ISLE_CLUSTER_DIR/run/isle/$node/$TRAIN_JOB
	if [ -z "$node" ] || [ ! -r "$dir/plan.json" ]; then
		note "no plan for job $TRAIN_JOB on ${node:-?} (see its output and the slurmd log)"
		skipped+=("plan")
		return 0
	fi
	show ls -l "$dir"
	echo "  $dir/plan.json (ranks 0-1 of $(grep -c '"rank":' "$dir/plan.json"), levels):"
	grep -E '"rank": [01],|"name":' "$dir/plan.json" | sed 's/^ */    /'
	echo "  $dir/nccl.env:"
	grep -v '^#' "$dir/nccl.env" | sed 's/^/    /'
}

# One "demo-train: ..." line -> "ms thin inside error".
train_numbers() {
	sed -n 's/.*allreduce \([0-9.]*\) ms.*sent \([0-9.]*\) MiB on thin links, \([0-9.]*\) MiB inside.*error \([0-9.e+-]*\).*/\1 \2 \3 \4/p'
}

step_mpi() {
	banner "one MPI training step under srun --mpi=pmix: the isle shim vs the flat baseline"
	local a b job out shim_line flat_line
	command -v mpicc >/dev/null || { note "mpicc missing (libopenmpi-dev): skipped"; skipped+=("MPI step"); return 0; }
	echo "  cancelling the job mix to free the trays"
	scancel "${JOB_IDS[@]}"
	for j in "${JOB_IDS[@]}"; do isle_wait_job "$j" 60 >/dev/null || true; done
	mpicc -O2 -o "$OUT/demo-train" "$repo/scripts/demo-train.c" -lm || die "cannot build demo-train"
	# Two trays in different racks (NVLink domains): data parallelism
	# across the thin links, 4 ranks per tray.
	a=$(awk 'NR == 1 { print $2 }' "$OUT/layout.txt")
	b=$(awk 'END { print $2 }' "$OUT/layout.txt")
	local off=--isle-shim=off
	[ -n "$PLUGSTACK" ] || off=""
	[ -e "$SHIM" ] && [ -n "$PLUGSTACK" ] ||
		note "the shim or spank_isle is not available: both runs below are the flat baseline"
	cat >"$JOBS/dp-step.sh" <<EOT
#!/bin/bash
export OMPI_MCA_btl=self,tcp OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
echo "== isle shim (LD_PRELOAD and ISLE_PLAN set by spank_isle)"
ISLE_COMM_VERBOSE=1 srun --mpi=pmix $OUT/demo-train --domains $OUT/layout.txt --params $PARAMS --steps $STEPS
echo "== flat baseline (--isle-shim=off)"
srun --mpi=pmix $off $OUT/demo-train --domains $OUT/layout.txt --params $PARAMS --steps $STEPS
EOT
	show cat "$JOBS/dp-step.sh"
	job=$(sbatch --parsable -J dp-step -N2 -w "$a,$b" --gpus-per-node="$GPUS" \
		--ntasks-per-node="$GPUS" -o "$JOBS/dp-step.out" "$JOBS/dp-step.sh") || die "sbatch dp-step failed"
	isle_wait_job "$job" 300 >/dev/null || { cat "$JOBS/dp-step.out"; die "the MPI job $job failed"; }
	show cat "$JOBS/dp-step.out"
	out=$JOBS/dp-step.out
	shim_line=$(sed -n '/^== isle shim/,/^== flat/p' "$out" | grep '^demo-train:' | train_numbers)
	flat_line=$(sed -n '/^== flat/,$p' "$out" | grep '^demo-train:' | train_numbers)
	[ -n "$shim_line" ] && [ -n "$flat_line" ] || die "no demo-train result in $out"
	local table
	read -r t x i e <<<"$flat_line"
	read -r t2 x2 i2 e2 <<<"$shim_line"
	table=$(
		echo "  comm comparison: allreduce of $((PARAMS * 4 >> 20)) MiB of fp32 gradients, $STEPS steps," \
			"$((2 * GPUS)) ranks on 2 trays in 2 NVLink domains (MiB: all ranks, all steps)"
		printf '  %-26s %14s %18s %20s %10s\n' "" "allreduce ms" "thin links MiB" "inside domains MiB" "error"
		printf '  %-26s %14s %18s %20s %10s\n' "flat (--isle-shim=off)" "$t" "$x" "$i" "$e"
		printf '  %-26s %14s %18s %20s %10s\n' "isle shim" "$t2" "$x2" "$i2" "$e2"
		awk -v a="$x" -v b="$x2" -v t="$t" -v t2="$t2" 'BEGIN {
			if (b > 0) printf "  thin-link bytes: %.1fx fewer with the shim", a / b
			if (t2 > 0) printf "; allreduce time: %.2fx of the baseline", t2 / t
			print ""
			print "  (one host, loopback TCP: the bytes carry over to real links, the times do not)" }'
	)
	printf '\n%s\n' "$table"
	SUMMARY+=("" "$table")
}

step_teardown() {
	banner "tear down: cancel jobs, stop the daemons, remove the run dir"
	isle_cluster_stop
	echo "cluster stopped; kept: $OUT (isle.json, fabric.out$([ -e "$OUT/cluster.png" ] && echo ', cluster.png'))"
}

main() {
	step_check_host
	step_fabric
	step_cluster_file
	step_start_cluster
	step_submit_mix
	step_decisions
	step_picture
	step_plan
	step_mpi
	step_teardown
	printf '\n\033[1m== Summary\033[0m\n'
	echo "  isle's decisions (AdminComment of each job):"
	printf '%s\n' "${SUMMARY[@]}"
	echo "  wall time: $(($(date +%s) - T0)) s"
	if [ ${#skipped[@]} -gt 0 ]; then
		printf '\n\033[1mdemo finished; skipped (not built or not available): %s\033[0m\n' "${skipped[*]}"
	else
		printf '\n\033[1mdemo finished\033[0m\n'
	fi
}

main "$@"
