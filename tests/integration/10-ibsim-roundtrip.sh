#!/bin/bash
# 10-ibsim-roundtrip: fabrics through a real ibnetdiscover and back.
#
# Each fabric (the X5 cluster's dump, the NDR example, and a generated
# rail-optimized fat tree of 128 hosts x 2 rails) is loaded into ibsim,
# discovered by the real ibnetdiscover under umad2sim, parsed by isle, and
# compared with what isle reads from the source itself: same switches and
# levels, same hosts and rails, same cables port by port (the canonical
# summary of `isle-agent fabric`). ibsim 0.10 reports NDR links as SDR, so
# rates are compared only where ibsim knows the speed.
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
agent=$root/build/bin/isle-agent
data=${ISLE_TEST_DATA:-$root/../shared/data}/ibnetdiscover
discover=$root/scripts/ibsim-discover.sh

[ -x "$agent" ] || { echo "FAIL: $agent not built (run make)"; exit 1; }
for tool in ibsim ibnetdiscover; do
	command -v $tool >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done
[ -r /usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so ] ||
	[ -n "${UMAD2SIM:-}" ] || { echo "SKIP: libumad2sim not installed"; exit 77; }

work=$(mktemp -d /tmp/isle-10-ibsim.XXXXXX) || exit 1
trap 'rm -rf "$work"' EXIT
failures=0

# summary FILE [rates]: the fabric summary, without link rates unless asked.
# $fabric_opts: extra `isle-agent fabric` options (GUID map, spine list).
fabric_opts=()
summary() {
	if [ "${2:-}" = rates ]; then
		"$agent" fabric "${fabric_opts[@]}" --dump "$1" 2>/dev/null
	else
		"$agent" fabric "${fabric_opts[@]}" --dump "$1" 2>/dev/null |
			sed -e 's/ gbps [0-9.]*//' -e 's/:[0-9]*x[A-Z0-9?]*//g'
	fi
}

# roundtrip NAME NETFILE RATES [IBNETDISCOVER-OPTIONS...]
roundtrip() {
	local name=$1 net=$2 rates=$3
	shift 3
	if ! "$discover" "$net" "$work/$name.dump" -- "$@"; then
		echo "FAIL $name: ibsim/ibnetdiscover did not produce a dump"
		failures=$((failures + 1))
		return
	fi
	summary "$net" "$rates" >"$work/$name.want" || true
	summary "$work/$name.dump" "$rates" >"$work/$name.got" || true
	if [ ! -s "$work/$name.want" ] || [ ! -s "$work/$name.got" ]; then
		echo "FAIL $name: isle could not read the source or the dump"
		"$agent" fabric --dump "$work/$name.dump" >/dev/null
		failures=$((failures + 1))
	elif ! diff -u "$work/$name.want" "$work/$name.got" >"$work/$name.diff"; then
		echo "FAIL $name: the discovered fabric differs from its source:"
		head -20 "$work/$name.diff"
		failures=$((failures + 1))
	else
		echo "ok   $name: $(sed -n 2p "$work/$name.got"); $(sed -n 3p "$work/$name.got" | cut -d' ' -f1-6)"
	fi
}

# 1. The generated fat tree, plain and full (-f) output.
hosts=128 rails=2 per_leaf=16 spines=8
"$root/scripts/gen-ibsim-fattree.sh" --hosts $hosts --rails $rails \
	--hosts-per-leaf $per_leaf --spines $spines >"$work/fattree.net" || exit 1
roundtrip fattree "$work/fattree.net" rates
roundtrip fattree-full "$work/fattree.net" rates -f
# The source is what the generator meant to build.
want_leafs=$((rails * ((hosts + per_leaf - 1) / per_leaf)))
expect="switches $((want_leafs + spines)) leaf $want_leafs spine $spines core 0 unknown 0"
got=$(sed -n 2p "$work/fattree.want")
[ "$got" = "$expect" ] || { echo "FAIL fattree: '$got', expected '$expect'"; failures=$((failures + 1)); }
n=$(grep -c '^host ' "$work/fattree.got")
[ "$n" -eq $hosts ] || { echo "FAIL fattree: $n hosts discovered, expected $hosts"; failures=$((failures + 1)); }
# Every host sees one leaf per rail, on the leaf of its rail.
bad=$(awk '/^host /{ if (NF != 2 + '$rails') print $2 }' "$work/fattree.got" | head -3)
[ -z "$bad" ] || { echo "FAIL fattree: hosts without $rails rails: $bad"; failures=$((failures + 1)); }

# 2. Real dumps, when the shared data is there.
if [ -r "$data/X5.topofile" ]; then
	fabric_opts=(--guid-map "$data/X5.map" --spine-map "$data/X5.spine")
	roundtrip X5 "$data/X5.topofile" rates
	fabric_opts=()
else
	echo "skip X5: $data/X5.topofile not found (set ISLE_TEST_DATA)"
fi
if [ -r "$data/topograph-ndr-example.out" ]; then
	roundtrip ndr "$data/topograph-ndr-example.out" norates
else
	echo "skip ndr: $data/topograph-ndr-example.out not found (set ISLE_TEST_DATA)"
fi

[ $failures -eq 0 ] || exit 1
echo "10-ibsim-roundtrip: all fabrics came back unchanged"
