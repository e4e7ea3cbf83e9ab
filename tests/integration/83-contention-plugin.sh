#!/bin/bash
# 83-contention-plugin: topology/isle's contention term in slurmctld, with
# live daemons. Six nodes of 4 GPUs; leaf1 n[01-02], leaf2 n[03-04], leaf3
# n[05-06] under one spine, 4:1 oversubscribed. A data-parallel job A
# (--isle-traffic=dp) runs on n02+n03, so it loads the uplinks of leaf1 and
# leaf2; a 2-GPU job holds half of n06. A 2-node job B of 4 GPUs per node
# then has n01, n04 and n05 to choose from, all pairs crossing the spine.
#  1. IsleContentionWeight unset (0, the default): B lands where isle alone
#     puts it; its record has no contention part.
#  2. TopologyParam=IsleContentionWeight=1 + reconfigure: the controller
#     says the term is on; B lands on n05 (leaf3, idle uplinks) and one of
#     n01/n04, never on n01+n04 (both loaded); it is not where isle alone
#     put it in 1., and that placement is exactly the one its record names
#     as the placement without the term. `islectl explain` says which loaded
#     leaf uplink it avoided, with A's load (4.0 GPUs of traffic), and
#     `--json` carries the same link with "avoided": true.
#  3. A ends: its load leaves the engine. A 3-node job C must span two
#     leafs; its record lists no loaded link.
#  4. A bad IsleContentionWeight is logged naming slurm.conf and the field;
#     slurmctld keeps placing jobs (the term off).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=tests/cluster/cluster.sh
source "$repo/tests/cluster/cluster.sh"
# shellcheck source=slurm_plugin/testlib.sh
source "$repo/slurm_plugin/testlib.sh"
isle_pt_setup 60

work=$(mktemp -d "${TMPDIR:-/tmp}/isle-t83.XXXXXX")
trap 'rm -rf "$work"' EXIT
cat >"$work/isle.json" <<'JSON'
{
  "version": 1,
  "name": "cc-test",
  "tiers": {"spine": {"oversub": 4}},
  "nodes": [
    {"name": "n01", "gpus": 4}, {"name": "n02", "gpus": 4},
    {"name": "n03", "gpus": 4}, {"name": "n04", "gpus": 4},
    {"name": "n05", "gpus": 4}, {"name": "n06", "gpus": 4}
  ],
  "switches": [
    {"name": "leaf1", "level": "leaf", "nodes": ["n[01-02]"]},
    {"name": "leaf2", "level": "leaf", "nodes": ["n[03-04]"]},
    {"name": "leaf3", "level": "leaf", "nodes": ["n[05-06]"]},
    {"name": "spine1", "level": "spine", "switches": ["leaf1", "leaf2", "leaf3"]}
  ]
}
JSON
isle_pt_plugstack "$work" default_mode=preferred

isle_cluster_start --nodes 6 --gpus 4 --topology isle \
	--plugin-dir "$repo/build/slurm" --plugstack "$work/plugstack.conf" \
	--etc-file "$work/isle.json" || fail "cluster did not start"
log=$ISLE_CLUSTER_DIR/log/slurmctld.log
conf=$ISLE_CLUSTER_DIR/etc/slurm.conf
islectl=$repo/build/bin/islectl
grep -q "isle: loaded .*isle.json: 6 nodes" "$log" || fail "cluster file not loaded"

# The record of a running job is saved once the watcher saw it start.
explain() {
	local out
	for _ in $(seq 1 60); do
		out=$("$islectl" explain "$@" 2>/dev/null) && {
			echo "$out"
			return 0
		}
		sleep 0.5
	done
	return 1
}
nodes_of() { isle_pt_job_nodes "$1" | tr '\n' ' ' | sed 's/ $//'; }
set_param() {
	sed -i '/^TopologyParam=/d' "$conf"
	[ -z "$1" ] || echo "TopologyParam=$1" >>"$conf"
	scontrol reconfigure || fail "scontrol reconfigure failed"
	for _ in $(seq 1 60); do
		scontrol ping 2>/dev/null | isle_grep_q UP && scontrol show topology 2>/dev/null | isle_grep_q "Status=ok" && return 0
		sleep 0.5
	done
	fail "controller not back after reconfigure"
}

