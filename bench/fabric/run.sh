#!/bin/bash
# bench/fabric/run.sh: real Slurm placing real MPI jobs on an emulated fabric
# (make bench-fabric). For each cluster shape, configuration and seed: a test
# cluster on the shape's emulated fabric (isle_cluster_start --fabric), one
# job trace submitted with plain sbatch, every job's step records, the
# kernel's per-cable byte counters, CPU idle of the host during the run.
#
# Usage: bench/fabric/run.sh [--shape FILE]... [--configs LIST] [--seeds N]
#                            [--jobs N] [--steps N] [--scale S] [--quick]
#                            [--poll-us N] [--out FILE] [--png FILE]
#        bench/fabric/run.sh --scenario collide [--configs LIST] [--seeds N]
#                            [--steps N] [--cc-weight W] [--out FILE]
#   --shape    cluster file (repeatable; default bench/fabric/gb200-16.json
#              and bench/fabric/leafspine-16.json)
#   --configs  any of tree block tree-switches block-segment isle isle-shim
#              (default: all six)
#     tree, block          TopologyPlugin=topology/tree|block, topology.conf
#                          from `islectl emit slurm-tree|slurm-block`, jobs as
#                          most users submit them (-N k --gpus-per-node=g,
#                          --gpus=g on one node)
#     tree-switches        the same with --switches=<fewest leafs that hold
#                          the job>
#     block-segment        the same with --segment=<the largest count that
#                          fits a block, divides the job, keeps TP groups>
#     isle                 topology/isle with --isle-tp/--isle-pp, shim off
#     isle-shim            the same with the shim (default codec policy)
#   --seeds    N seeds (default 3) from --first-seed (default 1), the same
#              trace per seed in every config
#   --jobs     jobs per trace (default 8; the first three: two 1-node jobs
#              pinned one per leaf, then a job wider than a leaf, so that
#              a leaf-blind placement splits a TP group across the spine),
#              --steps steps per job (default 6)
#   --scale    fabric scale: cable rates and message sizes (default 0.0005)
#   --quick    one shape and, unless given, 3 jobs, 3 steps, configs
#              tree,isle, one seed: the correctness run of
#              tests/integration/49-fabric-quick.sh
#   --poll-us  the ranks wait for transfers by testing every N us and
#              sleeping between tests (fabric_job --poll-us; default 1000;
#              0: Open MPI's blocking calls, which spin): the host stays
#              idle enough that the emulated cables set the step time
#   --out      result JSON (default build/bench/fabric.json); --png its plot
#              (default: beside --out, gnuplot; skipped without gnuplot)
#   --scenario collide  the collision scenario (run_collide below): shape
#              bench/fabric/collide-8.json, configs isle isle-cc share avoid,
#              --steps 6, --seeds 3, --out build/bench/collide.json;
#              --cc-weight W: isle-cc's
#              TopologyParam=IsleContentionWeight (default 1)
#
# FABRIC_JOB_TIME_MIN overrides the jobs' time limit (minutes), for tests
# of what a hung job reports; FABRIC_BENCH_KEEP=1 keeps the work dir.
#
# Exit 0 when every job of every run completed with complete, verified step
# records and non-zero cable counters; 1 otherwise; 77 when the host cannot
# run it (the reason on stderr). Stderr says "fabric-bench: run dir D prefix
# P" for every cluster (tests look for leftovers with it).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$here/tests/cluster/cluster.sh"

B=${B:-$here/build}
JOB=$B/bench/fabric_job
ISLECTL=$B/bin/islectl

shapes=()
configs="tree block tree-switches block-segment isle isle-shim"
seeds=3
seed0=1
njobs=8
steps=6
scale=0.0005
quick=0
out=""
png=""
poll_us=1000
scenario=""
cc_weight=1

while [ $# -gt 0 ]; do
	case $1 in
	--shape) shapes+=("$2"); shift 2 ;;
	--configs) configs=${2//,/ } set_configs=1; shift 2 ;;
	--seeds) seeds=$2 set_seeds=1; shift 2 ;;
	--first-seed) seed0=$2; shift 2 ;;
	--jobs) njobs=$2 set_jobs=1; shift 2 ;;
	--steps) steps=$2 set_steps=1; shift 2 ;;
	--scale) scale=$2; shift 2 ;;
	--quick) quick=1; shift ;;
	--out) out=$2; shift 2 ;;
	--png) png=$2; shift 2 ;;
	--poll-us) poll_us=$2; shift 2 ;;
	--scenario) scenario=$2; shift 2 ;;
	--cc-weight) cc_weight=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "fabric-bench: unknown option $1" >&2; exit 2 ;;
	esac
done
if [ $quick = 1 ]; then
	[ ${#shapes[@]} -gt 0 ] || shapes=("$here/bench/fabric/gb200-16.json")
	shapes=("${shapes[0]}")
	# Defaults only: what the command line gave explicitly stays.
	[ -n "${set_configs:-}" ] || configs="tree isle"
	[ -n "${set_seeds:-}" ] || seeds=1
	[ -n "${set_jobs:-}" ] || njobs=3
	[ -n "${set_steps:-}" ] || steps=3
fi
case $scenario in
"") ;;
collide)
	[ ${#shapes[@]} -gt 0 ] || shapes=("$here/bench/fabric/collide-8.json")
	shapes=("${shapes[0]}")
	[ -n "${set_configs:-}" ] || configs="isle isle-cc share avoid"
	[ -n "$out" ] || out=$B/bench/collide.json
	;;
*) echo "fabric-bench: unknown scenario $scenario" >&2; exit 2 ;;
esac
[ -n "$out" ] || out=$B/bench/fabric.json
[ ${#shapes[@]} -gt 0 ] || shapes=("$here/bench/fabric/gb200-16.json" "$here/bench/fabric/leafspine-16.json")
[ -n "$png" ] || png=${out%.json}.png

skip() {
	echo "fabric-bench: SKIP: $*" >&2
	exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, slurmd)"
for t in ip tc nsenter unshare jq; do
	command -v "$t" >/dev/null || skip "$t not installed"
done
# make builds before it runs this: a missing build output is a failure.
built() { echo "fabric-bench: FAIL: $* not built (make)" >&2; exit 1; }
command -v mpicc.openmpi >/dev/null || command -v mpicc >/dev/null ||
	skip "no Open MPI (mpicc): $JOB is not made here (libopenmpi-dev)"
[ -x "$JOB" ] || built "$JOB"
[ -x "$ISLECTL" ] || built "$ISLECTL"
[ -x "$ISLE_SLURM_PREFIX/sbin/slurmctld" ] || skip "no Slurm in $ISLE_SLURM_PREFIX"
[ -e "$ISLE_SLURM_PREFIX/lib/slurm/mpi_pmix.so" ] || skip "Slurm built without PMIx"
case "$scenario $configs " in collide* | *" isle"*)
	[ -f "$B/slurm/topology_isle.so" ] && [ -f "$B/slurm/spank_isle.so" ] ||
		built "$B/slurm/topology_isle.so or spank_isle.so"
	;;
esac
for c in $configs; do
	case $scenario:$c in
	:tree | :block | :tree-switches | :block-segment | :isle | :isle-shim) ;;
	collide:isle | collide:isle-cc | collide:share | collide:avoid) ;;
	*) echo "fabric-bench: unknown config $c${scenario:+ (scenario $scenario)}" >&2; exit 2 ;;
	esac
