#!/bin/bash
# 47-fabric-kill: the fabric benchmark killed midway leaves nothing behind.
# bench/fabric/run.sh --quick runs in the background; once MPI ranks run
# inside the node namespaces it gets SIGKILL (none of its traps run), and in
# a second run SIGTERM. Within a minute and a half there must be no run
# dir, no namespace <prefix>-* (and with them no bridge or veth: they were
# only ever made inside those namespaces), no /run/netns entry, no process
# naming the run dir and no slurmstepd holding a file in it. The harness's
# reaper (tests/cluster/fabric.sh) does the teardown.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
isle_cluster_require
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-t47.XXXXXX")
pid=""
cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

# kill_midway SIG: one run killed with SIG once its ranks run.
kill_midway() {
	local sig=$1 log=$work/log-$1 rc d p end running l
	# Its own TMPDIR: the runner's work dir (its EXIT trap never runs) goes
	# with ours; the cluster's run dir lands there too.
	mkdir -p "$work/tmp-$sig"
	TMPDIR=$work/tmp-$sig B=$repo/build setsid "$repo/bench/fabric/run.sh" --quick --configs isle \
		--steps 40 --out "$work/fabric.json" >"$log" 2>&1 </dev/null &
	pid=$!

	end=$((SECONDS + 180))
	while ! grep -q '^fabric-bench: jobs submitted' "$log"; do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			rc=$?
			if [ $rc = 77 ]; then
				grep SKIP "$log"
				exit 77
			fi
			tail -20 "$log"
			echo "FAIL: the runner ended ($rc) before submitting its jobs"
			exit 1
		fi
		[ $SECONDS -lt $end ] || { tail -20 "$log"; echo "FAIL: no jobs submitted within 180 s"; exit 1; }
		sleep 1
	done
	read -r d p < <(sed -n 's/^fabric-bench: run dir \([^ ]*\) prefix \([^ ]*\) .*/\1 \2/p' "$log" | tail -1)
	[ -n "$d" ] && [ -n "$p" ] || { echo "FAIL: no run dir / prefix in the log"; exit 1; }
	# Wait until MPI ranks run inside the node namespaces.
	ranks() {
		local ns pid n=0
		for ns in $(ip netns list 2>/dev/null | awk -v p="$p-" 'index($1, p) == 1 { print $1 }'); do
			for pid in $(ip netns pids "$ns" 2>/dev/null); do
				[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = fabric_job ] && n=$((n + 1))
			done
		done
		echo $n
	}
	end=$((SECONDS + 90))
	until [ "$(ranks)" -gt 0 ]; do
		[ $SECONDS -lt $end ] || { tail -20 "$log"; echo "FAIL: no MPI rank ran within 90 s"; exit 1; }
		sleep 1
	done
	running=$(grep -lsF "$d/" /proc/[0-9]*/cmdline | wc -l)
	echo "     SIG$sig to the runner (pid $pid): $running processes naming $d, $(ranks) MPI ranks, $(ip netns list 2>/dev/null | grep -c "^$p-") namespaces up"
	kill -"$sig" "$pid"
	wait "$pid" 2>/dev/null
	pid=""

	left() {
		local out=""
		[ -e "$d" ] && out+="run dir; "
		ip netns list 2>/dev/null | isle_grep_q "^$p-" && out+="namespaces $(ip netns list 2>/dev/null | grep -c "^$p-"); "
		ls /run/netns 2>/dev/null | isle_grep_q "^$p-" && out+="/run/netns entries; "
		grep -lsF "$d/" /proc/[0-9]*/cmdline >/dev/null 2>&1 && out+="processes naming $d; "
		find /proc/[0-9]*/fd -maxdepth 1 -lname "$d/*" 2>/dev/null | isle_grep_q . && out+="processes holding files in $d; "
		echo "$out"
	}
	end=$((SECONDS + 90))
	while :; do
		l=$(left)
		[ -z "$l" ] && break
		if [ $SECONDS -ge $end ]; then
			echo "FAIL: 90 s after SIG$sig still there: $l"
			exit 1
		fi
		sleep 1
	done
	echo "ok   nothing of $p left after SIG$sig"
}

# SIGKILL: no trap of the runner runs, the harness's reaper tears down.
# SIGTERM: the runner's own traps do.
kill_midway KILL
kill_midway TERM
echo "PASS"
