#!/bin/bash
# bench-comm: allreduce on an emulated two-tier network (make bench-comm).
#
# Each emulated node is a network + UTS namespace with its own hostname. The
# nodes hang off a bridge in a "switch" namespace through veth pairs whose
# both directions are rate-limited by tbf, so a node's uplink behaves like a
# full-duplex NIC of --rate. Ranks on one node talk through shared memory
# (Open MPI vader: same hostname, same /dev/shm); ranks on different nodes
# talk TCP through the rate-limited uplink.
#
# mpirun runs inside node 0. The other nodes get their orted through a launch
# agent (plm_rsh_agent) that enters the node's namespaces instead of ssh-ing.
#
# Baselines, all in one run: Open MPI's default (coll_tuned fixed rules),
# a forced ring and a forced Rabenseifner (coll_tuned dynamic rules), and
# Open MPI's hierarchical coll/han; mpi_best is the fastest at each size.
# Bytes on every shaped link come from tc counters read before and after each
# algorithm, idle CPU from /proc/stat over each algorithm's run. The
# convergence runs (scripts/bench-converge.sh, Fashion-MNIST) go into the
# same comm.json unless ISLE_BENCH_CONVERGE=0.
#
# Usage: scripts/bench-comm.sh [--nodes N] [--ppn R] [--rate RATE]
#                              [--min-bytes B] [--max-bytes B]
#                              [--algos a,b,...] [--out FILE]
#   --rate       tc rate of each node uplink, e.g. 1gbit (default), 10gbit
#   --min-bytes  smallest allreduce (default 4 KiB)
#   --max-bytes  largest allreduce (default 256 MiB; sizes step by 4x)
#   --out        result file (default build/bench/comm.json)
#
# Needs root, iproute2 with tbf, Open MPI (mpirun) and the bench_comm binary.
# Exits 77 with a reason when the machine cannot host the emulation.
# Every namespace created here is named isle-bench-<pid>-* and removed on exit.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
B=${B:-$here/build}
BENCH=${ISLE_BENCH_COMM:-$B/bench/bench_comm}

nodes=2
ppn=4
rate=1gbit
mtu=9000
min_bytes=4096
max_bytes=$((256 << 20))
algos=mpi_default,mpi_ring,mpi_rabenseifner,mpi_han,isle_none,isle_bf16,isle_int8,isle_topk
out=$B/bench/comm.json

while [ $# -gt 0 ]; do
	case $1 in
	--nodes) nodes=$2; shift 2 ;;
	--ppn) ppn=$2; shift 2 ;;
	--rate) rate=$2; shift 2 ;;
	--min-bytes) min_bytes=$2; shift 2 ;;
	--max-bytes) max_bytes=$2; shift 2 ;;
	--algos) algos=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-comm: unknown option $1" >&2; exit 2 ;;
	esac
done

skip() {
	echo "bench-comm: SKIP: $*" >&2
	exit 77
}

[ "$(id -u)" = 0 ] || skip "needs root for network namespaces"
command -v ip >/dev/null || skip "iproute2 (ip) not installed"
command -v tc >/dev/null || skip "tc not installed"
# Open MPI's own launcher (the mpirun alternative may point to MPICH's), by
# name: an absolute path makes Open MPI pass --prefix to the launch agent.
MPIRUN=mpirun.openmpi
command -v $MPIRUN >/dev/null || MPIRUN=mpirun
command -v $MPIRUN >/dev/null || skip "Open MPI mpirun not installed"
command -v unshare >/dev/null || skip "unshare (util-linux) not installed"
[ -x "$BENCH" ] || { echo "bench-comm: FAIL: $BENCH not built (make)" >&2; exit 1; }
[ "$nodes" -ge 2 ] || { echo "bench-comm: --nodes must be >= 2" >&2; exit 2; }

prefix=isle-bench-$$
work=$(mktemp -d /tmp/isle-bench-comm.XXXXXX)
created=()
run_timeout=${ISLE_BENCH_RUN_TIMEOUT:-600} # seconds per mpirun

