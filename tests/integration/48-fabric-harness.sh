#!/bin/bash
# 48-fabric-harness: isle_cluster_start --fabric builds what the cluster file
# says. On bench/fabric/leafspine-16.json at scale 0.01:
#  - bad input is refused before anything is made (scale 0, a missing file,
#    a file whose nodes differ in GPU count);
#  - 16 nodes idle, named as in the file; a task on a node sees the node's
#    name as host name, its management address on mg0 and its data address
#    on d0, and reaches other nodes' data addresses through d0;
#  - every cable is a veth shaped by tbf at the tier rate x scale, in both
#    directions (node side and switch side), as `islectl emit fabric` says;
#  - the byte counters of a cable move when traffic crosses it;
#  - stop removes every namespace of the run.
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
isle_cluster_require
for t in ip tc nsenter; do
	command -v "$t" >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
[ -x "$repo/build/bin/islectl" ] || { echo "FAIL: islectl not built (make)"; exit 1; }
probe=isf-probe-$$
ip netns add "$probe" 2>/dev/null || { echo "SKIP: cannot create network namespaces"; exit 77; }
ok=1
ip -n "$probe" link add b0 type bridge 2>/dev/null || ok=0
ip -n "$probe" link add v0 type veth peer name v1 2>/dev/null || ok=0
[ $ok = 1 ] && { nsenter --net="/run/netns/$probe" tc qdisc add dev v0 root tbf rate 1mbit burst 32k latency 10ms 2>/dev/null || ok=0; }
ip netns del "$probe"
[ $ok = 1 ] || { echo "SKIP: the kernel lacks bridge, veth or tbf"; exit 77; }

shape=$repo/bench/fabric/leafspine-16.json
work=$(mktemp -d "${TMPDIR:-/tmp}/isle-t48.XXXXXX")
trap 'isle_cluster_stop; rm -rf "$work"' EXIT
fails=0
fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

# --- bad input ---------------------------------------------------------------
before=$(ip netns list 2>/dev/null | wc -l)
isle_cluster_start --fabric "$shape" --fabric-scale 0 >"$work/bad1" 2>&1 && fail "--fabric-scale 0 accepted"
grep -q 'fabric-scale must be' "$work/bad1" || fail "no message for --fabric-scale 0: $(cat "$work/bad1")"
isle_cluster_start --fabric "$work/nope.json" >"$work/bad2" 2>&1 && fail "missing --fabric file accepted"
grep -q 'cannot read --fabric file' "$work/bad2" || fail "no message for a missing file: $(cat "$work/bad2")"
cat >"$work/mixed.json" <<'J'
{"version": 1, "nodes": [{"name": "a1", "gpus": 4}, {"name": "a2", "gpus": 2}],
 "switches": [{"name": "l0", "nodes": ["a[1-2]"]}]}
J
isle_cluster_start --fabric "$work/mixed.json" >"$work/bad3" 2>&1 && fail "nodes with different GPU counts accepted"
grep -q 'one GPU count' "$work/bad3" || fail "no message for mixed GPU counts: $(cat "$work/bad3")"
[ "$(ip netns list 2>/dev/null | wc -l)" = "$before" ] || fail "refused starts left namespaces"
echo "ok   bad input refused"

# --- the cluster -------------------------------------------------------------
isle_cluster_start --fabric "$shape" --fabric-scale 0.01 || { echo "FAIL: cluster did not start"; exit 1; }
d=$ISLE_CLUSTER_DIR
p=$ISLE_FABRIC_PREFIX
[ "$ISLE_CLUSTER_NODE_NAMES" = "$(echo ls{01..16})" ] || fail "node names: $ISLE_CLUSTER_NODE_NAMES"
n_idle=$(sinfo -h -N -t idle -o %N | sort -u | wc -l)
[ "$n_idle" = 16 ] || fail "$n_idle of 16 nodes idle"

# Tasks on ls01 and ls16: host name, addresses, route to the other's data address.
read -r _ _ _ _ _ d16 < <(grep '^node ls16 ' "$d/fabric/nodes")
read -r _ _ _ _ m01 d01 < <(grep '^node ls01 ' "$d/fabric/nodes")
out=$(srun -N1 -w ls01 bash -c "hostname; ip -o -4 addr show; ip route get $d16" 2>&1)
grep -qx ls01 <<<"$out" || fail "task on ls01: host name not ls01: $out"
grep -q "mg0 .*inet $m01/" <<<"$out" || fail "ls01: no management address $m01 on mg0: $out"
grep -q "d0 .*inet $d01/" <<<"$out" || fail "ls01: no data address $d01 on d0: $out"
grep -q "$d16 dev d0" <<<"$out" || fail "ls01: $d16 not routed through d0: $out"
echo "ok   task on ls01: host name, mg0 $m01, d0 $d01, route to ls16's $d16 via d0"

