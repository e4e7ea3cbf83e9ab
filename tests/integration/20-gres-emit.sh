#!/bin/bash
# 20-gres-emit: Slurm runs on the gres.conf and topology.conf that islectl
# emits from a cluster file. Two NVLink layouts (bridged pairs 0-3/1-2 and a
# full mesh) on four nodes under two leafs: every node must come up idle
# with its GPUs, each slurmd must take every GPU's Links row as emitted, and
# slurmctld's switch tree must be the one in the cluster file.
set -u
cd "$(dirname "$0")/../.." || exit 1
islectl=$PWD/build/bin/islectl

if [ ! -f tests/cluster/cluster.sh ]; then
	echo "FAIL: the test cluster harness tests/cluster/cluster.sh is missing"
	exit 1
fi
# shellcheck source=../cluster/cluster.sh
source tests/cluster/cluster.sh
isle_cluster_require
if [ ! -x "$islectl" ]; then
	echo "FAIL: $islectl is not built (run make)"
	exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/isle-20-gres.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*"
	isle_cluster_logs 40
	exit 1
}

# Node names follow the harness: n01..n04.
cat >"$tmp/cluster.json" <<'EOF'
{
  "version": 1,
  "name": "gres-emit",
  "nodes": [
    {"name": "n01", "gpus": 4, "nvlinks": [[0, 3, 4], [1, 2, 4]]},
    {"name": "n02", "gpus": 4, "nvlinks": [[0, 3, 4], [1, 2, 4]]},
    {"name": "n03", "gpus": 4, "nvlink_all": 12},
    {"name": "n04", "gpus": 4, "nvlink_all": 12}
  ],
  "switches": [
    {"name": "spine", "switches": ["leaf1", "leaf2"]},
    {"name": "leaf1", "nodes": ["n[01-02]"]},
    {"name": "leaf2", "nodes": ["n[03-04]"]}
  ]
}
EOF
"$islectl" validate "$tmp/cluster.json" || fail "islectl validate"
"$islectl" emit gres --dev-dir @DEVDIR@ --cores 0-15 -o "$tmp/gres.conf" "$tmp/cluster.json" ||
	fail "islectl emit gres"
"$islectl" emit slurm-tree -o "$tmp/topology.conf" "$tmp/cluster.json" ||
	fail "islectl emit slurm-tree"
grep -q "^NodeName=n01 Name=gpu File=@DEVDIR@/nvidia0 Cores=0-15 Links=-1,0,0,4\$" "$tmp/gres.conf" ||
	fail "unexpected gres.conf: $(cat "$tmp/gres.conf")"

isle_cluster_start --nodes 4 --gpus 4 --topology tree \
	--topo-conf "$tmp/topology.conf" --gres-conf "$tmp/gres.conf" \
	--slurm-extra "DebugFlags=Gres" || fail "cluster did not start"

# Every node idle with its four GPUs.
for n in n01 n02 n03 n04; do
	line=$(scontrol -o show node "$n") || fail "scontrol show node $n"
	case $line in
	*"State=IDLE"*) ;;
	*) fail "$n is not idle: $line" ;;
	esac
	case $line in
	*"Gres=gpu:4"*) ;;
	*) fail "$n does not list gpu:4: $line" ;;
	esac
done

# Each slurmd took every GPU's Cores and Links as emitted (logged at start).
while read -r node file links; do
	node=${node#NodeName=} file=${file#File=@DEVDIR@/}
	grep -q "Gres Name=gpu .*File=$ISLE_CLUSTER_DIR/dev/$file Cores=0-15 .*$links " \
		"$ISLE_CLUSTER_DIR/log/slurmd-$node.log" ||
		fail "slurmd on $node did not take $file with $links"
done < <(grep '^NodeName=' "$tmp/gres.conf" | awk '{print $1, $3, $5}')

# The switch tree is the one in the cluster file.
topo=$(scontrol show topology) || fail "scontrol show topology"
echo "$topo" | grep -q 'SwitchName=leaf1 .*Nodes=n\[01-02\]' || fail "topology: $topo"
echo "$topo" | grep -q 'SwitchName=spine .*Switches=leaf\[1-2\]' || fail "topology: $topo"

isle_cluster_stop

# Block style: one block per leaf group, BlockSizes that Slurm accepts.
"$islectl" emit slurm-block -o "$tmp/block.conf" "$tmp/cluster.json" ||
	fail "islectl emit slurm-block"
grep -q '^BlockSizes=2,4$' "$tmp/block.conf" || fail "block.conf: $(cat "$tmp/block.conf")"
isle_cluster_start --nodes 4 --gpus 4 --topology block \
	--topo-conf "$tmp/block.conf" --gres-conf "$tmp/gres.conf" ||
	fail "cluster with the emitted block topology did not start"
topo=$(scontrol show topology) || fail "scontrol show topology"
echo "$topo" | grep -q 'BlockName=b1 .*Nodes=n\[01-02\]' || fail "blocks: $topo"
echo "$topo" | grep -q 'BlockName=b2 .*Nodes=n\[03-04\]' || fail "blocks: $topo"
isle_cluster_stop
echo "PASS: Slurm accepts islectl's gres.conf (Links), tree and block topology.conf"
exit 0