cleanup() {
	local ns
	# Whatever still runs inside our namespaces (mpirun, orted, ranks).
	for ns in "${created[@]}"; do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
		ip netns del "$ns" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

node_ns() { echo "$prefix-n$1"; }
node_ip() { echo "10.231.0.$(($1 + 1))"; }
subnet=10.231.0.0/24

# --- emulated network -------------------------------------------------------
netns_add() {
	ip netns add "$1" || skip "cannot create network namespace $1"
	created+=("$1")
	ip -n "$1" link set lo up
}

echo "bench-comm: namespaces $prefix-*" >&2
sw=$prefix-sw
netns_add "$sw"
ip -n "$sw" link add br0 type bridge
ip -n "$sw" link set br0 mtu "$mtu" up

tbf() { # NS DEV: rate-limit egress of DEV
	ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$rate" \
		burst 512kb latency 20ms ||
		skip "tc tbf not available (sch_tbf)"
}

for ((i = 0; i < nodes; i++)); do
	ns=$(node_ns $i)
	netns_add "$ns"
	ip link add eth0 netns "$ns" mtu "$mtu" type veth \
		peer name "p$i" netns "$sw" mtu "$mtu"
	ip -n "$sw" link set "p$i" master br0 up
	ip -n "$ns" addr add "$(node_ip $i)/24" dev eth0
	ip -n "$ns" link set eth0 up
	tbf "$ns" eth0   # node -> switch
	tbf "$sw" "p$i"  # switch -> node
done

# --- MPI launch across namespaces --------------------------------------------
agent=$work/agent.sh
{
	echo '#!/bin/sh'
	echo '# plm_rsh_agent: "ssh" into an emulated node = enter its namespaces.'
	echo 'host=$1; shift'
	echo 'case $host in'
	for ((i = 0; i < nodes; i++)); do
		echo "$(node_ip $i)) ns=$(node_ns $i) ;;"
	done
	echo '*) echo "bench-comm agent: unknown host $host" >&2; exit 1 ;;'
	echo 'esac'
	echo 'exec ip netns exec "$ns" unshare --uts /bin/sh -c "hostname $ns; exec $*"'
} >"$agent"
chmod +x "$agent"

hostfile=$work/hosts
for ((i = 0; i < nodes; i++)); do
	echo "$(node_ip $i) slots=$ppn"
done >"$hostfile"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
np=$((nodes * ppn))
plan=$work/plan.json

# MCA parameters of each MPI variant (Open MPI 4.1: allreduce algorithm 4 is
# ring, 6 Rabenseifner).
mca_of() {
	case $1 in
	mpi_ring) echo "--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 4" ;;
	mpi_rabenseifner) echo "--mca coll_tuned_use_dynamic_rules 1 --mca coll_tuned_allreduce_algorithm 6" ;;
	mpi_han) echo "--mca coll_han_priority 100" ;;
	esac
}

# Sent bytes of every shaped qdisc: "LINK BYTES" lines (nI_up: node I to
# the switch, nI_down: switch to node I).
link_bytes() {
	local i b
	for ((i = 0; i < nodes; i++)); do
		b=$(ip netns exec "$(node_ns $i)" tc -s qdisc show dev eth0 |
			sed -n 's/^ *Sent \([0-9]*\) bytes.*/\1/p' | head -1)
		echo "n${i}_up ${b:-0}"
		b=$(ip netns exec "$sw" tc -s qdisc show dev "p$i" |
			sed -n 's/^ *Sent \([0-9]*\) bytes.*/\1/p' | head -1)
		echo "n${i}_down ${b:-0}"
	done
}

# "idle total" jiffies of all CPUs (idle + iowait count as idle).
cpu_jiffies() {
	awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print $5 + $6, t; exit }' /proc/stat
}
idle_pct() { # IDLE0 TOTAL0 IDLE1 TOTAL1
	awk -v a="$1" -v b="$2" -v c="$3" -v d="$4" 'BEGIN { printf "%.1f", (d > b ? 100 * (c - a) / (d - b) : 0) }'
}

# run_mpi ARGS...: one mpirun of "bench_comm ARGS" across the emulated nodes.
# Ranks yield when idle: the host may have fewer cores than ranks.
# $mca: extra MCA arguments for this run.
mca=""
run_mpi() {
	timeout -k 10 "$run_timeout" \
		ip netns exec "$(node_ns 0)" unshare --uts /bin/sh -c \
		"hostname $(node_ns 0) && exec \"\$@\"" sh \
		"$MPIRUN" --hostfile "$hostfile" -np "$np" --map-by "ppr:$ppn:node" \
		--bind-to none \
		--mca plm_rsh_agent "$agent" --mca plm_rsh_no_tree_spawn 1 \
		--mca btl self,vader,tcp \
		--mca btl_tcp_if_include "$subnet" --mca oob_tcp_if_include "$subnet" \
		--mca mpi_yield_when_idle 1 $mca \
		-x ISLE_PLAN="$plan" -x ISLE_COMM_ASYNC=0 -x ISLE_COMM_PROBE_SHARE=0 \
		${ISLE_COMM_SEGMENT_BYTES:+-x ISLE_COMM_SEGMENT_BYTES} \
		"$BENCH" "$@" &
	# wait (unlike a foreground job) lets INT/TERM run the cleanup now.
	wait $!
}