done
# A probe namespace: containers without CAP_SYS_ADMIN or netns support skip.
# The kernel must have what the fabric is made of: bridges, veths, tbf.
probe=isf-probe-$$
ip netns add "$probe" 2>/dev/null || skip "cannot create network namespaces"
why=""
if ! ip -n "$probe" link add b0 type bridge 2>/dev/null; then
	why="the kernel has no bridge support"
elif ! ip -n "$probe" link add v0 type veth peer name v1 2>/dev/null; then
	why="the kernel has no veth support"
elif ! nsenter --net="/run/netns/$probe" tc qdisc add dev v0 root tbf rate 1mbit burst 32k latency 10ms 2>/dev/null; then
	why="tc tbf is not available (sch_tbf)"
fi
ip netns del "$probe"
[ -z "$why" ] || skip "$why"

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-fabric-bench.XXXXXX")
results=$work/results.jsonl
: >"$results"
fails=0
trap '[ "${FABRIC_BENCH_KEEP:-0}" = 1 ] || rm -rf "$work"' EXIT

say() { echo "fabric-bench: $*" >&2; }

# --- trace -------------------------------------------------------------------
# One line per job: "kind model nodes gpus tp pp pin". nodes 0 = one node with
# --gpus=gpus; pin "-" or the node it asks for (-w). TP is one NVLink island: 2 x GPUs per node where NVLink
# reaches across nodes (placement decides whether a group stays in one
# domain), else the island size inside a node (NVLink pairs: TP=2, and a
# 2-GPU job's GPUs decide whether its group is split).
#
# The first three jobs (not with --quick) set up a spine crossing that
# splits TP groups under a leaf-blind placement: two 1-node jobs pinned to
# the first node of the first two leafs, then one job two nodes wider than
# a leaf. With one node busy under each leaf, every leaf has an odd count
# of free nodes; topology/tree fills the emptiest leaf first (7 of 8 on
# gb200-16) and takes the rest (3) from the next, so one 2-node TP group
# straddles the leafs. Without the pins it took a whole free leaf and an
# even count from the other, and no group crossed the spine.
make_trace() { # seed gpus_per_node multinode_nvlink(0|1) island_gpus leaf_nodes pin0 pin1
	local seed=$1 g=$2 mn=$3 isz=$4 wide=$(($5 + 2)) pins=("$6" "$7") i r tpn
	RANDOM=$seed
	tpn=$isz
	[ "$mn" = 1 ] && tpn=$((2 * g))
	for ((i = 0; i < njobs; i++)); do
		r=$((RANDOM % 10))
		if [ $quick = 1 ]; then
			# Fixed mix: two 2-node training jobs, one 1-node inference.
			r=$((i < 2 ? 0 : 8))
		elif [ $i -lt 2 ] && [ "${pins[i]}" != - ]; then
			r=P
		elif [ $i = 2 ]; then
			r=W
		fi
		case $r in
		P) echo "infer 7b 0 $g $((mn == 1 ? g : isz)) 1 ${pins[i]}" ;;
		W) echo "train 7b $wide $g $tpn 1 -" ;;
		0 | 1 | 2) echo "train 7b 2 $g $tpn 1 -" ;;
		3 | 4) echo "train 70b 4 $g $tpn 2 -" ;;
		5) echo "infer 70b 2 $g $tpn 1 -" ;;
		6 | 7) echo "infer 7b 0 $((g / 2 > 0 ? g / 2 : 1)) $((g / 2 > 0 ? g / 2 : 1)) 1 -" ;;
		*) echo "infer 7b 0 $g $((mn == 1 ? g : isz)) 1 -" ;;
		esac
	done
}

# --- diagnostics of a failed job ----------------------------------------------
# hang_dump RW ID: every process of job ID in the fabric's node namespaces
# (batch script, srun, ranks) with its wait channel, and each rank's thread
# stacks (gdb, where installed), into RW/hang-ID.txt.
hang_dump() {
	local -
	set +euo pipefail
	local rw=$1 id=$2 f=$1/hang-$2.txt node pid comm rank
	say "job $id is near its time limit: stacks of its processes in $f"
	{
		echo "job $id $(isle_job_field "$id" JobState) nodes $(isle_job_field "$id" NodeList) run $(isle_job_field "$id" RunTime) limit $(isle_job_field "$id" TimeLimit)"
		for node in $(scontrol show hostnames "$(isle_job_field "$id" NodeList)" 2>/dev/null); do
			for pid in $(ip netns pids "$ISLE_FABRIC_PREFIX-$node" 2>/dev/null); do
				tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | isle_grep_q -x "SLURM_JOB_ID=$id" || continue
				comm=$(cat "/proc/$pid/comm" 2>/dev/null)
				rank=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^SLURM_PROCID=//p')
				echo "--- $node pid $pid $comm rank ${rank:--} wchan $(cat "/proc/$pid/wchan" 2>/dev/null)"
				if [ "$comm" = fabric_job ] && command -v gdb >/dev/null; then
					timeout 30 gdb -q -batch -p "$pid" -ex 'thread apply all bt 16' 2>/dev/null |
						grep -E '^(Thread|#)'
				fi
			done
		done
	} >"$f" 2>&1
}

