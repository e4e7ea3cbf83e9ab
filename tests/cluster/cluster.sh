# shellcheck shell=bash
# tests/cluster/cluster.sh: start and stop a real Slurm cluster on this host.
#
# One slurmctld plus N `slurmd -N <name>` daemons, all on 127.0.0.1, each on
# its own random free port, with auth/slurm + cred/slurm (generated 0600 key),
# fake GPUs as character devices (c 195 i) in a generated gres.conf, and a
# private temp dir per run (conf, state, spool, logs, devices). Run as root.
#
#   source tests/cluster/cluster.sh
#   isle_cluster_start --nodes 8 --gpus 4 --topology tree || exit 1
#   jobid=$(sbatch --parsable -N2 --gpus-per-node=4 -o "$ISLE_CLUSTER_DIR/jobs/%j.out" job.sh)
#   isle_wait_job "$jobid" 60 || { isle_cluster_logs; exit 1; }
#   isle_job_field "$jobid" NodeList
#   isle_cluster_stop
#
# isle_cluster_start [options]              returns 0, or 1 with a message + log tails
#   --nodes N            number of slurmd daemons (default 2; tested up to 32)
#   --gpus G             fake GPUs per node (default 4; 0 = no GRES)
#   --gpu-type T         GRES type: Gres=gpu:T:G and Type=T in gres.conf
#   --cpus C             CPUs per node (default 16)
#   --mem MB             RealMemory per node (default 16000)
#   --node-prefix P      node names P01..PNN (default n; 3 digits from 100 nodes)
#   --node-extra "K=V"   appended to every NodeName line (e.g. "Features=rack1")
#   --topology T         default|tree|block|isle|... -> TopologyPlugin=topology/T
#                        (default: default; default and flat both mean the
#                        release's flat plugin: topology/flat from 25.05 on). tree/block without --topo-conf get
#                        one switch / one block holding every node.
#                        isle also sets JobSubmitPlugins=isle when
#                        job_submit_isle.so is in the plugin path.
#   --topo-conf FILE     copied to etc/topology.conf (etc/topology.yaml if *.yaml)
#   --gres-conf FILE     copied to etc/gres.conf instead of the generated one
#   --gres-links "ROWS"  Links= per GPU: rows separated by ';', e.g.
#                        "-1,4,0,0;4,-1,0,0;0,0,-1,4;0,0,4,-1" (same on every node)
#   --slurm-extra LINES  appended to slurm.conf (repeatable; newlines allowed).
#                        A KEY=... line replaces the generated line of that key.
#   --plugstack FILE     copied to etc/plugstack.conf, PlugStackConfig set
#   --etc-file FILE      copied into etc/ beside slurm.conf (repeatable)
#   --plugin-dir DIR     prepended to PluginDir (default: <repo>/build/slurm if it
#                        exists); Slurm's own lib/slurm always follows
#   --ctld-port P        slurmctld port (default: random free port)
#   --node-port-base P   slurmd ports P..P+N-1 (default: random free ports)
#   --timeout S          seconds to wait for every node to be idle (default 90)
#   --name NAME          ClusterName (default isle)
#   --fabric FILE        an emulated fabric from the cluster file FILE (see
#                        tests/cluster/fabric.sh): every node a network + UTS
#                        namespace named and host-named after the file's
#                        node (the file sets the node names, count and GPUs
#                        per node; --nodes/--gpus/--node-prefix are ignored),
#                        slurmctld in one more; management network unshaped,
#                        data network (d0, 198.19.0.0/16) bridges and
#                        tbf-shaped veths copying FILE's switches and tiers.
#                        Slurm's clients are wrapped in $ISLE_CLUSTER_DIR/bin
#                        (first in PATH) to run on the management network.
#                        Needs root, ip, tc (tbf), nsenter, unshare.
#   --fabric-scale S     cable rates = tier bandwidth x S (default 0.001)
#   In supplied files and --slurm-extra, @DIR@ @ETC@ @DEVDIR@ @NODES@ are
#   replaced by the run dir, its etc/, the fake device dir and the node hostlist.
#   On success it exports:
#     ISLE_CLUSTER_DIR   the run dir: etc/ state/ spool/ log/ run/ dev/ jobs/ tmp/
#     SLURM_CONF         $ISLE_CLUSTER_DIR/etc/slurm.conf
#     PATH               Slurm's bin and sbin first
#     ISLE_SLURM_PREFIX ISLE_CLUSTER_NODES (hostlist) ISLE_CLUSTER_NODE_NAMES
#     (space separated) ISLE_CLUSTER_CTLD_PORT
#     with --fabric also ISLE_FABRIC_PREFIX (namespaces <prefix>-*),
#     ISLE_FABRIC_SCALE; node data addresses in $ISLE_CLUSTER_DIR/fabric/nodes
#     ("node NAME INDEX NETNS MGMT_IP DATA_IP")
#   and writes $ISLE_CLUSTER_DIR/env (sourceable by another shell).
#   It also installs EXIT/INT/TERM traps that stop every cluster this shell
#   started (an EXIT trap set before the call still runs after ours). Set
#   ISLE_NO_TRAP=1 to skip that. An EXIT trap set after the call replaces
#   ours: call isle_cluster_stop from it. Do not call it inside $(...): the
#   cluster would be stopped when that subshell exits.
#
# isle_cluster_stop [DIR]     cancel jobs, wait for the queue to drain, kill
#                             the daemons this harness started in DIR (default
#                             $ISLE_CLUSTER_DIR) and their slurmstepds, remove
#                             DIR unless ISLE_KEEP=1. Idempotent.
# isle_cluster_status [DIR]   daemons alive + sinfo; returns 1 if any died
# isle_cluster_logs [LINES]   print the tails of the daemons' logs (stderr)
# isle_wait_job JOBID [TIMEOUT]   wait until the job ends; prints its final
#                             state; returns 0 COMPLETED, 1 other end state,
#                             2 timeout (default 120 s)
# isle_job_field JOBID FIELD      first FIELD=value of `scontrol -d -o show job`
# isle_job_field_all JOBID FIELD  every FIELD=value (one per line; e.g. GRES
#                             per node from the -d detail)
# isle_job_gres_idx JOBID     "node idxlist" per node of a running job
# isle_idx_expand LIST        "0-2,5" -> "0,1,2,5"
# isle_ctld_restart [TIMEOUT] start a stopped or killed slurmctld again
#                             from its state; 1 if it does not answer
# isle_node_names             the node names, one per line
# isle_grep_q ARGS...         grep -q that reads all its input (pipefail-safe)
# isle_fabric_counters [DIR] per cable "A B TIER RATE_BIT BYTES_A_TO_B
#                             BYTES_B_TO_A" from the kernel's counters
# isle_cluster_require        for test scripts: exit 77 (skip) with a reason
#                             unless root and mknod are available, 1 when
#                             Slurm is not built
#
# Namespace: auth/slurm clients find their credential service at fixed
# paths (/run/slurm/sack.socket, /run/slurmctld/sack.socket) that every
# slurmd/slurmctld on the host recreates, so concurrent clusters would sign
# with each other's keys. Sourcing this file from a script therefore
# re-executes that script once inside a private mount namespace (unshare -m),
# and each cluster bind-mounts its own dirs over /run/slurm{,ctld,dbd} there.
# Source it first thing in the script (code before the source line runs
# twice). Child processes stay in the namespace; one cluster at a time per
# namespace. ISLE_NO_NS=1 disables this (tests/cluster/isle-cluster start
# does, since its daemons must serve the caller's shell).
#
# Environment: ISLE_SLURM_PREFIX (default $SLURM_PREFIX, else the prefix
# scripts/deps.sh --print gives for release $SLURM, 24.11, 25.11 or 26.05: e.g.
# /opt/isle/slurm-24.11.5), ISLE_TMPDIR (parent of run dirs, default
# $TMPDIR or /tmp), ISLE_KEEP=1, ISLE_NO_TRAP=1, ISLE_CLUSTER_QUIET=1,
# ISLE_NO_NS=1, ISLE_SKIP_PORT_CHECK=1 (tests: let the daemon hit EADDRINUSE).
#
# Ownership: processes are found by the run dir in their command line or open
# files, never by name alone, so other people's clusters are left alone.