mkdir -p "$(dirname "$out")"
# shellcheck source=bench/stamp.sh
source "$here/bench/stamp.sh"
isle_bench_begin
probe=$work/probe.json
echo "bench-comm: probing the link ($nodes nodes x $ppn ranks, uplink $rate)" >&2
run_mpi probe --ppn "$ppn" >"$probe"
cat "$probe" >&2
lat=$(sed -n 's/.*"lat_us": *\([0-9.]*\).*/\1/p' "$probe")

# The plan tells the shim which ranks share a node and what the links cost.
"$BENCH" plan --nodes "$nodes" --ppn "$ppn" --rate "$rate" \
	--lat-us "${lat:-50}" >"$plan"

results=$work/results links=$work/links idle=$work/idle
: >"$results"
: >"$links"
: >"$idle"
read -r run_i0 run_t0 < <(cpu_jiffies)
IFS=, read -ra algo_list <<<"$algos"
for a in "${algo_list[@]}"; do
	echo "bench-comm: $a" >&2
	mca=$(mca_of "$a")
	link_bytes >"$work/links0"
	read -r i0 t0 < <(cpu_jiffies)
	# A run that fails or times out (a loaded host) keeps the sizes it
	# finished; the others still run.
	run_mpi mpi --algo "$a" --min-bytes "$min_bytes" \
		--max-bytes "$max_bytes" >"$work/$a.out" ||
		echo "bench-comm: $a: failed or timed out (rc $?), partial" >&2
	read -r i1 t1 < <(cpu_jiffies)
	link_bytes >"$work/links1"
	echo "$a $(idle_pct "$i0" "$t0" "$i1" "$t1")" >>"$idle"
	# Bytes this algorithm sent on each shaped link.
	paste "$work/links0" "$work/links1" |
		awk -v a="$a" '{ print a, $1, $4 - $2 }' >>"$links"
	cat "$work/$a.out" >&2
	cat "$work/$a.out" >>"$results"
done
mca=""
read -r run_i1 run_t1 < <(cpu_jiffies)
echo "all_algos $(idle_pct "$run_i0" "$run_t0" "$run_i1" "$run_t1")" >>"$idle"

# Proof that the traffic went through the shaped uplinks, not around them.
shaped=0
while read -r l b; do
	case $l in *_up) shaped=$((shaped + b)) ;; esac
done < <(link_bytes)

# Single-core codec throughput and memcpy, outside the namespaces.
codecs=$work/codecs
read -r i0 t0 < <(cpu_jiffies)
taskset -c 0 "$BENCH" codecs >"$codecs"
read -r i1 t1 < <(cpu_jiffies)
echo "codecs $(idle_pct "$i0" "$t0" "$i1" "$t1")" >>"$idle"

# Convergence on Fashion-MNIST (no network emulation needed: it measures
# accuracy, not time).
converge=$work/converge
: >"$converge"
if [ "${ISLE_BENCH_CONVERGE:-1}" != 0 ]; then
	read -r i0 t0 < <(cpu_jiffies)
	B=$B "$here/scripts/bench-converge.sh" --out "$converge" ||
		echo "bench-comm: convergence runs skipped or failed (rc $?)" >&2
	read -r i1 t1 < <(cpu_jiffies)
	echo "converge $(idle_pct "$i0" "$t0" "$i1" "$t1")" >>"$idle"
fi

"$BENCH" report --results "$results" --codecs "$codecs" --probe "$probe" \
	--nodes "$nodes" --ppn "$ppn" --rate "$rate" --mtu "$mtu" \
	--shaped-bytes "$shaped" --links "$links" --idle "$idle" \
	--converge "$converge" --out "$out"
isle_bench_stamp "$out"
echo "bench-comm: wrote $out" >&2
