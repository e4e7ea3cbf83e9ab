#!/bin/bash
# ibsim-discover.sh - runs a real `ibnetdiscover` against an ibsim-simulated
# fabric and writes the dump.
#
#   scripts/ibsim-discover.sh NETFILE OUT [-- IBNETDISCOVER-OPTIONS...]
#
# Starts its own `ibsim -s -n NETFILE` on a private socket name
# (IBSIM_SOCKNAME, an abstract unix socket, so parallel runs never meet),
# runs ibnetdiscover under umad2sim's LD_PRELOAD, writes OUT, and stops only
# the ibsim it started. Exit: 0 done, 77 ibsim or umad2sim not installed,
# 1 failure (ibsim's log is shown).
set -uo pipefail

[ $# -ge 2 ] || { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
net=$1 out=$2
shift 2
[ "${1:-}" = "--" ] && shift
[ -r "$net" ] || { echo "ibsim-discover: cannot read $net" >&2; exit 1; }

UMAD2SIM=${UMAD2SIM:-/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so}
command -v ibsim >/dev/null || { echo "ibsim-discover: ibsim not installed (ibsim-utils)" >&2; exit 77; }
command -v ibnetdiscover >/dev/null || { echo "ibsim-discover: ibnetdiscover not installed (infiniband-diags)" >&2; exit 77; }
[ -r "$UMAD2SIM" ] || { echo "ibsim-discover: $UMAD2SIM not found (libumad2sim0)" >&2; exit 77; }

work=$(mktemp -d /tmp/isle-ibsim.XXXXXX) || exit 1
export IBSIM_SOCKNAME="isle-$$-$RANDOM"
sim_pid=
cleanup() {
	if [ -n "$sim_pid" ] && kill -0 "$sim_pid" 2>/dev/null; then
		kill "$sim_pid" 2>/dev/null
		wait "$sim_pid" 2>/dev/null
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# ibsim reads commands from stdin unless -n; keep stdin closed anyway.
ibsim -s -n "$net" </dev/null >"$work/ibsim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 1 100); do
	grep -q 'Network simulator ready' "$work/ibsim.log" 2>/dev/null && break
	kill -0 "$sim_pid" 2>/dev/null || break
	sleep 0.1
done
if ! grep -q 'Network simulator ready' "$work/ibsim.log"; then
	echo "ibsim-discover: ibsim did not start on $net:" >&2
	tail -20 "$work/ibsim.log" >&2
	exit 1
fi

# umad2sim retries forever when it cannot reach the simulator: bound it.
if ! timeout 120 env LD_PRELOAD="$UMAD2SIM" ibnetdiscover "$@" >"$work/dump" 2>"$work/ibnd.err"; then
	echo "ibsim-discover: ibnetdiscover failed:" >&2
	grep -v 'attached as client' "$work/ibnd.err" | tail -20 >&2
	exit 1
fi
mv "$work/dump" "$out"