if [ -n "${ISLE__CLUSTER_SH:-}" ]; then
	return 0
fi
ISLE__CLUSTER_SH=1

ISLE__REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/fabric.sh
source "$ISLE__REPO/tests/cluster/fabric.sh"
# The Slurm release: ISLE_SLURM_PREFIX, else SLURM_PREFIX (make exports both
# for the release it builds against), else the prefix scripts/deps.sh maps
# SLURM (24.11 by default, 25.11 or 26.05) to.
if [ -z "${ISLE_SLURM_PREFIX:-}" ]; then
	if [ -n "${SLURM_PREFIX:-}" ]; then
		ISLE_SLURM_PREFIX=$SLURM_PREFIX
	else
		ISLE_SLURM_PREFIX=$("$ISLE__REPO/scripts/deps.sh" --print | sed -n 's/^SLURM_PREFIX := //p')
	fi
fi
ISLE__STARTED_DIRS=()

# isle_grep_q ARGS...: `grep -q` for the right side of a pipe under
# pipefail. grep -q exits at the first match, and a writer still writing
# (scontrol's output past one buffer) then dies of SIGPIPE, which pipefail
# turns into a failed test; this one reads to the end.
isle_grep_q() {
	local n
	n=$(grep -c "$@")
	[ "${n:-0}" -gt 0 ]
}

# Why a mount namespace: auth/slurm clients (sbatch, srun, scontrol, libslurm)
# get their credentials from a sack socket at the fixed paths
# /run/slurm/sack.socket and /run/slurmctld/sack.socket, which every slurmd and
# slurmctld recreates. Two clusters on one host would sign with each other's
# keys ("decode_jwt ... failure" in slurmctld.log). So a script that sources
# this file is re-executed once in a private mount namespace (unshare -m), and
# isle_cluster_start bind-mounts per-run dirs over /run/slurm{,ctld,dbd} there:
# its daemons, its clients and the job steps all see that run's sockets.
# Source this file before doing anything else. ISLE_NO_NS=1 turns this off
# (then only one cluster at a time may run on the host).
isle__ns_inode() {
	stat -L -c %i /proc/self/ns/mnt 2>/dev/null
}

isle__want_reexec() {
	[ "${ISLE_NO_NS:-0}" = 1 ] && return 1
	if [ -n "${ISLE__NS_CHILD:-}" ]; then
		# First source after the re-exec: remember which namespace is ours.
		ISLE_MNTNS=$(isle__ns_inode)
		export ISLE_MNTNS
		unset ISLE__NS_CHILD
		return 1
	fi
	[ -n "${ISLE_MNTNS:-}" ] && [ "$ISLE_MNTNS" = "$(isle__ns_inode)" ] && return 1
	case $- in *i*) return 1 ;; esac
	[ "$(id -u)" = 0 ] && [ -f "$0" ] && command -v unshare >/dev/null || return 1
	unshare -m --propagation private true 2>/dev/null || return 1
	return 0
}

if isle__want_reexec; then
	export ISLE__NS_CHILD=1
	exec unshare -m --propagation private -- "$BASH" "$0" "$@"
fi

# Bind per-run sack dirs over /run/slurm{,ctld,dbd} when in our namespace.
isle__bind_sack_dirs() { # dir
	local d=$1 sub
	if [ -z "${ISLE_MNTNS:-}" ] || [ "$ISLE_MNTNS" != "$(isle__ns_inode)" ]; then
		isle__msg "warning: not in a private mount namespace; another cluster started on this host at the same time would break auth (see cluster.sh)"
		return 0
	fi
	for sub in slurm slurmctld slurmdbd; do
		mkdir -p "/run/$sub" "$d/sack/$sub" || return 1
		if ! mount --bind "$d/sack/$sub" "/run/$sub"; then
			isle__err "mount --bind $d/sack/$sub /run/$sub failed"
			return 1
		fi
		echo "/run/$sub" >>"$d/mounts"
	done
}

isle__unbind_sack_dirs() { # dir
	local d=$1 m
	[ -f "$d/mounts" ] || return 0
	[ "${ISLE_MNTNS:-}" = "$(isle__ns_inode)" ] || return 0
	while read -r m; do
		umount -l "$m" 2>/dev/null
	done < <(tac "$d/mounts")
	rm -f "$d/mounts"
}

isle__msg() {
	[ "${ISLE_CLUSTER_QUIET:-0}" = 1 ] || printf 'isle-cluster: %s\n' "$*" >&2
}

isle__err() {
	printf 'isle-cluster: ERROR: %s\n' "$*" >&2
}

# isle_cluster_require: exit 77 with the reason when a cluster cannot run
# here, 1 when Slurm is not built (make builds it first).
isle_cluster_require() {
	if [ "$(id -u)" != 0 ]; then
		echo "SKIP: the test cluster needs root (slurmd as root, mknod)"
		exit 77
	fi
	if [ ! -x "$ISLE_SLURM_PREFIX/sbin/slurmctld" ] || [ ! -x "$ISLE_SLURM_PREFIX/sbin/slurmd" ]; then
		echo "FAIL: Slurm not built in $ISLE_SLURM_PREFIX (make builds it first; or scripts/deps.sh)"
		exit 1
	fi
	local t
	t=$(mktemp -d "${ISLE_TMPDIR:-${TMPDIR:-/tmp}}/isle-req.XXXXXX") || exit 1
	if ! mknod "$t/c" c 195 0 2>/dev/null; then
		rm -rf "$t"
		echo "SKIP: cannot create character devices (mknod) in ${ISLE_TMPDIR:-${TMPDIR:-/tmp}}"
		exit 77
	fi
	rm -rf "$t"
}

# Ports in any TCP state on this host, one per line.
isle__used_ports() {
	ss -Htan 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }' | sort -un
}

isle__port_in_use() {
	[ -n "$(ss -Htan "( sport = :$1 )" 2>/dev/null)" ]
}

# Who holds port $1, for messages.
isle__port_owner() {
	local o
	o=$(ss -Htanp "( sport = :$1 )" 2>/dev/null | head -1 | grep -o 'users:(([^)]*))')
	echo "${o:-unknown process}"
}