a=$(sbatch --parsable -N2 -w n02,n03 --gpus-per-node=4 --isle-traffic=dp -o /dev/null --wrap "sleep 600")
isle_pt_wait_state "$a" RUNNING 60 || fail "job A did not start"
[ "$(nodes_of "$a")" = "n02 n03" ] || fail "job A on $(nodes_of "$a")"
h=$(sbatch --parsable -N1 -w n06 --gpus-per-node=2 -o /dev/null --wrap "sleep 600")
isle_pt_wait_state "$h" RUNNING 60 || fail "holder on n06 did not start"

# --- 1. weight 0: isle alone ------------------------------------------------
b1=$(sbatch --parsable -N2 --gpus-per-node=4 -o /dev/null --wrap "sleep 600")
isle_pt_wait_state "$b1" RUNNING 60 || fail "job B (weight 0) did not start"
blind=$(nodes_of "$b1")
echo "weight 0: B on $blind"
out=$(explain "$b1") || fail "no record of $b1"
echo "$out"
echo "$out" | isle_grep_q "^Contention:" && fail "weight 0 record has a contention part"
explain --json "$b1" | jq -e 'has("contention") | not' >/dev/null || fail "weight 0 JSON has contention"
scancel "$b1"
isle_wait_job "$b1" 60 >/dev/null || true

# --- 2. weight 1: away from A's links ---------------------------------------
set_param "IsleContentionWeight=1"
grep -q "isle: contention term on (IsleContentionWeight=1)" "$log" || fail "term not on after reconfigure"
for j in "$a" "$h"; do
	[ "$(squeue -h -j "$j" -o %T)" = RUNNING ] || fail "job $j lost over reconfigure"
done
b2=$(sbatch --parsable -N2 --gpus-per-node=4 -o /dev/null --wrap "sleep 600")
isle_pt_wait_state "$b2" RUNNING 60 || fail "job B (weight 1) did not start"
cc=$(nodes_of "$b2")
echo "weight 1: B on $cc"
[[ " $cc " == *" n05 "* ]] || fail "B with the term is not on leaf3's n05: $cc"
[ "$cc" != "n01 n04" ] || fail "B with the term crosses both loaded leafs"
[ "$cc" != "$blind" ] || fail "the term changed nothing: $cc both times"
out=$(explain "$b2") || fail "no record of $b2"
echo "$out"
echo "$out" | isle_grep_q "^Contention: weight 1.00; traffic dp" || fail "explain lacks the contention line"
echo "$out" | isle_grep_q "without the term: nodes $(echo "$blind" | tr ' ' ',')$" ||
	fail "placement without the term is not the weight-0 one ($blind)"
echo "$out" | isle_grep_q "^ *avoided *leaf[12] leaf uplinks: running jobs' load 4.0 of 2.0 GPUs of traffic (200%)" ||
	fail "explain names no avoided loaded leaf uplink"
echo "$out" | isle_grep_q "^Why: .*avoided leaf[12] uplinks" || fail "why does not say what was avoided"
explain --json "$b2" | jq -e '.contention.links | map(select(.avoided and .tier == "leaf" and .load == 4)) | length == 1' >/dev/null ||
	fail "JSON lacks the avoided link"
scancel "$b2"
isle_wait_job "$b2" 60 >/dev/null || true

# --- 3. A ends: its load leaves ----------------------------------------------
scancel "$a"
isle_wait_job "$a" 60 >/dev/null || true
c=$(sbatch --parsable -N3 --gpus-per-node=4 -o /dev/null --wrap "sleep 600")
isle_pt_wait_state "$c" RUNNING 60 || fail "job C did not start"
echo "C on $(nodes_of "$c")"
out=$(explain "$c") || fail "no record of $c"
echo "$out"
echo "$out" | isle_grep_q "^Contention: weight 1.00" || fail "C's record lacks the contention part"
echo "$out" | isle_grep_q "running jobs' load [0-9]" && fail "A's load outlived A"
explain --json "$c" | jq -e '.contention.links | length == 0' >/dev/null || fail "C's JSON lists loaded links"
scancel "$c"
isle_wait_job "$c" 60 >/dev/null || true

# --- 4. a bad weight ---------------------------------------------------------
set_param "IsleContentionWeight=lots"
grep -q "isle: $conf: TopologyParam IsleContentionWeight='lots': expected a number from 0 to 100; the contention term is off" "$log" ||
	fail "bad weight not logged with file and field"
d=$(sbatch --parsable -N2 --gpus-per-node=4 -o /dev/null --wrap true)
isle_wait_job "$d" 60 || fail "job $d did not run with a bad weight"
echo "PASS: 83-contention-plugin"
