#!/bin/bash
# 64-roce-clusters: islesim's RoCE-like clusters as cluster files.
#
# islesim --write-cluster writes roce2 and roce4; islectl validate must
# accept both, and what it counts must follow from the Lingjun map they are
# built on (shared/data/clos/lingjun-2023-topo.csv), counted here with awk,
# not with islesim: one 8-GPU node (one NVSwitch island) per host row, 4
# rail ToRs per ASW group, 4 aggregation switches per PSW group, 4 cores
# per DSW. Each host's 4 NICs sit on rails 0-3 of its own ASW group's ToRs,
# so hosts share a ToR group exactly when the map puts them under one ASW.
# The ToR uplinks are oversubscribed 2:1 (roce2) and 4:1 (roce4).
set -uo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
islesim=$root/build/bin/islesim
islectl=$root/build/bin/islectl
data=${ISLE_TEST_DATA:-$root/../shared/data}
csv=$data/clos/lingjun-2023-topo.csv

for b in "$islesim" "$islectl"; do
	[ -x "$b" ] || { echo "FAIL: $b not built (run make)"; exit 1; }
done
[ -r "$csv" ] || { echo "SKIP: test data $csv missing (set ISLE_TEST_DATA)"; exit 77; }
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-64-roce.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

# The map's structure: hosts, ASW groups (ASW names repeat under different
# PSWs), PSW groups, DSWs.
hosts=$(awk -F, 'NR > 1 && NF >= 4' "$csv" | wc -l)
asw=$(awk -F, 'NR > 1 && NF >= 4 {print $2 "/" $3 "/" $4}' "$csv" | sort -u | wc -l)
psw=$(awk -F, 'NR > 1 && NF >= 4 {print $2 "/" $3}' "$csv" | sort -u | wc -l)
dsw=$(awk -F, 'NR > 1 && NF >= 4 {print $2}' "$csv" | sort -u | wc -l)
[ "$hosts" -gt 0 ] && [ "$asw" -gt 0 ] || fail "no hosts in $csv"
switches=$((4 * asw + 4 * psw + 4 * dsw))
echo "map: $hosts hosts, $asw ASW groups, $psw PSW groups, $dsw DSW"

for os in 2 4; do
	f=$work/roce$os.json
	"$islesim" --cluster "roce$os" --data "$data" --write-cluster "$f" \
		2>"$work/err" || fail "roce$os: --write-cluster: $(cat "$work/err")"
	"$islectl" validate "$f" >"$work/validate.out" 2>&1 ||
		fail "roce$os: validate: $(cat "$work/validate.out")"
	want="ok: $hosts nodes, $((8 * hosts)) GPUs, $hosts islands, $switches switches, 0 racks; 0 warnings"
	grep -qF "$want" "$work/validate.out" ||
		fail "roce$os: validate says '$(cat "$work/validate.out")', want '$want'"
	[ "$(jq '.tiers.spine.oversub' "$f")" = "$os" ] ||
		fail "roce$os: ToR uplink oversubscription $(jq '.tiers.spine.oversub' "$f"), want $os"
	# every host: 4 NICs, rails 0-3, on the 4 rail ToRs of one ASW group
	bad=$(jq -r '.nodes[] | select((.nics | length) != 4 or
		([.nics[].rail] != [0, 1, 2, 3]) or
		([.nics[].switch | sub("-r[0-9]+$"; "")] | unique | length) != 1 or
		([.nics[].switch | capture("-r(?<r>[0-9]+)$").r | tonumber] != [0, 1, 2, 3]))
		| .name' "$f" | head -3)
	[ -z "$bad" ] || fail "roce$os: hosts without 4 rails on one ToR group: $bad"
	# ToR groups are the map's ASW groups: the same hosts, in map order
	jq -r '.nodes[] | .nics[0].switch | sub("-r0$"; "")' "$f" >"$work/tor"
	awk -F, 'NR > 1 && NF >= 4 {print $2 "-" $3 "-" $4}' "$csv" >"$work/map"
	cmp -s "$work/tor" "$work/map" || fail "roce$os: ToR groups differ from the map's ASW groups"
	[ "$(sort -u "$work/tor" | wc -l)" -eq "$asw" ] || fail "roce$os: ToR group count"
	# aggregation groups: each ToR under the 4 aggregation switches of its PSW
	bad=$(jq -r '.switches[] | select(.level == "spine") as $a |
		($a.switches // [])[] | select(startswith($a.name | sub("-agg[0-9]+$"; "") + "-") | not)' "$f" | head -3)
	[ -z "$bad" ] || fail "roce$os: ToRs under another PSW group's aggregation: $bad"
	[ "$(jq '[.switches[] | select(.level == "spine")] | length' "$f")" -eq $((4 * psw)) ] ||
		fail "roce$os: aggregation switch count"
	echo "roce$os: $(cat "$work/validate.out")"
done
echo "PASS: roce2 and roce4 validate, $hosts hosts on $asw ToR groups and $psw aggregation groups of the map"
