# shellcheck shell=bash
# tests/integration/lib/fabric-bench.sh: what the tests that run
# bench/fabric/run.sh to its end share (49, 66). Sourced with $repo set; it
# sources the cluster harness, skips (77) without a test cluster or jq, and
# makes $work, a directory removed on exit.
#
#   fail MSG...     prints "FAIL: MSG" and counts it in $fails.
#   isle_fabric_bench_run OUT LINES ARGS...   runs bench/fabric/run.sh ARGS
#       --out OUT with its log in $work/log; exits 77 when the runner skips;
#       when it fails, prints the last LINES of its "fabric-bench:" lines
#       (each failed job, Slurm's reason, a hung job's stacks) and counts a
#       failure; exits 1 when OUT is missing or empty.
#   isle_fabric_bench_leftovers   counts a failure for each run dir,
#       namespace <prefix>-*, /run/netns entry or process naming the run dir
#       that a run in $work/log left behind.
#   isle_fabric_bench_end   exits 1 after a failure, else prints PASS.

: "${repo:?set repo before sourcing fabric-bench.sh}"
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
isle_cluster_require
command -v jq >/dev/null || {
	echo "SKIP: jq not installed"
	exit 77
}

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-$(basename "$0" .sh).XXXXXX")
trap 'rm -rf "$work"' EXIT
fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

isle_fabric_bench_run() { # out lines args...
	local res=$1 lines=$2 rc
	shift 2
	B=$repo/build "$repo/bench/fabric/run.sh" "$@" --out "$res" >"$work/log" 2>&1
	rc=$?
	if [ $rc = 77 ]; then
		grep SKIP "$work/log"
		exit 77
	fi
	if [ $rc != 0 ]; then
		grep '^fabric-bench: ' "$work/log" | tail -"$lines"
		fail "runner exited $rc"
	fi
	[ -s "$res" ] || {
		echo "FAIL: no result file"
		exit 1
	}
}

isle_fabric_bench_leftovers() {
	local d p
	while read -r d p; do
		[ -e "$d" ] && fail "run dir $d left behind"
		ip netns list 2>/dev/null | isle_grep_q "^$p-" && fail "namespaces $p-* left behind"
		ls /run/netns 2>/dev/null | isle_grep_q "^$p-" && fail "/run/netns/$p-* left behind"
		if grep -lsF "$d/" /proc/[0-9]*/cmdline >/dev/null 2>&1; then
			fail "processes of $d left behind"
		fi
		echo "ok   nothing left of $p"
	done < <(sed -n 's/^fabric-bench: run dir \([^ ]*\) prefix \([^ ]*\) .*/\1 \2/p' "$work/log")
}

isle_fabric_bench_end() {
	[ "$fails" = 0 ] || exit 1
	echo "PASS"
}