# job_diag RW DIR ID OUT: says why job ID failed: Slurm's reason, the
# launches of its batch script, what its ranks were doing when it hung
# (hang_dump) and its lines in the slurmctld and slurmd logs (copied to RW).
job_diag() {
	local -
	set +euo pipefail
	local rw=$1 d=$2 id=$3 o=$4 node f
	say "diag job $id: reason $(isle_job_field "$id" Reason), exit $(isle_job_field "$id" ExitCode), nodes $(isle_job_field "$id" NodeList)"
	grep -h '^fabric-job: ' "$o" 2>/dev/null | sed 's/^/fabric-bench: diag job '"$id"': /' >&2
	if [ -f "$rw/hang-$id.txt" ]; then
		# Per rank: the main thread's innermost frames.
		awk -v id="$id" '
			/^--- / { if (who != "" && fr != "") print "fabric-bench: diag job " id ": " who ": " fr
				who = $2 " " $5 " rank " $7 " (" $9 ")"; fr = ""; main = 0; next }
			/^Thread 1 / { main = 1; fr = ""; n = 0; next }
			/^Thread / { main = 0; next }
			main && /^#/ && n < 12 { f = ($3 == "in") ? $4 : $2; fr = fr (n++ ? " < " : "") f }
			END { if (who != "" && fr != "") print "fabric-bench: diag job " id ": " who ": " fr }' "$rw/hang-$id.txt" >&2
		grep -h '^--- ' "$rw/hang-$id.txt" | grep -v fabric_job | sed 's/^--- /fabric-bench: diag job '"$id"': process /' >&2
	fi
	grep -h "JobId=$id \|JobId=$id\$" "$d/log/slurmctld.log" 2>/dev/null | grep -iE 'error|time limit|fail|kill' | tail -3 |
		sed 's/^/fabric-bench: diag job '"$id"': slurmctld: /' >&2
	for node in $(scontrol show hostnames "$(isle_job_field "$id" NodeList)" 2>/dev/null); do
		f=$d/log/slurmd-$node.log
		[ -f "$f" ] || continue
		cp -f "$f" "$rw/" 2>/dev/null
		grep -hE "(StepId=|JobId=|job |step )$id[. ]" "$f" | grep -iE 'error|fail|kill|timeout|time limit' | tail -3 |
			sed 's/^/fabric-bench: diag job '"$id"': slurmd-'"$node"': /' >&2
	done
	return 0
}

# --- one run -----------------------------------------------------------------
cpu_sample() { awk '/^cpu / { print $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9, $5 + $6 }' /proc/stat; }

# write_job_sh FILE: the batch script of every job, "job.sh GPUS_PER_NODE
# FABRIC_JOB_ARGS...".
write_job_sh() {
	# Batch script: one rank per GPU, TCP between nodes on the data network.
	# Open MPI 4.1's TCP wire-up fails now and then under load ("connect()
	# ... failed", then a crash or a hang; seen with and without the
	# emulated fabric). Every connection is made inside MPI_Init
	# (mpi_preconnect_mpi), so such a failure comes before the program's
	# first line, "fabric_job: <mode> ...": a launch that crashed, or hung
	# $init_s s, without it runs again, said in the output. After that
	# line no connection is made any more.
	local init_s=90
	cat >"$1" <<EOF
#!/bin/bash
export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=d0
export OMPI_MCA_oob_tcp_if_include=mg0 OMPI_MCA_mpi_yield_when_idle=1
export OMPI_MCA_mpi_preconnect_mpi=1
export ISLE_COMM_TIMEOUT_S=120 ISLE_COMM_VERBOSE=1
n=\$((SLURM_JOB_NUM_NODES * \$1))
shift
out=\$(mktemp)
for try in 1 2 3; do
	: >"\$out"
	srun --mpi=pmix -n \$n --ntasks-per-node=\$((n / SLURM_JOB_NUM_NODES)) -m block \\
		--kill-on-bad-exit=1 "$JOB" "\$@" >"\$out" 2>&1 &
	pid=\$!
	tail -f -n +1 --pid=\$pid "\$out" &
	tpid=\$!
	t=0
	while kill -0 \$pid 2>/dev/null; do
		grep -q '^fabric_job: ' "\$out" && break
		if [ \$t -ge $init_s ]; then
			echo "fabric-job: launch \$try hung in MPI_Init for $init_s s: ending it"
			kill -INT \$pid; sleep 1; kill -INT \$pid 2>/dev/null; sleep 10
			kill -KILL \$pid 2>/dev/null
			break
		fi
		sleep 1
		t=\$((t + 1))
	done
	wait \$pid
	rc=\$?
	wait \$tpid
	if [ \$rc != 0 ] && [ \$try -lt 3 ] && ! grep -q '^fabric_job: ' "\$out"; then
		echo "fabric-job: launch \$try failed before MPI_Init returned (rc \$rc): launching again"
		continue
	fi
	break
done
rm -f "\$out"
exit \$rc
EOF
	chmod +x "$1"
}

