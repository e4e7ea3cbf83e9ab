#!/bin/bash
# 61-fabric-hang-report: a hung benchmark job is explained, not only counted.
# bench/fabric/run.sh --quick runs one 2-node TP=8 training job with a
# 2-minute time limit (FABRIC_JOB_TIME_MIN); once its 8 ranks run, all of
# them get SIGSTOP, so the job hangs until Slurm ends it. The runner must
# then fail and say, on its own "fabric-bench:" lines (what test 49 prints
# when it fails):
#  - that the job neared its time limit (the stacks were taken then);
#  - Slurm's reason (TimeLimit) and the controller's "Time limit exhausted";
#  - for the ranks, where each one waited: the innermost frames of its main
#    thread, down to main() (gdb; skipped without gdb);
#  - and nothing of the run is left behind.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
isle_cluster_require
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }
command -v gdb >/dev/null || { echo "SKIP: gdb not installed (the stacks of a hung job come from it)"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-t54.XXXXXX")
pid="" stopped=""
cleanup() {
	[ -n "$stopped" ] && kill -CONT $stopped 2>/dev/null
	[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

log=$work/log
FABRIC_JOB_TIME_MIN=2 B=$repo/build "$repo/bench/fabric/run.sh" --quick --configs tree --jobs 1 \
	--steps 100000 --out "$work/fabric.json" >"$log" 2>&1 </dev/null &
pid=$!

# The job's ranks: fabric_job processes in the run's node namespaces.
ranks() {
	local ns p
	for ns in $(ip netns list 2>/dev/null | awk -v p="$prefix-" 'index($1, p) == 1 { print $1 }'); do
		for p in $(ip netns pids "$ns" 2>/dev/null); do
			[ "$(cat "/proc/$p/comm" 2>/dev/null)" = fabric_job ] && echo "$p"
		done
	done
}
prefix=""
end=$((SECONDS + 240))
while :; do
	if ! kill -0 "$pid" 2>/dev/null; then
		wait "$pid"
		rc=$?
		pid=""
		if [ $rc = 77 ]; then
			grep SKIP "$log"
			exit 77
		fi
		tail -20 "$log"
		echo "FAIL: the runner ended ($rc) before its job's ranks ran"
		exit 1
	fi
	[ -n "$prefix" ] || prefix=$(sed -n 's/^fabric-bench: run dir [^ ]* prefix \([^ ]*\) .*/\1/p' "$log" | tail -1)
	# All 8 ranks up and past MPI_Init (the job's first line is out).
	if [ -n "$prefix" ] && [ "$(ranks | wc -l)" -ge 8 ] &&
		grep -qs '^fabric_job: train' "$(sed -n 's/^fabric-bench: run dir \([^ ]*\) .*/\1/p' "$log" | tail -1)/jobs/1.out"; then
		break
	fi
	[ $SECONDS -lt $end ] || { tail -20 "$log"; echo "FAIL: the job's 8 ranks did not run within 240 s"; exit 1; }
	sleep 1
done
stopped=$(ranks | tr '\n' ' ')
kill -STOP $stopped
echo "     stopped the job's ranks: $stopped"

# Slurm ends the job at its 2-minute limit; the runner then reports.
end=$((SECONDS + 420))
while kill -0 "$pid" 2>/dev/null; do
	[ $SECONDS -lt $end ] || { tail -30 "$log"; echo "FAIL: the runner did not end within 420 s of the hang"; exit 1; }
	sleep 2
done
wait "$pid"
rc=$?
pid="" stopped=""

[ $rc = 1 ] || fail "runner exited $rc, want 1 (a job failed)"
grep -q '^fabric-bench: job 1 is near its time limit: stacks' "$log" || fail "no stacks taken before the time limit"
grep -q '^fabric-bench: job 1 (train 7b) TIMEOUT' "$log" || fail "job 1 not reported as TIMEOUT"
grep -q '^fabric-bench: diag job 1: reason TimeLimit' "$log" || fail "Slurm's reason missing"
grep -q '^fabric-bench: diag job 1: slurmctld: .*Time limit exhausted' "$log" || fail "the controller's line missing"
n=$(grep -cE '^fabric-bench: diag job 1: gb[0-9]+ fabric_job rank [0-7] \(.*\): .* < main$' "$log")
[ "$n" -ge 1 ] || fail "no rank's frames down to main()"
echo "ok   $n of 8 ranks with their frames, e.g.: $(grep -m1 -E '^fabric-bench: diag job 1: gb[0-9]+ fabric_job rank' "$log" | cut -c1-200)"

# Nothing of the run left.
while read -r d p; do
	[ -e "$d" ] && fail "run dir $d left behind"
	ip netns list 2>/dev/null | isle_grep_q "^$p-" && fail "namespaces $p-* left behind"
	grep -lsF "$d/" /proc/[0-9]*/cmdline >/dev/null 2>&1 && fail "processes of $d left behind"
done < <(sed -n 's/^fabric-bench: run dir \([^ ]*\) prefix \([^ ]*\) .*/\1 \2/p' "$log")

if [ $fails != 0 ]; then
	grep '^fabric-bench: ' "$log" | tail -40
	exit 1
fi
echo "PASS"