# isle__pick_ports COUNT: COUNT distinct free ports below the ephemeral range.
isle__pick_ports() {
	local count=$1 p tries=0
	local -A used=()
	local out=()
	while read -r p; do
		[ -n "$p" ] && used[$p]=1
	done < <(isle__used_ports)
	while [ ${#out[@]} -lt "$count" ]; do
		tries=$((tries + 1))
		[ $tries -gt 100000 ] && return 1
		p=$((15000 + (RANDOM * 32768 + RANDOM) % 17000))
		[ -n "${used[$p]:-}" ] && continue
		used[$p]=1
		out+=("$p")
	done
	echo "${out[@]}"
}

isle__node_name() { # prefix width index
	if [ -n "${o_fab_names[0]:-}" ]; then
		echo "${o_fab_names[$(($3 - 1))]}"
		return
	fi
	printf '%s%0*d' "$1" "$2" "$3"
}

# isle__has_plugin FILE: FILE is in one of the $o_plugin_path directories.
isle__has_plugin() {
	local pd v
	IFS=: read -r -a pd <<<"$o_plugin_path"
	for v in "${pd[@]}"; do [ -e "$v/$1" ] && return 0; done
	return 1
}

isle__width() {
	local w=${#1}
	[ "$w" -lt 2 ] && w=2
	echo "$w"
}

isle__hostlist() { # prefix count
	if [ -n "${o_fab_names[0]:-}" ]; then
		local IFS=,
		echo "${o_fab_names[*]}"
		return
	fi
	local w
	w=$(isle__width "$2")
	if [ "$2" -eq 1 ]; then
		isle__node_name "$1" "$w" 1
	else
		printf '%s[%s-%s]' "$1" "$(printf '%0*d' "$w" 1)" "$(printf '%0*d' "$w" "$2")"
	fi
}

# Replace @DIR@ @ETC@ @DEVDIR@ @NODES@ in stdin.
isle__subst() { # dir nodes
	local d=$1 nodes=$2
	sed -e "s|@DIR@|$d|g" -e "s|@ETC@|$d/etc|g" -e "s|@DEVDIR@|$d/dev|g" -e "s|@NODES@|$nodes|g"
}

# isle__alive DIR PID: PID runs and is ours (its command line names DIR).
isle__alive() {
	local d=$1 pid=$2 args=()
	[ -n "$pid" ] || return 1
	# Builtins only: this runs for every daemon in each poll.
	{ mapfile -d '' -t args <"/proc/$pid/cmdline"; } 2>/dev/null || return 1
	[[ " ${args[*]} " == *"$d/etc/slurm.conf"* ]]
}

# Daemons recorded in DIR/pids ("role name pid" lines) that still run.
isle__live_daemons() {
	local d=$1 role name pid
	[ -f "$d/pids" ] || return 0
	while read -r role name pid; do
		isle__alive "$d" "$pid" && echo "$role $name $pid"
	done <"$d/pids"
	return 0
}

# PIDs of slurmstepd processes that belong to DIR (an open file under DIR,
# e.g. the slurmd log or spool socket) plus all their descendants.
isle__stepd_pids() {
	local d=$1 p pid
	local -A mine=()
	for p in $(find /proc/[0-9]*/fd -maxdepth 1 -lname "$d/*" 2>/dev/null | cut -d/ -f3 | sort -u); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = slurmstepd ] && mine[$p]=1
	done
	[ ${#mine[@]} -eq 0 ] && return 0
	# Add descendants (the job's tasks) until no change.
	local changed=1 ppid
	local psout
	psout=$(ps -e -o pid=,ppid= 2>/dev/null)
	while [ $changed = 1 ]; do
		changed=0
		while read -r pid ppid; do
			if [ -n "${mine[$ppid]:-}" ] && [ -z "${mine[$pid]:-}" ]; then
				mine[$pid]=1
				changed=1
			fi
		done <<<"$psout"
	done
	printf '%s\n' "${!mine[@]}"
}

# Run a Slurm client against the cluster in DIR, whatever the caller's env.
isle__slurm() { # dir cmd args...
	local d=$1 cmd=$2
	shift 2
	if [ -x "$d/bin/$cmd" ]; then
		SLURM_CONF="$d/etc/slurm.conf" "$d/bin/$cmd" "$@"
		return
	fi
	SLURM_CONF="$d/etc/slurm.conf" "$ISLE_SLURM_PREFIX/bin/$cmd" "$@"
}

# isle_cluster_logs [LINES] [DIR]: print the daemons' log tails to stderr.
isle_cluster_logs() {
	local -
	set +euo pipefail
	local lines=${1:-30} d=${2:-${ISLE_CLUSTER_DIR:-}} f n=0 max=${ISLE_LOG_NODES:-4}
	[ -n "$d" ] && [ -d "$d/log" ] || return 0
	for f in "$d/log/slurmctld.log" "$d/log/slurmctld.out"; do
		[ -s "$f" ] || continue
		printf '==== %s (last %s lines)\n' "$f" "$lines" >&2
		tail -n "$lines" "$f" >&2
	done
	for f in "$d"/log/slurmd-*.log "$d"/log/slurmd-*.out; do
		[ -s "$f" ] || continue
		n=$((n + 1))
		[ $n -gt "$max" ] && { echo "==== (more slurmd logs in $d/log)" >&2; break; }
		printf '==== %s (last %s lines)\n' "$f" "$lines" >&2
		tail -n "$lines" "$f" >&2
	done
}

# Log tails of the daemons that died, or of everything when none did.
isle__dump_failed() { # dir
	local d=$1 role name pid shown=0 f
	if [ -f "$d/pids" ]; then
		while read -r role name pid; do
			isle__alive "$d" "$pid" && continue
			for f in "$d/log/$role-$name.log" "$d/log/$role-$name.out" \
				"$d/log/$role.log" "$d/log/$role.out"; do
				[ -s "$f" ] || continue
				printf '==== %s (died; last 25 lines)\n' "$f" >&2
				tail -n 25 "$f" >&2
				shown=1
			done
			[ $shown = 1 ] && [ "$role" = slurmd ] && break
		done <"$d/pids"
	fi
	[ $shown = 1 ] || isle_cluster_logs 25 "$d"
}

# isle__wait_queue_empty DIR TIMEOUT: no job left pending/running/completing.
isle__wait_queue_empty() {
	local d=$1 timeout=$2 end q
	end=$((SECONDS + timeout))
	while :; do
		q=$(isle__slurm "$d" squeue -h -o '%A %T' 2>/dev/null | grep -Ev ' (COMPLETED|CANCELLED|FAILED|TIMEOUT|NODE_FAIL|PREEMPTED|BOOT_FAIL|DEADLINE|OUT_OF_MEMORY)$')
		[ -z "$q" ] && return 0
		[ $SECONDS -ge "$end" ] && { isle__msg "jobs still in the queue after ${timeout}s: $(echo "$q" | tr '\n' ' ')"; return 1; }
		sleep 0.5
	done
}

# isle__stop_dir DIR: the teardown described at isle_cluster_stop.
isle__stop_dir() {
	local d=$1 role name pid ctld="" live end i
	[ -n "$d" ] && [ -d "$d" ] || return 0
	ctld=$(isle__live_daemons "$d" | awk '$1 == "slurmctld" { print $3 }')
	if [ -n "$ctld" ]; then
		# Cancel everything first: slurmstepd outlives a killed slurmd.
		isle__slurm "$d" scancel --quiet --user=root >/dev/null 2>&1
		isle__wait_queue_empty "$d" "${ISLE_STOP_TIMEOUT:-30}" || true
	fi
	end=$((SECONDS + 10))
	while [ -n "$(isle__stepd_pids "$d")" ] && [ $SECONDS -lt "$end" ]; do
		sleep 0.3
	done
	live=$(isle__live_daemons "$d")
	if [ -n "$live" ]; then
		while read -r role name pid; do
			kill -TERM "$pid" 2>/dev/null
		done <<<"$live"
		for i in $(seq 1 50); do
			live=$(isle__live_daemons "$d")
			[ -z "$live" ] && break
			sleep 0.2
		done
		if [ -n "$live" ]; then
			isle__msg "killing daemons that ignored SIGTERM: $(echo "$live" | awk '{ printf "%s ", $2 }')"
			while read -r role name pid; do
				kill -KILL "$pid" 2>/dev/null
			done <<<"$live"
		fi
	fi
	for pid in $(isle__stepd_pids "$d"); do
		kill -KILL "$pid" 2>/dev/null
	done
	isle__fabric_down "$d"
	if [ -z "${ISLE__REAPING:-}" ] && [ -f "$d/fabric/reaper.pid" ]; then
		kill -TERM "$(cat "$d/fabric/reaper.pid")" 2>/dev/null
	fi
	isle__unbind_sack_dirs "$d"
	if [ "${ISLE_KEEP:-0}" = 1 ]; then
		isle__msg "kept $d (ISLE_KEEP=1)"
	else
		rm -rf "$d"
	fi
	return 0
}

# isle_cluster_stop [DIR]
isle_cluster_stop() {
	local -
	set +euo pipefail
	local d=${1:-${ISLE_CLUSTER_DIR:-}} i
	[ -n "$d" ] || return 0
	isle__stop_dir "$d"
	for i in "${!ISLE__STARTED_DIRS[@]}"; do
		[ "${ISLE__STARTED_DIRS[$i]}" = "$d" ] && unset 'ISLE__STARTED_DIRS[i]'
	done
	if [ "$d" = "${ISLE_CLUSTER_DIR:-}" ]; then
		unset ISLE_CLUSTER_DIR SLURM_CONF ISLE_CLUSTER_NODES ISLE_CLUSTER_NODE_NAMES ISLE_CLUSTER_CTLD_PORT
	fi
	return 0
}

isle__stop_all() {
	local d
	for d in "${ISLE__STARTED_DIRS[@]}"; do
		isle__stop_dir "$d"
	done
	ISLE__STARTED_DIRS=()
}

isle__on_exit() {
	local rc=$?
	local -
	set +euo pipefail
	isle__stop_all
	if [ -n "${ISLE__PREV_EXIT_TRAP:-}" ]; then
		eval "$ISLE__PREV_EXIT_TRAP"
	fi
	return $rc
}

isle__on_signal() {
	local -
	set +euo pipefail
	isle__msg "caught SIG$1: stopping the test cluster"
	isle__stop_all
	trap - "$1"
	[ "$1" = INT ] && exit 130
	exit 143
}

isle__install_traps() {
	[ "${ISLE_NO_TRAP:-0}" = 1 ] && return 0
	[ -n "${ISLE__TRAPS_SET:-}" ] && return 0
	local t
	t=$(trap -p EXIT)
	if [ -n "$t" ]; then
		t=${t#trap -- }
		t=${t% EXIT}
		eval "ISLE__PREV_EXIT_TRAP=$t"
	fi
	trap isle__on_exit EXIT
	trap 'isle__on_signal INT' INT
	trap 'isle__on_signal TERM' TERM
	ISLE__TRAPS_SET=1
}

# Start one daemon in the background, record "role name pid" in DIR/pids.
isle__spawn() { # dir role name cmd...
	local d=$1 role=$2 name=$3 out
	shift 3
	if [ "$role" = slurmctld ]; then out=$d/log/slurmctld.out; else out=$d/log/slurmd-$name.out; fi
	(
		# Close inherited descriptors (pipes of callers) above stderr.
		for f in /proc/"$BASHPID"/fd/*; do
			f=${f##*/}
			[ "$f" -gt 2 ] 2>/dev/null && eval "exec $f>&-" 2>/dev/null
		done
		# shellcheck disable=SC2030 # only the daemon needs it
		export SLURM_CONF="$d/etc/slurm.conf"
		exec "$@"
	) </dev/null >>"$out" 2>&1 &
	local pid=$! i
	echo "$role $name $pid" >>"$d/pids"
	# Until the subshell has exec'ed, its cmdline is this script's, and
	# isle__alive would call the daemon dead: wait for the exec (or its end).
	for ((i = 0; i < 300; i++)); do
		isle__alive "$d" "$pid" && break
		[ -e "/proc/$pid" ] || break
		sleep 0.05
	done
	# No "Terminated"/"Killed" job notices from this shell at teardown.
	disown "$pid" 2>/dev/null || true
}

# Did any recorded daemon die? Prints "role name" of the first one.
isle__first_dead() {
	local d=$1 role name pid
	while read -r role name pid; do
		isle__alive "$d" "$pid" || { echo "$role $name"; return 0; }
	done <"$d/pids"
	return 1
}

isle__write_conf() {
	local d=$1 i name port extra_keys
	local etc=$d/etc
	{
		echo "# Generated by tests/cluster/cluster.sh for $d"
		echo "ClusterName=$o_name"
		if [ -n "$o_fabric" ]; then
			echo "SlurmctldHost=ctl(198.18.0.1)"
		else
			echo "SlurmctldHost=localhost"
		fi
		echo "SlurmctldPort=$o_ctld_port"
		echo "SlurmdPort=${o_ports[0]}"
		echo "SlurmUser=root"
		echo "SlurmdUser=root"
		echo "AuthType=auth/slurm"
		echo "CredType=cred/slurm"
		# One host runs every node's daemons and every job's ranks, so a
		# step's prolog can wait a minute for a CPU; auth/slurm's 60 s
		# token (and the 120 s launch credential) would then expire
		# between slurmd and slurmstepd ("decode_jwt: token expired"),
		# and the job would be requeued.
		echo "AuthInfo=ttl=600,cred_expire=600"
		echo "StateSaveLocation=$d/state"
		echo "SlurmdSpoolDir=$d/spool/%n"
		echo "SlurmctldPidFile=$d/run/slurmctld.pid"
		echo "SlurmdPidFile=$d/run/slurmd-%n.pid"
		echo "SlurmctldLogFile=$d/log/slurmctld.log"
		echo "SlurmdLogFile=$d/log/slurmd-%n.log"
		echo "SlurmctldDebug=info"
		echo "SlurmdDebug=info"
		echo "PluginDir=$o_plugin_path"
		echo "SlurmdParameters=config_overrides"
		echo "ProctrackType=proctrack/linuxproc"
		echo "TaskPlugin=task/none"
		echo "JobAcctGatherType=jobacct_gather/none"
		echo "AccountingStorageType=accounting_storage/none"
		echo "JobCompType=jobcomp/none"
		echo "SelectType=select/cons_tres"
		echo "SelectTypeParameters=CR_Core"
		echo "SchedulerType=sched/backfill"
		echo "TopologyPlugin=topology/$o_topology"
		# topology/isle comes with job_submit/isle (reasons at submit).
		[ "$o_topology" = isle ] && isle__has_plugin job_submit_isle.so &&
			echo "JobSubmitPlugins=isle"
		[ "$o_gpus" -gt 0 ] && echo "GresTypes=gpu"
		[ -n "$o_plugstack" ] && echo "PlugStackConfig=$etc/plugstack.conf"
		echo "MpiDefault=none"
		echo "MailProg=/bin/true"
		echo "ReturnToService=2"
		echo "KillWait=5"
		echo "InactiveLimit=0"
		echo "MinJobAge=300"
		# One TmpFS per node (%n): PMIx puts each step's client dir
		# there, and nodes sharing one dir race on its mkdir (EEXIST).
		echo "TmpFS=$d/tmp/%n"
	} >"$etc/slurm.conf.base"
	# --slurm-extra KEY=... replaces the generated KEY line (not node/partition lines).
	extra_keys=$(printf '%s\n' "$o_extra" | sed -n 's/^[[:space:]]*\([A-Za-z][A-Za-z0-9_]*\)[[:space:]]*=.*/\1/p' |
		grep -viE '^(NodeName|PartitionName|NodeSet|DownNodes|FrontendName|Include)$' | tr '[:upper:]' '[:lower:]' | sort -u | tr '\n' ' ')
	{
		awk -v keys=" $extra_keys" '
			{ k = $0; sub(/=.*/, "", k); if (index(keys, " " tolower(k) " ") == 0) print }' "$etc/slurm.conf.base"
		local gres=""
		if [ "$o_gpus" -gt 0 ]; then
			gres=" Gres=gpu:${o_gpu_type:+$o_gpu_type:}$o_gpus"
		fi
		for ((i = 1; i <= o_nodes; i++)); do
			name=$(isle__node_name "$o_prefix" "$o_width" "$i")
			port=${o_ports[$((i - 1))]}
			if [ -n "$o_fabric" ]; then
				echo "NodeName=$name NodeHostname=$name NodeAddr=$(isle__fabric_mgmt_ip "$i") Port=$port CPUs=$o_cpus RealMemory=$o_mem$gres State=UNKNOWN${o_node_extra:+ $o_node_extra}"
				continue
			fi
			echo "NodeName=$name NodeHostname=localhost NodeAddr=127.0.0.1 Port=$port CPUs=$o_cpus RealMemory=$o_mem$gres State=UNKNOWN${o_node_extra:+ $o_node_extra}"
		done
		echo "PartitionName=gpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
		if [ -n "$o_extra" ]; then
			echo "# --slurm-extra"
			printf '%s\n' "$o_extra" | isle__subst "$d" "$o_hostlist"
		fi
	} >"$etc/slurm.conf"
	rm -f "$etc/slurm.conf.base"

	# gres.conf
	if [ -n "$o_gres_conf" ]; then
		isle__subst "$d" "$o_hostlist" <"$o_gres_conf" >"$etc/gres.conf"
	elif [ "$o_gpus" -gt 0 ]; then
		{
			echo "AutoDetect=off"
			if [ -n "$o_gres_links" ]; then
				local rows g
				IFS=';' read -r -a rows <<<"$o_gres_links"
				if [ ${#rows[@]} -ne "$o_gpus" ]; then
					isle__err "--gres-links has ${#rows[@]} rows, --gpus is $o_gpus"
					return 1
				fi
				for ((g = 0; g < o_gpus; g++)); do
					echo "NodeName=$o_hostlist Name=gpu${o_gpu_type:+ Type=$o_gpu_type} File=$d/dev/nvidia$g Links=${rows[$g]// /}"
				done
			elif [ "$o_gpus" -eq 1 ]; then
				echo "NodeName=$o_hostlist Name=gpu${o_gpu_type:+ Type=$o_gpu_type} File=$d/dev/nvidia0"
			else
				echo "NodeName=$o_hostlist Name=gpu${o_gpu_type:+ Type=$o_gpu_type} File=$d/dev/nvidia[0-$((o_gpus - 1))]"
			fi
		} >"$etc/gres.conf"
	fi

	# topology
	if [ -n "$o_topo_conf" ]; then
		local tname=topology.conf
		case $o_topo_conf in *.yaml | *.yml) tname=topology.yaml ;; esac
		isle__subst "$d" "$o_hostlist" <"$o_topo_conf" >"$etc/$tname"
	else
		case $o_topology in
		tree) echo "SwitchName=s0 Nodes=$o_hostlist" >"$etc/topology.conf" ;;
		block) echo "BlockName=b0 Nodes=$o_hostlist" >"$etc/topology.conf" ;;
		esac
	fi
	if [ -n "$o_plugstack" ]; then
		isle__subst "$d" "$o_hostlist" <"$o_plugstack" >"$etc/plugstack.conf"
	fi
	local f
	for f in "${o_etc_files[@]}"; do
		cp -- "$f" "$etc/" || { isle__err "cannot copy --etc-file $f"; return 1; }
	done
	return 0
}

# One attempt. Returns 0 up, 1 failure, 2 port taken by someone else meanwhile
# (retry with new ports).
isle__start_once() {
	local d i name role pid dead end nodes_state idle rc=1
	d=$(mktemp -d "${ISLE_TMPDIR:-${TMPDIR:-/tmp}}/isle.XXXXXX") || {
		isle__err "mktemp -d failed in ${ISLE_TMPDIR:-${TMPDIR:-/tmp}}"
		return 1
	}
	ISLE__STARTED_DIRS+=("$d")
	ISLE__CUR_DIR=$d
	mkdir -p "$d"/{etc,state,spool,log,run,dev,jobs,tmp} || return 1
	: >"$d/pids"
	for ((i = 1; i <= o_nodes; i++)); do
		mkdir -p "$d/spool/$(isle__node_name "$o_prefix" "$o_width" "$i")" \
			"$d/tmp/$(isle__node_name "$o_prefix" "$o_width" "$i")"
	done
	isle__bind_sack_dirs "$d" || return 1

	# Ports. On the fabric each daemon has its own stack: Slurm's defaults.
	if [ -n "$o_fabric" ]; then
		o_user_ctld_port=6817
		o_user_port_base=6818
		o_same_port=1
	fi
	if [ -z "$o_user_ctld_port" ] || [ -z "$o_user_port_base" ]; then
		local picked
		read -r -a picked <<<"$(isle__pick_ports $((o_nodes + 1)))"
		if [ ${#picked[@]} -ne $((o_nodes + 1)) ]; then
			isle__err "no free ports found"
			return 1
		fi
	fi
	if [ -n "$o_user_ctld_port" ]; then o_ctld_port=$o_user_ctld_port; else o_ctld_port=${picked[0]}; fi
	o_ports=()
	for ((i = 0; i < o_nodes; i++)); do
		if [ -n "$o_same_port" ]; then o_ports+=("$o_user_port_base"); elif [ -n "$o_user_port_base" ]; then o_ports+=($((o_user_port_base + i))); else o_ports+=("${picked[$((i + 1))]}"); fi
	done
	if [ "${ISLE_SKIP_PORT_CHECK:-0}" != 1 ] && [ -z "$o_fabric" ]; then
		if isle__port_in_use "$o_ctld_port"; then
			isle__err "slurmctld port $o_ctld_port is already in use (by $(isle__port_owner "$o_ctld_port")); choose another --ctld-port or omit it for a random free port"
			return 1
		fi
		for ((i = 0; i < o_nodes; i++)); do
			if isle__port_in_use "${o_ports[$i]}" || [ "${o_ports[$i]}" = "$o_ctld_port" ]; then
				isle__err "slurmd port ${o_ports[$i]} (node $(isle__node_name "$o_prefix" "$o_width" $((i + 1)))) is already in use (by $(isle__port_owner "${o_ports[$i]}")); choose another --node-port-base or omit it"
				return 1
			fi
		done
	fi

	# Key, devices, configuration.
	if ! (umask 077 && head -c 1024 /dev/urandom >"$d/etc/slurm.key" && chmod 0600 "$d/etc/slurm.key"); then
		isle__err "cannot write $d/etc/slurm.key"
		return 1
	fi
	local ndev=$o_gpus
	[ -n "$o_gres_conf" ] && [ "$ndev" -lt 16 ] && ndev=16
	for ((i = 0; i < ndev; i++)); do
		mknod "$d/dev/nvidia$i" c 195 "$i" || { isle__err "mknod $d/dev/nvidia$i failed (root needed; nodev mount?)"; return 1; }
	done
	isle__write_conf "$d" || return 1

	local sbin=$ISLE_SLURM_PREFIX/sbin conf=$d/etc/slurm.conf
	local ctl_wrap=() ss_wrap=()
	if [ -n "$o_fabric" ]; then
		mkdir -p "$d/fabric" && cp "$o_fab_plan" "$d/fabric/plan" || return 1
		# Without traps (isle-cluster start) the cluster outlives this
		# shell on purpose: no reaper then.
		[ "${ISLE_NO_TRAP:-0}" = 1 ] || isle__fabric_reaper "$d" "$$"
		isle__fabric_up "$d" "$o_fabric_scale" || return 1
		echo "$o_fabric_scale" >"$d/fabric/scale"
		isle__fabric_wrappers "$d"
		mapfile -t ctl_wrap < <(isle__fabric_cmd "$d" ctl)
		ss_wrap=(nsenter "--net=/run/netns/$(cat "$d/fabric/prefix")-ctl")
	fi

	# slurmctld, then the slurmds once it answers.
	isle__spawn "$d" slurmctld ctld "${ctl_wrap[@]}" "$sbin/slurmctld" -D -i -f "$conf"
	end=$((SECONDS + o_timeout))
	local ctldpid
	ctldpid=$(awk '$1 == "slurmctld" { print $3 }' "$d/pids")
	# Ping only once it listens: a ping to a closed port retries for seconds.
	while ! { "${ss_wrap[@]}" ss -Htlnp "( sport = :$o_ctld_port )" 2>/dev/null | isle_grep_q "pid=$ctldpid," &&
		isle__slurm "$d" scontrol ping 2>/dev/null | isle_grep_q 'is UP'; }; do
		if dead=$(isle__first_dead "$d"); then
			isle__err "slurmctld exited during startup (config $conf)"
			rc=1
			grep -qs 'Address already in use' "$d/log/slurmctld.log" "$d/log/slurmctld.out" && rc=2
			[ $rc = 2 ] && [ -n "$o_user_ctld_port" ] && {
				isle__err "slurmctld port $o_ctld_port is already in use"
				rc=1
			}
			isle__dump_failed "$d"
			return $rc
		fi
		if [ $SECONDS -ge "$end" ]; then
			isle__err "slurmctld did not answer within ${o_timeout}s"
			isle__dump_failed "$d"
			return 1
		fi
		sleep 0.1
	done
	for ((i = 1; i <= o_nodes; i++)); do
		name=$(isle__node_name "$o_prefix" "$o_width" "$i")
		local node_wrap=()
		[ -n "$o_fabric" ] && mapfile -t node_wrap < <(isle__fabric_cmd "$d" "$name")
		isle__spawn "$d" slurmd "$name" "${node_wrap[@]}" "$sbin/slurmd" -D -N "$name" -f "$conf"
	done

	# Wait for every node to be idle.
	while :; do
		nodes_state=$(isle__slurm "$d" sinfo -h -N -o '%N %T' 2>/dev/null | sort -u)
		idle=$(awk '$2 == "idle"' <<<"$nodes_state" | wc -l)
		[ "$idle" -eq "$o_nodes" ] && break
		if dead=$(isle__first_dead "$d"); then
			read -r role name <<<"$dead"
			rc=1
			local log=$d/log/$role-$name.log
			[ "$role" = slurmctld ] && log=$d/log/slurmctld.log
			if grep -qs 'Address already in use' "$log" "${log%.log}.out"; then
				rc=2
				if [ -n "$o_user_port_base" ] || [ -n "$o_user_ctld_port" ]; then
					isle__err "$role $name: its port is already in use (see $log)"
					rc=1
				fi
			fi
			isle__err "$role $name exited during startup"
			isle__dump_failed "$d"
			return $rc
		fi
		if [ $SECONDS -ge "$end" ]; then
			isle__err "only $idle of $o_nodes nodes idle after ${o_timeout}s; not idle:"
			awk '$2 != "idle" { printf "  %s %s\n", $1, $2 }' <<<"$nodes_state" | head -20 >&2
			isle__slurm "$d" sinfo -R -h -o '  %N: %E' 2>/dev/null | head -10 >&2
			isle__dump_failed "$d"
			return 1
		fi
		sleep 0.3
	done
	return 0
}

# isle_cluster_start [options]: see the top of this file.
isle_cluster_start() {
	local -
	set +euo pipefail
	local o_nodes=2 o_gpus=4 o_gpu_type="" o_cpus=16 o_mem=16000 o_prefix=n o_node_extra=""
	local o_topology=default o_topo_conf="" o_gres_conf="" o_gres_links="" o_extra="" o_plugstack=""
	local o_plugin_dir="" o_user_ctld_port="" o_user_port_base="" o_timeout=90 o_name=isle
	local o_etc_files=() o_ports=() o_ctld_port="" o_width o_hostlist o_plugin_path
	local o_fabric="" o_fabric_scale=0.001 o_fab_plan="" o_same_port=""
	local -a o_fab_names=()
	local a v
	while [ $# -gt 0 ]; do
		a=$1
		case $a in
		--*=*) v=${a#*=}; a=${a%%=*} ;;
		--*)
			if [ $# -lt 2 ]; then
				isle__err "option $a needs a value"
				return 1
			fi
			v=$2
			shift
			;;
		*) isle__err "unexpected argument '$a' (see tests/cluster/cluster.sh)"; return 1 ;;
		esac
		shift
		case $a in
		--nodes) o_nodes=$v ;;
		--gpus) o_gpus=$v ;;
		--gpu-type) o_gpu_type=$v ;;
		--cpus) o_cpus=$v ;;
		--mem) o_mem=$v ;;
		--node-prefix) o_prefix=$v ;;
		--node-extra) o_node_extra=$v ;;
		--topology) o_topology=${v#topology/} ;;
		--topo-conf) o_topo_conf=$v ;;
		--gres-conf) o_gres_conf=$v ;;
		--gres-links) o_gres_links=$v ;;
		--slurm-extra | --slurm-conf-extra) o_extra+="${o_extra:+$'\n'}$v" ;;
		--plugstack) o_plugstack=$v ;;
		--etc-file) o_etc_files+=("$v") ;;
		--plugin-dir) o_plugin_dir=$v ;;
		--ctld-port) o_user_ctld_port=$v ;;
		--node-port-base) o_user_port_base=$v ;;
		--timeout) o_timeout=$v ;;
		--name) o_name=$v ;;
		--fabric) o_fabric=$v ;;
		--fabric-scale) o_fabric_scale=$v ;;
		*) isle__err "unknown option $a (see tests/cluster/cluster.sh)"; return 1 ;;
		esac
	done

	# Validate before touching anything.
	local n
	for n in o_nodes o_gpus o_cpus o_mem o_timeout; do
		if ! [[ ${!n} =~ ^[0-9]+$ ]]; then
			isle__err "--${n#o_} must be a number, got '${!n}'"
			return 1
		fi
	done
	for n in o_user_ctld_port o_user_port_base; do
		if [ -n "${!n}" ] && { ! [[ ${!n} =~ ^[0-9]+$ ]] || [ "${!n}" -lt 1 ] || [ "${!n}" -gt 65535 ]; }; then
			isle__err "port '${!n}' is not a TCP port number"
			return 1
		fi
	done
	if [ "$o_nodes" -lt 1 ] || [ "$o_nodes" -gt 999 ]; then
		isle__err "--nodes must be 1..999, got $o_nodes"
		return 1
	fi
	if [ -n "$o_user_port_base" ] && [ $((o_user_port_base + o_nodes - 1)) -gt 65535 ]; then
		isle__err "--node-port-base $o_user_port_base + $o_nodes nodes passes 65535"
		return 1
	fi
	if ! [[ $o_prefix =~ ^[A-Za-z][A-Za-z0-9_-]*$ ]]; then
		isle__err "--node-prefix '$o_prefix' must be letters/digits (starting with a letter)"
		return 1
	fi
	for v in "$o_topo_conf" "$o_gres_conf" "$o_plugstack" "${o_etc_files[@]}"; do
		if [ -n "$v" ] && [ ! -r "$v" ]; then
			isle__err "cannot read file '$v'"
			return 1
		fi
	done
	if [ ! -x "$ISLE_SLURM_PREFIX/sbin/slurmctld" ] || [ ! -x "$ISLE_SLURM_PREFIX/sbin/slurmd" ]; then
		isle__err "no Slurm in $ISLE_SLURM_PREFIX (set ISLE_SLURM_PREFIX or run scripts/deps.sh)"
		return 1
	fi
	if [ "$(id -u)" != 0 ]; then
		isle__err "must run as root (slurmd runs jobs as root here and mknod needs root)"
		return 1
	fi
	# Slurm 25.05 renamed topology/default to topology/flat (and reads
	# "topology/default" in slurm.conf as flat): take either name on either
	# release, and write the one the release has.
	case $o_topology in default | flat)
		[ -e "$ISLE_SLURM_PREFIX/lib/slurm/topology_flat.so" ] && o_topology=flat || o_topology=default ;;
	esac
	if [ ! -e "$ISLE_SLURM_PREFIX/lib/slurm/topology_$o_topology.so" ]; then
		local found="" pd
		IFS=: read -r -a pd <<<"${o_plugin_dir:-$ISLE__REPO/build/slurm}"
		for v in "${pd[@]}"; do [ -e "$v/topology_$o_topology.so" ] && found=1; done
		if [ -z "$found" ]; then
			isle__err "topology plugin topology/$o_topology not found (topology_$o_topology.so in ${o_plugin_dir:-$ISLE__REPO/build/slurm} or $ISLE_SLURM_PREFIX/lib/slurm)"
			return 1
		fi
	fi
	if [ -z "$o_plugin_dir" ] && [ -d "$ISLE__REPO/build/slurm" ]; then
		o_plugin_dir=$ISLE__REPO/build/slurm
	fi
	o_plugin_path=$ISLE_SLURM_PREFIX/lib/slurm
	if [ -n "$o_plugin_dir" ]; then
		o_plugin_dir=$(cd "$o_plugin_dir" 2>/dev/null && pwd) || {
			isle__err "--plugin-dir: no such directory"
			return 1
		}
		o_plugin_path=$o_plugin_dir:$o_plugin_path
	fi
	if [ -n "$o_fabric" ]; then
		isle__fabric_check_tools || return 1
		if ! [[ $o_fabric_scale =~ ^[0-9]*\.?[0-9]+([eE]-?[0-9]+)?$ ]] ||
			! awk -v s="$o_fabric_scale" 'BEGIN { exit !(s > 0 && s <= 1) }'; then
			isle__err "--fabric-scale must be a number in (0, 1], got '$o_fabric_scale'"
			return 1
		fi
		[ -r "$o_fabric" ] || { isle__err "cannot read --fabric file '$o_fabric'"; return 1; }
		o_fab_plan=$(mktemp "${ISLE_TMPDIR:-${TMPDIR:-/tmp}}/isle-fabric-plan.XXXXXX") || return 1
		local pd
		pd=$(mktemp -d "${ISLE_TMPDIR:-${TMPDIR:-/tmp}}/isle-fabric-plan.XXXXXX") || return 1
		if ! isle__fabric_plan "$pd" "$o_fabric"; then
			rm -rf "$pd" "$o_fab_plan"
			return 1
		fi
		mv "$pd/fabric/plan" "$o_fab_plan"
		rm -rf "$pd"
		mapfile -t o_fab_names < <(isle__fabric_nodes "$o_fab_plan")
		local gcounts
		gcounts=$(awk '$1 == "node" { print $3 }' "$o_fab_plan" | sort -u)
		if [ ${#o_fab_names[@]} -eq 0 ] || [ "$(echo "$gcounts" | wc -l)" != 1 ]; then
			isle__err "--fabric $o_fabric: needs nodes with one GPU count (found: $(echo "$gcounts" | tr '\n' ' '))"
			rm -f "$o_fab_plan"
			return 1
		fi
		# The controller's and the switches' namespaces are <prefix>-ctl
		# and <prefix>-fab.
		for v in "${o_fab_names[@]}"; do
			case $v in ctl | fab | probe)
				isle__err "--fabric $o_fabric: node name '$v' is reserved for the fabric's own namespaces"
				rm -f "$o_fab_plan"
				return 1
				;;
			esac
		done
		o_nodes=${#o_fab_names[@]}
		o_gpus=$gcounts
	fi
	o_width=$(isle__width "$o_nodes")
	o_hostlist=$(isle__hostlist "$o_prefix" "$o_nodes")

	# A job or srun inherited from an outer allocation would confuse clients.
	unset SLURM_JOB_ID SLURM_JOBID SLURM_STEP_ID SLURM_NODELIST SLURM_JOB_NODELIST

	local other
	for other in "${ISLE__STARTED_DIRS[@]}"; do
		if [ -f "$other/mounts" ]; then
			isle__msg "warning: $other is still running in this mount namespace; its clients will now reach the new cluster's sack socket (stop it first, or start the second cluster from a separate script)"
		fi
	done
	isle__install_traps
	local attempt rc t0=$SECONDS
	for attempt in 1 2 3; do
		ISLE__CUR_DIR=""
		isle__start_once && rc=0 || rc=$?
		[ $rc = 0 ] && break
		[ -n "$ISLE__CUR_DIR" ] && isle_cluster_stop "$ISLE__CUR_DIR"
		if [ $rc != 2 ]; then
			[ -n "$o_fab_plan" ] && rm -f "$o_fab_plan"
			return 1
		fi
		isle__msg "a port was taken while starting; retrying with new ports (attempt $((attempt + 1)))"
	done
	[ -n "$o_fab_plan" ] && rm -f "$o_fab_plan"
	[ $rc = 0 ] || return 1

	local d=$ISLE__CUR_DIR names=() i
	for ((i = 1; i <= o_nodes; i++)); do
		names+=("$(isle__node_name "$o_prefix" "$o_width" "$i")")
	done
	export ISLE_CLUSTER_DIR=$d
	# shellcheck disable=SC2031 # the subshell was the daemon's
	export SLURM_CONF=$d/etc/slurm.conf
	export ISLE_SLURM_PREFIX
	export ISLE_CLUSTER_NODES=$o_hostlist
	export ISLE_CLUSTER_NODE_NAMES="${names[*]}"
	export ISLE_CLUSTER_CTLD_PORT=$o_ctld_port
	case ":$PATH:" in
	":$ISLE_SLURM_PREFIX/bin:$ISLE_SLURM_PREFIX/sbin:"*) ;;
	*) export PATH="$ISLE_SLURM_PREFIX/bin:$ISLE_SLURM_PREFIX/sbin:$PATH" ;;
	esac
	if [ -n "$o_fabric" ]; then
		export PATH="$d/bin:$PATH"
		ISLE_FABRIC_PREFIX=$(cat "$d/fabric/prefix")
		export ISLE_FABRIC_PREFIX ISLE_FABRIC_SCALE=$o_fabric_scale
	fi
	{
		echo "export ISLE_CLUSTER_DIR='$d'"
		echo "export SLURM_CONF='$SLURM_CONF'"
		echo "export ISLE_SLURM_PREFIX='$ISLE_SLURM_PREFIX'"
		echo "export ISLE_CLUSTER_NODES='$o_hostlist'"
		echo "export ISLE_CLUSTER_NODE_NAMES='${names[*]}'"
		echo "export ISLE_CLUSTER_CTLD_PORT='$o_ctld_port'"
		echo "export PATH='$ISLE_SLURM_PREFIX/bin:$ISLE_SLURM_PREFIX/sbin':\"\$PATH\""
		[ -n "$o_fabric" ] && echo "export PATH='$d/bin':\"\$PATH\" ISLE_FABRIC_PREFIX='$ISLE_FABRIC_PREFIX' ISLE_FABRIC_SCALE='$o_fabric_scale'"
	} >"$d/env"
	isle__msg "cluster up: $o_nodes nodes $o_hostlist x $o_gpus GPUs, topology/$o_topology, slurmctld port $o_ctld_port, dir $d ($((SECONDS - t0))s)"
	return 0
}