# run_one SHAPE CONFIG SEED: appends one result line to $results.
run_one() {
	local shape=$1 config=$2 seed=$3 rw=$work/$config-$seed-$(basename "$shape" .json)
	local topo etcfiles=() extra=() plug=() plan g mn dsize
	mkdir -p "$rw"
	plan=$rw/plan
	"$ISLECTL" emit fabric "$shape" >"$plan"
	g=$(awk '$1 == "node" { print $3; exit }' "$plan")
	mn=0
	grep -q '^switch .* domain$' "$plan" && mn=1
	# Nodes per NVLink domain (block's segment), else per leaf.
	dsize=$(awk '$1 == "node" { n[$4]++ } END { for (k in n) { print n[k]; exit } }' "$plan")
	case $config in
	tree | tree-switches)
		topo=tree
		"$ISLECTL" emit slurm-tree -o "$rw/topology.conf" "$shape"
		extra=(--topo-conf "$rw/topology.conf")
		;;
	block | block-segment)
		topo=block
		"$ISLECTL" emit slurm-block -o "$rw/topology.conf" "$shape"
		extra=(--topo-conf "$rw/topology.conf")
		;;
	isle | isle-shim)
		topo=isle
		cp "$shape" "$rw/isle.json"
		etcfiles=(--etc-file "$rw/isle.json")
		echo "required $B/slurm/spank_isle.so default_mode=preferred agent=$B/bin/isle-agent cluster=@ETC@/isle.json rundir=@DIR@/run/isle/%n shim=$B/lib/libisle_preload.so" >"$rw/plugstack.conf"
		plug=(--plugstack "$rw/plugstack.conf" --plugin-dir "$B/slurm")
		;;
	esac
	local isz lnodes
	isz=$(awk '$1 == "gpus" { n = 0; for (i = 3; i <= NF; i++) if ($i == $3) n++; print n; exit }' "$plan")
	# Nodes under the largest leaf switch: up from each node's switch.
	# Nodes under the largest leaf switch, and the first node (plan order)
	# under each of the first two leafs ("-" when there is one leaf):
	# up from each node's switch.
	local pins
	read -r lnodes pins <<<"$(awk '$1 == "switch" { lvl[$2] = $3 } $1 == "node" { par[$2] = $4; ord[++nn] = $2 }
		$1 == "cable" && ($2 in lvl) { up[$2] = $3 }
		END { np = 0
		      for (i = 1; i <= nn; i++) { n = ord[i]; s = par[n]; k = 0
			while (s != "" && lvl[s] != "leaf" && k++ < 8) s = up[s]
			if (s == "") continue
			if (!(s in c) && np < 2) pin[++np] = n
			c[s]++ }
		      m = 0; for (s in c) if (c[s] > m) m = c[s]
		      if (np < 2) pin[1] = pin[2] = "-"
		      print m, pin[1], pin[2] }' "$plan")"
	# shellcheck disable=SC2086 # two words
	make_trace "$seed" "$g" "$mn" "$isz" "$lnodes" $pins >"$rw/trace"

	local c0 c1
	read -r -a c0 <<<"$(cpu_sample)"
	# On a saturated host 16 slurmd can miss the start-up deadline: one
	# more try before the run counts as failed.
	local try
	for try in 1 2; do
		isle_cluster_start --fabric "$shape" --fabric-scale "$scale" --topology "$topo" \
			"${extra[@]}" "${etcfiles[@]}" "${plug[@]}" --cpus 16 --timeout 240 && break
		if [ $try = 2 ]; then
			say "cluster did not start ($config seed $seed)"
			fails=$((fails + 1))
			return 0
		fi
		say "cluster did not start ($config seed $seed): trying once more"
	done
	local d=$ISLE_CLUSTER_DIR
	say "run dir $d prefix $ISLE_FABRIC_PREFIX ($(basename "$shape") $config seed $seed)"

	write_job_sh "$rw/job.sh"
	local kind model nodes gpus tp pp ids=() id args tol
	while read -r kind model nodes gpus tp pp pin; do
		# A time limit, so that a hung MPI job ends as TIMEOUT (a failure).
		args=(-o "$d/jobs/%j.out" -e "$d/jobs/%j.out" -J "$kind-$model" -t "${FABRIC_JOB_TIME_MIN:-$((5 + steps / 2))}")
		if [ "$nodes" = 0 ]; then
			args+=(-N1 -n "$gpus" "--gpus=$gpus")
			[ "$pin" = - ] || args+=(-w "$pin")
		else
			args+=(-N "$nodes" "--ntasks-per-node=$gpus" "--gpus-per-node=$gpus")
			case $config in
			tree-switches)
				# The fewest leafs that hold the job: a job wider
				# than a leaf asking for one would wait for
				# max_switch_wait (300 s) and then run anyway.
				args+=("--switches=$(((nodes + lnodes - 1) / lnodes))")
				;;
			block-segment)
				# The largest segment that fits a block, divides the
				# job and keeps whole TP groups (tp / gpus nodes).
				local seg tpn=$(((tp + gpus - 1) / gpus))
				for ((seg = (nodes < dsize ? nodes : dsize); seg > 1; seg--)); do
					if [ $((nodes % seg)) = 0 ] && [ $((seg % tpn)) = 0 ]; then break; fi
				done
				args+=("--segment=$seg")
				;;
			esac
		fi
		tol=0
		case $config in
		isle) args+=("--isle-tp=$tp" "--isle-pp=$pp" --isle-shim=off) ;;
		isle-shim) args+=("--isle-tp=$tp" "--isle-pp=$pp"); tol=0.05 ;;
		esac
		id=$(sbatch --parsable "${args[@]}" "$rw/job.sh" "$gpus" --mode "$kind" \
			--model "$model" --tp "$tp" --pp "$pp" --steps "$steps" --scale "$scale" --tol "$tol" --poll-us "$poll_us") || {
			say "sbatch failed ($kind $model $nodes x $gpus)"
			fails=$((fails + 1))
			continue
		}
		ids+=("$id")
		echo "$id $kind $model $nodes $gpus $tp $pp" >>"$rw/jobs"
	done <"$rw/trace"
	say "jobs submitted: ${ids[*]}"

	local end=$((SECONDS + 300 + njobs * steps * 20)) st left q
	while :; do
		q=$(squeue -h -o '%i %T %L' 2>/dev/null)
		left=$(grep -c . <<<"$q" || true)
		[ "$left" = 0 ] && break
		# A job close to its time limit is most likely hung: what its
		# ranks are doing, before Slurm ends them.
		while read -r id st tl; do
			[ -e "$rw/hang-$id.txt" ] && continue
			if [ "$(awk -F'[-:]' '!/^[0-9]/ { print 99999; next }
				{ s = 0; for (i = 1; i <= NF; i++) s = s * (NF == 4 && i == 2 ? 24 : 60) + $i; print s }' <<<"$tl")" -le 60 ]; then
				hang_dump "$rw" "$id"
			fi
		done < <(awk '$2 == "RUNNING"' <<<"$q")
		if [ $SECONDS -ge $end ]; then
			say "jobs still queued after the time limit: $(squeue -h -o '%i %T %R' | tr '\n' ';')"
			break
		fi
		sleep 2
	done
	read -r -a c1 <<<"$(cpu_sample)"
	# The host's 1-minute load: with idle CPU near 0 it says how much other
	# work competed with the run.
	local load1
	load1=$(awk '{ print $1 }' /proc/loadavg)

	# Per job: times, nodes, GRES indices, records.
	local ok_jobs=0 job_rows=$rw/rows
	: >"$job_rows"
	while read -r id kind model nodes gpus tp pp; do
		st=$(isle_job_field "$id" JobState)
		local o=$d/jobs/$id.out sub start fin nl
		sub=$(date -d "$(isle_job_field "$id" SubmitTime)" +%s 2>/dev/null || echo 0)
		start=$(date -d "$(isle_job_field "$id" StartTime)" +%s 2>/dev/null || echo 0)
		fin=$(date -d "$(isle_job_field "$id" EndTime)" +%s 2>/dev/null || echo 0)
		nl=$(isle_job_field "$id" NodeList)
		local recs
		recs=$(grep -Ec '^(step|token) [0-9]+ ' "$o" 2>/dev/null || true)
		if [ "$st" != COMPLETED ] || [ "$recs" != "$steps" ] || ! grep -q '^fabric_job: verify ok' "$o"; then
			say "job $id ($kind $model) $st, $recs of $steps records: $(grep -E 'verify|rror|srun' "$o" 2>/dev/null | head -3 | tr '\n' ' ')"
			job_diag "$rw" "$d" "$id" "$o"
			fails=$((fails + 1))
		else
			ok_jobs=$((ok_jobs + 1))
		fi
		cp -f "$o" "$rw/$id.out" 2>/dev/null || true
		# Split TP groups: ranks in block order over the nodes, GPUs
		# ascending; a group is split when its GPUs are in more than one
		# NVLink island.
		local split=0 hosts gidx
		hosts=$(scontrol show hostnames "$nl" 2>/dev/null | tr '\n' ' ')
		gidx=$(scontrol -d show job "$id" 2>/dev/null | awk '
			/^[[:space:]]+Nodes=/ { node = ""; idx = ""
				for (i = 1; i <= NF; i++) {
					if ($i ~ /^Nodes=/) node = substr($i, 7)
					if ($i ~ /^GRES=/ && match($i, /IDX:[0-9,-]+/)) idx = substr($i, RSTART + 4, RLENGTH - 4)
				}
				if (node != "") print node, idx }')
		split=$(awk -v hosts="$hosts" -v tp="$tp" -v gpn="$gpus" -v gidx="$gidx" '
			$1 == "gpus" { for (i = 3; i <= NF; i++) isl[$2, i - 3] = $i }
			$1 == "switch" { lvl[$2] = $3 } $1 == "node" { par[$2] = $4 }
			$1 == "cable" && ($2 in lvl) { up[$2] = $3 }
			END {
				# Leaf switch of each node: up from its first switch.
				for (x in par) { sw = par[x]; k = 0
					while (sw != "" && lvl[sw] != "leaf" && k++ < 8) sw = up[sw]
					leaf[x] = sw }
				n = split(hosts, h, " "); m = split(gidx, gl, "\n")
				for (k = 1; k <= m; k++) { split(gl[k], f, " "); ix[f[1]] = f[2] }
				r = 0
				for (a = 1; a <= n; a++) {
					# GPU list of this node: IDX ranges, else 0..gpn-1.
					c = 0; s = ix[h[a]]
					if (s == "") { for (q = 0; q < gpn; q++) gl2[c++] = q }
					else { p = split(s, pr, ","); for (j = 1; j <= p; j++) {
						if (split(pr[j], lh, "-") == 2) { for (q = lh[1]; q <= lh[2]; q++) gl2[c++] = q }
						else gl2[c++] = pr[j] + 0 } }
					for (q = 0; q < c && q < gpn; q++) { rank_leaf[r] = leaf[h[a]]; rank_isl[r++] = isl[h[a], gl2[q]] }
				}
				# Split groups, and those split across leafs (their
				# TP traffic crosses the spine).
				splits = 0; sp = 0
				for (b = 0; b + tp <= r; b += tp) {
					for (q = b + 1; q < b + tp; q++) if (rank_isl[q] != rank_isl[b]) { splits++; break }
					for (q = b + 1; q < b + tp; q++) if (rank_leaf[q] != rank_leaf[b]) { sp++; break }
				}
				print splits, sp
			}' "$plan")
		echo "$id $kind $sub $start $fin ${split:-0 0}" >>"$job_rows"
		# The placement Slurm chose and this job's own records, for
		# islesim --replay-fabric (the flow model's calibration).
		jq -nc --arg kind "$kind" --arg model "$model" --argjson nodes "$nodes" \
			--argjson gpus "$gpus" --argjson tp "$tp" --argjson pp "$pp" \
			--argjson times "[$sub,$start,$fin]" --arg hosts "$hosts" --arg gidx "$gidx" \
			--argjson steps "$(grep -E '^(step|token) [0-9]+ ' "$o" 2>/dev/null | awk '$2 > 0 { print $3 }' | jq -sc .)" \
			--argjson shim "$(grep -E '^isle_comm: [0-9]+ ranks' "$o" 2>/dev/null | sort -u | jq -Rsc 'split("\n") | map(select(length > 0))')" \
			--argjson phases "$(grep -E '^phase [0-9]+ ' "$o" 2>/dev/null | awk '$2 > 0 { printf "[%s,%s,%s,%s,%s,%s]\n", $3, $4, $5, $6, $7, $8 }' | jq -sc .)" '
			{kind: $kind, model: $model, nodes: $nodes, gpus: $gpus, tp: $tp, pp: $pp,
			 submit: $times[0], start: $times[1], end: $times[2],
			 hosts: ($hosts | split(" ") | map(select(length > 0))),
			 gres_idx: ([$gidx | split("\n")[] | select(length > 0) | split(" ") | {(.[0]): (.[1] // "")}] | add // {}),
			 ms: $steps, phase_ms: $phases, shim: $shim}' >>"$rw/jobinfo" || true
		grep -E '^step [0-9]+ ' "$o" 2>/dev/null | awk '$2 > 0 { print $3 }' >>"$rw/steps" || true
		grep -E '^token [0-9]+ ' "$o" 2>/dev/null | awk '$2 > 0 { print $3 }' >>"$rw/tokens" || true
	done <"$rw/jobs"
	touch "$rw/steps" "$rw/tokens" "$rw/jobinfo"

	local prefix=${ISLE_FABRIC_PREFIX:-}
	isle_fabric_counters >"$rw/counters"
	isle_cluster_stop
	if [ -n "$prefix" ] && ip netns list 2>/dev/null | isle_grep_q "^$prefix-"; then
		say "namespaces of $prefix left behind"
		fails=$((fails + 1))
	fi
	local total
	total=$(awk '{ s += $5 + $6 } END { print s + 0 }' "$rw/counters")
	if [ "$total" = 0 ]; then
		say "cable counters are all zero ($config seed $seed)"
		fails=$((fails + 1))
	fi

	local idle
	idle=$(awk -v t0="${c0[0]}" -v i0="${c0[1]}" -v t1="${c1[0]}" -v i1="${c1[1]}" \
		'BEGIN { dt = t1 - t0; printf "%.1f", (dt > 0 ? 100 * (i1 - i0) / dt : 0) }')
	jq -nc --arg config "$config" --argjson seed "$seed" --argjson jobs "$ok_jobs" \
		--argjson submitted "$(wc -l <"$rw/jobs")" \
		--argjson steps "$(jq -sc . <"$rw/steps")" --argjson tokens "$(jq -sc . <"$rw/tokens")" \
		--argjson rows "$(awk '{ printf "%s[%s,%s,%s,%s,%s]", (NR > 1 ? "," : ""), $3, $4, $5, $6, $7 } BEGIN { printf "[" } END { print "]" }' "$job_rows")" \
		--argjson tiers "$(awk '{ b[$3] += $5 + $6 } END { printf "{"; n = 0; for (k in b) printf "%s\"%s\":%.0f", (n++ ? "," : ""), k, b[k]; print "}" }' "$rw/counters")" \
		--argjson jobinfo "$(jq -sc . <"$rw/jobinfo")" \
		--argjson idle "$idle" --argjson load1 "$load1" '
		def mean: if length == 0 then null else (add / length) end;
		def p95: if length == 0 then null else (sort | .[((length * 95 + 99) / 100 | floor) - 1]) end;
		def r3: if . == null then null else ((. * 1000 | round) / 1000) end;
		{config: $config, seed: $seed, jobs: $jobs, jobs_submitted: $submitted,
		 step_ms_mean: ($steps | mean | r3), step_ms_p95: ($steps | p95 | r3),
		 jct_s_mean: ([$rows[] | .[2] - .[0]] | mean | r3),
		 wait_s_mean: ([$rows[] | .[1] - .[0]] | mean | r3),
		 makespan_s: (if ($rows | length) == 0 then null else (([$rows[] | .[2]] | max) - ([$rows[] | .[0]] | min)) end),
		 tp_groups_split: ([$rows[] | .[3]] | add // 0),
		 tp_groups_split_spine: ([$rows[] | .[4]] | add // 0),
		 infer_token_ms_mean: ($tokens | mean | r3), infer_token_ms_p95: ($tokens | p95 | r3),
		 link_bytes_by_tier: $tiers, cpu_idle_pct: $idle, host_load_1m: $load1, job_list: $jobinfo}' >>"$results.$(basename "$shape" .json)"
	say "$(tail -1 "$results.$(basename "$shape" .json)")"
	awk -v i="$idle" 'BEGIN { exit !(i < 30) }' &&
		say "warning: host CPU idle ${idle}% during this run (< 30%): its times measure the host more than the fabric (a smaller --scale lightens it)"
	return 0
}

# --- collision scenario (--scenario collide) ----------------------------------
# Two 2-node data-parallel training jobs, A and B, each crossing the spine,
# on a shape whose leaf uplinks carry one node's cable (collide-8.json): on
# the uplinks both cross, each gets half the bandwidth. With leafs L0..L3
# (plan order), blocker jobs (sleep) hold the second node of L2 and L3 and
# A is pinned to the first node of L0 and L1; when B comes, every leaf has
# one free node, so B crosses the spine wherever it goes: the second nodes
# of L0 and L1 share both of A's uplinks, the first nodes of L2 and L3
# share none. B is placed by
#   isle     topology/isle as it is (contention-blind)
#   isle-cc  the same with TopologyParam=IsleContentionWeight=--cc-weight
#   share    hand-placed on the uplinks A uses (-w): ground truth
#   avoid    hand-placed on the others (-w): ground truth
# A runs 2 x --steps + 4 steps from before B starts until after B ends, so
# every step of B runs beside A (the row's "overlap" says it did). B's mean
# step is the measure.
collide_leafs() { # plan: "LEAF NODE NODE..." per leaf, plan order
	awk '$1 == "node" { if (!($4 in n)) o[++k] = $4; n[$4] = n[$4] " " $2 }
		END { for (i = 1; i <= k; i++) print o[i] n[o[i]] }' "$1"
}

# wait_for SECONDS CMD...: runs CMD every 2 s until it succeeds.
wait_for() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 2
	done
}
job_running() { [ "$(isle_job_field "$1" JobState)" = RUNNING ]; }
job_gone() { ! squeue -h -j "$1" -o %i 2>/dev/null | isle_grep_q .; }
job_past_init() { grep -q '^fabric_job: ' "$1" 2>/dev/null; }

# run_collide SHAPE CONFIG SEED: appends one result line to $results.collide.
run_collide() {
	local shape=$1 config=$2 seed=$3
	local rw=$work/collide-$config-$seed
	local plan leafs=() l0 l1 l2 l3 l0b l1b l2b l3b g a_nodes b_pin="" blk=()
	mkdir -p "$rw"
	plan=$rw/plan
	"$ISLECTL" emit fabric "$shape" >"$plan"
	g=$(awk '$1 == "node" { print $3; exit }' "$plan")
	mapfile -t leafs < <(collide_leafs "$plan")
	if [ ${#leafs[@]} -lt 4 ] || [ "$(awk '{ print NF }' <<<"${leafs[3]}")" -lt 3 ]; then
		say "collide: $shape needs 4 leafs of 2 nodes or more"
		fails=$((fails + 1))
		return 0
	fi
	read -r _ l0 l0b _ <<<"${leafs[0]}"
	read -r _ l1 l1b _ <<<"${leafs[1]}"
	read -r _ l2 l2b _ <<<"${leafs[2]}"
	read -r _ l3 l3b _ <<<"${leafs[3]}"
	a_nodes=$l0,$l1
	blk=("$l2b" "$l3b")
	case $config in
	share) b_pin=$l0b,$l1b ;;
	avoid) b_pin=$l2,$l3 ;;
	esac
	cp "$shape" "$rw/isle.json"
	local cc=()
	if [ "$config" = isle-cc ]; then
		# The plugin's own setting: a build whose plugin does not know it
		# would run contention-blind under the isle-cc name.
		if ! grep -aq IsleContentionWeight "$B/slurm/topology_isle.so"; then
			say "collide: isle-cc not run: $B/slurm/topology_isle.so has no TopologyParam=IsleContentionWeight (the contention term is not wired into slurmctld in this build)"
			jq -nc '{config: "isle-cc", not_run: "topology_isle.so has no TopologyParam=IsleContentionWeight"}' >>"$results.collide-skips"
			return 0
		fi
		cc=(--slurm-extra "TopologyParam=IsleContentionWeight=$cc_weight")
	fi
	echo "required $B/slurm/spank_isle.so default_mode=preferred agent=$B/bin/isle-agent cluster=@ETC@/isle.json rundir=@DIR@/run/isle/%n shim=$B/lib/libisle_preload.so" >"$rw/plugstack.conf"

	local c0 c1 try
	read -r -a c0 <<<"$(cpu_sample)"
	for try in 1 2; do
		isle_cluster_start --fabric "$shape" --fabric-scale "$scale" --topology isle \
			--etc-file "$rw/isle.json" --plugstack "$rw/plugstack.conf" --plugin-dir "$B/slurm" \
			"${cc[@]}" --cpus 16 --timeout 240 && break
		if [ $try = 2 ]; then
			say "cluster did not start (collide $config seed $seed)"
			fails=$((fails + 1))
			return 0
		fi
		say "cluster did not start (collide $config seed $seed): trying once more"
	done
	local d=$ISLE_CLUSTER_DIR
	say "run dir $d prefix $ISLE_FABRIC_PREFIX (collide $config seed $seed)"
	write_job_sh "$rw/job.sh"

	local ids=() id a b n bad=0 lim=$((5 + steps))
	for n in "${blk[@]}"; do
		id=$(sbatch --parsable -J blocker -N1 -n "$g" "--gpus=$g" -w "$n" -t "$((lim * 3))" \
			-o /dev/null --isle-shim=off --wrap "sleep $((lim * 180))") || { bad=1; break; }
		ids+=("$id")
	done
	for id in "${ids[@]}"; do
		wait_for 120 job_running "$id" || { say "collide: blocker $id did not start"; bad=1; }
	done
	local targs=(-N2 "--ntasks-per-node=$g" "--gpus-per-node=$g" -o "$d/jobs/%j.out" -e "$d/jobs/%j.out"
		-t "$lim" "--isle-tp=$g" --isle-pp=1 --isle-shim=off)
	local jargs=(--mode train --model 7b --tp "$g" --pp 1 --scale "$scale" --tol 0 --poll-us "$poll_us")
	if [ $bad = 0 ]; then
		a=$(sbatch --parsable -J collide-a -w "$a_nodes" "${targs[@]}" "$rw/job.sh" "$g" \
			"${jargs[@]}" --steps $((2 * steps + 4))) || bad=1
	fi
	if [ $bad = 0 ] && ! wait_for 240 job_past_init "$d/jobs/$a.out"; then
		say "collide: job A ($a) did not get past MPI_Init"
		bad=1
	fi
	if [ $bad = 0 ]; then
		b=$(sbatch --parsable -J collide-b ${b_pin:+-w "$b_pin"} "${targs[@]}" "$rw/job.sh" "$g" \
			"${jargs[@]}" --steps "$steps") || bad=1
	fi
	if [ $bad = 0 ]; then
		wait_for $((lim * 60 + 60)) job_gone "$b" || { say "collide: job B ($b) still queued"; bad=1; }
		wait_for $((lim * 60 + 60)) job_gone "$a" || { say "collide: job A ($a) still queued"; bad=1; }
	fi
	read -r -a c1 <<<"$(cpu_sample)"
	local load1
	load1=$(awk '{ print $1 }' /proc/loadavg)
	for id in "${ids[@]}"; do scancel "$id" 2>/dev/null || true; done

	local j o st rec info=()
	for j in "${a:-}" "${b:-}"; do
		[ -n "$j" ] || { info+=("null"); continue; }
		o=$d/jobs/$j.out
		cp -f "$o" "$rw/" 2>/dev/null || true
		st=$(isle_job_field "$j" JobState)
		rec=$(grep -Ec '^step [0-9]+ ' "$o" 2>/dev/null || true)
		if [ "$st" != COMPLETED ] || ! grep -q '^fabric_job: verify ok' "$o"; then
			say "collide: job $j $st, $rec step records: $(grep -E 'verify|rror|srun' "$o" 2>/dev/null | head -3 | tr '\n' ' ')"
			job_diag "$rw" "$d" "$j" "$o"
			bad=1
		fi
		info+=("$(jq -nc --arg st "$st" \
			--arg hosts "$(scontrol show hostnames "$(isle_job_field "$j" NodeList)" 2>/dev/null | tr '\n' ' ')" \
			--argjson start "$(date -d "$(isle_job_field "$j" StartTime)" +%s 2>/dev/null || echo 0)" \
			--argjson ended "$(date -d "$(isle_job_field "$j" EndTime)" +%s 2>/dev/null || echo 0)" \
			--argjson ms "$(grep -E '^step [0-9]+ ' "$o" 2>/dev/null | awk '$2 > 0 { print $3 }' | jq -sc .)" \
			'{state: $st, hosts: ($hosts | split(" ") | map(select(length > 0))), started: $start, ended: $ended, step_ms: $ms}')")
	done
	isle_fabric_counters >"$rw/counters"
	local prefix=${ISLE_FABRIC_PREFIX:-}
	isle_cluster_stop
	if [ -n "$prefix" ] && ip netns list 2>/dev/null | isle_grep_q "^$prefix-"; then
		say "namespaces of $prefix left behind"
		bad=1
	fi
	[ $bad = 0 ] || fails=$((fails + 1))
	local idle
	idle=$(awk -v t0="${c0[0]}" -v i0="${c0[1]}" -v t1="${c1[0]}" -v i1="${c1[1]}" \
		'BEGIN { dt = t1 - t0; printf "%.1f", (dt > 0 ? 100 * (i1 - i0) / dt : 0) }')
	# Uplinks each job crosses: those of its leafs when it has two or more.
	jq -nc --arg config "$config" --argjson seed "$seed" --argjson a "${info[0]}" --argjson b "${info[1]}" \
		--argjson leafs "$(printf '%s\n' "${leafs[@]}" | jq -Rsc 'split("\n") | map(select(length > 0) | split(" ") | {(.[0]): .[1:]}) | add')" \
		--argjson tiers "$(awk '{ b[$3] += $5 + $6 } END { printf "{"; n = 0; for (k in b) printf "%s\"%s\":%.0f", (n++ ? "," : ""), k, b[k]; print "}" }' "$rw/counters")" \
		--argjson idle "$idle" --argjson load1 "$load1" --argjson ok "$((1 - bad))" '
		def mean: if length == 0 then null else (add / length * 1000 | round / 1000) end;
		def uplinks($h): [$leafs | to_entries[] | select(any(.value[]; . as $n | $h | index($n))) | .key]
			| if length > 1 then . else [] end;
		{config: $config, seed: $seed, ok: ($ok == 1),
		 a: $a, b: $b,
		 a_uplinks: (if $a then uplinks($a.hosts) else null end),
		 b_uplinks: (if $b then uplinks($b.hosts) else null end),
		 shared_uplinks: (if $a and $b then [uplinks($a.hosts)[] as $u | select(uplinks($b.hosts) | index($u)) | $u] else null end),
		 overlap: (if $a and $b then ($a.started <= $b.started and $a.ended >= $b.ended) else false end),
		 b_step_ms_mean: (if $b then ($b.step_ms | mean) else null end),
		 a_step_ms_mean: (if $a then ($a.step_ms | mean) else null end),
		 link_bytes_by_tier: $tiers, cpu_idle_pct: $idle, host_load_1m: $load1}' >>"$results.collide"
	say "$(tail -1 "$results.collide")"
	awk -v i="$idle" 'BEGIN { exit !(i < 30) }' &&
		say "warning: host CPU idle ${idle}% during this run (< 30%)"
	return 0
}

# collide.json: the runs, and per config the median over seeds of B's mean
# step (with min and max); the ratios the scenario is about.
write_collide() {
	mkdir -p "$(dirname "$out")"
	touch "$results.collide" "$results.collide-skips"
	jq -s --argjson scale "$scale" --argjson steps "$steps" --argjson poll "$poll_us" \
		--argjson skips "$(jq -sc . "$results.collide-skips")" '
		def med: sort | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
			else (.[length / 2 - 1] + .[length / 2]) / 2 end;
		. as $runs
		| ([$runs[] | select(.ok and .overlap)] | group_by(.config)
		   | map({key: .[0].config, value: {runs: length, b_step_ms_median: ([.[].b_step_ms_mean] | med),
			b_step_ms_min: ([.[].b_step_ms_mean] | min), b_step_ms_max: ([.[].b_step_ms_mean] | max),
			shared_uplinks: [.[].shared_uplinks | length], cpu_idle_pct: [.[].cpu_idle_pct]}}) | from_entries) as $s
		| def ratio($x; $y): if $s[$x] and $s[$y] then ($s[$x].b_step_ms_median / $s[$y].b_step_ms_median * 1000 | round / 1000) else null end;
		{scenario: "collide", scale: $scale, steps: $steps, poll_us: $poll, not_run: $skips,
		 summary: $s,
		 ratios: {"isle-cc/isle": ratio("isle-cc"; "isle"), "avoid/share": ratio("avoid"; "share"),
			  "avoid/isle": ratio("avoid"; "isle"), "share/isle": ratio("share"; "isle")},
		 goal: "isle-cc/isle <= 0.8 (B mean step, median over seeds)",
		 runs: $runs}' "$results.collide" >"$out.tmp" && mv "$out.tmp" "$out" && isle_bench_stamp "$out"
}

# The result file is rewritten after every run: a bench cut short keeps
# what it measured.
write_out() {
	mkdir -p "$(dirname "$out")"
	{
		for shape in "${shapes[@]}"; do
			f=$results.$(basename "$shape" .json)
			[ -f "$f" ] || : >"$f"
			jq -sc --arg shape "$(basename "$shape" .json)" '{shape: $shape, results: .}' "$f"
		done
	} | jq -s --argjson scale "$scale" '{scale: $scale, shapes: .}' >"$out.tmp" && mv "$out.tmp" "$out" &&
		isle_bench_stamp "$out"
}

for shape in "${shapes[@]}"; do
	[ -r "$shape" ] || { echo "fabric-bench: cannot read $shape" >&2; exit 2; }
done
# shellcheck source=bench/stamp.sh
source "$here/bench/stamp.sh"
isle_bench_begin
# The commit of the code that runs, not of the tree when the file is written.
ISLE_COMMIT=$(isle_bench_commit)
export ISLE_COMMIT
if [ "$scenario" = collide ]; then
	for seed in $(seq "$seed0" $((seed0 + seeds - 1))); do
		for config in $configs; do
			run_collide "${shapes[0]}" "$config" "$seed"
			write_collide
		done
	done
	write_collide
	say "wrote $out"
	[ $fails = 0 ] || { say "$fails failures"; exit 1; }
	exit 0
fi
for shape in "${shapes[@]}"; do
	for seed in $(seq "$seed0" $((seed0 + seeds - 1))); do
		for config in $configs; do
			run_one "$shape" "$config" "$seed"
			write_out
		done
	done
done
write_out
say "wrote $out"

# Plot: three panels (train step ms, inference token ms, split TP groups),
# one bar per shape/config, means over the seeds.
if command -v gnuplot >/dev/null && [ $quick = 0 ]; then
	dat=$work/plot.dat
	jq -r '.shapes[] | .shape as $s | (.results | group_by(.config)[] |
		[$s + "/" + .[0].config, ([.[].step_ms_mean // 0] | add / length),
		 ([.[].infer_token_ms_mean // 0] | add / length), ([.[].tp_groups_split] | add / length)] | @tsv)' "$out" >"$dat"
	gnuplot <<EOF || say "gnuplot failed"
set terminal png size 1500,520
set output "$png"
set style data histograms
set style fill solid 0.8
set boxwidth 0.8
set datafile separator "\t"
set xtics rotate by -40 font ",9"
unset key
set yrange [0:*]
set multiplot layout 1,3 title "bench-fabric (scale $scale; means over seeds)"
set title "train step, ms"
plot "$dat" using 2:xtic(1) lc rgb "#7b3294"
set title "inference token, ms"
plot "$dat" using 3:xtic(1) lc rgb "#008837"
set title "TP groups split across NVLink islands"
plot "$dat" using 4:xtic(1) lc rgb "#d7191c"
unset multiplot
EOF
	[ -f "$png" ] && say "wrote $png"
fi
[ $fails = 0 ] || { say "$fails failures"; exit 1; }
exit 0