# Cable rates: the plan's Gbit/s x scale, tbf on both ends.
ncab=0
while read -r _ a b gbit lat tier; do
	want=$(awk -v g="$gbit" 'BEGIN { printf "%.0f", g * 1e9 * 0.01 }')
	line=$(grep "^cable $a $b " "$d/fabric/cables")
	read -r _ _ _ _ rate nsa deva nsb devb <<<"$line"
	[ "$rate" = "$want" ] || fail "cable $a-$b: rate $rate, want $want"
	for end in "$nsa $deva" "$nsb $devb"; do
		read -r ns dev <<<"$end"
		q=$(nsenter --net="/run/netns/$ns" tc qdisc show dev "$dev" | grep -m1 tbf)
		# tc prints the rate in its own units: compare in bit/s.
		got=$(sed -n 's/.* rate \([0-9.]*\)\([KMG]\{0,1\}\)bit.*/\1 \2/p' <<<"$q" |
			awk '{ m = $2 == "G" ? 1e9 : $2 == "M" ? 1e6 : $2 == "K" ? 1e3 : 1; printf "%.0f", $1 * m }')
		[ "$got" = "$want" ] || fail "cable $a-$b end $ns/$dev: tbf rate '$got' ($q), want $want"
	done
	ncab=$((ncab + 1))
done < <(awk '$1 == "cable"' "$d/fabric/plan")
[ "$ncab" = 20 ] || fail "$ncab cables, want 20 (16 nodes + 4 leaf uplinks)"
echo "ok   $ncab cables shaped at tier rate x 0.01 on both ends"

# Counters: 200 kB of UDP datagrams from ls01 to ls16 (no listener needed)
# cross leaf0 -> spine0 (at least half of it: a shaped queue may drop
# some). tx counts what left the tbf queue: wait for it.
# One datagram first, until ls01 knows ls16's MAC: datagrams sent while the
# neighbour is unresolved may be dropped.
end=$((SECONDS + 20))
until ip -n "$p-ls01" neigh show "$d16" 2>/dev/null | grep -Eq 'REACHABLE|STALE|DELAY'; do
	srun -N1 -w ls01 bash -c "exec 3>/dev/udp/$d16/9; echo x >&3" >/dev/null 2>&1
	[ $SECONDS -lt $end ] || { fail "ls01 never resolved $d16 on d0"; break; }
	sleep 0.5
done
c0=$(isle_fabric_counters | awk '$1 == "leaf0" && $2 == "spine0" { print $5 }')
srun -N1 -w ls01 bash -c "exec 3>/dev/udp/$d16/9; for i in \$(seq 50); do head -c 4000 /dev/zero >&3; done" >/dev/null 2>&1 ||
	fail "srun on ls01 could not send to $d16"
end=$((SECONDS + 20))
while :; do
	c1=$(isle_fabric_counters | awk '$1 == "leaf0" && $2 == "spine0" { print $5 }')
	[ -n "$c0" ] && [ -n "$c1" ] && [ "$c1" -ge $((c0 + 100000)) ] && break
	[ $SECONDS -lt $end ] || break
	sleep 0.5
done
[ -n "$c0" ] && [ -n "$c1" ] && [ "$c1" -ge $((c0 + 100000)) ] ||
	fail "leaf0->spine0 counter went from '$c0' to '$c1' for 200 kB sent ls01 -> ls16"
echo "ok   leaf0->spine0 counter $c0 -> $c1"
# The other leafs' uplinks carried none of it.
c2=$(isle_fabric_counters | awk '$1 == "leaf1" && $2 == "spine0" { print $5 }')
[ "${c2:-0}" -lt 100000 ] || fail "leaf1->spine0 carried $c2 bytes of traffic that was not its"

isle_cluster_stop
ip netns list 2>/dev/null | isle_grep_q "^$p-" && fail "namespaces $p-* left after stop"
[ -e "$d" ] && fail "run dir left after stop"
[ $fails = 0 ] || exit 1
echo "PASS"