# isle_cluster_status [DIR]
isle_cluster_status() {
	local -
	set +euo pipefail
	local d=${1:-${ISLE_CLUSTER_DIR:-}} role name pid total=0 alive=0
	if [ -z "$d" ] || [ ! -f "$d/pids" ]; then
		isle__err "no cluster (give its dir or set ISLE_CLUSTER_DIR)"
		return 1
	fi
	while read -r role name pid; do
		total=$((total + 1))
		if isle__alive "$d" "$pid"; then alive=$((alive + 1)); else echo "dead: $role $name (pid $pid)"; fi
	done <"$d/pids"
	echo "cluster $d: $alive of $total daemons running"
	isle__slurm "$d" sinfo -N -o '%N %T %G' 2>/dev/null | sort -u
	[ "$alive" -eq "$total" ]
}

isle_node_names() {
	local n
	for n in ${ISLE_CLUSTER_NODE_NAMES:-}; do echo "$n"; done
}

# isle_ctld_restart [TIMEOUT]: start slurmctld again in the running cluster
# (after a test stopped or killed it), from its saved state; returns once it
# answers, or 1 after TIMEOUT (120) seconds.
isle_ctld_restart() {
	local d=${ISLE_CLUSTER_DIR:?no cluster} end wrap=()
	end=$((SECONDS + ${1:-120}))
	[ -f "$d/fabric/prefix" ] && mapfile -t wrap < <(isle__fabric_cmd "$d" ctl)
	sed -i '/^slurmctld /d' "$d/pids"
	isle__spawn "$d" slurmctld ctld "${wrap[@]}" "$ISLE_SLURM_PREFIX/sbin/slurmctld" \
		-D -i -f "$d/etc/slurm.conf"
	until isle__slurm "$d" scontrol ping 2>/dev/null | isle_grep_q 'is UP'; do
		[ $SECONDS -lt "$end" ] || return 1
		sleep 0.5
	done
}

