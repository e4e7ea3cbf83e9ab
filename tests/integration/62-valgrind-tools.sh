#!/bin/bash
# 62-valgrind-tools: the CLI tools leak nothing and touch no memory they do
# not own. Typical runs of islectl (build from an ibnetdiscover dump,
# validate good and broken files, show, every emit, dot), isle-agent
# (discover from hwloc XML, fabric, plan write) and islesim (a small job
# trace under each policy, a replay) under
#   valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99
# A definite leak or a memory error fails the test; each tool's own exit
# status is checked as well (0, or 1 for the broken file).
# Inputs are the repository's golden files (and one hwloc export of the
# shared data when present); no daemons.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$root/build/bin
gold=$root/tests/golden
command -v valgrind >/dev/null || { echo "SKIP: no valgrind (scripts/deps.sh installs it)"; exit 77; }
for t in islectl isle-agent islesim; do
	[ -x "$bin/$t" ] || { echo "FAIL: $bin/$t not built (run make)"; exit 1; }
done
# valgrind cannot run ASan binaries (make SANITIZE=1 builds into build/ too).
if nm "$bin/islectl" 2>/dev/null | grep -q __asan_init; then
	echo "SKIP: build/ holds a SANITIZE=1 build (ASan and valgrind exclude each other)"
	exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-57-vg.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
cluster=$gold/topology/cluster-small.json
nfail=0 nrun=0

# vg WANT_RC NAME CMD...: CMD under valgrind; its rc must be WANT_RC and
# valgrind must have found nothing (its own rc 99).
vg() {
	local want=$1 name=$2 rc
	shift 2
	nrun=$((nrun + 1))
	valgrind -q --leak-check=full --errors-for-leak-kinds=definite \
		--show-leak-kinds=definite --error-exitcode=99 --child-silent-after-fork=no \
		--log-file="$work/$name.vg" "$@" >"$work/$name.out" 2>"$work/$name.err"
	rc=$?
	if [ $rc -eq 99 ] || [ -s "$work/$name.vg" ]; then
		echo "FAIL: $name: valgrind:"
		head -60 "$work/$name.vg"
		nfail=$((nfail + 1))
	elif [ $rc -ne "$want" ]; then
		echo "FAIL: $name: exit $rc (want $want): $(tail -5 "$work/$name.err")"
		nfail=$((nfail + 1))
	else
		echo "ok   $name"
	fi
}

# islectl
vg 0 build-ibnd "$bin/islectl" build --ibnetdiscover "$gold/ibnd/small.net" --name small -o "$work/small.json"
vg 0 build-ovr "$bin/islectl" build --overrides "$cluster" -o "$work/saved.json"
vg 0 validate "$bin/islectl" validate "$cluster"
sed 's/"gpus": 4, "nics"/"gpus": "four", "nics"/' "$cluster" >"$work/bad.json"
vg 1 validate-bad "$bin/islectl" validate "$work/bad.json"
vg 0 show "$bin/islectl" show "$cluster"
vg 0 emit-tree "$bin/islectl" emit slurm-tree -o "$work/topology.conf" "$cluster"
vg 0 emit-block "$bin/islectl" emit slurm-block "$cluster"
vg 0 emit-gres "$bin/islectl" emit gres --cores "0:0-15;1:16-31" --type h100 "$cluster"
vg 0 emit-nccl "$bin/islectl" emit nccl-xml --node dgx01 "$cluster"
vg 0 emit-fabric "$bin/islectl" emit fabric "$cluster"
vg 0 dot "$bin/islectl" dot -o "$work/c.dot" "$cluster"

# isle-agent
shared=${ISLE_SHARED_DATA:-$root/../shared/data}
for x in "$gold"/discover/*.xml "$shared"/hwloc/nvidiaDGX2.xml; do
	[ -r "$x" ] || continue
	vg 0 "discover-$(basename "$x" .xml)" "$bin/isle-agent" discover --hwloc-xml "$x"
done
vg 0 fabric "$bin/isle-agent" fabric --dump "$gold/ibnd/small.net"
vg 0 plan "$bin/isle-agent" plan write --job 7 --nodes "dgx[01-02]" --gpus-per-node 0-7 \
	--cluster "$cluster" --rundir "$work/run"
[ -n "$(find "$work/run" -type f 2>/dev/null)" ] || { echo "FAIL: plan write wrote nothing"; nfail=$((nfail + 1)); }

# islesim
vg 0 sim-csv "$bin/islesim" --cluster "$cluster" --csv "$root/placement/sim/jobs-small.csv" --trace
printf 'a 2 8\nb 1 4\nend a\nc 2 4\n' >"$work/replay"
vg 0 sim-replay "$bin/islesim" --cluster "$cluster" --replay "$work/replay"

echo "valgrind-tools: $nrun runs, $nfail failed"
[ $nfail -eq 0 ]
