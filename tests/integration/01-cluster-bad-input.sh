#!/bin/bash
# 01-cluster-bad-input: the harness under bad input. Each case must fail with
# a clear message, exit non-zero, and leave no daemon of that run behind
# (checked by command line and by open files under this test's private dir,
# so other people's clusters on the host do not matter).
#   a. bad options (no Slurm started)
#   b. --ctld-port on a port something else listens on (caught before start)
#   c. a slurmd whose port is taken (ISLE_SKIP_PORT_CHECK=1: the daemon
#      itself hits EADDRINUSE and dies; the harness reports it)
#   d. broken slurm.conf (unknown key): slurmctld exits at start
#   e. a test script that fails with a running job: the EXIT trap cancels the
#      job, stops the daemons (and the job's slurmstepd) and removes the dir
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
isle_cluster_require

base=$(mktemp -d /tmp/isle-bad.XXXXXX)
export ISLE_TMPDIR=$base
listener=""
lout=$(mktemp /tmp/isle-listener.XXXXXX) # outside $base: not a "stray"
cleanup() {
	[ -n "$listener" ] && kill "$listener" 2>/dev/null
	rm -f "$lout"
	# Anything of ours still running is a test failure reported below; make
	# sure it does not outlive the test either.
	for p in $(strays | awk '{ print $1 }'); do kill -KILL "$p" 2>/dev/null; done
	rm -rf "$base"
}
trap cleanup EXIT

# Processes of this test: command line or an open file under $base.
strays() {
	local p
	pgrep -af -- "$base" | grep -v -e "^$$ " -e 'pgrep' || true
	for p in $(find /proc/[0-9]*/fd -maxdepth 1 -lname "$base/*" 2>/dev/null | cut -d/ -f3 | sort -u); do
		[ "$p" = $$ ] && continue
		echo "$p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
	done
}

nfail=0
check() { # name expected-message-regex rc stderr-file
	local name=$1 re=$2 rc=$3 errf=$4 s
	if [ "$rc" -eq 0 ]; then
		echo "FAIL [$name]: exit status 0, want non-zero"
		nfail=$((nfail + 1))
	elif ! grep -Eq -- "$re" "$errf"; then
		echo "FAIL [$name]: message does not match /$re/:"
		sed 's/^/    /' "$errf" | head -20
		nfail=$((nfail + 1))
	else
		echo "ok [$name]: rc=$rc, message: $(grep -E -m1 -- "$re" "$errf")"
	fi
	s=$(strays)
	if [ -n "$s" ]; then
		echo "FAIL [$name]: processes of the failed run remain:"
		echo "$s" | sed 's/^/    /'
		nfail=$((nfail + 1))
	fi
	if compgen -G "$base/isle.*" >/dev/null; then
		echo "FAIL [$name]: run dir left behind: $(echo "$base"/isle.*)"
		nfail=$((nfail + 1))
		rm -rf "$base"/isle.*
	fi
}

# Runs isle_cluster_start in a child shell (as a test script would) and
# checks the outcome.
start_case() { # name regex [env...] -- start options...
	local name=$1 re=$2 rc=0
	shift 2
	local envs=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	env "${envs[@]}" bash -c 'source "$1"; shift; isle_cluster_start "$@"' _ \
		"$repo/tests/cluster/cluster.sh" "$@" >"$base/out" 2>"$base/err" || rc=$?
	check "$name" "$re" "$rc" "$base/err"
}

free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 10000))
		isle__port_in_use "$p" || { echo "$p"; return; }
	done
}

# a. bad options
start_case "nodes not a number" "--nodes must be a number" -- --nodes abc
start_case "unknown option" "unknown option --bogus" -- --bogus 1
start_case "unknown topology" "topology/nosuch not found" -- --topology nosuch
start_case "missing topo conf" "cannot read file '/nonexistent/topology.conf'" -- --topo-conf /nonexistent/topology.conf

# b/c. a port in use: hold a listening socket
port=$(free_port)
perl -MIO::Socket::INET -e '
	my $s = IO::Socket::INET->new(LocalAddr => "0.0.0.0", LocalPort => $ARGV[0],
		Listen => 5, ReuseAddr => 1) or die "listen: $!\n";
	print "ready\n"; $| = 1; sleep 600;' "$port" >"$lout" 2>&1 &
listener=$!
for _ in $(seq 1 50); do
	grep -q ready "$lout" 2>/dev/null && break
	sleep 0.1
done
isle__port_in_use "$port" || { echo "FAIL: could not hold port $port for the test"; exit 1; }
start_case "slurmctld port in use" "slurmctld port $port is already in use" -- --nodes 2 --ctld-port "$port"
start_case "slurmd port in use (pre-check)" "slurmd port $port .* is already in use" -- --nodes 2 --node-port-base "$port"
start_case "slurmd port in use (daemon fails)" "slurmd n01 exited during startup" ISLE_SKIP_PORT_CHECK=1 -- \
	--nodes 2 --node-port-base "$port" --timeout 30
grep -q "Address already in use" "$base/err" ||
	{ echo "FAIL [slurmd port in use (daemon fails)]: the slurmd log tail was not shown"; nfail=$((nfail + 1)); }
kill "$listener" 2>/dev/null
wait "$listener" 2>/dev/null || true
listener=""

# d. broken slurm.conf
start_case "broken slurm.conf" "slurmctld exited during startup" -- --nodes 2 --slurm-extra "NoSuchParameter=1"
grep -q "NoSuchParameter" "$base/err" ||
	{ echo "FAIL [broken slurm.conf]: the slurmctld log tail naming the bad key was not shown"; nfail=$((nfail + 1)); }

# e. a failing test script with a running job
rc=0
bash -c '
	set -euo pipefail
	source "$1"
	isle_cluster_start --nodes 2 --gpus 2
	id=$(sbatch --parsable -N2 --gpus-per-node=2 -o /dev/null --wrap "srun sleep 300")
	for _ in $(seq 1 100); do
		[ "$(isle_job_field "$id" JobState)" = RUNNING ] && break
		sleep 0.2
	done
	echo "job $id $(isle_job_field "$id" JobState)" >&2
	false   # the test "fails" here, under set -e
' _ "$repo/tests/cluster/cluster.sh" >"$base/out" 2>"$base/err" || rc=$?
cat "$base/err"
check "failing test with a running job" "job [0-9]+ RUNNING" "$rc" "$base/err"

if [ $nfail -ne 0 ]; then
	echo "FAIL: $nfail check(s) failed"
	exit 1
fi
echo "PASS"