# isle_job_gres_idx JOBID: one "node idxlist" line per node of a running
# job, from scontrol -d (which groups nodes with equal indices: n[01-02]).
isle_job_gres_idx() {
	isle__slurm "${ISLE_CLUSTER_DIR:?no cluster}" scontrol -d show job "$1" | awk '
		/^[[:space:]]+Nodes=/ {
			node = ""; idx = ""
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^Nodes=/) node = substr($i, 7)
				if ($i ~ /^GRES=/ && match($i, /IDX:[0-9,-]+/))
					idx = substr($i, RSTART + 4, RLENGTH - 4)
			}
			if (node != "") print node, idx
		}' | while read -r nodes idx; do
		isle__slurm "$ISLE_CLUSTER_DIR" scontrol show hostnames "$nodes" |
			while read -r n; do echo "$n $idx"; done
	done
}

# isle_idx_expand "0-2,5" -> "0,1,2,5" (the form of CUDA_VISIBLE_DEVICES).
isle_idx_expand() {
	local part parts out=() a b i
	IFS=, read -r -a parts <<<"$1"
	for part in "${parts[@]}"; do
		if [[ $part == *-* ]]; then
			a=${part%-*} b=${part#*-}
			for ((i = a; i <= b; i++)); do out+=("$i"); done
		else
			out+=("$part")
		fi
	done
	local IFS=,
	echo "${out[*]}"
}

isle_job_field_all() { # jobid field
	local -
	set +euo pipefail
	isle__slurm "${ISLE_CLUSTER_DIR:?no cluster}" scontrol -d -o show job "$1" 2>/dev/null |
		awk -v f="$2" '{ for (i = 1; i <= NF; i++) if (index($i, f "=") == 1) print substr($i, length(f) + 2) }'
}

isle_job_field() { # jobid field
	isle_job_field_all "$1" "$2" | head -1
}

# isle_wait_job JOBID [TIMEOUT]
isle_wait_job() {
	local -
	set +euo pipefail
	local id=$1 timeout=${2:-120} state="" end
	end=$((SECONDS + timeout))
	while :; do
		state=$(isle_job_field "$id" JobState)
		case $state in
		COMPLETED) echo "$state"; return 0 ;;
		FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE | PREEMPTED | SPECIAL_EXIT)
			echo "$state"
			return 1
			;;
		esac
		if [ $SECONDS -ge "$end" ]; then
			isle__err "job $id still '${state:-unknown}' after ${timeout}s"
			echo "${state:-UNKNOWN}"
			return 2
		fi
		sleep 0.3
	done
}
